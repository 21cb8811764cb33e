//===- JinjaBuiltins.cpp - filters, tests, methods and operators ----------===//
#include "runtime/chat/JinjaBuiltins.h"

#include "runtime/chat/ChatTemplate.h"
#include "runtime/chat/JinjaString.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <unordered_map>

namespace llmc::runtime::chat {
namespace {

/// jinja2's sandbox refuses larger ranges (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

//===----------------------------------------------------------------------===//
// Arguments
//===----------------------------------------------------------------------===//

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

/// An optional str argument: absent or None is nullopt.
std::optional<std::string> optionalString(const Value &value, const std::string &what) {
  if (value.isUndefined() || value.isNone()) return std::nullopt;
  return requireString(value, what);
}

/// Checks that a filter, test or method that takes no arguments got none.
void expectNoArguments(const std::string &function, const Arguments &arguments) {
  Parameters(function, arguments, {});
}

/// Arguments without the first `count` positional ones.
Arguments dropPositional(const Arguments &arguments, size_t count) {
  Arguments rest;
  rest.positional.assign(arguments.positional.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                            count, arguments.positional.size())),
                         arguments.positional.end());
  rest.keyword = arguments.keyword;
  return rest;
}

//===----------------------------------------------------------------------===//
// Helpers of the filters
//===----------------------------------------------------------------------===//

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

//===----------------------------------------------------------------------===//
// Tests
//===----------------------------------------------------------------------===//

using Test = std::function<bool(const Value &, const Arguments &)>;

/// A test of the operand alone.
Test unaryTest(const char *name, bool (*predicate)(const Value &)) {
  return [name, predicate](const Value &operand, const Arguments &arguments) {
    expectNoArguments(name, arguments);
    return predicate(operand);
  };
}

/// A test comparing the operand with one argument.
Test binaryTest(const char *name, bool (*predicate)(const Value &, const Value &)) {
  return [name, predicate](const Value &operand, const Arguments &arguments) {
    Parameters parameters(name, arguments, {"other"});
    return predicate(operand, parameters.required(0, name));
  };
}

/// `value % divisor == remainder` with Python's modulo (floats included).
bool hasRemainder(const Value &value, const Value &divisor, int64_t remainder) {
  return valuesEqual(applyBinary(BinaryExpr::Op::Modulo, value, divisor),
                     Value::integer(remainder));
}

const std::unordered_map<std::string_view, Test> &tests() {
  static const std::unordered_map<std::string_view, Test> table = [] {
    using Kind = Value::Kind;
    std::unordered_map<std::string_view, Test> t;
    t["defined"] = unaryTest("defined", [](const Value &v) { return !v.isUndefined(); });
    t["undefined"] = unaryTest("undefined", [](const Value &v) { return v.isUndefined(); });
    t["none"] = unaryTest("none", [](const Value &v) { return v.isNone(); });
    t["boolean"] = unaryTest("boolean", [](const Value &v) { return v.kind() == Kind::Bool; });
    t["true"] =
        unaryTest("true", [](const Value &v) { return v.kind() == Kind::Bool && v.asBool(); });
    t["false"] =
        unaryTest("false", [](const Value &v) { return v.kind() == Kind::Bool && !v.asBool(); });
    t["integer"] = unaryTest("integer", [](const Value &v) { return v.kind() == Kind::Int; });
    t["float"] = unaryTest("float", [](const Value &v) { return v.kind() == Kind::Float; });
    t["number"] = unaryTest("number", [](const Value &v) { return v.isNumber(); });
    t["string"] = unaryTest("string", [](const Value &v) { return v.isString(); });
    t["mapping"] = unaryTest("mapping", [](const Value &v) { return v.kind() == Kind::Dict; });
    t["iterable"] = unaryTest("iterable", [](const Value &v) {
      return v.isString() || v.hasItems() || v.kind() == Kind::Dict || v.isUndefined() ||
             v.kind() == Kind::Loop;
    });
    // len() and indexing: Undefined has both, a generator neither.
    t["sequence"] = unaryTest("sequence", [](const Value &v) {
      return v.isString() || v.kind() == Kind::List || v.kind() == Kind::Tuple ||
             v.kind() == Kind::Dict || v.isUndefined();
    });
    t["callable"] = unaryTest(
        "callable", [](const Value &v) { return v.kind() == Kind::Callable || v.isUndefined(); });
    t["odd"] =
        unaryTest("odd", [](const Value &v) { return hasRemainder(v, Value::integer(2), 1); });
    t["even"] =
        unaryTest("even", [](const Value &v) { return hasRemainder(v, Value::integer(2), 0); });
    t["divisibleby"] = binaryTest("divisibleby", [](const Value &value, const Value &divisor) {
      return hasRemainder(value, divisor, 0);
    });
    t["sameas"] = binaryTest("sameas", [](const Value &a, const Value &b) {
      if (a.kind() != b.kind()) return false;
      if (a.isNone() || a.isUndefined() || a.isNumber()) return valuesEqual(a, b);
      return a.sharesObjectWith(b);
    });
    t["in"] = binaryTest("in", [](const Value &a, const Value &b) { return contains(b, a); });
    auto comparison = [](const char *name, CompareExpr::Op op) {
      return [name, op](const Value &operand, const Arguments &arguments) {
        Parameters parameters(name, arguments, {"other"});
        return applyComparison(op, operand, parameters.required(0, name));
      };
    };
    t["eq"] = t["equalto"] = t["=="] = comparison("eq", CompareExpr::Op::Equal);
    t["ne"] = t["!="] = comparison("ne", CompareExpr::Op::NotEqual);
    t["lt"] = t["lessthan"] = t["<"] = comparison("lt", CompareExpr::Op::Less);
    t["le"] = t["<="] = comparison("le", CompareExpr::Op::LessEqual);
    t["gt"] = t["greaterthan"] = t[">"] = comparison("gt", CompareExpr::Op::Greater);
    t["ge"] = t[">="] = comparison("ge", CompareExpr::Op::GreaterEqual);
    return t;
  }();
  return table;
}

