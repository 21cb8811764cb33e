//===- CApi.cpp - the runtime's C API (llmc_runtime.h) --------------------===//
//
// Each entry point catches everything the C++ runtime throws and turns it into
// the caller's error buffer and a nonzero return.
//
//===----------------------------------------------------------------------===//
#include "llmc/Runtime/llmc_runtime.h"

#include "runtime/core/Model.h"
#include "runtime/chat/ChatTemplate.h"
#include "runtime/engine/Engine.h"
#include "runtime/engine/EngineJson.h"
#include "runtime/tokenizer/IncrementalDecoder.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <vector>

using namespace llmc::runtime;
using tokenizer::IncrementalDecoder;
using tokenizer::Tokenizer;

struct LlmcRuntimeModel {
  std::unique_ptr<Model> model;
};

struct LlmcEngine {
  LlmcEngine(Model &model, const EngineConfig &config) : engine(model, config) {}
  Engine engine;
  /// The JSON of the last call that returns text, which the caller reads in place.
  std::string json;
};

struct LlmcTokenizer {
  std::unique_ptr<Tokenizer> tokenizer;
};

struct LlmcDecodeStream {
  IncrementalDecoder decoder;
  /// The text of the last call, which the caller reads in place.
  std::string text;
};

namespace {
void setError(char *err, size_t errSize, const char *message) {
  if (err && errSize > 0) std::snprintf(err, errSize, "%s", message);
}

/// Runs `body`; on an exception writes its message to `err` and returns 1.
template <typename Body> int guarded(char *err, size_t errSize, Body &&body) {
  try {
    body();
    return 0;
  } catch (const std::bad_alloc &) {
    setError(err, errSize, "out of memory");
  } catch (const std::exception &error) {
    setError(err, errSize, error.what());
  } catch (...) {
    setError(err, errSize, "unknown error");
  }
  return 1;
}
} // namespace

