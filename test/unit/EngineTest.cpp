//===- EngineTest.cpp - the engine over the toy step function -------------===//
//
// The toy step (ToyStep.c) continues a context with the sum of all its tokens
// modulo the vocabulary, read back through the block tables from the KV
// cache: a block table, a slot, a copy-on-write copy or a cached prefix that
// is wrong changes the tokens.
//
//===----------------------------------------------------------------------===//
#include "ByteVocabulary.h"
#include "TestArtifact.h"

#include "runtime/engine/Engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace llmc::runtime;
using llmc::test::TestArtifact;
using llmc::test::TestArtifactSpec;
using llmc::test::toyContinuation;

namespace {
constexpr int64_t kVocab = 64;

/// `count` prompts of 1 to `maxLength` random tokens.
std::vector<std::vector<int32_t>> randomPrompts(size_t count, uint32_t maxLength, uint32_t seed) {
  std::mt19937 random(seed);
  std::vector<std::vector<int32_t>> prompts(count);
  for (auto &prompt : prompts) {
    prompt.resize(1 + random() % maxLength);
    for (int32_t &token : prompt) token = int32_t(random() % kVocab);
  }
  return prompts;
}

/// Steps of up to 16 sequences and 64 tokens.
TestArtifactSpec sixteenSequences() {
  TestArtifactSpec spec;
  spec.maxNumSeqs = 16;
  spec.maxNumBatchedTokens = 64;
  return spec;
}

RequestOptions greedy(int64_t maxTokens) {
  RequestOptions options;
  options.maxTokens = maxTokens;
  options.sampling.temperature = 0;
  return options;
}

/// Drafts of up to `tokens` tokens, from suffixes of 1 to 3 tokens.
EngineConfig speculating(int64_t tokens) {
  EngineConfig config;
  config.speculative.numSpeculativeTokens = tokens;
  config.speculative.promptLookupMin = 1;
  config.speculative.promptLookupMax = 3;
  return config;
}

class EngineTest : public ::testing::Test {
protected:
  /// Block size 4; 16 tokens and 4 sequences per step unless `spec` says otherwise.
  std::unique_ptr<Model> open(int64_t numKvBlocks, const TestArtifactSpec &spec = {}) {
    artifact = std::make_unique<TestArtifact>(spec);
    ModelOptions options;
    options.numThreads = 2;
    options.numKvBlocks = numKvBlocks;
    return Model::open(artifact->dir(), options);
  }

  /// The toy as a pooling model: its manifest's step.output `output`, with
  /// `numLabels` labels for a classifier.
  std::unique_ptr<Model> openPooling(int64_t numKvBlocks, const char *output,
                                     int64_t numLabels = 0) {
    open(numKvBlocks);
    artifact->manifest["step"]["output"] = output;
    if (numLabels) artifact->manifest["model"]["num_labels"] = numLabels;
    artifact->writeManifest();
    ModelOptions options;
    options.numThreads = 2;
    options.numKvBlocks = numKvBlocks;
    return Model::open(artifact->dir(), options);
  }

  /// The toy's row of `width` values for `prompt`: the bias plus a peak at
  /// (the context's sum) % width.
  std::vector<float> toyRow(const std::vector<int32_t> &prompt, int64_t width) const {
    std::vector<float> row(artifact->bias().begin(), artifact->bias().begin() + width);
    int64_t sum = 0;
    for (int32_t token : prompt) sum += token;
    row[sum % width] += 1.0f;
    return row;
  }

  /// Every output of the engine's steps until its requests are done.
  static std::vector<StepOutput> stepToEnd(Engine &engine) {
    std::vector<StepOutput> outputs;
    while (engine.hasUnfinished())
      for (StepOutput &output : engine.step()) outputs.push_back(std::move(output));
    return outputs;
  }

  /// Each request's sample-0 tokens.
  static std::vector<std::vector<int32_t>> firstSamples(std::vector<Completion> completions) {
    std::vector<std::vector<int32_t>> tokens;
    for (Completion &completion : completions) tokens.push_back(std::move(completion[0]));
    return tokens;
  }

