//===- Blanks.h - the blanks between parts of generated text ----*- C++ -*-===//
//
// Tool calls and reasoning blocks are separated from the text around them
// by blanks (spaces, tabs, line breaks), which the API does not return.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_BLANKS_H
#define LLMC_RUNTIME_SERVER_BLANKS_H

#include <string_view>

namespace llmc::runtime::server {

inline bool isBlank(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

inline std::string_view trimLeadingBlanks(std::string_view text) {
  while (!text.empty() && isBlank(text.front())) text.remove_prefix(1);
  return text;
}

inline std::string_view trimTrailingBlanks(std::string_view text) {
  while (!text.empty() && isBlank(text.back())) text.remove_suffix(1);
  return text;
}

inline std::string_view trimBlanks(std::string_view text) {
  return trimTrailingBlanks(trimLeadingBlanks(text));
}

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_BLANKS_H
