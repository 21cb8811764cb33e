//===- KvCacheCoordinatorTest.cpp - blocks of several KV cache groups ------===//
//
// A global group (no window) beside a local one (a window of 8 keys), in
// blocks of 4 tokens: what Gemma-2's layers compile to.
//
//===----------------------------------------------------------------------===//
#include "runtime/engine/KvCacheCoordinator.h"

#include "runtime/core/Error.h"

#include <gtest/gtest.h>

namespace llmc::runtime {
namespace {

constexpr int64_t kGlobal = 0, kLocal = 1;

std::vector<int32_t> tokenIds(int32_t first, int32_t count) {
  std::vector<int32_t> tokens(count);
  for (int32_t i = 0; i < count; ++i) tokens[i] = first + i;
  return tokens;
}

/// A sequence that computed `tokens`, then released out of its window.
SequenceKv computed(KvCacheCoordinator &kv, const std::vector<int32_t> &tokens) {
  SequenceKv seq = kv.emptySequence();
  std::vector<BlockCopy> copies;
  EXPECT_TRUE(kv.appendSlots(seq, tokens, static_cast<int64_t>(tokens.size()), copies));
  kv.releaseOutOfWindow(seq);
  return seq;
}

TEST(KvCacheCoordinatorTest, TheLocalGroupGivesBackWhatFallsOutOfItsWindow) {
  BlockManager blocks(32, 4, /*enablePrefixCaching=*/false);
  KvCacheCoordinator kv(blocks, {0, 8});
  SequenceKv seq = computed(kv, tokenIds(0, 21));
  // The next query, at position 21, sees keys 14 to 21: blocks 3 to 5.
  EXPECT_EQ(seq.groups[kGlobal].numHeld(), 6);
  EXPECT_EQ(seq.groups[kLocal].numReleased, 3);
  EXPECT_EQ(seq.groups[kLocal].numHeld(), 3);
  EXPECT_EQ(seq.numHeld(), 9);
  EXPECT_EQ(blocks.numHeld(), 9);
  // The groups never share a block: each layer's rows are its group's.
  for (BlockId local : seq.groups[kLocal].table)
    if (local != kReleasedBlock)
      EXPECT_EQ(std::count(seq.groups[kGlobal].table.begin(), seq.groups[kGlobal].table.end(),
                           local),
                0);
  kv.release(seq);
  EXPECT_EQ(blocks.numHeld(), 0);
}

TEST(KvCacheCoordinatorTest, AppendingTakesBlocksForEveryGroupOrForNone) {
  BlockManager blocks(5, 4, false);
  KvCacheCoordinator kv(blocks, {0, 8});
  SequenceKv seq = kv.emptySequence();
  std::vector<BlockCopy> copies;
  auto tokens = tokenIds(0, 12);
  EXPECT_EQ(kv.blocksNeeded(seq, 12), 6);
  EXPECT_FALSE(kv.appendSlots(seq, tokens, 12, copies)); // 6 blocks, 5 in the pool
  EXPECT_EQ(seq.numTokens(), 0);
  EXPECT_EQ(seq.numHeld(), 0);
  EXPECT_EQ(blocks.numAvailable(), 5);
  EXPECT_TRUE(kv.appendSlots(seq, tokens, 8, copies));
  EXPECT_EQ(seq.numHeld(), 4);
  EXPECT_EQ(seq.numTokens(), 8);
}

TEST(KvCacheCoordinatorTest, APrefixHitTakesTheLocalGroupsWindowOnly) {
  BlockManager blocks(32, 4, /*enablePrefixCaching=*/true);
  KvCacheCoordinator kv(blocks, {0, 8});
  auto prompt = tokenIds(100, 30);
  SequenceKv first = computed(kv, prompt);
  kv.release(first);

  SequenceKv second = kv.emptySequence();
  // Seven whole blocks come before the prompt's last token; the query after
  // them, at position 28, sees keys 21 to 28: the local group takes blocks 5 and 6.
  EXPECT_EQ(kv.matchPrefix(second, prompt), 28);
  EXPECT_EQ(second.groups[kGlobal].numHeld(), 7);
  EXPECT_EQ(second.groups[kLocal].numReleased, 5);
  EXPECT_EQ(second.groups[kLocal].numHeld(), 2);
  EXPECT_EQ(second.groups[kLocal].fullBlockHashes.size(), 7u);
  // Each group finds its own blocks, not the other's with the same tokens.
  EXPECT_NE(second.groups[kGlobal].table[6], second.groups[kLocal].table[6]);
  std::vector<BlockCopy> copies;
  EXPECT_TRUE(kv.appendSlots(second, prompt, 2, copies));
  EXPECT_EQ(second.numTokens(), 30);
  kv.release(second);
  EXPECT_EQ(blocks.numHeld(), 0);
}

TEST(KvCacheCoordinatorTest, APrefixHitNeedsNoLocalBlockBeforeTheWindow) {
  BlockManager blocks(20, 4, /*enablePrefixCaching=*/true);
  KvCacheCoordinator kv(blocks, {0, 8});
  auto prompt = tokenIds(100, 30);
  // The local group gives its first five blocks back as the prompt goes by:
  // once released they are the cache's oldest entries.
  SequenceKv first = kv.emptySequence();
  std::vector<BlockCopy> copies;
  for (int64_t done = 0; done < 30; done += 4) {
    kv.releaseOutOfWindow(first);
    ASSERT_TRUE(kv.appendSlots(first, prompt, std::min<int64_t>(4, 30 - done), copies));
  }
  EXPECT_EQ(first.groups[kLocal].numReleased, 5);
  kv.release(first);
  // Ten blocks: the 6 free ones and 4 evicted, the local group's blocks 0
  // to 3; it holds 7 of them once its local group has given 3 back.
  SequenceKv other = computed(kv, tokenIds(900, 20));
  EXPECT_EQ(blocks.numAvailable(), 13);
  SequenceKv second = kv.emptySequence();
  EXPECT_EQ(kv.matchPrefix(second, prompt), 28);
  EXPECT_EQ(second.groups[kLocal].numHeld(), 2);
  kv.release(second);

  // Evict every block of the prompt: nothing is taken, in any group.
  SequenceKv filler = computed(kv, tokenIds(2000, 20));
  SequenceKv third = kv.emptySequence();
  EXPECT_EQ(kv.matchPrefix(third, prompt), 0);
  EXPECT_TRUE(third.groups[kGlobal].table.empty());
  EXPECT_TRUE(third.groups[kLocal].table.empty());
  kv.release(filler);
  kv.release(other);
  EXPECT_EQ(blocks.numHeld(), 0);
}

TEST(KvCacheCoordinatorTest, ForkSharesAndSwapInAllocatesEveryGroup) {
  BlockManager blocks(32, 4, false);
  KvCacheCoordinator kv(blocks, {0, 8});
  SequenceKv parent = computed(kv, tokenIds(0, 21));
  SequenceKv child = kv.fork(parent);
  EXPECT_EQ(blocks.numHeld(), 9); // shared, not copied
  kv.release(child);
  kv.release(parent);

  SequenceKv swapped = kv.emptySequence();
  EXPECT_FALSE(kv.allocateBlocks(swapped, {30, 3}, {0, 3})); // 33 blocks, 32 in the pool
  EXPECT_TRUE(swapped.groups[kGlobal].table.empty());
  ASSERT_TRUE(kv.allocateBlocks(swapped, {6, 3}, {0, 3}));
  EXPECT_EQ(swapped.groups[kLocal].table.size(), 6u);
  EXPECT_EQ(swapped.groups[kLocal].numReleased, 3);
  EXPECT_EQ(blocks.numHeld(), 9);
}

TEST(KvCacheCoordinatorTest, RefusesNoGroupsAndNegativeWindows) {
  BlockManager blocks(4, 4, false);
  EXPECT_THROW(KvCacheCoordinator(blocks, {}), Error);
  EXPECT_THROW(KvCacheCoordinator(blocks, {0, -1}), Error);
}

} // namespace
} // namespace llmc::runtime
