//===- Artifact.h - a loaded model.llmc directory ---------------*- C++ -*-===//
//
// The runtime's view of what `llmc compile` wrote (docs/artifact.md): the
// manifest's configuration, weights.bin mapped read-only and the step function
// of kernels.so.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ARTIFACT_H
#define LLMC_RUNTIME_ARTIFACT_H

#include "llmc/Runtime/StepABI.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace llmc::runtime {

/// manifest.json's "model": the network's shape.
struct ModelConfig {
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKvHeads = 0;
  int64_t headDim = 0;
  /// Positions must be below this (the rows of a cached rotary table); 0: no bound.
  int64_t maxPositions = 0;
};

/// manifest.json's "step": the limits and needs of the step function.
struct StepConfig {
  std::string symbol;
  int64_t maxNumBatchedTokens = 0;
  int64_t maxNumSeqs = 0;
  int64_t workspaceBytes = 0;
  int64_t blockSize = 0;
};

/// A model.llmc directory, verified and loaded: load() checks the manifest's
/// versions and target and every file's size and checksum before it maps the
/// weights and opens kernels.so. The mapping and the library live as long as
/// the Artifact.
class Artifact {
public:
  /// Loads the artifact in `directory`; throws Error naming the file and the
  /// fault when anything disagrees with what this runtime expects.
  static std::unique_ptr<Artifact> load(const std::string &directory);
  ~Artifact();
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  const std::string &directory() const { return dir; }
  const ModelConfig &model() const { return modelConfig; }
  const StepConfig &step() const { return stepConfig; }
  LlmcStepFn stepFunction() const { return stepFn; }
  /// weights.bin as mapped (null when it is empty).
  const void *weights() const { return weightsData; }
  size_t weightsBytes() const { return weightsSize; }
  /// The tokenizer files the manifest lists (verified like the others), or
  /// "" when the model's directory had none at compile time.
  const std::string &tokenizerFile() const { return tokenizerJson; }
  const std::string &tokenizerConfigFile() const { return tokenizerConfigJson; }
  /// chat_template.jinja, when the model's directory had one ("" otherwise);
  /// TokenizerConfig::load reads it beside tokenizer_config.json.
  const std::string &chatTemplateFile() const { return chatTemplateJinja; }

private:
  Artifact() = default;

  std::string dir;
  ModelConfig modelConfig;
  StepConfig stepConfig;
  void *weightsData = nullptr;
  size_t weightsSize = 0;
  void *kernelsLibrary = nullptr;
  LlmcStepFn stepFn = nullptr;
  std::string tokenizerJson;
  std::string tokenizerConfigJson;
  std::string chatTemplateJinja;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ARTIFACT_H
