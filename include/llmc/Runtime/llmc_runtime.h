/*===- llmc_runtime.h - the runtime's C API -------------------*- C -*-===//
 *
 * libllmc_runtime_c.so: load a compiled model (model.llmc/) and run it from
 * C, Python (ctypes) or any host that speaks C. Functions that can fail take
 * `err`/`err_size`, a caller buffer that receives one line of explanation
 * (truncated to fit), and return 0 on success, nonzero on failure (open
 * returns NULL). No C++ exception crosses this boundary.
 *
 * A model handle runs one call at a time: calls on the same handle from
 * several threads must be serialised by the caller.
 *===----------------------------------------------------------------------===*/
#ifndef LLMC_RUNTIME_LLMC_RUNTIME_H
#define LLMC_RUNTIME_LLMC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LLMC_RUNTIME_API __attribute__((visibility("default")))

typedef struct LlmcRuntimeModel LlmcRuntimeModel;

/* Loads and verifies the artifact. num_threads: the CPU device's threads
 * (0 = one per hardware thread); num_kv_blocks: blocks in the KV cache
 * (0 = the runtime's default memory budget). */
LLMC_RUNTIME_API LlmcRuntimeModel *llmc_runtime_open(const char *artifact_dir,
                                                     int32_t num_threads,
                                                     int64_t num_kv_blocks, char *err,
                                                     size_t err_size);
LLMC_RUNTIME_API void llmc_runtime_close(LlmcRuntimeModel *model);

LLMC_RUNTIME_API int64_t llmc_runtime_vocab_size(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int64_t llmc_runtime_num_layers(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int64_t llmc_runtime_block_size(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int64_t llmc_runtime_max_num_batched_tokens(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int64_t llmc_runtime_max_num_seqs(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int64_t llmc_runtime_num_kv_blocks(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int64_t llmc_runtime_num_free_kv_blocks(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int32_t llmc_runtime_num_threads(const LlmcRuntimeModel *model);

/* One model step (StepABI.h describes the arrays): num_tokens T,
 * num_seqs N, block_tables [N, max_blocks_per_seq] row-major; writes
 * logits_out [N, vocab_size]. The caller picks the KV blocks (ids below
 * llmc_runtime_num_kv_blocks); they are not taken from the allocator that
 * llmc_runtime_generate uses. */
LLMC_RUNTIME_API int llmc_runtime_step(LlmcRuntimeModel *model, int64_t num_tokens,
                                       int64_t num_seqs, const int32_t *tokens,
                                       const int32_t *positions, const int32_t *cu_seqlens_q,
                                       const int32_t *context_lens, const int32_t *block_tables,
                                       int64_t max_blocks_per_seq, const int32_t *slot_mapping,
                                       const int32_t *logits_indices, float *logits_out,
                                       char *err, size_t err_size);

/* Greedy generation. Prompt i is prompt_tokens[prompt_offsets[i] ..
 * prompt_offsets[i + 1]); prompt_offsets has num_prompts + 1 entries.
 * Writes prompt i's generated ids to output_tokens[i * max_tokens ...] and
 * their count to output_lengths[i]; a sequence ends early after a token of
 * stop_token_ids (num_stop_token_ids of them, may be NULL when 0). */
LLMC_RUNTIME_API int llmc_runtime_generate(LlmcRuntimeModel *model, int64_t num_prompts,
                                           const int32_t *prompt_tokens,
                                           const int64_t *prompt_offsets, int64_t max_tokens,
                                           const int32_t *stop_token_ids,
                                           int64_t num_stop_token_ids, int32_t *output_tokens,
                                           int64_t *output_lengths, char *err, size_t err_size);

/* Returns every KV block to the allocator. */
LLMC_RUNTIME_API void llmc_runtime_free_all_kv_blocks(LlmcRuntimeModel *model);

#ifdef __cplusplus
}
#endif

#endif /* LLMC_RUNTIME_LLMC_RUNTIME_H */
