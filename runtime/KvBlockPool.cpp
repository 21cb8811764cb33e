//===- KvBlockPool.cpp - the paged KV cache and its blocks ----------------===//
#include "runtime/KvBlockPool.h"

#include "runtime/Error.h"

#include <limits>
#include <string>

namespace llmc::runtime {

KvBlockPool::KvBlockPool(const KvCacheShape &shape) : cacheShape(shape) {
  if (shape.numBlocks < 1 || shape.blockSize < 1)
    throw Error("the KV cache needs at least one block of at least one position");
  // Slots (block * blockSize + offset) are int32 in the step ABI.
  if (shape.numBlocks > std::numeric_limits<int32_t>::max() / shape.blockSize)
    throw Error("the KV cache cannot have " + std::to_string(shape.numBlocks) +
                " blocks: their slots do not fit in int32");
  memory = AlignedBuffer(static_cast<size_t>(shape.numElements()) * sizeof(float));
  freeAll();
}

std::optional<KvBlockPool::BlockId> KvBlockPool::allocate() {
  if (freeList.empty()) return std::nullopt;
  BlockId block = freeList.back();
  freeList.pop_back();
  allocated[block] = true;
  return block;
}

void KvBlockPool::free(BlockId block) {
  if (block < 0 || block >= cacheShape.numBlocks || !allocated[block])
    throw Error("KV block " + std::to_string(block) + " is not allocated");
  allocated[block] = false;
  freeList.push_back(block);
}

void KvBlockPool::freeAll() {
  // Blocks go out in increasing id order: a fresh pool is predictable.
  freeList.clear();
  for (int64_t block = cacheShape.numBlocks - 1; block >= 0; --block)
    freeList.push_back(static_cast<BlockId>(block));
  allocated.assign(cacheShape.numBlocks, false);
}

int32_t slotOf(const std::vector<KvBlockPool::BlockId> &blockTable, int64_t position,
               int64_t blockSize) {
  int64_t index = position / blockSize;
  if (position < 0 || index >= static_cast<int64_t>(blockTable.size()))
    throw Error("position " + std::to_string(position) + " is outside the sequence's " +
                std::to_string(blockTable.size()) + " KV blocks");
  return static_cast<int32_t>(blockTable[index] * blockSize + position % blockSize);
}

} // namespace llmc::runtime
