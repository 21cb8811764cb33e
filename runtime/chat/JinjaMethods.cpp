//===- JinjaMethods.cpp - methods, globals, attributes and items ----------===//
#include "runtime/chat/JinjaBuiltins.h"

#include "runtime/chat/ChatTemplate.h"
#include "runtime/chat/JinjaCall.h"
#include "runtime/chat/JinjaString.h"

#include <algorithm>
#include <ctime>

namespace llmc::runtime::chat {
namespace {

/// jinja2's sandbox refuses larger ranges (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

constexpr std::string_view kStringMethods[] = {"strip",      "lstrip",     "rstrip", "split",
                                               "startswith", "endswith",   "upper",  "lower",
                                               "title",      "capitalize", "replace"};
constexpr std::string_view kDictMethods[] = {"items", "keys", "values", "get"};
constexpr std::string_view kLoopMethods[] = {"cycle"};
constexpr std::string_view kGlobals[] = {"range", "namespace", "raise_exception", "strftime_now"};

template <size_t N> bool isOneOf(std::string_view name, const std::string_view (&names)[N]) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

/// startswith/endswith: a str or a tuple of them.
bool matchesAffix(const std::string &text, const Value &affixes, bool prefix) {
  auto matches = [&](const Value &affix) {
    const std::string &candidate =
        requireString(affix, prefix ? "startswith first arg" : "endswith first arg");
    if (candidate.size() > text.size()) return false;
    return prefix ? text.compare(0, candidate.size(), candidate) == 0
                  : text.compare(text.size() - candidate.size(), candidate.size(), candidate) == 0;
  };
  if (affixes.kind() == Value::Kind::Tuple)
    return std::any_of(affixes.items().begin(), affixes.items().end(), matches);
  return matches(affixes);
}

Value callStringMethod(const std::string &text, const std::string &name,
                       const Arguments &arguments) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    Parameters parameters(name, arguments, {"chars"});
    std::optional<std::string> chars =
        optionalString(parameters.get(0, Value::none()), name + " arg");
    return Value::string(stripString(text, chars, name != "rstrip", name != "lstrip"));
  }
  if (name == "split") {
    Parameters parameters(name, arguments, {"sep", "maxsplit"});
    ValueList parts;
    for (std::string &part :
         splitString(text, optionalString(parameters.get(0, Value::none()), "split separator"),
                     requireInteger(parameters.get(1, Value::integer(-1)))))
      parts.push_back(Value::string(std::move(part)));
    return Value::list(std::move(parts));
  }
  if (name == "startswith" || name == "endswith") {
    Parameters parameters(name, arguments, {"prefix"});
    return Value::boolean(matchesAffix(text, parameters.required(0, name), name == "startswith"));
  }
  if (name == "replace") {
    Parameters parameters(name, arguments, {"old", "new", "count"});
    return Value::string(replaceString(text, requireString(parameters.required(0, name), "old"),
                                       requireString(parameters.required(1, name), "new"),
                                       requireInteger(parameters.get(2, Value::integer(-1)))));
  }
  expectNoArguments(name, arguments);
  if (name == "upper") return Value::string(upperString(text));
  if (name == "lower") return Value::string(lowerString(text));
  if (name == "title") return Value::string(titleString(text));
  return Value::string(capitalizeString(text));
}

Value callDictMethod(const Dict &dict, const std::string &name, const Arguments &arguments) {
  if (name == "get") {
    Parameters parameters(name, arguments, {"key", "default"});
    const Value &key = parameters.required(0, name);
    const Value *found = key.isString() ? dict.find(key.asString()) : nullptr;
    return found ? *found : parameters.get(1, Value::none());
  }
  expectNoArguments(name, arguments);
  ValueList result;
  for (const auto &[key, value] : dict.entries()) {
    if (name == "items")
      result.push_back(Value::tuple({Value::string(key), value}));
    else
      result.push_back(name == "keys" ? Value::string(key) : value);
  }
  return Value::list(std::move(result));
}

