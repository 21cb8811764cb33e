//===- Artifact.h - a loaded model.llmc directory ---------------*- C++ -*-===//
//
// The runtime's view of what `llmc compile` wrote (docs/artifact.md): the
// manifest's configuration, weights.bin mapped read-only and, for the CPU, the
// step function of kernels.so; for CUDA, the kernels and step plan the GPU
// runs (docs/cuda.md).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CORE_ARTIFACT_H
#define LLMC_RUNTIME_CORE_ARTIFACT_H

#include "llmc/Runtime/StepABI.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace llmc::runtime {

/// manifest.json's "target": what the step was compiled for.
struct TargetConfig {
  /// "cpu" or "cuda".
  std::string kind;
  /// cuda: the GPU architecture compiled for ("sm_90").
  std::string arch;
  /// cuda: the storage dtype of weights, activations and the KV pool ("bf16"
  /// or "f16"; model.dtype and step.kv_dtype agree with it).
  std::string dtype;

  bool isCuda() const { return kind == "cuda"; }
};

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
  /// The keys a query sees at most, when every layer has a sliding window;
  /// 0: some layer sees every key.
  int64_t attentionWindow = 0;
  /// A sequence classifier's labels (step.output class_logits): their count
  /// and names (model.labels; transformers' LABEL_i where the manifest has
  /// none).
  int64_t numLabels = 0;
  std::vector<std::string> labels;
  /// An embedding model trained with Matryoshka representation learning
  /// (model.is_matryoshka): a request may ask for its embeddings' leading
  /// features only, of these widths (model.matryoshka_dimensions; empty:
  /// any).
  bool isMatryoshka = false;
  std::vector<int64_t> matryoshkaDimensions;
};

/// One of the step's KV cache groups (step.kv_groups): layers of one
/// attention window that share a block table per sequence.
struct KvGroupConfig {
  /// The keys a query of these layers sees at most; 0: every key.
  int64_t window = 0;
  /// The model layers of the group in the order of their slots in a block.
  std::vector<int64_t> layers;
};

/// A linear layer of the step that a LoRA adapter may change
/// (step.lora_sites): its module path, as adapters name it, and features.
struct LoraSite {
  std::string module;
  int64_t in = 0, out = 0;
};

/// What a step returns a row of for each sequence it is asked one of.
enum class StepOutputKind { Logits, HiddenStates, ClassLogits };

/// manifest.json's "step": the limits and needs of the step function.
struct StepConfig {
  /// The step function of kernels.so (cpu; cuda artifacts may leave it out).
  std::string symbol;
  int64_t maxNumBatchedTokens = 0;
  int64_t maxNumSeqs = 0;
  int64_t workspaceBytes = 0;
  int64_t blockSize = 0;
  /// Rows a token caches per layer and KV head: 2 (its key and its value),
  /// or 1 (its key, whose first features are the value).
  int64_t kvRows = 2;
  /// The KV cache's element type: f32, bf16 or int8 (cpu), bf16 or f16 (cuda).
  std::string kvDtype;
  /// cpu: the kernels multiply with AMX tiles (step.bf16_products "amx"),
  /// so the process must hold the tile state before a step runs.
  bool amxTiles = false;
  /// The KV cache groups; empty: one group of every layer. With G groups
  /// the step's block_tables has G rows a sequence and slot_mapping G slots
  /// a token (StepABI.h), and a block holds the rows of one group's layers.
  std::vector<KvGroupConfig> kvGroups;
  /// step.output: the step's rows are logits (vocab_size wide); the final
  /// hidden states (hidden_size wide) of a model exported without its LM
  /// head, which serves embeddings; or a sequence classifier's logits
  /// (num_labels wide). The last two generate nothing.
  StepOutputKind output = StepOutputKind::Logits;
  /// The LoRA sites, in the order the step numbers them; empty: the
  /// artifact serves no adapter (compiled without --enable-lora).
  std::vector<LoraSite> loraSites;

  int64_t numKvGroups() const { return kvGroups.empty() ? 1 : int64_t(kvGroups.size()); }
};

/// The width of a step's output rows: the vocabulary's logits, the hidden
/// states of a model without its head, or a classifier's labels.
inline int64_t stepOutputSize(const ModelConfig &model, const StepConfig &step) {
  switch (step.output) {
  case StepOutputKind::HiddenStates: return model.hiddenSize;
  case StepOutputKind::ClassLogits: return model.numLabels;
  case StepOutputKind::Logits: break;
  }
  return model.vocabSize;
}

/// A model.llmc directory, verified and loaded: load() checks the manifest's
/// versions and target and every file's size and checksum before it maps the
/// weights and opens kernels.so (cpu) or reads the kernels and step plan
/// (cuda). The mapping and the library live as long as the Artifact.
class Artifact {
public:
  /// Loads the artifact in `directory`; throws Error naming the file and the
  /// fault when anything disagrees with what this runtime expects.
  static std::unique_ptr<Artifact> load(const std::string &directory);
  ~Artifact();
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  const std::string &directory() const { return dir; }
  const TargetConfig &target() const { return targetConfig; }
  const ModelConfig &model() const { return modelConfig; }
  const StepConfig &step() const { return stepConfig; }
  /// kernels.so's step function (null for a cuda artifact).
  LlmcStepFn stepFunction() const { return stepFn; }
  /// A cuda artifact's kernels files by name (kernels.ptx, kernels.cubin,
  /// attention.ptx, attention.cubin, step_plan.json), as verified: the ones
  /// the manifest lists. Empty for a cpu artifact.
  const std::map<std::string, std::string> &deviceFiles() const { return cudaFiles; }
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
  TargetConfig targetConfig;
  ModelConfig modelConfig;
  StepConfig stepConfig;
  void *weightsData = nullptr;
  size_t weightsSize = 0;
  void *kernelsLibrary = nullptr;
  LlmcStepFn stepFn = nullptr;
  std::map<std::string, std::string> cudaFiles;
  std::string tokenizerJson;
  std::string tokenizerConfigJson;
  std::string chatTemplateJinja;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CORE_ARTIFACT_H
