//===- JinjaAst.h - the parsed form of a chat template ----------*- C++ -*-===//
//
// Expressions and statements as the parser builds them and the renderer
// walks them. Each node records where it starts, for error messages.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CHAT_JINJAAST_H
#define LLMC_RUNTIME_CHAT_JINJAAST_H

#include "runtime/chat/ChatTemplate.h"
#include "runtime/chat/JinjaLexer.h"
#include "runtime/chat/JinjaValue.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace llmc::runtime::chat {

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

struct Expr {
  enum class Kind {
    Literal,
    Name,
    List,
    Tuple,
    Dict,
    Attribute,
    Item,
    Slice,
    Call,
    Filter,
    Test,
    Unary,
    Binary,
    Logical,
    Concat,
    Compare,
    Conditional,
  };
  Expr(Kind kind, SourceLocation location) : kind(kind), location(location) {}
  virtual ~Expr() = default;

  Kind kind;
  SourceLocation location;
};
using ExprPtr = std::unique_ptr<Expr>;

struct LiteralExpr : Expr {
  LiteralExpr(SourceLocation location, Value value)
      : Expr(Kind::Literal, location), value(std::move(value)) {}
  Value value;
};

struct NameExpr : Expr {
  NameExpr(SourceLocation location, std::string name)
      : Expr(Kind::Name, location), name(std::move(name)) {}
  std::string name;
};

/// A list or tuple display.
struct SequenceExpr : Expr {
  SequenceExpr(Kind kind, SourceLocation location) : Expr(kind, location) {}
  std::vector<ExprPtr> items;
};

struct DictExpr : Expr {
  explicit DictExpr(SourceLocation location) : Expr(Kind::Dict, location) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> entries;
};

/// `object.name`
struct AttributeExpr : Expr {
  AttributeExpr(SourceLocation location, ExprPtr object, std::string name)
      : Expr(Kind::Attribute, location), object(std::move(object)), name(std::move(name)) {}
  ExprPtr object;
  std::string name;
};

/// `object[index]`
struct ItemExpr : Expr {
  ItemExpr(SourceLocation location, ExprPtr object, ExprPtr index)
      : Expr(Kind::Item, location), object(std::move(object)), index(std::move(index)) {}
  ExprPtr object;
  ExprPtr index;
};

/// `object[start:stop:step]`; absent parts are null.
struct SliceExpr : Expr {
  SliceExpr(SourceLocation location, ExprPtr object)
      : Expr(Kind::Slice, location), object(std::move(object)) {}
  ExprPtr object;
  ExprPtr start, stop, step;
};

struct CallArguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

struct CallExpr : Expr {
  CallExpr(SourceLocation location, ExprPtr callee)
      : Expr(Kind::Call, location), callee(std::move(callee)) {}
  ExprPtr callee;
  CallArguments arguments;
};

/// `operand | name(arguments)`
struct FilterExpr : Expr {
  FilterExpr(SourceLocation location, ExprPtr operand, std::string name)
      : Expr(Kind::Filter, location), operand(std::move(operand)), name(std::move(name)) {}
  ExprPtr operand;
  std::string name;
  CallArguments arguments;
};

/// `operand is [not] name(arguments)`
struct TestExpr : Expr {
  TestExpr(SourceLocation location, ExprPtr operand, std::string name, bool negated)
      : Expr(Kind::Test, location), operand(std::move(operand)), name(std::move(name)),
        negated(negated) {}
  ExprPtr operand;
  std::string name;
  CallArguments arguments;
  bool negated;
};

struct UnaryExpr : Expr {
  enum class Op { Negate, Plus, Not };
  UnaryExpr(SourceLocation location, Op op, ExprPtr operand)
      : Expr(Kind::Unary, location), op(op), operand(std::move(operand)) {}
  Op op;
  ExprPtr operand;
};

