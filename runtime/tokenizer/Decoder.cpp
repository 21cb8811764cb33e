//===- Decoder.cpp - token strings back to text ---------------------------===//
#include "runtime/tokenizer/Decoder.h"

#include "runtime/tokenizer/ByteLevel.h"
#include "runtime/tokenizer/Pattern.h"
#include "runtime/tokenizer/PreTokenizer.h"
#include "runtime/tokenizer/Utf8.h"

#include <optional>

namespace llmc::runtime::tokenizer {
namespace {

/// Joins the pieces into one.
void fuse(DecodeState &state) {
  std::string joined;
  for (const std::string &piece : state.pieces) joined += piece;
  state.pieces.assign(1, std::move(joined));
  state.fused = true;
}

/// Maps the byte-level characters back to bytes and the bytes to text,
/// ill-formed UTF-8 replaced. Text that ends in a character still missing
/// bytes is not final.
class ByteLevelDecoder : public Decoder {
public:
  void decode(DecodeState &state) const override {
    // After a fusion a piece whose characters fall outside the alphabet would
    // send the whole text through as it is, past any cut: never final.
    if (state.fused) state.final = false;
    std::string bytes;
    for (const std::string &piece : state.pieces) appendByteLevelBytes(bytes, piece);
    if (endsWithTruncatedUtf8(bytes)) state.final = false;
    std::string text;
    appendLossyUtf8(text, bytes);
    state.pieces.assign(1, std::move(text));
    state.fused = true;
  }
};

/// The replacement character back to spaces; the first token's are dropped
/// (they were prepended) unless the scheme is "never".
class MetaspaceDecoder : public Decoder {
public:
  MetaspaceDecoder(std::string replacement, PrependScheme scheme)
      : replacement(std::move(replacement)), scheme(scheme) {}

  void decode(DecodeState &state) const override {
    bool dropsFirst = scheme != PrependScheme::Never;
    if (state.fused && dropsFirst) state.final = false; // the whole text is the first token
    for (size_t i = 0; i < state.pieces.size(); ++i) {
      bool drop = i == 0 && state.atStart && dropsFirst;
      std::string &piece = state.pieces[i];
      std::string result;
      for (size_t at = 0; at < piece.size();) {
        if (piece.compare(at, replacement.size(), replacement) == 0) {
          if (!drop) result += ' ';
          at += replacement.size();
        } else {
          result += piece[at++];
        }
      }
      piece = std::move(result);
    }
  }

private:
  std::string replacement;
  PrependScheme scheme;
};

/// The byte a "<0xXX>" token stands for, parsed as Rust's u8::from_str_radix
/// does (which takes a '+' sign, so "<0x+A>" is byte 10).
std::optional<unsigned char> byteTokenValue(const std::string &piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return std::nullopt;
  auto hexDigit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  int high = hexDigit(piece[3]), low = hexDigit(piece[4]);
  if (piece[3] == '+' && low >= 0) return static_cast<unsigned char>(low);
  if (high < 0 || low < 0) return std::nullopt;
  return static_cast<unsigned char>(high * 16 + low);
}

/// Runs of <0xXX> tokens become their text, or one U+FFFD per byte when the
/// run is not well-formed UTF-8. Text that ends in such a run is not final:
/// one more byte token could still make the run ill-formed.
class ByteFallbackDecoder : public Decoder {
public:
  void decode(DecodeState &state) const override {
    if (state.fused) state.final = false;
    std::vector<std::string> result;
    std::string run;
    size_t runLength = 0;
    auto flushRun = [&] {
      if (runLength == 0) return;
      if (isValidUtf8(run)) {
        result.push_back(run);
      } else {
        for (size_t i = 0; i < runLength; ++i) result.emplace_back(kReplacementCharacter);
      }
      run.clear();
      runLength = 0;
    };
    bool endsInRun = false;
    for (std::string &piece : state.pieces) {
      std::optional<unsigned char> byte = byteTokenValue(piece);
      endsInRun = byte.has_value();
      if (byte) {
        run += static_cast<char>(*byte);
        ++runLength;
        continue;
      }
      flushRun();
      result.push_back(std::move(piece));
    }
    flushRun();
    if (endsInRun) state.final = false;
    state.pieces = std::move(result);
  }
};

class FuseDecoder : public Decoder {
public:
  void decode(DecodeState &state) const override { fuse(state); }
};

/// Strips up to `start` leading and `stop` trailing `content` characters off
/// each piece. Once the pieces are fused the start is the text's start (only
/// at the start of the whole decode) and the end is not final.
class StripDecoder : public Decoder {
public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content(std::move(content)), start(start), stop(stop) {}

