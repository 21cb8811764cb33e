//===- JinjaParser.cpp - tokens to the template's syntax tree -------------===//
#include "runtime/chat/JinjaParser.h"

#include "runtime/chat/JinjaBuiltins.h"

#include <algorithm>
#include <initializer_list>

namespace llmc::runtime::chat {
namespace {

using Names = std::initializer_list<std::string_view>;

/// Tags of jinja2 that this runtime does not run.
constexpr std::string_view kUnsupportedTags[] = {
    "macro",  "call", "filter", "with",  "block",      "extends", "include",
    "import", "from", "raw",    "print", "autoescape", "do",
};

/// How deep expressions and blocks may nest: far beyond real templates, well
/// within the stack of the parser and of the renderer that recurse over them.
constexpr int kMaxNesting = 100;

bool isOneOf(std::string_view name, Names names) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

std::string describeToken(const Token &token) {
  switch (token.kind) {
  case TokenKind::Text:
    return "template data";
  case TokenKind::VariableBegin:
    return "'{{'";
  case TokenKind::VariableEnd:
    return "end of print statement '}}'";
  case TokenKind::BlockBegin:
    return "'{%'";
  case TokenKind::BlockEnd:
    return "end of statement block '%}'";
  case TokenKind::Name:
  case TokenKind::Operator:
    return "'" + token.text + "'";
  case TokenKind::String:
    return "string";
  case TokenKind::Integer:
    return "integer";
  case TokenKind::Float:
    return "float";
  case TokenKind::EndOfTemplate:
    return "end of template";
  }
  return "token";
}

class Parser {
public:
  explicit Parser(std::vector<Token> tokens) : tokens(std::move(tokens)) {}

  std::unique_ptr<TemplateNode> parse() {
    auto root = std::make_unique<TemplateNode>();
    root->body = parseBody({}, nullptr);
    return root;
  }

private:
  /// Counts levels of nesting while alive (one per link of a left-deep chain
  /// such as `a + b + c` or `x|f|g`); too many is an error.
  class NestingGuard {
  public:
    NestingGuard(Parser &parser, int levels) : parser(parser) {
      for (int i = 0; i < levels; ++i) deepen();
    }
    ~NestingGuard() { parser.nesting -= levels; }
    NestingGuard(const NestingGuard &) = delete;
    NestingGuard &operator=(const NestingGuard &) = delete;

    void deepen() {
      ++levels;
      if (++parser.nesting > kMaxNesting)
        parser.fail(parser.current().location, "the template nests too deeply");
    }

  private:
    Parser &parser;
    int levels = 0;
  };

  const Token &current() const { return tokens[position]; }
  const Token &peek() const { return tokens[std::min(position + 1, tokens.size() - 1)]; }
  const Token &advance() {
    const Token &token = tokens[position];
    if (position + 1 < tokens.size()) ++position;
    return token;
  }
  bool isOperator(std::string_view op) const {
    return current().kind == TokenKind::Operator && current().text == op;
  }
  bool isName(std::string_view name) const {
    return current().kind == TokenKind::Name && current().text == name;
  }
  bool skipOperator(std::string_view op) {
    if (!isOperator(op)) return false;
    advance();
    return true;
  }
  bool skipName(std::string_view name) {
    if (!isName(name)) return false;
    advance();
    return true;
  }
  [[noreturn]] void fail(SourceLocation location, const std::string &message) const {
    throw ChatTemplateError(describeLocation(location) + message);
  }
  [[noreturn]] void failExpected(const std::string &what) const {
    fail(current().location, "expected " + what + ", got " + describeToken(current()));
  }
  void expectOperator(std::string_view op) {
    if (!skipOperator(op)) failExpected("'" + std::string(op) + "'");
  }
  void expectBlockEnd() {
    if (current().kind != TokenKind::BlockEnd) failExpected("end of statement block '%}'");
    advance();
  }
  std::string expectName(const char *what) {
    if (current().kind != TokenKind::Name) failExpected(what);
    return advance().text;
  }

