//===- BlockManager.h - KV blocks: ref counts, copy-on-write, prefix cache -*- C++ -*-===//
//
// Which KV-cache block holds which tokens of which sequence. The memory is
// the model's KvBlockPool; this class only decides ownership:
//
// - a block has a reference count: the sequences whose block tables hold it;
// - fork() shares a parent's blocks with a child (parallel samples of one
//   prompt), and the first write into a shared block copies it
//   (copy-on-write: appendSlots() reports the copy for the caller to do);
// - with prefix caching, a block that fills up is keyed by a hash of
//   (the previous block's hash, its token ids). A new sequence whose prompt
//   starts with cached blocks takes them (matchPrefix) and skips their
//   prefill. A cached block nobody holds stays cached until its memory is
//   needed; such blocks are evicted least recently released first.
//
// - with a sliding window on every layer, the blocks that fall out of it
//   are given back as the sequence grows (releaseOutOfWindow): their table
//   entries become kReleasedBlock, always a prefix of the table.
//
// Contract: every block is in exactly one of three states: held (ref count
// > 0), free, or cached-unheld (ref count 0, evictable). numAvailable()
// counts the last two. Nothing here throws on exhaustion: operations that
// need blocks report whether they got them and change nothing when not.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_BLOCKMANAGER_H
#define LLMC_RUNTIME_ENGINE_BLOCKMANAGER_H