  std::unique_ptr<TestArtifact> artifact;
};

TEST_F(EngineTest, GeneratesWhatTheToyPredictsAndFreesEveryBlock) {
  auto model = open(64);
  Engine engine(*model, {});
  std::vector<std::vector<int32_t>> prompts = {{1, 2, 3}, {5}, {9, 9, 9, 9, 9}};
  auto outputs = firstSamples(runToCompletion(engine, prompts, greedy(7)));
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(outputs[i], toyContinuation(prompts[i], 7, kVocab)) << "prompt " << i;
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
  EXPECT_FALSE(engine.hasUnfinished());
  // One step prefills all three prompts, six more decode them.
  EXPECT_EQ(engine.stats().numSteps, 7);
  EXPECT_EQ(engine.stats().promptTokensComputed, 9);
  EXPECT_EQ(engine.stats().generatedTokens, 21);
}

TEST_F(EngineTest, EndsEachSampleWithOneFinishReason) {
  auto model = open(64);
  Engine engine(*model, {});
  std::vector<int32_t> full = toyContinuation({1, 2, 3}, 10, kVocab); // 6 12 24 48 32 ...
  RequestOptions stopping = greedy(10);
  stopping.stopTokenIds = {full[2]};
  engine.addRequest(0, {1, 2, 3}, stopping);
  engine.addRequest(1, {4}, greedy(2));
  std::vector<std::vector<int32_t>> tokens(2);
  std::vector<FinishReason> reasons(2, FinishReason::None);
  while (engine.hasUnfinished())
    for (const StepOutput &output : engine.step()) {
      EXPECT_EQ(reasons[output.request], FinishReason::None) << "an output after the end";
      tokens[output.request].push_back(output.token->token);
      reasons[output.request] = output.finishReason;
    }
  EXPECT_EQ(tokens[0], std::vector<int32_t>(full.begin(), full.begin() + 3));
  EXPECT_EQ(reasons[0], FinishReason::Stop);
  EXPECT_EQ(tokens[1], toyContinuation({4}, 2, kVocab));
  EXPECT_EQ(reasons[1], FinishReason::Length);
  EXPECT_STREQ(finishReasonName(FinishReason::Stop), "stop");
}

TEST_F(EngineTest, MinTokensHoldsTheStopTokensBackForEverySample) {
  auto model = open(64);
  Engine engine(*model, {});
  std::vector<int32_t> full = toyContinuation({1, 2, 3}, 10, kVocab); // 6 12 24 48 32 ...
  RequestOptions options = greedy(10);
  options.stopTokenIds = {full[0], full[2]};
  options.sampling.minTokens = 4;
  options.n = 2;
  auto outputs = runToCompletion(engine, {{1, 2, 3}}, options);
  for (const std::vector<int32_t> &tokens : outputs[0]) {
    // Neither stop token in the first four, then the first one drawn ends it.
    ASSERT_GT(tokens.size(), 4u);
    for (size_t i = 0; i < 4; ++i)
      EXPECT_TRUE(tokens[i] != full[0] && tokens[i] != full[2]) << i;
    EXPECT_TRUE(tokens.size() == 10 || tokens.back() == full[0] || tokens.back() == full[2]);
  }
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
}

TEST_F(EngineTest, ChunksALongPromptWhileOthersKeepDecoding) {
  auto model = open(64); // 16 tokens per step
  Engine engine(*model, {});
  engine.addRequest(0, {3, 1}, greedy(12));
  engine.step(); // prefills request 0
  std::vector<int32_t> longPrompt(40);
  for (size_t i = 0; i < longPrompt.size(); ++i) longPrompt[i] = int32_t(i % kVocab);
  engine.addRequest(1, longPrompt, greedy(3));
  // The 40-token prompt needs three steps of at most 15 tokens beside the
  // decode; request 0 gets a token in every one of them.
  std::vector<std::vector<int32_t>> tokens(2);
  for (int step = 0; step < 3; ++step) {
    std::vector<StepOutput> outputs = engine.step();
    ASSERT_FALSE(outputs.empty()) << "step " << step;
    EXPECT_EQ(outputs[0].request, 0u) << "step " << step;
    for (const StepOutput &output : outputs) tokens[output.request].push_back(output.token->token);
  }
  while (engine.hasUnfinished())
    for (const StepOutput &output : engine.step()) tokens[output.request].push_back(output.token->token);
  EXPECT_EQ(tokens[1], toyContinuation(longPrompt, 3, kVocab));
  EXPECT_EQ(engine.stats().promptTokensComputed, 42);
}

TEST_F(EngineTest, PreemptsWhenBlocksRunOutAndStillGeneratesTheSameTokens) {
  // 6 blocks of 4: each request needs 5 blocks at its end, so at most one
  // runs to completion at a time and the others are preempted, again and again.
  auto model = open(6);
  Engine engine(*model, {});
  std::vector<std::vector<int32_t>> prompts = {{1, 2, 3, 4, 5}, {6, 7}, {8, 9, 10}, {11}};
  auto outputs = firstSamples(runToCompletion(engine, prompts, greedy(14)));
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(outputs[i], toyContinuation(prompts[i], 14, kVocab)) << "prompt " << i;
  EXPECT_GE(engine.stats().numPreemptions, 3);
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
}

TEST_F(EngineTest, SixtyFourConcurrentRequestsEachGiveTheirSoloTokens) {
  auto model = open(96, sixteenSequences());
  std::vector<std::vector<int32_t>> prompts = randomPrompts(64, 40, 7);
  Engine engine(*model, {});
  auto together = firstSamples(runToCompletion(engine, prompts, greedy(9)));
  for (size_t i = 0; i < prompts.size(); ++i) {
    Engine solo(*model, {});
    EXPECT_EQ(firstSamples(runToCompletion(solo, {prompts[i]}, greedy(9)))[0], together[i])
        << "prompt " << i;
    EXPECT_EQ(together[i], toyContinuation(prompts[i], 9, kVocab)) << "prompt " << i;
  }
}

TEST_F(EngineTest, GreedyRequestsBesideSampledOnesKeepTheirTokens) {
  // Steps of greedy sequences alone ask the model for their tokens
  // (Model::stepGreedy); a sampled or logprobs request in the step makes it
  // bring back the logits, from which the greedy ones still take the argmax.
  auto model = open(128, sixteenSequences());
  std::vector<std::vector<int32_t>> prompts = randomPrompts(6, 20, 5);
  // The sampled request leaves after 4 tokens and the logprobs one after 8:
  // the last steps are greedy alone.
  RequestOptions sampled = greedy(4), withLogprobs = greedy(8);
  sampled.sampling.temperature = 8;
  sampled.sampling.seed = 99;
  withLogprobs.sampling.logprobs = 2;
  Engine engine(*model, {});
  for (size_t i = 0; i < prompts.size(); ++i)
    engine.addRequest(i, prompts[i], i == 1 ? sampled : i == 4 ? withLogprobs : greedy(12));
  std::vector<std::vector<int32_t>> tokens(prompts.size());
  std::vector<size_t> withTopLogprobs(prompts.size());
  while (engine.hasUnfinished())
    for (const StepOutput &output : engine.step()) {
      if (!output.token) continue;
      tokens[output.request].push_back(output.token->token);
      withTopLogprobs[output.request] += output.token->topLogprobs.size() == 2;
    }
  for (size_t i : {0, 2, 3, 5})
    EXPECT_EQ(tokens[i], toyContinuation(prompts[i], 12, kVocab)) << "prompt " << i;
  EXPECT_EQ(tokens[4], toyContinuation(prompts[4], 8, kVocab));
  EXPECT_EQ(tokens[1].size(), 4u);
  EXPECT_EQ(withTopLogprobs[4], 8u);
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
}

TEST_F(EngineTest, SeededSamplesDrawnTogetherAreThoseDrawnAlone) {
  // The samplers of a step's sequences draw on the model's two threads: each
  // sequence must still get the tokens of its own seeded generator.
  auto model = open(128, sixteenSequences());
  std::vector<std::vector<int32_t>> prompts = randomPrompts(12, 20, 11);
  RequestOptions options;
  options.maxTokens = 10;
  options.n = 2;
  options.sampling.temperature = 8; // flat enough that the seed decides
  options.sampling.seed = 1234;
  Engine engine(*model, {});
  auto together = runToCompletion(engine, prompts, options);
  bool varied = false;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Engine solo(*model, {});
    EXPECT_EQ(runToCompletion(solo, {prompts[i]}, options)[0], together[i]) << "prompt " << i;
    varied |= together[i][0] != toyContinuation(prompts[i], 10, kVocab);
  }
  EXPECT_TRUE(varied) << "every sample was the toy's greedy continuation";
}

