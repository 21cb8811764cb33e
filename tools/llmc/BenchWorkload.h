//===- BenchWorkload.h - the requests `llmc bench` runs ---------*- C++ -*-===//
//
// The workload of `llmc bench throughput` and `llmc bench serve`: synthetic
// requests of random lengths and token ids, or a JSON-lines dataset, and
// the file --dump-workload writes. Errors are thrown as runtime::Error.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TOOLS_LLMC_BENCHWORKLOAD_H
#define LLMC_TOOLS_LLMC_BENCHWORKLOAD_H

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace llmc {

/// Lengths drawn uniformly from [low, high].
struct LengthRange {
  int64_t low;
  int64_t high;

  int64_t draw(std::mt19937_64 &rng) const {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  }
};

/// One request of a workload: a prompt and how many tokens to generate.
struct BenchRequest {
  std::vector<int32_t> promptIds;
  /// A dataset's text prompt that nothing encoded (the server does); empty
  /// when the prompt is `promptIds`.
  std::string promptText;
  int64_t maxTokens = 0;
};

/// The workload's options, shared by the benchmarks.
struct WorkloadOptions {
  static constexpr int64_t kDefaultNumPrompts = 32;

  /// Unset: 32 synthetic requests, or all of the dataset's.
  std::optional<int64_t> numPrompts;
  LengthRange inputLens{128, 512};
  LengthRange outputLens{64, 256};
  uint64_t seed = 0;
  std::string dataset;
  std::string dumpWorkload;

  /// Takes `--name value` if it is a workload option (--num-prompts,
  /// --input-len-range, --output-len-range, --seed, --dataset,
  /// --dump-workload); false when it is not one. Throws runtime::Error for a
  /// bad value.
  bool consume(const std::string &name, const std::string &value);
};

/// Requests of uniformly random lengths whose prompts are token ids uniform
/// in [0, vocabSize).
std::vector<BenchRequest> syntheticWorkload(const WorkloadOptions &options, int64_t vocabSize);

/// Turns a dataset's text prompt into token ids.
using TextEncoder = std::function<std::vector<int32_t>(const std::string &)>;

/// The first --num-prompts requests of the --dataset file, one JSON object a
/// line: {"prompt_ids": [...], "max_tokens": N}, or "prompt": "text" in place
/// of prompt_ids; a line without max_tokens draws it from --output-len-range.
/// Text prompts go through `encode`, or stay text when it is empty.
std::vector<BenchRequest> readDataset(const WorkloadOptions &options, const TextEncoder &encode);

/// Writes the requests to `path` as readDataset reads them.
void writeWorkload(const std::string &path, const std::vector<BenchRequest> &requests);

} // namespace llmc

#endif // LLMC_TOOLS_LLMC_BENCHWORKLOAD_H
