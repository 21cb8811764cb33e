//===- Run.cpp - `llmc run`: greedy generation from a compiled model ------===//
//
//   llmc run model.llmc --prompt "text" [--prompt-file FILE] [--prompt-ids 1,2,3]
//            [--batch-file prompts.jsonl] [--max-tokens N] [--threads N]
//            [--kv-blocks N] [--print-ids] [--json]
//
// Text in, text out, through the tokenizer the artifact carries; token ids in,
// token ids out. The options are parsed here, not with llvm::cl, so that they
// stay apart from `llmc compile`'s. This file is built with exceptions (the
// runtime reports errors by throwing), unlike the rest of the tool.
//
//===----------------------------------------------------------------------===//
#include "Run.h"

#include "runtime/Error.h"
#include "runtime/Generator.h"
#include "runtime/Model.h"
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
    "                [--max-tokens N] [--threads N] [--kv-blocks N] [--print-ids] [--json]\n"
    "\n"
    "Greedy generation from a compiled model. Text prompts go through the tokenizer the\n"
    "artifact carries (tokenizer.json, with its BOS template); generation then stops at the\n"
    "end-of-sequence token of tokenizer_config.json.\n"
    "  --prompt TEXT         a prompt (repeat any prompt option for a batch)\n"
    "  --prompt-file FILE    a prompt, the whole file's text\n"
    "  --prompt-ids IDS      a prompt, comma-separated token ids\n"
    "  --batch-file FILE     prompts, one JSON object a line: {\"prompt\": \"...\"} or\n"
    "                        {\"prompt_ids\": [...]}\n"
    "  --max-tokens N        tokens to generate per prompt (default 16)\n"
    "  --threads N           CPU threads (default: one per hardware thread)\n"
    "  --kv-blocks N         KV cache blocks (default: what the batch needs)\n"
    "  --print-ids           print the generated ids even when the prompts are text\n"
    "  --json                print {\"outputs\": [...], throughput} as JSON\n"
    "When a prompt is text, each completion is printed as text (one prompt: as it is\n"
    "generated) and the speeds go to stderr; otherwise each prompt's generated ids are\n"
    "printed on one line.\n";

/// A prompt as given: text (to tokenize) or token ids.
struct Prompt {
  std::optional<std::string> text;
  std::vector<int32_t> ids;
};

struct RunOptions {
  std::string artifactDir;
  std::vector<Prompt> prompts;
  int64_t maxTokens = 16;
  unsigned numThreads = 0;
  int64_t numKvBlocks = 0;
  bool printIds = false;
  bool json = false;

  bool anyText() const {
    for (const Prompt &prompt : prompts)
      if (prompt.text) return true;
    return false;
  }
};

int64_t parseInteger(const std::string &text, const std::string &what, int64_t minimum,
                     int64_t maximum = INT64_MAX) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (text.empty() || used != text.size() || value < minimum || value > maximum)
    throw Error(what + " must be an integer from " + std::to_string(minimum) + " to " +
                std::to_string(maximum) + ", not '" + text + "'");
  return value;
}

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

std::string readTextFile(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw Error(path + ": cannot open the prompt file");
  std::ostringstream contents;
  contents << stream.rdbuf();
  return contents.str();
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
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "--help" || arg == "-h") return std::nullopt;
    if (arg == "--json") {
      options.json = true;
      continue;
    }
    if (arg == "--print-ids") {
      options.printIds = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      if (!options.artifactDir.empty())
        throw Error("one model at a time: '" + options.artifactDir + "' and '" + arg + "'");
      options.artifactDir = arg;
      continue;
    }
    // --name=value or --name value.
    std::string name = arg, value;
    size_t equals = arg.find('=');
    if (equals != std::string::npos) {
      name = arg.substr(0, equals);
      value = arg.substr(equals + 1);
    } else {
      if (i + 1 == args.size()) throw Error(arg + " needs a value");
      value = args[++i];
    }
    if (name == "--prompt")
      options.prompts.push_back({value, {}});
    else if (name == "--prompt-file")
      options.prompts.push_back({readTextFile(value), {}});
    else if (name == "--prompt-ids")
      options.prompts.push_back({std::nullopt, parsePromptIds(value)});
    else if (name == "--batch-file")
      readBatchFile(value, options.prompts);
    else if (name == "--max-tokens")
      options.maxTokens = parseInteger(value, "--max-tokens", 0);
    else if (name == "--threads")
      options.numThreads = static_cast<unsigned>(parseInteger(value, "--threads", 1, 1024));
    else if (name == "--kv-blocks")
      options.numKvBlocks = parseInteger(value, "--kv-blocks", 1);
    else
      throw Error("unknown option " + name + " (llmc run --help lists them)");
  }
  if (options.artifactDir.empty()) throw Error("no model: give the model.llmc directory");
  if (options.prompts.empty())
    throw Error("no prompt: give --prompt, --prompt-file, --prompt-ids or --batch-file");
  return options;
}