  void decode(DecodeState &state) const override {
    bool stripStart = !state.fused || state.atStart;
    if (state.fused && stop > 0) state.final = false;
    for (std::string &piece : state.pieces) {
      size_t begin = 0, taken = 0;
      while (stripStart && taken < start && piece.compare(begin, content.size(), content) == 0) {
        begin += content.size();
        ++taken;
      }
      // A fused text that is all stripped could lose more at its start once
      // more text follows.
      if (state.fused && stripStart && taken < start && begin == piece.size()) state.final = false;
      size_t end = piece.size();
      for (size_t i = 0; i < stop && end >= begin + content.size() &&
                         piece.compare(end - content.size(), content.size(), content) == 0;
           ++i)
        end -= content.size();
      piece = piece.substr(begin, end - begin);
    }
  }

private:
  std::string content;
  size_t start, stop;
};

class ReplaceDecoder : public Decoder {
public:
  ReplaceDecoder(Regex pattern, std::string content, bool oneCharacterLiteral)
      : pattern(std::move(pattern)), content(std::move(content)),
        oneCharacterLiteral(oneCharacterLiteral) {}

  void decode(DecodeState &state) const override {
    // On fused text a longer pattern could match across the point where it was cut.
    if (state.fused && !oneCharacterLiteral) state.final = false;
    for (std::string &piece : state.pieces) piece = replaceAll(piece, pattern, content);
  }

private:
  Regex pattern;
  std::string content;
  bool oneCharacterLiteral;
};

class SequenceDecoder : public Decoder {
public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps) : steps(std::move(steps)) {}
  void decode(DecodeState &state) const override {
    for (const auto &step : steps) step->decode(state);
  }

private:
  std::vector<std::unique_ptr<Decoder>> steps;
};

/// A field that holds exactly one character.
std::string parseCharacter(const JsonNode &node) {
  std::string text = node.string();
  if (text.empty() || countUtf8Characters(text) != 1) node.fail("expected one character");
  return text;
}

size_t parseCount(const JsonNode &node, const char *key) {
  return node.has(key) ? static_cast<size_t>(node[key].integer(0, 1 << 20)) : 0;
}

} // namespace

std::unique_ptr<Decoder> parseDecoder(const JsonNode &node) {
  std::string type = node.type("decoder", {"ByteLevel", "Metaspace", "ByteFallback", "Fuse",
                                           "Strip", "Replace", "Sequence"});
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace")
    return std::make_unique<MetaspaceDecoder>(parseCharacter(node["replacement"]),
                                              parsePrependScheme(node));
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip")
    return std::make_unique<StripDecoder>(parseCharacter(node["content"]),
                                          parseCount(node, "start"), parseCount(node, "stop"));
  if (type == "Replace") {
    JsonNode pattern = node["pattern"];
    bool oneCharacterLiteral =
        pattern.has("String") && countUtf8Characters(pattern["String"].string()) == 1;
    return std::make_unique<ReplaceDecoder>(parsePattern(pattern), node["content"].string(),
                                            oneCharacterLiteral);
  }
  JsonNode list = node["decoders"];
  std::vector<std::unique_ptr<Decoder>> steps;
  for (size_t i = 0; i < list.arraySize(); ++i) steps.push_back(parseDecoder(list.element(i)));
  return std::make_unique<SequenceDecoder>(std::move(steps));
}

} // namespace llmc::runtime::tokenizer
