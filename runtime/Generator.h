//===- Generator.h - greedy generation for a batch of prompts ---*- C++ -*-===//
#ifndef LLMC_RUNTIME_GENERATOR_H
#define LLMC_RUNTIME_GENERATOR_H

#include "runtime/Model.h"
#include "runtime/engine/Sampler.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace llmc::runtime {

/// One logits row the generator sampled from, for callers that check logits.
struct SampledLogits {
  int64_t step;           // index of the model step that produced it
  size_t prompt;          // which prompt's sequence
  int64_t position;       // position of the token the row predicts the successor of
  const float *logits;    // vocabSize values, valid during the callback only
};

struct GenerateOptions {
  /// Tokens to generate per prompt at most.
  int64_t maxTokens = 16;
  /// A sequence ends after generating one of these (it is part of the output).
  std::vector<int32_t> stopTokenIds;
  /// Called for each logits row a token is sampled from, in step order.
  std::function<void(const SampledLogits &)> onLogits;
  /// Called with each generated token as soon as it is sampled (for streaming).
  std::function<void(size_t prompt, int32_t token)> onToken;
};

/// Throughput of one generate() call. Prefill steps are those that carry
/// prompt tokens; decode steps carry one generated token per sequence.
struct GenerateStats {
  int64_t prefillTokens = 0;
  double prefillSeconds = 0;
  int64_t decodeTokens = 0;
  double decodeSeconds = 0;
  int64_t numSteps = 0;
};

/// The simple generation loop: every prompt's prefill first (packed into as
/// few steps as the step limits allow, long prompts split into chunks), then
/// decode steps with one token per unfinished sequence, greedy sampling (the
/// lowest id among equal maxima). KV blocks are taken from the model's pool as
/// sequences grow and returned as they finish; when the pool runs dry it
/// fails with Error (there is no preemption yet).
class Generator {
public:
  explicit Generator(Model &model) : model(model) {}

  /// The generated ids of each prompt, in prompt order.
  std::vector<std::vector<int32_t>> generate(const std::vector<std::vector<int32_t>> &prompts,
                                             const GenerateOptions &options);
  /// The figures of the last generate().
  const GenerateStats &stats() const { return lastStats; }

private:
  Model &model;
  GenerateStats lastStats;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_GENERATOR_H
