//===- ServingBindings.cpp - the serving engine behind llmc.LLM -----------===//
//
// LLMEngine loads an artifact with its tokenizer, special tokens and chat
// template, and runs an AsyncEngine over it: the model steps on the engine's
// own thread while Python submits requests and polls for their events. The
// events of every request gather in one queue; poll() waits for them with
// the GIL released, so Python threads (and asyncio's loop) run meanwhile.
//
//===----------------------------------------------------------------------===//
#include "runtime/chat/ChatTemplate.h"
#include "runtime/core/Artifact.h"
#include "runtime/engine/AsyncEngine.h"
#include "runtime/engine/EngineJson.h"
#include "runtime/engine/Scoring.h"
#include "runtime/lora/LoraAdapter.h"
#include "runtime/python/Bindings.h"
#include "runtime/python/ModelOptions.h"
#include "runtime/python/PyJson.h"
#include "runtime/structured/Grammar.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/TokenizerConfig.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace llmc::runtime;
using tokenizer::Tokenizer;
using tokenizer::TokenizerConfig;

namespace llmc::python {
namespace {

/// Events from the engine's output thread, waiting for poll(). The waiter is
/// woken once per step (stepDelivered), not per event: on a machine with few
/// cores, each wake of the Python thread takes time from the model's threads.
class EventQueue {
public:
  void push(const StreamEvent &event) {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(event);
  }

  void stepDelivered() { ready.notify_one(); }

  /// Everything queued, after waiting up to `timeoutSeconds` for something.
  std::deque<StreamEvent> take(double timeoutSeconds) {
    std::unique_lock<std::mutex> lock(mutex);
    ready.wait_for(lock, std::chrono::duration<double>(timeoutSeconds),
                   [&] { return !events.empty(); });
    return std::exchange(events, {});
  }

private:
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<StreamEvent> events;
};

/// UTF-8 text as a str; the engine's text is whole characters, and a stray
/// byte becomes U+FFFD rather than an exception in the poll loop.
nb::str text(const std::string &utf8) {
  return nb::steal<nb::str>(PyUnicode_DecodeUTF8(utf8.data(), utf8.size(), "replace"));
}

/// A structured-output constraint from SamplingParams.structured_outputs, as
/// Python's StructuredOutputsParams.spec() gives it: {"kind", "source",
/// "choices"} with kind one of json_object, json_schema, regex, choice, ebnf.
structured::GrammarSpec grammarSpec(const nlohmann::json &spec) {
  using Kind = structured::GrammarSpec::Kind;
  static const std::pair<const char *, Kind> kinds[] = {
      {"json_object", Kind::JsonObject}, {"json_schema", Kind::JsonSchema},
      {"regex", Kind::Regex}, {"choice", Kind::Choice}, {"ebnf", Kind::Ebnf}};
  structured::GrammarSpec grammar;
  grammar.field = "structured_outputs";
  const std::string kind = spec.value("kind", "");
  auto found = std::find_if(std::begin(kinds), std::end(kinds),
                            [&](const auto &entry) { return kind == entry.first; });
  if (found == std::end(kinds)) throw RequestError("structured_outputs: unknown kind '" + kind + "'");
  grammar.kind = found->second;
  grammar.source = spec.value("source", "");
  grammar.choices = spec.value("choices", std::vector<std::string>());
  return grammar;
}

/// The text of a file the artifact carries.
std::string readFile(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) throw Error(path + ": cannot open");
  return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

/// The top logprobs as [(token, logprob), ...].
nb::list topLogprobs(const SampledToken &token) {
  nb::list top;
  for (const TokenLogprob &entry : token.topLogprobs)
    top.append(nb::make_tuple(entry.token, entry.logprob));
  return top;
}

nb::dict eventToPython(const StreamEvent &event) {
  nb::dict result;
  result["request"] = event.request;
  result["index"] = event.index;
  if (event.token) {
    result["token"] = event.token->token;
    result["logprob"] = event.token->logprob;
    result["rank"] = event.token->rank;
    result["top_logprobs"] = topLogprobs(*event.token);
  } else {
    result["token"] = nb::none();
    result["logprob"] = nb::none();
    result["rank"] = nb::none();
    result["top_logprobs"] = nb::list();
  }
  nb::list prompt;
  for (const SampledToken &entry : event.promptLogprobs)
    prompt.append(nb::make_tuple(entry.token, entry.logprob, entry.rank, topLogprobs(entry)));
  result["prompt_logprobs"] = prompt;
  result["text"] = text(event.text);
  result["finish_reason"] = event.finishReason == FinishReason::None
                                ? nb::object(nb::none())
                                : nb::object(nb::str(finishReasonName(event.finishReason)));
  result["stop_string"] =
      event.stopString ? nb::object(text(*event.stopString)) : nb::object(nb::none());
  result["num_prompt_tokens"] = event.numPromptTokens;
  result["pooled"] = event.pooled.empty() ? nb::object(nb::none())
                                          : nb::object(nb::cast(event.pooled));
  result["error"] = text(event.error);
  result["rejected"] = event.rejected;
  return result;
}

class LLMEngine {
public:
  LLMEngine(const std::string &artifactDir, const ModelOptions &modelOptions,
            AsyncEngineConfig engineConfig) {
    std::unique_ptr<Artifact> artifact = Artifact::load(artifactDir);
    // Read once: the tokenizer and the grammar compiler both take its text.
    std::string tokenizerJson;
    if (!artifact->tokenizerFile().empty()) {
      tokenizerJson = readFile(artifact->tokenizerFile());
      tokenizer = Tokenizer::fromJson(tokenizerJson, artifact->tokenizerFile());
    }
    if (!artifact->tokenizerConfigFile().empty())
      config = TokenizerConfig::load(artifact->tokenizerConfigFile());
    if (config.chatTemplate) {
      try {
        chatTemplate = chat::ChatTemplate::parse(*config.chatTemplate);
      } catch (const chat::ChatTemplateError &error) {
        chatTemplateError = std::string("the chat template cannot be run: ") + error.what();
      }
    } else {
      chatTemplateError = "the model has no chat template (tokenizer_config.json has none)";
    }
    model = std::make_shared<Model>(std::move(artifact), modelOptions);
    eosTokenIds = tokenizer::endOfSequenceIds(config, tokenizer.get(), model->config().vocabSize);
    if (tokenizer)
      grammars = std::make_unique<structured::GrammarCompiler>(
          *tokenizer, tokenizerJson, model->config().vocabSize, eosTokenIds);
    engineConfig.onStepDelivered = [queue = events] { queue->stepDelivered(); };
    engine = std::make_unique<AsyncEngine>(*model, tokenizer.get(), engineConfig);
  }

