//===- TestArtifact.cpp - a small model.llmc written by a test ------------===//
#include "TestArtifact.h"

#include "llmc/Artifact/Checksum.h"
#include "llmc/Runtime/StepABI.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace llmc::test {
namespace {
namespace fs = std::filesystem;

std::string readFile(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(stream), {});
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream stream(path, std::ios::binary);
  stream.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!stream) throw std::runtime_error("cannot write " + path);
}

/// The manifest's index entry for a file: name, size and checksum.
nlohmann::json fileEntry(const std::string &name, const std::string &bytes) {
  return {{"file", name},
          {"size", bytes.size()},
          {"checksum", checksumHex(checksum64(bytes.data(), bytes.size()))}};
}
} // namespace

TestArtifact::TestArtifact(const TestArtifactSpec &spec) {
  std::string pattern = (fs::temp_directory_path() / "llmc-unit-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  directory = pattern + "/model.llmc";
  fs::create_directory(directory);

  // Small distinct biases (all below the toy's peak of 1) so that a row that
  // lost its peak still has a well-defined argmax.
  for (int64_t v = 0; v < spec.vocabSize; ++v) biasValues.push_back(0.01f * float(v % 7));
  std::string weights(reinterpret_cast<const char *>(biasValues.data()),
                      biasValues.size() * sizeof(float));
  weights.resize((weights.size() + 63) / 64 * 64, '\0');
  writeFile(path("weights.bin"), weights);
  std::string kernels = readFile(LLMC_TOY_STEP_LIBRARY);
  writeFile(path("kernels.so"), kernels);

  nlohmann::json weightsEntry = fileEntry("weights.bin", weights);
  weightsEntry["alignment"] = 64;
  weightsEntry["tensors"] = {{{"name", "bias"},
                              {"dtype", "f32"},
                              {"shape", {spec.vocabSize}},
                              {"offset", 0},
                              {"nbytes", spec.vocabSize * 4}}};
  manifest = {
      {"format", "llmc-artifact"},
      {"format_version", 1},
      {"abi_version", LLMC_STEP_ABI_VERSION},
      {"target", {{"kind", "cpu"}, {"triple", "x86_64-unknown-linux-gnu"}}},
      {"model",
       {{"vocab_size", spec.vocabSize},
        {"hidden_size", spec.numKvHeads * spec.headDim},
        {"num_layers", spec.numLayers},
        {"num_heads", spec.numKvHeads},
        {"num_kv_heads", spec.numKvHeads},
        {"head_dim", spec.headDim},
        {"dtype", "f32"}}},
      {"step",
       {{"symbol", LLMC_STEP_SYMBOL},
        {"max_num_batched_tokens", spec.maxNumBatchedTokens},
        {"max_num_seqs", spec.maxNumSeqs},
        // The toy keeps one int64 per sequence in the workspace.
        {"workspace_bytes", spec.maxNumSeqs * 8},
        {"block_size", spec.blockSize},
        {"kv_rows", 2},
        {"kv_dtype", "f32"},
        {"matmul", "blas"}}},
      {"kernels", {fileEntry("kernels.so", kernels)}},
      {"weights", weightsEntry},
  };
  writeManifest();
}

TestArtifact::~TestArtifact() {
  std::error_code ignored;
  fs::remove_all(fs::path(directory).parent_path(), ignored);
}

void TestArtifact::writeManifest() const { writeFile(path("manifest.json"), manifest.dump(2)); }

std::vector<int32_t> toyContinuation(std::vector<int32_t> context, int64_t maxTokens,
                                     int64_t vocabSize) {
  std::vector<int32_t> generated;
  for (int64_t i = 0; i < maxTokens; ++i) {
    int64_t sum = 0;
    for (int32_t token : context) sum += token;
    int32_t next = static_cast<int32_t>(sum % vocabSize);
    context.push_back(next);
    generated.push_back(next);
  }
  return generated;
}

} // namespace llmc::test
