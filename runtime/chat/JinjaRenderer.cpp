//===- JinjaRenderer.cpp - runs a parsed template -------------------------===//
#include "runtime/chat/JinjaRenderer.h"

#include "runtime/chat/JinjaBuiltins.h"

#include <unordered_map>

namespace llmc::runtime::chat {
namespace {

/// Runs `body`, turning a RenderError into a ChatTemplateError at `location`.
template <typename Body> auto at(SourceLocation location, Body &&body) {
  try {
    return body();
  } catch (const RenderError &error) {
    throw ChatTemplateError(describeLocation(location) + error.what());
  }
}

class Renderer {
public:
  explicit Renderer(const Dict &context) : context(context) { scopes.emplace_back(); }

  void run(const StmtList &body, std::string &out) { execute(body, out); }

private:
  /// How a statement list ended: normally, or at a {% break %} / {% continue %}.
  enum class Flow { Normal, Break, Continue };

  /// A scope for the lifetime of the guard.
  class ScopeGuard {
  public:
    explicit ScopeGuard(Renderer &renderer) : renderer(renderer) { renderer.scopes.emplace_back(); }
    ~ScopeGuard() { renderer.scopes.pop_back(); }
    ScopeGuard(const ScopeGuard &) = delete;
    ScopeGuard &operator=(const ScopeGuard &) = delete;

  private:
    Renderer &renderer;
  };

  Flow execute(const StmtList &body, std::string &out);
  Flow executeFor(const ForStmt &statement, std::string &out);
  void executeSet(const SetStmt &statement);

  Value evaluate(const Expr &expression) {
    return at(expression.location, [&] { return evaluateNode(expression); });
  }
  Value evaluateNode(const Expr &expression);
  Value evaluateCall(const CallExpr &call);
  Value evaluateCompare(const CompareExpr &compare);
  Arguments evaluateArguments(const CallArguments &arguments);

  Value lookup(const std::string &name) const;
  /// Binds `targets` in the innermost scope, unpacking `value` when `unpack`.
  void bindTargets(const std::vector<std::string> &targets, bool unpack, const Value &value);

