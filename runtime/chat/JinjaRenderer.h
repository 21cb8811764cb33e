//===- JinjaRenderer.h - runs a parsed template -----------------*- C++ -*-===//
//
// Walks the syntax tree with jinja2's scoping: a `set` at the top level or
// inside an `if` lasts for the rest of the template; each iteration of a for
// loop (and each generation block) gets a scope of its own, which ends with
// it. namespace() objects are how state crosses those scopes.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CHAT_JINJARENDERER_H
#define LLMC_RUNTIME_CHAT_JINJARENDERER_H

#include "runtime/chat/JinjaAst.h"

#include <string>

namespace llmc::runtime::chat {

/// Renders `root` with the variables of `context`. Throws ChatTemplateError
/// (with the line and column of the failing expression, or the template's
/// own raise_exception message).
std::string renderTemplate(const TemplateNode &root, const Dict &context);

} // namespace llmc::runtime::chat

#endif // LLMC_RUNTIME_CHAT_JINJARENDERER_H
