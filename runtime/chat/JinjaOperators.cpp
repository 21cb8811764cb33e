//===- JinjaOperators.cpp - operators with Python's semantics -------------===//
#include "runtime/chat/JinjaBuiltins.h"

#include "runtime/chat/ChatTemplate.h"
#include "runtime/chat/JinjaCall.h"
#include "runtime/chat/JinjaString.h"

#include <algorithm>
#include <cmath>

namespace llmc::runtime::chat {
namespace {

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

void failUndefined(const Value &undefined) {
  const std::string &hint = undefined.undefinedHint();
  throw RenderError(hint.empty() ? "undefined value" : hint);
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
