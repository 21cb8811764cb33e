//===- JinjaLexer.cpp - template source to tokens -------------------------===//
#include "runtime/chat/JinjaLexer.h"

#include "runtime/chat/ChatTemplate.h"
#include "runtime/chat/JinjaString.h"
#include "runtime/tokenizer/Utf8.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace llmc::runtime::chat {
namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || isDigit(c); }
bool isHexDigit(char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

/// The source with every line break as "\n" and one trailing line break
/// dropped, as jinja2 reads it (keep_trailing_newline=False).
std::string normalizeNewlines(std::string_view source) {
  std::string normalized;
  normalized.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      normalized += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      normalized += source[i];
    }
  }
  if (!normalized.empty() && normalized.back() == '\n') normalized.pop_back();
  return normalized;
}

class Lexer {
public:
  explicit Lexer(std::string_view text) : source(normalizeNewlines(text)) {}

  std::vector<Token> run();

private:
  enum class TagKind { Variable, Block, Comment };

  SourceLocation locate(size_t offset);
  [[noreturn]] void fail(size_t offset, const std::string &message);
  void emit(TokenKind kind, std::string text, size_t offset);

  bool startsWith(size_t offset, std::string_view prefix) const {
    return source.compare(offset, prefix.size(), prefix) == 0;
  }
  /// The offset past the whitespace (Python's \s) starting at `offset`.
  size_t skipWhitespace(size_t offset) const;
  /// Where the next `{{`, `{%` or `{#` starts, or npos.
  size_t findTagStart(size_t from) const;
  /// Applies `{%-`/`{{-` and lstrip_blocks to the text before a tag.
  std::string_view textBeforeTag(std::string_view text, TagKind kind, char sign) const;

  /// Lexes a comment whose body starts at `offset`; returns the offset past it.
  size_t lexComment(size_t tagStart, size_t offset);
  /// Lexes the tokens of a {{ }} or {% %} tag; returns the offset past it.
  size_t lexTag(TagKind kind, size_t tagStart, size_t offset);
  /// Matches the end of the tag at `offset` (whitespace control and
  /// trim_blocks applied); returns the offset past it, or npos.
  size_t matchTagEnd(TagKind kind, size_t offset) const;
  size_t lexNumber(size_t offset);
  size_t lexString(size_t offset);
  size_t lexOperator(size_t offset, std::vector<char> &brackets);
  /// The end of `(\d+_)*\d+` at `offset` (== offset when there is no digit).
  size_t scanDigits(size_t offset) const;

  std::string source;
  std::vector<Token> tokens;
  /// The last offset located, and its line and column.
  size_t locatedOffset = 0;
  SourceLocation locatedAt;
  /// Whether the last match ended a line: lstrip_blocks also strips the
  /// indentation of a tag at the very start of a line.
  bool lineStarting = true;
};

SourceLocation Lexer::locate(size_t offset) {
  // Tokens come in source order: continue from the last one rather than
  // recount the line (a long one-line template would be quadratic).
  if (offset < locatedOffset) {
    locatedOffset = 0;
    locatedAt = SourceLocation();
  }
  for (; locatedOffset < offset && locatedOffset < source.size(); ++locatedOffset) {
    char c = source[locatedOffset];
    if (c == '\n') {
      ++locatedAt.line;
      locatedAt.column = 1;
    } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
      ++locatedAt.column;
    }
  }
  return locatedAt;
}

void Lexer::fail(size_t offset, const std::string &message) {
  throw ChatTemplateError(describeLocation(locate(offset)) + message);
}

void Lexer::emit(TokenKind kind, std::string text, size_t offset) {
  tokens.push_back(Token{kind, std::move(text), 0, 0, locate(offset)});
}

size_t Lexer::skipWhitespace(size_t offset) const {
  while (offset < source.size()) {
    size_t next = offset;
    if (!isPythonWhitespace(tokenizer::decodeUtf8(source, next))) break;
    offset = next;
  }
  return offset;
}

