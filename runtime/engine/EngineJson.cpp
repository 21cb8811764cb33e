//===- EngineJson.cpp - the engine's settings and results as JSON ---------===//
#include "runtime/engine/EngineJson.h"

#include <algorithm>
#include <climits>
#include <string>
#include <unordered_set>

namespace llmc::runtime {
namespace {
using nlohmann::json;

/// Reads the fields of a JSON object by name, refusing unknown ones and
/// wrong types with an ErrorType naming the key.
template <typename ErrorType> class Fields {
public:
  Fields(const json &object, const char *what) : object(object), what(what) {
    if (!object.is_object()) throw ErrorType(std::string(what) + " must be a JSON object");
  }

  template <typename T> void read(const char *key, T &into, bool nullable = false) {
    asked.insert(key);
    auto found = object.find(key);
    if (found == object.end() || (nullable && found->is_null())) return;
    bool ok = std::is_same_v<T, bool> ? found->is_boolean()
              : std::is_integral_v<T> ? found->is_number_integer()
                                      : found->is_number();
    if (!ok) throw ErrorType(std::string(what) + ": " + key + " has the wrong type");
    try {
      into = found->get<T>();
    } catch (const json::exception &) {
      throw ErrorType(std::string(what) + ": " + key + " is out of range");
    }
  }

  template <typename T> void readOptional(const char *key, std::optional<T> &into) {
    if (object.contains(key) && !object.at(key).is_null()) {
      T value{};
      read(key, value);
      into = value;
    } else {
      asked.insert(key);
    }
  }

  void readIds(const char *key, std::vector<int32_t> &into) {
    asked.insert(key);
    auto found = object.find(key);
    if (found == object.end() || found->is_null()) return;
    if (!found->is_array()) throw ErrorType(std::string(what) + ": " + key + " must be a list");
    for (const json &id : *found) {
      if (!id.is_number_integer() || id.get<int64_t>() < INT32_MIN || id.get<int64_t>() > INT32_MAX)
        throw ErrorType(std::string(what) + ": " + key + " must hold integer token ids");
      into.push_back(id.get<int32_t>());
    }
  }

  void readString(const char *key, std::string &into) {
    asked.insert(key);
    auto found = object.find(key);
    if (found == object.end() || found->is_null()) return;
    if (!found->is_string()) throw ErrorType(std::string(what) + ": " + key + " must be a string");
    into = found->get<std::string>();
  }

  void readLogitBias(const char *key, std::vector<std::pair<int32_t, float>> &into) {
    if (const json *bias = readObject(key)) into = logitBiasFromJson(*bias);
  }

  /// The nested object at `key`; null when absent or null.
  const json *readObject(const char *key) {
    asked.insert(key);
    auto found = object.find(key);
    if (found == object.end() || found->is_null()) return nullptr;
    return &*found;
  }

  /// Throws for a key no read asked about.
  void finish() const {
    for (const auto &entry : object.items())
      if (!asked.count(entry.key()))
        throw ErrorType(std::string(what) + ": unknown key \"" + entry.key() + "\"");
  }

private:
  const json &object;
  const char *what;
  std::unordered_set<std::string> asked;
};
} // namespace

EngineConfig engineConfigFromJson(const json &object) {
  EngineConfig config;
  Fields<Error> fields(object, "engine config");
  fields.read("max_num_seqs", config.maxNumSeqs);
  fields.read("max_num_batched_tokens", config.maxNumBatchedTokens);
  fields.read("max_model_len", config.maxModelLen);
  fields.read("enable_prefix_caching", config.enablePrefixCaching);
  fields.read("seed", config.seed);
  // GiB, as vLLM's swap_space.
  double swapGiB = 0;
  fields.read("swap_space", swapGiB);
  if (!(swapGiB >= 0 && swapGiB < 1e9)) throw Error("engine config: swap_space must be >= 0 GiB");
  config.swapSpaceBytes = static_cast<int64_t>(swapGiB * 1024 * 1024 * 1024);
  if (const json *speculative = fields.readObject("speculative_config"))
    config.speculative = speculativeConfigFromJson(*speculative);
  std::string policy = "fcfs";
  fields.readString("scheduling_policy", policy);
  config.schedulingPolicy = schedulingPolicyNamed(policy);
  fields.finish();
  return config;
}

SchedulingPolicy schedulingPolicyNamed(const std::string &name) {
  if (name == "fcfs") return SchedulingPolicy::Fcfs;
  if (name == "priority") return SchedulingPolicy::Priority;
  throw Error("scheduling_policy must be \"fcfs\" or \"priority\", not \"" + name + "\"");
}

SpeculativeConfig speculativeConfigFromJson(const json &object) {
  SpeculativeConfig config;
  Fields<Error> fields(object, "speculative_config");
  std::string method = "ngram";
  fields.readString("method", method);
  if (method != "ngram")
    throw Error("speculative_config: method \"" + method +
                "\" is not supported (llmc proposes drafts by prompt lookup: \"ngram\")");
  fields.read("num_speculative_tokens", config.numSpeculativeTokens);
  fields.read("prompt_lookup_max", config.promptLookupMax);
  fields.read("prompt_lookup_min", config.promptLookupMin);
  fields.finish();
  config.validate();
  return config;
}

RequestOptions requestOptionsFromJson(const json &object) {
  RequestOptions options;
  SamplingParams &sampling = options.sampling;
  Fields<RequestError> fields(object, "request options");
  fields.read("max_tokens", options.maxTokens);
  fields.read("n", options.n);
  fields.read("temperature", sampling.temperature);
  fields.read("top_k", sampling.topK);
  fields.read("top_p", sampling.topP);
  fields.read("min_p", sampling.minP);
  fields.read("repetition_penalty", sampling.repetitionPenalty);
  fields.read("presence_penalty", sampling.presencePenalty);
  fields.read("frequency_penalty", sampling.frequencyPenalty);
  fields.readOptional("seed", sampling.seed);
  fields.readOptional("logprobs", sampling.logprobs);
  fields.readOptional("prompt_logprobs", options.promptLogprobs);
  fields.read("priority", options.priority);
  fields.readIds("stop_token_ids", options.stopTokenIds);
  fields.readLogitBias("logit_bias", sampling.logitBias);
  fields.read("min_tokens", sampling.minTokens);
  fields.readIds("allowed_token_ids", sampling.allowedTokenIds);
  if (const json *pooling = fields.readObject("pooling")) {
    Fields<RequestError> poolingFields(*pooling, "pooling");
    options.pooling.emplace();
    poolingFields.read("normalize", options.pooling->normalize);
    poolingFields.read("activation", options.pooling->activation);
    poolingFields.readOptional("dimensions", options.pooling->dimensions);
    poolingFields.finish();
  }
  fields.finish();
  return options;
}

std::vector<std::pair<int32_t, float>> logitBiasFromJson(const json &object) {
  if (!object.is_object())
    throw RequestError("logit_bias must be an object of token ids and their biases");
  std::vector<std::pair<int32_t, float>> bias;
  for (const auto &[key, value] : object.items()) {
    // A token id in decimal, as OpenAI's clients write the keys.
    size_t end = 0;
    long long token = -1;
    try {
      token = std::stoll(key, &end);
    } catch (const std::exception &) {
    }
    if (key.empty() || end != key.size() || token < 0 || token > INT32_MAX)
      throw RequestError("logit_bias: \"" + key + "\" is not a token id");
    if (!value.is_number())
      throw RequestError("logit_bias: the bias of token " + key + " must be a number");
    bias.push_back({static_cast<int32_t>(token), value.get<float>()});
  }
  std::sort(bias.begin(), bias.end());
  return bias;
}

namespace {
/// The top logprobs as [[token, logprob], ...].
json topLogprobsJson(const SampledToken &token) {
  json top = json::array();
  for (const TokenLogprob &entry : token.topLogprobs) top.push_back({entry.token, entry.logprob});
  return top;
}
} // namespace

json toJson(const StepOutput &output) {
  json result = {{"request", output.request}, {"index", output.index}};
  result["token"] = output.token ? json(output.token->token) : json(nullptr);
  result["logprob"] = output.token ? json(output.token->logprob) : json(nullptr);
  result["rank"] = output.token ? json(output.token->rank) : json(nullptr);
  result["top_logprobs"] = output.token ? topLogprobsJson(*output.token) : json::array();
  result["finish_reason"] = output.finishReason == FinishReason::None
                                ? json(nullptr)
                                : json(finishReasonName(output.finishReason));
  json prompt = json::array();
  for (const SampledToken &entry : output.promptLogprobs)
    prompt.push_back({{"token", entry.token},
                      {"logprob", entry.logprob},
                      {"rank", entry.rank},
                      {"top_logprobs", topLogprobsJson(entry)}});
  result["prompt_logprobs"] = std::move(prompt);
  if (!output.pooled.empty()) result["pooled"] = output.pooled;
  return result;
}

json toJson(const EngineStats &stats) {
  return {{"num_steps", stats.numSteps},
          {"computed_tokens", stats.computedTokens},
          {"prompt_tokens_computed", stats.promptTokensComputed},
          {"cached_prompt_tokens", stats.cachedPromptTokens},
          {"generated_tokens", stats.generatedTokens},
          {"num_preemptions", stats.numPreemptions},
          {"num_swap_preemptions", stats.numSwapPreemptions},
          {"num_blocks_swapped_out", stats.numBlocksSwappedOut},
          {"num_blocks_swapped_in", stats.numBlocksSwappedIn},
          {"num_swap_slots_used", stats.numSwapSlotsUsed},
          {"num_swap_slots", stats.numSwapSlots},
          {"prefix_cache_queried_blocks", stats.prefixCache.queriedBlocks},
          {"prefix_cache_hit_blocks", stats.prefixCache.hitBlocks},
          {"prefix_cache_hit_rate", stats.prefixCache.hitRate()},
          {"num_running", stats.numRunning},
          {"num_waiting", stats.numWaiting},
          {"num_kv_blocks", stats.numKvBlocks},
          {"num_kv_blocks_held", stats.numKvBlocksHeld},
          {"prefill_step_seconds", stats.prefillStepSeconds},
          {"decode_step_seconds", stats.decodeStepSeconds},
          {"decode_step_tokens", stats.decodeStepTokens},
          {"draft_tokens", stats.draftTokens},
          {"accepted_draft_tokens", stats.acceptedDraftTokens}};
}

} // namespace llmc::runtime
