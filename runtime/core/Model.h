//===- Model.h - a loaded artifact ready to run steps -----------*- C++ -*-===//
#ifndef LLMC_RUNTIME_CORE_MODEL_H
#define LLMC_RUNTIME_CORE_MODEL_H

#include "runtime/core/Artifact.h"
#include "runtime/core/KvBlockPool.h"
#include "runtime/core/StepBatch.h"
#include "runtime/core/StepExecutor.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmc::runtime {

/// How big the KV cache is, in the first of these that is set.
struct ModelOptions {
  /// Threads of the CPU executor, the caller's included; 0 = one per
  /// hardware thread. A GPU's executor uses one: the host only packs inputs.
  unsigned numThreads = 0;
  /// Blocks in the KV cache.
  int64_t numKvBlocks = 0;
  /// Bytes of KV cache (as many whole blocks as fit).
  int64_t kvCacheBytes = 0;
  /// A fraction, in (0, 1], of the memory still available once the weights
  /// and the step's workspace are accounted for (as vLLM's
  /// gpu_memory_utilization). On the CPU: fraction x (MemAvailable - weights
  /// not yet resident). On a GPU: fraction x the device memory cuMemGetInfo
  /// reports free once the weights, workspace and step buffers are allocated;
  /// with none of these options set, 0.9 of it. The workspace is planned at
  /// compile time, so no profiling step is needed to know the step's own
  /// memory.
  double memoryFraction = 0;
  /// The longest sequence (prompt and output) a step will carry; 0 = the
  /// model's positions, or the whole KV cache when it has none. A GPU sizes
  /// its device block tables by it, as vLLM does by max_model_len.
  int64_t maxModelLen = 0;
};

/// A compiled model ready to run steps: the artifact, and the StepExecutor
/// of its target (CpuExecutor, CudaExecutor), which holds the KV cache and
/// the step's workspace. Model checks every batch against the step's limits
/// and the KV cache before the executor runs it. step() is not reentrant:
/// one step at a time per Model.
class Model {
public:
  /// The KV cache budget on the CPU when ModelOptions sets none.
  static constexpr int64_t kDefaultKvCacheBytes = int64_t(1) << 30;
  /// The fraction of free device memory the KV cache takes on a GPU when
  /// ModelOptions sets none.
  static constexpr double kDefaultDeviceMemoryFraction = 0.9;

  /// Loads the artifact in `artifactDir` (see Artifact::load) and sets it up.
  /// A cuda artifact needs an NVIDIA driver and GPU: without them this throws
  /// Error "<dir> targets CUDA (<arch>, <dtype>): no NVIDIA driver on this
  /// machine (...)" or "...: no CUDA device (...)".
  static std::unique_ptr<Model> open(const std::string &artifactDir, const ModelOptions &options);
  Model(std::unique_ptr<Artifact> artifact, const ModelOptions &options);

  const ModelConfig &config() const { return loaded->model(); }
  const StepConfig &stepConfig() const { return loaded->step(); }
  const Artifact &artifact() const { return *loaded; }
  /// Host threads a step runs on (one for a GPU's: the host only packs inputs).
  unsigned numThreads() const { return executor->numThreads(); }
  /// body(i) for i in [0, n) on those threads (StepExecutor::parallelFor).
  void parallelFor(int64_t n, const std::function<void(int64_t)> &body) {
    executor->parallelFor(n, body);
  }
  KvBlockPool &kvPool() { return executor->kvPool(); }
  const KvBlockPool &kvPool() const { return executor->kvPool(); }
  /// One line for the start-up log: the KV cache's blocks, size and where
  /// the size came from.
  const std::string &kvCacheSummary() const { return kvSummary; }
  /// The most positions one sequence of a step may have beyond the KV
  /// cache's own limit (a GPU's block tables, sized by
  /// ModelOptions::maxModelLen); 0 when there is none.
  int64_t maxSequenceLength() const { return executor->maxSequenceLength(); }

  /// Whether the step returns final hidden states (an embedding model's)
  /// instead of logits: the model then serves embeddings, not generation.
  bool outputsHiddenStates() const {
    return stepConfig().output == StepOutputKind::HiddenStates;
  }
  /// Whether the step returns a sequence classifier's logits: the model then
  /// classifies prompts, and generates nothing.
  bool outputsClassLogits() const { return stepConfig().output == StepOutputKind::ClassLogits; }
  /// Whether the model serves pooling requests (embed, classify) only.
  bool pools() const { return stepConfig().output != StepOutputKind::Logits; }
  /// The width of a step's output row: vocabSize, hiddenSize or numLabels.
  int64_t outputSize() const { return stepOutputSize(config(), stepConfig()); }

  /// Runs the step function over `batch` and writes [numSeqs, outputSize()]
  /// rows: logits, or hidden states. Throws Error, before running anything,
  /// when the batch breaks the step's limits or would index outside the KV
  /// cache or the vocabulary.
  void step(const StepBatch &batch, float *logits);
  /// Runs the step as step() does and writes each sequence's greedy token
  /// (runtime/core/Argmax.h) to `tokens`: picked on the GPU where the
  /// executor can (greedyOnDevice()), so that [numSeqs] ids come back
  /// instead of [numSeqs, vocabSize] logits; from host logits elsewhere.
  /// Throws Error for a model that outputs hidden states.
  void stepGreedy(const StepBatch &batch, int32_t *tokens);
  bool greedyOnDevice() const { return executor->greedyOnDevice(); }

private:
  void validate(const StepBatch &batch) const;
  /// The batch's LoRA adapters and each token's index into them.
  void validateLora(const StepBatch &batch) const;

  std::unique_ptr<Artifact> loaded;
  std::string kvSummary;
  std::unique_ptr<StepExecutor> executor;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CORE_MODEL_H
