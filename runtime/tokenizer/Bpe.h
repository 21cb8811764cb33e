//===- Bpe.h - the BPE model of tokenizer.json ------------------*- C++ -*-===//
//
// Byte-pair encoding as the reference implements it: a word starts as its
// characters (or their <0xXX> byte tokens, or the unknown token), then the
// adjacent pair with the lowest merge rank is merged, the leftmost first on
// ties, until no pair can be merged. A priority queue keeps this
// O(n log n) in the word's length, and a cache keeps repeated words cheap.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENIZER_BPE_H
#define LLMC_RUNTIME_TOKENIZER_BPE_H

#include "runtime/tokenizer/JsonNode.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmc::runtime::tokenizer {

/// Token strings to ids: open addressing over the vocabulary's own strings.
class VocabularyIndex {
public:
  /// Indexes `tokens` (the string of each id; ids whose `present` is false are left out).
  void build(const std::vector<std::string> &tokens, const std::vector<bool> &present);
  std::optional<int32_t> find(std::string_view token) const;

private:
  const std::vector<std::string> *tokens = nullptr;
  std::vector<int32_t> slots; // ids, -1 for an empty slot
  size_t mask = 0;
};

/// Merge rules: (left id, right id) to (rank, merged id).
class MergeTable {
public:
  struct Merge {
    int32_t rank;
    int32_t mergedId;
  };
  void reserve(size_t numMerges);
  /// Adds a rule; a later rule for the same pair replaces the earlier one.
  void insert(int32_t left, int32_t right, Merge merge);
  const Merge *find(int32_t left, int32_t right) const;

private:
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  size_t slotOf(uint64_t key) const;
  std::vector<Slot> slots;
  size_t mask = 0;
  size_t count = 0;
};

/// Words already encoded and their ids, looked up without copying the word.
/// It is emptied when full, so that it follows what is being encoded.
class WordCache {
public:
  /// Appends the ids of `word` to `ids` if the cache has them.
  bool find(std::string_view word, std::vector<int32_t> &ids) const;
  void insert(std::string_view word, const int32_t *wordIds, size_t numIds);

private:
  struct Slot {
    uint64_t hash; // 0: empty
    uint32_t keyOffset, keyLength, idsOffset, numIds;
  };
  static constexpr size_t kSlots = 1 << 16;
  std::vector<Slot> slots;
  std::string keys;
  std::vector<int32_t> idStore;
  size_t count = 0;
};

class BpeModel {
public:
  /// The "model" of a tokenizer.json; throws Error unless it is a BPE model
  /// this runtime supports whose merges name tokens of its vocabulary.
  static std::unique_ptr<BpeModel> parse(const JsonNode &model);

  /// Appends the ids of `word` (well-formed UTF-8); thread-safe.
  void tokenize(std::string_view word, std::vector<int32_t> &ids) const;

  std::optional<int32_t> tokenToId(std::string_view token) const { return index.find(token); }
  /// The token string of `id`, or null when the vocabulary has no such id.
  const std::string *idToToken(int32_t id) const;
  /// One past the largest id of the vocabulary.
  int32_t idLimit() const { return static_cast<int32_t>(tokens.size()); }
  /// The number of tokens in the vocabulary.
  int32_t size() const { return numTokens; }

private:
  BpeModel() = default;
  void mergeWord(std::string_view word, std::vector<int32_t> &ids) const;

  std::vector<std::string> tokens; // by id
  std::vector<bool> present;       // whether the vocabulary has the id
  int32_t numTokens = 0;
  VocabularyIndex index;
  MergeTable merges;
  std::optional<std::string> unknownToken;
  std::optional<std::string> continuingSubwordPrefix;
  std::optional<std::string> endOfWordSuffix;
  bool fuseUnknown = false;
  bool byteFallback = false;
  bool ignoreMerges = false;
  /// The ids of the <0xXX> byte tokens, -1 where the vocabulary lacks one.
  int32_t byteTokenIds[256];

  mutable std::mutex cacheMutex;
  mutable WordCache cache;
};

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_BPE_H
