//===- BlockManagerTest.cpp - ref counts, copy-on-write, prefix cache -----===//
#include "runtime/engine/BlockManager.h"

#include "runtime/core/Error.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace llmc::runtime {
namespace {

std::vector<int32_t> range(int32_t first, int32_t count) {
  std::vector<int32_t> tokens(count);
  for (int32_t i = 0; i < count; ++i) tokens[i] = first + i;
  return tokens;
}

TEST(BlockManagerTest, AllocatesWholeBlocksAndWastesOnlyTheLastOne) {
  BlockManager blocks(8, 4, /*enablePrefixCaching=*/false);
  SequenceBlocks seq;
  std::vector<BlockCopy> copies;
  auto tokens = range(0, 9);
  EXPECT_EQ(blocks.blocksNeeded(seq, 9), 3);
  ASSERT_TRUE(blocks.appendSlots(seq, tokens, 9, copies));
  EXPECT_EQ(seq.table.size(), 3u);
  EXPECT_EQ(seq.numTokens, 9);
  EXPECT_EQ(blocks.numAvailable(), 5);
  tokens.push_back(9);
  ASSERT_TRUE(blocks.appendSlots(seq, tokens, 1, copies)); // fits in the third block
  EXPECT_EQ(seq.table.size(), 3u);
  EXPECT_TRUE(copies.empty());
  blocks.release(seq);
  EXPECT_EQ(blocks.numAvailable(), 8);
  EXPECT_TRUE(seq.table.empty());
}

TEST(BlockManagerTest, SequencesAdmittedTogetherEachGrowIntoTheBlockAfterTheirLast) {
  BlockManager blocks(16, 4, false);
  std::vector<BlockCopy> copies;
  auto tokens = range(0, 16);
  SequenceBlocks first, second;
  ASSERT_TRUE(blocks.appendSlots(first, tokens, 8, copies));
  // The second starts in the middle of the free run [2, 16), not at block 2.
  ASSERT_TRUE(blocks.appendSlots(second, tokens, 8, copies));
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(blocks.appendSlots(first, tokens, 4, copies));
    ASSERT_TRUE(blocks.appendSlots(second, tokens, 4, copies));
  }
  EXPECT_EQ(first.table, (std::vector<BlockId>{0, 1, 2, 3}));
  EXPECT_EQ(second.table, (std::vector<BlockId>{9, 10, 11, 12}));
}

TEST(BlockManagerTest, ATableWhoseNextBlockIsTakenGoesOnInTheLongestFreeRun) {
  BlockManager blocks(10, 1, false);
  std::vector<BlockCopy> copies;
  auto tokens = range(0, 10);
  SequenceBlocks first, second;
  ASSERT_TRUE(blocks.appendSlots(first, tokens, 2, copies));  // 0, 1
  ASSERT_TRUE(blocks.appendSlots(second, tokens, 3, copies)); // 6, 7, 8: the middle of [2, 10)
  ASSERT_TRUE(blocks.appendSlots(first, tokens, 5, copies));  // 2 to 5, then 6 is taken
  EXPECT_EQ(first.table, (std::vector<BlockId>{0, 1, 2, 3, 4, 5, 9}));
  blocks.release(second);
  SequenceBlocks third;
  ASSERT_TRUE(blocks.allocateBlocks(third, 2)); // the middle of [6, 9)
  EXPECT_EQ(third.table, (std::vector<BlockId>{7, 8}));
}

TEST(BlockManagerTest, RefusesWithoutChangingAnythingWhenBlocksRunOut) {
  BlockManager blocks(2, 4, false);
  SequenceBlocks seq;
  std::vector<BlockCopy> copies;
  auto tokens = range(0, 12);
  EXPECT_FALSE(blocks.appendSlots(seq, tokens, 12, copies));
  EXPECT_EQ(seq.numTokens, 0);
  EXPECT_TRUE(seq.table.empty());
  EXPECT_EQ(blocks.numAvailable(), 2);
}

