//===- Unicode.h - character properties and normalization forms -*- C++ -*-===//
//
// The Unicode data the tokenizer needs beyond its regexes, from ICU: the
// character classes that the reference tokenizer takes from Rust's standard
// library and regex crate, and the normalization forms.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENIZER_UNICODE_H
#define LLMC_RUNTIME_TOKENIZER_UNICODE_H

#include <string>
#include <string_view>

namespace llmc::runtime::tokenizer {

/// Rust's char::is_numeric: general category Nd, Nl or No.
bool isNumeric(char32_t codePoint);

/// The White_Space property (Rust's char::is_whitespace, the regex crate's \s).
bool isWhitespace(char32_t codePoint);

/// The regex crate's \w: Alphabetic, a mark, Nd, Pc or Join_Control.
bool isWordCharacter(char32_t codePoint);

enum class NormalizationForm { NFC, NFD, NFKC, NFKD };

/// `text` (well-formed UTF-8) in the given normalization form.
std::string normalizeUnicode(std::string_view text, NormalizationForm form);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_UNICODE_H
