//===- ArtifactTest.cpp - loading model.llmc and refusing bad ones --------===//
#include "TestArtifact.h"

#include "llmc/Support/AmxTileData.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/Error.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace llmc::runtime;
using llmc::test::TestArtifact;

namespace {
/// The message Artifact::load throws for `dir` ("" when it loads).
std::string loadError(const std::string &dir) {
  try {
    Artifact::load(dir);
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

#define EXPECT_LOAD_ERROR(artifact, fragment)                                                   \
  do {                                                                                          \
    std::string message = loadError((artifact).dir());                                          \
    EXPECT_NE(message.find(fragment), std::string::npos) << "message: " << message;             \
  } while (false)

TEST(Artifact, LoadsTheManifestWeightsAndStepFunction) {
  TestArtifact test;
  std::unique_ptr<Artifact> artifact = Artifact::load(test.dir());
  EXPECT_EQ(artifact->model().vocabSize, 64);
  EXPECT_EQ(artifact->model().numLayers, 2);
  EXPECT_EQ(artifact->model().numKvHeads, 2);
  EXPECT_EQ(artifact->model().headDim, 4);
  EXPECT_EQ(artifact->step().blockSize, 4);
  EXPECT_EQ(artifact->step().maxNumBatchedTokens, 16);
  EXPECT_EQ(artifact->step().maxNumSeqs, 4);
  EXPECT_EQ(artifact->step().workspaceBytes, 32);
  EXPECT_NE(artifact->stepFunction(), nullptr);
  ASSERT_EQ(artifact->weightsBytes(), 256u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(artifact->weights()) % 64, 0u);
  const float *bias = static_cast<const float *>(artifact->weights());
  for (size_t v = 0; v < test.bias().size(); ++v) EXPECT_EQ(bias[v], test.bias()[v]);
}

TEST(Artifact, RefusesAMissingDirectoryOrManifest) {
  TestArtifact test;
  std::string missing = test.dir() + "-not-there";
  EXPECT_NE(loadError(missing).find("no such artifact directory"), std::string::npos);
  std::filesystem::remove(test.path("manifest.json"));
  EXPECT_LOAD_ERROR(test, "no manifest.json");
}

TEST(Artifact, RefusesAManifestThatIsNotJson) {
  TestArtifact test;
  std::ofstream(test.path("manifest.json")) << "{\"format\": ";
  EXPECT_LOAD_ERROR(test, "manifest.json: not valid JSON");
}

TEST(Artifact, RefusesAnotherFormat) {
  TestArtifact test;
  test.manifest["format"] = "gguf";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "not an llmc artifact manifest");
}

TEST(Artifact, RefusesAnotherFormatVersion) {
  TestArtifact test;
  test.manifest["format_version"] = 2;
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "format_version 2 is not one this runtime reads (it reads 1)");
}

TEST(Artifact, RefusesAnotherStepAbi) {
  TestArtifact test;
  test.manifest["abi_version"] = LLMC_STEP_ABI_VERSION + 1;
  test.writeManifest();
  std::string expected = "was built for step ABI " + std::to_string(LLMC_STEP_ABI_VERSION + 1) +
                         ", this runtime speaks " + std::to_string(LLMC_STEP_ABI_VERSION) +
                         ": recompile with this llmc";
  EXPECT_LOAD_ERROR(test, expected);
}

TEST(Artifact, RefusesATargetItDoesNotRun) {
  TestArtifact test;
  test.manifest["target"]["kind"] = "tpu";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "targets 'tpu'; this runtime runs cpu and cuda artifacts only");
}

TEST(Artifact, ReadsKvCacheGroups) {
  TestArtifact test;
  auto artifact = Artifact::load(test.dir());
  EXPECT_TRUE(artifact->step().kvGroups.empty());
  EXPECT_EQ(artifact->step().numKvGroups(), 1);
  test.manifest["step"]["kv_groups"] = nlohmann::json::parse(
      R"([{"window": 0, "layers": [1]}, {"window": 16, "layers": [0]}])");
  test.writeManifest();
  artifact = Artifact::load(test.dir());
  ASSERT_EQ(artifact->step().numKvGroups(), 2);
  EXPECT_EQ(artifact->step().kvGroups[0].window, 0);
  EXPECT_EQ(artifact->step().kvGroups[0].layers, std::vector<int64_t>{1});
  EXPECT_EQ(artifact->step().kvGroups[1].window, 16);
  EXPECT_EQ(artifact->step().kvGroups[1].layers, std::vector<int64_t>{0});
}

