//===- Pattern.cpp - the patterns of Split and Replace --------------------===//
#include "runtime/tokenizer/Pattern.h"

#include "runtime/core/Error.h"

#include <vector>

namespace llmc::runtime::tokenizer {

Regex parsePattern(const JsonNode &pattern) {
  if (pattern.has("String")) return Regex::literal(pattern["String"].string());
  if (pattern.has("Regex")) {
    JsonNode regex = pattern["Regex"];
    try {
      return Regex::pattern(regex.string());
    } catch (const Error &error) {
      regex.fail(error.what());
    }
  }
  pattern.fail("expected {\"String\": ...} or {\"Regex\": ...}");
}

std::string replaceAll(std::string_view text, const Regex &pattern, const std::string &content) {
  std::vector<Match> matches;
  pattern.findAll(text, matches);
  if (matches.empty()) return std::string(text);
  std::string result;
  result.reserve(text.size());
  size_t copiedUpTo = 0;
  for (const Match &match : matches) {
    result.append(text.substr(copiedUpTo, match.begin - copiedUpTo));
    result += content;
    copiedUpTo = match.end;
  }
  result.append(text.substr(copiedUpTo));
  return result;
}

} // namespace llmc::runtime::tokenizer
