//===- Bpe.cpp - the BPE model of tokenizer.json --------------------------===//
#include "runtime/tokenizer/Bpe.h"

#include "runtime/core/Error.h"
#include "runtime/tokenizer/Utf8.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace llmc::runtime::tokenizer {
namespace {

/// The largest id a vocabulary may use: ids index arrays here.
constexpr int64_t kMaxTokenId = (1 << 24) - 1;
/// Words up to this many bytes are cached (longer ones are rarely repeated).
constexpr size_t kMaxCachedWordBytes = 256;

/// FNV-1a over 8-byte chunks: cheap for the short strings of a vocabulary.
uint64_t hashBytes(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t chunk;
    std::memcpy(&chunk, bytes.data() + i, 8);
    hash = (hash ^ chunk) * 0x100000001b3ULL;
    hash ^= hash >> 29;
  }
  for (; i < bytes.size(); ++i)
    hash = (hash ^ static_cast<unsigned char>(bytes[i])) * 0x100000001b3ULL;
  return hash ^ (hash >> 32);
}

uint64_t mixKey(uint64_t key) {
  key *= 0x9E3779B97F4A7C15ULL;
  return key ^ (key >> 31);
}

size_t tableSizeFor(size_t entries) {
  size_t size = 16;
  while (size < entries * 2) size *= 2;
  return size;
}

/// A symbol of a word being merged: a token and its neighbours (indices; -1 at the ends).
struct Symbol {
  int32_t id;
  int32_t previous;
  int32_t next;
  bool removed;
};

/// A merge waiting in the queue: lowest rank first, then leftmost.
struct PendingMerge {
  int32_t rank;
  int32_t position;
  int32_t mergedId;
  bool operator<(const PendingMerge &other) const {
    // The heap functions put the largest first: invert the order.
    return rank != other.rank ? rank > other.rank : position > other.position;
  }
};

/// Reused buffers of mergeWord, one set per thread.
struct MergeScratch {
  std::vector<Symbol> symbols;
  std::vector<PendingMerge> queue;
  std::string piece;
};
} // namespace

bool WordCache::find(std::string_view word, std::vector<int32_t> &ids) const {
  if (slots.empty()) return false;
  uint64_t hash = hashBytes(word) | 1;
  for (size_t slot = hash & (kSlots - 1);; slot = (slot + 1) & (kSlots - 1)) {
    const Slot &entry = slots[slot];
    if (entry.hash == 0) return false;
    if (entry.hash == hash &&
        word == std::string_view(keys).substr(entry.keyOffset, entry.keyLength)) {
      ids.insert(ids.end(), idStore.begin() + entry.idsOffset,
                 idStore.begin() + entry.idsOffset + entry.numIds);
      return true;
    }
  }
}

void WordCache::insert(std::string_view word, const int32_t *wordIds, size_t numIds) {
  // Half full at most, so that probes stay short.
  if (count == kSlots / 2 || slots.empty()) {
    slots.assign(kSlots, Slot{0, 0, 0, 0, 0});
    keys.clear();
    idStore.clear();
    count = 0;
  }
  uint64_t hash = hashBytes(word) | 1;
  size_t slot = hash & (kSlots - 1);
  while (slots[slot].hash != 0) {
    if (slots[slot].hash == hash &&
        word == std::string_view(keys).substr(slots[slot].keyOffset, slots[slot].keyLength))
      return; // another thread cached it first
    slot = (slot + 1) & (kSlots - 1);
  }
  slots[slot] = {hash, static_cast<uint32_t>(keys.size()), static_cast<uint32_t>(word.size()),
                 static_cast<uint32_t>(idStore.size()), static_cast<uint32_t>(numIds)};
  keys.append(word);
  idStore.insert(idStore.end(), wordIds, wordIds + numIds);
  ++count;
}

void VocabularyIndex::build(const std::vector<std::string> &tokenStrings,
                            const std::vector<bool> &present) {
  tokens = &tokenStrings;
  slots.assign(tableSizeFor(tokenStrings.size()), -1);
  mask = slots.size() - 1;
  for (size_t id = 0; id < tokenStrings.size(); ++id) {
    if (!present[id]) continue;
    size_t slot = hashBytes(tokenStrings[id]) & mask;
    while (slots[slot] >= 0) slot = (slot + 1) & mask;
    slots[slot] = static_cast<int32_t>(id);
  }
}

std::optional<int32_t> VocabularyIndex::find(std::string_view token) const {
  if (slots.empty()) return std::nullopt;
  for (size_t slot = hashBytes(token) & mask;; slot = (slot + 1) & mask) {
    int32_t id = slots[slot];
    if (id < 0) return std::nullopt;
    if ((*tokens)[id] == token) return id;
  }
}

