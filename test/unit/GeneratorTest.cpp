//===- GeneratorTest.cpp - the greedy loop over the toy step function -----===//
#include "TestArtifact.h"

#include "runtime/Error.h"
#include "runtime/Generator.h"

#include <gtest/gtest.h>

using namespace llmc::runtime;
using llmc::test::TestArtifact;
using llmc::test::toyContinuation;

namespace {
class GeneratorTest : public ::testing::Test {
protected:
  std::unique_ptr<Model> open(int64_t numKvBlocks) {
    return Model::open(artifact.dir(), {2, numKvBlocks});
  }
  TestArtifact artifact; // vocab 64, block size 4, 16 tokens and 4 sequences per step
};

TEST_F(GeneratorTest, ArgmaxTakesTheLowestIdOnTies) {
  std::vector<float> values = {0.5f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(argmax(values.data(), 4), 1);
  EXPECT_EQ(argmax(values.data(), 1), 0);
}

TEST_F(GeneratorTest, GeneratesWhatTheToyPredicts) {
  auto model = open(64);
  Generator generator(*model);
  GenerateOptions options;
  options.maxTokens = 7;
  std::vector<std::vector<int32_t>> prompts = {{1, 2, 3}, {5}, {9, 9, 9, 9, 9}};
  auto outputs = generator.generate(prompts, options);
  ASSERT_EQ(outputs.size(), 3u);
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(outputs[i], toyContinuation(prompts[i], 7, 64)) << "prompt " << i;
  EXPECT_EQ(model->kvPool().numFree(), 64);
  // One prefill step for all three prompts, then six decode steps.
  EXPECT_EQ(generator.stats().numSteps, 7);
  EXPECT_EQ(generator.stats().prefillTokens, 9);
  EXPECT_EQ(generator.stats().decodeTokens, 18);
}

TEST_F(GeneratorTest, SplitsPrefillAndDecodeAtTheStepLimits) {
  auto model = open(64);
  Generator generator(*model);
  GenerateOptions options;
  options.maxTokens = 5;
  // 38 prompt tokens over 16-token steps (one prompt longer than a step), and
  // 6 sequences over 4-sequence steps.
  std::vector<std::vector<int32_t>> prompts = {
      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},
      {3}, {4, 5}, {6, 7, 8}, {60, 61, 62, 63}, {2, 2, 2, 2, 2, 2, 2, 2}};
  auto outputs = generator.generate(prompts, options);
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(outputs[i], toyContinuation(prompts[i], 5, 64)) << "prompt " << i;
  EXPECT_EQ(model->kvPool().numFree(), 64);
  EXPECT_EQ(generator.stats().prefillTokens, 38);
  EXPECT_EQ(generator.stats().decodeTokens, 6 * 4);
}

TEST_F(GeneratorTest, OutputDoesNotDependOnTheBatch) {
  auto model = open(64);
  Generator generator(*model);
  GenerateOptions options;
  options.maxTokens = 6;
  std::vector<std::vector<int32_t>> prompts = {{7, 1}, {2, 4, 6, 8, 10}, {33}};
  auto together = generator.generate(prompts, options);
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(generator.generate({prompts[i]}, options)[0], together[i]);
}

TEST_F(GeneratorTest, StopsAtAStopTokenAndKeepsIt) {
  auto model = open(16);
  Generator generator(*model);
  GenerateOptions options;
  options.maxTokens = 10;
  std::vector<int32_t> full = toyContinuation({1, 2, 3}, 10, 64); // 6 12 24 48 32 ...
  options.stopTokenIds = {full[2]};
  auto outputs = generator.generate({{1, 2, 3}}, options);
  EXPECT_EQ(outputs[0], std::vector<int32_t>(full.begin(), full.begin() + 3));
}

TEST_F(GeneratorTest, ReportsEachSampledLogitsRow) {
  auto model = open(16);
  Generator generator(*model);
  GenerateOptions options;
  options.maxTokens = 3;
  std::vector<SampledLogits> seen;
  std::vector<int32_t> peaks;
  options.onLogits = [&](const SampledLogits &row) {
    seen.push_back(row);
    peaks.push_back(argmax(row.logits, 64));
  };
  auto outputs = generator.generate({{1, 2, 3}, {4}}, options);
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_EQ(seen[0].step, 0);
  EXPECT_EQ(seen[0].prompt, 0u);
  EXPECT_EQ(seen[0].position, 2);
  EXPECT_EQ(seen[1].prompt, 1u);
  EXPECT_EQ(seen[1].position, 0);
  EXPECT_EQ(seen[5].step, 2);
  EXPECT_EQ(seen[5].position, 2);
  std::vector<int32_t> expectedPeaks = {outputs[0][0], outputs[1][0], outputs[0][1],
                                        outputs[1][1], outputs[0][2], outputs[1][2]};
  EXPECT_EQ(peaks, expectedPeaks);
}

TEST_F(GeneratorTest, ZeroMaxTokensRunsNoStep) {
  auto model = open(4);
  Generator generator(*model);
  GenerateOptions options;
  options.maxTokens = 0;
  auto outputs = generator.generate({{1, 2}}, options);
  EXPECT_TRUE(outputs[0].empty());
  EXPECT_EQ(generator.stats().numSteps, 0);
}

TEST_F(GeneratorTest, FailsClearlyWhenTheKvCacheRunsOutAndFreesItsBlocks) {
  auto model = open(3); // 12 positions
  Generator generator(*model);
  GenerateOptions options;
  options.maxTokens = 8;
  try {
    generator.generate({{1, 2, 3, 4, 5}, {6, 7}}, options);
    FAIL() << "expected the KV cache to run out";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("the KV cache ran out of blocks: its 3 blocks of 4 "
                                             "positions cannot hold this batch"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(model->kvPool().numFree(), 3);
}

TEST_F(GeneratorTest, RefusesEmptyPromptsAndUnknownTokens) {
  auto model = open(4);
  Generator generator(*model);
  GenerateOptions options;
  EXPECT_THROW(generator.generate({{1}, {}}, options), Error);
  EXPECT_THROW(generator.generate({{1, 64}}, options), Error);
  EXPECT_EQ(model->kvPool().numFree(), 4);
}
} // namespace
