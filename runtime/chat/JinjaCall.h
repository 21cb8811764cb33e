//===- JinjaCall.h - binding the arguments of builtins ----------*- C++ -*-===//
//
// What the filters, tests and methods of JinjaBuiltins.h share: Python's
// binding of a call's arguments to parameters and its argument type errors.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CHAT_JINJACALL_H
#define LLMC_RUNTIME_CHAT_JINJACALL_H

#include "runtime/chat/ChatTemplate.h"
#include "runtime/chat/JinjaBuiltins.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace llmc::runtime::chat {

/// Binds a call's arguments to named parameters, as Python does.
class Parameters {
public:
  Parameters(const std::string &function, const Arguments &arguments,
             std::vector<const char *> names)
      : slots(names.size(), nullptr) {
    if (arguments.positional.size() > names.size())
      throw RenderError(function + "() takes at most " + std::to_string(names.size()) +
                        " argument(s) (" + std::to_string(arguments.positional.size()) + " given)");
    for (size_t i = 0; i < arguments.positional.size(); ++i) slots[i] = &arguments.positional[i];
    for (const auto &[name, value] : arguments.keyword) {
      auto found = std::find_if(names.begin(), names.end(),
                                [&](const char *parameter) { return name == parameter; });
      if (found == names.end())
        throw RenderError(function + "() got an unexpected keyword argument '" + name + "'");
      auto index = static_cast<size_t>(found - names.begin());
      if (slots[index])
        throw RenderError(function + "() got multiple values for argument '" + name + "'");
      slots[index] = &value;
    }
  }

  /// The argument, or `fallback` when it was not given.
  Value get(size_t index, Value fallback) const {
    return slots[index] ? *slots[index] : std::move(fallback);
  }
  /// A required argument.
  const Value &required(size_t index, const std::string &function) const {
    if (!slots[index])
      throw RenderError(function + "() is missing argument " + std::to_string(index + 1));
    return *slots[index];
  }

private:
  std::vector<const Value *> slots;
};

/// The int an argument must be; a TypeError-like RenderError otherwise.
int64_t requireInteger(const Value &value);
/// The str an argument must be; `what` names it in the error.
const std::string &requireString(const Value &value, const std::string &what);
/// An optional str argument: absent or None is nullopt.
std::optional<std::string> optionalString(const Value &value, const std::string &what);
/// Checks that a filter, test or method that takes no arguments got none.
void expectNoArguments(const std::string &function, const Arguments &arguments);
/// Arguments without the first `count` positional ones.
Arguments dropPositional(const Arguments &arguments, size_t count);

} // namespace llmc::runtime::chat

#endif // LLMC_RUNTIME_CHAT_JINJACALL_H