Value callRange(const Arguments &arguments) {
  if (!arguments.keyword.empty()) throw RenderError("range() takes no keyword arguments");
  const ValueList &values = arguments.positional;
  if (values.empty() || values.size() > 3)
    throw RenderError("range expected 1 to 3 arguments, got " + std::to_string(values.size()));
  int64_t start = 0, stop = 0, step = 1;
  if (values.size() == 1) {
    stop = requireInteger(values[0]);
  } else {
    start = requireInteger(values[0]);
    stop = requireInteger(values[1]);
    if (values.size() == 3) step = requireInteger(values[2]);
  }
  if (step == 0) throw RenderError("range() arg 3 must not be zero");
  // 128 bits: the span of two int64s does not fit in one.
  __int128 span =
      step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  __int128 stride = step > 0 ? static_cast<__int128>(step) : -static_cast<__int128>(step);
  __int128 count = span <= 0 ? 0 : (span - 1) / stride + 1;
  if (count > kMaxRange)
    throw RenderError("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
  ValueList items;
  for (__int128 i = 0; i < count; ++i)
    items.push_back(Value::integer(static_cast<int64_t>(start + i * step)));
  return Value::list(std::move(items));
}

Value callNamespace(const Arguments &arguments) {
  if (arguments.positional.size() > 1)
    throw RenderError("namespace() takes at most one positional argument");
  Dict attributes;
  if (!arguments.positional.empty()) {
    const Value &initial = arguments.positional[0];
    if (initial.kind() != Value::Kind::Dict)
      throw RenderError("namespace() takes a mapping, not " + typeName(initial));
    attributes = initial.asDict();
  }
  for (const auto &[name, value] : arguments.keyword) attributes.set(name, value);
  return Value::newNamespace(std::move(attributes));
}

/// transformers' strftime_now: datetime.now().strftime(format), local time.
Value callStrftimeNow(const Arguments &arguments) {
  Parameters parameters("strftime_now", arguments, {"format"});
  const std::string &format = requireString(parameters.required(0, "strftime_now"), "format");
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  if (format.empty()) return Value::string("");
  // strftime returns 0 both when the buffer is short and when the text is empty.
  for (size_t capacity = 256; capacity <= 65536; capacity *= 4) {
    std::string buffer(capacity, '\0');
    size_t length = std::strftime(buffer.data(), buffer.size(), format.c_str(), &local);
    if (length > 0) return Value::string(buffer.substr(0, length));
  }
  return Value::string("");
}

Value callGlobal(const std::string &name, const Arguments &arguments) {
  if (name == "range") return callRange(arguments);
  if (name == "namespace") return callNamespace(arguments);
  if (name == "strftime_now") return callStrftimeNow(arguments);
  Parameters parameters(name, arguments, {"message"});
  throw ChatTemplateError(toPythonString(parameters.required(0, name)));
}

Value loopAttribute(const Value &loop, const std::string &name) {
  const LoopInfo &info = loop.loopInfo();
  auto length = static_cast<int64_t>(info.items->size());
  if (name == "index") return Value::integer(info.index0 + 1);
  if (name == "index0") return Value::integer(info.index0);
  if (name == "revindex") return Value::integer(length - info.index0);
  if (name == "revindex0") return Value::integer(length - info.index0 - 1);
  if (name == "first") return Value::boolean(info.index0 == 0);
  if (name == "last") return Value::boolean(info.index0 == length - 1);
  if (name == "length") return Value::integer(length);
  if (name == "depth") return Value::integer(1);
  if (name == "depth0") return Value::integer(0);
  if (name == "previtem")
    return info.index0 > 0 ? (*info.items)[static_cast<size_t>(info.index0 - 1)]
                           : Value::undefined("there is no previous item");
  if (name == "nextitem")
    return info.index0 + 1 < length ? (*info.items)[static_cast<size_t>(info.index0 + 1)]
                                    : Value::undefined("there is no next item");
  if (isOneOf(name, kLoopMethods)) return Value::callable(name, loop);
  return Value::undefined("'LoopContext object' has no attribute '" + name + "'");
}

/// The indices a slice visits in a sequence of `length`, as Python computes them.
std::vector<int64_t> sliceIndices(int64_t length, const Value &startValue, const Value &stopValue,
                                  const Value &stepValue) {
  auto given = [](const Value &v) { return !v.isUndefined() && !v.isNone(); };
  int64_t step = given(stepValue) ? requireInteger(stepValue) : 1;
  if (step == 0) throw RenderError("slice step cannot be zero");
  int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? length : length - 1;
  auto clamp = [&](const Value &v, int64_t fallback) {
    if (!given(v)) return fallback;
    int64_t index = requireInteger(v);
    if (index < 0) index += length;
    return std::clamp(index, lower, upper);
  };
  int64_t start = clamp(startValue, step > 0 ? lower : upper);
  int64_t stop = clamp(stopValue, step > 0 ? upper : lower);
  std::vector<int64_t> indices;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    indices.push_back(i);
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  return indices;
}

} // namespace

bool isSupportedGlobal(std::string_view name) { return isOneOf(name, kGlobals); }
bool isSupportedMethod(std::string_view name) {
  return isOneOf(name, kStringMethods) || isOneOf(name, kDictMethods) ||
         isOneOf(name, kLoopMethods);
}

