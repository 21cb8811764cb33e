//===- TestArtifact.h - a small model.llmc written by a test ----*- C++ -*-===//
#ifndef LLMC_TEST_UNIT_TESTARTIFACT_H
#define LLMC_TEST_UNIT_TESTARTIFACT_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace llmc::test {

/// The shape and limits of a test artifact.
struct TestArtifactSpec {
  int64_t vocabSize = 64;
  int64_t numLayers = 2;
  int64_t numKvHeads = 2;
  int64_t headDim = 4;
  int64_t blockSize = 4;
  int64_t maxNumBatchedTokens = 16;
  int64_t maxNumSeqs = 4;
};

/// A model.llmc directory in a fresh temporary directory, removed on
/// destruction: manifest.json, weights.bin (the toy's f32 bias per vocabulary
/// entry) and kernels.so (a copy of the ToyStep.c test double). Tests alter
/// the manifest or the files to check the loader's refusals.
class TestArtifact {
public:
  explicit TestArtifact(const TestArtifactSpec &spec = {});
  ~TestArtifact();
  TestArtifact(const TestArtifact &) = delete;
  TestArtifact &operator=(const TestArtifact &) = delete;

  const std::string &dir() const { return directory; }
  std::string path(const std::string &file) const { return directory + "/" + file; }
  /// The bias the toy adds to every logits row.
  const std::vector<float> &bias() const { return biasValues; }

  /// The manifest as written; writeManifest() writes it again after a change.
  nlohmann::json manifest;
  void writeManifest() const;

private:
  std::string directory;
  std::vector<float> biasValues;
};

/// What the toy step generates greedily: each next token is the sum of the
/// whole context so far modulo the vocabulary size (see ToyStep.c).
std::vector<int32_t> toyContinuation(std::vector<int32_t> context, int64_t maxTokens,
                                     int64_t vocabSize);

} // namespace llmc::test

#endif // LLMC_TEST_UNIT_TESTARTIFACT_H
