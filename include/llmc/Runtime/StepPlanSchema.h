//===- StepPlanSchema.h - the names in a CUDA artifact's step_plan.json -*- C++ -*-===//
//
// The contract between the CUDA lowering, which builds the plan
// (passes/Codegen/CUDA/CudaPlan.cpp), the artifact writer, which writes it as
// step_plan.json, and the runtime, which reads it (runtime/cuda/StepPlan.cpp).
// docs/cuda.md describes the format. Every key, symbol, buffer and enumerated
// value is spelled here once; plain C++17, so the runtime includes it without
// MLIR. Bump kVersion whenever the format changes: the writer records it and
// the runtime refuses a plan of another version.
//
//===--------------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_STEPPLANSCHEMA_H
#define LLMC_RUNTIME_STEPPLANSCHEMA_H

#include "llmc/Runtime/StepABI.h"

#include <cstdint>

namespace llmc::stepplan {

inline constexpr int64_t kVersion = 1;

// The document.
inline constexpr const char *kFormatVersionKey = "format_version";
inline constexpr const char *kWorkspaceBytesKey = "workspace_bytes";
inline constexpr const char *kScratchBytesKey = "scratch_bytes";
inline constexpr const char *kStepsKey = "steps";

// A step: {"op": "launch" | "gemm", ...}.
inline constexpr const char *kOpKey = "op";
inline constexpr const char *kLaunchOp = "launch";
inline constexpr const char *kGemmOp = "gemm";

// A launch.
inline constexpr const char *kModuleKey = "module";
inline constexpr const char *kKernelsModule = "kernels";     ///< kernels.ptx/.cubin
inline constexpr const char *kAttentionModule = "attention"; ///< attention.cu, by NVRTC
/// The attention module's kernel that the runtime launches after a step of
/// greedy sequences, (logits, vocab, tokens) over one block a logits row:
/// outside the plan (passes/Codegen/CUDA/attention/Argmax.cuh).
inline constexpr const char *kArgmaxKernel = "llmc_argmax_rows";
inline constexpr int kArgmaxThreads = 1024;
/// The attention module's product of at most kGemvMaxRows rows against an
/// [n, k] weight in the storage type, which the runtime launches for such a
/// gemm step in place of cuBLASLt (passes/Codegen/CUDA/attention/Gemv.cuh):
/// (a, lda, b, ldb, d, ldd, d_f32, bias, c, ldc, beta, m, n, k) over blocks of
/// kGemvThreads threads, kGemvColumns output columns a block.
inline constexpr const char *kGemvKernel = "llmc_gemv";
inline constexpr int kGemvThreads = 256;
inline constexpr int kGemvColumns = 16;
inline constexpr int kGemvMaxRows = 8;
inline constexpr const char *kKernelKey = "kernel";
inline constexpr const char *kGridKey = "grid";
inline constexpr const char *kBlockKey = "block";
inline constexpr const char *kSharedBytesKey = "shared_bytes";
inline constexpr const char *kArgsKey = "args";

// A launch argument: exactly one of these keys.
inline constexpr const char *kMemrefArg = "memref"; ///< a location, with sizes and strides
inline constexpr const char *kPtrArg = "ptr";       ///< a location
inline constexpr const char *kIndexArg = "index";
inline constexpr const char *kI64Arg = "i64";
inline constexpr const char *kI32Arg = "i32";
inline constexpr const char *kF32Arg = "f32";
inline constexpr const char *kArgKinds[] = {kMemrefArg, kPtrArg, kIndexArg,
                                            kI64Arg,    kI32Arg, kF32Arg};
inline constexpr const char *kSizesKey = "sizes";
inline constexpr const char *kStridesKey = "strides";

// A location: a byte offset into a buffer.
inline constexpr const char *kBufferKey = "buffer";
inline constexpr const char *kOffsetKey = "offset";

// A gemm: D[m, n] = A[m, k] * B (+ bias) (+ beta * C), cuBLASLt.
inline constexpr const char *kMKey = "m";
inline constexpr const char *kNKey = "n";
inline constexpr const char *kKKey = "k";
inline constexpr const char *kAKey = "a";
inline constexpr const char *kLdaKey = "lda";
inline constexpr const char *kBKey = "b";
inline constexpr const char *kLdbKey = "ldb";
inline constexpr const char *kBLayoutKey = "b_layout";
inline constexpr const char *kBLayoutNK = "nk"; ///< B is [n, k]
inline constexpr const char *kBLayoutKN = "kn"; ///< B is [k, n]
inline constexpr const char *kCKey = "c";
inline constexpr const char *kLdcKey = "ldc";
inline constexpr const char *kDKey = "d";
inline constexpr const char *kLddKey = "ldd";
inline constexpr const char *kDDtypeKey = "d_dtype";
inline constexpr const char *kBetaKey = "beta";
inline constexpr const char *kBiasKey = "bias";

// Symbols: dims the runtime binds for each step. A dim is an integer, a
// symbol, [symbol, mul, div] or [symbol, mul, div, add].
inline constexpr const char *kTokensSymbol = "tokens";
inline constexpr const char *kSeqsSymbol = "seqs";
inline constexpr const char *kMaxQLenSymbol = "max_q_len";
inline constexpr const char *kBlockTableWidthSymbol = "block_table_width";
inline constexpr const char *kNumBlocksSymbol = "num_blocks";
// tokens when the step holds a prefill chunk (max_q_len > 1), else 0: the
// grid of a kernel that serves only prefill chunks, skipped in decode steps.
inline constexpr const char *kPrefillTokensSymbol = "prefill_tokens";
inline constexpr const char *kSymbols[] = {kTokensSymbol,          kSeqsSymbol,
                                           kMaxQLenSymbol,         kBlockTableWidthSymbol,
                                           kNumBlocksSymbol,       kPrefillTokensSymbol};

// Buffers: the weights, the workspace, the step ABI's inputs (named as their
// roles in include/llmc/Runtime/StepABI.h, spelled there) and the logits.
inline constexpr const char *kWeightsBuffer = "weights";
inline constexpr const char *kWorkspaceBuffer = "workspace";
inline constexpr const char *kLogitsBuffer = "logits";
inline constexpr const char *kBuffers[] = {kWeightsBuffer,
                                           kWorkspaceBuffer,
                                           LLMC_STEP_INPUT_TOKENS,
                                           LLMC_STEP_INPUT_POSITIONS,
                                           LLMC_STEP_INPUT_CU_SEQLENS_Q,
                                           LLMC_STEP_INPUT_CONTEXT_LENS,
                                           LLMC_STEP_INPUT_BLOCK_TABLES,
                                           LLMC_STEP_INPUT_SLOT_MAPPING,
                                           LLMC_STEP_INPUT_LOGITS_INDICES,
                                           LLMC_STEP_INPUT_KV_POOL,
                                           kLogitsBuffer};

} // namespace llmc::stepplan

#endif // LLMC_RUNTIME_STEPPLANSCHEMA_H
