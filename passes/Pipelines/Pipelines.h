//===- Pipelines.h - llmc's passes composed into pipelines -----*- C++ -*-===//
//
// What `llmc compile` and llmc-opt run: the pipelines of each stage, the
// extension points where plugins' passes join them, and the registration of
// every pass (each stage's passes are declared in its own folder's Passes.td).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_PIPELINES_PIPELINES_H
#define LLMC_PASSES_PIPELINES_PIPELINES_H

#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringMap.h"

#include <vector>

namespace llmc {

/// Options of the raising pipeline.
struct RaisingPipelineOptions {
  /// Keep the onnx ops no pattern raised instead of failing.
  bool allowLeftovers = false;
  /// The longest sequence the compiled model serves (0: unset); it decides
  /// LongRoPE's switch (onnx-select-rope-tables).
  int64_t maxPositions = 0;
  /// The config's LongRoPE switch length (0: none), which bounds an export
  /// that traced one side of it (onnx-select-rope-tables' traced-switch).
  int64_t tracedRopeSwitch = 0;
  /// The config's LongRoPE short and long factors (empty: none), with which
  /// an export that traced the short side serves past the switch
  /// (onnx-select-rope-tables' traced-short-factors and long-factors).
  std::vector<double> tracedRopeShortFactors, ropeLongFactors;
};

/// Adds the import clean-up and raising passes: onnx ops in, llm ops out.
void buildRaisingPipeline(mlir::OpPassManager &pm, const RaisingPipelineOptions &options = {});

/// The places in the default pipeline where passes from outside it (a
/// plugin's, or any registered pass) may run, in pipeline order:
///  - after-raising: the llm dialect, dense [batch, seq] form;
///  - before-fusion: the ragged, paged step, before the built-in fusions;
///  - before-lowering: after the built-in fusions, before memory planning
///    and target lowering.
inline constexpr llvm::StringLiteral kExtensionPoints[] = {"after-raising", "before-fusion",
                                                           "before-lowering"};

/// Options of the serving-form pipeline.
struct StepPipelineOptions {
  int64_t blockSize = 16;
  /// The KV pool's element type: auto (the model's) or int8.
  std::string kvCacheDtype = "auto";
  /// Multi-head latent attention attends over (and caches) its latent:
  /// llm-absorb-latent-attention.
  bool latentKvCache = true;
  /// CPU: layers of different attention windows own their KV blocks apart
  /// (llm-kv-cache-groups).
  bool kvCacheGroups = true;
  int64_t maxNumBatchedTokens = 2048;
  int64_t maxNumSeqs = 256;
  /// The token ids a causal LM served as a cross-encoder scores by
  /// (llm-classifier-from-tokens); empty: none.
  std::vector<int64_t> classifierTokenIds;
  /// A LoRA site after each linear of the decoder layers (llm-lora-sites).
  bool loraSites = false;
  std::string matmul = "generated";
  /// CPU: multiply quantised weights by int8-quantised activations, with
  /// these instructions: avx512-vnni or avx2.
  bool int8Activations = false;
  std::string int8Products = "avx512-vnni";
  /// CPU: how the generated matmul stores f32 weights, f32 or bf16.
  std::string cpuWeightDtype = "f32";
  /// CPU: bf16 products (AVX512_BF16) with those weights.
  bool bf16Activations = false;
  /// Their instructions over panels: avx512-bf16 or amx.
  std::string bf16Products = "avx512-bf16";
  /// CPU: the target has AVX-512F (4-bit codes looked up with vpermps).
  bool cpuAvx512 = false;
  /// What llm-lower-* lowers to: cpu, or cuda for `cudaArch` storing `dtype`.
  std::string target = "cpu";
  std::string cudaArch = "sm_80";
  std::string dtype = "bf16";
  /// 0: no fusion; 1: horizontal linears, rope + KV write, logits rows;
  /// 2 (default): + residual norms, GEMM epilogues, elementwise chains;
  /// 3: + elementwise producers recomputed in each consumer.
  unsigned optLevel = 2;
  /// Textual pass pipelines (as `--pass-pipeline` takes, without the
  /// `builtin.module(...)` anchor) by extension point name.
  llvm::StringMap<std::string> extensions;
};

/// Adds the passes a user asked for at extension point `point` (nothing if
/// none). Fails, with the parser's message in `errors`, on a bad pipeline.
mlir::LogicalResult addExtensionPasses(mlir::OpPassManager &pm, const StepPipelineOptions &options,
                                       llvm::StringRef point, llvm::raw_ostream &errors);

/// Adds the built-in fusion passes of `optLevel` to a pipeline on
/// func.func (see StepPipelineOptions::optLevel). With `gatedEpilogues`
/// false, gated GEMM epilogues (SwiGLU) are not formed: the BLAS matmul
/// writes the whole product and has no room for them.
void buildFusionPipeline(mlir::OpPassManager &funcPm, unsigned optLevel, bool gatedEpilogues);

/// Adds the passes from raised llm IR to the planned, ragged, paged step
/// (llm-gqa-rewrite, llm-kv-cache-paging, llm-ragged-batching, the fusions
/// of `options.optLevel`, llm-plan-memory), the before-fusion and
/// before-lowering extensions, and with `lowerToTarget` llm-lower-to-cpu or
/// llm-lower-to-cuda (options.target).
/// Fails on a bad extension pipeline, with the message in `errors`.
mlir::LogicalResult buildStepPipeline(mlir::OpPassManager &pm, const StepPipelineOptions &options,
                                      bool lowerToTarget, llvm::raw_ostream &errors);

/// Registers the dialects the CPU lowering produces (for tools that run it).
void registerStepLoweringDialects(mlir::DialectRegistry &registry);

/// Adds the passes that lower a whole onnx graph of fixed shapes to loops on
/// memrefs: shape inference, onnx-lower-to-linalg, one-shot bufferization,
/// results turned into trailing out-parameters, deallocation, linalg to
/// loops. The graph function keeps its name.
void buildGraphPipeline(mlir::OpPassManager &pm);

/// Registers what buildGraphPipeline needs beyond the step lowering's
/// dialects: linalg, tensor, bufferization and the bufferization models.
void registerGraphLoweringDialects(mlir::DialectRegistry &registry);

/// Registers the named pipelines (e.g. `llmc-raise`) with the pass registry.
void registerPipelines();

/// Registers every pass of every stage with the pass registry.
void registerAllPasses();

} // namespace llmc

#endif // LLMC_PASSES_PIPELINES_PIPELINES_H