TEST(Artifact, ReadsWhatTheStepReturnsRowsOf) {
  TestArtifact test;
  // Artifacts written before step.output return logits.
  EXPECT_EQ(Artifact::load(test.dir())->step().output, StepOutputKind::Logits);
  test.manifest["step"]["output"] = "logits";
  test.writeManifest();
  EXPECT_EQ(Artifact::load(test.dir())->step().output, StepOutputKind::Logits);
  test.manifest["step"]["output"] = "hidden_states";
  test.writeManifest();
  auto artifact = Artifact::load(test.dir());
  EXPECT_EQ(artifact->step().output, StepOutputKind::HiddenStates);
  EXPECT_EQ(stepOutputSize(artifact->model(), artifact->step()), artifact->model().hiddenSize);
  test.manifest["step"]["output"] = "pooled";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "step.output 'pooled' is not one this runtime serves (logits, "
                          "hidden_states or class_logits)");
}

TEST(Artifact, ReadsAClassifiersLabels) {
  TestArtifact test;
  test.manifest["step"]["output"] = "class_logits";
  test.manifest["model"]["num_labels"] = 3;
  test.manifest["model"]["labels"] = {"negative", "neutral", "positive"};
  test.writeManifest();
  auto artifact = Artifact::load(test.dir());
  EXPECT_EQ(artifact->step().output, StepOutputKind::ClassLogits);
  EXPECT_EQ(stepOutputSize(artifact->model(), artifact->step()), 3);
  EXPECT_EQ(artifact->model().labels,
            (std::vector<std::string>{"negative", "neutral", "positive"}));
  // Without names, transformers' defaults.
  test.manifest["model"].erase("labels");
  test.writeManifest();
  EXPECT_EQ(Artifact::load(test.dir())->model().labels,
            (std::vector<std::string>{"LABEL_0", "LABEL_1", "LABEL_2"}));
  test.manifest["model"]["labels"] = {"negative", "positive"};
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "model.labels must be num_labels (3) strings");
  test.manifest["model"].erase("labels");
  test.manifest["model"].erase("num_labels");
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "step.output is 'class_logits' but model.num_labels is not a "
                          "positive count of labels");
}

TEST(Artifact, RefusesKvCacheGroupsThatDoNotHoldEveryLayerOnce) {
  TestArtifact test;
  auto groups = [&](const char *text) {
    test.manifest["step"]["kv_groups"] = nlohmann::json::parse(text);
    test.writeManifest();
  };
  groups(R"([{"window": 0, "layers": [1]}, {"window": 16, "layers": [1]}])");
  EXPECT_LOAD_ERROR(test, "step.kv_groups[1].layers must name each layer from 0 to 1 once over "
                          "all groups");
  groups(R"([{"window": 0, "layers": [2]}])");
  EXPECT_LOAD_ERROR(test, "step.kv_groups[0].layers must name each layer from 0 to 1 once");
  groups(R"([{"window": 0, "layers": [1]}])");
  EXPECT_LOAD_ERROR(test, "step.kv_groups leaves out a layer of the model's 2");
  groups(R"([{"window": -1, "layers": [0, 1]}])");
  EXPECT_LOAD_ERROR(test, "step.kv_groups[0].window must be an integer >= 0");
  groups(R"([{"window": 0, "layers": []}])");
  EXPECT_LOAD_ERROR(test, "step.kv_groups[0].layers must be a non-empty array");
  groups(R"([])");
  EXPECT_LOAD_ERROR(test, "step.kv_groups must be a non-empty array");
}

