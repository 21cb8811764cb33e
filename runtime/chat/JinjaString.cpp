//===- JinjaString.cpp - Python's str operations on UTF-8 -----------------===//
#include "runtime/chat/JinjaString.h"

#include "runtime/chat/JinjaValue.h"
#include "runtime/tokenizer/Utf8.h"

#include <unicode/ucasemap.h>
#include <unicode/uchar.h>

#include <algorithm>
#include <cstdio>
#include <memory>

namespace llmc::runtime::chat {
namespace {

using tokenizer::appendUtf8;
using tokenizer::decodeUtf8;

enum class CaseMapping { Upper, Lower, Title };

/// Applies an ICU full case mapping (root locale, as Python's) to `text`.
/// Title maps only the first character: Python title-cases characters one at
/// a time.
std::string mapCase(std::string_view text, CaseMapping mapping) {
  if (text.empty()) return {};
  UErrorCode status = U_ZERO_ERROR;
  uint32_t options =
      mapping == CaseMapping::Title
          ? U_TITLECASE_WHOLE_STRING | U_TITLECASE_NO_BREAK_ADJUSTMENT | U_TITLECASE_NO_LOWERCASE
          : 0;
  std::unique_ptr<UCaseMap, decltype(&ucasemap_close)> caseMap(ucasemap_open("", options, &status),
                                                               &ucasemap_close);
  if (U_FAILURE(status)) throw RenderError(std::string("ICU case mapping: ") + u_errorName(status));
  auto run = [&](char *out, int32_t capacity) {
    auto length = static_cast<int32_t>(text.size());
    switch (mapping) {
    case CaseMapping::Upper:
      return ucasemap_utf8ToUpper(caseMap.get(), out, capacity, text.data(), length, &status);
    case CaseMapping::Lower:
      return ucasemap_utf8ToLower(caseMap.get(), out, capacity, text.data(), length, &status);
    case CaseMapping::Title:
      return ucasemap_utf8ToTitle(caseMap.get(), out, capacity, text.data(), length, &status);
    }
    return 0;
  };
  // Full mappings grow a string by at most a factor of three.
  std::string result(text.size() * 3 + 4, '\0');
  int32_t length = run(result.data(), static_cast<int32_t>(result.size()));
  if (U_FAILURE(status)) throw RenderError(std::string("ICU case mapping: ") + u_errorName(status));
  result.resize(static_cast<size_t>(length));
  return result;
}

std::string codePointString(char32_t codePoint) {
  std::string out;
  appendUtf8(out, codePoint);
  return out;
}

bool isCased(char32_t codePoint) {
  return u_hasBinaryProperty(static_cast<UChar32>(codePoint), UCHAR_CASED);
}

/// Python's str.isprintable() of one character: not a control, format,
/// surrogate, private-use, unassigned or separator character, except space.
bool isPrintable(char32_t codePoint) {
  if (codePoint == ' ') return true;
  switch (u_charType(static_cast<UChar32>(codePoint))) {
  case U_CONTROL_CHAR:
  case U_FORMAT_CHAR:
  case U_SURROGATE:
  case U_PRIVATE_USE_CHAR:
  case U_UNASSIGNED:
  case U_LINE_SEPARATOR:
  case U_PARAGRAPH_SEPARATOR:
  case U_SPACE_SEPARATOR:
    return false;
  default:
    return true;
  }
}

void appendHexEscape(std::string &out, const char *prefix, int digits, char32_t codePoint) {
  char buffer[16];
  std::snprintf(buffer, sizeof(buffer), "%s%0*x", prefix, digits, static_cast<unsigned>(codePoint));
  out += buffer;
}
} // namespace

std::u32string decodeCodePoints(std::string_view utf8) {
  std::u32string codePoints;
  codePoints.reserve(utf8.size());
  for (size_t offset = 0; offset < utf8.size();) codePoints += decodeUtf8(utf8, offset);
  return codePoints;
}

std::string encodeCodePoints(std::u32string_view codePoints) {
  std::string utf8;
  utf8.reserve(codePoints.size());
  for (char32_t codePoint : codePoints) appendUtf8(utf8, codePoint);
  return utf8;
}

bool isPythonWhitespace(char32_t c) {
  // Bidirectional classes WS, B and S, and category Zs: a fixed set.
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

std::string stripString(std::string_view text, const std::optional<std::string> &chars, bool left,
                        bool right) {
  std::u32string strip = chars ? decodeCodePoints(*chars) : std::u32string();
  auto stripped = [&](char32_t c) {
    return chars ? strip.find(c) != std::u32string::npos : isPythonWhitespace(c);
  };
  // Scans the UTF-8 from both ends: contents can be long, the ends short.
  size_t begin = 0, end = text.size();
  while (left && begin < end) {
    size_t next = begin;
    if (!stripped(decodeUtf8(text, next))) break;
    begin = next;
  }
  while (right && end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    size_t next = start;
    if (!stripped(decodeUtf8(text, next))) break;
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

std::vector<std::string>
splitString(std::string_view text, const std::optional<std::string> &separator, int64_t maxSplit) {
  std::vector<std::string> parts;
  if (separator) {
    if (separator->empty()) throw RenderError("empty separator");
    size_t start = 0;
    while (maxSplit < 0 || static_cast<int64_t>(parts.size()) < maxSplit) {
      size_t found = text.find(*separator, start);
      if (found == std::string_view::npos) break;
      parts.emplace_back(text.substr(start, found - start));
      start = found + separator->size();
    }
    parts.emplace_back(text.substr(start));
    return parts;
  }
  std::u32string codePoints = decodeCodePoints(text);
  size_t i = 0, n = codePoints.size();
  while (true) {
    while (i < n && isPythonWhitespace(codePoints[i])) ++i;
    if (i == n) break;
    if (maxSplit >= 0 && static_cast<int64_t>(parts.size()) == maxSplit) {
      // The rest, trailing whitespace included, is the last part.
      parts.push_back(encodeCodePoints(std::u32string_view(codePoints).substr(i)));
      break;
    }
    size_t start = i;
    while (i < n && !isPythonWhitespace(codePoints[i])) ++i;
    parts.push_back(encodeCodePoints(std::u32string_view(codePoints).substr(start, i - start)));
  }
  return parts;
}

std::string replaceString(std::string_view text, std::string_view from, std::string_view to,
                          int64_t count) {
  std::string result;
  int64_t replaced = 0;
  auto budgetLeft = [&] { return count < 0 || replaced < count; };
  if (from.empty()) {
    // Python inserts `to` before every character and at the end.
    size_t offset = 0;
    while (offset < text.size()) {
      if (budgetLeft()) {
        result += to;
        ++replaced;
      }
      size_t next = offset + tokenizer::utf8Length(static_cast<unsigned char>(text[offset]));
      result += text.substr(offset, next - offset);
      offset = next;
    }
    if (budgetLeft()) result += to;
    return result;
  }
  size_t start = 0;
  while (budgetLeft()) {
    size_t found = text.find(from, start);
    if (found == std::string_view::npos) break;
    result += text.substr(start, found - start);
    result += to;
    start = found + from.size();
    ++replaced;
  }
  result += text.substr(start);
  return result;
}

std::string upperString(std::string_view text) { return mapCase(text, CaseMapping::Upper); }

std::string lowerString(std::string_view text) { return mapCase(text, CaseMapping::Lower); }

std::string capitalizeString(std::string_view text) {
  if (text.empty()) return {};
  size_t firstLength = tokenizer::utf8Length(static_cast<unsigned char>(text[0]));
  return mapCase(text.substr(0, firstLength), CaseMapping::Title) +
         mapCase(text.substr(firstLength), CaseMapping::Lower);
}

std::string titleString(std::string_view text) {
  std::string result;
  bool previousCased = false;
  for (char32_t c : decodeCodePoints(text)) {
    std::string character = codePointString(c);
    result += mapCase(character, previousCased ? CaseMapping::Lower : CaseMapping::Title);
    previousCased = isCased(c);
  }
  return result;
}

std::string titleWords(std::string_view text) {
  auto isWordBoundary = [](char32_t c) {
    return isPythonWhitespace(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
  };
  std::u32string codePoints = decodeCodePoints(text);
  std::string result;
  size_t i = 0;
  while (i < codePoints.size()) {
    size_t start = i;
    bool boundary = isWordBoundary(codePoints[i]);
    while (i < codePoints.size() && isWordBoundary(codePoints[i]) == boundary) ++i;
    std::u32string_view piece = std::u32string_view(codePoints).substr(start, i - start);
    result += upperString(encodeCodePoints(piece.substr(0, 1)));
    result += lowerString(encodeCodePoints(piece.substr(1)));
  }
  return result;
}

std::string pythonRepr(std::string_view text) {
  bool hasSingle = text.find('\'') != std::string_view::npos;
  bool hasDouble = text.find('"') != std::string_view::npos;
  char quote = hasSingle && !hasDouble ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t c : decodeCodePoints(text)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < ' ' || c == 0x7F) {
      appendHexEscape(out, "\\x", 2, c);
    } else if (c < 0x7F || isPrintable(c)) {
      appendUtf8(out, c);
    } else if (c <= 0xFF) {
      appendHexEscape(out, "\\x", 2, c);
    } else if (c <= 0xFFFF) {
      appendHexEscape(out, "\\u", 4, c);
    } else {
      appendHexEscape(out, "\\U", 8, c);
    }
  }
  out += quote;
  return out;
}

std::string jsonQuote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20)
        appendHexEscape(out, "\\u", 4, static_cast<unsigned char>(c));
      else
        out += c;
    }
  }
  out += '"';
  return out;
}

} // namespace llmc::runtime::chat
