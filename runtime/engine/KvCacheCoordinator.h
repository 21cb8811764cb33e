//===- KvCacheCoordinator.h - a sequence's blocks in every KV cache group -*- C++ -*-===//
//
// A model whose layers have different attention windows (Gemma-2 and -3:
// local layers with a sliding window beside global ones) is compiled with
// one KV cache group per run of layers of one window (llm-kv-cache-groups,
// step.kv_groups in the manifest). Each group has its own block table per
// sequence over the one pool of blocks, so a local group gives back the
// blocks out of its window while a global group keeps all of its own. This
// class applies the BlockManager's operations to every group of a sequence
// at once (vLLM's KV cache coordinator):
//
// - every group holds slots for the same tokens; a group with a window
//   gives back the blocks before it (releaseOutOfWindow);
// - operations that take blocks take them for every group or for none;
// - a prefix hit is a length whose blocks every group has cached: all of
//   them for a global group, the window's for a local one;
// - each group's blocks are hashed under a seed of their own, so equal
//   tokens in two groups are two cache entries.
//
// A model of one group (every layer the same window, or none) behaves as
// the BlockManager alone.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_KVCACHECOORDINATOR_H
#define LLMC_RUNTIME_ENGINE_KVCACHECOORDINATOR_H

#include "runtime/engine/BlockManager.h"

#include <cstdint>
#include <vector>

namespace llmc::runtime {

/// A sequence's blocks, one SequenceBlocks per KV cache group; every group
/// holds slots for the same numTokens tokens.
struct SequenceKv {
  std::vector<SequenceBlocks> groups;

  int64_t numTokens() const { return groups.empty() ? 0 : groups.front().numTokens; }
  /// Blocks held in all groups.
  int64_t numHeld() const;
};

class KvCacheCoordinator {
public:
  /// Groups over `blocks`, each with its sliding window (0: none), in the
  /// step's group order; at least one.
  KvCacheCoordinator(BlockManager &blocks, std::vector<int64_t> windows);

  int64_t numGroups() const { return static_cast<int64_t>(groupWindows.size()); }
  const std::vector<int64_t> &windows() const { return groupWindows; }
  BlockManager &blockManager() { return blocks; }
  int64_t numAvailable() const { return blocks.numAvailable(); }

  /// A sequence with no blocks yet in any group.
  SequenceKv emptySequence() const;

  /// BlockManager::matchPrefix in every group: the longest prefix, in whole
  /// blocks before the prompt's last token, that every group can take from
  /// the cache (a windowed group: the blocks its next query sees; the ones
  /// before stay released). Returns the tokens taken.
  int64_t matchPrefix(SequenceKv &seq, const std::vector<int32_t> &promptTokens);
  void recordPrefixLookup(int64_t promptTokens, int64_t cachedTokens) {
    blocks.recordPrefixLookup(promptTokens, cachedTokens);
  }

  /// Blocks appendSlots(seq, n) would take, in all groups.
  int64_t blocksNeeded(const SequenceKv &seq, int64_t numNewTokens) const;
  /// BlockManager::appendSlots in every group, or, when the blocks are
  /// short, in none (returns false and changes nothing).
  bool appendSlots(SequenceKv &seq, const std::vector<int32_t> &tokens, int64_t numNewTokens,
                   std::vector<BlockCopy> &copies, int64_t numDraftTokens = 0);
  void rollBack(SequenceKv &seq, const std::vector<int32_t> &tokens, int64_t numTokens);
  /// Gives back, in each group with a window, the blocks no query from the
  /// sequence's next token on sees.
  void releaseOutOfWindow(SequenceKv &seq);
  SequenceKv fork(const SequenceKv &parent);
  /// For a swap-in: group g gets numReleased[g] released entries, then
  /// numBlocks[g] private blocks, or no group gets any (returns false).
  bool allocateBlocks(SequenceKv &seq, const std::vector<int64_t> &numBlocks,
                      const std::vector<int64_t> &numReleased);
  void release(SequenceKv &seq);

private:
  /// The first block of a table that a query at position `position` sees,
  /// with `window` (0: every block).
  int64_t firstVisibleBlock(int64_t position, int64_t window) const;

  BlockManager &blocks;
  std::vector<int64_t> groupWindows;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_KVCACHECOORDINATOR_H
