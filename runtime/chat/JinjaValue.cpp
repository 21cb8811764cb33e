//===- JinjaValue.cpp - the values a chat template computes with ----------===//
#include "runtime/chat/JinjaValue.h"

#include "runtime/chat/JinjaString.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace llmc::runtime::chat {

struct Value::Object {
  virtual ~Object() = default;
};
struct Value::StringObject : Object {
  explicit StringObject(std::string text) : text(std::move(text)) {}
  std::string text;
};
struct Value::ListObject : Object {
  explicit ListObject(ValueList items) : items(std::move(items)) {}
  ValueList items;
};
struct Value::DictObject : Object {
  explicit DictObject(Dict dict) : dict(std::move(dict)) {}
  /// Mutable for namespaces only: other dicts are never handed out writable.
  mutable Dict dict;
};
struct Value::LoopObject : Object {
  explicit LoopObject(LoopInfo info) : info(std::move(info)) {}
  LoopInfo info;
};
struct Value::CallableObject : Object {
  CallableObject(std::string name, Value receiver)
      : name(std::move(name)), receiver(std::move(receiver)) {}
  std::string name;
  Value receiver;
};

//===----------------------------------------------------------------------===//
// Dict and Value
//===----------------------------------------------------------------------===//

const Value *Dict::find(std::string_view key) const {
  for (const auto &[name, value] : items)
    if (name == key) return &value;
  return nullptr;
}

void Dict::set(const std::string &key, Value value) {
  for (auto &[name, existing] : items) {
    if (name == key) {
      existing = std::move(value);
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

Value Value::undefined(std::string hint) {
  return Value(Kind::Undefined, std::make_shared<StringObject>(std::move(hint)));
}
Value Value::none() { return Value(Kind::None, nullptr); }
Value Value::boolean(bool value) {
  Value result(Kind::Bool, nullptr);
  result.scalar.boolean = value;
  return result;
}
Value Value::integer(int64_t value) {
  Value result(Kind::Int, nullptr);
  result.scalar.integer = value;
  return result;
}
Value Value::number(double value) {
  Value result(Kind::Float, nullptr);
  result.scalar.number = value;
  return result;
}
Value Value::string(std::string text) {
  return Value(Kind::String, std::make_shared<StringObject>(std::move(text)));
}
Value Value::list(ValueList items) {
  return Value(Kind::List, std::make_shared<ListObject>(std::move(items)));
}
Value Value::tuple(ValueList items) {
  return Value(Kind::Tuple, std::make_shared<ListObject>(std::move(items)));
}
Value Value::generator(ValueList items) {
  return Value(Kind::Generator, std::make_shared<ListObject>(std::move(items)));
}
Value Value::dict(Dict dict) {
  return Value(Kind::Dict, std::make_shared<DictObject>(std::move(dict)));
}
Value Value::newNamespace(Dict attributes) {
  return Value(Kind::Namespace, std::make_shared<DictObject>(std::move(attributes)));
}
Value Value::loop(LoopInfo info) {
  return Value(Kind::Loop, std::make_shared<LoopObject>(std::move(info)));
}
Value Value::callable(std::string name, Value receiver) {
  return Value(Kind::Callable,
               std::make_shared<CallableObject>(std::move(name), std::move(receiver)));
}

bool Value::hasItems() const {
  return valueKind == Kind::List || valueKind == Kind::Tuple || valueKind == Kind::Generator;
}

int64_t Value::asInteger() const {
  return valueKind == Kind::Bool ? (scalar.boolean ? 1 : 0) : scalar.integer;
}

double Value::asDouble() const {
  return valueKind == Kind::Float ? scalar.number : static_cast<double>(asInteger());
}

const std::string &Value::asString() const {
  return static_cast<const StringObject &>(*object).text;
}

const ValueList &Value::items() const { return static_cast<const ListObject &>(*object).items; }

const Dict &Value::asDict() const { return static_cast<const DictObject &>(*object).dict; }

Dict &Value::namespaceAttributes() const { return static_cast<const DictObject &>(*object).dict; }

const LoopInfo &Value::loopInfo() const { return static_cast<const LoopObject &>(*object).info; }

const std::string &Value::callableName() const {
  return static_cast<const CallableObject &>(*object).name;
}

const Value &Value::callableReceiver() const {
  return static_cast<const CallableObject &>(*object).receiver;
}

const std::string &Value::undefinedHint() const {
  static const std::string kNoHint;
  return object ? static_cast<const StringObject &>(*object).text : kNoHint;
}

bool Value::sharesObjectWith(const Value &other) const { return object && object == other.object; }

//===----------------------------------------------------------------------===//
// Python semantics
//===----------------------------------------------------------------------===//

namespace {

std::string joinRepr(const ValueList &items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += toPythonRepr(items[i]);
  }
  return out;
}

std::string dictRepr(const Dict &dict) {
  std::string out = "{";
  bool first = true;
  for (const auto &[key, value] : dict.entries()) {
    if (!first) out += ", ";
    first = false;
    out += pythonRepr(key) + ": " + toPythonRepr(value);
  }
  return out + "}";
}

bool sequencesEqual(const ValueList &left, const ValueList &right) {
  if (left.size() != right.size()) return false;
  for (size_t i = 0; i < left.size(); ++i)
    if (!valuesEqual(left[i], right[i])) return false;
  return true;
}

void writeJson(const Value &value, const JsonFormat &format, int depth, std::string &out);

/// The newline and indentation before an item at `depth` (only with an indent).
void writeJsonBreak(const JsonFormat &format, int depth, std::string &out) {
  out += '\n';
  for (int i = 0; i < depth; ++i) out += *format.indent;
}

void writeJsonArray(const ValueList &items, const JsonFormat &format, int depth, std::string &out) {
  if (items.empty()) {
    out += "[]";
    return;
  }
  out += '[';
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += format.itemSeparator;
    if (format.indent) writeJsonBreak(format, depth + 1, out);
    writeJson(items[i], format, depth + 1, out);
  }
  if (format.indent) writeJsonBreak(format, depth, out);
  out += ']';
}

void writeJsonObject(const Dict &dict, const JsonFormat &format, int depth, std::string &out) {
  if (dict.size() == 0) {
    out += "{}";
    return;
  }
  std::vector<const std::pair<std::string, Value> *> entries;
  for (const auto &entry : dict.entries()) entries.push_back(&entry);
  if (format.sortKeys)
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto *a, const auto *b) { return a->first < b->first; });
  out += '{';
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out += format.itemSeparator;
    if (format.indent) writeJsonBreak(format, depth + 1, out);
    out += jsonQuote(entries[i]->first);
    out += format.keySeparator;
    writeJson(entries[i]->second, format, depth + 1, out);
  }
  if (format.indent) writeJsonBreak(format, depth, out);
  out += '}';
}

