//===- JinjaTests.cpp - the tests of chat templates (`is ...`) ------------===//
#include "runtime/chat/JinjaBuiltins.h"

#include "runtime/chat/ChatTemplate.h"
#include "runtime/chat/JinjaCall.h"
#include "runtime/chat/JinjaString.h"

#include <functional>
#include <unordered_map>

namespace llmc::runtime::chat {
namespace {

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

} // namespace

bool isSupportedTest(std::string_view name) { return tests().count(name) != 0; }

bool applyTest(const std::string &name, const Value &operand, const Arguments &arguments) {
  auto test = tests().find(name);
  if (test == tests().end()) throw RenderError("no test named '" + name + "'");
  return test->second(operand, arguments);
}

} // namespace llmc::runtime::chat