Value callFunction(const Value &function, const Arguments &arguments) {
  if (function.isUndefined()) failUndefined(function);
  if (function.kind() != Value::Kind::Callable)
    throw RenderError("'" + typeName(function) + "' object is not callable");
  const std::string &name = function.callableName();
  const Value &receiver = function.callableReceiver();
  switch (receiver.kind()) {
  case Value::Kind::Undefined:
    return callGlobal(name, arguments);
  case Value::Kind::String:
    return callStringMethod(receiver.asString(), name, arguments);
  case Value::Kind::Dict:
    return callDictMethod(receiver.asDict(), name, arguments);
  case Value::Kind::Loop: {
    // loop.cycle(...), the loop's only method.
    if (arguments.positional.empty()) throw RenderError("no items for cycling given");
    const ValueList &choices = arguments.positional;
    return choices[static_cast<size_t>(receiver.loopInfo().index0) % choices.size()];
  }
  default:
    throw RenderError("'" + typeName(receiver) + "' has no method '" + name + "'");
  }
}

Value getAttribute(const Value &object, const std::string &name) {
  auto missing = [&] {
    return Value::undefined("'" + typeName(object) + " object' has no attribute '" + name + "'");
  };
  switch (object.kind()) {
  case Value::Kind::Undefined:
    failUndefined(object);
  case Value::Kind::String:
    return isOneOf(name, kStringMethods) ? Value::callable(name, object) : missing();
  case Value::Kind::Dict: {
    // Python's getattr comes first: d.items is the method, d['items'] the key.
    if (isOneOf(name, kDictMethods)) return Value::callable(name, object);
    const Value *found = object.asDict().find(name);
    return found ? *found : missing();
  }
  case Value::Kind::Namespace: {
    const Value *found = object.namespaceAttributes().find(name);
    return found ? *found : missing();
  }
  case Value::Kind::Loop:
    return loopAttribute(object, name);
  default:
    return missing();
  }
}

Value getItem(const Value &object, const Value &key) {
  if (object.isUndefined()) failUndefined(object);
  if (key.isUndefined()) failUndefined(key);
  bool indexable = object.isString() || object.kind() == Value::Kind::List ||
                   object.kind() == Value::Kind::Tuple;
  if (indexable && key.isInteger()) {
    int64_t index = key.asInteger();
    if (object.isString()) {
      std::u32string codePoints = decodeCodePoints(object.asString());
      auto length = static_cast<int64_t>(codePoints.size());
      if (index < 0) index += length;
      if (index < 0 || index >= length) return Value::undefined("string index out of range");
      return Value::string(
          encodeCodePoints(std::u32string(1, codePoints[static_cast<size_t>(index)])));
    }
    auto length = static_cast<int64_t>(object.items().size());
    if (index < 0) index += length;
    if (index < 0 || index >= length)
      return Value::undefined("'" + typeName(object) + " object' has no element " +
                              std::to_string(key.asInteger()));
    return object.items()[static_cast<size_t>(index)];
  }
  if (object.kind() == Value::Kind::Dict && key.isString()) {
    if (const Value *found = object.asDict().find(key.asString())) return *found;
  }
  // jinja2 falls back to the attribute of that name.
  if (key.isString()) return getAttribute(object, key.asString());
  return Value::undefined("'" + typeName(object) + " object' has no item " + toPythonRepr(key));
}

Value getSlice(const Value &object, const Value &start, const Value &stop, const Value &step) {
  // Slices are plain Python subscripts in jinja2: only sequences take them.
  switch (object.kind()) {
  case Value::Kind::Undefined:
    failUndefined(object);
  case Value::Kind::String: {
    std::u32string codePoints = decodeCodePoints(object.asString()), sliced;
    for (int64_t i : sliceIndices(static_cast<int64_t>(codePoints.size()), start, stop, step))
      sliced += codePoints[static_cast<size_t>(i)];
    return Value::string(encodeCodePoints(sliced));
  }
  case Value::Kind::List:
  case Value::Kind::Tuple: {
    ValueList sliced;
    for (int64_t i : sliceIndices(static_cast<int64_t>(object.items().size()), start, stop, step))
      sliced.push_back(object.items()[static_cast<size_t>(i)]);
    return object.kind() == Value::Kind::Tuple ? Value::tuple(std::move(sliced))
                                               : Value::list(std::move(sliced));
  }
  case Value::Kind::Dict:
    throw RenderError("unhashable type: 'slice'");
  default:
    throw RenderError("'" + typeName(object) + "' object is not subscriptable");
  }
}

} // namespace llmc::runtime::chat