#include "runtime/core/KvBlockId.h"

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace llmc::runtime {

/// The table entry of a block given back because no later query sees it.
inline constexpr BlockId kReleasedBlock = -1;

/// A sequence's view of the cache: its block table and how many of its
/// tokens have a slot. The tokens themselves live with the sequence.
struct SequenceBlocks {
  /// The first numReleased entries are kReleasedBlock; the others held.
  std::vector<BlockId> table;
  int64_t numReleased = 0;
  /// Tokens that have a slot (written or about to be written by a step).
  int64_t numTokens = 0;
  /// Hash of each full block of the table, in order (prefix caching).
  std::vector<uint64_t> fullBlockHashes;
  /// Where the chain of hashes starts: a KV cache group's own seed, so that
  /// the same tokens in two groups' tables are two cache entries.
  uint64_t hashSeed = 0;

  int64_t numHeld() const { return static_cast<int64_t>(table.size()) - numReleased; }
};

/// A block copy the caller must do before the step that writes `to`.
struct BlockCopy {
  BlockId from;
  BlockId to;
};

/// A prompt's full blocks (before its last token) as the prefix cache has
/// them under one hash seed: each one's hash, and the cached block holding
/// its tokens (kReleasedBlock for none).
struct PrefixLookup {
  std::vector<uint64_t> hashes;
  std::vector<BlockId> cachedBlocks;
};

struct PrefixCacheStats {
  int64_t queriedBlocks = 0; // full prompt blocks looked up
  int64_t hitBlocks = 0;     // of which were found
  double hitRate() const { return queriedBlocks ? double(hitBlocks) / queriedBlocks : 0.0; }
};

class BlockManager {
public:
  BlockManager(int64_t numBlocks, int64_t blockSize, bool enablePrefixCaching);

  int64_t numBlocks() const { return static_cast<int64_t>(refCounts.size()); }
  int64_t blockSize() const { return tokensPerBlock; }
  /// Blocks that can be handed out now: free ones plus evictable cached ones.
  int64_t numAvailable() const;
  /// Blocks held by at least one sequence.
  int64_t numHeld() const { return numBlocks() - numAvailable(); }
  int32_t refCount(BlockId block) const { return refCounts.at(block); }
  const PrefixCacheStats &prefixCacheStats() const { return stats; }

  /// For a new sequence (empty `seq`) with this prompt: takes the cached
  /// blocks that hold a prefix of it, in whole blocks and never the whole
  /// prompt (its last token must run to give logits), and returns how many
  /// tokens they hold.
  int64_t matchPrefix(SequenceBlocks &seq, const std::vector<int32_t> &promptTokens);
  /// The prompt's full blocks in the cache under `hashSeed`; empty without
  /// prefix caching.
  PrefixLookup lookUpPrefix(const std::vector<int32_t> &promptTokens, uint64_t hashSeed) const;
  /// Makes the first `numBlocks` blocks of `lookup` the table of the new
  /// sequence `seq`: the first `numReleased` as released entries, the others
  /// the cached blocks, which it holds (each must be cached).
  void takePrefix(SequenceBlocks &seq, const PrefixLookup &lookup, int64_t numBlocks,
                  int64_t numReleased);
  /// Counts a lookup that was kept in prefixCacheStats(): a match the caller
  /// gives back (the sequence could not be admitted after all) is not one.
  void recordPrefixLookup(int64_t promptTokens, int64_t cachedTokens);

  /// Blocks appendSlots(seq, n) would take from the available ones.
  int64_t blocksNeeded(const SequenceBlocks &seq, int64_t numNewTokens) const;

  /// Gives the next `numNewTokens` tokens of the sequence slots: new blocks
  /// as the table needs them, and a private copy of a shared last block
  /// that is about to be written (added to `copies`). The last
  /// `numDraftTokens` of them are speculative: `tokens` (the sequence's
  /// token ids so far) holds all the others, and the blocks that fill up
  /// with those are hashed from them; a block that holds a draft token is
  /// hashed once rollBack() has kept it. Returns false, and changes
  /// nothing, when not enough blocks are available.
  bool appendSlots(SequenceBlocks &seq, const std::vector<int32_t> &tokens, int64_t numNewTokens,
                   std::vector<BlockCopy> &copies, int64_t numDraftTokens = 0);

  /// After a speculative step: keeps the sequence's first `numTokens` slots
  /// (at most seq.numTokens), releases the blocks past them and hashes the
  /// blocks they fill, from `tokens`.
  void rollBack(SequenceBlocks &seq, const std::vector<int32_t> &tokens, int64_t numTokens);

  /// Gives back the sequence's blocks that hold only tokens before
  /// `firstVisibleToken`, the first key a query of its next steps can see
  /// (a sliding window's start): each is dropped like a released block
  /// (cached ones stay cached, evictable) and its entry becomes
  /// kReleasedBlock. Returns how many it gave back.
  int64_t releaseOutOfWindow(SequenceBlocks &seq, int64_t firstVisibleToken);

  /// A child sharing every held block of `parent` (each block's count goes up).
  SequenceBlocks fork(const SequenceBlocks &parent);

  /// Gives a sequence without blocks `numReleased` released entries, then
  /// `numBlocks` private blocks, for a swap-in to fill (the caller sets
  /// numTokens). Returns false, and changes nothing, when not enough blocks
  /// are available.
  bool allocateBlocks(SequenceBlocks &seq, int64_t numBlocks, int64_t numReleased = 0);

  /// Releases the sequence's blocks (most recent last into the eviction
  /// order, so a prefix outlives its tail) and empties `seq` (its hash seed
  /// stays).
  void release(SequenceBlocks &seq);

private:
  /// A free block to follow `previous` in a block table (none: the table's
  /// first), else the least recently released cached block (dropped from the
  /// cache); nothing when neither exists. The free block is the one after
  /// `previous` when that one is free, so a sequence's blocks sit one after
  /// another and attention streams them (a 32-sequence decode step at 200
  /// tokens of context took 7% longer with every block table shuffled);
  /// else newRunStart().
  std::optional<BlockId> takeBlock(std::optional<BlockId> previous);
  /// Where a block table that cannot go on where it is starts anew: in the
  /// middle of the longest run of free blocks, which leaves the sequence
  /// before the run as much room to grow as the new one (at the start of the
  /// run when it begins the pool).
  BlockId newRunStart() const;
  /// The held block at `index` of the table; none for a released entry or
  /// an index before the table.
  static std::optional<BlockId> heldBlock(const SequenceBlocks &seq, int64_t index) {
    return index >= seq.numReleased && index < static_cast<int64_t>(seq.table.size())
               ? std::optional<BlockId>(seq.table[index])
               : std::nullopt;
  }
  static std::optional<BlockId> lastBlock(const SequenceBlocks &seq) {
    return heldBlock(seq, static_cast<int64_t>(seq.table.size()) - 1);
  }
  void hold(BlockId block);
  void drop(BlockId block);
  /// Registers, if caching, the blocks of `seq` that the first `numTokens`
  /// of `tokens` fill and that have no hash yet, under their hashes.
  void cacheFullBlocks(SequenceBlocks &seq, const std::vector<int32_t> &tokens,
                       int64_t numTokens);
  uint64_t hashBlock(uint64_t parent, const int32_t *tokens) const;

  int64_t tokensPerBlock;
  bool prefixCaching;
  std::vector<int32_t> refCounts;
  /// Per block, whether it is free; numFree of them are.
  std::vector<uint8_t> isFree;
  int64_t numFree = 0;
  /// Cached blocks by hash, and each cached block's hash and tokens (to
  /// rule out hash collisions on lookup).
  std::unordered_map<uint64_t, BlockId> cachedByHash;
  struct CachedBlock {
    uint64_t hash;
    std::vector<int32_t> tokens;
    /// Position in `evictable` while unheld.
    std::optional<std::list<BlockId>::iterator> evictablePosition;
  };
  std::unordered_map<BlockId, CachedBlock> cached;
  /// Unheld cached blocks, least recently released first.
  std::list<BlockId> evictable;
  PrefixCacheStats stats;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_BLOCKMANAGER_H