void writeJson(const Value &value, const JsonFormat &format, int depth, std::string &out) {
  switch (value.kind()) {
  case Value::Kind::None:
    out += "null";
    return;
  case Value::Kind::Bool:
    out += value.asBool() ? "true" : "false";
    return;
  case Value::Kind::Int:
    out += std::to_string(value.asInteger());
    return;
  case Value::Kind::Float: {
    double number = value.asDouble();
    if (std::isnan(number))
      out += "NaN";
    else if (std::isinf(number))
      out += number > 0 ? "Infinity" : "-Infinity";
    else
      out += formatFloat(number);
    return;
  }
  case Value::Kind::String:
    out += jsonQuote(value.asString());
    return;
  case Value::Kind::List:
  case Value::Kind::Tuple:
    writeJsonArray(value.items(), format, depth, out);
    return;
  case Value::Kind::Dict:
    writeJsonObject(value.asDict(), format, depth, out);
    return;
  default:
    throw RenderError("Object of type " + typeName(value) + " is not JSON serializable");
  }
}

template <typename Json> Value convertJson(const Json &json) {
  switch (json.type()) {
  case nlohmann::json::value_t::null:
    return Value::none();
  case nlohmann::json::value_t::boolean:
    return Value::boolean(json.template get<bool>());
  case nlohmann::json::value_t::number_integer:
    return Value::integer(json.template get<int64_t>());
  case nlohmann::json::value_t::number_unsigned: {
    auto number = json.template get<uint64_t>();
    if (number > static_cast<uint64_t>(INT64_MAX))
      throw RenderError("integer " + std::to_string(number) + " is out of range");
    return Value::integer(static_cast<int64_t>(number));
  }
  case nlohmann::json::value_t::number_float:
    return Value::number(json.template get<double>());
  case nlohmann::json::value_t::string:
    return Value::string(json.template get<std::string>());
  case nlohmann::json::value_t::array: {
    ValueList items;
    items.reserve(json.size());
    for (const auto &item : json) items.push_back(convertJson(item));
    return Value::list(std::move(items));
  }
  case nlohmann::json::value_t::object: {
    Dict dict;
    for (auto it = json.begin(); it != json.end(); ++it) dict.set(it.key(), convertJson(*it));
    return Value::dict(std::move(dict));
  }
  default:
    throw RenderError("the context holds a JSON value a template cannot use");
  }
}
} // namespace