size_t Lexer::findTagStart(size_t from) const {
  for (size_t at = source.find('{', from); at != std::string::npos; at = source.find('{', at + 1)) {
    if (at + 1 < source.size() &&
        (source[at + 1] == '{' || source[at + 1] == '%' || source[at + 1] == '#'))
      return at;
  }
  return std::string::npos;
}

std::string_view Lexer::textBeforeTag(std::string_view text, TagKind kind, char sign) const {
  if (sign == '-') {
    // Strip all whitespace, line breaks included.
    size_t keep = 0;
    for (size_t at = 0; at < text.size();)
      if (!isPythonWhitespace(tokenizer::decodeUtf8(text, at))) keep = at;
    return text.substr(0, keep);
  }
  if (sign == '+' || kind == TagKind::Variable) return text;
  // lstrip_blocks: the indentation before a block or comment tag that starts
  // its line goes.
  size_t lineStart = text.rfind('\n');
  lineStart = lineStart == std::string_view::npos ? 0 : lineStart + 1;
  if (lineStart == 0 && !lineStarting) return text;
  std::u32string indentation = decodeCodePoints(text.substr(lineStart));
  if (indentation.empty() ||
      !std::all_of(indentation.begin(), indentation.end(), isPythonWhitespace))
    return text;
  return text.substr(0, lineStart);
}

std::vector<Token> Lexer::run() {
  if (size_t bad = tokenizer::findInvalidUtf8(source); bad != std::string::npos)
    fail(bad, "the template is not valid UTF-8");
  size_t offset = 0;
  while (offset < source.size()) {
    size_t tagStart = findTagStart(offset);
    if (tagStart == std::string::npos) {
      emit(TokenKind::Text, source.substr(offset), offset);
      break;
    }
    TagKind kind = source[tagStart + 1] == '{'   ? TagKind::Variable
                   : source[tagStart + 1] == '%' ? TagKind::Block
                                                 : TagKind::Comment;
    size_t bodyStart = tagStart + 2;
    char sign = 0;
    if (bodyStart < source.size() && (source[bodyStart] == '-' || source[bodyStart] == '+'))
      sign = source[bodyStart++];
    std::string_view text =
        textBeforeTag(std::string_view(source).substr(offset, tagStart - offset), kind, sign);
    if (!text.empty()) emit(TokenKind::Text, std::string(text), offset);
    offset = kind == TagKind::Comment ? lexComment(tagStart, bodyStart)
                                      : lexTag(kind, tagStart, bodyStart);
    lineStarting = source[offset - 1] == '\n';
  }
  emit(TokenKind::EndOfTemplate, "", source.size());
  return std::move(tokens);
}

size_t Lexer::lexComment(size_t tagStart, size_t offset) {
  for (size_t at = offset; at < source.size(); ++at) {
    if (startsWith(at, "+#}")) return at + 3;
    if (startsWith(at, "-#}")) return skipWhitespace(at + 3);
    if (startsWith(at, "#}")) return at + 2 + (startsWith(at + 2, "\n") ? 1 : 0);
  }
  fail(tagStart, "unclosed comment: missing '#}'");
}

size_t Lexer::matchTagEnd(TagKind kind, size_t offset) const {
  if (kind == TagKind::Block) {
    if (startsWith(offset, "+%}")) return offset + 3;
    if (startsWith(offset, "-%}")) return skipWhitespace(offset + 3);
    // trim_blocks: the line break right after a block tag goes.
    if (startsWith(offset, "%}")) return offset + 2 + (startsWith(offset + 2, "\n") ? 1 : 0);
    return std::string::npos;
  }
  if (startsWith(offset, "-}}")) return skipWhitespace(offset + 3);
  if (startsWith(offset, "}}")) return offset + 2;
  return std::string::npos;
}

