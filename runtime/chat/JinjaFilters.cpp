//===- JinjaFilters.cpp - the filters of chat templates -------------------===//
#include "runtime/chat/JinjaBuiltins.h"

#include "runtime/chat/ChatTemplate.h"
#include "runtime/chat/JinjaCall.h"
#include "runtime/chat/JinjaString.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <functional>
#include <unordered_map>

namespace llmc::runtime::chat {
namespace {

/// jinja2's make_attrgetter: "a.b.0" looks up a, then b, then item 0;
/// `fallback` replaces an undefined result.
Value lookupPath(Value item, const Value &attribute, const Value *fallback = nullptr) {
  std::vector<Value> parts;
  if (attribute.isString()) {
    for (const std::string &part : splitString(attribute.asString(), std::string("."), -1)) {
      // Digits are an index, as in jinja2 (beyond int64, a key).
      bool index =
          !part.empty() && part.size() < 19 &&
          std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
      parts.push_back(index ? Value::integer(std::strtoll(part.c_str(), nullptr, 10))
                            : Value::string(part));
    }
  } else if (!attribute.isNone() && !attribute.isUndefined()) {
    parts.push_back(attribute);
  }
  for (const Value &part : parts) {
    item = getItem(item, part);
    if (fallback && item.isUndefined()) item = *fallback;
  }
  return item;
}

/// str.splitlines(): breaks at the line boundaries Python knows, dropping them.
std::vector<std::string> splitLines(std::string_view text) {
  std::vector<std::string> lines;
  std::u32string codePoints = decodeCodePoints(text);
  size_t start = 0;
  for (size_t i = 0; i < codePoints.size(); ++i) {
    char32_t c = codePoints[i];
    bool lineBreak = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
                     c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!lineBreak) continue;
    lines.push_back(encodeCodePoints(std::u32string_view(codePoints).substr(start, i - start)));
    if (c == '\r' && i + 1 < codePoints.size() && codePoints[i + 1] == '\n') ++i;
    start = i + 1;
  }
  if (start < codePoints.size())
    lines.push_back(encodeCodePoints(std::u32string_view(codePoints).substr(start)));
  return lines;
}

/// Python's int(str, base) (base 10 or 0, 2, 8, 16); nullopt when it fails.
std::optional<int64_t> parseInteger(const std::string &text, int64_t base) {
  std::string digits = stripString(text, std::nullopt, true, true);
  bool negative = false;
  if (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) {
    negative = digits[0] == '-';
    digits.erase(0, 1);
  }
  if (digits.size() > 2 && digits[0] == '0') {
    char prefix = static_cast<char>(digits[1] | 0x20);
    int64_t prefixBase = prefix == 'b' ? 2 : prefix == 'o' ? 8 : prefix == 'x' ? 16 : 0;
    if (prefixBase && (base == prefixBase || base == 0)) {
      base = prefixBase;
      digits.erase(0, 2);
      if (digits[0] == '_') digits.erase(0, 1);
    }
  }
  if (base == 0) base = 10;
  // Underscores only between digits.
  if (digits.empty() || digits.front() == '_' || digits.back() == '_' ||
      digits.find("__") != std::string::npos)
    return std::nullopt;
  digits.erase(std::remove(digits.begin(), digits.end(), '_'), digits.end());
  errno = 0;
  char *end = nullptr;
  long long value = std::strtoll(digits.c_str(), &end, static_cast<int>(base));
  if (errno == ERANGE || *end != '\0' || digits[0] == '+' || digits[0] == '-') return std::nullopt;
  return negative ? -value : value;
}

/// Python's float(str); nullopt when it fails.
std::optional<double> parseFloat(const std::string &text) {
  std::string number = stripString(text, std::nullopt, true, true);
  // strtod also reads hexadecimal, which Python does not.
  if (number.empty() || number.find_first_of("xX") != std::string::npos) return std::nullopt;
  char *end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return value;
}

/// Escapes every non-ASCII character of JSON text as \uXXXX (UTF-16), as
/// json.dumps(ensure_ascii=True) does.
std::string escapeNonAscii(std::string_view json) {
  std::string out;
  char buffer[16];
  for (char32_t c : decodeCodePoints(json)) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x10000) {
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", static_cast<unsigned>(c));
      out += buffer;
    } else {
      char32_t offset = c - 0x10000;
      std::snprintf(buffer, sizeof(buffer), "\\u%04x",
                    static_cast<unsigned>(0xD800 + (offset >> 10)));
      out += buffer;
      std::snprintf(buffer, sizeof(buffer), "\\u%04x",
                    static_cast<unsigned>(0xDC00 + (offset & 0x3FF)));
      out += buffer;
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Filters
//===----------------------------------------------------------------------===//

using Filter = std::function<Value(const Value &, const Arguments &)>;

Value filterDefault(const Value &operand, const Arguments &arguments) {
  Parameters parameters("default", arguments, {"default_value", "boolean"});
  bool boolean = isTruthy(parameters.get(1, Value::boolean(false)));
  if (operand.isUndefined() || (boolean && !isTruthy(operand)))
    return parameters.get(0, Value::string(""));
  return operand;
}

Value filterFirst(const Value &operand, const Arguments &arguments) {
  expectNoArguments("first", arguments);
  ValueList items = iterate(operand);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value filterLast(const Value &operand, const Arguments &arguments) {
  expectNoArguments("last", arguments);
  if (operand.kind() == Value::Kind::Generator)
    throw RenderError("'generator' object is not reversible");
  ValueList items = iterate(operand);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value filterFloat(const Value &operand, const Arguments &arguments) {
  Parameters parameters("float", arguments, {"default"});
  if (operand.isUndefined()) failUndefined(operand);
  if (operand.isNumber()) return Value::number(operand.asDouble());
  if (operand.isString())
    if (std::optional<double> value = parseFloat(operand.asString())) return Value::number(*value);
  return parameters.get(0, Value::number(0.0));
}

/// int(value) of a float: truncated; NaN and infinities fail (nullopt).
std::optional<Value> truncateFloat(double value) {
  if (!std::isfinite(value)) return std::nullopt;
  if (std::fabs(value) >= 9.2e18) throw RenderError("integer overflow");
  return Value::integer(static_cast<int64_t>(value));
}

Value filterInt(const Value &operand, const Arguments &arguments) {
  Parameters parameters("int", arguments, {"default", "base"});
  if (operand.isUndefined()) failUndefined(operand);
  if (operand.isInteger()) return Value::integer(operand.asInteger());
  if (operand.kind() == Value::Kind::Float)
    if (std::optional<Value> value = truncateFloat(operand.asDouble())) return *value;
  if (operand.isString()) {
    int64_t base = requireInteger(parameters.get(1, Value::integer(10)));
    if (std::optional<int64_t> value = parseInteger(operand.asString(), base))
      return Value::integer(*value);
    // jinja2 falls back to int(float(value)): "42.23"|int is 42.
    if (std::optional<double> number = parseFloat(operand.asString()))
      if (std::optional<Value> value = truncateFloat(*number)) return *value;
  }
  return parameters.get(0, Value::integer(0));
}

Value filterIndent(const Value &operand, const Arguments &arguments) {
  Parameters parameters("indent", arguments, {"width", "first", "blank"});
  Value width = parameters.get(0, Value::integer(4));
  std::string indentation =
      width.isString()
          ? width.asString()
          : std::string(static_cast<size_t>(std::max<int64_t>(requireInteger(width), 0)), ' ');
  bool first = isTruthy(parameters.get(1, Value::boolean(false)));
  bool blank = isTruthy(parameters.get(2, Value::boolean(false)));
  if (operand.isUndefined()) failUndefined(operand);
  if (!operand.isString())
    throw RenderError("unsupported operand type(s) for +=: '" + typeName(operand) + "' and 'str'");
  std::vector<std::string> lines = splitLines(operand.asString() + "\n");
  std::string result;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) result += "\n";
    // The first line is indented only with `first`, blank lines only with `blank`.
    if (i > 0 && (blank || !lines[i].empty())) result += indentation;
    result += lines[i];
  }
  return Value::string(first ? indentation + result : result);
}

Value filterItems(const Value &operand, const Arguments &arguments) {
  expectNoArguments("items", arguments);
  if (operand.isUndefined()) return Value::generator({});
  if (operand.kind() != Value::Kind::Dict)
    throw RenderError("Can only get item pairs from a mapping.");
  ValueList pairs;
  for (const auto &[key, value] : operand.asDict().entries())
    pairs.push_back(Value::tuple({Value::string(key), value}));
  return Value::generator(std::move(pairs));
}

Value filterJoin(const Value &operand, const Arguments &arguments) {
  Parameters parameters("join", arguments, {"d", "attribute"});
  std::string separator = toPythonString(parameters.get(0, Value::string("")));
  Value attribute = parameters.get(1, Value::none());
  std::string result;
  bool first = true;
  for (const Value &item : iterate(operand)) {
    if (!first) result += separator;
    first = false;
    result += toPythonString(attribute.isNone() ? item : lookupPath(item, attribute));
  }
  return Value::string(std::move(result));
}

Value filterMap(const Value &operand, const Arguments &arguments) {
  if (!isTruthy(operand)) return Value::generator({});
  ValueList items = iterate(operand);
  ValueList mapped;
  if (arguments.positional.empty()) {
    Parameters parameters("map", arguments, {"attribute", "default"});
    Value attribute = parameters.required(0, "map");
    Value fallback = parameters.get(1, Value::none());
    for (const Value &item : items)
      mapped.push_back(lookupPath(item, attribute, fallback.isNone() ? nullptr : &fallback));
  } else {
    std::string filter = requireString(arguments.positional[0], "map's filter name");
    Arguments rest = dropPositional(arguments, 1);
    for (const Value &item : items) mapped.push_back(applyFilter(filter, item, rest));
  }
  return Value::generator(std::move(mapped));
}

/// select, reject, selectattr and rejectattr: keeps the items whose test
/// (truth when none is named) gives `keep`.
Value selectItems(const Value &operand, const Arguments &arguments, bool byAttribute, bool keep) {
  if (!isTruthy(operand)) return Value::generator({});
  if (byAttribute && arguments.positional.empty())
    throw RenderError("Missing parameter for attribute name");
  Value attribute = byAttribute ? arguments.positional[0] : Value();
  size_t testAt = byAttribute ? 1 : 0;
  std::optional<std::string> test;
  if (arguments.positional.size() > testAt)
    test = requireString(arguments.positional[testAt], "the test name");
  Arguments rest = dropPositional(arguments, testAt + 1);
  ValueList selected;
  for (const Value &item : iterate(operand)) {
    Value subject = byAttribute ? lookupPath(item, attribute) : item;
    bool passed = test ? applyTest(*test, subject, rest) : isTruthy(subject);
    if (passed == keep) selected.push_back(item);
  }
  return Value::generator(std::move(selected));
}

Value filterReplace(const Value &operand, const Arguments &arguments) {
  Parameters parameters("replace", arguments, {"old", "new", "count"});
  Value count = parameters.get(2, Value::none());
  return Value::string(replaceString(toPythonString(operand),
                                     toPythonString(parameters.required(0, "replace")),
                                     toPythonString(parameters.required(1, "replace")),
                                     count.isNone() ? -1 : requireInteger(count)));
}

Value filterReverse(const Value &operand, const Arguments &arguments) {
  expectNoArguments("reverse", arguments);
  if (operand.isString()) {
    std::u32string codePoints = decodeCodePoints(operand.asString());
    std::reverse(codePoints.begin(), codePoints.end());
    return Value::string(encodeCodePoints(codePoints));
  }
  ValueList items;
  try {
    items = iterate(operand);
  } catch (const RenderError &) {
    throw RenderError("argument must be iterable");
  }
  std::reverse(items.begin(), items.end());
  // reversed() gives an iterator; a generator, which has none, a list.
  if (operand.kind() == Value::Kind::Generator) return Value::list(std::move(items));
  return Value::generator(std::move(items));
}

Value filterTojson(const Value &operand, const Arguments &arguments) {
  Parameters parameters("tojson", arguments, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonFormat format;
  Value indent = parameters.get(1, Value::none());
  if (indent.isString())
    format.indent = indent.asString();
  else if (!indent.isNone())
    format.indent =
        std::string(static_cast<size_t>(std::max<int64_t>(requireInteger(indent), 0)), ' ');
  if (format.indent) format.itemSeparator = ",";
  Value separators = parameters.get(2, Value::none());
  if (!separators.isNone()) {
    if (!separators.hasItems() || separators.items().size() != 2)
      throw RenderError("tojson separators must be an (item, key) pair");
    format.itemSeparator = requireString(separators.items()[0], "the item separator");
    format.keySeparator = requireString(separators.items()[1], "the key separator");
  }
  format.sortKeys = isTruthy(parameters.get(3, Value::boolean(false)));
  std::string json = toJson(operand, format);
  if (isTruthy(parameters.get(0, Value::boolean(false)))) json = escapeNonAscii(json);
  return Value::string(std::move(json));
}

Value filterTrim(const Value &operand, const Arguments &arguments) {
  Parameters parameters("trim", arguments, {"chars"});
  return Value::string(stripString(toPythonString(operand),
                                   optionalString(parameters.get(0, Value::none()), "trim chars"),
                                   true, true));
}

/// A filter that maps str(operand) through `transform` and takes no arguments.
Filter textFilter(const char *name, std::string (*transform)(std::string_view)) {
  return [name, transform](const Value &operand, const Arguments &arguments) {
    expectNoArguments(name, arguments);
    return Value::string(transform(toPythonString(operand)));
  };
}

const std::unordered_map<std::string_view, Filter> &filters() {
  static const std::unordered_map<std::string_view, Filter> table = [] {
    std::unordered_map<std::string_view, Filter> t;
    t["capitalize"] = textFilter("capitalize", capitalizeString);
    t["lower"] = textFilter("lower", lowerString);
    t["upper"] = textFilter("upper", upperString);
    t["title"] = textFilter("title", titleWords);
    t["default"] = t["d"] = filterDefault;
    t["first"] = filterFirst;
    t["last"] = filterLast;
    t["float"] = filterFloat;
    t["int"] = filterInt;
    t["indent"] = filterIndent;
    t["items"] = filterItems;
    t["join"] = filterJoin;
    t["length"] = t["count"] = [](const Value &operand, const Arguments &arguments) {
      expectNoArguments("length", arguments);
      return Value::integer(lengthOf(operand));
    };
    t["list"] = [](const Value &operand, const Arguments &arguments) {
      expectNoArguments("list", arguments);
      return Value::list(iterate(operand));
    };
    t["string"] = t["safe"] = [](const Value &operand, const Arguments &arguments) {
      expectNoArguments("string", arguments);
      return Value::string(toPythonString(operand));
    };
    t["map"] = filterMap;
    t["select"] = [](const Value &operand, const Arguments &arguments) {
      return selectItems(operand, arguments, false, true);
    };
    t["reject"] = [](const Value &operand, const Arguments &arguments) {
      return selectItems(operand, arguments, false, false);
    };
    t["selectattr"] = [](const Value &operand, const Arguments &arguments) {
      return selectItems(operand, arguments, true, true);
    };
    t["rejectattr"] = [](const Value &operand, const Arguments &arguments) {
      return selectItems(operand, arguments, true, false);
    };
    t["replace"] = filterReplace;
    t["reverse"] = filterReverse;
    t["tojson"] = filterTojson;
    t["trim"] = filterTrim;
    return t;
  }();
  return table;
}

} // namespace

bool isSupportedFilter(std::string_view name) { return filters().count(name) != 0; }

Value applyFilter(const std::string &name, const Value &operand, const Arguments &arguments) {
  auto filter = filters().find(name);
  if (filter == filters().end()) throw RenderError("no filter named '" + name + "'");
  return filter->second(operand, arguments);
}

} // namespace llmc::runtime::chat