bool isTruthy(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
  case Value::Kind::None:
    return false;
  case Value::Kind::Bool:
    return value.asBool();
  case Value::Kind::Int:
    return value.asInteger() != 0;
  case Value::Kind::Float:
    return value.asDouble() != 0.0;
  case Value::Kind::String:
    return !value.asString().empty();
  case Value::Kind::List:
  case Value::Kind::Tuple:
    return !value.items().empty();
  case Value::Kind::Dict:
    return value.asDict().size() != 0;
  case Value::Kind::Generator:
  case Value::Kind::Namespace:
  case Value::Kind::Loop:
  case Value::Kind::Callable:
    return true;
  }
  return false;
}

std::string toPythonString(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return "";
  case Value::Kind::String:
    return value.asString();
  default:
    return toPythonRepr(value);
  }
}

std::string toPythonRepr(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return "Undefined";
  case Value::Kind::None:
    return "None";
  case Value::Kind::Bool:
    return value.asBool() ? "True" : "False";
  case Value::Kind::Int:
    return std::to_string(value.asInteger());
  case Value::Kind::Float:
    return formatFloat(value.asDouble());
  case Value::Kind::String:
    return pythonRepr(value.asString());
  case Value::Kind::List:
    return "[" + joinRepr(value.items()) + "]";
  case Value::Kind::Tuple:
    return "(" + joinRepr(value.items()) + (value.items().size() == 1 ? ",)" : ")");
  case Value::Kind::Generator:
    return "<generator object>";
  case Value::Kind::Dict:
    return dictRepr(value.asDict());
  case Value::Kind::Namespace:
    return "<Namespace " + dictRepr(value.namespaceAttributes()) + ">";
  case Value::Kind::Loop: {
    const LoopInfo &loop = value.loopInfo();
    return "<LoopContext " + std::to_string(loop.index0 + 1) + "/" +
           std::to_string(loop.items->size()) + ">";
  }
  case Value::Kind::Callable:
    if (value.callableReceiver().isUndefined()) return "<function " + value.callableName() + ">";
    return "<built-in method " + value.callableName() + " of " +
           typeName(value.callableReceiver()) + " object>";
  }
  return "";
}

std::string typeName(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return "Undefined";
  case Value::Kind::None:
    return "NoneType";
  case Value::Kind::Bool:
    return "bool";
  case Value::Kind::Int:
    return "int";
  case Value::Kind::Float:
    return "float";
  case Value::Kind::String:
    return "str";
  case Value::Kind::List:
    return "list";
  case Value::Kind::Tuple:
    return "tuple";
  case Value::Kind::Generator:
    return "generator";
  case Value::Kind::Dict:
    return "dict";
  case Value::Kind::Namespace:
    return "Namespace";
  case Value::Kind::Loop:
    return "LoopContext";
  case Value::Kind::Callable:
    return "builtin_function_or_method";
  }
  return "object";
}

bool valuesEqual(const Value &left, const Value &right) {
  if (left.isNumber() && right.isNumber()) {
    if (left.isInteger() && right.isInteger()) return left.asInteger() == right.asInteger();
    return left.asDouble() == right.asDouble();
  }
  if (left.kind() != right.kind()) return false;
  switch (left.kind()) {
  case Value::Kind::Undefined:
  case Value::Kind::None:
    return true;
  case Value::Kind::String:
    return left.asString() == right.asString();
  case Value::Kind::List:
  case Value::Kind::Tuple:
    return sequencesEqual(left.items(), right.items());
  case Value::Kind::Dict: {
    const Dict &a = left.asDict(), &b = right.asDict();
    if (a.size() != b.size()) return false;
    for (const auto &[key, value] : a.entries()) {
      const Value *other = b.find(key);
      if (!other || !valuesEqual(value, *other)) return false;
    }
    return true;
  }
  case Value::Kind::Callable:
    return left.callableName() == right.callableName() &&
           valuesEqual(left.callableReceiver(), right.callableReceiver());
  default:
    return left.sharesObjectWith(right);
  }
}

