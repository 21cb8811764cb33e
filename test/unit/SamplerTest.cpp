//===- SamplerTest.cpp - greedy, seeds, filters, penalties, bias, logprobs ===//
#include "runtime/engine/Sampler.h"

#include "runtime/core/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace llmc::runtime {
namespace {

std::vector<float> logitsOf(std::vector<double> probabilities) {
  std::vector<float> logits;
  for (double p : probabilities) logits.push_back(float(std::log(p)));
  return logits;
}

std::vector<int32_t> draw(SamplingParams params, uint64_t seed, const std::vector<float> &logits,
                          int count, std::vector<int32_t> prompt = {}) {
  SequenceSampler sampler(params, seed, prompt);
  std::vector<int32_t> tokens;
  for (int i = 0; i < count; ++i) tokens.push_back(sampler.sample(logits.data(), logits.size()).token);
  return tokens;
}

TEST(SamplerTest, GreedyTakesTheLowestIdAmongEqualMaxima) {
  SamplingParams params;
  params.temperature = 0;
  EXPECT_EQ(draw(params, 1, {0.1f, 2.0f, 2.0f, -1.0f}, 1)[0], 1);
}

TEST(SamplerTest, TheSameSeedGivesTheSameTokens) {
  SamplingParams params;
  auto logits = logitsOf({0.25, 0.25, 0.25, 0.25});
  EXPECT_EQ(draw(params, 7, logits, 50), draw(params, 7, logits, 50));
  EXPECT_NE(draw(params, 7, logits, 50), draw(params, 8, logits, 50));
  params.seed = 3; // the request's seed wins over the engine's
  EXPECT_EQ(draw(params, 7, logits, 50), draw(params, 8, logits, 50));
}

TEST(SamplerTest, SamplesInProportionToTheProbabilities) {
  SamplingParams params;
  auto tokens = draw(params, 11, logitsOf({0.5, 0.3, 0.2}), 20000);
  std::vector<double> frequency(3, 0);
  for (int32_t token : tokens) frequency[token] += 1.0 / tokens.size();
  EXPECT_NEAR(frequency[0], 0.5, 0.02);
  EXPECT_NEAR(frequency[1], 0.3, 0.02);
  EXPECT_NEAR(frequency[2], 0.2, 0.02);
}

/// The frequencies of `count` tokens each drawn against `draft` by a fresh
/// step of one sampler.
std::vector<double> frequenciesAgainstDraft(SamplingParams params, const std::vector<float> &logits,
                                            int32_t draft, int count) {
  SequenceSampler sampler(params, 5, {});
  std::vector<double> frequency(logits.size(), 0);
  for (int i = 0; i < count; ++i)
    frequency[sampler.sample(logits.data(), logits.size(), draft).token] += 1.0 / count;
  return frequency;
}

TEST(SamplerTest, ADraftTokenLeavesTheDistributionAsItIs) {
  // Accepted with its probability, else drawn from the rest: each token
  // still comes with its own probability, whichever token is the draft.
  auto logits = logitsOf({0.5, 0.3, 0.2});
  for (int32_t draft = 0; draft < 3; ++draft) {
    std::vector<double> frequency = frequenciesAgainstDraft({}, logits, draft, 20000);
    EXPECT_NEAR(frequency[0], 0.5, 0.02) << "draft " << draft;
    EXPECT_NEAR(frequency[1], 0.3, 0.02) << "draft " << draft;
    EXPECT_NEAR(frequency[2], 0.2, 0.02) << "draft " << draft;
  }
  // Through the filters too: top_k 2 keeps 0.5 and 0.3 (5/8 and 3/8), and a
  // draft it dropped is never drawn.
  SamplingParams topK;
  topK.topK = 2;
  for (int32_t draft : {1, 2}) {
    std::vector<double> frequency = frequenciesAgainstDraft(topK, logits, draft, 20000);
    EXPECT_NEAR(frequency[0], 0.625, 0.02) << "draft " << draft;
    EXPECT_NEAR(frequency[1], 0.375, 0.02) << "draft " << draft;
    EXPECT_EQ(frequency[2], 0) << "draft " << draft;
  }
}

TEST(SamplerTest, GreedyIgnoresTheDraft) {
  SamplingParams params;
  params.temperature = 0;
  SequenceSampler sampler(params, 1, {});
  std::vector<float> logits = {0.1f, 2.0f, 1.0f};
  EXPECT_EQ(sampler.sample(logits.data(), logits.size(), 2).token, 1);
  EXPECT_EQ(sampler.sample(logits.data(), logits.size(), 1).token, 1);
}

TEST(SamplerTest, FiltersLeaveOnlyTheMostLikelyTokens) {
  auto logits = logitsOf({0.1, 0.6, 0.3});
  SamplingParams topK;
  topK.temperature = 5;
  topK.topK = 1;
  for (int32_t token : draw(topK, 1, logits, 200)) EXPECT_EQ(token, 1);
  SamplingParams topP;
  topP.topP = 0.5; // 0.6 alone reaches it
  for (int32_t token : draw(topP, 1, logits, 200)) EXPECT_EQ(token, 1);
  SamplingParams minP;
  minP.minP = 0.4; // 0.3 >= 0.4 * 0.6 stays, 0.1 goes
  for (int32_t token : draw(minP, 1, logits, 500)) EXPECT_NE(token, 0);
}

TEST(SamplerTest, FiltersOverALargeVocabularyKeepExactlyTheirCandidates) {
  // 1000 tokens, token i with probability proportional to 1000 - i (ids
  // shuffled), so that top_p = 0.5 needs the 294 most likely: past the
  // sampler's first sorted head of 64.
  std::vector<int32_t> rank(1000);
  std::iota(rank.begin(), rank.end(), 0);
  std::shuffle(rank.begin(), rank.end(), std::mt19937(5));
  std::vector<double> probabilities(1000);
  for (int32_t token = 0; token < 1000; ++token) probabilities[token] = 1000 - rank[token];
  auto logits = logitsOf(probabilities);
  auto maxRankDrawn = [&](const SamplingParams &params) {
    int32_t worst = 0;
    for (int32_t token : draw(params, 3, logits, 10000)) worst = std::max(worst, rank[token]);
    return worst;
  };
  SamplingParams topP;
  topP.topP = 0.5; // ranks 0..293 reach half of the mass (500500)
  EXPECT_EQ(maxRankDrawn(topP), 293);
  SamplingParams topKThenTopP;
  topKThenTopP.topK = 100;
  topKThenTopP.topP = 0.5; // half of what the top 100 hold: ranks 0..48
  EXPECT_EQ(maxRankDrawn(topKThenTopP), 48);
  SamplingParams minP;
  minP.minP = 0.9; // at least 900 of 1000: ranks 0..100
  EXPECT_EQ(maxRankDrawn(minP), 100);
  SamplingParams topK;
  topK.topK = 10;
  EXPECT_EQ(maxRankDrawn(topK), 9);
}

TEST(SamplerTest, NeverDrawsAMaskedToken) {
  std::vector<float> logits(5000, -std::numeric_limits<float>::infinity());
  logits[4321] = 1.0f;
  logits[17] = 0.5f;
  SamplingParams params;
  for (int32_t token : draw(params, 9, logits, 300)) EXPECT_TRUE(token == 4321 || token == 17);
}

TEST(SamplerTest, OnlyPlainGreedyPicksTheArgmaxAlone) {
  SamplingParams params;
  params.temperature = 0;
  EXPECT_TRUE(SequenceSampler(params, 1, {}).picksArgmax());
  SamplingParams withLogprobs = params, penalised = params, sampled = params, biased = params;
  withLogprobs.logprobs = 0;
  penalised.presencePenalty = 0.5f;
  sampled.temperature = 0.7f;
  biased.logitBias = {{1, -5.0f}};
  for (const SamplingParams &other : {withLogprobs, penalised, sampled, biased}) {
    SequenceSampler sampler(other, 1, {});
    EXPECT_FALSE(sampler.picksArgmax());
    EXPECT_THROW(sampler.sampleArgmax(3), Error);
  }
  // The token picked elsewhere counts as output, as sample()'s would.
  SequenceSampler sampler(params, 1, {});
  EXPECT_EQ(sampler.sampleArgmax(2).token, 2);
}

TEST(SamplerTest, PenaltiesDiscourageRepeatedTokens) {
  SamplingParams params;
  params.temperature = 0;
  std::vector<float> logits{2.0f, 1.9f, 0.0f};
  EXPECT_EQ(draw(params, 1, logits, 3), (std::vector<int32_t>{0, 0, 0}));
  params.repetitionPenalty = 1.2f; // 2.0 / 1.2 < 1.9 once token 0 is in the prompt
  EXPECT_EQ(draw(params, 1, logits, 1, {0})[0], 1);
  params.repetitionPenalty = 1;
  params.frequencyPenalty = 0.2f; // token 0 drops below 1.9 after one use
  EXPECT_EQ(draw(params, 1, logits, 2), (std::vector<int32_t>{0, 1}));
}

TEST(SamplerTest, ALogitBiasMovesATokensScore) {
  SamplingParams params;
  params.temperature = 0;
  std::vector<float> logits{2.0f, 1.9f, 0.0f, -3.0f};
  params.logitBias = {{0, -100.0f}};
  EXPECT_EQ(draw(params, 1, logits, 2), (std::vector<int32_t>{1, 1}));
  params.logitBias = {{3, 5.5f}};
  EXPECT_EQ(draw(params, 1, logits, 1)[0], 3);
  // Sampled too: -100 leaves a token about e^-100 of its weight.
  params.temperature = 1;
  params.logitBias = {{0, -100.0f}, {1, -100.0f}};
  for (int32_t token : draw(params, 3, logits, 200)) EXPECT_TRUE(token == 2 || token == 3);
  // Logprobs stay the model's own.
  params.temperature = 0;
  params.logprobs = 0;
  params.logitBias = {{3, 50.0f}};
  SampledToken sampled = SequenceSampler(params, 1, {}).sample(logits.data(), logits.size());
  EXPECT_EQ(sampled.token, 3);
  EXPECT_LT(sampled.logprob, -4.0f);
  EXPECT_EQ(sampled.rank, 4); // the model's least likely
}

TEST(SamplerTest, OnlyAllowedTokensAreDrawn) {
  SamplingParams params;
  params.allowedTokenIds = {3, 1};
  std::vector<float> logits{2.0f, 1.0f, 0.5f, -3.0f};
  EXPECT_FALSE(SequenceSampler(params, 1, {}).picksArgmax());
  for (int32_t token : draw(params, 4, logits, 200)) EXPECT_TRUE(token == 1 || token == 3);
  params.temperature = 0;
  EXPECT_EQ(draw(params, 1, logits, 1)[0], 1);
  params.logitBias = {{3, 10.0f}, {0, 100.0f}}; // a bias cannot bring token 0 back
  EXPECT_EQ(draw(params, 1, logits, 1)[0], 3);
}

TEST(SamplerTest, MinTokensHoldsTheStopTokensBack) {
  SamplingParams params;
  params.temperature = 0;
  params.minTokens = 2;
  std::vector<float> logits{2.0f, 1.0f, 0.0f};
  // Token 0 stops: the first two tokens are the next most likely.
  SequenceSampler sampler(params, 1, {}, {0, 2});
  EXPECT_FALSE(sampler.picksArgmax());
  EXPECT_EQ(sampler.sample(logits.data(), logits.size()).token, 1);
  EXPECT_EQ(sampler.sample(logits.data(), logits.size()).token, 1);
  EXPECT_TRUE(sampler.picksArgmax());
  EXPECT_EQ(sampler.sample(logits.data(), logits.size()).token, 0);
  // Without stop tokens there is nothing to hold back.
  EXPECT_TRUE(SequenceSampler(params, 1, {}).picksArgmax());
  // A row that allows only stop tokens (a grammar that must end) keeps them.
  float never = -std::numeric_limits<float>::infinity();
  std::vector<float> onlyStops{never, never, 1.0f};
  SequenceSampler ending(params, 1, {}, {2});
  EXPECT_EQ(ending.sample(onlyStops.data(), onlyStops.size()).token, 2);
  params.temperature = 1;
  SequenceSampler drawn(params, 5, {}, {0});
  for (int i = 0; i < 2; ++i) EXPECT_NE(drawn.sample(logits.data(), logits.size()).token, 0);
}

TEST(SamplerTest, LogprobsAreThoseOfTheModelsDistribution) {
  SamplingParams params;
  params.temperature = 0;
  params.logprobs = 2;
  auto logits = logitsOf({0.1, 0.6, 0.3});
  SequenceSampler sampler(params, 1, {});
  SampledToken sampled = sampler.sample(logits.data(), logits.size());
  EXPECT_EQ(sampled.token, 1);
  EXPECT_NEAR(sampled.logprob, std::log(0.6), 1e-5);
  EXPECT_EQ(sampled.rank, 1);
  ASSERT_EQ(sampled.topLogprobs.size(), 2u);
  EXPECT_EQ(sampled.topLogprobs[0].token, 1);
  EXPECT_EQ(sampled.topLogprobs[1].token, 2);
  EXPECT_NEAR(sampled.topLogprobs[1].logprob, std::log(0.3), 1e-5);

  params.logprobs = 0; // the chosen token's only
  SampledToken chosenOnly = SequenceSampler(params, 1, {}).sample(logits.data(), logits.size());
  EXPECT_NEAR(chosenOnly.logprob, std::log(0.6), 1e-5);
  EXPECT_TRUE(chosenOnly.topLogprobs.empty());
  params.logprobs.reset(); // none: not computed
  SampledToken none = SequenceSampler(params, 1, {}).sample(logits.data(), logits.size());
  EXPECT_EQ(none.logprob, 0.0f);
  EXPECT_EQ(none.rank, 0);

  // Any token of a row: its rank counts the tokens strictly more likely.
  std::vector<int32_t> scratch;
  SampledToken tied = logprobsOf(2, logitsOf({0.3, 0.4, 0.3}).data(), 3, 3, scratch);
  EXPECT_EQ(tied.rank, 2);
  EXPECT_NEAR(tied.logprob, std::log(0.3), 1e-5);
  ASSERT_EQ(tied.topLogprobs.size(), 3u);
  EXPECT_EQ(tied.topLogprobs[1].token, 0); // the lower id first among equals
  EXPECT_EQ(tied.topLogprobs[2].token, 2);
}

TEST(SamplerTest, RejectsParametersOutOfRange) {
  auto invalid = [](auto edit) {
    SamplingParams params;
    edit(params);
    EXPECT_THROW(params.validate(100), Error);
  };
  invalid([](SamplingParams &p) { p.temperature = -1; });
  invalid([](SamplingParams &p) { p.temperature = NAN; });
  invalid([](SamplingParams &p) { p.topP = 0; });
  invalid([](SamplingParams &p) { p.topK = -2; });
  invalid([](SamplingParams &p) { p.minP = 1.5; });
  invalid([](SamplingParams &p) { p.repetitionPenalty = 0; });
  invalid([](SamplingParams &p) { p.presencePenalty = 3; });
  invalid([](SamplingParams &p) { p.logprobs = 21; });
  invalid([](SamplingParams &p) { p.logitBias = {{100, 1.0f}}; });
  invalid([](SamplingParams &p) { p.logitBias = {{-1, 1.0f}}; });
  invalid([](SamplingParams &p) { p.logitBias = {{3, 101.0f}}; });
  invalid([](SamplingParams &p) { p.logitBias = {{3, NAN}}; });
  invalid([](SamplingParams &p) { p.minTokens = -1; });
  invalid([](SamplingParams &p) { p.allowedTokenIds = {2, 100}; });
  SamplingParams fine;
  EXPECT_NO_THROW(fine.validate(100));
}

} // namespace
} // namespace llmc::runtime
