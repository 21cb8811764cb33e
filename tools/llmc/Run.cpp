//===- Run.cpp - `llmc run`: generate completions from a compiled model ---===//
//
//   llmc run model.llmc --prompt "text" [--prompt-file FILE] [--prompt-ids 1,2,3]
//            [--batch-file prompts.jsonl] [--max-tokens N] [sampling] [engine options]
//            [--print-ids] [--json]
//
// Text in, text out, through the tokenizer the artifact carries; token ids in,
// token ids out. The prompts run as requests of the serving engine (continuous
// batching over the paged KV cache). The options are parsed here, not with
// llvm::cl, so that they stay apart from `llmc compile`'s. This file is built
// with exceptions (the runtime reports errors by throwing), unlike the rest of
// the tool.
//
//===----------------------------------------------------------------------===//
#include "Run.h"

#include "EngineFlags.h"

#include "runtime/core/Error.h"
#include "runtime/core/Model.h"
#include "runtime/engine/Engine.h"
#include "runtime/tokenizer/IncrementalDecoder.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/TokenizerConfig.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

namespace llmc {
namespace {
using runtime::Error;

constexpr const char *kUsage =
    "usage: llmc run model.llmc (--prompt TEXT | --prompt-file FILE | --prompt-ids 1,2,3\n"
    "                            | --batch-file prompts.jsonl) ...\n"
    "                [--max-tokens N] [sampling options] [engine options] [--print-ids] [--json]\n"
    "\n"
    "Generates a completion of each prompt with the serving engine. Text prompts go through\n"
    "the tokenizer the artifact carries (tokenizer.json, with its BOS template); generation\n"
    "then stops at the end-of-sequence token of tokenizer_config.json.\n"
    "  --prompt TEXT         a prompt (repeat any prompt option for a batch)\n"
    "  --prompt-file FILE    a prompt, the whole file's text\n"
    "  --prompt-ids IDS      a prompt, comma-separated token ids\n"
    "  --batch-file FILE     prompts, one JSON object a line: {\"prompt\": \"...\"} or\n"
    "                        {\"prompt_ids\": [...]}\n"
    "  --max-tokens N        tokens to generate per prompt (default 16)\n"
    "  --print-ids           print the generated ids even when the prompts are text\n"
    "  --json                print {\"outputs\": [...], throughput} as JSON\n"
    "sampling (default greedy):\n"
    "  --temperature T  --top-p P  --top-k K  --min-p P  --seed S\n"
    "engine:\n"
    "%ENGINE%"
    "When a prompt is text, each completion is printed as text (one prompt: as it is\n"
    "generated) and the KV cache size and the speeds go to stderr; otherwise each prompt's\n"
    "generated ids are printed on one line.\n";

/// A prompt as given: text (to tokenize) or token ids.
struct Prompt {
  std::optional<std::string> text;
  std::vector<int32_t> ids;
};

struct RunOptions {
  std::string artifactDir;
  std::vector<Prompt> prompts;
  int64_t maxTokens = 16;
  runtime::SamplingParams sampling;
  EngineFlags engine;
  bool printIds = false;
  bool json = false;

  bool anyText() const {
    for (const Prompt &prompt : prompts)
      if (prompt.text) return true;
    return false;
  }
};

std::vector<int32_t> parsePromptIds(const std::string &text) {
  std::vector<int32_t> ids;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ','))
    ids.push_back(
        static_cast<int32_t>(parseInteger(item, "--prompt-ids: a token id", 0, INT32_MAX)));
  if (ids.empty()) throw Error("--prompt-ids needs at least one token id");
  return ids;
}

/// Prompts from a JSON-lines file: {"prompt": "..."} or {"prompt_ids": [...]}
/// per non-blank line.
void readBatchFile(const std::string &path, std::vector<Prompt> &prompts) {
  std::ifstream stream(path);
  if (!stream) throw Error(path + ": cannot open the batch file");
  std::string line;
  for (int lineNumber = 1; std::getline(stream, line); ++lineNumber) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = path + ":" + std::to_string(lineNumber) + ": ";
    nlohmann::json entry = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (entry.is_discarded()) throw Error(where + "not valid JSON");
    if (entry.is_object() && entry.contains("prompt") && entry["prompt"].is_string()) {
      prompts.push_back({entry["prompt"].get<std::string>(), {}});
      continue;
    }
    if (!entry.is_object() || !entry.contains("prompt_ids") || !entry["prompt_ids"].is_array())
      throw Error(where + "expected an object with a \"prompt\" string or a \"prompt_ids\" list");
    std::vector<int32_t> ids;
    for (const nlohmann::json &id : entry["prompt_ids"]) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
        throw Error(where + "prompt_ids must be non-negative integer token ids");
      ids.push_back(id.get<int32_t>());
    }
    prompts.push_back({std::nullopt, std::move(ids)});
  }
}