TEST(Artifact, RefusesMissingOrInvalidFields) {
  TestArtifact test;
  test.manifest["step"].erase("block_size");
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "manifest.json: step.block_size is missing");
  test.manifest["step"]["block_size"] = 0;
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "manifest.json: step.block_size must be an integer >= 1");
  test.manifest["step"]["block_size"] = 4;
  test.manifest["step"]["kv_dtype"] = "f16";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "step.kv_dtype 'f16' is not supported");
}

TEST(Artifact, ReadsHowManyRowsATokenCaches) {
  TestArtifact test;
  // An artifact written before step.kv_rows caches a key and a value row.
  test.manifest["step"].erase("kv_rows");
  test.writeManifest();
  EXPECT_EQ(Artifact::load(test.dir())->step().kvRows, 2);
  test.manifest["step"]["kv_rows"] = 1;
  test.writeManifest();
  EXPECT_EQ(Artifact::load(test.dir())->step().kvRows, 1);
  test.manifest["step"]["kv_rows"] = 3;
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "step.kv_rows must be 1 (keys holding the values) or 2");
  test.manifest["step"]["kv_rows"] = 0;
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "step.kv_rows must be an integer >= 1");
}

TEST(Artifact, AsksForTheAmxTileStateItsKernelsUse) {
  TestArtifact test;
  // Without the field (no bf16 activations, or an older artifact): no tiles.
  EXPECT_FALSE(Artifact::load(test.dir())->step().amxTiles);
  test.manifest["step"]["bf16_products"] = "avx512-bf16";
  test.writeManifest();
  EXPECT_FALSE(Artifact::load(test.dir())->step().amxTiles);
  test.manifest["step"]["bf16_products"] = "avx2";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "step.bf16_products 'avx2' is not one this runtime runs");
  test.manifest["step"]["bf16_products"] = "amx";
  test.writeManifest();
  // The load asks Linux for the tile state: granted where the CPU has AMX
  // (asking twice is harmless), else the load says why and what to do.
  if (llmc::requestAmxTileData().empty())
    EXPECT_TRUE(Artifact::load(test.dir())->step().amxTiles);
  else
    EXPECT_LOAD_ERROR(test, "its kernels multiply with AMX tiles, but");
}

TEST(Artifact, RefusesATruncatedWeightsFile) {
  TestArtifact test;
  std::filesystem::resize_file(test.path("weights.bin"), 100);
  EXPECT_LOAD_ERROR(test, test.path("weights.bin") +
                              " is 100 bytes, manifest.json says 256: the file is truncated");
}

TEST(Artifact, RefusesAWeightsChecksumMismatch) {
  TestArtifact test;
  {
    std::fstream file(test.path("weights.bin"), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(10);
    file.put('\x7f');
  }
  EXPECT_LOAD_ERROR(test, test.path("weights.bin") + " has checksum ");
  EXPECT_LOAD_ERROR(test, "the file is altered or corrupt");
}

TEST(Artifact, RefusesATensorOutsideOrMisaligned) {
  TestArtifact test;
  test.manifest["weights"]["tensors"][0]["offset"] = 4;
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "tensor bias sits at offset 4, not a multiple of the alignment 64");
  test.manifest["weights"]["tensors"][0]["offset"] = 0;
  test.manifest["weights"]["tensors"][0]["nbytes"] = 1000;
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "tensor bias ends past the end of weights.bin");
}

TEST(Artifact, RefusesAMissingKernelsLibrary) {
  TestArtifact test;
  std::filesystem::remove(test.path("kernels.so"));
  EXPECT_LOAD_ERROR(test, test.path("kernels.so") + ": cannot open");
}

TEST(Artifact, RefusesAlteredKernels) {
  TestArtifact test;
  test.manifest["kernels"][0]["size"] = 12;
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, test.path("kernels.so") + " is ");
  EXPECT_LOAD_ERROR(test, "manifest.json says 12: the file is truncated or altered");
}

TEST(Artifact, RefusesKernelsWithoutTheStepSymbol) {
  TestArtifact test;
  test.manifest["step"]["symbol"] = "not_the_step";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "does not export the step function not_the_step");
}
} // namespace