void MergeTable::reserve(size_t numMerges) {
  slots.assign(tableSizeFor(numMerges), Slot{UINT64_MAX, {0, 0}});
  mask = slots.size() - 1;
  count = 0;
}

size_t MergeTable::slotOf(uint64_t key) const {
  size_t slot = mixKey(key) & mask;
  while (slots[slot].key != UINT64_MAX && slots[slot].key != key) slot = (slot + 1) & mask;
  return slot;
}

void MergeTable::insert(int32_t left, int32_t right, Merge merge) {
  uint64_t key = (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  size_t slot = slotOf(key);
  if (slots[slot].key == UINT64_MAX) ++count;
  slots[slot] = {key, merge};
}

const MergeTable::Merge *MergeTable::find(int32_t left, int32_t right) const {
  uint64_t key = (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  const Slot &slot = slots[slotOf(key)];
  return slot.key == key ? &slot.merge : nullptr;
}

std::unique_ptr<BpeModel> BpeModel::parse(const JsonNode &model) {
  std::string type = model.has("type") ? model["type"].string() : "";
  if (type != "BPE")
    model.fail("model type '" + type +
               "' is not supported (supported: BPE; WordPiece, Unigram and WordLevel are not)");
  std::unique_ptr<BpeModel> bpe(new BpeModel());
  if (model.has("dropout")) {
    JsonNode dropout = model["dropout"];
    if (!dropout.json().is_number() || dropout.json().get<double>() < 0 ||
        dropout.json().get<double>() > 1)
      dropout.fail("expected a number from 0 to 1");
    if (dropout.json().get<double>() > 0)
      dropout.fail("BPE dropout is not supported (it makes encoding random)");
  }
  if (model.has("unk_token")) bpe->unknownToken = model["unk_token"].string();
  if (model.has("continuing_subword_prefix"))
    bpe->continuingSubwordPrefix = model["continuing_subword_prefix"].string();
  if (model.has("end_of_word_suffix")) bpe->endOfWordSuffix = model["end_of_word_suffix"].string();
  bpe->fuseUnknown = model.booleanOr("fuse_unk", false);
  bpe->byteFallback = model.booleanOr("byte_fallback", false);
  bpe->ignoreMerges = model.booleanOr("ignore_merges", false);

  JsonNode vocab = model["vocab"];
  if (!vocab.json().is_object()) vocab.fail("expected an object of token: id");
  for (auto entry = vocab.json().begin(); entry != vocab.json().end(); ++entry) {
    if (!entry->is_number_integer() || entry->get<int64_t>() < 0 ||
        entry->get<int64_t>() > kMaxTokenId)
      vocab.fail("the id of '" + entry.key() + "' must be an integer from 0 to " +
                 std::to_string(kMaxTokenId));
    auto id = static_cast<size_t>(entry->get<int64_t>());
    if (id >= bpe->tokens.size()) {
      bpe->tokens.resize(id + 1);
      bpe->present.resize(id + 1, false);
    }
    // Two tokens with one id: the reverse map keeps one of them, as the reference's does.
    if (!bpe->present[id]) ++bpe->numTokens;
    bpe->tokens[id] = entry.key();
    bpe->present[id] = true;
  }
  bpe->index.build(bpe->tokens, bpe->present);
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    bpe->byteTokenIds[byte] = bpe->index.find(name).value_or(-1);
  }

  JsonNode mergeList = model["merges"];
  size_t numMerges = mergeList.arraySize();
  bpe->merges.reserve(numMerges);
  size_t prefixLength = bpe->continuingSubwordPrefix ? bpe->continuingSubwordPrefix->size() : 0;
  int32_t rank = 0;
  for (size_t i = 0; i < numMerges; ++i) {
    JsonNode merge = mergeList.element(i);
    std::string left, right;
    if (merge.json().is_string()) {
      // The older form, "left right"; "#version" lines are comments.
      std::string line = merge.string();
      if (line.rfind("#version", 0) == 0) continue;
      size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
        merge.fail("'" + line + "' is not two tokens separated by one space");
      left = line.substr(0, space);
      right = line.substr(space + 1);
    } else {
      if (merge.arraySize() != 2) merge.fail("expected a pair of tokens");
      left = merge.element(0).string();
      right = merge.element(1).string();
    }
    auto lookUp = [&](const std::string &token) {
      std::optional<int32_t> id = bpe->index.find(token);
      if (!id)
        merge.fail("merge of '" + left + "' and '" + right + "': '" + token +
                   "' is not in the vocabulary");
      return *id;
    };
    int32_t leftId = lookUp(left), rightId = lookUp(right);
    if (right.size() < prefixLength)
      merge.fail("'" + right + "' is shorter than the continuing_subword_prefix");
    int32_t mergedId = lookUp(left + right.substr(prefixLength));
    bpe->merges.insert(leftId, rightId, {rank++, mergedId});
  }
  return bpe;
}

const std::string *BpeModel::idToToken(int32_t id) const {
  if (id < 0 || id >= idLimit() || !present[id]) return nullptr;
  return &tokens[id];
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t> &ids) const {
  if (word.empty()) return;
  if (ignoreMerges) {
    if (std::optional<int32_t> id = index.find(word)) {
      ids.push_back(*id);
      return;
    }
  }
  bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cacheMutex);
    if (cache.find(word, ids)) return;
  }
  size_t first = ids.size();
  mergeWord(word, ids);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cacheMutex);
    cache.insert(word, ids.data() + first, ids.size() - first);
  }
}

