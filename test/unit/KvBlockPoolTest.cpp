//===- KvBlockPoolTest.cpp - the KV cache's block allocator and slots -----===//
#include "runtime/Error.h"
#include "runtime/KvBlockPool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>

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

TEST(KvBlockPool, MemoryIsAlignedZeroedAndSized) {
  KvBlockPool pool(smallShape(5));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pool.data()) % 64, 0u);
  EXPECT_EQ(pool.shape().numElements(), 2 * 5 * 2 * 3 * 4 * 8);
  for (int64_t i = 0; i < pool.shape().numElements(); ++i) ASSERT_EQ(pool.data()[i], 0.0f);
  std::vector<int64_t> expected = {2, 5, 2, 3, 4, 8};
  EXPECT_EQ(pool.shape().extents(), expected);
}

TEST(KvBlockPool, AllocatesEveryBlockOnceThenRunsOut) {
  KvBlockPool pool(smallShape(4));
  EXPECT_EQ(pool.numFree(), 4);
  std::set<int32_t> handedOut;
  for (int i = 0; i < 4; ++i) {
    std::optional<int32_t> block = pool.allocate();
    ASSERT_TRUE(block.has_value());
    EXPECT_GE(*block, 0);
    EXPECT_LT(*block, 4);
    handedOut.insert(*block);
  }
  EXPECT_EQ(handedOut.size(), 4u);
  EXPECT_EQ(pool.numFree(), 0);
  EXPECT_FALSE(pool.allocate().has_value());
}

TEST(KvBlockPool, FreedBlocksComeBack) {
  KvBlockPool pool(smallShape(2));
  int32_t first = *pool.allocate();
  int32_t second = *pool.allocate();
  EXPECT_FALSE(pool.allocate().has_value());
  pool.free(first);
  EXPECT_EQ(pool.numFree(), 1);
  EXPECT_EQ(*pool.allocate(), first);
  pool.free(second);
  pool.free(first);
  EXPECT_EQ(pool.numFree(), 2);
}

TEST(KvBlockPool, FreshPoolHandsOutIncreasingIds) {
  KvBlockPool pool(smallShape(3));
  EXPECT_EQ(*pool.allocate(), 0);
  EXPECT_EQ(*pool.allocate(), 1);
  pool.freeAll();
  EXPECT_EQ(pool.numFree(), 3);
  EXPECT_EQ(*pool.allocate(), 0);
}

TEST(KvBlockPool, RefusesToFreeWhatIsNotAllocated) {
  KvBlockPool pool(smallShape(2));
  int32_t block = *pool.allocate();
  pool.free(block);
  EXPECT_THROW(pool.free(block), Error);
  EXPECT_THROW(pool.free(-1), Error);
  EXPECT_THROW(pool.free(2), Error);
  EXPECT_EQ(pool.numFree(), 2);
}

TEST(KvBlockPool, RefusesAnEmptyPool) { EXPECT_THROW(KvBlockPool(smallShape(0)), Error); }

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