TEST_F(EngineTest, ParallelSamplesShareThePromptAndCopyOnWrite) {
  auto model = open(32);
  std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6}; // a block and a half
  RequestOptions four = greedy(5);
  four.n = 4;
  four.sampling.temperature = 1.0f;
  four.sampling.seed = 100;

  Engine engine(*model, {});
  engine.addRequest(0, prompt, four);
  Completion samples(4);
  for (const StepOutput &output : engine.step()) // the prompt, once; then four samples
    samples[output.index].push_back(output.token->token);
  EXPECT_EQ(engine.stats().promptTokensComputed, 6);
  EXPECT_EQ(engine.blockManager().numHeld(), 2); // shared, not four copies
  int64_t peakHeld = 0;
  while (engine.hasUnfinished())
    for (const StepOutput &output : engine.step()) {
      samples[output.index].push_back(output.token->token);
      peakHeld = std::max(peakHeld, engine.blockManager().numHeld());
    }

  // The same as four requests with seeds 100..103, which hold more blocks
  // (without prefix caching, which would share their full prompt blocks too)
  // and compute the prompt four times.
  EngineConfig unshared;
  unshared.enablePrefixCaching = false;
  Engine separate(*model, unshared);
  for (int32_t i = 0; i < 4; ++i) {
    RequestOptions one = four;
    one.n = 1;
    one.sampling.seed = 100 + i;
    separate.addRequest(i, prompt, one);
  }
  int64_t separatePeak = 0;
  Completion expected(4);
  while (separate.hasUnfinished())
    for (const StepOutput &output : separate.step()) {
      expected[output.request].push_back(output.token->token);
      separatePeak = std::max(separatePeak, separate.blockManager().numHeld());
    }
  EXPECT_EQ(samples, expected);
  EXPECT_LT(peakHeld, separatePeak);
  EXPECT_EQ(separate.stats().promptTokensComputed, 4 * 6);
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
}

TEST_F(EngineTest, GreedyParallelSamplesAreTheToysContinuation) {
  auto model = open(32);
  RequestOptions four = greedy(6);
  four.n = 4;
  Engine engine(*model, {});
  auto completions = runToCompletion(engine, {{2, 4, 6, 8, 1}}, four);
  for (const std::vector<int32_t> &sample : completions[0])
    EXPECT_EQ(sample, toyContinuation({2, 4, 6, 8, 1}, 6, kVocab));
}

TEST_F(EngineTest, APromptWithACachedPrefixComputesOnlyTheRest) {
  TestArtifactSpec spec;
  spec.maxNumBatchedTokens = 64;
  auto model = open(64, spec);
  Engine engine(*model, {});
  std::vector<int32_t> shared(32);
  for (size_t i = 0; i < shared.size(); ++i) shared[i] = int32_t((i * 7) % kVocab);
  std::vector<int32_t> first = shared, second = shared;
  first.insert(first.end(), {1, 2, 3});
  second.insert(second.end(), {9, 9});
  runToCompletion(engine, {first}, greedy(4));
  int64_t before = engine.stats().promptTokensComputed;
  engine.addRequest(1, second, greedy(4));
  std::vector<int32_t> tokens;
  while (engine.hasUnfinished())
    for (const StepOutput &output : engine.step()) tokens.push_back(output.token->token);
  EXPECT_EQ(engine.stats().promptTokensComputed - before, 2);
  EXPECT_EQ(engine.stats().cachedPromptTokens, 32);
  EXPECT_EQ(tokens, toyContinuation(second, 4, kVocab));

  EngineConfig uncached;
  uncached.enablePrefixCaching = false;
  Engine plain(*model, uncached);
  runToCompletion(plain, {first, second}, greedy(4));
  EXPECT_EQ(plain.stats().promptTokensComputed, int64_t(first.size() + second.size()));
}

TEST_F(EngineTest, SpeculationKeepsTheGreedyTokensInFewerSteps) {
  // The toy's continuations end in runs of 0 that drafts predict, after
  // tokens that drafts miss: both acceptance and rollback run.
  // Blocks enough to keep every sequence's blocks cached after it ends.
  auto model = open(512, sixteenSequences());
  std::vector<std::vector<int32_t>> prompts = randomPrompts(24, 30, 3);
  Engine plain(*model, {});
  runToCompletion(plain, prompts, greedy(20));
  Engine engine(*model, speculating(4));
  auto outputs = firstSamples(runToCompletion(engine, prompts, greedy(20)));
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(outputs[i], toyContinuation(prompts[i], 20, kVocab)) << "prompt " << i;
  EngineStats stats = engine.stats();
  EXPECT_GT(stats.acceptedDraftTokens, 0);
  EXPECT_LT(stats.acceptedDraftTokens, stats.draftTokens) << "no draft was ever rejected";
  EXPECT_LT(stats.numSteps, plain.stats().numSteps);
  EXPECT_EQ(stats.generatedTokens, 24 * 20);
  EXPECT_EQ(engine.blockManager().numHeld(), 0);

  // The blocks that accepted drafts filled are in the prefix cache under
  // their tokens: prompts that run on from the outputs continue them exactly.
  std::vector<std::vector<int32_t>> longer;
  for (size_t i = 0; i < prompts.size(); ++i) {
    longer.push_back(prompts[i]);
    longer.back().insert(longer.back().end(), outputs[i].begin(), outputs[i].end());
  }
  int64_t cachedBefore = engine.stats().cachedPromptTokens;
  auto more = firstSamples(runToCompletion(engine, longer, greedy(6)));
  for (size_t i = 0; i < longer.size(); ++i)
    EXPECT_EQ(more[i], toyContinuation(longer[i], 6, kVocab)) << "prompt " << i;
  EXPECT_GT(engine.stats().cachedPromptTokens, cachedBefore);
}

