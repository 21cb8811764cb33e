//===- JinjaLexer.h - template source to tokens -----------------*- C++ -*-===//
//
// Splits a template into text and the tokens of its {{ }} and {% %} tags the
// way jinja2's lexer does in transformers' environment: trim_blocks and
// lstrip_blocks on, `-` and `+` whitespace control, comments dropped, one
// trailing newline removed and every line break read as "\n".
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CHAT_JINJALEXER_H
#define LLMC_RUNTIME_CHAT_JINJALEXER_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace llmc::runtime::chat {

/// 1-based line and column (in characters) of the template source.
struct SourceLocation {
  int line = 1;
  int column = 1;
};

/// "chat template:3:14: " for messages.
std::string describeLocation(SourceLocation location);

enum class TokenKind {
  /// Template data outside tags, after whitespace control.
  Text,
  VariableBegin,
  VariableEnd,
  BlockBegin,
  BlockEnd,
  Name,
  /// A string literal; `text` is its value, escapes decoded.
  String,
  Integer,
  Float,
  /// An operator or punctuation; `text` spells it ("//", "(", "|", ...).
  Operator,
  EndOfTemplate,
};

struct Token {
  TokenKind kind;
  std::string text;
  int64_t integer = 0;
  double number = 0;
  SourceLocation location;
};

/// The tokens of `source`, ending with EndOfTemplate. Throws
/// ChatTemplateError naming the line and column of what it cannot read.
std::vector<Token> tokenizeTemplate(std::string_view source);

} // namespace llmc::runtime::chat

#endif // LLMC_RUNTIME_CHAT_JINJALEXER_H
