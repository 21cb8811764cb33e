//===- EngineJson.h - the engine's settings and results as JSON -*- C++ -*-===//
//
// The C API (and through it Python) passes engine configs and request
// options as JSON objects with vLLM's names, and gets outputs and counters
// back as JSON. Unknown keys and wrong types are errors, not ignored.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_ENGINEJSON_H
#define LLMC_RUNTIME_ENGINE_ENGINEJSON_H

#include "runtime/engine/Engine.h"

#include <nlohmann/json.hpp>

namespace llmc::runtime {

/// {"max_num_seqs", "max_num_batched_tokens", "max_model_len",
///  "enable_prefix_caching", "seed", "swap_space", "speculative_config",
///  "scheduling_policy"}, all optional. Throws Error.
EngineConfig engineConfigFromJson(const nlohmann::json &object);

/// vLLM's scheduling_policy: "fcfs" or "priority". Throws Error.
SchedulingPolicy schedulingPolicyNamed(const std::string &name);

/// vLLM's speculative_config: {"method": "ngram", "num_speculative_tokens",
/// "prompt_lookup_max", "prompt_lookup_min"}. Throws Error.
SpeculativeConfig speculativeConfigFromJson(const nlohmann::json &object);

/// {"max_tokens", "n", "temperature", "top_k", "top_p", "min_p",
///  "repetition_penalty", "presence_penalty", "frequency_penalty", "seed",
///  "logprobs", "prompt_logprobs", "stop_token_ids", "logit_bias",
///  "min_tokens", "allowed_token_ids", "priority"}, all optional.
/// Throws RequestError.
RequestOptions requestOptionsFromJson(const nlohmann::json &object);

/// OpenAI's logit_bias, {"token id": bias, ...}, as (token, bias) pairs in
/// token order; throws RequestError saying what is not one. The ranges are
/// SamplingParams::validate's to check.
std::vector<std::pair<int32_t, float>> logitBiasFromJson(const nlohmann::json &object);

/// {"request", "index", "token", "logprob", "rank", "top_logprobs": [[id,
///  logprob]...], "finish_reason", "prompt_logprobs": [{"token", "logprob",
///  "rank", "top_logprobs"}...]}: token, logprob and rank are null for an
/// output without a token, finish_reason is null while the sample runs.
nlohmann::json toJson(const StepOutput &output);

nlohmann::json toJson(const EngineStats &stats);

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_ENGINEJSON_H
