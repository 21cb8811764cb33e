//===- JinjaParser.h - tokens to the template's syntax tree -----*- C++ -*-===//
//
// jinja2's grammar (operator precedence, tuples, filters and tests, the
// statement tags) for the subset ChatTemplate runs. Everything it does not
// support, and every filter, test, function or method outside
// JinjaBuiltins, is a ChatTemplateError naming its line and column.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CHAT_JINJAPARSER_H
#define LLMC_RUNTIME_CHAT_JINJAPARSER_H

#include "runtime/chat/JinjaAst.h"

#include <memory>
#include <string_view>

namespace llmc::runtime::chat {

std::unique_ptr<TemplateNode> parseTemplate(std::string_view source);

} // namespace llmc::runtime::chat

#endif // LLMC_RUNTIME_CHAT_JINJAPARSER_H