  // Statements.
  StmtList parseBody(Names endTags, const Token *opener);
  StmtPtr parseStatement();
  StmtPtr parseIf(SourceLocation location);
  StmtPtr parseFor(SourceLocation location);
  StmtPtr parseSet(SourceLocation location);
  StmtPtr parseGeneration(SourceLocation location);
  /// Assignment targets: `a`, `a, b` or `(a, b)`; sets `unpack` for a tuple.
  std::vector<std::string> parseTargets(bool &unpack);

  // Expressions, from the loosest binding to the tightest.
  ExprPtr parseTuple(bool withCondition, Names extraEnds, bool explicitParentheses);
  ExprPtr parseExpression(bool withCondition = true);
  ExprPtr parseConditional();
  ExprPtr parseOr();
  ExprPtr parseAnd();
  ExprPtr parseNot();
  ExprPtr parseCompare();
  ExprPtr parseAdditive();
  ExprPtr parseConcat();
  ExprPtr parseMultiplicative();
  ExprPtr parsePower();
  ExprPtr parseUnary(bool withFilter);
  ExprPtr parsePrimary();
  ExprPtr parsePostfix(ExprPtr node);
  ExprPtr parseFilterExpr(ExprPtr node);
  ExprPtr parseSubscript(ExprPtr node);
  ExprPtr parseCall(ExprPtr callee);
  CallArguments parseCallArguments();
  ExprPtr parseFilter(ExprPtr operand);
  ExprPtr parseTest(ExprPtr operand);
  ExprPtr parseList();
  ExprPtr parseDict();
  /// Rejects map('x') / select('y') naming a filter or test that is not supported.
  void checkNamedCallback(const FilterExpr &filter) const;

