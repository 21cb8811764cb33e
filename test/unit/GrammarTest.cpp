//===- GrammarTest.cpp - structured outputs: grammars and matchers --------===//
#include "ByteVocabulary.h"

#include "runtime/structured/Grammar.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

using namespace llmc::runtime;
using namespace llmc::runtime::structured;
using nlohmann::json;

namespace {

constexpr int32_t kEos = llmc::test::kByteEos;
/// Past the tokenizer's ids: a model vocabulary padded beyond it.
constexpr int64_t kVocabSize = 260;

GrammarCompiler makeCompiler(std::vector<int32_t> stopTokenIds = {kEos}) {
  const auto &vocabulary = llmc::test::ByteVocabulary::get();
  return GrammarCompiler(*vocabulary.tokenizer, vocabulary.json, kVocabSize,
                         std::move(stopTokenIds));
}

/// The tokens the matcher's mask allows now.
std::vector<int32_t> allowed(GrammarMatcher &matcher) {
  matcher.computeMask();
  std::vector<float> logits(kVocabSize, 0.0f);
  matcher.applyMask(logits.data(), kVocabSize);
  std::vector<int32_t> tokens;
  for (int32_t id = 0; id < kVocabSize; ++id)
    if (!std::isinf(logits[id])) tokens.push_back(id);
  return tokens;
}

void acceptText(GrammarMatcher &matcher, const std::string &text) {
  for (unsigned char byte : text) ASSERT_TRUE(matcher.accept(byte)) << "at '" << byte << "'";
}

} // namespace

TEST(Grammar, ChoiceAllowsExactlyTheChoicesThenTheStopToken) {
  GrammarCompiler compiler = makeCompiler();
  GrammarMatcher matcher(compiler.compile({GrammarSpec::Kind::Choice, {}, {"yes", "no"}, "c"}));
  EXPECT_EQ(allowed(matcher), (std::vector<int32_t>{'n', 'y'}));
  EXPECT_FALSE(matcher.accept('x'));
  acceptText(matcher, "ye");
  EXPECT_EQ(allowed(matcher), (std::vector<int32_t>{'s'}));
  acceptText(matcher, "s");
  EXPECT_EQ(allowed(matcher), (std::vector<int32_t>{kEos}));
  EXPECT_FALSE(matcher.terminated());
  EXPECT_TRUE(matcher.accept(kEos));
  EXPECT_TRUE(matcher.terminated());
}

TEST(Grammar, WithoutStopTokensACompleteOutputTerminates) {
  GrammarCompiler compiler = makeCompiler({});
  GrammarMatcher matcher(compiler.compile({GrammarSpec::Kind::Choice, {}, {"ok"}, "c"}));
  acceptText(matcher, "o");
  EXPECT_FALSE(matcher.terminated());
  acceptText(matcher, "k");
  EXPECT_TRUE(matcher.terminated());
}

TEST(Grammar, JsonSchemaStartsWithTheObjectAndFollowsItsProperties) {
  GrammarCompiler compiler = makeCompiler();
  json schema = {{"type", "object"},
                 {"properties", {{"n", {{"type", "integer"}}}}},
                 {"required", {"n"}},
                 {"additionalProperties", false}};
  GrammarMatcher matcher(compiler.compile({GrammarSpec::Kind::JsonSchema, schema.dump(), {}, "s"}));
  EXPECT_EQ(allowed(matcher), (std::vector<int32_t>{'{'}));
  acceptText(matcher, "{\"n\": ");
  std::vector<int32_t> next = allowed(matcher);
  EXPECT_TRUE(std::count(next.begin(), next.end(), '7'));
  EXPECT_TRUE(std::count(next.begin(), next.end(), '-'));
  EXPECT_FALSE(std::count(next.begin(), next.end(), '"'));
  EXPECT_FALSE(std::count(next.begin(), next.end(), kEos));
  acceptText(matcher, "42}");
  EXPECT_EQ(allowed(matcher), (std::vector<int32_t>{kEos}));
}