TEST(BlockManagerTest, AllocateBlocksGivesPrivateBlocksOrNothing) {
  BlockManager blocks(4, 4, true);
  SequenceBlocks seq;
  EXPECT_FALSE(blocks.allocateBlocks(seq, 5));
  EXPECT_TRUE(seq.table.empty());
  EXPECT_EQ(blocks.numAvailable(), 4);
  ASSERT_TRUE(blocks.allocateBlocks(seq, 3));
  EXPECT_EQ(seq.table, (std::vector<BlockId>{0, 1, 2}));
  for (BlockId block : seq.table) EXPECT_EQ(blocks.refCount(block), 1);
  EXPECT_EQ(blocks.numAvailable(), 1);
  EXPECT_THROW(blocks.allocateBlocks(seq, 1), Error);
  blocks.release(seq);
  EXPECT_EQ(blocks.numAvailable(), 4);
}

TEST(BlockManagerTest, ForkSharesBlocksAndCopiesOnTheFirstWrite) {
  BlockManager blocks(8, 4, false);
  SequenceBlocks parent;
  std::vector<BlockCopy> copies;
  auto tokens = range(0, 6);
  ASSERT_TRUE(blocks.appendSlots(parent, tokens, 6, copies));
  SequenceBlocks child = blocks.fork(parent);
  EXPECT_EQ(blocks.refCount(parent.table[0]), 2);
  EXPECT_EQ(blocks.refCount(parent.table[1]), 2);
  EXPECT_EQ(blocks.numAvailable(), 6); // sharing costs nothing

  auto childTokens = tokens;
  childTokens.push_back(100);
  EXPECT_EQ(blocks.blocksNeeded(child, 1), 1);
  ASSERT_TRUE(blocks.appendSlots(child, childTokens, 1, copies));
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].from, parent.table[1]);
  EXPECT_EQ(copies[0].to, child.table[1]);
  EXPECT_EQ(child.table[0], parent.table[0]); // the full block stays shared
  EXPECT_EQ(blocks.refCount(parent.table[1]), 1);
  EXPECT_EQ(blocks.refCount(child.table[1]), 1);

  copies.clear();
  auto parentTokens = tokens;
  parentTokens.push_back(200);
  ASSERT_TRUE(blocks.appendSlots(parent, parentTokens, 1, copies)); // now private: no copy
  EXPECT_TRUE(copies.empty());
  blocks.release(parent);
  blocks.release(child);
  EXPECT_EQ(blocks.numAvailable(), 8);
}

TEST(BlockManagerTest, PrefixCacheReusesFullBlocksButNeverTheWholePrompt) {
  BlockManager blocks(8, 4, true);
  std::vector<BlockCopy> copies;
  auto prompt = range(0, 8); // exactly two blocks
  SequenceBlocks first;
  ASSERT_TRUE(blocks.appendSlots(first, prompt, 8, copies));
  blocks.release(first);
  EXPECT_EQ(blocks.numAvailable(), 8); // cached, but evictable

  SequenceBlocks second;
  // The last token must run to give logits, so only the first block is reused.
  EXPECT_EQ(blocks.matchPrefix(second, prompt), 4);
  ASSERT_EQ(second.table.size(), 1u);
  EXPECT_EQ(blocks.refCount(second.table[0]), 1);

  auto longer = range(0, 13);
  SequenceBlocks third;
  EXPECT_EQ(blocks.matchPrefix(third, longer), 8);
  EXPECT_EQ(third.table[0], second.table[0]);
  EXPECT_EQ(blocks.refCount(third.table[0]), 2);
  EXPECT_EQ(blocks.prefixCacheStats().queriedBlocks, 0); // nothing recorded yet
  blocks.recordPrefixLookup(8, 4);
  blocks.recordPrefixLookup(13, 8);
  EXPECT_EQ(blocks.prefixCacheStats().hitBlocks, 3);
  EXPECT_EQ(blocks.prefixCacheStats().queriedBlocks, 4);

  auto other = range(50, 13);
  SequenceBlocks fourth;
  EXPECT_EQ(blocks.matchPrefix(fourth, other), 0);
}

