//===- Model.h - a loaded artifact ready to run steps -----------*- C++ -*-===//
#ifndef LLMC_RUNTIME_MODEL_H
#define LLMC_RUNTIME_MODEL_H

#include "runtime/AlignedBuffer.h"
#include "runtime/Artifact.h"
#include "runtime/CpuDevice.h"
#include "runtime/KvBlockPool.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmc::runtime {

/// One step's ragged, paged batch (StepABI.h explains each array). It points
/// at the caller's arrays; nothing is copied.
struct StepBatch {
  int64_t numTokens = 0;       // T
  int64_t numSeqs = 0;         // N
  int64_t maxBlocksPerSeq = 0; // the width of blockTables
  const int32_t *tokens = nullptr;        // [T]
  const int32_t *positions = nullptr;     // [T]
  const int32_t *cuSeqlensQ = nullptr;    // [N + 1]
  const int32_t *contextLens = nullptr;   // [N]
  const int32_t *blockTables = nullptr;   // [N, maxBlocksPerSeq]
  const int32_t *slotMapping = nullptr;   // [T]
  const int32_t *logitsIndices = nullptr; // [N]
};

/// A step batch that owns its arrays; view() is the StepBatch over them.
struct StepBatchArrays {
  std::vector<int32_t> tokens, positions, cuSeqlensQ, contextLens, blockTables, slotMapping,
      logitsIndices;
  int64_t maxBlocksPerSeq = 0;

  /// T is the size of `tokens`, N the size of `contextLens`.
  StepBatch view() const {
    StepBatch batch;
    batch.numTokens = static_cast<int64_t>(tokens.size());
    batch.numSeqs = static_cast<int64_t>(contextLens.size());
    batch.maxBlocksPerSeq = maxBlocksPerSeq;
    batch.tokens = tokens.data();
    batch.positions = positions.data();
    batch.cuSeqlensQ = cuSeqlensQ.data();
    batch.contextLens = contextLens.data();
    batch.blockTables = blockTables.data();
    batch.slotMapping = slotMapping.data();
    batch.logitsIndices = logitsIndices.data();
    return batch;
  }
};

/// How big the KV cache is, in the first of these that is set.
struct ModelOptions {
  /// Threads of the CPU device, the caller's included; 0 = one per hardware
  /// thread. A CUDA model's CPU device has one: the host only packs inputs.
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

/// A model that runs on an accelerator rather than the host CPU (a CUDA GPU:
/// runtime/cuda/CudaModel.h). It holds the device's copies of the weights,
/// the workspace and the KV pool, whose block copies it makes.
class AcceleratorModel : public KvBlockStorage {
public:
  /// The KV pool it allocated.
  virtual const KvCacheShape &kvShape() const = 0;
  /// The most positions one sequence of a step may have.
  virtual int64_t maxSequenceLength() const = 0;
  /// Runs a batch Model::validate accepted and writes [numSeqs, vocabSize]
  /// logits to host memory.
  virtual void step(const StepBatch &batch, float *logits) = 0;
};

/// A compiled model with what running it needs: the artifact, the CPU device,
/// the KV cache and the step's workspace; for a cuda artifact, the GPU's
/// (an AcceleratorModel). step() is not reentrant: one step at a time per
/// Model.
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
  CpuDevice &device() { return cpu; }
  KvBlockPool &kvPool() { return kvCache; }
  const KvBlockPool &kvPool() const { return kvCache; }
  /// One line for the start-up log: the KV cache's blocks, size and where
  /// the size came from.
  const std::string &kvCacheSummary() const { return kvSummary; }
  /// The most positions one sequence of a step may have beyond the KV
  /// cache's own limit (a GPU's block tables, sized by
  /// ModelOptions::maxModelLen); 0 when there is none.
  int64_t maxSequenceLength() const { return accelerator ? accelerator->maxSequenceLength() : 0; }

  /// Runs the step function over `batch` and writes [numSeqs, vocabSize]
  /// logits. Throws Error, before running anything, when the batch breaks the
  /// step's limits or would index outside the KV cache or the vocabulary.
  void step(const StepBatch &batch, float *logits);

private:
  void validate(const StepBatch &batch) const;

  std::unique_ptr<Artifact> loaded;
  CpuDevice cpu;
  AlignedBuffer workspace; // cpu artifacts
  std::string kvSummary;
  std::unique_ptr<AcceleratorModel> accelerator; // cuda artifacts
  KvBlockPool kvCache;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_MODEL_H
