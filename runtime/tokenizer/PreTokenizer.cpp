//===- PreTokenizer.cpp - splitting text into words -----------------------===//
#include "runtime/tokenizer/PreTokenizer.h"

#include "runtime/tokenizer/ByteLevel.h"
#include "runtime/tokenizer/Pattern.h"
#include "runtime/tokenizer/Unicode.h"
#include "runtime/tokenizer/Utf8.h"

#include <algorithm>

namespace llmc::runtime::tokenizer {
namespace {

/// GPT-2's word pattern, which the ByteLevel pre-tokenizer splits with.
constexpr const char *kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

/// What becomes of the matches when a word is split at them.
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

/// A stretch of a word: a match of the splitting pattern or the text between two.
struct Segment {
  size_t begin, end;
  bool isMatch;
};

/// The segments that cover `text`, from its matches (sorted, not overlapping).
void segmentsFromMatches(size_t textSize, const std::vector<Match> &matches, bool invert,
                         std::vector<Segment> &segments) {
  segments.clear();
  size_t previous = 0;
  for (const Match &match : matches) {
    if (previous != match.begin) segments.push_back({previous, match.begin, invert});
    segments.push_back({match.begin, match.end, !invert});
    previous = match.end;
  }
  if (previous != textSize) segments.push_back({previous, textSize, invert});
}

/// The ranges of the pieces that `behavior` makes of the segments, as the
/// reference computes them (including its quirks, e.g. MergedWithPrevious
/// keeps a second match in a row as a piece of its own).
void applyBehavior(const std::vector<Segment> &segments, SplitBehavior behavior,
                   std::vector<Match> &pieces) {
  pieces.clear();
  bool previousMatch = false;
  switch (behavior) {
  case SplitBehavior::Removed:
    for (const Segment &segment : segments)
      if (!segment.isMatch) pieces.push_back({segment.begin, segment.end});
    return;
  case SplitBehavior::Isolated:
    for (const Segment &segment : segments) pieces.push_back({segment.begin, segment.end});
    return;
  case SplitBehavior::Contiguous:
    for (const Segment &segment : segments) {
      if (segment.isMatch == previousMatch && !pieces.empty())
        pieces.back().end = segment.end;
      else
        pieces.push_back({segment.begin, segment.end});
      previousMatch = segment.isMatch;
    }
    return;
  case SplitBehavior::MergedWithPrevious:
    for (const Segment &segment : segments) {
      if (segment.isMatch && !previousMatch && !pieces.empty())
        pieces.back().end = segment.end;
      else
        pieces.push_back({segment.begin, segment.end});
      previousMatch = segment.isMatch;
    }
    return;
  case SplitBehavior::MergedWithNext:
    for (auto segment = segments.rbegin(); segment != segments.rend(); ++segment) {
      if (segment->isMatch && !previousMatch && !pieces.empty())
        pieces.back().begin = segment->begin;
      else
        pieces.push_back({segment->begin, segment->end});
      previousMatch = segment->isMatch;
    }
    std::reverse(pieces.begin(), pieces.end());
    return;
  }
}

/// Splits every word at the matches `findMatches(text, matches)` reports.
template <typename FindMatches>
void splitWords(std::vector<Word> &words, SplitBehavior behavior, bool invert,
                FindMatches &&findMatches) {
  std::vector<Word> result;
  result.reserve(words.size());
  std::vector<Match> matches, pieces;
  std::vector<Segment> segments;
  for (Word &word : words) {
    matches.clear();
    findMatches(word.text, matches);
    segmentsFromMatches(word.text.size(), matches, invert, segments);
    applyBehavior(segments, behavior, pieces);
    for (const Match &piece : pieces) {
      if (piece.begin == piece.end) continue;
      bool atStart = word.atInputStart && piece.begin == 0;
      if (piece.begin == 0 && piece.end == word.text.size())
        result.push_back({std::move(word.text), atStart});
      else
        result.push_back({word.text.substr(piece.begin, piece.end - piece.begin), atStart});
    }
  }
  words = std::move(result);
}

/// Match finding for a character class: every character it holds is a match of its own.
template <typename Predicate> auto characterMatches(Predicate &&predicate) {
  return [predicate](const std::string &text, std::vector<Match> &matches) {
    for (size_t offset = 0; offset < text.size();) {
      size_t begin = offset;
      char32_t character = decodeUtf8(text, offset);
      if (predicate(character)) matches.push_back({begin, offset});
    }
  };
}

/// GPT-2's: a space before each word that lacks one (add_prefix_space), the
/// GPT-2 word pattern (use_regex), then every byte to its alphabet character.
class ByteLevelPreTokenizer : public PreTokenizer {
public:
  ByteLevelPreTokenizer(bool addPrefixSpace, bool useRegex)
      : addPrefixSpace(addPrefixSpace),
        wordPattern(useRegex ? std::make_unique<Regex>(Regex::pattern(kGpt2Pattern)) : nullptr) {}