  RequestId submit(std::vector<int32_t> prompt, const nlohmann::json &options,
                   std::vector<std::string> stop, bool detokenize,
                   const std::optional<nlohmann::json> &grammar, bool skipSpecialTokens,
                   std::shared_ptr<const LoraAdapter> lora) {
    if ((detokenize || !stop.empty() || grammar) && !tokenizer)
      throw RequestError("the model has no tokenizer: it takes no text, stop strings, "
                         "structured outputs or detokenized outputs");
    AsyncRequest request;
    request.promptIds = std::move(prompt);
    request.options = requestOptionsFromJson(options);
    // Compiled here, on the caller's thread (the GIL released), and cached.
    if (grammar) request.options.grammar = grammars->compile(grammarSpec(*grammar));
    request.options.lora = std::move(lora);
    request.detokenize = detokenize;
    request.skipSpecialTokens = skipSpecialTokens;
    request.stopStrings = std::move(stop);
    request.onEvent = [queue = events](const StreamEvent &event) { queue->push(event); };
    return engine->submit(std::move(request));
  }

  nb::list poll(double timeoutSeconds) {
    std::deque<StreamEvent> taken;
    {
      nb::gil_scoped_release release;
      taken = events->take(timeoutSeconds);
    }
    nb::list list;
    for (const StreamEvent &event : taken) list.append(eventToPython(event));
    return list;
  }