TEST_F(EngineTest, SpeculationStopsAtAStopTokenOrMaxTokensInsideADraft) {
  auto model = open(64, sixteenSequences());
  Engine engine(*model, speculating(6));
  // The toy continues this prompt with 16 32 0 0 ...: after the 16, the
  // draft is the 32 0 32 16 ... that followed it in the prompt, and the 0 ends it.
  std::vector<int32_t> prompt = {16, 32, 0, 32};
  std::vector<int32_t> full = toyContinuation(prompt, 16, kVocab);
  ASSERT_EQ(std::vector<int32_t>(full.begin(), full.begin() + 3),
            (std::vector<int32_t>{16, 32, 0}));
  RequestOptions stopping = greedy(16);
  stopping.stopTokenIds = {0};
  std::vector<int32_t> stopped;
  engine.addRequest(0, prompt, stopping);
  FinishReason reason = FinishReason::None;
  while (engine.hasUnfinished())
    for (const StepOutput &output : engine.step()) {
      EXPECT_EQ(reason, FinishReason::None) << "an output after the end";
      stopped.push_back(output.token->token);
      reason = output.finishReason;
    }
  EXPECT_EQ(stopped, std::vector<int32_t>(full.begin(), full.begin() + 3));
  EXPECT_EQ(reason, FinishReason::Stop);
  EXPECT_EQ(engine.stats().acceptedDraftTokens, 2);
  EXPECT_EQ(engine.stats().numSteps, 2);

  // Zeros continue zeros: 6-token drafts, accepted, cut at max_tokens.
  std::vector<int32_t> zeros = {0, 0, 0};
  auto exact = firstSamples(runToCompletion(engine, {zeros}, greedy(11)));
  EXPECT_EQ(exact[0], std::vector<int32_t>(11, 0));
  EXPECT_EQ(engine.stats().numSteps, 2 + 3); // the prefill, then 1 + 7 + 3 tokens
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
}

TEST_F(EngineTest, SpeculationUnderPreemptionStillGeneratesTheSameTokens) {
  auto model = open(6);
  Engine engine(*model, speculating(3));
  std::vector<std::vector<int32_t>> prompts = {{1, 2, 3, 4, 5}, {6, 7}, {8, 9, 10}, {11}};
  auto outputs = firstSamples(runToCompletion(engine, prompts, greedy(14)));
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(outputs[i], toyContinuation(prompts[i], 14, kVocab)) << "prompt " << i;
  EXPECT_GE(engine.stats().numPreemptions, 1);
  EXPECT_GT(engine.stats().acceptedDraftTokens, 0);
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
}

TEST_F(EngineTest, SpeculationWithSeededSamplingIsReproducible) {
  // 8 sequences of 16: the other 8 are there for draft tokens.
  auto model = open(128, sixteenSequences());
  std::vector<std::vector<int32_t>> prompts = randomPrompts(4, 20, 5);
  RequestOptions options;
  options.maxTokens = 12;
  options.n = 2;
  options.sampling.temperature = 0.5f;
  options.sampling.seed = 99;
  options.sampling.logprobs = 2;
  Engine first(*model, speculating(4));
  auto tokens = runToCompletion(first, prompts, options);
  Engine second(*model, speculating(4));
  EXPECT_EQ(runToCompletion(second, prompts, options), tokens);
  for (const Completion &completion : tokens)
    for (const std::vector<int32_t> &sample : completion) EXPECT_EQ(sample.size(), 12u);
  EXPECT_GT(first.stats().draftTokens, 0);
  EXPECT_EQ(first.blockManager().numHeld(), 0);
}

/// What the toy's logits row at the end of `context` (the bias, plus 1 at
/// the context's sum) says of `token`, with its `topCount` most likely tokens.
SampledToken toyLogprobs(const std::vector<int32_t> &context, int32_t token,
                         const std::vector<float> &bias, int32_t topCount) {
  std::vector<double> row(bias.begin(), bias.end());
  int64_t sum = 0;
  for (int32_t t : context) sum += t;
  row[sum % kVocab] += 1;
  double total = 0;
  for (double logit : row) total += std::exp(logit);
  SampledToken expected;
  expected.token = token;
  expected.logprob = float(row[token] - std::log(total));
  expected.rank =
      1 + std::count_if(row.begin(), row.end(), [&](double v) { return v > row[token]; });
  std::vector<int32_t> order(kVocab);
  for (int32_t i = 0; i < kVocab; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return row[a] > row[b]; });
  for (int32_t i = 0; i < topCount; ++i)
    expected.topLogprobs.push_back({order[i], float(row[order[i]] - std::log(total))});
  return expected;
}