size_t Lexer::lexTag(TagKind kind, size_t tagStart, size_t offset) {
  emit(kind == TagKind::Block ? TokenKind::BlockBegin : TokenKind::VariableBegin, "", tagStart);
  // Open brackets: a `}}` inside a dict literal does not end the tag.
  std::vector<char> brackets;
  while (true) {
    offset = skipWhitespace(offset);
    if (offset >= source.size())
      fail(tagStart,
           std::string("unclosed tag: missing '") + (kind == TagKind::Block ? "%}" : "}}") + "'");
    if (brackets.empty()) {
      size_t end = matchTagEnd(kind, offset);
      if (end != std::string::npos) {
        emit(kind == TagKind::Block ? TokenKind::BlockEnd : TokenKind::VariableEnd, "", offset);
        return end;
      }
    }
    char c = source[offset];
    if (isDigit(c)) {
      offset = lexNumber(offset);
    } else if (isNameStart(c)) {
      size_t end = offset;
      while (end < source.size() && isNameChar(source[end])) ++end;
      emit(TokenKind::Name, source.substr(offset, end - offset), offset);
      offset = end;
    } else if (c == '\'' || c == '"') {
      offset = lexString(offset);
    } else {
      offset = lexOperator(offset, brackets);
    }
  }
}

size_t Lexer::scanDigits(size_t offset) const {
  size_t end = offset;
  while (end < source.size() && isDigit(source[end])) ++end;
  if (end == offset) return offset;
  while (end + 1 < source.size() && source[end] == '_' && isDigit(source[end + 1])) {
    ++end;
    while (end < source.size() && isDigit(source[end])) ++end;
  }
  return end;
}

size_t Lexer::lexNumber(size_t offset) {
  auto withoutUnderscores = [](std::string text) {
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    return text;
  };
  // A float: digits with a fraction, an exponent or both (not right after a
  // '.', where `x.1.2` reads as item lookups).
  if (offset == 0 || source[offset - 1] != '.') {
    size_t end = scanDigits(offset);
    bool isFloat = false;
    if (startsWith(end, ".") && scanDigits(end + 1) > end + 1) {
      end = scanDigits(end + 1);
      isFloat = true;
    }
    if (end < source.size() && (source[end] == 'e' || source[end] == 'E')) {
      size_t digits = end + 1;
      if (digits < source.size() && (source[digits] == '+' || source[digits] == '-')) ++digits;
      if (scanDigits(digits) > digits) {
        end = scanDigits(digits);
        isFloat = true;
      }
    }
    if (isFloat) {
      std::string spelling = source.substr(offset, end - offset);
      emit(TokenKind::Float, spelling, offset);
      tokens.back().number = std::strtod(withoutUnderscores(spelling).c_str(), nullptr);
      return end;
    }
  }
  // An integer: 0b/0o/0x prefixed, decimal, or zero.
  int base = 10;
  size_t digitsStart = offset, end = offset + 1;
  char prefix = offset + 1 < source.size() ? static_cast<char>(source[offset + 1] | 0x20) : 0;
  auto isBaseDigit = [&](char c) {
    return base == 2 ? (c == '0' || c == '1') : base == 8 ? (c >= '0' && c <= '7') : isHexDigit(c);
  };
  if (source[offset] == '0' && (prefix == 'b' || prefix == 'o' || prefix == 'x')) {
    base = prefix == 'b' ? 2 : prefix == 'o' ? 8 : 16;
    size_t at = offset + 2;
    while (true) {
      size_t digit = at < source.size() && source[at] == '_' ? at + 1 : at;
      if (digit >= source.size() || !isBaseDigit(source[digit])) break;
      at = digit + 1;
    }
    if (at > offset + 2) {
      digitsStart = offset + 2;
      end = at;
    } else {
      base = 10;
    }
  }
  if (base == 10) {
    // [1-9](_?\d)* or 0(_?0)*
    char allowed = source[offset] == '0' ? '0' : 0;
    while (true) {
      size_t digit = end < source.size() && source[end] == '_' ? end + 1 : end;
      if (digit >= source.size() || !isDigit(source[digit]) ||
          (allowed && source[digit] != allowed))
        break;
      end = digit + 1;
    }
  }
  std::string digits = withoutUnderscores(source.substr(digitsStart, end - digitsStart));
  errno = 0;
  long long value = std::strtoll(digits.c_str(), nullptr, base);
  if (errno == ERANGE) fail(offset, "integer literal out of range");
  emit(TokenKind::Integer, source.substr(offset, end - offset), offset);
  tokens.back().integer = value;
  return end;
}