/// KV blocks for every prompt's full length at once: the simple loop keeps
/// all sequences resident.
int64_t blocksForBatch(const RunOptions &options, int64_t blockSize) {
  int64_t blocks = 0;
  for (const Prompt &prompt : options.prompts)
    blocks += runtime::blocksFor(static_cast<int64_t>(prompt.ids.size()) + options.maxTokens,
                                 blockSize);
  return blocks;
}

double perSecond(int64_t count, double seconds) { return seconds > 0 ? count / seconds : 0.0; }

/// The artifact's tokenizer, for text prompts, and the id generation stops at.
struct TextSupport {
  std::unique_ptr<runtime::tokenizer::Tokenizer> tokenizer;
  std::optional<int32_t> endOfSequence;
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
    if (config.eosToken) support.endOfSequence = support.tokenizer->tokenToId(*config.eosToken);
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

void printOutputs(const RunOptions &options, const TextSupport &text,
                  const std::vector<std::vector<int32_t>> &outputs,
                  const runtime::GenerateStats &stats, bool streamed) {
  bool asText = text.tokenizer && !options.printIds;
  double prefillRate = perSecond(stats.prefillTokens, stats.prefillSeconds);
  double decodeRate = perSecond(stats.decodeTokens, stats.decodeSeconds);
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
    report["prefill_tokens_per_s"] = prefillRate;
    report["decode_tokens_per_s"] = decodeRate;
    std::cout << report.dump() << "\n";
    return;
  }
  if (asText) {
    if (!streamed)
      for (const std::vector<int32_t> &output : outputs)
        std::cout << text.tokenizer->decode(output) << "\n";
    std::cerr << "llmc run: prefill " << stats.prefillTokens << " tokens, "
              << static_cast<int64_t>(prefillRate) << " tokens/s; decode " << stats.decodeTokens
              << " tokens, " << static_cast<int64_t>(decodeRate) << " tokens/s\n";
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
      std::cout << kUsage;
      return 0;
    }
    std::unique_ptr<runtime::Artifact> artifact = runtime::Artifact::load(options->artifactDir);
    TextSupport text;
    if (options->anyText()) {
      text = loadTokenizer(*artifact);
      for (Prompt &prompt : options->prompts)
        if (prompt.text) prompt.ids = text.tokenizer->encode(*prompt.text);
    }
    runtime::ModelOptions modelOptions;
    modelOptions.numThreads = options->numThreads;
    modelOptions.numKvBlocks = options->numKvBlocks > 0
                                   ? options->numKvBlocks
                                   : blocksForBatch(*options, artifact->step().blockSize);
    runtime::Model model(std::move(artifact), modelOptions);
    runtime::Generator generator(model);
    runtime::GenerateOptions generateOptions;
    generateOptions.maxTokens = options->maxTokens;
    if (text.endOfSequence) generateOptions.stopTokenIds.push_back(*text.endOfSequence);
    // One text prompt is printed as it is generated.
    std::optional<TextStream> stream;
    if (text.tokenizer && !options->printIds && !options->json && options->prompts.size() == 1) {
      stream.emplace(*text.tokenizer);
      generateOptions.onToken = [&](size_t, int32_t token) { stream->add(token); };
    }
    std::vector<std::vector<int32_t>> prompts;
    for (const Prompt &prompt : options->prompts) prompts.push_back(prompt.ids);
    std::vector<std::vector<int32_t>> outputs = generator.generate(prompts, generateOptions);
    if (stream) stream->finish();
    printOutputs(*options, text, outputs, generator.stats(), stream.has_value());
    return 0;
  } catch (const std::exception &error) {
    std::cerr << "llmc run: error: " << error.what() << "\n";
    return 1;
  }
}

} // namespace llmc
