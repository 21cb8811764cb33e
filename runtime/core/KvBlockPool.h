//===- KvBlockPool.h - the paged KV cache and its blocks --------*- C++ -*-===//
#ifndef LLMC_RUNTIME_CORE_KVBLOCKPOOL_H
#define LLMC_RUNTIME_CORE_KVBLOCKPOOL_H

#include "runtime/core/KvBlockId.h"

#include <cstdint>
#include <vector>

namespace llmc::runtime {

/// The extents of the KV cache: [numLayers, numBlocks, kvRows, numKvHeads,
/// blockSize, row] elements of elementBytes each (f32 on the CPU, bf16 or
/// f16 on a GPU, or int8 codes), K at index 0 of the third axis and V at 1;
/// with one row per token (kvRows 1) the keys alone, whose first features
/// are the values. A row is headDim elements, and for int8 then the row's
/// f32 scale.
struct KvCacheShape {
  int64_t numLayers = 0;
  int64_t numBlocks = 0;
  int64_t kvRows = 2;
  int64_t numKvHeads = 0;
  int64_t blockSize = 0;
  int64_t headDim = 0;
  int64_t elementBytes = 4;
  /// Bytes after each row's headDim elements: 4 (the scale) for int8, else 0.
  int64_t rowScaleBytes = 0;

  /// The elements of one row, its scale's bytes included (elementBytes is 1
  /// when there is a scale).
  int64_t rowExtent() const { return headDim + rowScaleBytes; }
  /// The six extents in the step ABI's order.
  std::vector<int64_t> extents() const {
    return {numLayers, numBlocks, kvRows, numKvHeads, blockSize, rowExtent()};
  }
  /// Elements of one block in one layer, K and V (K alone with one row a token).
  int64_t elementsPerLayerBlock() const { return kvRows * numKvHeads * blockSize * rowExtent(); }
  /// Bytes of one block over all layers.
  int64_t bytesPerBlock() const { return numLayers * elementsPerLayerBlock() * elementBytes; }
  int64_t numElements() const { return numLayers * numBlocks * elementsPerLayerBlock(); }
  int64_t numBytes() const { return numElements() * elementBytes; }
};

/// `shape`, or Error if the step ABI cannot address it: no block, or slots
/// (block * blockSize + offset) past int32.
const KvCacheShape &checkedKvCacheShape(const KvCacheShape &shape);

/// The memory that holds a KV cache (host memory: runtime/cpu/HostKvStorage.h;
/// a GPU's: the CUDA executor's): it copies byte ranges within itself, for
/// KvBlockPool::copyBlock, and to and from host memory, for swapping. A copy
/// is done, or ordered before the next step, when the call returns.
class KvBlockStorage {
public:
  virtual ~KvBlockStorage() = default;
  /// Copies `bytes` bytes at byte offset `from` of the pool to offset `to`.
  virtual void copyBytes(int64_t from, int64_t to, int64_t bytes) = 0;
  /// Copies `bytes` bytes at byte offset `from` of the pool to `host`.
  virtual void copyToHost(int64_t from, void *host, int64_t bytes) = 0;
  /// Copies `bytes` bytes from `host` to byte offset `to` of the pool.
  virtual void copyFromHost(const void *host, int64_t to, int64_t bytes) = 0;
  /// Backs all of the pool's memory now, where it would be backed a page at
  /// a time as blocks are first written. Device memory is backed already.
  virtual void makeResident() {}
};

/// The KV cache as the engine sees it, indexed by block id: its shape, and
/// block copies in the storage that holds it. Which block belongs to which
/// sequence is the engine's BlockManager's business; this class only knows
/// where a block's bytes are and copies them.
class KvBlockPool {
public:
  /// A pool of `shape` in `storage`, which outlives it. Throws Error for a
  /// shape the step ABI cannot address.
  KvBlockPool(const KvCacheShape &shape, KvBlockStorage &storage);

  const KvCacheShape &shape() const { return cacheShape; }
  int64_t numBlocks() const { return cacheShape.numBlocks; }
  int64_t blockSize() const { return cacheShape.blockSize; }
  /// Backs all of the cache's memory now (KvBlockStorage::makeResident).
  void makeResident() { storage.makeResident(); }
  /// Copies block `from` into block `to` in every layer (copy-on-write).
  /// Throws Error for an id outside the pool.
  void copyBlock(BlockId from, BlockId to);
  /// Copies block `block` of every layer to `host` (shape().bytesPerBlock()
  /// bytes, layer after layer), and back. Throw Error for an id outside the
  /// pool.
  void saveBlock(BlockId block, void *host);
  void restoreBlock(const void *host, BlockId block);

private:
  void checkBlock(BlockId block) const;
  /// Bytes of one block in one layer, and the byte offset of `block` in `layer`.
  int64_t layerBlockBytes() const;
  int64_t offsetOf(int64_t layer, BlockId block) const;

  KvCacheShape cacheShape;
  KvBlockStorage &storage;
};

/// The slot of `position` for a sequence with this block table:
/// table[position / blockSize] * blockSize + position % blockSize. Throws
/// Error when the table does not reach the position.
int32_t slotOf(const std::vector<BlockId> &blockTable, int64_t position,
               int64_t blockSize);

/// How many blocks hold `numPositions` positions.
inline int64_t blocksFor(int64_t numPositions, int64_t blockSize) {
  return (numPositions + blockSize - 1) / blockSize;
}

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CORE_KVBLOCKPOOL_H