  void preTokenize(std::vector<Word> &words) const override {
    if (addPrefixSpace)
      for (Word &word : words)
        if (word.text.front() != ' ') word.text.insert(0, 1, ' ');
    if (wordPattern)
      splitWords(words, SplitBehavior::Isolated, false,
                 [&](const std::string &text, std::vector<Match> &matches) {
                   wordPattern->findAll(text, matches);
                 });
    std::string mapped;
    for (Word &word : words) {
      mapped.clear();
      appendByteLevelCharacters(mapped, word.text);
      word.text.swap(mapped);
    }
  }

private:
  bool addPrefixSpace;
  std::unique_ptr<Regex> wordPattern;
};

/// Splits at the matches of a pattern (or, inverted, at what lies between them).
class SplitPreTokenizer : public PreTokenizer {
public:
  SplitPreTokenizer(Regex pattern, SplitBehavior behavior, bool invert)
      : pattern(std::move(pattern)), behavior(behavior), invert(invert) {}

  void preTokenize(std::vector<Word> &words) const override {
    splitWords(words, behavior, invert, [&](const std::string &text, std::vector<Match> &matches) {
      pattern.findAll(text, matches);
    });
  }

private:
  Regex pattern;
  SplitBehavior behavior;
  bool invert;
};

/// Puts numbers (Rust's char::is_numeric) apart: each digit alone, or runs of them.
class DigitsPreTokenizer : public PreTokenizer {
public:
  explicit DigitsPreTokenizer(bool individualDigits) : individualDigits(individualDigits) {}

  void preTokenize(std::vector<Word> &words) const override {
    splitWords(words, individualDigits ? SplitBehavior::Isolated : SplitBehavior::Contiguous, false,
               characterMatches(isNumeric));
  }

private:
  bool individualDigits;
};

/// SentencePiece's word marking: spaces become the replacement character
/// ("▁"), which may be prepended, and words may be split before each.
class MetaspacePreTokenizer : public PreTokenizer {
public:
  MetaspacePreTokenizer(char32_t replacement, PrependScheme scheme, bool split)
      : replacement(replacement), scheme(scheme), split(split) {
    appendUtf8(replacementText, replacement);
  }

  void preTokenize(std::vector<Word> &words) const override {
    std::string replaced;
    for (Word &word : words) {
      replaced.clear();
      for (char c : word.text) {
        if (c == ' ')
          replaced += replacementText;
        else
          replaced += c;
      }
      bool startsMarked = replaced.compare(0, replacementText.size(), replacementText) == 0;
      bool prepend = !startsMarked && (scheme == PrependScheme::Always ||
                                       (scheme == PrependScheme::First && word.atInputStart));
      word.text = prepend ? replacementText + replaced : replaced;
    }
    if (split)
      splitWords(words, SplitBehavior::MergedWithNext, false,
                 characterMatches([this](char32_t c) { return c == replacement; }));
  }

private:
  char32_t replacement;
  std::string replacementText;
  PrependScheme scheme;
  bool split;
};

class SequencePreTokenizer : public PreTokenizer {
public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps(std::move(steps)) {}
  void preTokenize(std::vector<Word> &words) const override {
    for (const auto &step : steps) step->preTokenize(words);
  }

private:
  std::vector<std::unique_ptr<PreTokenizer>> steps;
};

SplitBehavior parseBehavior(const JsonNode &node) {
  std::string name = node.string();
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  node.fail("unknown split behavior '" + name + "'");
}

/// Metaspace's replacement: exactly one character.
char32_t parseReplacement(const JsonNode &node) {
  std::string text = node.string();
  if (text.empty() || countUtf8Characters(text) != 1) node.fail("expected one character");
  size_t offset = 0;
  return decodeUtf8(text, offset);
}

} // namespace

PrependScheme parsePrependScheme(const JsonNode &node) {
  PrependScheme scheme = PrependScheme::Always;
  if (node.has("prepend_scheme")) {
    JsonNode field = node["prepend_scheme"];
    std::string name = field.string();
    if (name == "first")
      scheme = PrependScheme::First;
    else if (name == "never")
      scheme = PrependScheme::Never;
    else if (name != "always")
      field.fail("unknown prepend_scheme '" + name + "'");
  }
  // The older form: add_prefix_space false means never.
  if (node.has("add_prefix_space") && !node["add_prefix_space"].boolean()) {
    if (scheme != PrependScheme::Never)
      node.fail("add_prefix_space does not match declared prepend_scheme");
    scheme = PrependScheme::Never;
  }
  return scheme;
}

std::unique_ptr<PreTokenizer> parsePreTokenizer(const JsonNode &node) {
  std::string type =
      node.type("pre-tokenizer", {"ByteLevel", "Split", "Digits", "Metaspace", "Sequence"});
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelPreTokenizer>(node.booleanOr("add_prefix_space", true),
                                                   node.booleanOr("use_regex", true));
  if (type == "Split")
    return std::make_unique<SplitPreTokenizer>(parsePattern(node["pattern"]),
                                               parseBehavior(node["behavior"]),
                                               node.booleanOr("invert", false));
  if (type == "Digits")
    return std::make_unique<DigitsPreTokenizer>(node.booleanOr("individual_digits", false));
  if (type == "Metaspace")
    return std::make_unique<MetaspacePreTokenizer>(parseReplacement(node["replacement"]),
                                                   parsePrependScheme(node),
                                                   node.booleanOr("split", true));
  JsonNode list = node["pretokenizers"];
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  for (size_t i = 0; i < list.arraySize(); ++i) steps.push_back(parsePreTokenizer(list.element(i)));
  return std::make_unique<SequencePreTokenizer>(std::move(steps));
}

} // namespace llmc::runtime::tokenizer