//===----------------------------------------------------------------------===//
// Methods and globals
//===----------------------------------------------------------------------===//

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

[[noreturn]] void unsupportedOperands(const char *symbol, const Value &left, const Value &right) {
  throw RenderError(std::string("unsupported operand type(s) for ") + symbol + ": '" +
                    typeName(left) + "' and '" + typeName(right) + "'");
}

/// int + - * int; Python's ints do not overflow, so int64 overflow is an error here.
Value integerArithmetic(BinaryExpr::Op op, int64_t a, int64_t b) {
  int64_t result = 0;
  bool overflowed = op == BinaryExpr::Op::Add        ? __builtin_add_overflow(a, b, &result)
                    : op == BinaryExpr::Op::Subtract ? __builtin_sub_overflow(a, b, &result)
                                                     : __builtin_mul_overflow(a, b, &result);
  if (overflowed) throw RenderError("integer overflow");
  return Value::integer(result);
}

/// `sequence * count` for a str, list or tuple.
Value repeat(const Value &sequence, int64_t count) {
  count = std::max<int64_t>(count, 0);
  size_t size = sequence.isString() ? sequence.asString().size() : sequence.items().size();
  // Where Python would run out of memory, fail rather than try.
  if (size > 0 && static_cast<uint64_t>(count) > (uint64_t(1) << 30) / size)
    throw RenderError("the repeated sequence would be too large");
  if (sequence.isString()) {
    std::string result;
    for (int64_t i = 0; i < count; ++i) result += sequence.asString();
    return Value::string(std::move(result));
  }
  ValueList items;
  for (int64_t i = 0; i < count; ++i)
    items.insert(items.end(), sequence.items().begin(), sequence.items().end());
  return sequence.kind() == Value::Kind::Tuple ? Value::tuple(std::move(items))
                                               : Value::list(std::move(items));
}

bool isRepeatable(const Value &value) {
  return value.isString() || value.kind() == Value::Kind::List ||
         value.kind() == Value::Kind::Tuple;
}

