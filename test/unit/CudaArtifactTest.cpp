//===- CudaArtifactTest.cpp - loading a cuda artifact, opening it here ----===//
#include "TestArtifact.h"

#include "llmc/Artifact/Checksum.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/Error.h"
#include "runtime/core/Model.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <fstream>

using namespace llmc::runtime;
using llmc::test::TestArtifact;
using nlohmann::json;

namespace {
constexpr const char *kEmptyPlan =
    R"({"format_version": 1, "workspace_bytes": 0, "scratch_bytes": 0, "steps": []})";

/// The test artifact turned into a cuda one (sm_90, bf16): kernels.ptx,
/// attention.ptx and step_plan.json listed with their checksums instead of
/// kernels.so.
class CudaTestArtifact : public TestArtifact {
public:
  CudaTestArtifact() {
    manifest["target"] = {{"kind", "cuda"}, {"arch", "sm_90"}, {"dtype", "bf16"}};
    manifest["model"]["dtype"] = "bf16";
    manifest["step"]["kv_dtype"] = "bf16";
    manifest["step"].erase("symbol");
    manifest["kernels"] = json::array();
    writeKernelFile("kernels.ptx", "// PTX of the gpu.module kernels\n");
    writeKernelFile("attention.ptx", "// PTX of the attention kernels\n");
    writeKernelFile("step_plan.json", kEmptyPlan);
  }

  /// Writes `file` and lists it in the manifest's kernels.
  void writeKernelFile(const std::string &file, const std::string &bytes) {
    std::ofstream(path(file), std::ios::binary) << bytes;
    manifest["kernels"].push_back(
        {{"file", file},
         {"size", bytes.size()},
         {"checksum", llmc::checksumHex(llmc::checksum64(bytes.data(), bytes.size()))}});
    writeManifest();
  }
};

std::string loadError(const TestArtifact &artifact) {
  try {
    Artifact::load(artifact.dir());
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

#define EXPECT_LOAD_ERROR(artifact, fragment)                                                      \
  do {                                                                                             \
    std::string message = loadError(artifact);                                                     \
    EXPECT_NE(message.find(fragment), std::string::npos) << "message: " << message;                \
  } while (false)

TEST(CudaArtifact, LoadsTheTargetKernelsAndPlan) {
  CudaTestArtifact test;
  std::unique_ptr<Artifact> artifact = Artifact::load(test.dir());
  EXPECT_TRUE(artifact->target().isCuda());
  EXPECT_EQ(artifact->target().arch, "sm_90");
  EXPECT_EQ(artifact->target().dtype, "bf16");
  EXPECT_EQ(artifact->stepFunction(), nullptr);
  EXPECT_EQ(artifact->deviceFiles().size(), 3u);
  EXPECT_EQ(artifact->deviceFiles().at("step_plan.json"), kEmptyPlan);
  EXPECT_EQ(artifact->deviceFiles().at("kernels.ptx"), "// PTX of the gpu.module kernels\n");
  EXPECT_EQ(artifact->weightsBytes(), 256u);
}

TEST(CudaArtifact, RefusesABadTarget) {
  CudaTestArtifact test;
  test.manifest["target"]["arch"] = "hopper";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "target.arch 'hopper' is not a CUDA architecture (sm_80, sm_90, ...)");
  test.manifest["target"]["arch"] = "sm_90a";
  test.manifest["target"]["dtype"] = "f32";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "target.dtype 'f32' is not a storage dtype this runtime runs on CUDA");
  test.manifest["target"]["dtype"] = "f16";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "model.dtype 'bf16' is not the target's dtype 'f16'");
  test.manifest["model"]["dtype"] = "f16";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "step.kv_dtype 'bf16' is not the target's dtype 'f16'");
  test.manifest["step"]["kv_dtype"] = "f16";
  test.writeManifest();
  EXPECT_EQ(loadError(test), "");
  test.manifest["step"]["kv_rows"] = 1;
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "step.kv_rows is 1; the CUDA runtime caches a key row and a value row");
  test.manifest["step"]["kv_rows"] = 2;
  test.writeManifest();
  EXPECT_EQ(loadError(test), "");
  test.manifest["step"]["kv_groups"] = json::parse(
      R"([{"window": 0, "layers": [1]}, {"window": 16, "layers": [0]}])");
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "step.kv_groups is for the CPU runtime; the CUDA runtime keeps one "
                          "block table for every layer");
  test.manifest["step"].erase("kv_groups");
  test.manifest["step"]["output"] = "hidden_states";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "step.output is 'hidden_states'; the CUDA runtime serves logits only");
  test.manifest["step"].erase("output");
  test.manifest["target"]["kind"] = "tpu";
  test.writeManifest();
  EXPECT_LOAD_ERROR(test, "targets 'tpu'; this runtime runs cpu and cuda artifacts only");
}

TEST(CudaArtifact, RefusesKernelFilesThatAreNotCudaOnesOrAlteredOrMissing) {
  CudaTestArtifact test;
  test.writeKernelFile("kernels.so", "not for a GPU");
  EXPECT_LOAD_ERROR(test, "kernels lists kernels.so, which is not a file of a cuda artifact");

  CudaTestArtifact twice;
  twice.writeKernelFile("kernels.ptx", "// PTX of the gpu.module kernels\n");
  EXPECT_LOAD_ERROR(twice, "kernels lists kernels.ptx twice");

  CudaTestArtifact altered;
  std::ofstream(altered.path("attention.ptx"), std::ios::binary)
      << "// PTX of the attentioN kernels\n";
  EXPECT_LOAD_ERROR(altered, altered.path("attention.ptx") + " has checksum ");

  CudaTestArtifact noPlan;
  noPlan.manifest["kernels"].erase(2);
  noPlan.writeManifest();
  EXPECT_LOAD_ERROR(noPlan, "kernels lists no step_plan.json for target cuda");
}

TEST(CudaArtifact, OpeningWithoutAGpuFailsWithOneClearLine) {
  CudaTestArtifact test;
  std::string message;
  try {
    Model::open(test.dir(), {});
    ADD_FAILURE() << "opened a cuda artifact";
  } catch (const Error &error) {
    message = error.what();
  }
  std::string target = test.dir() + " targets CUDA (sm_90, bf16): ";
  EXPECT_EQ(message.rfind(target, 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
#ifdef LLMC_HAVE_CUDA
  void *driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver) {
    // A driver: whether a GPU is there decides the outcome, which this test
    // cannot know.
    ::dlclose(driver);
    GTEST_SKIP() << "an NVIDIA driver is installed: " << message;
  }
  EXPECT_NE(message.find("no NVIDIA driver on this machine (libcuda.so.1: cannot open shared "
                         "object file"),
            std::string::npos)
      << message;
#else
  EXPECT_EQ(message, target + "this runtime was built without CUDA support");
#endif
}

TEST(CudaArtifact, AStepPlanErrorComesBeforeTheDriver) {
  CudaTestArtifact test;
  test.manifest["kernels"].erase(2);
  test.writeKernelFile("step_plan.json", R"({"format_version": 1, "workspace_bytes": 0,
      "scratch_bytes": 0, "steps": [{"op": "memcpy"}]})");
  std::string message;
  try {
    Model::open(test.dir(), {});
  } catch (const Error &error) {
    message = error.what();
  }
#ifdef LLMC_HAVE_CUDA
  EXPECT_EQ(message, test.dir() + " targets CUDA (sm_90, bf16): step_plan.json: steps[0].op: "
                                  "'memcpy' is not launch or gemm");
#else
  EXPECT_NE(message.find("this runtime was built without CUDA support"), std::string::npos);
#endif
}
} // namespace