TEST(BlockManagerTest, DraftSlotsAreCachedOnlyOnceKept) {
  BlockManager blocks(8, 4, true);
  std::vector<BlockCopy> copies;
  SequenceBlocks seq;
  auto tokens = range(0, 3);
  ASSERT_TRUE(blocks.appendSlots(seq, tokens, 3, copies));
  // Position 3 holds the sequence's last token, 4..9 a draft of 6 tokens:
  // the first block fills with known tokens, the second and third with draft ones.
  tokens.push_back(3);
  ASSERT_TRUE(blocks.appendSlots(seq, tokens, 7, copies, /*numDraftTokens=*/6));
  EXPECT_EQ(seq.numTokens, 10);
  EXPECT_EQ(seq.table.size(), 3u);
  EXPECT_EQ(seq.fullBlockHashes.size(), 1u);
  EXPECT_EQ(blocks.numAvailable(), 5);

  // Four draft tokens were accepted, and a fifth token drawn after them.
  for (int32_t token : {4, 5, 6, 7, 42}) tokens.push_back(token);
  blocks.rollBack(seq, tokens, 8);
  EXPECT_EQ(seq.numTokens, 8);
  EXPECT_EQ(seq.table.size(), 2u); // the third block held rejected draft tokens only
  EXPECT_EQ(seq.fullBlockHashes.size(), 2u);
  EXPECT_EQ(blocks.numAvailable(), 6);
  blocks.release(seq);

  // The kept block is cached under its tokens; a rejected draft never was.
  SequenceBlocks same;
  EXPECT_EQ(blocks.matchPrefix(same, range(0, 9)), 8);
  SequenceBlocks beyond;
  EXPECT_EQ(blocks.matchPrefix(beyond, range(0, 13)), 8);
  EXPECT_THROW(blocks.rollBack(same, range(0, 9), 9), Error);
}

TEST(BlockManagerTest, EvictsTheLeastRecentlyReleasedTailFirst) {
  BlockManager blocks(3, 2, true);
  std::vector<BlockCopy> copies;
  auto prompt = range(0, 6);
  SequenceBlocks seq;
  ASSERT_TRUE(blocks.appendSlots(seq, prompt, 6, copies));
  std::vector<BlockId> table = seq.table;
  blocks.release(seq);
  // Taking one block evicts the tail (tokens 4-5); the prefix 0-3 stays cached.
  SequenceBlocks other;
  auto unrelated = range(100, 2);
  ASSERT_TRUE(blocks.appendSlots(other, unrelated, 2, copies));
  EXPECT_EQ(other.table[0], table[2]);
  SequenceBlocks again;
  EXPECT_EQ(blocks.matchPrefix(again, prompt), 4);
}

TEST(BlockManagerTest, ReleasingTwiceIsAnError) {
  BlockManager blocks(2, 2, false);
  SequenceBlocks seq;
  std::vector<BlockCopy> copies;
  ASSERT_TRUE(blocks.appendSlots(seq, range(0, 2), 2, copies));
  SequenceBlocks copy = seq;
  blocks.release(seq);
  EXPECT_THROW(blocks.release(copy), Error);
}

