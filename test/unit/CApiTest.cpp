//===- CApiTest.cpp - libllmc_runtime_c.so through its C header -----------===//
#include "TestArtifact.h"

#include "llmc/Runtime/llmc_runtime.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using llmc::test::TestArtifact;
using llmc::test::toyContinuation;

namespace {
TEST(CApi, OpenReportsErrorsInTheBuffer) {
  char err[256] = "";
  EXPECT_EQ(llmc_runtime_open("/nonexistent/model.llmc", 1, 4, err, sizeof(err)), nullptr);
  EXPECT_STREQ(err, "/nonexistent/model.llmc: no such artifact directory");
  // A short buffer gets a truncated, terminated message.
  char shortErr[8];
  EXPECT_EQ(llmc_runtime_open("/nonexistent/model.llmc", 1, 4, shortErr, sizeof(shortErr)),
            nullptr);
  EXPECT_STREQ(shortErr, "/nonexi");
}

TEST(CApi, OpensStepsGeneratesAndCloses) {
  TestArtifact artifact;
  char err[256] = "";
  LlmcRuntimeModel *model = llmc_runtime_open(artifact.dir().c_str(), 2, 16, err, sizeof(err));
  ASSERT_NE(model, nullptr) << err;
  EXPECT_EQ(llmc_runtime_vocab_size(model), 64);
  EXPECT_EQ(llmc_runtime_output_size(model), 64);
  EXPECT_EQ(llmc_runtime_num_layers(model), 2);
  EXPECT_EQ(llmc_runtime_block_size(model), 4);
  EXPECT_EQ(llmc_runtime_max_num_batched_tokens(model), 16);
  EXPECT_EQ(llmc_runtime_max_num_seqs(model), 4);
  EXPECT_EQ(llmc_runtime_num_kv_blocks(model), 16);
  EXPECT_EQ(llmc_runtime_num_threads(model), 2);
  EXPECT_EQ(llmc_runtime_num_kv_groups(model), 1);

  std::vector<int32_t> tokens = {1, 2, 3}, positions = {0, 1, 2}, cuSeqlensQ = {0, 3},
                       contextLens = {3}, blockTables = {5}, slots = {20, 21, 22},
                       logitsIndices = {2};
  std::vector<float> logits(64);
  ASSERT_EQ(llmc_runtime_step(model, 3, 1, tokens.data(), positions.data(), cuSeqlensQ.data(),
                              contextLens.data(), blockTables.data(), 1, slots.data(),
                              logitsIndices.data(), logits.data(), err, sizeof(err)),
            0)
      << err;
  EXPECT_EQ(logits[6], artifact.bias()[6] + 1.0f);

  contextLens = {2};
  EXPECT_NE(llmc_runtime_step(model, 3, 1, tokens.data(), positions.data(), cuSeqlensQ.data(),
                              contextLens.data(), blockTables.data(), 1, slots.data(),
                              logitsIndices.data(), logits.data(), err, sizeof(err)),
            0);
  EXPECT_STREQ(err, "step: context_lens[0] = 2 is less than its 3 query tokens");

  std::vector<int32_t> promptTokens = {1, 2, 3, 7};
  std::vector<int64_t> offsets = {0, 3, 4};
  std::vector<int32_t> outputs(2 * 5, -1);
  std::vector<int64_t> lengths(2);
  int32_t stop = toyContinuation({7}, 5, 64)[3];
  ASSERT_EQ(llmc_runtime_generate(model, 2, promptTokens.data(), offsets.data(), 5, &stop, 1,
                                  outputs.data(), lengths.data(), err, sizeof(err)),
            0)
      << err;
  EXPECT_EQ(std::vector<int32_t>(outputs.begin(), outputs.begin() + lengths[0]),
            toyContinuation({1, 2, 3}, lengths[0], 64));
  EXPECT_EQ(lengths[1], 4);
  EXPECT_EQ(std::vector<int32_t>(outputs.begin() + 5, outputs.begin() + 5 + 4),
            toyContinuation({7}, 4, 64));

  std::vector<int32_t> unknownToken = {99};
  std::vector<int64_t> oneOffset = {0, 1};
  EXPECT_NE(llmc_runtime_generate(model, 1, unknownToken.data(), oneOffset.data(), 5, nullptr, 0,
                                  outputs.data(), lengths.data(), err, sizeof(err)),
            0);
  EXPECT_STREQ(err, "prompt token 0 is 99, outside the vocabulary (0 to 63)");
  llmc_runtime_close(model);
}

TEST(CApi, EngineRunsRequestsAndReportsJson) {
  TestArtifact artifact;
  char err[256] = "";
  LlmcRuntimeModel *model = llmc_runtime_open(artifact.dir().c_str(), 1, 16, err, sizeof(err));
  ASSERT_NE(model, nullptr) << err;
  EXPECT_EQ(llmc_engine_new(model, "{\"max_num_seqs\": \"four\"}", err, sizeof(err)), nullptr);
  EXPECT_STREQ(err, "engine config: max_num_seqs has the wrong type");
  LlmcEngine *engine = llmc_engine_new(model, "{\"max_num_seqs\": 2}", err, sizeof(err));
  ASSERT_NE(engine, nullptr) << err;

  std::vector<int32_t> prompt = {1, 2, 3};
  ASSERT_EQ(llmc_engine_add_request(engine, 7, prompt.data(), 3, "{\"max_tokens\": 2, \"temperature\": 0}", err,
                                    sizeof(err)),
            0)
      << err;
  EXPECT_NE(llmc_engine_add_request(engine, 8, prompt.data(), 3, "{\"colour\": 1}", err,
                                    sizeof(err)),
            0);
  EXPECT_STREQ(err, "request options: unknown key \"colour\"");
  EXPECT_NE(llmc_engine_add_request(engine, 8, prompt.data(), 3, "{", err, sizeof(err)), 0);
  EXPECT_STREQ(err, "the request options are not valid JSON");

  const char *outputs = nullptr;
  ASSERT_EQ(llmc_engine_step(engine, &outputs, err, sizeof(err)), 0) << err;
  auto first = nlohmann::json::parse(outputs);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0]["request"], 7);
  EXPECT_EQ(first[0]["token"], toyContinuation({1, 2, 3}, 1, 64)[0]);
  EXPECT_TRUE(first[0]["finish_reason"].is_null());
  ASSERT_EQ(llmc_engine_step(engine, &outputs, err, sizeof(err)), 0) << err;
  EXPECT_EQ(nlohmann::json::parse(outputs)[0]["finish_reason"], "length");
  EXPECT_EQ(llmc_engine_has_unfinished(engine), 0);

  ASSERT_EQ(llmc_engine_add_request(engine, 9, prompt.data(), 3, nullptr, err, sizeof(err)), 0);
  ASSERT_EQ(llmc_engine_abort(engine, 9, &outputs, err, sizeof(err)), 0);
  EXPECT_EQ(nlohmann::json::parse(outputs)[0]["finish_reason"], "abort");
  auto stats = nlohmann::json::parse(llmc_engine_stats(engine));
  EXPECT_EQ(stats["num_steps"], 2);
  EXPECT_EQ(stats["generated_tokens"], 2);
  EXPECT_EQ(stats["num_kv_blocks_held"], 0);
  llmc_engine_free(engine);
  llmc_runtime_close(model);
}

