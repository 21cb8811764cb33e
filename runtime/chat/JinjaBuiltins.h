//===- JinjaBuiltins.h - filters, tests, methods and operators --*- C++ -*-===//
//
// What a chat template can call, with jinja2's (and Python's) semantics:
// the filters and tests, the methods of str and dict, the globals
// transformers provides, attribute and item lookup, and the operators. The
// parser checks names against the is*Supported lists, so a template that
// calls anything else is refused when it is loaded. Defined by kind in
// JinjaFilters.cpp, JinjaTests.cpp, JinjaMethods.cpp and JinjaOperators.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CHAT_JINJABUILTINS_H
#define LLMC_RUNTIME_CHAT_JINJABUILTINS_H

#include "runtime/chat/JinjaAst.h"
#include "runtime/chat/JinjaValue.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmc::runtime::chat {

/// The evaluated arguments of a call, filter or test.
struct Arguments {
  ValueList positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

bool isSupportedFilter(std::string_view name);
bool isSupportedTest(std::string_view name);
/// range, namespace, raise_exception and strftime_now.
bool isSupportedGlobal(std::string_view name);
/// A method of str, dict or `loop` this runtime implements.
bool isSupportedMethod(std::string_view name);

Value applyFilter(const std::string &name, const Value &operand, const Arguments &arguments);
bool applyTest(const std::string &name, const Value &operand, const Arguments &arguments);
/// Calls a global function or a bound method (a Callable value).
/// raise_exception throws ChatTemplateError with the template's message.
Value callFunction(const Value &function, const Arguments &arguments);

/// `object.name`: a dict's key (or method), a namespace's attribute, a loop
/// field, a str method; undefined when there is none.
Value getAttribute(const Value &object, const std::string &name);
/// `object[key]`: an index of a list or str, a key of a dict; undefined when
/// there is none.
Value getItem(const Value &object, const Value &key);
/// `object[start:stop:step]` of a list, tuple or str (absent parts undefined).
Value getSlice(const Value &object, const Value &start, const Value &stop, const Value &step);

Value applyBinary(BinaryExpr::Op op, const Value &left, const Value &right);
Value applyUnary(UnaryExpr::Op op, const Value &operand);
bool applyComparison(CompareExpr::Op op, const Value &left, const Value &right);

/// Throws the UndefinedError jinja2 raises when an undefined value is used.
[[noreturn]] void failUndefined(const Value &undefined);

} // namespace llmc::runtime::chat

#endif // LLMC_RUNTIME_CHAT_JINJABUILTINS_H