extern "C" {

LlmcRuntimeModel *llmc_runtime_open(const char *artifact_dir, int32_t num_threads,
                                    int64_t num_kv_blocks, char *err, size_t err_size) {
  LlmcRuntimeModel *handle = nullptr;
  guarded(err, err_size, [&] {
    if (num_threads < 0 || num_kv_blocks < 0)
      throw Error("num_threads and num_kv_blocks must not be negative");
    ModelOptions options;
    options.numThreads = static_cast<unsigned>(num_threads);
    options.numKvBlocks = num_kv_blocks;
    auto model = Model::open(artifact_dir, options);
    handle = new LlmcRuntimeModel{std::move(model)};
  });
  return handle;
}

void llmc_runtime_close(LlmcRuntimeModel *model) { delete model; }

int64_t llmc_runtime_vocab_size(const LlmcRuntimeModel *model) {
  return model->model->config().vocabSize;
}
int64_t llmc_runtime_output_size(const LlmcRuntimeModel *model) {
  return model->model->outputSize();
}
int64_t llmc_runtime_num_layers(const LlmcRuntimeModel *model) {
  return model->model->config().numLayers;
}
int64_t llmc_runtime_block_size(const LlmcRuntimeModel *model) {
  return model->model->stepConfig().blockSize;
}
int64_t llmc_runtime_max_num_batched_tokens(const LlmcRuntimeModel *model) {
  return model->model->stepConfig().maxNumBatchedTokens;
}
int64_t llmc_runtime_max_num_seqs(const LlmcRuntimeModel *model) {
  return model->model->stepConfig().maxNumSeqs;
}
int64_t llmc_runtime_num_kv_blocks(const LlmcRuntimeModel *model) {
  return model->model->kvPool().numBlocks();
}
int32_t llmc_runtime_num_threads(const LlmcRuntimeModel *model) {
  return static_cast<int32_t>(model->model->numThreads());
}
int64_t llmc_runtime_num_kv_groups(const LlmcRuntimeModel *model) {
  return model->model->stepConfig().numKvGroups();
}

int llmc_runtime_step(LlmcRuntimeModel *model, int64_t num_tokens, int64_t num_seqs,
                      const int32_t *tokens, const int32_t *positions,
                      const int32_t *cu_seqlens_q, const int32_t *context_lens,
                      const int32_t *block_tables, int64_t max_blocks_per_seq,
                      const int32_t *slot_mapping, const int32_t *logits_indices,
                      float *logits_out, char *err, size_t err_size) {
  return guarded(err, err_size, [&] {
    StepBatch batch;
    batch.numTokens = num_tokens;
    batch.numSeqs = num_seqs;
    batch.maxBlocksPerSeq = max_blocks_per_seq;
    batch.tokens = tokens;
    batch.positions = positions;
    batch.cuSeqlensQ = cu_seqlens_q;
    batch.contextLens = context_lens;
    batch.blockTables = block_tables;
    batch.slotMapping = slot_mapping;
    batch.logitsIndices = logits_indices;
    model->model->step(batch, logits_out);
  });
}

int llmc_runtime_generate(LlmcRuntimeModel *model, int64_t num_prompts,
                          const int32_t *prompt_tokens, const int64_t *prompt_offsets,
                          int64_t max_tokens, const int32_t *stop_token_ids,
                          int64_t num_stop_token_ids, int32_t *output_tokens,
                          int64_t *output_lengths, char *err, size_t err_size) {
  return guarded(err, err_size, [&] {
    std::vector<std::vector<int32_t>> prompts;
    for (int64_t i = 0; i < num_prompts; ++i) {
      if (prompt_offsets[i + 1] < prompt_offsets[i])
        throw Error("prompt_offsets must not decrease");
      prompts.emplace_back(prompt_tokens + prompt_offsets[i],
                           prompt_tokens + prompt_offsets[i + 1]);
    }
    RequestOptions options;
    options.maxTokens = max_tokens;
    options.sampling.temperature = 0;
    if (num_stop_token_ids > 0)
      options.stopTokenIds.assign(stop_token_ids, stop_token_ids + num_stop_token_ids);
    Engine engine(*model->model, EngineConfig());
    std::vector<Completion> outputs = runToCompletion(engine, prompts, options);
    for (int64_t i = 0; i < num_prompts; ++i) {
      std::copy(outputs[i][0].begin(), outputs[i][0].end(), output_tokens + i * max_tokens);
      output_lengths[i] = static_cast<int64_t>(outputs[i][0].size());
    }
  });
}

LlmcEngine *llmc_engine_new(LlmcRuntimeModel *model, const char *config_json, char *err,
                            size_t err_size) {
  LlmcEngine *handle = nullptr;
  guarded(err, err_size, [&] {
    nlohmann::json config = nlohmann::json::parse(config_json ? config_json : "{}", nullptr,
                                                  /*allow_exceptions=*/false);
    if (config.is_discarded()) throw Error("the engine config is not valid JSON");
    handle = new LlmcEngine(*model->model, engineConfigFromJson(config));
  });
  return handle;
}

void llmc_engine_free(LlmcEngine *engine) { delete engine; }

int llmc_engine_add_request(LlmcEngine *engine, uint64_t id, const int32_t *prompt,
                            int64_t prompt_len, const char *options_json, char *err,
                            size_t err_size) {
  return guarded(err, err_size, [&] {
    if (prompt_len < 0) throw Error("prompt_len must not be negative");
    nlohmann::json options = nlohmann::json::parse(options_json ? options_json : "{}", nullptr,
                                                   /*allow_exceptions=*/false);
    if (options.is_discarded()) throw Error("the request options are not valid JSON");
    engine->engine.addRequest(id, std::vector<int32_t>(prompt, prompt + prompt_len),
                              requestOptionsFromJson(options));
  });
}

/// The outputs as a JSON list in the engine's buffer.
static const char *outputsJson(LlmcEngine *engine, const std::vector<StepOutput> &outputs) {
  nlohmann::json list = nlohmann::json::array();
  for (const StepOutput &output : outputs) list.push_back(toJson(output));
  engine->json = list.dump();
  return engine->json.c_str();
}

int llmc_engine_abort(LlmcEngine *engine, uint64_t id, const char **outputs_json, char *err,
                      size_t err_size) {
  return guarded(err, err_size,
                 [&] { *outputs_json = outputsJson(engine, engine->engine.abort(id)); });
}

int llmc_engine_step(LlmcEngine *engine, const char **outputs_json, char *err, size_t err_size) {
  return guarded(err, err_size,
                 [&] { *outputs_json = outputsJson(engine, engine->engine.step()); });
}

int llmc_engine_has_unfinished(const LlmcEngine *engine) {
  return engine->engine.hasUnfinished() ? 1 : 0;
}

const char *llmc_engine_stats(LlmcEngine *engine) {
  engine->json = toJson(engine->engine.stats()).dump();
  return engine->json.c_str();
}

LlmcTokenizer *llmc_tokenizer_load(const char *path, char *err, size_t err_size) {
  LlmcTokenizer *handle = nullptr;
  guarded(err, err_size, [&] { handle = new LlmcTokenizer{Tokenizer::fromFile(path)}; });
  return handle;
}

void llmc_tokenizer_free(LlmcTokenizer *tokenizer) { delete tokenizer; }

int64_t llmc_tokenizer_id_limit(const LlmcTokenizer *tokenizer) {
  return tokenizer->tokenizer->idLimit();
}

int64_t llmc_tokenizer_token_to_id(const LlmcTokenizer *tokenizer, const char *token) {
  std::optional<int32_t> id = tokenizer->tokenizer->tokenToId(token);
  return id ? *id : -1;
}

int64_t llmc_tokenizer_encode(const LlmcTokenizer *tokenizer, const char *text, size_t text_len,
                              int add_special_tokens, int32_t *ids, int64_t capacity, char *err,
                              size_t err_size) {
  int64_t count = -1;
  guarded(err, err_size, [&] {
    std::vector<int32_t> encoded =
        tokenizer->tokenizer->encode(std::string_view(text, text_len), add_special_tokens != 0);
    count = static_cast<int64_t>(encoded.size());
    if (count <= capacity) std::copy(encoded.begin(), encoded.end(), ids);
  });
  return count;
}

int64_t llmc_tokenizer_decode(const LlmcTokenizer *tokenizer, const int32_t *ids, int64_t num_ids,
                              int skip_special_tokens, char *text, int64_t capacity, char *err,
                              size_t err_size) {
  int64_t length = -1;
  guarded(err, err_size, [&] {
    if (num_ids < 0) throw Error("num_ids must not be negative");
    std::string decoded = tokenizer->tokenizer->decode(std::vector<int32_t>(ids, ids + num_ids),
                                                       skip_special_tokens != 0);
    length = static_cast<int64_t>(decoded.size());
    if (length <= capacity) std::copy(decoded.begin(), decoded.end(), text);
  });
  return length;
}

LlmcDecodeStream *llmc_decode_stream_new(const LlmcTokenizer *tokenizer, int skip_special_tokens) {
  return new (std::nothrow)
      LlmcDecodeStream{IncrementalDecoder(*tokenizer->tokenizer, skip_special_tokens != 0), {}};
}

void llmc_decode_stream_free(LlmcDecodeStream *stream) { delete stream; }

int llmc_decode_stream_step(LlmcDecodeStream *stream, int32_t id, const char **text,
                            size_t *text_len, char *err, size_t err_size) {
  return guarded(err, err_size, [&] {
    stream->text = stream->decoder.add(id);
    *text = stream->text.data();
    *text_len = stream->text.size();
  });
}

int llmc_decode_stream_finish(LlmcDecodeStream *stream, const char **text, size_t *text_len,
                              char *err, size_t err_size) {
  return guarded(err, err_size, [&] {
    stream->text = stream->decoder.finish();
    *text = stream->text.data();
    *text_len = stream->text.size();
  });
}

int llmc_chat_template_check(const char *template_source, char *err, size_t err_size) {
  return guarded(err, err_size, [&] { chat::ChatTemplate::parse(template_source); });
}

int llmc_chat_template_render(const char *template_source, const char *context_json, char **out,
                              size_t *out_len, char *err, size_t err_size) {
  return guarded(err, err_size, [&] {
    // Ordered: the request's key order shows in tojson and items().
    auto context = nlohmann::ordered_json::parse(context_json, nullptr,
                                                 /*allow_exceptions=*/false);
    if (context.is_discarded()) throw Error("the chat template context is not valid JSON");
    std::string text = chat::ChatTemplate::parse(template_source).render(context);
    auto *copy = static_cast<char *>(std::malloc(text.size() + 1));
    if (!copy) throw std::bad_alloc();
    std::memcpy(copy, text.data(), text.size());
    copy[text.size()] = '\0';
    *out = copy;
    if (out_len) *out_len = text.size();
  });
}

void llmc_string_free(char *text) { std::free(text); }

} // extern "C"
