//===- KvCacheCoordinator.cpp - a sequence's blocks in every KV cache group -===//
#include "runtime/engine/KvCacheCoordinator.h"

#include "runtime/core/Error.h"

#include <algorithm>

namespace llmc::runtime {

int64_t SequenceKv::numHeld() const {
  int64_t held = 0;
  for (const SequenceBlocks &group : groups) held += group.numHeld();
  return held;
}

KvCacheCoordinator::KvCacheCoordinator(BlockManager &blocks, std::vector<int64_t> windows)
    : blocks(blocks), groupWindows(std::move(windows)) {
  if (groupWindows.empty()) throw Error("the KV cache needs at least one group of layers");
  for (int64_t window : groupWindows)
    if (window < 0) throw Error("a KV cache group's window must not be negative");
}

SequenceKv KvCacheCoordinator::emptySequence() const {
  SequenceKv seq;
  seq.groups.resize(groupWindows.size());
  // Any distinct seeds do; group 0's is 0, the seed of a model of one group.
  for (size_t group = 0; group < seq.groups.size(); ++group)
    seq.groups[group].hashSeed = group * 0x9e3779b97f4a7c15ull;
  return seq;
}

int64_t KvCacheCoordinator::firstVisibleBlock(int64_t position, int64_t window) const {
  // The query at position p sees the keys from p - window + 1 on.
  return window > 0 ? std::max<int64_t>(position - window + 1, 0) / blocks.blockSize() : 0;
}

int64_t KvCacheCoordinator::matchPrefix(SequenceKv &seq, const std::vector<int32_t> &promptTokens) {
  if (numGroups() == 1) return blocks.matchPrefix(seq.groups.front(), promptTokens);
  std::vector<PrefixLookup> lookups;
  for (const SequenceBlocks &group : seq.groups)
    lookups.push_back(blocks.lookUpPrefix(promptTokens, group.hashSeed));
  // The longest cached prefix whose next query, at its length, finds every
  // block it sees cached in every group.
  auto everyGroupHas = [&](int64_t numBlocks) {
    for (int64_t group = 0; group < numGroups(); ++group) {
      const std::vector<BlockId> &cached = lookups[group].cachedBlocks;
      int64_t first = firstVisibleBlock(numBlocks * blocks.blockSize(), groupWindows[group]);
      if (std::find(cached.begin() + first, cached.begin() + numBlocks, kReleasedBlock) !=
          cached.begin() + numBlocks)
        return false;
    }
    return true;
  };
  auto numBlocks = static_cast<int64_t>(lookups.front().cachedBlocks.size());
  while (numBlocks > 0 && !everyGroupHas(numBlocks)) --numBlocks;
  for (int64_t group = 0; group < numGroups(); ++group)
    blocks.takePrefix(seq.groups[group], lookups[group], numBlocks,
                      firstVisibleBlock(numBlocks * blocks.blockSize(), groupWindows[group]));
  return seq.numTokens();
}

int64_t KvCacheCoordinator::blocksNeeded(const SequenceKv &seq, int64_t numNewTokens) const {
  int64_t needed = 0;
  for (const SequenceBlocks &group : seq.groups) needed += blocks.blocksNeeded(group, numNewTokens);
  return needed;
}

bool KvCacheCoordinator::appendSlots(SequenceKv &seq, const std::vector<int32_t> &tokens,
                                     int64_t numNewTokens, std::vector<BlockCopy> &copies,
                                     int64_t numDraftTokens) {
  // Each group's append then finds its blocks: none fails halfway.
  if (blocksNeeded(seq, numNewTokens) > blocks.numAvailable()) return false;
  for (SequenceBlocks &group : seq.groups)
    if (!blocks.appendSlots(group, tokens, numNewTokens, copies, numDraftTokens))
      throw Error("a KV cache group lost the blocks counted for it");
  return true;
}

void KvCacheCoordinator::rollBack(SequenceKv &seq, const std::vector<int32_t> &tokens,
                                  int64_t numTokens) {
  for (SequenceBlocks &group : seq.groups) blocks.rollBack(group, tokens, numTokens);
}

void KvCacheCoordinator::releaseOutOfWindow(SequenceKv &seq) {
  for (int64_t group = 0; group < numGroups(); ++group)
    if (groupWindows[group] > 0)
      blocks.releaseOutOfWindow(seq.groups[group],
                                seq.numTokens() - groupWindows[group] + 1);
}

SequenceKv KvCacheCoordinator::fork(const SequenceKv &parent) {
  SequenceKv child;
  for (const SequenceBlocks &group : parent.groups) child.groups.push_back(blocks.fork(group));
  return child;
}

bool KvCacheCoordinator::allocateBlocks(SequenceKv &seq, const std::vector<int64_t> &numBlocks,
                                        const std::vector<int64_t> &numReleased) {
  int64_t total = 0;
  for (int64_t count : numBlocks) total += count;
  if (total > blocks.numAvailable()) return false;
  for (int64_t group = 0; group < numGroups(); ++group)
    if (!blocks.allocateBlocks(seq.groups[group], numBlocks.at(group), numReleased.at(group)))
      throw Error("a KV cache group lost the blocks counted for it");
  return true;
}

void KvCacheCoordinator::release(SequenceKv &seq) {
  for (SequenceBlocks &group : seq.groups) blocks.release(group);
}

} // namespace llmc::runtime