struct BinaryExpr : Expr {
  enum class Op { Add, Subtract, Multiply, Divide, FloorDivide, Modulo, Power };
  BinaryExpr(SourceLocation location, Op op, ExprPtr left, ExprPtr right)
      : Expr(Kind::Binary, location), op(op), left(std::move(left)), right(std::move(right)) {}
  Op op;
  ExprPtr left, right;
};

/// `left and right`, `left or right`: Python's short-circuit, giving an operand.
struct LogicalExpr : Expr {
  LogicalExpr(SourceLocation location, bool isAnd, ExprPtr left, ExprPtr right)
      : Expr(Kind::Logical, location), isAnd(isAnd), left(std::move(left)),
        right(std::move(right)) {}
  bool isAnd;
  ExprPtr left, right;
};

/// `a ~ b ~ c`: the str() of each, joined.
struct ConcatExpr : Expr {
  explicit ConcatExpr(SourceLocation location) : Expr(Kind::Concat, location) {}
  std::vector<ExprPtr> parts;
};

/// A chain `a < b == c`, as Python evaluates it.
struct CompareExpr : Expr {
  enum class Op { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual, In, NotIn };
  CompareExpr(SourceLocation location, ExprPtr first)
      : Expr(Kind::Compare, location), first(std::move(first)) {}
  ExprPtr first;
  std::vector<std::pair<Op, ExprPtr>> rest;
};

/// `then if condition else otherwise`; without `else` it is undefined when false.
struct ConditionalExpr : Expr {
  ConditionalExpr(SourceLocation location, ExprPtr condition, ExprPtr then, ExprPtr otherwise)
      : Expr(Kind::Conditional, location), condition(std::move(condition)), then(std::move(then)),
        otherwise(std::move(otherwise)) {}
  ExprPtr condition, then, otherwise;
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

struct Stmt {
  enum class Kind { Text, Output, If, For, Set, Break, Continue, Generation };
  Stmt(Kind kind, SourceLocation location) : kind(kind), location(location) {}
  virtual ~Stmt() = default;

  Kind kind;
  SourceLocation location;
};
using StmtPtr = std::unique_ptr<Stmt>;
using StmtList = std::vector<StmtPtr>;

struct TextStmt : Stmt {
  TextStmt(SourceLocation location, std::string text)
      : Stmt(Kind::Text, location), text(std::move(text)) {}
  std::string text;
};

/// `{{ expression }}`
struct OutputStmt : Stmt {
  OutputStmt(SourceLocation location, ExprPtr expression)
      : Stmt(Kind::Output, location), expression(std::move(expression)) {}
  ExprPtr expression;
};

struct IfStmt : Stmt {
  explicit IfStmt(SourceLocation location) : Stmt(Kind::If, location) {}
  /// The `if` and each `elif`, in order.
  std::vector<std::pair<ExprPtr, StmtList>> branches;
  StmtList otherwise;
};

struct ForStmt : Stmt {
  explicit ForStmt(SourceLocation location) : Stmt(Kind::For, location) {}
  /// One name, or several to unpack each item into.
  std::vector<std::string> targets;
  bool unpack = false;
  ExprPtr iterable;
  /// The `if` after the iterable (null when absent).
  ExprPtr filter;
  StmtList body;
  /// Runs when no item was iterated.
  StmtList otherwise;
};

/// `set a = ...`, `set a, b = ...` or `set ns.attribute = ...`.
struct SetStmt : Stmt {
  explicit SetStmt(SourceLocation location) : Stmt(Kind::Set, location) {}
  std::vector<std::string> targets;
  bool unpack = false;
  /// For `ns.attribute`: targets holds `ns`, this the attribute.
  std::string attribute;
  ExprPtr value;
};

/// transformers' `{% generation %}` block: renders its body in its own scope.
struct GenerationStmt : Stmt {
  explicit GenerationStmt(SourceLocation location) : Stmt(Kind::Generation, location) {}
  StmtList body;
};

/// The parsed template: ChatTemplate holds it.
struct TemplateNode {
  StmtList body;
};

} // namespace llmc::runtime::chat

#endif // LLMC_RUNTIME_CHAT_JINJAAST_H