/// Checks each prompt token's logprobs (from token 1 on) against the toy's rows.
void expectToyPromptLogprobs(const std::vector<int32_t> &prompt,
                             const std::vector<SampledToken> &reported,
                             const std::vector<float> &bias, int32_t topCount) {
  ASSERT_EQ(reported.size(), prompt.size() - 1);
  for (size_t i = 0; i < reported.size(); ++i) {
    std::vector<int32_t> context(prompt.begin(), prompt.begin() + i + 1);
    SampledToken expected = toyLogprobs(context, prompt[i + 1], bias, topCount);
    EXPECT_EQ(reported[i].token, expected.token) << i;
    EXPECT_NEAR(reported[i].logprob, expected.logprob, 1e-5) << i;
    EXPECT_EQ(reported[i].rank, expected.rank) << i;
    ASSERT_EQ(reported[i].topLogprobs.size(), expected.topLogprobs.size()) << i;
    for (size_t k = 0; k < expected.topLogprobs.size(); ++k) {
      EXPECT_EQ(reported[i].topLogprobs[k].token, expected.topLogprobs[k].token) << i;
      EXPECT_NEAR(reported[i].topLogprobs[k].logprob, expected.topLogprobs[k].logprob, 1e-5);
    }
  }
}

TEST_F(EngineTest, PromptLogprobsAreTheRowsOfEveryPromptTokenBeforeItsFirstToken) {
  auto model = open(64); // 4 rows per step
  Engine engine(*model, {});
  engine.addRequest(0, {3, 1}, greedy(12));
  std::vector<std::vector<int32_t>> tokens(2);
  tokens[0].push_back(engine.step().at(0).token->token);
  std::vector<int32_t> prompt(20);
  for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = int32_t((i * 5 + 2) % kVocab);
  RequestOptions options = greedy(4);
  options.promptLogprobs = 2;
  engine.addRequest(1, prompt, options);
  std::vector<SampledToken> reported;
  int64_t steps = 0;
  while (engine.hasUnfinished()) {
    ++steps;
    for (const StepOutput &output : engine.step()) {
      if (!output.promptLogprobs.empty()) {
        EXPECT_TRUE(tokens[1].empty()) << "prompt logprobs after the first token";
        EXPECT_FALSE(output.token);
        reported.insert(reported.end(), output.promptLogprobs.begin(),
                        output.promptLogprobs.end());
      }
      if (output.token) tokens[output.request].push_back(output.token->token);
    }
  }
  expectToyPromptLogprobs(prompt, reported, artifact->bias(), 2);
  EXPECT_EQ(tokens[0], toyContinuation({3, 1}, 12, kVocab));
  EXPECT_EQ(tokens[1], toyContinuation(prompt, 4, kVocab));
  // Request 0 takes one of the 4 rows: the 20 prompt rows need 7 steps.
  EXPECT_EQ(steps, 11);
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
}

TEST_F(EngineTest, PromptLogprobsComeOnceEachUnderPreemption) {
  auto model = open(6); // 6 blocks of 4: preemptions, again and again
  Engine engine(*model, {});
  std::vector<std::vector<int32_t>> prompts = {{1, 2, 3, 4, 5, 6, 7}, {6, 7, 8}, {8, 9, 10, 11}};
  RequestOptions options = greedy(14);
  options.promptLogprobs = 0;
  std::vector<std::vector<SampledToken>> reported(prompts.size());
  auto outputs = firstSamples(runToCompletion(engine, prompts, options, [&](const StepOutput &o) {
    reported[o.request].insert(reported[o.request].end(), o.promptLogprobs.begin(),
                               o.promptLogprobs.end());
  }));
  for (size_t i = 0; i < prompts.size(); ++i) {
    expectToyPromptLogprobs(prompts[i], reported[i], artifact->bias(), 0);
    EXPECT_EQ(outputs[i], toyContinuation(prompts[i], 14, kVocab)) << "prompt " << i;
  }
  EXPECT_GE(engine.stats().numPreemptions, 1);
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
}

TEST_F(EngineTest, UnderThePriorityPolicyTheLowestValueFinishesFirst) {
  auto model = open(64);
  EngineConfig config;
  config.maxNumSeqs = 1; // one request at a time: the order shows
  config.schedulingPolicy = SchedulingPolicy::Priority;
  Engine engine(*model, config);
  std::vector<std::vector<int32_t>> prompts = {{1, 2}, {3}, {4, 5, 6}};
  std::vector<int64_t> priorities = {2, -1, 0};
  for (size_t i = 0; i < prompts.size(); ++i) {
    RequestOptions options = greedy(3);
    options.priority = priorities[i];
    engine.addRequest(i, prompts[i], options);
  }
  std::vector<RequestId> finished;
  std::vector<std::vector<int32_t>> tokens(prompts.size());
  while (engine.hasUnfinished())
    for (const StepOutput &output : engine.step()) {
      tokens[output.request].push_back(output.token->token);
      if (output.finishReason != FinishReason::None) finished.push_back(output.request);
    }
  EXPECT_EQ(finished, (std::vector<RequestId>{1, 2, 0}));
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(tokens[i], toyContinuation(prompts[i], 3, kVocab)) << i;

  // First come, first served takes no priority.
  Engine fcfs(*model, {});
  RequestOptions prioritised = greedy(1);
  prioritised.priority = 1;
  EXPECT_THROW(fcfs.addRequest(0, {1}, prioritised), RequestError);
}

TEST_F(EngineTest, AbortFreesTheBlocksAtOnce) {
  auto model = open(16);
  Engine engine(*model, {});
  RequestOptions two = greedy(50);
  two.n = 2;
  engine.addRequest(3, {1, 2, 3, 4, 5, 6, 7}, two);
  engine.step();
  engine.step();
  EXPECT_GT(engine.blockManager().numHeld(), 0);
  std::vector<StepOutput> aborted = engine.abort(3);
  ASSERT_EQ(aborted.size(), 2u);
  for (const StepOutput &output : aborted) {
    EXPECT_EQ(output.finishReason, FinishReason::Abort);
    EXPECT_FALSE(output.token.has_value());
  }
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
  EXPECT_FALSE(engine.hasUnfinished());
  EXPECT_TRUE(engine.abort(3).empty());
  EXPECT_TRUE(engine.step().empty());
}