/// 10^5 random allocate / extend / fork / release / prefix-match operations
/// against a model of the cache contents: every sequence must read its own
/// tokens back from its blocks (so copy-on-write and prefix hits are right),
/// every block's count must equal the tables holding it, and no block may be
/// both available and held, or leak.
TEST(BlockManagerTest, BlocksOutOfTheWindowAreGivenBackAndStayCached) {
  BlockManager blocks(8, 4, true);
  std::vector<BlockCopy> copies;
  auto tokens = range(0, 14);
  SequenceBlocks seq;
  ASSERT_TRUE(blocks.appendSlots(seq, tokens, 14, copies)); // blocks 0..3, the last partly
  std::vector<BlockId> table = seq.table;
  // The next query (position 14) with a window of 6 sees keys 9..14: blocks
  // 0 and 1 hold only earlier ones.
  EXPECT_EQ(blocks.releaseOutOfWindow(seq, 14 - 6 + 1), 2);
  EXPECT_EQ(seq.table, (std::vector<BlockId>{kReleasedBlock, kReleasedBlock, table[2], table[3]}));
  EXPECT_EQ(seq.numReleased, 2);
  EXPECT_EQ(seq.numHeld(), 2);
  EXPECT_EQ(blocks.refCount(table[0]), 0);
  EXPECT_EQ(blocks.numAvailable(), 6);
  EXPECT_EQ(blocks.releaseOutOfWindow(seq, 9), 0); // nothing more, nothing twice
  // A window of one key still keeps the block the next token goes into.
  EXPECT_EQ(blocks.releaseOutOfWindow(seq, 100), 1);
  EXPECT_EQ(seq.table[3], table[3]);

  // The given-back blocks stay in the prefix cache: a new prompt reuses them.
  SequenceBlocks again;
  EXPECT_EQ(blocks.matchPrefix(again, range(0, 10)), 8);
  EXPECT_EQ(again.table, (std::vector<BlockId>{table[0], table[1]}));

  // A fork shares only the held blocks; releasing skips the given-back ones.
  SequenceBlocks child = blocks.fork(seq);
  EXPECT_EQ(blocks.refCount(table[3]), 2);
  blocks.release(child);
  blocks.release(seq);
  blocks.release(again);
  EXPECT_EQ(blocks.numAvailable(), 8);

  // A swap-in lays the given-back entries before its fresh blocks.
  SequenceBlocks swappedIn;
  ASSERT_TRUE(blocks.allocateBlocks(swappedIn, 2, 3));
  EXPECT_EQ(swappedIn.numReleased, 3);
  ASSERT_EQ(swappedIn.table.size(), 5u);
  EXPECT_EQ(swappedIn.table[2], kReleasedBlock);
  EXPECT_NE(swappedIn.table[3], kReleasedBlock);
  blocks.release(swappedIn);
  EXPECT_EQ(blocks.numAvailable(), 8);
}

