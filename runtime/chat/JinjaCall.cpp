//===- JinjaCall.cpp - binding the arguments of builtins ------------------===//
#include "runtime/chat/JinjaCall.h"

#include "runtime/chat/JinjaString.h"

namespace llmc::runtime::chat {

int64_t requireInteger(const Value &value) {
  if (value.isUndefined()) failUndefined(value);
  if (!value.isInteger())
    throw RenderError("'" + typeName(value) + "' object cannot be interpreted as an integer");
  return value.asInteger();
}

const std::string &requireString(const Value &value, const std::string &what) {
  if (value.isUndefined()) failUndefined(value);
  if (!value.isString()) throw RenderError(what + " must be str, not " + typeName(value));
  return value.asString();
}

std::optional<std::string> optionalString(const Value &value, const std::string &what) {
  if (value.isUndefined() || value.isNone()) return std::nullopt;
  return requireString(value, what);
}

void expectNoArguments(const std::string &function, const Arguments &arguments) {
  Parameters(function, arguments, {});
}

Arguments dropPositional(const Arguments &arguments, size_t count) {
  Arguments rest;
  rest.positional.assign(arguments.positional.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                            count, arguments.positional.size())),
                         arguments.positional.end());
  rest.keyword = arguments.keyword;
  return rest;
}

} // namespace llmc::runtime::chat
