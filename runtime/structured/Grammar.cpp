//===- Grammar.cpp - grammar-constrained decoding through xgrammar --------===//
#include "runtime/structured/Grammar.h"

#include "runtime/tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>
#include <xgrammar/xgrammar.h>

#include <algorithm>
#include <limits>
#include <regex>
#include <thread>

namespace llmc::runtime::structured {

class CompiledGrammar {
public:
  CompiledGrammar(xgrammar::CompiledGrammar compiled, int32_t vocabSize, bool hasStopTokens)
      : compiled(std::move(compiled)), vocabSize(vocabSize), hasStopTokens(hasStopTokens) {}
  xgrammar::CompiledGrammar compiled;
  int32_t vocabSize;
  /// Without stop tokens a matcher terminates as soon as its output is complete.
  bool hasStopTokens;
};

namespace {

/// xgrammar's view of the vocabulary: each id's token string as tokenizer.json
/// spells it, with "" for the special tokens and the ids the tokenizer lacks
/// (xgrammar never allows those, except the stop tokens).
xgrammar::TokenizerInfo tokenizerInfo(const tokenizer::Tokenizer &tokenizer,
                                      const std::string &tokenizerJson, int64_t vocabSize,
                                      std::vector<int32_t> stopTokenIds) {
  std::vector<std::string> vocab(static_cast<size_t>(vocabSize));
  for (int32_t id = 0; id < vocabSize; ++id)
    if (const std::string *token = tokenizer.decodingToken(id, /*skipSpecialTokens=*/true))
      vocab[id] = *token;
  // How token strings spell bytes (byte-level, byte fallback or raw), as
  // xgrammar reads it off tokenizer.json's model, decoder and pre-tokenizer.
  nlohmann::json metadata =
      nlohmann::json::parse(xgrammar::TokenizerInfo::DetectMetadataFromHF(tokenizerJson));
  auto vocabType = static_cast<xgrammar::VocabType>(metadata.at("vocab_type").get<int>());
  return xgrammar::TokenizerInfo(vocab, vocabType, static_cast<int>(vocabSize),
                                 std::move(stopTokenIds),
                                 metadata.at("add_prefix_space").get<bool>());
}

/// An EBNF grammar whose strings are exactly `choices`.
std::string choiceGrammar(const std::vector<std::string> &choices) {
  std::string grammar = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i) grammar += " | ";
    // A JSON string literal is an EBNF one: the same quotes and escapes.
    grammar += nlohmann::json(choices[i]).dump();
  }
  return grammar;
}

/// xgrammar's messages start with a time and its source file and line; the
/// client needs the reason only.
std::string reason(const std::exception &error) {
  static const std::regex kLocation(R"(^\[[^\]]*\]\s+\S+:[0-9]+:\s*)");
  std::string message = std::regex_replace(error.what(), kLocation, "");
  while (!message.empty() && message.back() == '\n') message.pop_back();
  return message;
}

/// Refuses, by name, the JSON schema keywords that xgrammar 0.2.8 ignores
/// (it would then allow outputs the schema rejects), walking every
/// subschema. Unknown "format"s stay allowed: JSON Schema makes format an
/// annotation unless a validator opts in.
void checkSchemaKeywords(const nlohmann::json &schema, const std::string &field) {
  if (!schema.is_object()) return;
  static const char *const kIgnored[] = {
      "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
      "uniqueItems", "contains", "minContains", "maxContains", "multipleOf"};
  for (const char *keyword : kIgnored)
    if (schema.contains(keyword))
      throw GrammarError("'" + field + "' uses the JSON schema keyword '" + keyword +
                             "', which structured outputs do not enforce",
                         field);
  bool bounded = schema.contains("minLength") || schema.contains("maxLength");
  if (bounded && (schema.contains("pattern") || schema.contains("format")))
    throw GrammarError("'" + field + "' combines minLength/maxLength with '" +
                           (schema.contains("pattern") ? "pattern" : "format") +
                           "', which structured outputs do not enforce together",
                       field);
  for (const char *single : {"additionalProperties", "items", "propertyNames",
                             "unevaluatedProperties", "unevaluatedItems"})
    if (schema.contains(single)) checkSchemaKeywords(schema[single], field);
  for (const char *list : {"items", "prefixItems", "anyOf", "oneOf", "allOf"})
    if (schema.contains(list) && schema[list].is_array())
      for (const nlohmann::json &subschema : schema[list]) checkSchemaKeywords(subschema, field);
  for (const char *map : {"properties", "patternProperties", "$defs", "definitions"})
    if (schema.contains(map) && schema[map].is_object())
      for (const nlohmann::json &subschema : schema[map]) checkSchemaKeywords(subschema, field);
}

} // namespace