TEST_F(EngineTest, MaxModelLenIsCappedByTheKvCache) {
  auto model = open(4); // 16 positions
  EngineConfig config;
  config.maxModelLen = 12;
  EXPECT_EQ(Engine(*model, config).maxModelLen(), 12);
  config.maxModelLen = 17;
  try {
    Engine engine(*model, config);
    ADD_FAILURE() << "accepted max_model_len 17";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("max_model_len 17 is more than the 16 positions the KV cache holds"),
              std::string::npos)
        << error.what();
  }
}

TEST_F(EngineTest, RefusesRequestsThatCouldNeverRun) {
  auto model = open(4); // 16 positions: max_model_len 16
  Engine engine(*model, {});
  EXPECT_EQ(engine.maxModelLen(), 16);
  auto refused = [&](std::vector<int32_t> prompt, RequestOptions options, const char *message) {
    try {
      engine.addRequest(1, std::move(prompt), options);
      ADD_FAILURE() << "accepted; expected: " << message;
    } catch (const RequestError &error) {
      EXPECT_NE(std::string(error.what()).find(message), std::string::npos) << error.what();
    }
  };
  refused({}, greedy(1), "the prompt is empty");
  refused({1, 64}, greedy(1), "prompt token 1 is 64, outside the vocabulary (0 to 63)");
  refused(std::vector<int32_t>(16, 1), greedy(1),
          "the prompt has 16 tokens; max_model_len is 16, which must leave room");
  refused({1}, greedy(0), "max_tokens must be at least 1");
  RequestOptions many = greedy(1);
  many.n = 5;
  refused({1}, many, "n must be from 1 to max_num_seqs (4)");
  RequestOptions hot = greedy(1);
  hot.sampling.topP = 0;
  refused({1}, hot, "top_p must be in (0, 1]");
  RequestOptions waiting = greedy(2);
  waiting.sampling.minTokens = 3;
  refused({1}, waiting, "min_tokens (3) must not be more than max_tokens (2)");
  RequestOptions biased = greedy(1);
  biased.sampling.logitBias = {{64, 1.0f}};
  refused({1}, biased, "logit_bias: token 64 is outside the vocabulary");
  RequestOptions prompted = greedy(1);
  prompted.promptLogprobs = 21;
  refused({1}, prompted, "prompt_logprobs must be in [0, 20], got 21");
  EXPECT_FALSE(engine.hasUnfinished());

  engine.addRequest(1, {1}, greedy(1));
  refused({2}, greedy(1), "request 1 already exists");
}

TEST_F(EngineTest, StopsAtMaxModelLen) {
  auto model = open(4); // 16 positions
  Engine engine(*model, {});
  engine.addRequest(0, std::vector<int32_t>(10, 1), greedy(100));
  std::vector<StepOutput> last;
  int64_t generated = 0;
  while (engine.hasUnfinished())
    for (const StepOutput &output : engine.step()) {
      ++generated;
      last = {output};
    }
  EXPECT_EQ(generated, 6);
  EXPECT_EQ(last[0].finishReason, FinishReason::Length);
}

TEST_F(EngineTest, RefusesLimitsBeyondTheArtifacts) {
  auto model = open(8);
  EngineConfig config;
  config.maxNumSeqs = 5;
  EXPECT_THROW(Engine(*model, config), Error);
  config = {};
  config.maxNumBatchedTokens = 17;
  EXPECT_THROW(Engine(*model, config), Error);
  config = {};
  config.maxModelLen = 33; // the cache holds 32 positions
  EXPECT_THROW(Engine(*model, config), Error);
  config.maxModelLen = 20;
  EXPECT_EQ(Engine(*model, config).maxModelLen(), 20);
}

TEST_F(EngineTest, SizesTheKvCacheFromABudget) {
  artifact = std::make_unique<TestArtifact>();
  ModelOptions options;
  options.numThreads = 1;
  // A block: 2 layers x 2 (K, V) x 2 heads x 4 positions x 4 floats = 512 bytes.
  options.kvCacheBytes = 512 * 10 + 100;
  auto model = Model::open(artifact->dir(), options);
  EXPECT_EQ(model->kvPool().numBlocks(), 10);
  EXPECT_NE(model->kvCacheSummary().find("10 blocks of 4 tokens"), std::string::npos)
      << model->kvCacheSummary();
  options.kvCacheBytes = 100;
  EXPECT_THROW(Model::open(artifact->dir(), options), Error);
  options.kvCacheBytes = 0;
  options.memoryFraction = 0.001;
  EXPECT_GT(Model::open(artifact->dir(), options)->kvPool().numBlocks(), 0);
  options.memoryFraction = 1.5;
  EXPECT_THROW(Model::open(artifact->dir(), options), Error);
}
} // namespace

/// Requests whose output must be one of a grammar's strings, over the byte
/// vocabulary (ids 0..255 are bytes, 256 the end of sequence).
class EngineGrammarTest : public EngineTest {
protected:
  static constexpr int64_t kByteVocab = 260;

  std::unique_ptr<Model> openByteModel(int64_t numKvBlocks) {
    TestArtifactSpec spec;
    spec.vocabSize = kByteVocab;
    return open(numKvBlocks, spec);
  }

  RequestOptions constrained(const std::vector<std::string> &choices, float temperature,
                             int32_t n = 1) {
    const auto &vocabulary = llmc::test::ByteVocabulary::get();
    static structured::GrammarCompiler compiler(*vocabulary.tokenizer, vocabulary.json,
                                                kByteVocab, {llmc::test::kByteEos});
    RequestOptions options;
    options.maxTokens = 32;
    options.n = n;
    options.sampling.temperature = temperature;
    options.stopTokenIds = {llmc::test::kByteEos};
    options.grammar = compiler.compile({structured::GrammarSpec::Kind::Choice, {}, choices, "c"});
    return options;
  }

  static std::string text(const std::vector<int32_t> &tokens) {
    std::string bytes;
    for (int32_t token : tokens)
      if (token < 256) bytes.push_back(static_cast<char>(token));
    return bytes;
  }
};