  const Dict &context;
  /// The template's scope first, the innermost last.
  std::vector<std::unordered_map<std::string, Value>> scopes;
};

Renderer::Flow Renderer::execute(const StmtList &body, std::string &out) {
  for (const StmtPtr &statement : body) {
    switch (statement->kind) {
    case Stmt::Kind::Text:
      out += static_cast<const TextStmt &>(*statement).text;
      break;
    case Stmt::Kind::Output:
      out += toPythonString(evaluate(*static_cast<const OutputStmt &>(*statement).expression));
      break;
    case Stmt::Kind::If: {
      const auto &ifStatement = static_cast<const IfStmt &>(*statement);
      const StmtList *chosen = &ifStatement.otherwise;
      for (const auto &[condition, branch] : ifStatement.branches) {
        if (isTruthy(evaluate(*condition))) {
          chosen = &branch;
          break;
        }
      }
      Flow flow = execute(*chosen, out);
      if (flow != Flow::Normal) return flow;
      break;
    }
    case Stmt::Kind::For: {
      Flow flow = executeFor(static_cast<const ForStmt &>(*statement), out);
      if (flow != Flow::Normal) return flow;
      break;
    }
    case Stmt::Kind::Set:
      executeSet(static_cast<const SetStmt &>(*statement));
      break;
    case Stmt::Kind::Break:
      return Flow::Break;
    case Stmt::Kind::Continue:
      return Flow::Continue;
    case Stmt::Kind::Generation: {
      ScopeGuard scope(*this);
      Flow flow = execute(static_cast<const GenerationStmt &>(*statement).body, out);
      if (flow != Flow::Normal) return flow;
      break;
    }
    }
  }
  return Flow::Normal;
}

Renderer::Flow Renderer::executeFor(const ForStmt &statement, std::string &out) {
  ValueList all =
      at(statement.iterable->location, [&] { return iterate(evaluate(*statement.iterable)); });
  auto items = std::make_shared<ValueList>();
  for (const Value &item : all) {
    if (statement.filter) {
      // The filter sees the loop variables, but not `loop`.
      ScopeGuard scope(*this);
      at(statement.location, [&] { bindTargets(statement.targets, statement.unpack, item); });
      if (!isTruthy(evaluate(*statement.filter))) continue;
    }
    items->push_back(item);
  }
  if (items->empty()) return execute(statement.otherwise, out);
  std::shared_ptr<const ValueList> iterated = items;
  for (size_t i = 0; i < iterated->size(); ++i) {
    ScopeGuard scope(*this);
    at(statement.location,
       [&] { bindTargets(statement.targets, statement.unpack, (*iterated)[i]); });
    scopes.back()["loop"] = Value::loop(LoopInfo{static_cast<int64_t>(i), iterated});
    if (execute(statement.body, out) == Flow::Break) break;
  }
  return Flow::Normal;
}

void Renderer::executeSet(const SetStmt &statement) {
  Value value = evaluate(*statement.value);
  at(statement.location, [&] {
    if (statement.attribute.empty()) {
      bindTargets(statement.targets, statement.unpack, value);
      return;
    }
    Value target = lookup(statement.targets.front());
    if (target.kind() != Value::Kind::Namespace)
      throw RenderError("cannot assign attribute on non-namespace object");
    target.namespaceAttributes().set(statement.attribute, std::move(value));
  });
}

void Renderer::bindTargets(const std::vector<std::string> &targets, bool unpack,
                           const Value &value) {
  if (!unpack) {
    scopes.back()[targets.front()] = value;
    return;
  }
  ValueList parts = iterate(value);
  if (parts.size() > targets.size())
    throw RenderError("too many values to unpack (expected " + std::to_string(targets.size()) +
                      ")");
  if (parts.size() < targets.size())
    throw RenderError("not enough values to unpack (expected " + std::to_string(targets.size()) +
                      ", got " + std::to_string(parts.size()) + ")");
  for (size_t i = 0; i < targets.size(); ++i) scopes.back()[targets[i]] = parts[i];
}

Value Renderer::lookup(const std::string &name) const {
  for (auto scope = scopes.rbegin(); scope != scopes.rend(); ++scope) {
    auto found = scope->find(name);
    if (found != scope->end()) return found->second;
  }
  if (const Value *value = context.find(name)) return *value;
  if (isSupportedGlobal(name)) return Value::callable(name, Value());
  return Value::undefined("'" + name + "' is undefined");
}

Arguments Renderer::evaluateArguments(const CallArguments &arguments) {
  Arguments values;
  for (const ExprPtr &argument : arguments.positional)
    values.positional.push_back(evaluate(*argument));
  for (const auto &[name, argument] : arguments.keyword)
    values.keyword.emplace_back(name, evaluate(*argument));
  return values;
}

Value Renderer::evaluateCompare(const CompareExpr &compare) {
  // Python's chain: a < b < c is a < b and b < c, each operand evaluated once.
  Value left = evaluate(*compare.first);
  for (const auto &[op, operand] : compare.rest) {
    Value right = evaluate(*operand);
    if (!applyComparison(op, left, right)) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Renderer::evaluateNode(const Expr &expression) {
  switch (expression.kind) {
  case Expr::Kind::Literal:
    return static_cast<const LiteralExpr &>(expression).value;
  case Expr::Kind::Name:
    return lookup(static_cast<const NameExpr &>(expression).name);
  case Expr::Kind::List:
  case Expr::Kind::Tuple: {
    ValueList items;
    for (const ExprPtr &item : static_cast<const SequenceExpr &>(expression).items)
      items.push_back(evaluate(*item));
    return expression.kind == Expr::Kind::List ? Value::list(std::move(items))
                                               : Value::tuple(std::move(items));
  }
  case Expr::Kind::Dict: {
    Dict dict;
    for (const auto &[keyExpression, valueExpression] :
         static_cast<const DictExpr &>(expression).entries) {
      Value key = evaluate(*keyExpression);
      if (!key.isString())
        throw RenderError("dict keys must be strings here, not " + typeName(key));
      dict.set(key.asString(), evaluate(*valueExpression));
    }
    return Value::dict(std::move(dict));
  }
  case Expr::Kind::Attribute: {
    const auto &attribute = static_cast<const AttributeExpr &>(expression);
    return getAttribute(evaluate(*attribute.object), attribute.name);
  }
  case Expr::Kind::Item: {
    const auto &item = static_cast<const ItemExpr &>(expression);
    Value object = evaluate(*item.object);
    return getItem(object, evaluate(*item.index));
  }
  case Expr::Kind::Slice: {
    const auto &slice = static_cast<const SliceExpr &>(expression);
    Value object = evaluate(*slice.object);
    auto part = [&](const ExprPtr &bound) { return bound ? evaluate(*bound) : Value(); };
    Value start = part(slice.start), stop = part(slice.stop), step = part(slice.step);
    return getSlice(object, start, stop, step);
  }
  case Expr::Kind::Call:
    return evaluateCall(static_cast<const CallExpr &>(expression));
  case Expr::Kind::Filter: {
    const auto &filter = static_cast<const FilterExpr &>(expression);
    Value operand = evaluate(*filter.operand);
    return applyFilter(filter.name, operand, evaluateArguments(filter.arguments));
  }
  case Expr::Kind::Test: {
    const auto &test = static_cast<const TestExpr &>(expression);
    Value operand = evaluate(*test.operand);
    bool passed = applyTest(test.name, operand, evaluateArguments(test.arguments));
    return Value::boolean(passed != test.negated);
  }
  case Expr::Kind::Unary: {
    const auto &unary = static_cast<const UnaryExpr &>(expression);
    return applyUnary(unary.op, evaluate(*unary.operand));
  }
  case Expr::Kind::Binary: {
    const auto &binary = static_cast<const BinaryExpr &>(expression);
    Value left = evaluate(*binary.left);
    return applyBinary(binary.op, left, evaluate(*binary.right));
  }
  case Expr::Kind::Logical: {
    const auto &logical = static_cast<const LogicalExpr &>(expression);
    Value left = evaluate(*logical.left);
    if (isTruthy(left) != logical.isAnd) return left;
    return evaluate(*logical.right);
  }
  case Expr::Kind::Concat: {
    std::string text;
    for (const ExprPtr &part : static_cast<const ConcatExpr &>(expression).parts)
      text += toPythonString(evaluate(*part));
    return Value::string(std::move(text));
  }
  case Expr::Kind::Compare:
    return evaluateCompare(static_cast<const CompareExpr &>(expression));
  case Expr::Kind::Conditional: {
    const auto &conditional = static_cast<const ConditionalExpr &>(expression);
    if (isTruthy(evaluate(*conditional.condition))) return evaluate(*conditional.then);
    if (conditional.otherwise) return evaluate(*conditional.otherwise);
    return Value::undefined("the inline if-expression evaluated to false and no else section "
                            "was defined.");
  }
  }
  throw RenderError("unknown expression");
}

Value Renderer::evaluateCall(const CallExpr &call) {
  Value function = evaluate(*call.callee);
  Arguments arguments = evaluateArguments(call.arguments);
  return callFunction(function, arguments);
}
} // namespace

std::string renderTemplate(const TemplateNode &root, const Dict &context) {
  std::string out;
  Renderer(context).run(root.body, out);
  return out;
}

} // namespace llmc::runtime::chat