TEST(Grammar, JsonStringsNeverHoldRawControlCharacters) {
  GrammarCompiler compiler = makeCompiler();
  // Bounded and unbounded strings alike (xgrammar 0.2.8's bounded ones did,
  // until scripts/setup.sh fixed its character class).
  for (const char *bound : {"", R"(, "maxLength": 8)"}) {
    std::string schema = std::string(R"({"type": "string")") + bound + "}";
    GrammarMatcher matcher(compiler.compile({GrammarSpec::Kind::JsonSchema, schema, {}, "s"}));
    acceptText(matcher, "\"a");
    std::vector<int32_t> next = allowed(matcher);
    for (int32_t control = 0; control < 0x20; ++control)
      EXPECT_FALSE(std::count(next.begin(), next.end(), control)) << bound << " " << control;
    EXPECT_TRUE(std::count(next.begin(), next.end(), 'b'));
  }
}

TEST(Grammar, RegexAndEbnf) {
  GrammarCompiler compiler = makeCompiler();
  GrammarMatcher digits(compiler.compile({GrammarSpec::Kind::Regex, "[0-9]{2}", {}, "r"}));
  std::vector<int32_t> first = allowed(digits);
  EXPECT_EQ(first.size(), 10u);
  EXPECT_EQ(first.front(), '0');
  GrammarMatcher ebnf(
      compiler.compile({GrammarSpec::Kind::Ebnf, "root ::= \"a\" root | \"b\"", {}, "g"}));
  EXPECT_EQ(allowed(ebnf), (std::vector<int32_t>{'a', 'b'}));
  acceptText(ebnf, "aab");
  EXPECT_EQ(allowed(ebnf), (std::vector<int32_t>{kEos}));
}

TEST(Grammar, IdsPastTheTokenizerAndSpecialTokensAreNeverAllowed) {
  GrammarCompiler compiler = makeCompiler();
  GrammarMatcher matcher(compiler.compile({GrammarSpec::Kind::JsonObject, {}, {}, "f"}));
  std::vector<int32_t> tokens = allowed(matcher);
  EXPECT_FALSE(tokens.empty());
  for (int32_t id : tokens) EXPECT_LT(id, kEos);
}

TEST(Grammar, UncompilableConstraintsNameTheirField) {
  GrammarCompiler compiler = makeCompiler();
  auto fieldOfError = [&](GrammarSpec spec) -> std::string {
    try {
      compiler.compile(spec);
    } catch (const GrammarError &error) {
      EXPECT_NE(std::string(error.what()).find(spec.field), std::string::npos) << error.what();
      return error.field;
    }
    return "";
  };
  EXPECT_EQ(fieldOfError({GrammarSpec::Kind::JsonSchema, "{\"type\": 7}", {}, "guided_json"}),
            "guided_json");
  EXPECT_EQ(fieldOfError({GrammarSpec::Kind::Regex, "(ab", {}, "guided_regex"}), "guided_regex");
  EXPECT_EQ(fieldOfError({GrammarSpec::Kind::Ebnf, "root ::= ", {}, "guided_grammar"}),
            "guided_grammar");
  EXPECT_EQ(fieldOfError({GrammarSpec::Kind::Choice, {}, {}, "guided_choice"}), "guided_choice");
}

TEST(Grammar, SchemaKeywordsThatWouldNotBeEnforcedAreRefusedByName) {
  GrammarCompiler compiler = makeCompiler();
  auto refusal = [&](const std::string &schema) -> std::string {
    try {
      compiler.compile({GrammarSpec::Kind::JsonSchema, schema, {}, "response_format"});
    } catch (const GrammarError &error) {
      return error.what();
    }
    return "";
  };
  for (const char *keyword : {"not", "uniqueItems", "multipleOf", "dependentRequired", "if"}) {
    // Anywhere in the schema: nested under properties, items, anyOf or $defs.
    std::string nested = std::string(R"({"type": "object", "properties": {"a": {"anyOf": [
        {"type": "array", "items": {"$ref": "#/$defs/x"}}]}}, "$defs": {"x": {")") + keyword +
                         R"(": 1}}})";
    EXPECT_NE(refusal(nested).find(std::string("'") + keyword + "'"), std::string::npos)
        << keyword << ": " << refusal(nested);
  }
  // A property may be named like a keyword.
  EXPECT_EQ(refusal(R"({"type": "object", "properties": {"not": {"type": "integer"}}})"), "");
  EXPECT_NE(refusal(R"({"type": "string", "pattern": "a+", "maxLength": 3})").find("maxLength"),
            std::string::npos);
  // xgrammar's own errors, without its source location.
  std::string message = refusal(R"({"type": "string", "pattern": "(a"})");
  EXPECT_EQ(message.find(".cc:"), std::string::npos) << message;
  EXPECT_NE(message.find("'response_format' cannot be compiled"), std::string::npos);
}