TEST_F(EngineGrammarTest, EverySampleIsAChoiceEndedByTheStopToken) {
  auto model = openByteModel(64);
  Engine engine(*model, {});
  std::vector<std::string> choices = {"alpha", "beta", "be", "gamma"};
  // Greedy, sampled, and n = 3 samples forked at the first token.
  std::vector<std::vector<int32_t>> prompts = {{1, 2, 3}, {7}};
  for (float temperature : {0.0f, 1.0f}) {
    for (const Completion &completion :
         runToCompletion(engine, prompts, constrained(choices, temperature, 3))) {
      ASSERT_EQ(completion.size(), 3u);
      for (const std::vector<int32_t> &tokens : completion) {
        EXPECT_EQ(tokens.back(), llmc::test::kByteEos);
        EXPECT_NE(std::find(choices.begin(), choices.end(), text(tokens)), choices.end())
            << text(tokens);
      }
    }
  }
  EngineStats stats = engine.stats();
  EXPECT_GT(stats.grammarMasks, 0);
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
}

TEST_F(EngineGrammarTest, AbortAndShutdownWhileMasksAreComputed) {
  auto model = openByteModel(64);
  auto engine = std::make_unique<Engine>(*model, EngineConfig{});
  engine->addRequest(1, {1, 2}, constrained({"abcdefgh"}, 1.0f));
  engine->addRequest(2, {3}, constrained({"abcdefgh"}, 1.0f));
  // Each step leaves the next masks computing on another thread.
  engine->step();
  EXPECT_EQ(engine->abort(1).size(), 1u);
  engine->step();
  engine.reset();
}

TEST_F(EngineGrammarTest, APreemptedConstrainedSequenceKeepsItsTokens) {
  std::vector<std::string> choices = {"abcdefghijklmnop", "abcdefghijklmnoq"};
  auto solo = [&](int64_t blocks) {
    auto model = openByteModel(blocks);
    Engine engine(*model, {});
    std::vector<std::vector<int32_t>> prompts = {{1, 2, 3, 4, 5}, {6, 7, 8}, {9}};
    auto completions = runToCompletion(engine, prompts, constrained(choices, 1.0f));
    return std::make_pair(firstSamples(completions), engine.stats().numPreemptions);
  };
  auto [roomy, noPreemptions] = solo(64);
  auto [tight, preemptions] = solo(9);
  EXPECT_EQ(noPreemptions, 0);
  EXPECT_GT(preemptions, 0);
  EXPECT_EQ(roomy, tight);
  for (const auto &tokens : tight)
    EXPECT_NE(std::find(choices.begin(), choices.end(), text(tokens)), choices.end());
}

/// The toy step as an embedding model: its rows are hidden_size (8) wide,
/// each the bias plus a peak at (the context's sum) % 8.
class EmbeddingEngineTest : public EngineTest {
protected:
  std::unique_ptr<Model> openEmbedding(int64_t numKvBlocks) {
    return openPooling(numKvBlocks, "hidden_states");
  }

  /// What the toy returns for `prompt`.
  std::vector<float> toyRow(const std::vector<int32_t> &prompt) const {
    return EngineTest::toyRow(prompt, 8);
  }

  static RequestOptions pooling(bool normalize) {
    RequestOptions options;
    options.pooling = PoolingParams{normalize};
    return options;
  }

  /// The toy as a Matryoshka embedding model of these widths (null: any).
  std::unique_ptr<Model> openMatryoshka(const nlohmann::json &widths) {
    artifact = std::make_unique<TestArtifact>();
    artifact->manifest["step"]["output"] = "hidden_states";
    artifact->manifest["model"]["is_matryoshka"] = true;
    if (!widths.is_null()) artifact->manifest["model"]["matryoshka_dimensions"] = widths;
    artifact->writeManifest();
    ModelOptions options;
    options.numThreads = 2;
    options.numKvBlocks = 8;
    return Model::open(artifact->dir(), options);
  }
};

TEST_F(EmbeddingEngineTest, EmbedsEachPromptOnceAndFreesItsBlocks) {
  auto model = openEmbedding(8);
  ASSERT_TRUE(model->outputsHiddenStates());
  EXPECT_EQ(model->outputSize(), 8);
  Engine engine(*model, {});
  // Longer than a step's 16 tokens: computed in chunks.
  std::vector<std::vector<int32_t>> prompts = {{1, 2, 3}, std::vector<int32_t>(23, 5), {7}};
  for (size_t i = 0; i < prompts.size(); ++i)
    engine.addRequest(i, prompts[i], pooling(/*normalize=*/i != 0));
  std::vector<StepOutput> outputs = stepToEnd(engine);
  ASSERT_EQ(outputs.size(), prompts.size());
  for (const StepOutput &output : outputs) {
    EXPECT_EQ(output.finishReason, FinishReason::Stop);
    EXPECT_FALSE(output.token);
    std::vector<float> expected = toyRow(prompts[output.request]);
    if (output.request != 0) {
      double norm = 0;
      for (float value : expected) norm += double(value) * value;
      for (float &value : expected) value = float(value / std::sqrt(norm));
    }
    ASSERT_EQ(output.pooled.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(output.pooled[i], expected[i], 1e-6) << "request " << output.request;
  }
  EXPECT_EQ(engine.stats().generatedTokens, 0);
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
}

TEST_F(EmbeddingEngineTest, TakesAPromptOfMaxModelLenTokens) {
  auto model = openEmbedding(8);
  EngineConfig config;
  config.maxModelLen = 12;
  Engine engine(*model, config);
  engine.addRequest(0, std::vector<int32_t>(12, 1), pooling(false));
  std::vector<StepOutput> outputs = stepToEnd(engine);
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].pooled, toyRow(std::vector<int32_t>(12, 1)));
  EXPECT_THROW(engine.addRequest(1, std::vector<int32_t>(13, 1), pooling(false)), RequestError);
}

