//===- Unicode.cpp - character properties and normalization forms ---------===//
#include "runtime/tokenizer/Unicode.h"

#include "runtime/core/Error.h"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>

namespace llmc::runtime::tokenizer {

bool isNumeric(char32_t codePoint) {
  int8_t category = u_charType(static_cast<UChar32>(codePoint));
  return category == U_DECIMAL_DIGIT_NUMBER || category == U_LETTER_NUMBER ||
         category == U_OTHER_NUMBER;
}

bool isWhitespace(char32_t codePoint) { return u_isUWhiteSpace(static_cast<UChar32>(codePoint)); }

bool isWordCharacter(char32_t codePoint) {
  auto c = static_cast<UChar32>(codePoint);
  int32_t mask = U_GET_GC_MASK(c);
  return u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || (mask & U_GC_M_MASK) ||
         (mask & (U_GC_ND_MASK | U_GC_PC_MASK)) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL);
}

std::string normalizeUnicode(std::string_view text, NormalizationForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2 *normalizer = nullptr;
  switch (form) {
  case NormalizationForm::NFC:
    normalizer = icu::Normalizer2::getNFCInstance(status);
    break;
  case NormalizationForm::NFD:
    normalizer = icu::Normalizer2::getNFDInstance(status);
    break;
  case NormalizationForm::NFKC:
    normalizer = icu::Normalizer2::getNFKCInstance(status);
    break;
  case NormalizationForm::NFKD:
    normalizer = icu::Normalizer2::getNFKDInstance(status);
    break;
  }
  if (U_FAILURE(status))
    throw Error(std::string("ICU normalizer unavailable: ") + u_errorName(status));
  std::string result;
  result.reserve(text.size());
  icu::StringByteSink<std::string> sink(&result);
  normalizer->normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())),
                            sink, nullptr, status);
  if (U_FAILURE(status))
    throw Error(std::string("Unicode normalization failed: ") + u_errorName(status));
  return result;
}

} // namespace llmc::runtime::tokenizer