Value add(const Value &left, const Value &right) {
  if (left.isNumber() && right.isNumber()) {
    if (left.isInteger() && right.isInteger())
      return integerArithmetic(BinaryExpr::Op::Add, left.asInteger(), right.asInteger());
    return Value::number(left.asDouble() + right.asDouble());
  }
  if (left.isString()) {
    if (!right.isString())
      throw RenderError("can only concatenate str (not \"" + typeName(right) + "\") to str");
    return Value::string(left.asString() + right.asString());
  }
  bool lists = left.kind() == Value::Kind::List && right.kind() == Value::Kind::List;
  bool tuples = left.kind() == Value::Kind::Tuple && right.kind() == Value::Kind::Tuple;
  if (lists || tuples) {
    ValueList items = left.items();
    items.insert(items.end(), right.items().begin(), right.items().end());
    return lists ? Value::list(std::move(items)) : Value::tuple(std::move(items));
  }
  if (left.kind() == Value::Kind::List || left.kind() == Value::Kind::Tuple)
    throw RenderError("can only concatenate " + typeName(left) + " (not \"" + typeName(right) +
                      "\") to " + typeName(left));
  unsupportedOperands("+", left, right);
}

Value divide(BinaryExpr::Op op, const Value &left, const Value &right) {
  const char *symbol = op == BinaryExpr::Op::Divide        ? "/"
                       : op == BinaryExpr::Op::FloorDivide ? "//"
                                                           : "%";
  if (op == BinaryExpr::Op::Modulo && left.isString())
    throw RenderError("printf-style formatting with % is not supported");
  if (!left.isNumber() || !right.isNumber()) unsupportedOperands(symbol, left, right);
  if (op != BinaryExpr::Op::Divide && left.isInteger() && right.isInteger()) {
    int64_t a = left.asInteger(), b = right.asInteger();
    if (b == 0) throw RenderError("integer division or modulo by zero");
    if (a == INT64_MIN && b == -1) throw RenderError("integer overflow");
    int64_t quotient = a / b, remainder = a % b;
    // Python rounds toward negative infinity.
    if (remainder != 0 && ((remainder < 0) != (b < 0))) {
      --quotient;
      remainder += b;
    }
    return Value::integer(op == BinaryExpr::Op::FloorDivide ? quotient : remainder);
  }
  double a = left.asDouble(), b = right.asDouble();
  if (b == 0) {
    throw RenderError(op == BinaryExpr::Op::Divide        ? "division by zero"
                      : op == BinaryExpr::Op::FloorDivide ? "float floor division by zero"
                                                          : "float modulo");
  }
  if (op == BinaryExpr::Op::Divide) return Value::number(a / b);
  // CPython's float divmod.
  double remainder = std::fmod(a, b);
  double quotient = (a - remainder) / b;
  if (remainder != 0) {
    if ((b < 0) != (remainder < 0)) {
      remainder += b;
      quotient -= 1.0;
    }
  } else {
    remainder = std::copysign(0.0, b);
  }
  if (op == BinaryExpr::Op::Modulo) return Value::number(remainder);
  double floorQuotient;
  if (quotient != 0) {
    floorQuotient = std::floor(quotient);
    if (quotient - floorQuotient > 0.5) floorQuotient += 1.0;
  } else {
    floorQuotient = std::copysign(0.0, a / b);
  }
  return Value::number(floorQuotient);
}

Value power(const Value &left, const Value &right) {
  if (!left.isNumber() || !right.isNumber()) unsupportedOperands("** or pow()", left, right);
  if (left.isInteger() && right.isInteger() && right.asInteger() >= 0) {
    int64_t base = left.asInteger(), result = 1;
    for (int64_t exponent = right.asInteger(); exponent > 0; --exponent) {
      if (__builtin_mul_overflow(result, base, &result)) throw RenderError("integer overflow");
      if (result == 0 || result == 1) break;
    }
    return Value::integer(result);
  }
  double base = left.asDouble(), exponent = right.asDouble();
  if (base == 0 && exponent < 0) throw RenderError("0.0 cannot be raised to a negative power");
  if (base < 0 && exponent != std::floor(exponent))
    throw RenderError("a negative number to a fractional power is complex");
  return Value::number(std::pow(base, exponent));
}
} // namespace

//===----------------------------------------------------------------------===//
// Public entry points
//===----------------------------------------------------------------------===//

bool isSupportedFilter(std::string_view name) { return filters().count(name) != 0; }
bool isSupportedTest(std::string_view name) { return tests().count(name) != 0; }
bool isSupportedGlobal(std::string_view name) { return isOneOf(name, kGlobals); }
bool isSupportedMethod(std::string_view name) {
  return isOneOf(name, kStringMethods) || isOneOf(name, kDictMethods) ||
         isOneOf(name, kLoopMethods);
}