  std::vector<Token> tokens;
  size_t position = 0;
  /// The open block tags, innermost last, for error messages.
  std::vector<std::string> openTags;
  int loopDepth = 0;
  int nesting = 0;
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

StmtList Parser::parseBody(Names endTags, const Token *opener) {
  NestingGuard guard(*this, 1);
  StmtList body;
  while (true) {
    const Token &token = current();
    switch (token.kind) {
    case TokenKind::Text:
      body.push_back(std::make_unique<TextStmt>(token.location, token.text));
      advance();
      break;
    case TokenKind::VariableBegin: {
      advance();
      ExprPtr expression = parseTuple(true, {}, false);
      if (current().kind != TokenKind::VariableEnd) failExpected("end of print statement '}}'");
      advance();
      body.push_back(std::make_unique<OutputStmt>(token.location, std::move(expression)));
      break;
    }
    case TokenKind::BlockBegin:
      advance();
      // The end tag is left for the statement that opened the block.
      if (current().kind == TokenKind::Name && isOneOf(current().text, endTags)) return body;
      body.push_back(parseStatement());
      expectBlockEnd();
      break;
    case TokenKind::EndOfTemplate: {
      if (!opener) return body;
      std::string expected;
      for (std::string_view tag : endTags)
        expected += (expected.empty() ? "" : " or ") + ("'{% " + std::string(tag) + " %}'");
      fail(opener->location, "unclosed '{% " + opener->text + " %}': expected " + expected +
                                 " before the end of the template");
    }
    default:
      failExpected("template data or a tag");
    }
  }
}

StmtPtr Parser::parseStatement() {
  if (current().kind != TokenKind::Name) failExpected("a tag name");
  const Token &tag = advance();
  SourceLocation location = tag.location;
  const std::string &name = tag.text;
  if (name == "if") return parseIf(location);
  if (name == "for") return parseFor(location);
  if (name == "set") return parseSet(location);
  if (name == "generation") return parseGeneration(location);
  if (name == "break" || name == "continue") {
    if (loopDepth == 0) fail(location, "'" + name + "' outside a for loop");
    return std::make_unique<Stmt>(name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue,
                                  location);
  }
  if (std::find(std::begin(kUnsupportedTags), std::end(kUnsupportedTags), name) !=
      std::end(kUnsupportedTags))
    fail(location, "the '{% " + name + " %}' tag is not supported");
  if (isOneOf(name, {"elif", "else", "endif", "endfor", "endset", "endgeneration"})) {
    std::string context = openTags.empty()
                              ? "no block is open"
                              : "the innermost open block is '" + openTags.back() + "'";
    fail(location, "unexpected '{% " + name + " %}': " + context);
  }
  fail(location, "unknown tag '" + name + "'");
}

StmtPtr Parser::parseIf(SourceLocation location) {
  const Token &opener = tokens[position - 1];
  auto statement = std::make_unique<IfStmt>(location);
  openTags.push_back("if");
  while (true) {
    ExprPtr condition = parseTuple(false, {}, false);
    expectBlockEnd();
    StmtList body = parseBody({"elif", "else", "endif"}, &opener);
    statement->branches.emplace_back(std::move(condition), std::move(body));
    std::string tag = advance().text;
    if (tag == "elif") continue;
    if (tag == "else") {
      expectBlockEnd();
      statement->otherwise = parseBody({"endif"}, &opener);
      advance();
    }
    break;
  }
  openTags.pop_back();
  return statement;
}

std::vector<std::string> Parser::parseTargets(bool &unpack) {
  std::vector<std::string> names;
  if (skipOperator("(")) {
    unpack = true;
    while (!isOperator(")")) {
      if (!names.empty()) expectOperator(",");
      if (isOperator(")")) break;
      names.push_back(expectName("a variable name"));
    }
    advance();
    return names;
  }
  names.push_back(expectName("a variable name"));
  unpack = false;
  while (skipOperator(",")) {
    unpack = true;
    if (current().kind != TokenKind::Name || isName("in")) break;
    names.push_back(advance().text);
  }
  return names;
}

StmtPtr Parser::parseFor(SourceLocation location) {
  const Token &opener = tokens[position - 1];
  auto statement = std::make_unique<ForStmt>(location);
  statement->targets = parseTargets(statement->unpack);
  if (!skipName("in")) failExpected("'in'");
  statement->iterable = parseTuple(false, {"recursive"}, false);
  if (skipName("if")) statement->filter = parseExpression();
  if (isName("recursive")) fail(current().location, "recursive loops are not supported");
  expectBlockEnd();
  openTags.push_back("for");
  ++loopDepth;
  statement->body = parseBody({"endfor", "else"}, &opener);
  --loopDepth;
  if (advance().text == "else") {
    expectBlockEnd();
    statement->otherwise = parseBody({"endfor"}, &opener);
    advance();
  }
  openTags.pop_back();
  return statement;
}

StmtPtr Parser::parseSet(SourceLocation location) {
  auto statement = std::make_unique<SetStmt>(location);
  if (current().kind == TokenKind::Name && peek().kind == TokenKind::Operator &&
      peek().text == ".") {
    statement->targets.push_back(advance().text);
    advance();
    statement->attribute = expectName("an attribute name");
  } else {
    statement->targets = parseTargets(statement->unpack);
  }
  if (!skipOperator("=")) {
    if (current().kind == TokenKind::BlockEnd || isOperator("|"))
      fail(location, "block assignments ('{% set x %}...{% endset %}') are not supported");
    failExpected("'='");
  }
  statement->value = parseTuple(true, {}, false);
  return statement;
}

StmtPtr Parser::parseGeneration(SourceLocation location) {
  const Token &opener = tokens[position - 1];
  auto statement = std::make_unique<GenerationStmt>(location);
  expectBlockEnd();
  openTags.push_back("generation");
  statement->body = parseBody({"endgeneration"}, &opener);
  advance();
  openTags.pop_back();
  return statement;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

ExprPtr Parser::parseTuple(bool withCondition, Names extraEnds, bool explicitParentheses) {
  SourceLocation location = current().location;
  std::vector<ExprPtr> items;
  bool isTuple = false;
  auto atEnd = [&] {
    TokenKind kind = current().kind;
    return kind == TokenKind::VariableEnd || kind == TokenKind::BlockEnd || isOperator(")") ||
           (kind == TokenKind::Name && isOneOf(current().text, extraEnds));
  };
  while (true) {
    if (!items.empty()) expectOperator(",");
    if (atEnd()) break;
    items.push_back(parseExpression(withCondition));
    if (!isOperator(",")) break;
    isTuple = true;
  }
  if (!isTuple) {
    if (!items.empty()) return std::move(items.front());
    if (!explicitParentheses) failExpected("an expression");
  }
  auto tuple = std::make_unique<SequenceExpr>(Expr::Kind::Tuple, location);
  tuple->items = std::move(items);
  return tuple;
}

ExprPtr Parser::parseExpression(bool withCondition) {
  NestingGuard guard(*this, 1);
  return withCondition ? parseConditional() : parseOr();
}

ExprPtr Parser::parseConditional() {
  ExprPtr expression = parseOr();
  NestingGuard chain(*this, 0);
  while (isName("if")) {
    chain.deepen();
    SourceLocation location = advance().location;
    ExprPtr condition = parseOr();
    ExprPtr otherwise = skipName("else") ? parseConditional() : nullptr;
    expression = std::make_unique<ConditionalExpr>(location, std::move(condition),
                                                   std::move(expression), std::move(otherwise));
  }
  return expression;
}

ExprPtr Parser::parseOr() {
  ExprPtr left = parseAnd();
  NestingGuard chain(*this, 0);
  while (isName("or")) {
    chain.deepen();
    SourceLocation location = advance().location;
    left = std::make_unique<LogicalExpr>(location, false, std::move(left), parseAnd());
  }
  return left;
}

ExprPtr Parser::parseAnd() {
  ExprPtr left = parseNot();
  NestingGuard chain(*this, 0);
  while (isName("and")) {
    chain.deepen();
    SourceLocation location = advance().location;
    left = std::make_unique<LogicalExpr>(location, true, std::move(left), parseNot());
  }
  return left;
}

ExprPtr Parser::parseNot() {
  if (!isName("not")) return parseCompare();
  NestingGuard guard(*this, 1);
  SourceLocation location = advance().location;
  return std::make_unique<UnaryExpr>(location, UnaryExpr::Op::Not, parseNot());
}

ExprPtr Parser::parseCompare() {
  SourceLocation location = current().location;
  ExprPtr first = parseAdditive();
  std::unique_ptr<CompareExpr> compare;
  while (true) {
    CompareExpr::Op op;
    if (isOperator("==")) {
      op = CompareExpr::Op::Equal;
    } else if (isOperator("!=")) {
      op = CompareExpr::Op::NotEqual;
    } else if (isOperator("<")) {
      op = CompareExpr::Op::Less;
    } else if (isOperator("<=")) {
      op = CompareExpr::Op::LessEqual;
    } else if (isOperator(">")) {
      op = CompareExpr::Op::Greater;
    } else if (isOperator(">=")) {
      op = CompareExpr::Op::GreaterEqual;
    } else if (isName("in")) {
      op = CompareExpr::Op::In;
    } else if (isName("not") && peek().kind == TokenKind::Name && peek().text == "in") {
      advance();
      op = CompareExpr::Op::NotIn;
    } else {
      break;
    }
    advance();
    if (!compare) compare = std::make_unique<CompareExpr>(location, std::move(first));
    compare->rest.emplace_back(op, parseAdditive());
  }
  if (compare) return compare;
  return first;
}

ExprPtr Parser::parseAdditive() {
  ExprPtr left = parseConcat();
  NestingGuard chain(*this, 0);
  while (isOperator("+") || isOperator("-")) {
    chain.deepen();
    const Token &token = advance();
    auto op = token.text == "+" ? BinaryExpr::Op::Add : BinaryExpr::Op::Subtract;
    left = std::make_unique<BinaryExpr>(token.location, op, std::move(left), parseConcat());
  }
  return left;
}

ExprPtr Parser::parseConcat() {
  SourceLocation location = current().location;
  ExprPtr first = parseMultiplicative();
  if (!isOperator("~")) return first;
  auto concat = std::make_unique<ConcatExpr>(location);
  concat->parts.push_back(std::move(first));
  while (skipOperator("~")) concat->parts.push_back(parseMultiplicative());
  return concat;
}

ExprPtr Parser::parseMultiplicative() {
  ExprPtr left = parsePower();
  NestingGuard chain(*this, 0);
  while (isOperator("*") || isOperator("/") || isOperator("//") || isOperator("%")) {
    chain.deepen();
    const Token &token = advance();
    BinaryExpr::Op op = token.text == "*"    ? BinaryExpr::Op::Multiply
                        : token.text == "/"  ? BinaryExpr::Op::Divide
                        : token.text == "//" ? BinaryExpr::Op::FloorDivide
                                             : BinaryExpr::Op::Modulo;
    if (op == BinaryExpr::Op::Modulo && left->kind == Expr::Kind::Literal &&
        static_cast<const LiteralExpr &>(*left).value.isString())
      fail(token.location, "printf-style formatting with % is not supported");
    left = std::make_unique<BinaryExpr>(token.location, op, std::move(left), parsePower());
  }
  return left;
}

ExprPtr Parser::parsePower() {
  ExprPtr left = parseUnary(true);
  NestingGuard chain(*this, 0);
  while (isOperator("**")) {
    chain.deepen();
    SourceLocation location = advance().location;
    left = std::make_unique<BinaryExpr>(location, BinaryExpr::Op::Power, std::move(left),
                                        parseUnary(true));
  }
  return left;
}

ExprPtr Parser::parseUnary(bool withFilter) {
  ExprPtr node;
  if (isOperator("-") || isOperator("+")) {
    NestingGuard guard(*this, 1);
    const Token &token = advance();
    auto op = token.text == "-" ? UnaryExpr::Op::Negate : UnaryExpr::Op::Plus;
    node = std::make_unique<UnaryExpr>(token.location, op, parseUnary(false));
  } else {
    node = parsePrimary();
  }
  node = parsePostfix(std::move(node));
  return withFilter ? parseFilterExpr(std::move(node)) : std::move(node);
}

ExprPtr Parser::parsePrimary() {
  const Token &token = current();
  SourceLocation location = token.location;
  switch (token.kind) {
  case TokenKind::Name: {
    advance();
    if (token.text == "true" || token.text == "True")
      return std::make_unique<LiteralExpr>(location, Value::boolean(true));
    if (token.text == "false" || token.text == "False")
      return std::make_unique<LiteralExpr>(location, Value::boolean(false));
    if (token.text == "none" || token.text == "None")
      return std::make_unique<LiteralExpr>(location, Value::none());
    return std::make_unique<NameExpr>(location, token.text);
  }
  case TokenKind::String: {
    // Adjacent literals concatenate, as in Python.
    std::string text;
    while (current().kind == TokenKind::String) text += advance().text;
    return std::make_unique<LiteralExpr>(location, Value::string(std::move(text)));
  }
  case TokenKind::Integer:
    advance();
    return std::make_unique<LiteralExpr>(location, Value::integer(token.integer));
  case TokenKind::Float:
    advance();
    return std::make_unique<LiteralExpr>(location, Value::number(token.number));
  case TokenKind::Operator:
    if (token.text == "(") {
      advance();
      ExprPtr inner = parseTuple(true, {}, true);
      expectOperator(")");
      return inner;
    }
    if (token.text == "[") return parseList();
    if (token.text == "{") return parseDict();
    break;
  default:
    break;
  }
  fail(location, "unexpected " + describeToken(token));
}

ExprPtr Parser::parsePostfix(ExprPtr node) {
  NestingGuard chain(*this, 0);
  while (isOperator(".") || isOperator("[") || isOperator("(")) {
    chain.deepen();
    node = isOperator("(") ? parseCall(std::move(node)) : parseSubscript(std::move(node));
  }
  return node;
}

ExprPtr Parser::parseFilterExpr(ExprPtr node) {
  NestingGuard chain(*this, 0);
  while (isOperator("|") || isName("is") || isOperator("(")) {
    chain.deepen();
    if (isOperator("|"))
      node = parseFilter(std::move(node));
    else if (isName("is"))
      node = parseTest(std::move(node));
    else
      node = parseCall(std::move(node));
  }
  return node;
}

ExprPtr Parser::parseSubscript(ExprPtr node) {
  const Token &opener = advance();
  SourceLocation location = opener.location;
  if (opener.text == ".") {
    const Token &attribute = advance();
    if (attribute.kind == TokenKind::Name)
      return std::make_unique<AttributeExpr>(location, std::move(node), attribute.text);
    if (attribute.kind == TokenKind::Integer)
      return std::make_unique<ItemExpr>(
          location, std::move(node),
          std::make_unique<LiteralExpr>(attribute.location, Value::integer(attribute.integer)));
    fail(attribute.location, "expected a name or a number after '.'");
  }
  // [index] or [start:stop:step]
  ExprPtr index;
  if (!isOperator(":")) index = parseExpression();
  if (isOperator(","))
    fail(current().location, "subscripts with several indices are not supported");
  if (!skipOperator(":")) {
    if (!index) failExpected("an index");
    expectOperator("]");
    return std::make_unique<ItemExpr>(location, std::move(node), std::move(index));
  }
  auto slice = std::make_unique<SliceExpr>(location, std::move(node));
  slice->start = std::move(index);
  if (!isOperator(":") && !isOperator("]")) slice->stop = parseExpression();
  if (skipOperator(":") && !isOperator("]")) slice->step = parseExpression();
  expectOperator("]");
  return slice;
}

ExprPtr Parser::parseCall(ExprPtr callee) {
  SourceLocation location = current().location;
  if (callee->kind == Expr::Kind::Name) {
    const std::string &name = static_cast<const NameExpr &>(*callee).name;
    if (!isSupportedGlobal(name))
      fail(callee->location, "unknown function '" + name +
                                 "' (supported: range, namespace, "
                                 "raise_exception, strftime_now)");
  } else if (callee->kind == Expr::Kind::Attribute) {
    const auto &attribute = static_cast<const AttributeExpr &>(*callee);
    if (!isSupportedMethod(attribute.name))
      fail(attribute.location, "the method '" + attribute.name + "' is not supported");
  } else {
    fail(location, "only functions and methods can be called");
  }
  auto call = std::make_unique<CallExpr>(location, std::move(callee));
  call->arguments = parseCallArguments();
  return call;
}

CallArguments Parser::parseCallArguments() {
  CallArguments arguments;
  expectOperator("(");
  while (!isOperator(")")) {
    if (!arguments.positional.empty() || !arguments.keyword.empty()) {
      expectOperator(",");
      if (isOperator(")")) break;
    }
    if (isOperator("*") || isOperator("**"))
      fail(current().location, "*args and **kwargs in calls are not supported");
    if (current().kind == TokenKind::Name && peek().kind == TokenKind::Operator &&
        peek().text == "=") {
      std::string name = advance().text;
      advance();
      arguments.keyword.emplace_back(name, parseExpression());
    } else {
      if (!arguments.keyword.empty())
        fail(current().location, "a positional argument follows a keyword argument");
      arguments.positional.push_back(parseExpression());
    }
  }
  advance();
  return arguments;
}

ExprPtr Parser::parseFilter(ExprPtr operand) {
  NestingGuard chain(*this, 0);
  while (skipOperator("|")) {
    chain.deepen();
    SourceLocation location = current().location;
    std::string name = expectName("a filter name");
    while (skipOperator(".")) name += "." + expectName("a filter name");
    if (!isSupportedFilter(name)) fail(location, "the filter '" + name + "' is not supported");
    auto filter = std::make_unique<FilterExpr>(location, std::move(operand), name);
    if (isOperator("(")) filter->arguments = parseCallArguments();
    checkNamedCallback(*filter);
    operand = std::move(filter);
  }
  return operand;
}

void Parser::checkNamedCallback(const FilterExpr &filter) const {
  size_t nameAt = filter.name == "selectattr" || filter.name == "rejectattr" ? 1 : 0;
  bool namesFilter = filter.name == "map";
  bool namesTest = filter.name == "select" || filter.name == "reject" || nameAt == 1;
  if ((!namesFilter && !namesTest) || filter.arguments.positional.size() <= nameAt) return;
  const Expr &argument = *filter.arguments.positional[nameAt];
  if (argument.kind != Expr::Kind::Literal) return;
  const Value &value = static_cast<const LiteralExpr &>(argument).value;
  if (!value.isString()) return;
  if (namesFilter && !isSupportedFilter(value.asString()))
    fail(argument.location, "the filter '" + value.asString() + "' is not supported");
  if (namesTest && !isSupportedTest(value.asString()))
    fail(argument.location, "the test '" + value.asString() + "' is not supported");
}

ExprPtr Parser::parseTest(ExprPtr operand) {
  SourceLocation location = advance().location;
  bool negated = skipName("not");
  SourceLocation nameLocation = current().location;
  std::string name = expectName("a test name");
  while (skipOperator(".")) name += "." + expectName("a test name");
  if (!isSupportedTest(name)) fail(nameLocation, "the test '" + name + "' is not supported");
  auto test = std::make_unique<TestExpr>(location, std::move(operand), name, negated);
  if (isOperator("(")) {
    test->arguments = parseCallArguments();
    return test;
  }
  // One argument may follow without parentheses: `x is divisibleby 3`.
  TokenKind kind = current().kind;
  bool startsArgument =
      kind == TokenKind::String || kind == TokenKind::Integer || kind == TokenKind::Float ||
      isOperator("[") || isOperator("{") ||
      (kind == TokenKind::Name && !isOneOf(current().text, {"else", "or", "and"}));
  if (startsArgument) {
    if (isName("is")) fail(current().location, "tests cannot be chained with 'is'");
    test->arguments.positional.push_back(parsePostfix(parsePrimary()));
  }
  return test;
}

ExprPtr Parser::parseList() {
  auto list = std::make_unique<SequenceExpr>(Expr::Kind::List, advance().location);
  while (!isOperator("]")) {
    if (!list->items.empty()) {
      expectOperator(",");
      if (isOperator("]")) break;
    }
    list->items.push_back(parseExpression());
  }
  advance();
  return list;
}

ExprPtr Parser::parseDict() {
  auto dict = std::make_unique<DictExpr>(advance().location);
  while (!isOperator("}")) {
    if (!dict->entries.empty()) {
      expectOperator(",");
      if (isOperator("}")) break;
    }
    ExprPtr key = parseExpression();
    expectOperator(":");
    dict->entries.emplace_back(std::move(key), parseExpression());
  }
  advance();
  return dict;
}
} // namespace

std::unique_ptr<TemplateNode> parseTemplate(std::string_view source) {
  return Parser(tokenizeTemplate(source)).parse();
}

} // namespace llmc::runtime::chat