struct GrammarCompiler::Impl {
  Impl(xgrammar::TokenizerInfo info, int32_t vocabSize, bool hasStopTokens)
      : vocabSize(vocabSize), hasStopTokens(hasStopTokens),
        // Compiled grammars are cached by their source, within 256 MiB.
        compiler(info, static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u)),
                 /*cache_enabled=*/true, /*max_memory_bytes=*/int64_t(256) << 20) {}
  int32_t vocabSize;
  bool hasStopTokens;
  xgrammar::GrammarCompiler compiler;
};

GrammarCompiler::GrammarCompiler(const tokenizer::Tokenizer &tokenizer,
                                 const std::string &tokenizerJson, int64_t vocabSize,
                                 std::vector<int32_t> stopTokenIds)
    : impl(std::make_unique<Impl>(tokenizerInfo(tokenizer, tokenizerJson, vocabSize, stopTokenIds),
                                  static_cast<int32_t>(vocabSize), !stopTokenIds.empty())) {}

GrammarCompiler::~GrammarCompiler() = default;

std::shared_ptr<const CompiledGrammar> GrammarCompiler::compile(const GrammarSpec &spec) {
  using Kind = GrammarSpec::Kind;
  if (spec.kind == Kind::Choice && spec.choices.empty())
    throw GrammarError("'" + spec.field + "' must hold at least one choice", spec.field);
  try {
    xgrammar::CompiledGrammar compiled = [&] {
      switch (spec.kind) {
      case Kind::JsonObject:
        return impl->compiler.CompileBuiltinJSONGrammar();
      case Kind::JsonSchema:
        checkSchemaKeywords(nlohmann::json::parse(spec.source, nullptr, false), spec.field);
        // No whitespace beyond ", " and ": ": a model cannot stall in a run of
        // blanks, and the output is what json.dumps would print.
        return impl->compiler.CompileJSONSchema(spec.source, /*any_whitespace=*/false);
      case Kind::Regex:
        return impl->compiler.CompileRegex(spec.source);
      case Kind::Choice:
        return impl->compiler.CompileGrammar(choiceGrammar(spec.choices));
      case Kind::Ebnf:
        return impl->compiler.CompileGrammar(spec.source);
      }
      throw GrammarError("unknown constraint kind", spec.field);
    }();
    return std::make_shared<const CompiledGrammar>(std::move(compiled), impl->vocabSize,
                                                   impl->hasStopTokens);
  } catch (const GrammarError &) {
    throw;
  } catch (const std::exception &error) {
    throw GrammarError("'" + spec.field + "' cannot be compiled: " + reason(error), spec.field);
  }
}

struct GrammarMatcher::Impl {
  explicit Impl(std::shared_ptr<const CompiledGrammar> grammar)
      : grammar(std::move(grammar)),
        matcher(this->grammar->compiled, std::nullopt,
                /*terminate_without_stop_token=*/!this->grammar->hasStopTokens),
        words(static_cast<size_t>(xgrammar::GetBitmaskSize(this->grammar->vocabSize))) {}
  std::shared_ptr<const CompiledGrammar> grammar;
  xgrammar::GrammarMatcher matcher;
  /// Bit t of the mask: token t is allowed.
  std::vector<int32_t> words;
  bool ready = false;
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar)
    : impl(std::make_unique<Impl>(std::move(grammar))) {}

GrammarMatcher::~GrammarMatcher() = default;

void GrammarMatcher::computeMask() {
  int64_t shape[1] = {static_cast<int64_t>(impl->words.size())};
  DLTensor tensor{};
  tensor.data = impl->words.data();
  tensor.device = DLDevice{kDLCPU, 0};
  tensor.ndim = 1;
  tensor.dtype = xgrammar::GetBitmaskDLType();
  tensor.shape = shape;
  impl->matcher.FillNextTokenBitmask(&tensor);
  impl->ready = true;
}

bool GrammarMatcher::maskReady() const { return impl->ready; }

void GrammarMatcher::applyMask(float *logits, int64_t vocabSize) const {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  int64_t count = std::min<int64_t>(vocabSize, impl->grammar->vocabSize);
  for (int64_t word = 0; word * 32 < count; ++word) {
    uint32_t bits = static_cast<uint32_t>(impl->words[word]);
    if (bits == 0xffffffffu) continue;
    int64_t end = std::min<int64_t>(32, count - word * 32);
    for (int64_t bit = 0; bit < end; ++bit)
      if (!(bits >> bit & 1u)) logits[word * 32 + bit] = kNegInf;
  }
  // Ids past the grammar's vocabulary are never allowed.
  std::fill(logits + count, logits + vocabSize, kNegInf);
}

bool GrammarMatcher::accept(int32_t token) {
  if (!impl->matcher.AcceptToken(token)) return false;
  impl->ready = false;
  return true;
}

bool GrammarMatcher::terminated() const { return impl->matcher.IsTerminated(); }

} // namespace llmc::runtime::structured
