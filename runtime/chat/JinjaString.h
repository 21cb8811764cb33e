//===- JinjaString.h - Python's str operations on UTF-8 ---------*- C++ -*-===//
//
// Chat templates run in jinja2, so their strings are Python strs: lengths,
// indices and slices count code points, strip() and split() know Unicode
// whitespace, upper() and lower() use full case mapping. These helpers give
// the same results on well-formed UTF-8 (ICU supplies the case mappings).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CHAT_JINJASTRING_H
#define LLMC_RUNTIME_CHAT_JINJASTRING_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmc::runtime::chat {

std::u32string decodeCodePoints(std::string_view utf8);
std::string encodeCodePoints(std::u32string_view codePoints);

/// str.isspace() of one character.
bool isPythonWhitespace(char32_t codePoint);

/// str.strip/lstrip/rstrip: `chars` (all of its characters) or, when absent,
/// whitespace.
std::string stripString(std::string_view text, const std::optional<std::string> &chars, bool left,
                        bool right);

/// str.split(sep, maxsplit): on runs of whitespace when `separator` is absent;
/// a negative `maxSplit` splits everywhere. Throws RenderError for an empty
/// separator, as Python's ValueError.
std::vector<std::string> splitString(std::string_view text,
                                     const std::optional<std::string> &separator, int64_t maxSplit);

/// str.replace(old, new, count); a negative count replaces every occurrence.
std::string replaceString(std::string_view text, std::string_view from, std::string_view to,
                          int64_t count);

std::string upperString(std::string_view text);
std::string lowerString(std::string_view text);
/// str.capitalize(): the first character in title case, the rest lower case.
std::string capitalizeString(std::string_view text);
/// str.title(): title case after an uncased character, lower case after a cased one.
std::string titleString(std::string_view text);
/// jinja2's `title` filter, which is not str.title(): words start after
/// whitespace, '-', '(', '{', '[' or '<'.
std::string titleWords(std::string_view text);

/// repr() of a str: quoted, with Python's escapes.
std::string pythonRepr(std::string_view text);
/// json.dumps() of a str with ensure_ascii=False.
std::string jsonQuote(std::string_view text);

} // namespace llmc::runtime::chat

#endif // LLMC_RUNTIME_CHAT_JINJASTRING_H