  std::shared_ptr<Model> model;
  std::shared_ptr<Tokenizer> tokenizer;
  TokenizerConfig config;
  std::optional<chat::ChatTemplate> chatTemplate;
  std::string chatTemplateError;
  std::vector<int32_t> eosTokenIds;
  /// Null without a tokenizer.
  std::unique_ptr<structured::GrammarCompiler> grammars;
  /// Shared with the engine's callbacks, which may outlive a poll.
  std::shared_ptr<EventQueue> events = std::make_shared<EventQueue>();
  /// Last: stopped and joined before the rest goes.
  std::unique_ptr<AsyncEngine> engine;
};
} // namespace

void bindServing(nb::module_ &module) {
  nb::class_<ScoringPlan>(module, "ScoringPlan",
                          "The prompts that score texts against texts (runtime/engine/Scoring.h)")
      .def_ro("prompts", &ScoringPlan::prompts, "the prompts to pool, each alone")
      .def_ro("pair_prompts", &ScoringPlan::pairPrompts,
              "for each pair, the indices of the prompts whose rows make its score")
      .def_prop_ro("cross_encoder",
                   [](const ScoringPlan &plan) {
                     return plan.method == ScoringMethod::CrossEncoder;
                   })
      .def(
          "pooling",
          [](const ScoringPlan &plan, bool activation) {
            PoolingParams params = plan.pooling(activation);
            nb::dict pooling;
            pooling["normalize"] = params.normalize;
            pooling["activation"] = params.activation;
            return pooling;
          },
          nb::arg("activation"), "the engine's pooling options for every prompt")
      .def("scores", &scorePairs, nb::arg("rows"),
           "each pair's score from the pooled rows of `prompts` in order")
      .def("pair_tokens", &ScoringPlan::pairTokens, nb::arg("pair"));

  nb::class_<LLMEngine>(module, "LLMEngine",
                        "An artifact served by the engine on its own threads: submit() requests "
                        "of token ids, poll() their events")
      .def(
          "__init__",
          [](LLMEngine *self, const std::string &artifactDir, nb::dict engineArgs,
             int64_t numThreads, int64_t numKvBlocks, int64_t kvCacheBytes,
             double memoryFraction) {
            AsyncEngineConfig config;
            config.engine = engineConfigFromJson(toJson<nlohmann::json>(engineArgs));
            ModelOptions options = modelOptions(numThreads, numKvBlocks, kvCacheBytes,
                                                memoryFraction, config.engine.maxModelLen);
            nb::gil_scoped_release release;
            new (self) LLMEngine(artifactDir, options, config);
          },
          nb::arg("artifact_dir"), nb::arg("engine_args"), nb::arg("num_threads") = 0,
          nb::arg("num_kv_blocks") = 0, nb::arg("kv_cache_bytes") = 0,
          nb::arg("memory_fraction") = 0.0)
      .def(
          "submit",
          [](LLMEngine &self, std::vector<int32_t> prompt, nb::dict options,
             std::vector<std::string> stop, bool detokenize, std::optional<nb::dict> grammar,
             bool skipSpecialTokens, std::shared_ptr<LoraAdapter> lora) {
            nlohmann::json settings = toJson<nlohmann::json>(options);
            std::optional<nlohmann::json> spec;
            if (grammar) spec = toJson<nlohmann::json>(*grammar);
            nb::gil_scoped_release release;
            return self.submit(std::move(prompt), settings, std::move(stop), detokenize, spec,
                               skipSpecialTokens, std::move(lora));
          },
          nb::arg("prompt_ids"), nb::arg("options"), nb::arg("stop"), nb::arg("detokenize"),
          nb::arg("grammar").none() = nb::none(), nb::arg("skip_special_tokens") = true,
          nb::arg("lora").none() = nb::none(),
          "Queues a request; returns its id. `grammar` ({kind, source, choices}) constrains "
          "its output; `lora` (from load_lora) is the adapter it runs with. Raises "
          "LlmcRequestError for one the engine refuses.")
      .def(
          "load_lora",
          [](const LLMEngine &self, const std::string &directory, int64_t maxRank) {
            // nanobind holds shared_ptrs to non-const classes; nothing changes it.
            return std::const_pointer_cast<LoraAdapter>(
                LoraAdapter::load(directory, self.model->stepConfig().loraSites, maxRank));
          },
          nb::arg("directory"), nb::arg("max_rank"), nb::call_guard<nb::gil_scoped_release>(),
          "The PEFT adapter in `directory` (adapter_config.json, adapter_model.safetensors), "
          "matched to the artifact's LoRA sites; refused when a layer's rank is above "
          "`max_rank` or the artifact cannot serve it exactly")
      .def_prop_ro("lora_sites",
                   [](const LLMEngine &self) {
                     return int64_t(self.model->stepConfig().loraSites.size());
                   },
                   "how many linear layers a LoRA adapter may change (0: compiled without "
                   "--enable-lora)")
      .def("poll", &LLMEngine::poll, nb::arg("timeout"),
           "The events since the last poll, after waiting up to `timeout` seconds for one: "
           "dicts of request, index, token, logprob, rank, top_logprobs, prompt_logprobs "
           "([(token, logprob, rank, top_logprobs)] for prompt tokens 1, 2, ...), text, "
           "finish_reason, stop_string, num_prompt_tokens, error, rejected")
      .def(
          "abort", [](LLMEngine &self, uint64_t id) { self.engine->abort(id); }, nb::arg("id"),
          nb::call_guard<nb::gil_scoped_release>())
      .def(
          "shutdown", [](LLMEngine &self, bool drain) { self.engine->shutdown(drain); },
          nb::arg("drain"), nb::call_guard<nb::gil_scoped_release>())
      .def("stats",
           [](const LLMEngine &self) {
             AsyncEngineStats stats = self.engine->stats();
             nb::dict result = nb::cast<nb::dict>(fromJson(toJson(stats.engine)));
             result["num_pending_requests"] = stats.numPendingRequests;
             return result;
           })
      .def("render_chat",
           [](const LLMEngine &self, nb::dict context) {
             if (!self.chatTemplate) throw Error(self.chatTemplateError);
             nlohmann::ordered_json variables = toJson<nlohmann::ordered_json>(context);
             variables["bos_token"] = self.config.bosToken.value_or("");
             variables["eos_token"] = self.config.eosToken.value_or("");
             nb::gil_scoped_release release;
             return self.chatTemplate->render(variables);
           },
           nb::arg("context"),
           "The prompt of a conversation: `context` (messages, add_generation_prompt, tools, "
           "...) through the model's chat template, with its bos_token and eos_token")
      .def(
          "plan_scoring",
          [](const LLMEngine &self, const std::vector<std::string> &texts1,
             const std::vector<std::string> &texts2, std::optional<size_t> maxTokens) {
            ScoringMethod method = scoringMethodOf(*self.model);
            if (!self.tokenizer)
              throw RequestError("this model has no tokenizer, which scoring needs to read its "
                                 "texts");
            nb::gil_scoped_release release;
            return planScoring(method, *self.tokenizer, texts1, texts2, maxTokens);
          },
          nb::arg("texts_1"), nb::arg("texts_2"), nb::arg("max_tokens").none() = nb::none(),
          "The prompts that score texts_1 against texts_2 (1:1, 1:N or N:N); raises "
          "LlmcRequestError for a model that cannot score or texts that do not pair")
      .def_prop_ro("tokenizer", [](const LLMEngine &self) { return self.tokenizer; })
      .def_prop_ro("eos_token_ids", [](const LLMEngine &self) { return self.eosTokenIds; })
      .def_prop_ro("max_model_len", [](const LLMEngine &self) { return self.engine->maxModelLen(); })
      .def_prop_ro("max_num_seqs", [](const LLMEngine &self) { return self.engine->maxNumSeqs(); })
      .def_prop_ro("vocab_size", [](const LLMEngine &self) { return self.model->config().vocabSize; })
      .def_prop_ro("outputs_hidden_states",
                   [](const LLMEngine &self) { return self.model->outputsHiddenStates(); })
      .def_prop_ro("outputs_class_logits",
                   [](const LLMEngine &self) { return self.model->outputsClassLogits(); })
      .def_prop_ro("labels", [](const LLMEngine &self) { return self.model->config().labels; })
      .def_prop_ro("kv_cache_summary",
                   [](const LLMEngine &self) { return self.model->kvCacheSummary(); });
}

} // namespace llmc::python
