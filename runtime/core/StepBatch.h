//===- StepBatch.h - one step's ragged, paged batch -------------*- C++ -*-===//
#ifndef LLMC_RUNTIME_CORE_STEPBATCH_H
#define LLMC_RUNTIME_CORE_STEPBATCH_H

#include <cstdint>
#include <vector>

namespace llmc::runtime {

class LoraAdapter;

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
  const int32_t *blockTables = nullptr;   // [G * N, maxBlocksPerSeq], G KV cache groups
  const int32_t *slotMapping = nullptr;   // [G * T]
  const int32_t *logitsIndices = nullptr; // [N]
  /// The LoRA adapter each token runs with, an index into loraAdapters (-1:
  /// none); null when no token has one. Only for an artifact with LoRA sites.
  const int32_t *loraIndices = nullptr;                // [T]
  const LoraAdapter *const *loraAdapters = nullptr;    // [numLoraAdapters]
  int64_t numLoraAdapters = 0;
};

/// A step batch that owns its arrays; view() is the StepBatch over them.
struct StepBatchArrays {
  std::vector<int32_t> tokens, positions, cuSeqlensQ, contextLens, blockTables, slotMapping,
      logitsIndices;
  /// Empty when no token runs with a LoRA adapter.
  std::vector<int32_t> loraIndices;
  std::vector<const LoraAdapter *> loraAdapters;
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
    if (!loraIndices.empty()) {
      batch.loraIndices = loraIndices.data();
      batch.loraAdapters = loraAdapters.data();
      batch.numLoraAdapters = static_cast<int64_t>(loraAdapters.size());
    }
    return batch;
  }
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CORE_STEPBATCH_H
