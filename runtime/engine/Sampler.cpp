//===- Sampler.cpp - from a logits row to the next token ------------------===//
#include "runtime/engine/Sampler.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <unordered_set>

namespace llmc::runtime {
namespace {

/// OpenAI's limit on returned alternatives.
constexpr int32_t kMaxLogprobs = 20;

void require(bool condition, const std::string &message) {
  if (!condition) throw Error(message);
}

} // namespace

int32_t argmax(const float *values, int64_t count) {
  int64_t best = 0;
  for (int64_t i = 1; i < count; ++i)
    if (values[i] > values[best]) best = i;
  return static_cast<int32_t>(best);
}

void SamplingParams::validate(int64_t vocabSize) const {
  require(std::isfinite(temperature) && temperature >= 0,
          "temperature must be a number >= 0, got " + std::to_string(temperature));
  require(topK >= -1, "top_k must be -1, 0 (all tokens) or positive, got " + std::to_string(topK));
  require(topP > 0 && topP <= 1, "top_p must be in (0, 1], got " + std::to_string(topP));
  require(minP >= 0 && minP <= 1, "min_p must be in [0, 1], got " + std::to_string(minP));
  require(std::isfinite(repetitionPenalty) && repetitionPenalty > 0,
          "repetition_penalty must be > 0, got " + std::to_string(repetitionPenalty));
  require(presencePenalty >= -2 && presencePenalty <= 2,
          "presence_penalty must be in [-2, 2], got " + std::to_string(presencePenalty));
  require(frequencyPenalty >= -2 && frequencyPenalty <= 2,
          "frequency_penalty must be in [-2, 2], got " + std::to_string(frequencyPenalty));
  if (logprobs)
    require(*logprobs >= 0 && *logprobs <= std::min<int64_t>(kMaxLogprobs, vocabSize),
            "logprobs must be in [0, " + std::to_string(kMaxLogprobs) + "], got " +
                std::to_string(*logprobs));
}

SequenceSampler::SequenceSampler(const SamplingParams &params, uint64_t seed,
                                 std::vector<int32_t> promptTokens)
    : sampling(params), rng(params.seed.value_or(seed)), promptTokens(std::move(promptTokens)) {}

SampledToken SequenceSampler::sample(const float *logits, int64_t vocabSize) {
  scores.assign(logits, logits + vocabSize);
  if (sampling.repetitionPenalty != 1.0f) {
    std::unordered_set<int32_t> seen(promptTokens.begin(), promptTokens.end());
    for (const auto &entry : outputCounts) seen.insert(entry.first);
    for (int32_t token : seen) {
      float &score = scores[token];
      score = score > 0 ? score / sampling.repetitionPenalty : score * sampling.repetitionPenalty;
    }
  }
  for (const auto &[token, count] : outputCounts)
    scores[token] -= sampling.frequencyPenalty * count + sampling.presencePenalty;

  int32_t chosen;
  if (sampling.temperature == 0) {
    chosen = argmax(scores.data(), vocabSize);
  } else {
    // Softmax at the temperature, then the filters on the sorted candidates.
    float maxScore = *std::max_element(scores.begin(), scores.end());
    std::vector<double> probs(vocabSize);
    for (int64_t i = 0; i < vocabSize; ++i)
      probs[i] = std::exp((double(scores[i]) - maxScore) / sampling.temperature);
    order.resize(vocabSize);
    std::iota(order.begin(), order.end(), 0);
    int64_t kept = sampling.topK > 0 ? std::min<int64_t>(sampling.topK, vocabSize) : vocabSize;
    auto moreLikely = [&](int32_t a, int32_t b) {
      return probs[a] != probs[b] ? probs[a] > probs[b] : a < b;
    };
    std::partial_sort(order.begin(), order.begin() + kept, order.end(), moreLikely);
    if (sampling.topP < 1) {
      // top_p is a share of what top_k kept, as in vLLM.
      double total = 0;
      for (int64_t i = 0; i < kept; ++i) total += probs[order[i]];
      double cumulative = 0;
      int64_t needed = 0;
      while (needed < kept && cumulative < sampling.topP * total)
        cumulative += probs[order[needed++]];
      kept = std::max<int64_t>(needed, 1);
    }
    if (sampling.minP > 0) {
      double threshold = sampling.minP * probs[order[0]];
      while (kept > 1 && probs[order[kept - 1]] < threshold) --kept;
    }
    double keptTotal = 0;
    for (int64_t i = 0; i < kept; ++i) keptTotal += probs[order[i]];
    double draw = std::uniform_real_distribution<double>(0.0, keptTotal)(rng);
    chosen = order[kept - 1];
    for (int64_t i = 0; i < kept; ++i) {
      draw -= probs[order[i]];
      if (draw < 0) {
        chosen = order[i];
        break;
      }
    }
  }
  ++outputCounts[chosen];

  SampledToken result;
  result.token = chosen;
  if (!sampling.logprobs) return result;
  // Logprobs are reported under the model's own distribution, before any
  // penalty or temperature (as vLLM reports them by default).
  float maxLogit = *std::max_element(logits, logits + vocabSize);
  double sum = 0;
  for (int64_t i = 0; i < vocabSize; ++i) sum += std::exp(double(logits[i]) - maxLogit);
  double logNormalizer = maxLogit + std::log(sum);
  result.logprob = float(logits[chosen] - logNormalizer);
  if (*sampling.logprobs > 0) {
    int64_t count = std::min<int64_t>(*sampling.logprobs, vocabSize);
    order.resize(vocabSize);
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + count, order.end(), [&](int32_t a, int32_t b) {
      return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
    });
    for (int64_t i = 0; i < count; ++i)
      result.topLogprobs.push_back({order[i], float(logits[order[i]] - logNormalizer)});
  }
  return result;
}

} // namespace llmc::runtime
