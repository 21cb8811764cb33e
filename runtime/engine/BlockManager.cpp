//===- BlockManager.cpp - KV blocks: ref counts, copy-on-write, prefix cache ---===//
#include "runtime/engine/BlockManager.h"

#include "runtime/core/Error.h"
#include "runtime/core/KvBlockPool.h"

#include <algorithm>

namespace llmc::runtime {

BlockManager::BlockManager(int64_t numBlocks, int64_t blockSize, bool enablePrefixCaching)
    : tokensPerBlock(blockSize), prefixCaching(enablePrefixCaching), refCounts(numBlocks, 0) {
  if (numBlocks <= 0 || blockSize <= 0)
    throw Error("the KV cache needs at least one block of at least one token");
  isFree.assign(numBlocks, 1);
  numFree = numBlocks;
}

int64_t BlockManager::numAvailable() const {
  return numFree + static_cast<int64_t>(evictable.size());
}

uint64_t BlockManager::hashBlock(uint64_t parent, const int32_t *tokens) const {
  // FNV-1a over the parent hash and the token ids, then a final avalanche, so
  // equal prefixes give equal chains and any difference changes every later
  // hash. Collisions are ruled out on lookup by comparing the tokens.
  uint64_t hash = 0xcbf29ce484222325ull ^ parent;
  for (int64_t i = 0; i < tokensPerBlock; ++i) {
    hash ^= static_cast<uint32_t>(tokens[i]);
    hash *= 0x100000001b3ull;
  }
  hash ^= hash >> 33;
  hash *= 0xff51afd7ed558ccdull;
  hash ^= hash >> 33;
  return hash;
}

BlockId BlockManager::newRunStart() const {
  int64_t bestStart = 0, bestLength = 0;
  for (int64_t block = 0, blocks = numBlocks(); block < blocks;) {
    if (!isFree[block]) {
      ++block;
      continue;
    }
    int64_t start = block;
    while (block < blocks && isFree[block]) ++block;
    if (block - start > bestLength) {
      bestStart = start;
      bestLength = block - start;
    }
  }
  // A run at the pool's start has no sequence before it to leave room for.
  return static_cast<BlockId>(bestStart == 0 ? 0 : bestStart + bestLength / 2);
}

std::optional<BlockId> BlockManager::takeBlock(std::optional<BlockId> previous) {
  if (numFree > 0) {
    BlockId block = previous && *previous + 1 < numBlocks() && isFree[*previous + 1]
                        ? *previous + 1
                        : newRunStart();
    isFree[block] = 0;
    --numFree;
    return block;
  }
  if (evictable.empty()) return std::nullopt;
  BlockId block = evictable.front();
  evictable.pop_front();
  auto entry = cached.find(block);
  cachedByHash.erase(entry->second.hash);
  cached.erase(entry);
  return block;
}

void BlockManager::hold(BlockId block) {
  if (refCounts[block] == 0) {
    auto entry = cached.find(block);
    if (entry != cached.end() && entry->second.evictablePosition) {
      evictable.erase(*entry->second.evictablePosition);
      entry->second.evictablePosition.reset();
    }
  }
  ++refCounts[block];
}

void BlockManager::drop(BlockId block) {
  if (refCounts[block] <= 0) throw Error("KV block " + std::to_string(block) + " released twice");
  if (--refCounts[block] > 0) return;
  auto entry = cached.find(block);
  if (entry == cached.end()) {
    isFree[block] = 1;
    ++numFree;
    return;
  }
  entry->second.evictablePosition = evictable.insert(evictable.end(), block);
}

PrefixLookup BlockManager::lookUpPrefix(const std::vector<int32_t> &promptTokens,
                                        uint64_t hashSeed) const {
  PrefixLookup lookup;
  if (!prefixCaching || promptTokens.empty()) return lookup;
  // Only whole blocks before the last prompt token can come from the cache.
  int64_t candidates = (static_cast<int64_t>(promptTokens.size()) - 1) / tokensPerBlock;
  uint64_t parent = hashSeed;
  for (int64_t i = 0; i < candidates; ++i) {
    const int32_t *tokens = promptTokens.data() + i * tokensPerBlock;
    uint64_t hash = hashBlock(parent, tokens);
    BlockId block = kReleasedBlock;
    auto found = cachedByHash.find(hash);
    if (found != cachedByHash.end()) {
      const CachedBlock &entry = cached.at(found->second);
      if (std::equal(entry.tokens.begin(), entry.tokens.end(), tokens)) block = found->second;
    }
    lookup.hashes.push_back(hash);
    lookup.cachedBlocks.push_back(block);
    parent = hash;
  }
  return lookup;
}

void BlockManager::takePrefix(SequenceBlocks &seq, const PrefixLookup &lookup, int64_t numBlocks,
                              int64_t numReleased) {
  if (!seq.table.empty()) throw Error("takePrefix is for a sequence without blocks");
  for (int64_t i = numReleased; i < numBlocks; ++i)
    if (lookup.cachedBlocks.at(i) == kReleasedBlock)
      throw Error("takePrefix: block " + std::to_string(i) + " of the prompt is not cached");
  seq.table.assign(numReleased, kReleasedBlock);
  seq.numReleased = numReleased;
  for (int64_t i = numReleased; i < numBlocks; ++i) {
    hold(lookup.cachedBlocks[i]);
    seq.table.push_back(lookup.cachedBlocks[i]);
  }
  seq.fullBlockHashes.assign(lookup.hashes.begin(), lookup.hashes.begin() + numBlocks);
  seq.numTokens = numBlocks * tokensPerBlock;
}

int64_t BlockManager::matchPrefix(SequenceBlocks &seq, const std::vector<int32_t> &promptTokens) {
  if (!seq.table.empty()) throw Error("matchPrefix is for a sequence without blocks");
  PrefixLookup lookup = lookUpPrefix(promptTokens, seq.hashSeed);
  int64_t hits = std::find(lookup.cachedBlocks.begin(), lookup.cachedBlocks.end(), kReleasedBlock) -
                 lookup.cachedBlocks.begin();
  takePrefix(seq, lookup, hits, 0);
  return seq.numTokens;
}

void BlockManager::recordPrefixLookup(int64_t promptTokens, int64_t cachedTokens) {
  if (!prefixCaching || promptTokens < 1) return;
  stats.queriedBlocks += (promptTokens - 1) / tokensPerBlock;
  stats.hitBlocks += cachedTokens / tokensPerBlock;
}

int64_t BlockManager::blocksNeeded(const SequenceBlocks &seq, int64_t numNewTokens) const {
  int64_t needed = blocksFor(seq.numTokens + numNewTokens, tokensPerBlock) -
                   static_cast<int64_t>(seq.table.size());
  bool writesIntoLastBlock = numNewTokens > 0 && seq.numTokens % tokensPerBlock != 0;
  if (writesIntoLastBlock && refCounts[seq.table.back()] > 1) ++needed; // copy-on-write
  return std::max<int64_t>(needed, 0);
}

bool BlockManager::appendSlots(SequenceBlocks &seq, const std::vector<int32_t> &tokens,
                               int64_t numNewTokens, std::vector<BlockCopy> &copies,
                               int64_t numDraftTokens) {
  if (numNewTokens < 0 || numDraftTokens < 0 || numDraftTokens > numNewTokens ||
      static_cast<int64_t>(tokens.size()) < seq.numTokens + numNewTokens - numDraftTokens)
    throw Error("appendSlots: fewer token ids than slots");
  if (blocksNeeded(seq, numNewTokens) > numAvailable()) return false;

  if (numNewTokens > 0 && seq.numTokens % tokensPerBlock != 0 &&
      refCounts[seq.table.back()] > 1) {
    BlockId shared = seq.table.back();
    BlockId copy = *takeBlock(heldBlock(seq, static_cast<int64_t>(seq.table.size()) - 2));
    hold(copy);
    drop(shared);
    seq.table.back() = copy;
    copies.push_back({shared, copy});
  }
  while (static_cast<int64_t>(seq.table.size()) <
         blocksFor(seq.numTokens + numNewTokens, tokensPerBlock)) {
    BlockId block = *takeBlock(lastBlock(seq));
    hold(block);
    seq.table.push_back(block);
  }
  seq.numTokens += numNewTokens;
  cacheFullBlocks(seq, tokens, seq.numTokens - numDraftTokens);
  return true;
}

void BlockManager::rollBack(SequenceBlocks &seq, const std::vector<int32_t> &tokens,
                            int64_t numTokens) {
  if (numTokens < 0 || numTokens > seq.numTokens ||
      static_cast<int64_t>(tokens.size()) < numTokens)
    throw Error("rollBack: " + std::to_string(numTokens) + " tokens kept of " +
                std::to_string(seq.numTokens));
  // The dropped blocks held only draft tokens written this step: private, never hashed.
  while (static_cast<int64_t>(seq.table.size()) > blocksFor(numTokens, tokensPerBlock)) {
    drop(seq.table.back());
    seq.table.pop_back();
  }
  seq.numTokens = numTokens;
  cacheFullBlocks(seq, tokens, numTokens);
}

void BlockManager::cacheFullBlocks(SequenceBlocks &seq, const std::vector<int32_t> &tokens,
                                   int64_t numTokens) {
  if (!prefixCaching) return;
  for (int64_t i = static_cast<int64_t>(seq.fullBlockHashes.size());
       i < numTokens / tokensPerBlock; ++i) {
    BlockId block = seq.table[i];
    const int32_t *blockTokens = tokens.data() + i * tokensPerBlock;
    uint64_t parent = seq.fullBlockHashes.empty() ? seq.hashSeed : seq.fullBlockHashes.back();
    uint64_t hash = hashBlock(parent, blockTokens);
    seq.fullBlockHashes.push_back(hash);
    // Another block may already hold the same tokens (computed concurrently);
    // the first one stays the cached one and this one is freed as usual. A
    // block given back before its hash (a window narrower than a draft) is
    // not cached.
    if (block == kReleasedBlock || cachedByHash.count(hash) || cached.count(block)) continue;
    cachedByHash.emplace(hash, block);
    cached.emplace(block, CachedBlock{hash,
                                      std::vector<int32_t>(blockTokens,
                                                           blockTokens + tokensPerBlock),
                                      std::nullopt});
  }
}

int64_t BlockManager::releaseOutOfWindow(SequenceBlocks &seq, int64_t firstVisibleToken) {
  // Never the block the next token goes to: a window of one key still
  // sees the token itself.
  int64_t outOfWindow = std::min(firstVisibleToken, seq.numTokens) / tokensPerBlock;
  int64_t released = 0;
  for (; seq.numReleased < outOfWindow; ++seq.numReleased, ++released) {
    drop(seq.table[seq.numReleased]);
    seq.table[seq.numReleased] = kReleasedBlock;
  }
  return released;
}

SequenceBlocks BlockManager::fork(const SequenceBlocks &parent) {
  for (int64_t i = parent.numReleased; i < static_cast<int64_t>(parent.table.size()); ++i)
    hold(parent.table[i]);
  return parent;
}

bool BlockManager::allocateBlocks(SequenceBlocks &seq, int64_t numBlocks, int64_t numReleased) {
  if (!seq.table.empty()) throw Error("allocateBlocks is for a sequence without blocks");
  if (numBlocks > numAvailable()) return false;
  seq.table.assign(numReleased, kReleasedBlock);
  seq.numReleased = numReleased;
  for (int64_t i = 0; i < numBlocks; ++i) {
    BlockId block = *takeBlock(lastBlock(seq));
    hold(block);
    seq.table.push_back(block);
  }
  return true;
}

void BlockManager::release(SequenceBlocks &seq) {
  // The tail first: it is evicted before the prefix other requests may share.
  for (int64_t i = static_cast<int64_t>(seq.table.size()) - 1; i >= seq.numReleased; --i)
    drop(seq.table[i]);
  uint64_t hashSeed = seq.hashSeed;
  seq = SequenceBlocks();
  seq.hashSeed = hashSeed;
}

} // namespace llmc::runtime