TEST(CApi, AClassifierPoolsItsLogitsIntoProbabilities) {
  TestArtifact artifact;
  artifact.manifest["step"]["output"] = "class_logits";
  artifact.manifest["model"]["num_labels"] = 3;
  artifact.writeManifest();
  char err[256] = "";
  LlmcRuntimeModel *model = llmc_runtime_open(artifact.dir().c_str(), 1, 16, err, sizeof(err));
  ASSERT_NE(model, nullptr) << err;
  EXPECT_EQ(llmc_runtime_output_size(model), 3);
  LlmcEngine *engine = llmc_engine_new(model, "{}", err, sizeof(err));
  ASSERT_NE(engine, nullptr) << err;
  std::vector<int32_t> prompt = {1, 2, 3};
  EXPECT_NE(llmc_engine_add_request(engine, 1, prompt.data(), 3, "{\"max_tokens\": 2}", err,
                                    sizeof(err)),
            0);
  EXPECT_NE(std::string(err).find("sequence classifier"), std::string::npos) << err;
  ASSERT_EQ(llmc_engine_add_request(engine, 2, prompt.data(), 3, "{\"pooling\": {}}", err,
                                    sizeof(err)),
            0)
      << err;
  const char *outputs = nullptr;
  ASSERT_EQ(llmc_engine_step(engine, &outputs, err, sizeof(err)), 0) << err;
  auto step = nlohmann::json::parse(outputs);
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(step[0]["finish_reason"], "stop");
  ASSERT_EQ(step[0]["pooled"].size(), 3u);
  double sum = 0;
  for (double probability : step[0]["pooled"]) sum += probability;
  EXPECT_NEAR(sum, 1.0, 1e-6);
  llmc_engine_free(engine);
  llmc_runtime_close(model);
}
} // namespace
