//===- ModelTest.cpp - Model::step over the toy step function -------------===//
#include "TestArtifact.h"

#include "runtime/core/Argmax.h"
#include "runtime/core/Error.h"
#include "runtime/core/Model.h"

#include <gtest/gtest.h>

using namespace llmc::runtime;
using llmc::test::TestArtifact;

namespace {
/// A batch held in vectors, for building cases and breaking them.
using Batch = StepBatchArrays;

/// Two prompts prefilled together (block size 4): [1 2 3 4 5] in blocks
/// 3 and 0, [10 20] in block 1.
Batch twoPromptPrefill() {
  Batch batch;
  batch.tokens = {1, 2, 3, 4, 5, 10, 20};
  batch.positions = {0, 1, 2, 3, 4, 0, 1};
  batch.cuSeqlensQ = {0, 5, 7};
  batch.contextLens = {5, 2};
  batch.maxBlocksPerSeq = 2;
  batch.blockTables = {3, 0, 1, 0};
  batch.slotMapping = {12, 13, 14, 15, 0, 4, 5};
  batch.logitsIndices = {4, 6};
  return batch;
}

std::string stepError(Model &model, const Batch &batch) {
  std::vector<float> logits(static_cast<size_t>(model.stepConfig().maxNumSeqs * 64));
  try {
    model.step(batch.view(), logits.data());
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

#define EXPECT_STEP_ERROR(model, batch, fragment)                                               \
  do {                                                                                          \
    std::string message = stepError(model, batch);                                              \
    EXPECT_NE(message.find(fragment), std::string::npos) << "message: " << message;             \
  } while (false)

class ModelTest : public ::testing::Test {
protected:
  ModelTest() : model(Model::open(artifact.dir(), {2, 8})) {}
  TestArtifact artifact;
  std::unique_ptr<Model> model;
};

TEST_F(ModelTest, SetsUpTheKvCacheFromTheManifest) {
  EXPECT_EQ(model->kvPool().numBlocks(), 8);
  std::vector<int64_t> extents = {2, 8, 2, 2, 4, 4};
  EXPECT_EQ(model->kvPool().shape().extents(), extents);
  EXPECT_EQ(model->numThreads(), 2u);
}

TEST_F(ModelTest, DefaultKvCacheFillsTheBudget) {
  auto defaulted = Model::open(artifact.dir(), {1, 0});
  int64_t bytesPerBlock = 2 * 2 * 2 * 4 * 4 * 4;
  EXPECT_EQ(defaulted->kvPool().numBlocks(), Model::kDefaultKvCacheBytes / bytesPerBlock);
}

TEST_F(ModelTest, StepWritesOneLogitsRowPerSequence) {
  Batch batch = twoPromptPrefill();
  std::vector<float> logits(2 * 64);
  model->step(batch.view(), logits.data());
  const std::vector<float> &bias = artifact.bias();
  for (int64_t v = 0; v < 64; ++v) {
    EXPECT_EQ(logits[v], bias[v] + (v == 15 ? 1.0f : 0.0f)) << v;
    EXPECT_EQ(logits[64 + v], bias[v] + (v == 30 ? 1.0f : 0.0f)) << v;
  }

  // A decode step for the first sequence reads the prefilled positions back.
  Batch decode;
  decode.tokens = {15};
  decode.positions = {5};
  decode.cuSeqlensQ = {0, 1};
  decode.contextLens = {6};
  decode.maxBlocksPerSeq = 2;
  decode.blockTables = {3, 0};
  decode.slotMapping = {1};
  decode.logitsIndices = {0};
  model->step(decode.view(), logits.data());
  EXPECT_EQ(logits[30], bias[30] + 1.0f);
}

TEST_F(ModelTest, StepGreedyGivesEachSequencesArgmax) {
  Batch batch = twoPromptPrefill();
  std::vector<float> logits(2 * 64);
  model->step(batch.view(), logits.data());
  std::vector<int32_t> expected{argmax(logits.data(), 64), argmax(logits.data() + 64, 64)};
  // The same prefill again, into the same slots: the same logits.
  std::vector<int32_t> tokens(2, -1);
  model->stepGreedy(batch.view(), tokens.data());
  EXPECT_EQ(tokens, expected);
  EXPECT_EQ(tokens, (std::vector<int32_t>{15, 30}));
  EXPECT_FALSE(model->greedyOnDevice());
  Batch tooMany = twoPromptPrefill();
  tooMany.logitsIndices = {4, 7};
  EXPECT_THROW(model->stepGreedy(tooMany.view(), tokens.data()), Error);
}

TEST_F(ModelTest, RefusesBatchesBeyondTheLimits) {
  Batch batch = twoPromptPrefill();
  batch.tokens.assign(17, 1);
  EXPECT_STEP_ERROR(*model, batch, "17 tokens; the model takes 1 to 16 (max_num_batched_tokens)");
  batch.tokens.clear();
  EXPECT_STEP_ERROR(*model, batch, "0 tokens");

  batch = twoPromptPrefill();
  batch.contextLens.assign(5, 1);
  EXPECT_STEP_ERROR(*model, batch, "5 sequences; the model takes 1 to 4 (max_num_seqs)");
}

TEST_F(ModelTest, RefusesInconsistentSequences) {
  Batch batch = twoPromptPrefill();
  batch.cuSeqlensQ = {0, 5, 6};
  EXPECT_STEP_ERROR(*model, batch, "cu_seqlens_q must run from 0 to the token count 7");
  batch.cuSeqlensQ = {0, 0, 7};
  EXPECT_STEP_ERROR(*model, batch, "cu_seqlens_q must increase: sequence 0 has 0 query tokens");
  batch = twoPromptPrefill();
  batch.contextLens = {4, 2};
  EXPECT_STEP_ERROR(*model, batch, "context_lens[0] = 4 is less than its 5 query tokens");
}

TEST_F(ModelTest, RefusesIndicesOutsideTheCacheOrVocabulary) {
  Batch batch = twoPromptPrefill();
  batch.contextLens = {9, 2};
  EXPECT_STEP_ERROR(*model, batch,
                    "sequence 0 has 9 positions, 3 blocks, but the block tables are 2 wide");
  batch = twoPromptPrefill();
  batch.blockTables = {3, 8, 1, 0};
  EXPECT_STEP_ERROR(*model, batch,
                    "block_tables[0][1] = 8 is not a block of the KV cache (it has 8)");
  batch = twoPromptPrefill();
  batch.slotMapping[2] = 32;
  EXPECT_STEP_ERROR(*model, batch, "slot_mapping[2] = 32 is past the KV cache's 32 slots");
  batch = twoPromptPrefill();
  batch.tokens[3] = 64;
  EXPECT_STEP_ERROR(*model, batch, "token 64 at row 3 is outside the vocabulary (0 to 63)");
  batch = twoPromptPrefill();
  batch.logitsIndices = {4, 7};
  EXPECT_STEP_ERROR(*model, batch, "logits_indices[1] = 7 is not a token row");
}

TEST_F(ModelTest, NegativeSlotsSkipTheWrite) {
  Batch batch = twoPromptPrefill();
  batch.slotMapping = {-1, -1, -1, -1, -1, -1, -1};
  std::vector<float> logits(2 * 64);
  model->step(batch.view(), logits.data());
  // Nothing was written, so the toy finds no valid context and adds no peak.
  for (int64_t v = 0; v < 64; ++v) EXPECT_EQ(logits[v], artifact.bias()[v]);
}
} // namespace