void BpeModel::mergeWord(std::string_view word, std::vector<int32_t> &ids) const {
  thread_local MergeScratch scratch;
  std::vector<Symbol> &symbols = scratch.symbols;
  symbols.clear();
  auto addSymbol = [&](int32_t id) {
    int32_t position = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, position - 1, -1, false});
    if (position > 0) symbols[position - 1].next = position;
  };

  // The initial symbols: a character's token, else its byte tokens, else the
  // unknown token (fused with a preceding unknown one when fuse_unk is set).
  std::optional<int32_t> pendingUnknown;
  for (size_t offset = 0; offset < word.size();) {
    size_t begin = offset;
    offset += utf8Length(static_cast<unsigned char>(word[offset]));
    std::string &piece = scratch.piece;
    piece.clear();
    if (begin > 0 && continuingSubwordPrefix) piece += *continuingSubwordPrefix;
    piece.append(word.substr(begin, offset - begin));
    if (offset == word.size() && endOfWordSuffix) piece += *endOfWordSuffix;

    if (std::optional<int32_t> id = index.find(piece)) {
      if (pendingUnknown) addSymbol(*std::exchange(pendingUnknown, std::nullopt));
      addSymbol(*id);
      continue;
    }
    if (byteFallback && std::all_of(piece.begin(), piece.end(), [&](char byte) {
          return byteTokenIds[static_cast<unsigned char>(byte)] >= 0;
        })) {
      // The reference adds byte tokens before a pending unknown token.
      for (char byte : piece) addSymbol(byteTokenIds[static_cast<unsigned char>(byte)]);
      continue;
    }
    if (!unknownToken) continue; // the reference drops the character
    std::optional<int32_t> unknownId = index.find(*unknownToken);
    if (!unknownId)
      throw Error("the BPE model's unk_token '" + *unknownToken + "' is not in its vocabulary");
    if (pendingUnknown && !fuseUnknown) addSymbol(*pendingUnknown);
    pendingUnknown = *unknownId;
  }
  if (pendingUnknown) addSymbol(*pendingUnknown);

  // A binary heap over reused storage (std::priority_queue would give it up).
  std::vector<PendingMerge> &queue = scratch.queue;
  queue.clear();
  auto push = [&](PendingMerge merge) {
    queue.push_back(merge);
    std::push_heap(queue.begin(), queue.end());
  };
  for (size_t position = 0; position + 1 < symbols.size(); ++position)
    if (const MergeTable::Merge *merge =
            merges.find(symbols[position].id, symbols[position + 1].id))
      queue.push_back({merge->rank, static_cast<int32_t>(position), merge->mergedId});
  std::make_heap(queue.begin(), queue.end());

  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end());
    PendingMerge top = queue.back();
    queue.pop_back();
    Symbol &left = symbols[top.position];
    if (left.removed || left.next < 0) continue;
    Symbol &right = symbols[left.next];
    // Entries go stale when a neighbour merged first: the pair must still be there.
    const MergeTable::Merge *current = merges.find(left.id, right.id);
    if (!current || current->mergedId != top.mergedId) continue;
    left.id = top.mergedId;
    left.next = right.next;
    right.removed = true;
    if (left.next >= 0) symbols[left.next].previous = top.position;
    if (left.previous >= 0)
      if (const MergeTable::Merge *merge = merges.find(symbols[left.previous].id, left.id))
        push({merge->rank, left.previous, merge->mergedId});
    if (left.next >= 0)
      if (const MergeTable::Merge *merge = merges.find(left.id, symbols[left.next].id))
        push({merge->rank, top.position, merge->mergedId});
  }
  for (const Symbol &symbol : symbols)
    if (!symbol.removed) ids.push_back(symbol.id);
}

} // namespace llmc::runtime::tokenizer
