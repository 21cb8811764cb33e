//===- KvBlockPool.cpp - the paged KV cache and its blocks ----------------===//
#include "runtime/core/KvBlockPool.h"

#include "runtime/core/Error.h"

#include <limits>
#include <string>

namespace llmc::runtime {

const KvCacheShape &checkedKvCacheShape(const KvCacheShape &shape) {
  if (shape.numBlocks < 1 || shape.blockSize < 1)
    throw Error("the KV cache needs at least one block of at least one position");
  if (shape.rowScaleBytes != 0 && shape.elementBytes != 1)
    throw Error("only a KV cache of bytes (int8) has a scale after each row");
  // Slots (block * blockSize + offset) are int32 in the step ABI.
  if (shape.numBlocks > std::numeric_limits<int32_t>::max() / shape.blockSize)
    throw Error("the KV cache cannot have " + std::to_string(shape.numBlocks) +
                " blocks: their slots do not fit in int32");
  return shape;
}

KvBlockPool::KvBlockPool(const KvCacheShape &shape, KvBlockStorage &storage)
    : cacheShape(checkedKvCacheShape(shape)), storage(storage) {}

void KvBlockPool::checkBlock(BlockId block) const {
  if (block < 0 || block >= cacheShape.numBlocks)
    throw Error("KV block " + std::to_string(block) + " is not in the pool of " +
                std::to_string(cacheShape.numBlocks));
}

// [layers, blocks, 2, heads, blockSize, row]: a block is one run of bytes per
// layer.
int64_t KvBlockPool::layerBlockBytes() const {
  return cacheShape.elementsPerLayerBlock() * cacheShape.elementBytes;
}

int64_t KvBlockPool::offsetOf(int64_t layer, BlockId block) const {
  return (layer * cacheShape.numBlocks + block) * layerBlockBytes();
}

void KvBlockPool::copyBlock(BlockId from, BlockId to) {
  checkBlock(from);
  checkBlock(to);
  for (int64_t layer = 0; layer < cacheShape.numLayers; ++layer)
    storage.copyBytes(offsetOf(layer, from), offsetOf(layer, to), layerBlockBytes());
}

void KvBlockPool::saveBlock(BlockId block, void *host) {
  checkBlock(block);
  auto *bytes = static_cast<unsigned char *>(host);
  for (int64_t layer = 0; layer < cacheShape.numLayers; ++layer)
    storage.copyToHost(offsetOf(layer, block), bytes + layer * layerBlockBytes(),
                       layerBlockBytes());
}

void KvBlockPool::restoreBlock(const void *host, BlockId block) {
  checkBlock(block);
  auto *bytes = static_cast<const unsigned char *>(host);
  for (int64_t layer = 0; layer < cacheShape.numLayers; ++layer)
    storage.copyFromHost(bytes + layer * layerBlockBytes(), offsetOf(layer, block),
                         layerBlockBytes());
}

int32_t slotOf(const std::vector<BlockId> &blockTable, int64_t position,
               int64_t blockSize) {
  int64_t index = position / blockSize;
  if (position < 0 || index >= static_cast<int64_t>(blockTable.size()))
    throw Error("position " + std::to_string(position) + " is outside the sequence's " +
                std::to_string(blockTable.size()) + " KV blocks");
  return static_cast<int32_t>(blockTable[index] * blockSize + position % blockSize);
}

} // namespace llmc::runtime
