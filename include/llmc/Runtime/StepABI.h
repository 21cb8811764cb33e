/*===- StepABI.h - the compiled step function's C ABI ----------*- C -*-===//
 *
 * The contract between `llmc compile` and the runtime (docs/artifact.md).
 * A CPU artifact's kernels.so exports one symbol, LLMC_STEP_SYMBOL, that runs
 * one model step over a ragged, paged batch:
 *
 *   N sequences, T tokens in all. Sequence n owns the query rows
 *   [cu_seqlens_q[n], cu_seqlens_q[n+1]) of `tokens`; its KV cache holds
 *   context_lens[n] positions once this step's keys are written, so query
 *   row i of the sequence sits at position context_lens[n] - q_len + i and
 *   attends to positions 0..that one (causality is implied, never a mask).
 *   slot_mapping[t] = block * block_size + offset is where token t's K/V
 *   are written (a negative slot skips the write). logits row n is computed
 *   from hidden row logits_indices[n].
 *
 *   With G KV cache groups (manifest step.kv_groups; G = 1 without), each
 *   group of layers has its own blocks: block_tables holds G runs of N rows
 *   (group g's row for sequence n at g * N + n) and slot_mapping G runs of T
 *   slots (group g's for token t at g * T + t), and a block holds the rows
 *   of one group's layers (kv_pool's first extent is the most layers of a
 *   group).
 *
 * Every array argument is an MLIR memref descriptor (LlmcMemRef<R> below,
 * the layout of mlir/ExecutionEngine/CRunnerUtils.h's StridedMemRefType),
 * row-major with unit innermost stride. Bump LLMC_STEP_ABI_VERSION whenever
 * the meaning or layout of anything in this file changes; the manifest records
 * it and the runtime refuses an artifact built for another version.
 *===----------------------------------------------------------------------===*/
#ifndef LLMC_RUNTIME_STEPABI_H
#define LLMC_RUNTIME_STEPABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LLMC_STEP_ABI_VERSION 3
#define LLMC_STEP_SYMBOL "_mlir_ciface_llmc_step"

/* Services the runtime lends the generated code. Field order is ABI. */
typedef struct LlmcCpuHostApi {
  uint32_t abi_version; /* LLMC_STEP_ABI_VERSION */
  uint32_t reserved;
  void *context;        /* passed back as the first argument of each call */
  /* Row-major C[m, n] = A[m, k] * B, B is [k, n] or, if b_transposed, [n, k].
   * Single precision, beta = 0. */
  void (*sgemm)(void *context, int64_t m, int64_t n, int64_t k, const float *a,
                int64_t lda, const float *b, int64_t ldb, int32_t b_transposed,
                float *c, int64_t ldc);
  /* Runs body(closure, begin, end) over disjoint chunks covering [0, n) on
   * the device's threads and returns when all are done. */
  void (*parallel_for)(void *context, int64_t n,
                       void (*body)(void *closure, int64_t begin, int64_t end),
                       void *closure);
  /* out[r] = base[r] + the LoRA product of x[r] at `site` (manifest
   * step.lora_sites) under the adapter row r of the step runs with; out[r] =
   * base[r] for a row without one. Rows are the step's tokens, or its
   * sequences (the rows logits_indices picks) when `per_sequence`. Each
   * array is `rows` rows of the site's in (x) or out (base, out) features,
   * ld* floats apart. Called only by artifacts that list LoRA sites. */
  void (*lora)(void *context, int64_t site, int32_t per_sequence, int64_t rows,
               const float *x, int64_t ldx, const float *base, int64_t ldbase,
               float *out, int64_t ldout);
} LlmcCpuHostApi;

#define LLMC_DEFINE_MEMREF(RANK)                                             \
  typedef struct LlmcMemRef##RANK {                                          \
    void *allocated;                                                         \
    void *aligned;                                                           \
    int64_t offset;                                                          \
    int64_t sizes[RANK];                                                     \
    int64_t strides[RANK];                                                   \
  } LlmcMemRef##RANK;
LLMC_DEFINE_MEMREF(1)
LLMC_DEFINE_MEMREF(2)
LLMC_DEFINE_MEMREF(6)
#undef LLMC_DEFINE_MEMREF

/*   api             the host services above
 *   tokens          [T] i32            positions      [T] i32
 *   cu_seqlens_q    [N+1] i32          context_lens   [N] i32
 *   block_tables    [G * N, max_blocks] i32
 *   slot_mapping    [G * T] i32        logits_indices [N] i32
 *   kv_pool         [layers, num_blocks, kv_rows, kv_heads, block_size, head_dim]
 *                   f32; index 0 of the third axis is K, 1 is V; with
 *                   manifest step.kv_rows 1, K alone, whose first features
 *                   are V
 *   weights         [bytes] i8, weights.bin as mapped
 *   workspace       [bytes] i8, at least manifest step.workspace_bytes,
 *                   64-byte aligned; scratch for activations
 *   logits          [N, vocab] f32, written; for an artifact whose
 *                   manifest step.output is "hidden_states" (an embedding
 *                   model, exported without its LM head) [N, hidden_size]:
 *                   the final hidden state of row logits_indices[n]; for
 *                   "class_logits" (a sequence classifier) [N, num_labels]:
 *                   its score head's logits of that row
 * T <= step.max_num_batched_tokens and N <= step.max_num_seqs. */
/* The array inputs' roles, spelled once: the compiler tags the step
 * function's inputs with them (the `llmc.abi` argument attribute) and the
 * CUDA step plan names its input buffers after them. */
#define LLMC_STEP_INPUT_TOKENS "tokens"
#define LLMC_STEP_INPUT_POSITIONS "positions"
#define LLMC_STEP_INPUT_CU_SEQLENS_Q "cu_seqlens_q"
#define LLMC_STEP_INPUT_CONTEXT_LENS "context_lens"
#define LLMC_STEP_INPUT_BLOCK_TABLES "block_tables"
#define LLMC_STEP_INPUT_SLOT_MAPPING "slot_mapping"
#define LLMC_STEP_INPUT_LOGITS_INDICES "logits_indices"
#define LLMC_STEP_INPUT_KV_POOL "kv_pool"

typedef void (*LlmcStepFn)(const LlmcCpuHostApi *api, LlmcMemRef1 *tokens,
                           LlmcMemRef1 *positions, LlmcMemRef1 *cu_seqlens_q,
                           LlmcMemRef1 *context_lens, LlmcMemRef2 *block_tables,
                           LlmcMemRef1 *slot_mapping,
                           LlmcMemRef1 *logits_indices, LlmcMemRef6 *kv_pool,
                           LlmcMemRef1 *weights, LlmcMemRef1 *workspace,
                           LlmcMemRef2 *logits);

#ifdef __cplusplus
}
#endif

#endif /* LLMC_RUNTIME_STEPABI_H */