TEST_F(EmbeddingEngineTest, MatryoshkaDimensionsCutTheEmbeddingBeforeItIsNormalised) {
  auto model = openMatryoshka({3, 5});
  Engine engine(*model, {});
  RequestOptions cut = pooling(true);
  cut.pooling->dimensions = 3;
  std::vector<int32_t> prompt = {1, 2, 3};
  engine.addRequest(0, prompt, cut);
  std::vector<StepOutput> outputs = stepToEnd(engine);
  ASSERT_EQ(outputs.size(), 1u);
  std::vector<float> expected = toyRow(prompt);
  expected.resize(3);
  double norm = 0;
  for (float value : expected) norm += double(value) * value;
  ASSERT_EQ(outputs[0].pooled.size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(outputs[0].pooled[i], expected[i] / std::sqrt(norm), 1e-6);

  RequestId nextId = 1;
  auto refusal = [&](Engine &target, int64_t dimensions) {
    RequestOptions options = pooling(true);
    options.pooling->dimensions = dimensions;
    try {
      target.addRequest(nextId++, prompt, options);
    } catch (const RequestError &error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal(engine, 4).find("supports Matryoshka dimensions 3, 5 only, not 4"),
            std::string::npos);
  // Without matryoshka_dimensions any width up to hidden_size.
  auto anyWidth = openMatryoshka(nlohmann::json());
  Engine anyEngine(*anyWidth, {});
  EXPECT_EQ(refusal(anyEngine, 8), "");
  EXPECT_NE(refusal(anyEngine, 9).find("from 1 to the embedding's 8 features"), std::string::npos);
  EXPECT_NE(refusal(anyEngine, 0).find("from 1 to"), std::string::npos);
  // A model not trained for it.
  auto plain = openEmbedding(8);
  Engine plainEngine(*plain, {});
  EXPECT_NE(refusal(plainEngine, 4).find("does not support Matryoshka representation"),
            std::string::npos);
  stepToEnd(anyEngine);
  EXPECT_EQ(anyEngine.blockManager().numHeld(), 0);
}

TEST_F(EmbeddingEngineTest, RefusesWhatAnEmbeddingModelCannotDo) {
  auto model = openEmbedding(8);
  Engine engine(*model, {});
  auto refusal = [&](const std::vector<int32_t> &prompt, const RequestOptions &options) {
    try {
      engine.addRequest(0, prompt, options);
    } catch (const RequestError &error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal({1, 2}, greedy(4)).find("is an embedding model"), std::string::npos);
  RequestOptions twoSamples = pooling(true);
  twoSamples.n = 2;
  EXPECT_NE(refusal({1, 2}, twoSamples).find("takes no n, prompt_logprobs or grammar"),
            std::string::npos);
  EXPECT_FALSE(engine.hasUnfinished());
  EXPECT_THROW(Engine(*model, speculating(2)), Error);
  // A generative model has nothing to pool.
  auto generative = open(8);
  Engine generating(*generative, {});
  try {
    generating.addRequest(0, {1, 2}, pooling(true));
    ADD_FAILURE() << "a pooling request to a generative model was taken";
  } catch (const RequestError &error) {
    EXPECT_NE(std::string(error.what()).find("has nothing to pool"), std::string::npos);
  }
}

/// The toy step as a sequence classifier of 3 labels: its rows are the
/// bias's first 3 values plus a peak at (the context's sum) % 3.
class ClassifierEngineTest : public EngineTest {
protected:
  std::unique_ptr<Model> openClassifier(int64_t numKvBlocks) {
    return openPooling(numKvBlocks, "class_logits", 3);
  }

  std::vector<float> toyLogits(const std::vector<int32_t> &prompt) const {
    return toyRow(prompt, 3);
  }

  static RequestOptions classify(bool activation) {
    RequestOptions options;
    options.pooling = PoolingParams{/*normalize=*/true, activation};
    return options;
  }
};

TEST_F(ClassifierEngineTest, ClassifiesEachPromptAsSoftmaxOfItsLastTokensLogits) {
  auto model = openClassifier(8);
  ASSERT_TRUE(model->outputsClassLogits());
  ASSERT_TRUE(model->pools());
  EXPECT_EQ(model->outputSize(), 3);
  Engine engine(*model, {});
  // Longer than a step's 16 tokens: computed in chunks.
  std::vector<std::vector<int32_t>> prompts = {{1, 2, 3}, std::vector<int32_t>(23, 5), {7}};
  for (size_t i = 0; i < prompts.size(); ++i)
    engine.addRequest(i, prompts[i], classify(/*activation=*/i != 0));
  std::vector<StepOutput> outputs = stepToEnd(engine);
  ASSERT_EQ(outputs.size(), prompts.size());
  for (const StepOutput &output : outputs) {
    EXPECT_EQ(output.finishReason, FinishReason::Stop);
    std::vector<float> expected = toyLogits(prompts[output.request]);
    if (output.request != 0) {
      double sum = 0;
      for (float value : expected) sum += std::exp(double(value));
      for (float &value : expected) value = float(std::exp(double(value)) / sum);
    }
    ASSERT_EQ(output.pooled.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(output.pooled[i], expected[i], 1e-6) << "request " << output.request;
  }
  EXPECT_EQ(engine.stats().generatedTokens, 0);
  EXPECT_EQ(engine.blockManager().numHeld(), 0);
}

TEST_F(ClassifierEngineTest, RefusesGeneration) {
  auto model = openClassifier(8);
  Engine engine(*model, {});
  try {
    engine.addRequest(0, {1, 2}, greedy(4));
    ADD_FAILURE() << "a generation request to a classifier was taken";
  } catch (const RequestError &error) {
    EXPECT_NE(std::string(error.what()).find("is a sequence classifier"), std::string::npos);
  }
  EXPECT_FALSE(engine.hasUnfinished());
  EXPECT_THROW(Engine(*model, speculating(2)), Error);
}