/// Parses the arguments; nothing when --help was asked for.
std::optional<RunOptions> parseArguments(const std::vector<std::string> &args) {
  RunOptions options;
  options.sampling.temperature = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    Argument argument = readArgument(args, i, {"--help", "-h", "--json", "--print-ids"});
    const std::string &name = argument.name, &value = argument.value;
    if (name == "--help" || name == "-h") return std::nullopt;
    if (name == "--json") {
      options.json = true;
      continue;
    }
    if (name == "--print-ids") {
      options.printIds = true;
      continue;
    }
    if (argument.positional) {
      if (!options.artifactDir.empty())
        throw Error("one model at a time: '" + options.artifactDir + "' and '" + name + "'");
      options.artifactDir = name;
      continue;
    }
    if (name == "--prompt")
      options.prompts.push_back({value, {}});
    else if (name == "--prompt-file")
      options.prompts.push_back({readTextFile(value, "prompt file"), {}});
    else if (name == "--prompt-ids")
      options.prompts.push_back({std::nullopt, parsePromptIds(value)});
    else if (name == "--batch-file")
      readBatchFile(value, options.prompts);
    else if (name == "--max-tokens")
      options.maxTokens = parseInteger(value, name, 1);
    else if (name == "--temperature")
      options.sampling.temperature = static_cast<float>(parseNumber(value, name, 0, 100));
    else if (name == "--top-p")
      options.sampling.topP = static_cast<float>(parseNumber(value, name, 1e-6, 1));
    else if (name == "--top-k")
      options.sampling.topK = static_cast<int32_t>(parseInteger(value, name, -1, INT32_MAX));
    else if (name == "--min-p")
      options.sampling.minP = static_cast<float>(parseNumber(value, name, 0, 1));
    else if (name == "--seed")
      options.sampling.seed = static_cast<uint64_t>(parseInteger(value, name, 0));
    else if (!options.engine.consume(name, value))
      throw Error("unknown option " + name + " (llmc run --help lists them)");
  }
  if (options.artifactDir.empty()) throw Error("no model: give the model.llmc directory");
  if (options.prompts.empty())
    throw Error("no prompt: give --prompt, --prompt-file, --prompt-ids or --batch-file");
  return options;
}

double perSecond(int64_t count, double seconds) { return seconds > 0 ? count / seconds : 0.0; }

/// The artifact's tokenizer, for text prompts, and the ids generation stops at.
struct TextSupport {
  std::unique_ptr<runtime::tokenizer::Tokenizer> tokenizer;
  std::vector<int32_t> endOfSequence;
};

TextSupport loadTokenizer(const runtime::Artifact &artifact) {
  if (artifact.tokenizerFile().empty())
    throw Error(artifact.directory() +
                " has no tokenizer.json (llmc compile copies it from the model's directory "
                "when it is there): give the prompt as --prompt-ids");
  TextSupport support;
  support.tokenizer = runtime::tokenizer::Tokenizer::fromFile(artifact.tokenizerFile());
  if (!artifact.tokenizerConfigFile().empty()) {
    auto config = runtime::tokenizer::TokenizerConfig::load(artifact.tokenizerConfigFile());
    support.endOfSequence = runtime::tokenizer::endOfSequenceIds(config, support.tokenizer.get(),
                                                                 artifact.model().vocabSize);
  }
  return support;
}

/// Streams one completion to stdout as its tokens come.
class TextStream {
public:
  explicit TextStream(const runtime::tokenizer::Tokenizer &tokenizer) : decoder(tokenizer) {}
  void add(int32_t token) { std::cout << decoder.add(token) << std::flush; }
  void finish() { std::cout << decoder.finish() << "\n"; }

private:
  runtime::tokenizer::IncrementalDecoder decoder;
};

/// Prefill and decode speeds, from the steps that carried prompt tokens and
/// those that did not.
struct Speeds {
  int64_t prefillTokens, decodeTokens;
  double prefillRate, decodeRate;
};

