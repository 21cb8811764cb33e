//===- Sampler.h - from a logits row to the next token ----------*- C++ -*-===//
//
// Per-request sampling with OpenAI's and vLLM's parameters. Each sequence
// owns its random generator, seeded from the request: the same seed and the
// same prompt give the same tokens whatever else is in the batch (the logits
// themselves are batch-invariant on the CPU). Sample i of an n > 1 request
// with seed s draws as a request with seed s + i would.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_SAMPLER_H
#define LLMC_RUNTIME_ENGINE_SAMPLER_H

#include "runtime/core/Argmax.h"

#include <cstdint>
#include <optional>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

namespace llmc::runtime {

/// OpenAI's limit on the alternatives returned per token.
constexpr int32_t kMaxLogprobs = 20;

struct SamplingParams {
  /// 0 picks the most likely token (greedy, lowest id on ties).
  float temperature = 1.0f;
  /// Keep the k most likely tokens; 0 or -1 keeps all.
  int32_t topK = 0;
  /// Keep the smallest set of most likely tokens whose probability reaches p.
  float topP = 1.0f;
  /// Drop tokens less likely than min_p times the most likely one.
  float minP = 0.0f;
  /// > 1 discourages tokens of the prompt and the output (divides positive
  /// logits, multiplies negative ones), as in vLLM and transformers.
  float repetitionPenalty = 1.0f;
  /// OpenAI's: subtracted once from a token that is in the output so far...
  float presencePenalty = 0.0f;
  /// ...and this times its count in the output.
  float frequencyPenalty = 0.0f;
  /// OpenAI's logit_bias: added to a token's score after the penalties
  /// (-100 bans it in practice, 100 all but forces it).
  std::vector<std::pair<int32_t, float>> logitBias;
  /// vLLM's min_tokens: the sampler's stop tokens are not drawn before this
  /// many output tokens.
  int64_t minTokens = 0;
  /// vLLM's allowed_token_ids: only these are drawn; empty allows all.
  std::vector<int32_t> allowedTokenIds;
  std::optional<uint64_t> seed;
  /// Return the chosen token's logprob and this many most likely tokens'
  /// with each token; nullopt returns none (and skips the log-softmax over
  /// the vocabulary, which greedy decoding does not need).
  std::optional<int32_t> logprobs;

  /// Throws Error naming the first parameter out of range for a vocabulary
  /// of `vocabSize` tokens.
  void validate(int64_t vocabSize) const;
};

struct TokenLogprob {
  int32_t token;
  float logprob;
};

struct SampledToken {
  int32_t token = 0;
  /// log-softmax of the model's raw logits at the chosen token (0 when
  /// SamplingParams::logprobs is nullopt).
  float logprob = 0;
  /// 1 + the number of tokens more likely than it, as vLLM ranks (0 when
  /// SamplingParams::logprobs is nullopt).
  int64_t rank = 0;
  /// The most likely tokens under the same distribution, most likely first.
  std::vector<TokenLogprob> topLogprobs;
};

/// `token` with its logprob and rank under the log-softmax of `logits`, and
/// the `topCount` most likely tokens' (lower ids first among equals).
/// `order` is scratch, reused across calls.
SampledToken logprobsOf(int32_t token, const float *logits, int64_t vocabSize, int32_t topCount,
                        std::vector<int32_t> &order);

/// One sequence's sampler: its parameters, its random generator and the
/// counts of its output tokens (for the presence and frequency penalties).
class SequenceSampler {
public:
  /// `seed` is used when the parameters carry none. `stopTokenIds` are held
  /// back for the first SamplingParams::minTokens tokens.
  SequenceSampler(const SamplingParams &params, uint64_t seed, std::vector<int32_t> promptTokens,
                  std::vector<int32_t> stopTokenIds = {});

  /// The next token from `logits` (vocabSize values); records it as output.
  /// With a `draft` token (speculative decoding), the token drawn is the
  /// draft with its probability p(draft) under the sampling distribution p,
  /// else a token from p without the draft: the tokens follow p all the same
  /// (greedy: the most likely token either way).
  SampledToken sample(const float *logits, int64_t vocabSize,
                      std::optional<int32_t> draft = std::nullopt);

  /// Whether sample() takes the argmax of the logits row as it is and
  /// returns nothing else (greedy, without penalties or logprobs), so that
  /// the GPU may pick the token (Model::stepGreedy).
  bool picksArgmax() const;
  /// What sample() returns when the argmax of the row is `token`, picked
  /// elsewhere; records it as output. Only where picksArgmax().
  SampledToken sampleArgmax(int32_t token);

  const SamplingParams &params() const { return sampling; }

private:
  /// Whether anything changes the scores: a repetition, presence or
  /// frequency penalty, a logit bias, allowed tokens or stop tokens held
  /// back.
  bool adjustsScores() const;
  /// Whether the stop tokens are held back for the next token.
  bool holdsStopTokens() const {
    return numSampled < sampling.minTokens && !stopTokenIds.empty();
  }
  /// A token drawn from `scores` at the temperature, through the filters;
  /// with a draft, as sample() says.
  int32_t draw(int64_t vocabSize, std::optional<int32_t> draft);
  /// Of the candidates `tokens` (weights in `probs`, `total` their sum): the
  /// draft with its probability, else a draw from the others.
  int32_t pick(const int32_t *tokens, int64_t count, double total,
               std::optional<int32_t> draft);
  /// `chosen` with its logprob and the top logprobs the parameters ask for.
  SampledToken withLogprobs(int32_t chosen, const float *logits, int64_t vocabSize);

  SamplingParams sampling;
  std::mt19937_64 rng;
  std::vector<int32_t> promptTokens;
  std::unordered_map<int32_t, int32_t> outputCounts;
  int64_t numSampled = 0;
  std::vector<int32_t> stopTokenIds;
  /// Scratch, reused across calls.
  std::vector<float> scores;
  std::vector<float> probs;
  std::vector<int32_t> order;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_SAMPLER_H
