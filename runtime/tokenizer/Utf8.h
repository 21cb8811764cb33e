//===- Utf8.h - UTF-8 scanning, validation and lossy decoding ---*- C++ -*-===//
//
// The tokenizer works on UTF-8 bytes throughout. These helpers follow the
// Unicode Standard's table of well-formed byte sequences (Table 3-7) and its
// "maximal subpart" rule for replacing ill-formed ones with U+FFFD, which is
// what Rust's String::from_utf8_lossy (the reference tokenizer) and Python's
// bytes.decode(errors="replace") do.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENIZER_UTF8_H
#define LLMC_RUNTIME_TOKENIZER_UTF8_H

#include <cstddef>
#include <string>
#include <string_view>

namespace llmc::runtime::tokenizer {

/// U+FFFD REPLACEMENT CHARACTER in UTF-8.
inline constexpr std::string_view kReplacementCharacter = "\xEF\xBF\xBD";

/// What starts at some byte of a UTF-8 string: a well-formed sequence of
/// `length` bytes, or an ill-formed one whose maximal subpart is `length`
/// bytes (`truncated`: it is a proper prefix of a well-formed sequence cut
/// off by the end of the input).
struct Utf8Sequence {
  size_t length;
  bool wellFormed;
  bool truncated;
};

/// Scans the sequence that starts at `bytes[0]`; `bytes` must not be empty.
Utf8Sequence scanUtf8Sequence(std::string_view bytes);

/// The offset of the first ill-formed sequence of `text`, or npos.
size_t findInvalidUtf8(std::string_view text);

inline bool isValidUtf8(std::string_view text) {
  return findInvalidUtf8(text) == std::string_view::npos;
}

/// The code point at `offset` of well-formed UTF-8; advances `offset` past it.
char32_t decodeUtf8(std::string_view text, size_t &offset);

/// The byte length of the character that starts with `lead` in well-formed UTF-8.
inline size_t utf8Length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

void appendUtf8(std::string &out, char32_t codePoint);

/// Appends `bytes` to `out`, each maximal ill-formed subpart replaced by U+FFFD.
void appendLossyUtf8(std::string &out, std::string_view bytes);

/// Whether `bytes` ends in a proper prefix of a well-formed sequence, that is
/// in a character that more bytes could still complete.
bool endsWithTruncatedUtf8(std::string_view bytes);

/// The number of characters of well-formed UTF-8.
size_t countUtf8Characters(std::string_view text);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_UTF8_H