size_t Lexer::lexString(size_t offset) {
  char quote = source[offset];
  size_t end = offset + 1;
  while (end < source.size() && source[end] != quote) end += source[end] == '\\' ? 2 : 1;
  if (end >= source.size()) fail(offset, "unterminated string literal");
  // Python's unicode-escape decoding of the body.
  std::string value;
  for (size_t i = offset + 1; i < end; ++i) {
    if (source[i] != '\\') {
      value += source[i];
      continue;
    }
    char escape = source[++i];
    auto hexValue = [&](size_t digits) {
      if (i + digits >= end ||
          !std::all_of(source.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                       source.begin() + static_cast<std::ptrdiff_t>(i + digits) + 1, isHexDigit))
        fail(offset, std::string("truncated \\") + escape + " escape in a string literal");
      auto codePoint = static_cast<char32_t>(std::stoul(source.substr(i + 1, digits), nullptr, 16));
      i += digits;
      return codePoint;
    };
    auto appendCodePoint = [&](char32_t codePoint) {
      if (codePoint > 0x10FFFF || (codePoint >= 0xD800 && codePoint <= 0xDFFF))
        fail(offset, "a string literal escapes a code point that is not a character");
      tokenizer::appendUtf8(value, codePoint);
    };
    switch (escape) {
    case '\n':
      break;
    case '\\':
    case '\'':
    case '"':
      value += escape;
      break;
    case 'a':
      value += '\a';
      break;
    case 'b':
      value += '\b';
      break;
    case 'f':
      value += '\f';
      break;
    case 'n':
      value += '\n';
      break;
    case 'r':
      value += '\r';
      break;
    case 't':
      value += '\t';
      break;
    case 'v':
      value += '\v';
      break;
    case 'x':
      appendCodePoint(hexValue(2));
      break;
    case 'u':
      appendCodePoint(hexValue(4));
      break;
    case 'U':
      appendCodePoint(hexValue(8));
      break;
    case 'N':
      fail(offset, "\\N{...} escapes are not supported");
    default:
      if (escape >= '0' && escape <= '7') {
        char32_t codePoint = 0;
        size_t digits = 0;
        for (; digits < 3 && i < end && source[i] >= '0' && source[i] <= '7'; ++digits, ++i)
          codePoint = codePoint * 8 + static_cast<char32_t>(source[i] - '0');
        --i;
        appendCodePoint(codePoint);
      } else {
        // Python keeps an unknown escape as written.
        value += '\\';
        value += escape;
      }
    }
  }
  emit(TokenKind::String, std::move(value), offset);
  return end + 1;
}

size_t Lexer::lexOperator(size_t offset, std::vector<char> &brackets) {
  for (std::string_view twoCharacter : {"//", "**", "==", "!=", ">=", "<="}) {
    if (startsWith(offset, twoCharacter)) {
      emit(TokenKind::Operator, std::string(twoCharacter), offset);
      return offset + 2;
    }
  }
  char c = source[offset];
  if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
    size_t next = offset;
    std::string character =
        encodeCodePoints(std::u32string(1, tokenizer::decodeUtf8(source, next)));
    fail(offset, "unexpected character '" + character + "'");
  }
  if (c == '(' || c == '[' || c == '{') {
    brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
  } else if (c == ')' || c == ']' || c == '}') {
    if (brackets.empty()) fail(offset, std::string("unexpected '") + c + "'");
    if (brackets.back() != c)
      fail(offset, std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
    brackets.pop_back();
  }
  emit(TokenKind::Operator, std::string(1, c), offset);
  return offset + 1;
}
} // namespace

std::string describeLocation(SourceLocation location) {
  return "chat template:" + std::to_string(location.line) + ":" + std::to_string(location.column) +
         ": ";
}

std::vector<Token> tokenizeTemplate(std::string_view source) { return Lexer(source).run(); }

} // namespace llmc::runtime::chat
