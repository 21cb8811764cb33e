//===- Sampler.cpp - from a logits row to the next token ------------------===//
#include "runtime/engine/Sampler.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_set>

namespace llmc::runtime {
namespace {

void require(bool condition, const std::string &message) {
  if (!condition) throw Error(message);
}

} // namespace

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
  for (const auto &[token, bias] : logitBias) {
    require(token >= 0 && token < vocabSize,
            "logit_bias: token " + std::to_string(token) + " is outside the vocabulary (0 to " +
                std::to_string(vocabSize - 1) + ")");
    require(bias >= -100 && bias <= 100, "logit_bias: the bias of token " +
                                             std::to_string(token) + " must be in [-100, 100], "
                                             "got " + std::to_string(bias));
  }
  require(minTokens >= 0, "min_tokens must be >= 0, got " + std::to_string(minTokens));
  for (int32_t token : allowedTokenIds)
    require(token >= 0 && token < vocabSize,
            "allowed_token_ids: token " + std::to_string(token) +
                " is outside the vocabulary (0 to " + std::to_string(vocabSize - 1) + ")");
}

SequenceSampler::SequenceSampler(const SamplingParams &params, uint64_t seed,
                                 std::vector<int32_t> promptTokens,
                                 std::vector<int32_t> stopTokenIds)
    : sampling(params), rng(params.seed.value_or(seed)), promptTokens(std::move(promptTokens)),
      stopTokenIds(std::move(stopTokenIds)) {}

int32_t SequenceSampler::draw(int64_t vocabSize, std::optional<int32_t> draft) {
  // Softmax at the temperature (unnormalised; sums in double). Float exps: a
  // row is 50k-250k of them per token.
  float maxScore = *std::max_element(scores.begin(), scores.begin() + vocabSize);
  float inverseTemperature = 1.0f / sampling.temperature;
  probs.resize(vocabSize);
  for (int64_t i = 0; i < vocabSize; ++i)
    probs[i] = std::exp((scores[i] - maxScore) * inverseTemperature);
  auto moreLikely = [this](int32_t a, int32_t b) {
    return probs[a] != probs[b] ? probs[a] > probs[b] : a < b;
  };

  bool filtered = (sampling.topK > 0 && sampling.topK < vocabSize) || sampling.topP < 1 ||
                  sampling.minP > 0;
  if (!filtered) {
    // Every token is a candidate: one pass in id order, no sort.
    double total = std::accumulate(probs.begin(), probs.end(), 0.0,
                                   [](double sum, float p) { return sum + p; });
    return pick(nullptr, vocabSize, total, draft);
  }

  // The filters, in vLLM's order: top_k, top_p, min_p. Only top_p needs the
  // candidates sorted, and only as far as its share reaches.
  order.resize(vocabSize);
  std::iota(order.begin(), order.end(), 0);
  int64_t kept = vocabSize;
  if (sampling.topK > 0 && sampling.topK < vocabSize) {
    kept = sampling.topK;
    std::nth_element(order.begin(), order.begin() + kept - 1, order.end(), moreLikely);
  }
  // top_p is a share of what top_k kept, as in vLLM.
  double total = 0;
  for (int64_t i = 0; i < kept; ++i) total += probs[order[i]];
  if (sampling.minP > 0) {
    // Only tokens at least min_p times the most likely one can stay.
    int32_t best = *std::min_element(order.begin(), order.begin() + kept, moreLikely);
    double threshold = sampling.minP * probs[best];
    kept = std::partition(order.begin(), order.begin() + kept,
                          [&](int32_t token) { return probs[token] >= threshold; }) -
           order.begin();
  }
  if (sampling.topP < 1) {
    // The smallest head of the order holding top_p's share: sort a head of
    // 64 candidates, growing it 4x until it does.
    int64_t sorted = std::min<int64_t>(kept, 64);
    while (true) {
      if (sorted < kept)
        std::nth_element(order.begin(), order.begin() + sorted - 1, order.begin() + kept,
                         moreLikely);
      std::sort(order.begin(), order.begin() + sorted, moreLikely);
      double head = 0;
      for (int64_t i = 0; i < sorted; ++i) head += probs[order[i]];
      if (sorted == kept || head >= sampling.topP * total) break;
      sorted = std::min<int64_t>(kept, sorted * 4);
    }
    double cumulative = 0;
    int64_t needed = 0;
    while (needed < sorted && cumulative < sampling.topP * total)
      cumulative += probs[order[needed++]];
    kept = std::max<int64_t>(needed, 1);
  }
  double keptTotal = 0;
  for (int64_t i = 0; i < kept; ++i) keptTotal += probs[order[i]];
  return pick(order.data(), kept, keptTotal, draft);
}

