//===- ScoringTest.cpp - vLLM's score task over a model that pools --------===//
#include "runtime/engine/Scoring.h"

#include "ByteVocabulary.h"
#include "TestArtifact.h"

#include <gtest/gtest.h>

#include <cmath>

namespace llmc::runtime {
namespace {

using test::TestArtifact;
using tokenizer::Tokenizer;

std::unique_ptr<Tokenizer> byteTokenizer() {
  return Tokenizer::fromJson(test::byteLevelTokenizerJson(), "bytes.json");
}

std::vector<int32_t> bytesOf(const std::string &text) {
  return std::vector<int32_t>(text.begin(), text.end());
}

/// The toy step as a pooling model with `output` rows (and `numLabels`).
std::unique_ptr<Model> openToy(TestArtifact &artifact, const char *output,
                               int64_t numLabels = 0) {
  artifact.manifest["step"]["output"] = output;
  if (numLabels) artifact.manifest["model"]["num_labels"] = numLabels;
  artifact.writeManifest();
  ModelOptions options;
  options.numThreads = 1;
  options.numKvBlocks = 8;
  return Model::open(artifact.dir(), options);
}

TEST(Scoring, MethodFollowsWhatTheModelPools) {
  TestArtifact reranker, classifier, embedder, generator;
  EXPECT_EQ(scoringMethodOf(*openToy(reranker, "class_logits", 1)), ScoringMethod::CrossEncoder);
  EXPECT_EQ(scoringMethodOf(*openToy(embedder, "hidden_states")),
            ScoringMethod::EmbeddingSimilarity);
  try {
    scoringMethodOf(*openToy(classifier, "class_logits", 3));
    ADD_FAILURE() << "a classifier of 3 labels was taken for scoring";
  } catch (const RequestError &error) {
    EXPECT_NE(std::string(error.what()).find("a classifier of 3 labels"), std::string::npos);
  }
  EXPECT_THROW(scoringMethodOf(*openToy(generator, "logits")), RequestError);
}

TEST(Scoring, CrossEncoderReadsEachPairAsOnePrompt) {
  auto tokenizer = byteTokenizer();
  ScoringPlan plan =
      planScoring(ScoringMethod::CrossEncoder, *tokenizer, {"q"}, {"ab", "cde"}, std::nullopt);
  ASSERT_EQ(plan.prompts.size(), 2u);
  EXPECT_EQ(plan.prompts[0], bytesOf("qab"));
  EXPECT_EQ(plan.prompts[1], bytesOf("qcde"));
  EXPECT_EQ(plan.pairTokens(1), 4);
  EXPECT_TRUE(plan.pooling(true).activation);
  EXPECT_FALSE(plan.pooling(false).activation);
  EXPECT_EQ(scorePairs(plan, {{0.25f}, {0.75f}}), (std::vector<double>{0.25, 0.75}));

  // N:N pairs in order, each cut longest first.
  plan = planScoring(ScoringMethod::CrossEncoder, *tokenizer, {"abcd", "x"}, {"ef", "yz"}, 4);
  EXPECT_EQ(plan.prompts[0], bytesOf("abef"));
  EXPECT_EQ(plan.prompts[1], bytesOf("xyz"));
}

TEST(Scoring, EmbeddingsAreComparedByCosine) {
  auto tokenizer = byteTokenizer();
  ScoringPlan plan = planScoring(ScoringMethod::EmbeddingSimilarity, *tokenizer, {"q"},
                                 {"ab", "cde", "f"}, std::nullopt);
  // The query is embedded once.
  ASSERT_EQ(plan.prompts.size(), 4u);
  EXPECT_EQ(plan.prompts[0], bytesOf("q"));
  EXPECT_EQ(plan.prompts[2], bytesOf("cde"));
  EXPECT_EQ(plan.pairTokens(1), 4);
  EXPECT_FALSE(plan.pooling(true).activation);
  std::vector<double> scores =
      scorePairs(plan, {{1, 0}, {2, 0}, {1, 1}, {0, 0}});
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_NEAR(scores[0], 1.0, 1e-12);
  EXPECT_NEAR(scores[1], std::sqrt(0.5), 1e-12);
  EXPECT_EQ(scores[2], 0.0); // a zero embedding is like nothing

  plan = planScoring(ScoringMethod::EmbeddingSimilarity, *tokenizer, {"a", "b"}, {"c", "d"}, 1);
  EXPECT_EQ(plan.pairPrompts, (std::vector<std::pair<size_t, size_t>>{{0, 2}, {1, 3}}));
  EXPECT_THROW(scorePairs(plan, {{1}}), Error);
}

TEST(Scoring, RefusesCountsThatDoNotPair) {
  auto tokenizer = byteTokenizer();
  auto refusal = [&](std::vector<std::string> texts1, std::vector<std::string> texts2,
                     std::optional<size_t> maxTokens = std::nullopt) {
    try {
      planScoring(ScoringMethod::CrossEncoder, *tokenizer, texts1, texts2, maxTokens);
    } catch (const RequestError &error) {
      return std::string(error.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal({"a", "b"}, {"c", "d", "e"}).find("1:1, 1:N or N:N texts, not 2:3"),
            std::string::npos);
  EXPECT_NE(refusal({}, {"c"}).find("at least one"), std::string::npos);
  EXPECT_NE(refusal({"a"}, {}).find("at least one"), std::string::npos);
  EXPECT_NE(refusal({"a"}, {"\xff"}).find("not valid UTF-8"), std::string::npos);
}

} // namespace
} // namespace llmc::runtime