bool valueLess(const Value &left, const Value &right) {
  if (left.isNumber() && right.isNumber()) {
    if (left.isInteger() && right.isInteger()) return left.asInteger() < right.asInteger();
    return left.asDouble() < right.asDouble();
  }
  if (left.isString() && right.isString()) return left.asString() < right.asString();
  bool bothLists = left.kind() == Value::Kind::List && right.kind() == Value::Kind::List;
  bool bothTuples = left.kind() == Value::Kind::Tuple && right.kind() == Value::Kind::Tuple;
  if (bothLists || bothTuples) {
    const ValueList &a = left.items(), &b = right.items();
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      if (!valuesEqual(a[i], b[i])) return valueLess(a[i], b[i]);
    return a.size() < b.size();
  }
  throw RenderError("'<' not supported between instances of '" + typeName(left) + "' and '" +
                    typeName(right) + "'");
}

int64_t lengthOf(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return 0;
  case Value::Kind::String:
    return static_cast<int64_t>(decodeCodePoints(value.asString()).size());
  case Value::Kind::List:
  case Value::Kind::Tuple:
    return static_cast<int64_t>(value.items().size());
  case Value::Kind::Dict:
    return static_cast<int64_t>(value.asDict().size());
  default:
    throw RenderError("object of type '" + typeName(value) + "' has no len()");
  }
}

ValueList iterate(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return {};
  case Value::Kind::List:
  case Value::Kind::Tuple:
  case Value::Kind::Generator:
    return value.items();
  case Value::Kind::Dict: {
    ValueList keys;
    for (const auto &entry : value.asDict().entries()) keys.push_back(Value::string(entry.first));
    return keys;
  }
  case Value::Kind::String: {
    ValueList characters;
    for (char32_t c : decodeCodePoints(value.asString()))
      characters.push_back(Value::string(encodeCodePoints(std::u32string(1, c))));
    return characters;
  }
  default:
    throw RenderError("'" + typeName(value) + "' object is not iterable");
  }
}

bool contains(const Value &container, const Value &item) {
  switch (container.kind()) {
  case Value::Kind::Undefined:
    return false;
  case Value::Kind::String:
    if (!item.isString())
      throw RenderError("'in <string>' requires string as left operand, not " + typeName(item));
    return container.asString().find(item.asString()) != std::string::npos;
  case Value::Kind::List:
  case Value::Kind::Tuple:
  case Value::Kind::Generator:
    return std::any_of(container.items().begin(), container.items().end(),
                       [&](const Value &element) { return valuesEqual(element, item); });
  case Value::Kind::Dict:
    if (item.kind() == Value::Kind::List || item.kind() == Value::Kind::Dict)
      throw RenderError("unhashable type: '" + typeName(item) + "'");
    return item.isString() && container.asDict().find(item.asString()) != nullptr;
  default:
    throw RenderError("argument of type '" + typeName(container) + "' is not iterable");
  }
}

std::string formatFloat(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // The shortest digits that read back as `value`, as Python's repr picks them.
  char buffer[64];
  auto [end, error] =
      std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  std::string scientific(buffer, end);
  size_t exponentAt = scientific.find('e');
  int exponent = std::stoi(scientific.substr(exponentAt + 1));
  std::string mantissa = scientific.substr(0, exponentAt);
  std::string sign;
  if (mantissa[0] == '-') {
    sign = "-";
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char exponentText[16];
    std::snprintf(exponentText, sizeof(exponentText), "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    return out + exponentText;
  }
  if (exponent < 0)
    return sign + "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
  auto integerDigits = static_cast<size_t>(exponent) + 1;
  if (digits.size() <= integerDigits)
    return sign + digits + std::string(integerDigits - digits.size(), '0') + ".0";
  return sign + digits.substr(0, integerDigits) + "." + digits.substr(integerDigits);
}

std::string toJson(const Value &value, const JsonFormat &format) {
  std::string out;
  writeJson(value, format, 0, out);
  return out;
}

Value valueFromJson(const nlohmann::json &json) { return convertJson(json); }
Value valueFromJson(const nlohmann::ordered_json &json) { return convertJson(json); }

} // namespace llmc::runtime::chat