int32_t SequenceSampler::pick(const int32_t *tokens, int64_t count, double total,
                              std::optional<int32_t> draft) {
  auto tokenAt = [tokens](int64_t i) { return tokens ? tokens[i] : static_cast<int32_t>(i); };
  // A draft the filters dropped has probability 0: it is simply not drawn.
  bool draftIsCandidate = draft && (!tokens || std::find(tokens, tokens + count, *draft) !=
                                                   tokens + count);
  if (draftIsCandidate && probs[*draft] > 0) {
    if (std::uniform_real_distribution<double>(0.0, total)(rng) < probs[*draft]) return *draft;
    // Rejected: the next token is drawn from the distribution without it.
    total -= probs[*draft];
  } else {
    draftIsCandidate = false;
  }
  double left = std::uniform_real_distribution<double>(0.0, total)(rng);
  int32_t lastPossible = tokenAt(count - 1);
  for (int64_t i = 0; i < count; ++i) {
    int32_t token = tokenAt(i);
    if (probs[token] == 0 || (draftIsCandidate && token == *draft)) continue;
    lastPossible = token;
    left -= probs[token];
    if (left < 0) return token;
  }
  return lastPossible; // rounding left a sliver past the last candidate
}

bool SequenceSampler::picksArgmax() const {
  return sampling.temperature == 0 && !adjustsScores() && !sampling.logprobs;
}

SampledToken SequenceSampler::sampleArgmax(int32_t token) {
  if (!picksArgmax())
    throw Error("sampleArgmax: these sampling parameters do not pick the argmax alone");
  ++outputCounts[token];
  ++numSampled;
  SampledToken result;
  result.token = token;
  return result;
}

bool SequenceSampler::adjustsScores() const {
  return sampling.repetitionPenalty != 1.0f || sampling.frequencyPenalty != 0 ||
         sampling.presencePenalty != 0 || !sampling.logitBias.empty() ||
         !sampling.allowedTokenIds.empty() || holdsStopTokens();
}

SampledToken SequenceSampler::sample(const float *logits, int64_t vocabSize,
                                     std::optional<int32_t> draft) {
  // Greedy without adjustments reads the row as it is: no copy of the scores.
  if (sampling.temperature == 0 && !adjustsScores()) {
    int32_t chosen = argmax(logits, vocabSize);
    ++outputCounts[chosen];
    ++numSampled;
    return withLogprobs(chosen, logits, vocabSize);
  }
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
  for (const auto &[token, bias] : sampling.logitBias) scores[token] += bias;
  if (!sampling.allowedTokenIds.empty()) {
    probs.assign(vocabSize, -std::numeric_limits<float>::infinity());
    for (int32_t token : sampling.allowedTokenIds) probs[token] = scores[token];
    scores.swap(probs);
  }
  if (holdsStopTokens()) {
    std::vector<std::pair<int32_t, float>> held;
    for (int32_t token : stopTokenIds) {
      held.push_back({token, scores[token]});
      scores[token] = -std::numeric_limits<float>::infinity();
    }
    // A row that allows nothing else (a grammar that must end) keeps them.
    float best = *std::max_element(scores.begin(), scores.begin() + vocabSize);
    if (best == -std::numeric_limits<float>::infinity())
      for (const auto &[token, score] : held) scores[token] = score;
  }

  int32_t chosen = sampling.temperature == 0 ? argmax(scores.data(), vocabSize)
                                             : draw(vocabSize, draft);
  ++outputCounts[chosen];
  ++numSampled;
  return withLogprobs(chosen, logits, vocabSize);
}

SampledToken SequenceSampler::withLogprobs(int32_t chosen, const float *logits,
                                           int64_t vocabSize) {
  // Logprobs are reported under the model's own distribution, before any
  // penalty or temperature (as vLLM reports them by default).
  if (sampling.logprobs) return logprobsOf(chosen, logits, vocabSize, *sampling.logprobs, order);
  SampledToken result;
  result.token = chosen;
  return result;
}

SampledToken logprobsOf(int32_t token, const float *logits, int64_t vocabSize, int32_t topCount,
                        std::vector<int32_t> &order) {
  SampledToken result;
  result.token = token;
  float maxLogit = *std::max_element(logits, logits + vocabSize);
  double sum = 0;
  int64_t moreLikely = 0;
  for (int64_t i = 0; i < vocabSize; ++i) {
    sum += std::exp(double(logits[i]) - maxLogit);
    moreLikely += logits[i] > logits[token];
  }
  double logNormalizer = maxLogit + std::log(sum);
  result.logprob = float(logits[token] - logNormalizer);
  result.rank = 1 + moreLikely;
  if (topCount > 0) {
    int64_t count = std::min<int64_t>(topCount, vocabSize);
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
