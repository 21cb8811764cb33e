//===- AddedVocabulary.h - added and special tokens -------------*- C++ -*-===//
//
// The tokens of tokenizer.json's "added_tokens" are found in the input before
// anything else happens to it and are never split: those marked
// normalized=false in the raw text, the others in the normalized text. Each
// match may take the whitespace around it (lstrip, rstrip) or be refused
// inside a word (single_word), as in the reference.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENIZER_ADDEDVOCABULARY_H
#define LLMC_RUNTIME_TOKENIZER_ADDEDVOCABULARY_H

#include "runtime/tokenizer/JsonNode.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace llmc::runtime::tokenizer {

class BpeModel;
class Normalizer;

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool singleWord = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
  /// What the token matches and decodes to: its content, normalized when it is `normalized`.
  std::string text;
};

/// A stretch of the input: an added token, or text between added tokens.
struct TextSegment {
  std::string text; // empty for an added token
  /// The added token's id; -1 for text.
  int32_t tokenId;
  /// Whether it starts where the input starts.
  bool atInputStart;
};

/// Finds the leftmost, and there the longest, of a set of strings.
class TokenMatcher {
public:
  void add(std::string_view text, int32_t value);
  bool empty() const { return nodes.size() <= 1; }
  /// The non-overlapping leftmost-longest matches in `text`: (begin, end, value).
  struct Found {
    size_t begin, end;
    int32_t value;
  };
  void findAll(std::string_view text, std::vector<Found> &found) const;

private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> children; // sorted by byte
    int32_t value = -1;
  };
  int32_t childOf(int32_t node, unsigned char byte) const;
  std::vector<Node> nodes{Node()};
  std::array<bool, 256> startsMatch{};
};

class AddedVocabulary {
public:
  /// The "added_tokens" list. Ids are given as the reference gives them: a
  /// token already in `model` keeps its id, a new one takes the next free id.
  void parse(const JsonNode &list, const BpeModel &model, const Normalizer *normalizer);

  /// Splits every text segment at the added tokens with normalized == `normalized`.
  void split(std::vector<TextSegment> &segments, bool normalized) const;

  const AddedToken *byId(int32_t id) const;
  std::optional<int32_t> idOf(std::string_view content) const;
  /// Whether `token` is the content of a special token (decoding may skip them).
  bool isSpecialContent(const std::string &token) const { return specialContents.count(token) > 0; }
  const std::vector<AddedToken> &tokens() const { return addedTokens; }

private:
  std::vector<AddedToken> addedTokens;
  std::unordered_map<int32_t, size_t> indexById;
  std::unordered_map<std::string, int32_t> idByContent;
  std::unordered_set<std::string> specialContents;
  TokenMatcher rawMatcher, normalizedMatcher;
};

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_ADDEDVOCABULARY_H
