//===- StepInputs.h - a step's arrays as the GPU receives them --*- C++ -*-===//
//
// The step arrays travel to the GPU in one copy from one pinned staging
// buffer laid out as their device copy is. Decode steps are padded to the
// batch sizes CUDA graphs are captured for. Plain C++, tested without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDA_STEPINPUTS_H
#define LLMC_RUNTIME_CUDA_STEPINPUTS_H

#include "runtime/core/Model.h"
#include "runtime/cuda/StepPlan.h"

#include <cstdint>
#include <vector>

namespace llmc::runtime::cuda {

/// The batch sizes CUDA graphs are captured for: 1, 2, 4, ..., 256, those
/// within max_num_seqs and max_num_batched_tokens.
std::vector<int64_t> graphBatchSizes(int64_t maxNumSeqs, int64_t maxNumBatchedTokens);

/// The graph batch size `batch` runs as: the smallest of `sizes` (ascending)
/// that holds it when it is decode-only (one query token per sequence);
/// 0 when it is not decode-only or is larger than every size.
int64_t graphBatchSizeFor(const StepBatch &batch, const std::vector<int64_t> &sizes);

/// Where each step input sits in the staging buffer and in its device copy:
/// every array at a 256-byte aligned offset, sized for the model's limits,
/// block_tables ([maxSeqs, blockTableWidth]) last so that a step's inputs are
/// one prefix of the buffer.
class StepInputLayout {
public:
  StepInputLayout(int64_t maxTokens, int64_t maxSeqs, int64_t blockTableWidth, int64_t blockSize);

  int64_t maxTokens() const { return tokenCapacity; }
  int64_t maxSeqs() const { return seqCapacity; }
  int64_t blockTableWidth() const { return width; }
  /// Positions per KV block.
  int64_t blockSize() const { return positionsPerBlock; }
  /// The byte offset of a step input buffer (tokens ... logits_indices).
  int64_t offset(Buffer buffer) const { return at(offsets, buffer); }
  /// The bytes of a step input buffer at the model's limits.
  int64_t capacity(Buffer buffer) const { return at(capacities, buffer); }
  int64_t totalBytes() const { return total; }

private:
  int64_t tokenCapacity, seqCapacity, width, positionsPerBlock;
  PerBuffer<int64_t> offsets{}, capacities{};
  int64_t total = 0;
};

/// What packStepInputs wrote.
struct PackedStepInputs {
  int64_t numTokens = 0;   // T, dummies included
  int64_t numSeqs = 0;     // N, dummies included
  int64_t maxQueryLen = 0; // the longest query
  /// The prefix of the staging buffer to copy: through the last block table row.
  int64_t bytes = 0;
};

/// Writes `batch` into `staging` (layout.totalBytes() bytes, 4-byte aligned)
/// as the device reads it: block tables re-laid at the layout's width (the
/// blocks each context needs, zeros after them) and, when paddedSeqs exceeds
/// batch.numSeqs (decode batches only), dummy sequences after the real ones:
/// token 0 at position 0, slot -1 (nothing is written), context length 1, a
/// block table of zeros and their own row for logits. Throws Error when a
/// sequence needs more blocks than the width, or the padded batch does not
/// fit the layout.
PackedStepInputs packStepInputs(const StepBatch &batch, int64_t paddedSeqs,
                                const StepInputLayout &layout, void *staging);

} // namespace llmc::runtime::cuda

#endif // LLMC_RUNTIME_CUDA_STEPINPUTS_H
