//===- StepInputs.cpp - pack a step's arrays for the GPU ------------------===//
#include "runtime/cuda/StepInputs.h"

#include "runtime/core/Error.h"
#include "runtime/core/KvBlockPool.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace llmc::runtime::cuda {
namespace {
constexpr int64_t kArrayAlignment = 256;
constexpr int64_t kLargestGraphBatch = 256;

int64_t roundUp(int64_t bytes) {
  return (bytes + kArrayAlignment - 1) / kArrayAlignment * kArrayAlignment;
}
} // namespace

std::vector<int64_t> graphBatchSizes(int64_t maxNumSeqs, int64_t maxNumBatchedTokens) {
  std::vector<int64_t> sizes;
  for (int64_t size = 1; size <= kLargestGraphBatch; size *= 2)
    if (size <= maxNumSeqs && size <= maxNumBatchedTokens) sizes.push_back(size);
  return sizes;
}

int64_t graphBatchSizeFor(const StepBatch &batch, const std::vector<int64_t> &sizes) {
  // Every sequence has at least one query token (Model::validate), so T == N
  // means exactly one each.
  if (batch.numTokens != batch.numSeqs) return 0;
  auto size = std::lower_bound(sizes.begin(), sizes.end(), batch.numSeqs);
  return size == sizes.end() ? 0 : *size;
}

StepInputLayout::StepInputLayout(int64_t maxTokens, int64_t maxSeqs, int64_t blockTableWidth,
                                 int64_t blockSize)
    : tokenCapacity(maxTokens), seqCapacity(maxSeqs), width(blockTableWidth),
      positionsPerBlock(blockSize) {
  const int64_t kInt = sizeof(int32_t);
  // Per-sequence arrays, per-token arrays, then the block tables.
  std::pair<Buffer, int64_t> arrays[] = {{Buffer::CuSeqlensQ, (maxSeqs + 1) * kInt},
                                         {Buffer::ContextLens, maxSeqs * kInt},
                                         {Buffer::LogitsIndices, maxSeqs * kInt},
                                         {Buffer::Tokens, maxTokens * kInt},
                                         {Buffer::Positions, maxTokens * kInt},
                                         {Buffer::SlotMapping, maxTokens * kInt},
                                         {Buffer::BlockTables, maxSeqs * blockTableWidth * kInt}};
  for (const auto &[buffer, bytes] : arrays) {
    at(offsets, buffer) = total;
    at(capacities, buffer) = bytes;
    total += roundUp(bytes);
  }
}

PackedStepInputs packStepInputs(const StepBatch &batch, int64_t paddedSeqs,
                                const StepInputLayout &layout, void *staging) {
  int64_t numSeqs = batch.numSeqs, numTokens = batch.numTokens;
  int64_t dummies = std::max<int64_t>(paddedSeqs - numSeqs, 0);
  if (dummies > 0 && numTokens != numSeqs)
    throw Error("step: only a decode batch (one query token per sequence) is padded");
  PackedStepInputs packed;
  packed.numSeqs = numSeqs + dummies;
  packed.numTokens = numTokens + dummies;
  if (packed.numSeqs > layout.maxSeqs() || packed.numTokens > layout.maxTokens())
    throw Error("step: " + std::to_string(packed.numTokens) + " tokens of " +
                std::to_string(packed.numSeqs) + " sequences do not fit the device's " +
                std::to_string(layout.maxTokens()) + " tokens of " +
                std::to_string(layout.maxSeqs()) + " sequences");

  auto array = [&](Buffer buffer) {
    return reinterpret_cast<int32_t *>(static_cast<unsigned char *>(staging) +
                                       layout.offset(buffer));
  };
  auto copy = [](int32_t *to, const int32_t *from, int64_t count) {
    std::copy(from, from + count, to);
  };
  int32_t *tokens = array(Buffer::Tokens), *positions = array(Buffer::Positions);
  int32_t *slots = array(Buffer::SlotMapping), *cuSeqlensQ = array(Buffer::CuSeqlensQ);
  int32_t *contextLens = array(Buffer::ContextLens), *rows = array(Buffer::LogitsIndices);
  int32_t *tables = array(Buffer::BlockTables);
  copy(tokens, batch.tokens, numTokens);
  copy(positions, batch.positions, numTokens);
  copy(slots, batch.slotMapping, numTokens);
  copy(cuSeqlensQ, batch.cuSeqlensQ, numSeqs + 1);
  copy(contextLens, batch.contextLens, numSeqs);
  copy(rows, batch.logitsIndices, numSeqs);

  int64_t width = layout.blockTableWidth();
  std::fill(tables, tables + packed.numSeqs * width, 0);
  for (int64_t seq = 0; seq < numSeqs; ++seq) {
    int64_t queryLen = int64_t(batch.cuSeqlensQ[seq + 1]) - batch.cuSeqlensQ[seq];
    packed.maxQueryLen = std::max(packed.maxQueryLen, queryLen);
    // Only the blocks the context needs: the rest of the caller's row is
    // unchecked and may be wider than the device's.
    int64_t blocks = blocksFor(batch.contextLens[seq], layout.blockSize());
    if (blocks > width)
      throw Error("step: sequence " + std::to_string(seq) + " has " +
                  std::to_string(batch.contextLens[seq]) + " positions, " + std::to_string(blocks) +
                  " blocks, but the device's block tables are " + std::to_string(width) + " wide");
    copy(tables + seq * width, batch.blockTables + seq * batch.maxBlocksPerSeq, blocks);
  }
  for (int64_t dummy = 0; dummy < dummies; ++dummy) {
    int64_t seq = numSeqs + dummy, token = numTokens + dummy;
    tokens[token] = 0;
    positions[token] = 0;
    slots[token] = -1;
    cuSeqlensQ[seq + 1] = static_cast<int32_t>(token + 1);
    contextLens[seq] = 1;
    rows[seq] = static_cast<int32_t>(token);
  }
  packed.bytes =
      layout.offset(Buffer::BlockTables) + packed.numSeqs * width * int64_t(sizeof(int32_t));
  return packed;
}

} // namespace llmc::runtime::cuda
