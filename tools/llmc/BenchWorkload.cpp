//===- BenchWorkload.cpp - the requests `llmc bench` runs -----------------===//
//
// Built with exceptions, as Bench.cpp is: errors are runtime::Error.
//
//===----------------------------------------------------------------------===//
#include "BenchWorkload.h"

#include "EngineFlags.h"

#include "runtime/core/Error.h"

#include <nlohmann/json.hpp>

#include <fstream>

namespace llmc {
namespace {
using runtime::Error;

/// "A:B", or "A" for A:A, with 1 <= A <= B.
LengthRange parseRange(const std::string &text, const std::string &what) {
  size_t colon = text.find(':');
  LengthRange range;
  range.low = parseInteger(text.substr(0, colon), what + " (low end)", 1, INT32_MAX);
  range.high = colon == std::string::npos
                   ? range.low
                   : parseInteger(text.substr(colon + 1), what + " (high end)", range.low,
                                  INT32_MAX);
  return range;
}
} // namespace

bool WorkloadOptions::consume(const std::string &name, const std::string &value) {
  if (name == "--num-prompts")
    numPrompts = parseInteger(value, name, 1, INT32_MAX);
  else if (name == "--input-len-range")
    inputLens = parseRange(value, name);
  else if (name == "--output-len-range")
    outputLens = parseRange(value, name);
  else if (name == "--seed")
    seed = static_cast<uint64_t>(parseInteger(value, name, 0));
  else if (name == "--dataset")
    dataset = value;
  else if (name == "--dump-workload")
    dumpWorkload = value;
  else
    return false;
  return true;
}

std::vector<BenchRequest> syntheticWorkload(const WorkloadOptions &options, int64_t vocabSize) {
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocabSize - 1));
  std::vector<BenchRequest> requests(
      options.numPrompts.value_or(WorkloadOptions::kDefaultNumPrompts));
  for (BenchRequest &request : requests) {
    request.promptIds.resize(options.inputLens.draw(rng));
    request.maxTokens = options.outputLens.draw(rng);
    for (int32_t &id : request.promptIds) id = token(rng);
  }
  return requests;
}

std::vector<BenchRequest> readDataset(const WorkloadOptions &options, const TextEncoder &encode) {
  std::ifstream stream(options.dataset);
  if (!stream) throw Error(options.dataset + ": cannot open the dataset");
  std::mt19937_64 rng(options.seed);
  std::vector<BenchRequest> requests;
  std::string line;
  for (int lineNumber = 1;
       (!options.numPrompts || static_cast<int64_t>(requests.size()) < *options.numPrompts) &&
       std::getline(stream, line);
       ++lineNumber) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = options.dataset + ":" + std::to_string(lineNumber) + ": ";
    nlohmann::json entry = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (entry.is_discarded() || !entry.is_object()) throw Error(where + "not a JSON object");
    BenchRequest request;
    if (entry.contains("prompt_ids")) {
      const nlohmann::json &ids = entry["prompt_ids"];
      if (!ids.is_array() || ids.empty())
        throw Error(where + "prompt_ids must be a non-empty list of token ids");
      for (const nlohmann::json &id : ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
          throw Error(where + "prompt_ids must be non-negative integer token ids");
        request.promptIds.push_back(id.get<int32_t>());
      }
    } else if (entry.contains("prompt") && entry["prompt"].is_string()) {
      std::string text = entry["prompt"].get<std::string>();
      if (encode) {
        request.promptIds = encode(text);
        if (request.promptIds.empty()) throw Error(where + "the prompt encodes to no tokens");
      } else {
        if (text.empty()) throw Error(where + "the prompt is empty");
        request.promptText = std::move(text);
      }
    } else {
      throw Error(where + "expected \"prompt_ids\": [...] or \"prompt\": \"text\"");
    }
    if (entry.contains("max_tokens")) {
      const nlohmann::json &maxTokens = entry["max_tokens"];
      if (!maxTokens.is_number_integer() || maxTokens.get<int64_t>() < 1)
        throw Error(where + "max_tokens must be a positive integer");
      request.maxTokens = maxTokens.get<int64_t>();
    } else {
      request.maxTokens = options.outputLens.draw(rng);
    }
    requests.push_back(std::move(request));
  }
  if (options.numPrompts && static_cast<int64_t>(requests.size()) < *options.numPrompts)
    throw Error(options.dataset + " has " + std::to_string(requests.size()) +
                " requests, fewer than --num-prompts " + std::to_string(*options.numPrompts));
  if (requests.empty()) throw Error(options.dataset + " has no requests");
  return requests;
}

void writeWorkload(const std::string &path, const std::vector<BenchRequest> &requests) {
  std::ofstream stream(path);
  if (!stream) throw Error(path + ": cannot write the workload");
  for (const BenchRequest &request : requests) {
    nlohmann::ordered_json line;
    if (request.promptText.empty())
      line["prompt_ids"] = request.promptIds;
    else
      line["prompt"] = request.promptText;
    line["max_tokens"] = request.maxTokens;
    stream << line.dump() << "\n";
  }
  if (!stream.flush()) throw Error(path + ": cannot write the workload");
}

} // namespace llmc