void failUndefined(const Value &undefined) {
  const std::string &hint = undefined.undefinedHint();
  throw RenderError(hint.empty() ? "undefined value" : hint);
}

Value applyFilter(const std::string &name, const Value &operand, const Arguments &arguments) {
  auto filter = filters().find(name);
  if (filter == filters().end()) throw RenderError("no filter named '" + name + "'");
  return filter->second(operand, arguments);
}

bool applyTest(const std::string &name, const Value &operand, const Arguments &arguments) {
  auto test = tests().find(name);
  if (test == tests().end()) throw RenderError("no test named '" + name + "'");
  return test->second(operand, arguments);
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

Value applyBinary(BinaryExpr::Op op, const Value &left, const Value &right) {
  if (left.isUndefined()) failUndefined(left);
  if (right.isUndefined()) failUndefined(right);
  switch (op) {
  case BinaryExpr::Op::Add:
    return add(left, right);
  case BinaryExpr::Op::Subtract:
    if (!left.isNumber() || !right.isNumber()) unsupportedOperands("-", left, right);
    if (left.isInteger() && right.isInteger())
      return integerArithmetic(op, left.asInteger(), right.asInteger());
    return Value::number(left.asDouble() - right.asDouble());
  case BinaryExpr::Op::Multiply:
    if (left.isNumber() && right.isNumber()) {
      if (left.isInteger() && right.isInteger())
        return integerArithmetic(op, left.asInteger(), right.asInteger());
      return Value::number(left.asDouble() * right.asDouble());
    }
    if (isRepeatable(left) && right.isInteger()) return repeat(left, right.asInteger());
    if (left.isInteger() && isRepeatable(right)) return repeat(right, left.asInteger());
    unsupportedOperands("*", left, right);
  case BinaryExpr::Op::Divide:
  case BinaryExpr::Op::FloorDivide:
  case BinaryExpr::Op::Modulo:
    return divide(op, left, right);
  case BinaryExpr::Op::Power:
    break;
  }
  return power(left, right);
}

Value applyUnary(UnaryExpr::Op op, const Value &operand) {
  if (op == UnaryExpr::Op::Not) return Value::boolean(!isTruthy(operand));
  if (operand.isUndefined()) failUndefined(operand);
  const char *symbol = op == UnaryExpr::Op::Negate ? "-" : "+";
  if (!operand.isNumber())
    throw RenderError(std::string("bad operand type for unary ") + symbol + ": '" +
                      typeName(operand) + "'");
  if (operand.kind() == Value::Kind::Float)
    return Value::number(op == UnaryExpr::Op::Negate ? -operand.asDouble() : operand.asDouble());
  int64_t value = operand.asInteger();
  if (op == UnaryExpr::Op::Plus) return Value::integer(value);
  if (value == INT64_MIN) throw RenderError("integer overflow");
  return Value::integer(-value);
}

bool applyComparison(CompareExpr::Op op, const Value &left, const Value &right) {
  switch (op) {
  case CompareExpr::Op::Equal:
    return valuesEqual(left, right);
  case CompareExpr::Op::NotEqual:
    return !valuesEqual(left, right);
  case CompareExpr::Op::In:
    return contains(right, left);
  case CompareExpr::Op::NotIn:
    return !contains(right, left);
  default:
    break;
  }
  if (left.isUndefined()) failUndefined(left);
  if (right.isUndefined()) failUndefined(right);
  const char *symbol = op == CompareExpr::Op::Less        ? "<"
                       : op == CompareExpr::Op::Greater   ? ">"
                       : op == CompareExpr::Op::LessEqual ? "<="
                                                          : ">=";
  try {
    switch (op) {
    case CompareExpr::Op::Less:
      return valueLess(left, right);
    case CompareExpr::Op::Greater:
      return valueLess(right, left);
    case CompareExpr::Op::LessEqual:
      return valueLess(left, right) || valuesEqual(left, right);
    default:
      return valueLess(right, left) || valuesEqual(left, right);
    }
  } catch (const RenderError &) {
    throw RenderError(std::string("'") + symbol + "' not supported between instances of '" +
                      typeName(left) + "' and '" + typeName(right) + "'");
  }
}

} // namespace llmc::runtime::chat