TEST(BlockManagerTest, RandomOperationsKeepEveryInvariant) {
  constexpr int64_t kNumBlocks = 64, kBlockSize = 4;
  BlockManager blocks(kNumBlocks, kBlockSize, true);
  std::mt19937 rng(1234);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  // What each block's slots hold, as a step would have written them.
  std::vector<std::vector<int32_t>> contents(kNumBlocks, std::vector<int32_t>(kBlockSize, -1));
  struct Sequence {
    std::vector<int32_t> tokens;
    SequenceBlocks blocks;
  };
  std::map<int, Sequence> live;
  int nextId = 0;
  // Prompts share a few prefixes so that the cache is hit.
  std::vector<std::vector<int32_t>> prefixes;
  for (int i = 0; i < 4; ++i) prefixes.push_back(range(1000 * i, 4 * kBlockSize));

  auto expectReadsBack = [&](const Sequence &seq) {
    for (int64_t i = 0; i < seq.blocks.numReleased; ++i)
      ASSERT_EQ(seq.blocks.table[i], kReleasedBlock);
    for (int64_t i = seq.blocks.numReleased * kBlockSize; i < seq.blocks.numTokens; ++i) {
      BlockId block = seq.blocks.table[i / kBlockSize];
      ASSERT_EQ(contents[block][i % kBlockSize], seq.tokens[i]) << "position " << i;
    }
  };
  auto expectCountsMatch = [&] {
    std::vector<int32_t> held(kNumBlocks, 0);
    for (auto &entry : live)
      for (BlockId block : entry.second.blocks.table)
        if (block != kReleasedBlock) ++held[block];
    int64_t numHeld = 0;
    for (BlockId block = 0; block < kNumBlocks; ++block) {
      ASSERT_EQ(blocks.refCount(block), held[block]) << "block " << block;
      numHeld += held[block] > 0;
    }
    ASSERT_EQ(blocks.numAvailable() + numHeld, kNumBlocks);
  };
  /// Gives `count` more tokens of `seq` slots and writes them; false when
  /// the pool is out of blocks.
  auto append = [&](Sequence &seq, int64_t count) {
    std::vector<BlockCopy> copies;
    int64_t first = seq.blocks.numTokens;
    if (!blocks.appendSlots(seq.blocks, seq.tokens, count, copies)) return false;
    for (const BlockCopy &copy : copies) contents[copy.to] = contents[copy.from];
    for (int64_t i = first; i < first + count; ++i)
      contents[seq.blocks.table[i / kBlockSize]][i % kBlockSize] = seq.tokens[i];
    return true;
  };
  auto releaseRandom = [&] {
    auto victim = std::next(live.begin(), uniform(0, int64_t(live.size()) - 1));
    blocks.release(victim->second.blocks);
    live.erase(victim);
  };

  for (int op = 0; op < 100000; ++op) {
    int64_t kind = uniform(0, 9);
    if (live.empty() || kind < 3) { // a new request
      Sequence seq;
      seq.tokens = prefixes[uniform(0, 3)];
      seq.tokens.resize(uniform(1, int64_t(seq.tokens.size())));
      for (int64_t extra = uniform(0, 12); extra > 0; --extra)
        seq.tokens.push_back(int32_t(uniform(0, 50)));
      int64_t cachedTokens = blocks.matchPrefix(seq.blocks, seq.tokens);
      blocks.recordPrefixLookup(int64_t(seq.tokens.size()), cachedTokens);
      ASSERT_LT(cachedTokens, int64_t(seq.tokens.size()));
      expectReadsBack(seq);
      if (!append(seq, uniform(1, int64_t(seq.tokens.size()) - cachedTokens))) {
        blocks.release(seq.blocks);
        if (!live.empty()) releaseRandom();
        continue;
      }
      expectReadsBack(seq);
      live.emplace(nextId++, std::move(seq));
    } else if (kind < 7) { // a prefill chunk or a decode token
      Sequence &seq = std::next(live.begin(), uniform(0, int64_t(live.size()) - 1))->second;
      int64_t pending = int64_t(seq.tokens.size()) - seq.blocks.numTokens;
      if (pending == 0) {
        seq.tokens.push_back(int32_t(uniform(0, 50)));
        pending = 1;
      }
      if (!append(seq, uniform(1, pending))) {
        releaseRandom(); // as preemption would
        continue;
      }
      expectReadsBack(seq);
    } else if (kind < 8) { // a parallel sample
      Sequence &parent = std::next(live.begin(), uniform(0, int64_t(live.size()) - 1))->second;
      if (parent.blocks.numTokens != int64_t(parent.tokens.size())) continue;
      Sequence child{parent.tokens, blocks.fork(parent.blocks)};
      live.emplace(nextId++, std::move(child));
    } else if (kind < 9) { // its sliding window moves on
      Sequence &seq = std::next(live.begin(), uniform(0, int64_t(live.size()) - 1))->second;
      blocks.releaseOutOfWindow(seq.blocks, seq.blocks.numTokens - uniform(0, 3 * kBlockSize));
    } else {
      releaseRandom();
    }
    if (op % 100 == 0) {
      expectCountsMatch();
      for (auto &entry : live) expectReadsBack(entry.second);
    }
    if (HasFatalFailure()) return;
  }
  while (!live.empty()) releaseRandom();
  expectCountsMatch();
  EXPECT_EQ(blocks.numAvailable(), kNumBlocks);
  EXPECT_GT(blocks.prefixCacheStats().hitBlocks, 0);
}

} // namespace
} // namespace llmc::runtime