Speeds speeds(const runtime::EngineStats &stats) {
  int64_t prefillTokens = stats.computedTokens - stats.decodeStepTokens;
  // Decode steps computed every draft token; the rejected ones gave no token.
  int64_t decodeTokens = stats.decodeStepTokens - (stats.draftTokens - stats.acceptedDraftTokens);
  return {prefillTokens, decodeTokens, perSecond(prefillTokens, stats.prefillStepSeconds),
          perSecond(decodeTokens, stats.decodeStepSeconds)};
}

void printOutputs(const RunOptions &options, const TextSupport &text,
                  const std::vector<std::vector<int32_t>> &outputs,
                  const runtime::EngineStats &stats, bool streamed) {
  bool asText = text.tokenizer && !options.printIds;
  Speeds speed = speeds(stats);
  if (options.json) {
    nlohmann::ordered_json report;
    report["outputs"] = nlohmann::ordered_json::array();
    for (size_t i = 0; i < outputs.size(); ++i) {
      nlohmann::ordered_json output;
      if (options.prompts[i].text) output["prompt"] = *options.prompts[i].text;
      output["prompt_ids"] = options.prompts[i].ids;
      output["output_ids"] = outputs[i];
      if (text.tokenizer) output["text"] = text.tokenizer->decode(outputs[i]);
      report["outputs"].push_back(std::move(output));
    }
    report["prefill_tokens_per_s"] = speed.prefillRate;
    report["decode_tokens_per_s"] = speed.decodeRate;
    report["num_preemptions"] = stats.numPreemptions;
    report["num_swap_preemptions"] = stats.numSwapPreemptions;
    std::cout << report.dump() << "\n";
    return;
  }
  if (asText) {
    if (!streamed)
      for (const std::vector<int32_t> &output : outputs)
        std::cout << text.tokenizer->decode(output) << "\n";
    std::cerr << "llmc run: prefill " << speed.prefillTokens << " tokens, "
              << static_cast<int64_t>(speed.prefillRate) << " tokens/s; decode "
              << speed.decodeTokens << " tokens, " << static_cast<int64_t>(speed.decodeRate)
              << " tokens/s\n";
    return;
  }
  for (const std::vector<int32_t> &output : outputs) {
    for (size_t i = 0; i < output.size(); ++i) std::cout << (i ? " " : "") << output[i];
    std::cout << "\n";
  }
}
} // namespace

int runRun(const std::vector<std::string> &args) {
  try {
    std::optional<RunOptions> options = parseArguments(args);
    if (!options) {
      std::string usage = kUsage;
      usage.replace(usage.find("%ENGINE%"), 8, kEngineFlagsUsage);
      std::cout << usage;
      return 0;
    }
    std::unique_ptr<runtime::Artifact> artifact = runtime::Artifact::load(options->artifactDir);
    TextSupport text;
    if (options->anyText()) {
      text = loadTokenizer(*artifact);
      for (Prompt &prompt : options->prompts)
        if (prompt.text) prompt.ids = text.tokenizer->encode(*prompt.text);
    }
    runtime::Model model(std::move(artifact), options->engine.model);
    if (!options->json) std::cerr << "llmc run: " << model.kvCacheSummary() << "\n";
    runtime::Engine engine(model, options->engine.engine);
    runtime::RequestOptions request;
    request.maxTokens = options->maxTokens;
    request.sampling = options->sampling;
    request.stopTokenIds = text.endOfSequence;
    // One text prompt is printed as it is generated.
    std::optional<TextStream> stream;
    std::function<void(const runtime::StepOutput &)> onOutput;
    if (text.tokenizer && !options->printIds && !options->json && options->prompts.size() == 1) {
      stream.emplace(*text.tokenizer);
      onOutput = [&](const runtime::StepOutput &output) {
        if (output.token) stream->add(output.token->token);
      };
    }
    std::vector<std::vector<int32_t>> prompts;
    for (const Prompt &prompt : options->prompts) prompts.push_back(prompt.ids);
    std::vector<std::vector<int32_t>> outputs;
    for (runtime::Completion &completion : runtime::runToCompletion(engine, prompts, request, onOutput))
      outputs.push_back(std::move(completion[0]));
    if (stream) stream->finish();
    printOutputs(*options, text, outputs, engine.stats(), stream.has_value());
    return 0;
  } catch (const std::exception &error) {
    std::cerr << "llmc run: error: " << error.what() << "\n";
    return 1;
  }
}

} // namespace llmc
