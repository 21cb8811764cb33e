//===- KvBlockPoolTest.cpp - the KV cache's block allocator and slots -----===//
#include "runtime/core/Error.h"
#include "runtime/core/KvBlockPool.h"
#include "runtime/core/KvSwapSpace.h"
#include "runtime/cpu/HostKvStorage.h"

#include <gtest/gtest.h>

#include <cstdint>

using namespace llmc::runtime;

namespace {
KvCacheShape smallShape(int64_t numBlocks) {
  KvCacheShape shape;
  shape.numLayers = 2;
  shape.numBlocks = numBlocks;
  shape.numKvHeads = 3;
  shape.blockSize = 4;
  shape.headDim = 8;
  return shape;
}

float *floats(const HostKvStorage &storage) { return static_cast<float *>(storage.data()); }

TEST(KvBlockPool, MemoryIsAlignedZeroedAndSized) {
  HostKvStorage storage(smallShape(5));
  KvBlockPool pool(smallShape(5), storage);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(storage.data()) % 64, 0u);
  EXPECT_EQ(pool.shape().numElements(), 2 * 5 * 2 * 3 * 4 * 8);
  for (int64_t i = 0; i < pool.shape().numElements(); ++i) ASSERT_EQ(floats(storage)[i], 0.0f);
  std::vector<int64_t> expected = {2, 5, 2, 3, 4, 8};
  EXPECT_EQ(pool.shape().extents(), expected);
}

TEST(KvBlockPool, CopyBlockCopiesEveryLayerAndNothingElse) {
  HostKvStorage storage(smallShape(3));
  KvBlockPool pool(smallShape(3), storage);
  int64_t perLayerBlock = 2 * 3 * 4 * 8;
  for (int64_t i = 0; i < pool.shape().numElements(); ++i) floats(storage)[i] = float(i);
  pool.copyBlock(2, 0);
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t block = 0; block < 3; ++block)
      for (int64_t i = 0; i < perLayerBlock; ++i) {
        int64_t at = (layer * 3 + block) * perLayerBlock + i;
        int64_t source = block == 0 ? (layer * 3 + 2) * perLayerBlock + i : at;
        ASSERT_EQ(floats(storage)[at], float(source)) << "layer " << layer << " block " << block;
      }
  EXPECT_EQ(pool.shape().bytesPerBlock(), 2 * perLayerBlock * 4);
  EXPECT_THROW(pool.copyBlock(0, 3), Error);
  EXPECT_THROW(pool.copyBlock(-1, 0), Error);
}

TEST(KvBlockPool, AnInt8PoolsRowsCarryTheirScale) {
  KvCacheShape shape = smallShape(3);
  shape.elementBytes = 1;
  shape.rowScaleBytes = 4;
  HostKvStorage storage(shape);
  KvBlockPool pool(shape, storage);
  std::vector<int64_t> expected = {2, 3, 2, 3, 4, 12};
  EXPECT_EQ(pool.shape().extents(), expected);
  int64_t perLayerBlock = 2 * 3 * 4 * 12;
  EXPECT_EQ(pool.shape().bytesPerBlock(), 2 * perLayerBlock);
  auto *bytes = static_cast<unsigned char *>(storage.data());
  for (int64_t i = 0; i < shape.numBytes(); ++i) bytes[i] = static_cast<unsigned char>(i * 7);
  pool.copyBlock(1, 2);
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t i = 0; i < perLayerBlock; ++i)
      ASSERT_EQ(bytes[(layer * 3 + 2) * perLayerBlock + i],
                static_cast<unsigned char>(((layer * 3 + 1) * perLayerBlock + i) * 7));
  shape.elementBytes = 4;
  EXPECT_THROW(checkedKvCacheShape(shape), Error);
}

TEST(KvBlockPool, APoolOfOneRowPerTokenHoldsHalfTheBytes) {
  KvCacheShape shape = smallShape(3);
  shape.kvRows = 1;
  HostKvStorage storage(shape);
  KvBlockPool pool(shape, storage);
  std::vector<int64_t> expected = {2, 3, 1, 3, 4, 8};
  EXPECT_EQ(pool.shape().extents(), expected);
  int64_t perLayerBlock = 3 * 4 * 8;
  EXPECT_EQ(pool.shape().bytesPerBlock(), 2 * perLayerBlock * 4);
  EXPECT_EQ(pool.shape().bytesPerBlock() * 2, smallShape(3).bytesPerBlock());
  for (int64_t i = 0; i < pool.shape().numElements(); ++i) floats(storage)[i] = float(i);
  pool.copyBlock(0, 1);
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t i = 0; i < perLayerBlock; ++i)
      ASSERT_EQ(floats(storage)[(layer * 3 + 1) * perLayerBlock + i],
                float((layer * 3 + 0) * perLayerBlock + i));
}

TEST(KvSwapSpace, ABlockComesBackBitForBitInAnotherBlock) {
  HostKvStorage storage(smallShape(3));
  KvBlockPool pool(smallShape(3), storage);
  for (int64_t i = 0; i < pool.shape().numElements(); ++i) floats(storage)[i] = float(i);
  KvSwapSpace swap(pool, 4);
  EXPECT_EQ(swap.slotBytes(), pool.shape().bytesPerBlock());
  EXPECT_GT(swap.measureRoundTrip(pool, 2), 0.0);
  swap.swapOut(pool, 1, 3);
  int64_t perLayerBlock = 2 * 3 * 4 * 8;
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t i = 0; i < perLayerBlock; ++i) floats(storage)[(layer * 3 + 1) * perLayerBlock + i] = -1;
  swap.swapIn(pool, 3, 0);
  for (int64_t layer = 0; layer < 2; ++layer)
    for (int64_t i = 0; i < perLayerBlock; ++i) {
      ASSERT_EQ(floats(storage)[(layer * 3) * perLayerBlock + i],
                float((layer * 3 + 1) * perLayerBlock + i)) << "layer " << layer;
      // The measured round trip gave block 2 its own bytes back.
      ASSERT_EQ(floats(storage)[(layer * 3 + 2) * perLayerBlock + i],
                float((layer * 3 + 2) * perLayerBlock + i));
    }
  EXPECT_THROW(swap.swapOut(pool, 0, 4), Error);
  EXPECT_THROW(swap.swapIn(pool, 0, 3), Error);
  EXPECT_THROW(KvSwapSpace(pool, -1), Error);
}

TEST(KvBlockPool, RefusesAnEmptyPool) {
  EXPECT_THROW(HostKvStorage(smallShape(0)), Error);
  EXPECT_THROW(checkedKvCacheShape(smallShape(0)), Error);
}

TEST(KvBlockPool, SlotOfFollowsTheBlockTable) {
  std::vector<int32_t> table = {7, 2, 5};
  EXPECT_EQ(slotOf(table, 0, 4), 28);
  EXPECT_EQ(slotOf(table, 3, 4), 31);
  EXPECT_EQ(slotOf(table, 4, 4), 8);
  EXPECT_EQ(slotOf(table, 9, 4), 21);
  EXPECT_EQ(slotOf(table, 11, 4), 23);
  EXPECT_THROW(slotOf(table, 12, 4), Error);
  EXPECT_THROW(slotOf(table, -1, 4), Error);
}

TEST(KvBlockPool, BlocksForRoundsUp) {
  EXPECT_EQ(blocksFor(0, 16), 0);
  EXPECT_EQ(blocksFor(1, 16), 1);
  EXPECT_EQ(blocksFor(16, 16), 1);
  EXPECT_EQ(blocksFor(17, 16), 2);
}
} // namespace
