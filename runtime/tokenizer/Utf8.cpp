//===- Utf8.cpp - UTF-8 scanning, validation and lossy decoding -----------===//
#include "runtime/tokenizer/Utf8.h"

namespace llmc::runtime::tokenizer {

Utf8Sequence scanUtf8Sequence(std::string_view bytes) {
  auto byteAt = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  unsigned char lead = byteAt(0);
  if (lead < 0x80) return {1, true, false};
  // The lead byte fixes the length and the range of the second byte; the
  // narrower ranges exclude overlong forms, surrogates and values past U+10FFFF.
  size_t needed = 0;
  unsigned char secondLow = 0x80, secondHigh = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    needed = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    needed = 3;
    if (lead == 0xE0) secondLow = 0xA0;
    if (lead == 0xED) secondHigh = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    needed = 4;
    if (lead == 0xF0) secondLow = 0x90;
    if (lead == 0xF4) secondHigh = 0x8F;
  } else {
    return {1, false, false};
  }
  for (size_t i = 1; i < needed; ++i) {
    if (i == bytes.size()) return {i, false, true};
    unsigned char low = i == 1 ? secondLow : 0x80, high = i == 1 ? secondHigh : 0xBF;
    if (byteAt(i) < low || byteAt(i) > high) return {i, false, false};
  }
  return {needed, true, false};
}

size_t findInvalidUtf8(std::string_view text) {
  size_t offset = 0;
  while (offset < text.size()) {
    // ASCII runs are the common case.
    if (static_cast<unsigned char>(text[offset]) < 0x80) {
      ++offset;
      continue;
    }
    Utf8Sequence sequence = scanUtf8Sequence(text.substr(offset));
    if (!sequence.wellFormed) return offset;
    offset += sequence.length;
  }
  return std::string_view::npos;
}

char32_t decodeUtf8(std::string_view text, size_t &offset) {
  auto byteAt = [&](size_t i) {
    return static_cast<char32_t>(static_cast<unsigned char>(text[i]));
  };
  char32_t lead = byteAt(offset);
  size_t length = utf8Length(static_cast<unsigned char>(lead));
  char32_t codePoint = length == 1   ? lead
                       : length == 2 ? lead & 0x1F
                       : length == 3 ? lead & 0x0F
                                     : lead & 0x07;
  for (size_t i = 1; i < length; ++i) codePoint = (codePoint << 6) | (byteAt(offset + i) & 0x3F);
  offset += length;
  return codePoint;
}

void appendUtf8(std::string &out, char32_t codePoint) {
  if (codePoint < 0x80) {
    out += static_cast<char>(codePoint);
  } else if (codePoint < 0x800) {
    out += static_cast<char>(0xC0 | (codePoint >> 6));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  } else if (codePoint < 0x10000) {
    out += static_cast<char>(0xE0 | (codePoint >> 12));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (codePoint >> 18));
    out += static_cast<char>(0x80 | ((codePoint >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((codePoint >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (codePoint & 0x3F));
  }
}

void appendLossyUtf8(std::string &out, std::string_view bytes) {
  size_t offset = 0, validFrom = 0;
  while (offset < bytes.size()) {
    if (static_cast<unsigned char>(bytes[offset]) < 0x80) {
      ++offset;
      continue;
    }
    Utf8Sequence sequence = scanUtf8Sequence(bytes.substr(offset));
    if (sequence.wellFormed) {
      offset += sequence.length;
      continue;
    }
    out.append(bytes.substr(validFrom, offset - validFrom));
    out.append(kReplacementCharacter);
    offset += sequence.length;
    validFrom = offset;
  }
  out.append(bytes.substr(validFrom));
}

bool endsWithTruncatedUtf8(std::string_view bytes) {
  // A truncated sequence starts with one of the last three bytes.
  size_t begin = bytes.size() > 3 ? bytes.size() - 3 : 0;
  for (size_t offset = begin; offset < bytes.size(); ++offset) {
    unsigned char byte = static_cast<unsigned char>(bytes[offset]);
    if (byte < 0xC2 || byte > 0xF4) continue; // not a lead byte of a multi-byte sequence
    Utf8Sequence sequence = scanUtf8Sequence(bytes.substr(offset));
    if (sequence.truncated) return true;
  }
  return false;
}

size_t countUtf8Characters(std::string_view text) {
  size_t count = 0;
  for (char byte : text)
    if ((static_cast<unsigned char>(byte) & 0xC0) != 0x80) ++count;
  return count;
}

} // namespace llmc::runtime::tokenizer
