//===- AddedVocabulary.cpp - added and special tokens ---------------------===//
#include "runtime/tokenizer/AddedVocabulary.h"

#include "runtime/tokenizer/Bpe.h"
#include "runtime/tokenizer/Normalizer.h"
#include "runtime/tokenizer/Unicode.h"
#include "runtime/tokenizer/Utf8.h"

#include <algorithm>

namespace llmc::runtime::tokenizer {
namespace {

/// The character that ends `text` (well-formed UTF-8, not empty).
char32_t lastCharacter(std::string_view text) {
  size_t begin = text.size() - 1;
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
  return decodeUtf8(text, begin);
}

char32_t firstCharacter(std::string_view text) {
  size_t offset = 0;
  return decodeUtf8(text, offset);
}

/// Where the whitespace that ends `text` begins (text.size() when none does).
size_t trailingWhitespaceBegin(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t begin = end - 1;
    while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80) --begin;
    size_t offset = begin;
    if (!isWhitespace(decodeUtf8(text, offset))) break;
    end = begin;
  }
  return end;
}

/// The length of the whitespace that starts `text`.
size_t leadingWhitespaceLength(std::string_view text) {
  size_t offset = 0;
  while (offset < text.size()) {
    size_t next = offset;
    if (!isWhitespace(decodeUtf8(text, next))) break;
    offset = next;
  }
  return offset;
}
} // namespace

void TokenMatcher::add(std::string_view text, int32_t value) {
  if (text.empty()) return;
  int32_t node = 0;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    int32_t child = childOf(node, byte);
    if (child < 0) {
      child = static_cast<int32_t>(nodes.size());
      nodes.emplace_back();
      auto &children = nodes[node].children;
      children.insert(
          std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t(-1))),
          {byte, child});
    }
    node = child;
  }
  nodes[node].value = value;
  startsMatch[static_cast<unsigned char>(text[0])] = true;
}

int32_t TokenMatcher::childOf(int32_t node, unsigned char byte) const {
  const auto &children = nodes[node].children;
  auto found =
      std::lower_bound(children.begin(), children.end(), std::make_pair(byte, int32_t(-1)));
  return found != children.end() && found->first == byte ? found->second : -1;
}

void TokenMatcher::findAll(std::string_view text, std::vector<Found> &found) const {
  if (empty()) return;
  size_t begin = 0;
  while (begin < text.size()) {
    if (!startsMatch[static_cast<unsigned char>(text[begin])]) {
      ++begin;
      continue;
    }
    int32_t node = 0, value = -1;
    size_t end = 0;
    for (size_t i = begin; i < text.size(); ++i) {
      node = childOf(node, static_cast<unsigned char>(text[i]));
      if (node < 0) break;
      if (nodes[node].value >= 0) {
        value = nodes[node].value;
        end = i + 1;
      }
    }
    if (value < 0) {
      ++begin;
      continue;
    }
    found.push_back({begin, end, value});
    begin = end;
  }
}

void AddedVocabulary::parse(const JsonNode &list, const BpeModel &model,
                            const Normalizer *normalizer) {
  int32_t nextId = model.size();
  for (size_t i = 0; i < list.arraySize(); ++i) {
    JsonNode entry = list.element(i);
    AddedToken token;
    token.content = entry["content"].string();
    token.singleWord = entry.booleanOr("single_word", false);
    token.lstrip = entry.booleanOr("lstrip", false);
    token.rstrip = entry.booleanOr("rstrip", false);
    token.special = entry.booleanOr("special", false);
    token.normalized = entry.booleanOr("normalized", !token.special);
    if (token.content.empty()) continue;

    auto known = idByContent.find(token.content);
    if (known != idByContent.end()) {
      const AddedToken &existing = addedTokens[indexById.at(known->second)];
      if (existing.singleWord == token.singleWord && existing.lstrip == token.lstrip &&
          existing.rstrip == token.rstrip && existing.normalized == token.normalized &&
          existing.special == token.special)
        continue;
      token.id = known->second;
    } else if (std::optional<int32_t> modelId = model.tokenToId(token.content)) {
      token.id = *modelId;
    } else {
      token.id = nextId++;
    }
    token.text = token.content;
    if (token.normalized && normalizer) normalizer->normalize(token.text);
    idByContent[token.content] = token.id;
    if (token.special) specialContents.insert(token.content);
    auto slot = indexById.find(token.id);
    if (slot != indexById.end()) {
      addedTokens[slot->second] = std::move(token);
    } else {
      indexById.emplace(token.id, addedTokens.size());
      addedTokens.push_back(std::move(token));
    }
  }
  for (const AddedToken &token : addedTokens)
    (token.normalized ? normalizedMatcher : rawMatcher).add(token.text, token.id);
}

const AddedToken *AddedVocabulary::byId(int32_t id) const {
  auto found = indexById.find(id);
  return found == indexById.end() ? nullptr : &addedTokens[found->second];
}

std::optional<int32_t> AddedVocabulary::idOf(std::string_view content) const {
  auto found = idByContent.find(std::string(content));
  if (found == idByContent.end()) return std::nullopt;
  return found->second;
}

void AddedVocabulary::split(std::vector<TextSegment> &segments, bool normalized) const {
  const TokenMatcher &matcher = normalized ? normalizedMatcher : rawMatcher;
  if (matcher.empty()) return;
  std::vector<TextSegment> result;
  std::vector<TokenMatcher::Found> found;
  for (TextSegment &segment : segments) {
    found.clear();
    if (segment.tokenId < 0) matcher.findAll(segment.text, found);
    if (found.empty()) {
      result.push_back(std::move(segment));
      continue;
    }
    std::string_view text = segment.text;
    auto addText = [&](size_t begin, size_t end) {
      if (begin < end)
        result.push_back(
            {std::string(text.substr(begin, end - begin)), -1, segment.atInputStart && begin == 0});
    };
    size_t textFrom = 0;
    for (const TokenMatcher::Found &match : found) {
      const AddedToken &token = *byId(match.value);
      size_t begin = match.begin, end = match.end;
      if (token.singleWord) {
        bool wordBefore = begin > 0 && isWordCharacter(lastCharacter(text.substr(0, begin)));
        bool wordAfter = end < text.size() && isWordCharacter(firstCharacter(text.substr(end)));
        if (wordBefore || wordAfter) continue;
      }
      if (token.lstrip) begin = std::max(trailingWhitespaceBegin(text.substr(0, begin)), textFrom);
      if (token.rstrip) end += leadingWhitespaceLength(text.substr(end));
      addText(textFrom, begin);
      result.push_back({std::string(), token.id, false});
      textFrom = end;
    }
    addText(textFrom, text.size());
  }
  segments = std::move(result);
}

} // namespace llmc::runtime::tokenizer
