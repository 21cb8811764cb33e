//===- JinjaValue.h - the values a chat template computes with --*- C++ -*-===//
//
// A template sees Python objects: the request's JSON as dicts, lists, strs,
// ints, floats, bools and None, plus jinja2's Undefined, namespace() objects,
// the `loop` variable and callables. Value holds one of them, with Python's
// semantics for truth, str(), repr(), ==, <, len() and iteration. Lists and
// dicts are immutable and shared (the sandbox forbids mutating them), so a
// Value is cheap to copy; only a namespace is mutable, through `set ns.x`.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CHAT_JINJAVALUE_H
#define LLMC_RUNTIME_CHAT_JINJAVALUE_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace llmc::runtime::chat {

/// A failure while rendering (what Python raises as TypeError, jinja2 as
/// UndefinedError, ...). The renderer prefixes where in the template it
/// happened and rethrows it as ChatTemplateError.
class RenderError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

class Value;
using ValueList = std::vector<Value>;

class Dict;
struct LoopInfo;

class Value {
public:
  enum class Kind {
    Undefined,
    None,
    Bool,
    Int,
    Float,
    String,
    List,
    Tuple,
    /// A one-pass iterable such as select() returns: no len(), no indexing,
    /// always true.
    Generator,
    Dict,
    Namespace,
    Loop,
    /// A global function or a bound method.
    Callable,
  };

  /// Undefined; `hint` is what an operation on it reports ("'x' is undefined").
  Value() = default;
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool value);
  static Value integer(int64_t value);
  static Value number(double value);
  static Value string(std::string text);
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value generator(ValueList items);
  static Value dict(Dict dict);
  static Value newNamespace(Dict attributes);
  static Value loop(LoopInfo info);
  /// A global function (`receiver` undefined) or the method `name` of `receiver`.
  static Value callable(std::string name, Value receiver);

  Kind kind() const { return valueKind; }
  bool isUndefined() const { return valueKind == Kind::Undefined; }
  bool isNone() const { return valueKind == Kind::None; }
  bool isString() const { return valueKind == Kind::String; }
  /// A list, tuple or generator: items() holds its elements.
  bool hasItems() const;
  /// An int or a bool, which Python treats as an int.
  bool isInteger() const { return valueKind == Kind::Int || valueKind == Kind::Bool; }
  bool isNumber() const { return isInteger() || valueKind == Kind::Float; }

  bool asBool() const { return scalar.boolean; }
  /// An int's value, or a bool's 0 or 1.
  int64_t asInteger() const;
  /// Any number as a double.
  double asDouble() const;
  const std::string &asString() const;
  const ValueList &items() const;
  const Dict &asDict() const;
  /// A namespace's attributes, which `set ns.x = ...` changes in place.
  Dict &namespaceAttributes() const;
  const LoopInfo &loopInfo() const;
  const std::string &callableName() const;
  const Value &callableReceiver() const;
  const std::string &undefinedHint() const;
  /// Whether both are the same heap object (Python's `is` for containers).
  bool sharesObjectWith(const Value &other) const;

private:
  struct Object;
  struct StringObject;
  struct ListObject;
  struct DictObject;
  struct LoopObject;
  struct CallableObject;

  Value(Kind kind, std::shared_ptr<const Object> object)
      : valueKind(kind), object(std::move(object)) {}

  Kind valueKind = Kind::Undefined;
  union {
    bool boolean;
    int64_t integer;
    double number;
  } scalar{};
  std::shared_ptr<const Object> object;
};

/// A Python dict with str keys (all JSON has), in insertion order.
class Dict {
public:
  const Value *find(std::string_view key) const;
  /// Replaces the value of `key`, or appends it.
  void set(const std::string &key, Value value);
  const std::vector<std::pair<std::string, Value>> &entries() const { return items; }
  size_t size() const { return items.size(); }

private:
  std::vector<std::pair<std::string, Value>> items;
};

/// The state behind a for loop's `loop` variable.
struct LoopInfo {
  int64_t index0 = 0;
  /// The items iterated (after the loop's `if` filter), for length, previtem
  /// and nextitem.
  std::shared_ptr<const ValueList> items;
};

/// Python's bool(value).
bool isTruthy(const Value &value);
/// Python's str(value); Undefined is "".
std::string toPythonString(const Value &value);
/// Python's repr(value).
std::string toPythonRepr(const Value &value);
/// The Python type name, for error messages ("str", "dict", ...).
std::string typeName(const Value &value);
/// Python's ==.
bool valuesEqual(const Value &left, const Value &right);
/// Python's <; throws RenderError for types that do not order.
bool valueLess(const Value &left, const Value &right);
/// len(value); throws RenderError for what has no length.
int64_t lengthOf(const Value &value);
/// The items `for x in value` visits: a list's items, a dict's keys, a str's
/// characters, nothing for Undefined; throws RenderError for the rest.
ValueList iterate(const Value &value);
/// Python's `item in container`.
bool contains(const Value &container, const Value &item);
/// repr() of a float as Python writes it ("1.0", "1e+20", "0.1").
std::string formatFloat(double value);

/// How transformers' tojson filter calls json.dumps.
struct JsonFormat {
  std::optional<std::string> indent;
  std::string itemSeparator = ", ";
  std::string keySeparator = ": ";
  bool sortKeys = false;
};
/// json.dumps(value, ensure_ascii=False, ...); throws RenderError for what
/// JSON cannot hold (Undefined, a namespace, ...).
std::string toJson(const Value &value, const JsonFormat &format);

Value valueFromJson(const nlohmann::json &json);
Value valueFromJson(const nlohmann::ordered_json &json);

} // namespace llmc::runtime::chat

#endif // LLMC_RUNTIME_CHAT_JINJAVALUE_H
