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
/* The width of a step's output rows: vocab_size for a generative model,
 * hidden_size for an embedding model (an export without its LM head), the
 * labels' count for a sequence classifier (StepABI.h, "logits"). */
LLMC_RUNTIME_API int64_t llmc_runtime_output_size(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int64_t llmc_runtime_num_layers(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int64_t llmc_runtime_block_size(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int64_t llmc_runtime_max_num_batched_tokens(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int64_t llmc_runtime_max_num_seqs(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int64_t llmc_runtime_num_kv_blocks(const LlmcRuntimeModel *model);
LLMC_RUNTIME_API int32_t llmc_runtime_num_threads(const LlmcRuntimeModel *model);
/* The KV cache groups G of the model's layers (1 unless its layers have
 * different attention windows). */
LLMC_RUNTIME_API int64_t llmc_runtime_num_kv_groups(const LlmcRuntimeModel *model);

/* One model step (StepABI.h describes the arrays): num_tokens T,
 * num_seqs N, block_tables [G * N, max_blocks_per_seq] row-major and
 * slot_mapping [G * T] for G KV cache groups; writes
 * logits_out [N, llmc_runtime_output_size]. The caller picks the KV blocks (ids below
 * llmc_runtime_num_kv_blocks). The KV memory is the one engines over this
 * model use: do not mix raw steps with a live engine. */
LLMC_RUNTIME_API int llmc_runtime_step(LlmcRuntimeModel *model, int64_t num_tokens,
                                       int64_t num_seqs, const int32_t *tokens,
                                       const int32_t *positions, const int32_t *cu_seqlens_q,
                                       const int32_t *context_lens, const int32_t *block_tables,
                                       int64_t max_blocks_per_seq, const int32_t *slot_mapping,
                                       const int32_t *logits_indices, float *logits_out,
                                       char *err, size_t err_size);

/* Greedy generation through a fresh engine (continuous batching, preemption
 * when the KV cache runs short). Prompt i is prompt_tokens[prompt_offsets[i] ..
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

/* ---- Engine: continuous batching over the paged KV cache (docs/engine.md) ----------
 * An engine holds requests and runs one model step per llmc_engine_step. It must not
 * outlive its model, and one model serves one engine at a time (they share the KV
 * memory). Settings, options and results are JSON with vLLM's names. */
typedef struct LlmcEngine LlmcEngine;

/* config_json: {"max_num_seqs", "max_num_batched_tokens", "max_model_len",
 * "enable_prefix_caching", "seed", "swap_space", "speculative_config",
 * "scheduling_policy"}, all
 * optional (NULL = {}); runtime/engine/EngineJson.h says what each holds. */
LLMC_RUNTIME_API LlmcEngine *llmc_engine_new(LlmcRuntimeModel *model, const char *config_json,
                                             char *err, size_t err_size);
LLMC_RUNTIME_API void llmc_engine_free(LlmcEngine *engine);

/* Queues a request under a caller-chosen id. options_json: {"max_tokens", "n",
 * "temperature", "top_k", "top_p", "min_p", "repetition_penalty", "presence_penalty",
 * "frequency_penalty", "seed", "logprobs", "stop_token_ids", "logit_bias" ({"token id":
 * bias}), "min_tokens", "allowed_token_ids", "prompt_logprobs", "priority"}, all optional.
 * A request that could never run (empty, too long, bad parameters) fails here. */
LLMC_RUNTIME_API int llmc_engine_add_request(LlmcEngine *engine, uint64_t id,
                                             const int32_t *prompt, int64_t prompt_len,
                                             const char *options_json, char *err,
                                             size_t err_size);

/* One step. *outputs_json receives a JSON list of {"request", "index", "token",
 * "logprob", "rank", "top_logprobs", "finish_reason", "prompt_logprobs"}, valid until the
 * next call on the engine; "prompt_logprobs" lists {"token", "logprob", "rank",
 * "top_logprobs"} for prompt tokens, on outputs of their own (token null). */
LLMC_RUNTIME_API int llmc_engine_step(LlmcEngine *engine, const char **outputs_json, char *err,
                                      size_t err_size);

/* Ends a request now and frees its blocks; *outputs_json lists its samples' abort
 * outputs (empty for an unknown id). */
LLMC_RUNTIME_API int llmc_engine_abort(LlmcEngine *engine, uint64_t id,
                                       const char **outputs_json, char *err, size_t err_size);

LLMC_RUNTIME_API int llmc_engine_has_unfinished(const LlmcEngine *engine);

/* The engine's counters as a JSON object (steps, tokens computed and cached, preemptions,
 * prefix-cache hits, KV blocks held), valid until the next call on the engine. */
LLMC_RUNTIME_API const char *llmc_engine_stats(LlmcEngine *engine);

/* ---- Tokenizer: Hugging Face tokenizer.json (docs/tokenizer.md) --------------------
 * A tokenizer handle is immutable: encode and decode may be called from several threads
 * at once. A decode stream belongs to one thread and must not outlive its tokenizer. */
typedef struct LlmcTokenizer LlmcTokenizer;
typedef struct LlmcDecodeStream LlmcDecodeStream;

/* Loads a tokenizer.json; NULL (and err) when it cannot be read or holds something this
 * runtime does not support. */
LLMC_RUNTIME_API LlmcTokenizer *llmc_tokenizer_load(const char *path, char *err,
                                                    size_t err_size);
LLMC_RUNTIME_API void llmc_tokenizer_free(LlmcTokenizer *tokenizer);

/* One past the largest token id. */
LLMC_RUNTIME_API int64_t llmc_tokenizer_id_limit(const LlmcTokenizer *tokenizer);

/* The id of a token string (NUL-terminated), or -1 when there is none. */
LLMC_RUNTIME_API int64_t llmc_tokenizer_token_to_id(const LlmcTokenizer *tokenizer,
                                                    const char *token);

/* Encodes text_len bytes of UTF-8 (ill-formed UTF-8 is an error); add_special_tokens
 * applies the post-processor's template (BOS, ...). Writes at most `capacity` ids and
 * returns how many the text has: when that exceeds `capacity`, call again with room for
 * them (text_len + 16 suffice unless a normalizer such as NFKC lengthens the text). -1 on
 * error. */
LLMC_RUNTIME_API int64_t llmc_tokenizer_encode(const LlmcTokenizer *tokenizer, const char *text,
                                               size_t text_len, int add_special_tokens,
                                               int32_t *ids, int64_t capacity, char *err,
                                               size_t err_size);

/* Decodes num_ids ids to UTF-8 (not NUL-terminated). Writes at most `capacity` bytes and
 * returns the text's length: when that exceeds `capacity`, call again with a larger
 * buffer. -1 on error. */
LLMC_RUNTIME_API int64_t llmc_tokenizer_decode(const LlmcTokenizer *tokenizer, const int32_t *ids,
                                               int64_t num_ids, int skip_special_tokens,
                                               char *text, int64_t capacity, char *err,
                                               size_t err_size);

/* Incremental detokenization (NULL when out of memory): each step returns only text that
 * is final (never part of a character), and the texts of every step and of finish
 * concatenate to the decode of all the ids. */
LLMC_RUNTIME_API LlmcDecodeStream *llmc_decode_stream_new(const LlmcTokenizer *tokenizer,
                                                          int skip_special_tokens);
LLMC_RUNTIME_API void llmc_decode_stream_free(LlmcDecodeStream *stream);
/* Feeds one id; *text and *text_len receive the text it completed (often empty), valid
 * until the next call on the stream. */
LLMC_RUNTIME_API int llmc_decode_stream_step(LlmcDecodeStream *stream, int32_t id,
                                             const char **text, size_t *text_len, char *err,
                                             size_t err_size);
/* Ends the stream: the text still held back. */
LLMC_RUNTIME_API int llmc_decode_stream_finish(LlmcDecodeStream *stream, const char **text,
                                               size_t *text_len, char *err, size_t err_size);

/* ---- Chat templates: Hugging Face chat_template (Jinja2) --------------------------------
 * Rendered as transformers' apply_chat_template renders them. Both functions are stateless
 * and may be called from several threads at once. */

/* Parses template_source; nonzero (and err naming the line and column) when it is not a
 * template this runtime can run. */
LLMC_RUNTIME_API int llmc_chat_template_check(const char *template_source, char *err,
                                              size_t err_size);

/* Renders template_source with context_json, a JSON object: "messages",
 * "add_generation_prompt", "bos_token", "eos_token" and whatever else the template reads
 * ("tools", "date_string", ...). On success *out receives the text (NUL-terminated; free it
 * with llmc_string_free) and *out_len, when not NULL, its length in bytes. Fails on a
 * template it cannot run, on bad JSON and on the template's own raise_exception, whose
 * message err receives. */
LLMC_RUNTIME_API int llmc_chat_template_render(const char *template_source,
                                               const char *context_json, char **out,
                                               size_t *out_len, char *err, size_t err_size);

/* Frees a string the runtime returned (NULL is ignored). */
LLMC_RUNTIME_API void llmc_string_free(char *text);

#ifdef __cplusplus
}
#endif

#endif /* LLMC_RUNTIME_LLMC_RUNTIME_H */
