//===- Grammar.h - grammar-constrained decoding through xgrammar -*- C++ -*-===//
//
// What structured outputs need from a grammar engine: a request's constraint
// (a JSON schema, any JSON object, a regex, a choice of strings or an EBNF
// grammar) compiled once against the model's vocabulary, and per sequence a
// matcher that gives the tokens allowed next as a mask over the logits and
// advances by each sampled token. xgrammar (its C++ core, built by
// scripts/setup.sh) does the work; nothing of its API leaves Grammar.cpp.
//
// Contract:
// - GrammarCompiler::compile() throws GrammarError, naming the request field,
//   for a constraint xgrammar cannot compile, and for a JSON schema keyword
//   it would not enforce (not, if/then/else, uniqueItems, contains,
//   multipleOf, dependentRequired/Schemas; minLength/maxLength with pattern
//   or format), named; it caches what it compiled, so a schema is compiled
//   once however many requests carry it.
// - A matcher's mask allows a token only if the text so far followed by the
//   token is a prefix of a string of the grammar; once that text is a
//   complete string, the stop tokens given to the compiler are allowed too,
//   and accepting one terminates the matcher.
// - Matchers are independent: one sequence's matcher may compute its mask on
//   another thread while the engine works on other sequences.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_STRUCTURED_GRAMMAR_H
#define LLMC_RUNTIME_STRUCTURED_GRAMMAR_H

#include "runtime/core/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace llmc::runtime::tokenizer {
class Tokenizer;
}

namespace llmc::runtime::structured {

/// A constraint the engine cannot compile: the client's fault (HTTP 400).
class GrammarError : public Error {
public:
  GrammarError(const std::string &message, std::string field)
      : Error(message), field(std::move(field)) {}
  /// The request field that carried the constraint.
  std::string field;
};

/// What a request constrains its output to.
struct GrammarSpec {
  enum class Kind {
    /// Any JSON object (OpenAI's response_format json_object).
    JsonObject,
    /// A JSON document valid against `source`, a JSON schema.
    JsonSchema,
    /// A string matching `source`, a regular expression.
    Regex,
    /// One of `choices`, exactly.
    Choice,
    /// A string of the EBNF grammar `source` (xgrammar's GBNF dialect; the
    /// start rule is `root`).
    Ebnf,
  };
  Kind kind = Kind::JsonObject;
  std::string source;
  std::vector<std::string> choices;
  /// The request field it came from ("response_format", "guided_json", ...).
  std::string field;
};

/// A constraint compiled against one vocabulary; shared by every sequence
/// that follows it.
class CompiledGrammar;

/// Compiles constraints against the model's vocabulary and caches them.
class GrammarCompiler {
public:
  /// `tokenizerJson` is the tokenizer's tokenizer.json (xgrammar reads how
  /// token strings encode bytes from it); `vocabSize` is the model's (ids past
  /// the tokenizer's are never allowed); `stopTokenIds` end a complete output.
  GrammarCompiler(const tokenizer::Tokenizer &tokenizer, const std::string &tokenizerJson,
                  int64_t vocabSize, std::vector<int32_t> stopTokenIds);
  ~GrammarCompiler();
  GrammarCompiler(const GrammarCompiler &) = delete;
  GrammarCompiler &operator=(const GrammarCompiler &) = delete;

  /// Thread-safe. Throws GrammarError naming `spec.field`.
  std::shared_ptr<const CompiledGrammar> compile(const GrammarSpec &spec);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// One sequence's position in its grammar.
class GrammarMatcher {
public:
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar);
  ~GrammarMatcher();
  GrammarMatcher(const GrammarMatcher &) = delete;
  GrammarMatcher &operator=(const GrammarMatcher &) = delete;

  /// Computes the mask of the tokens allowed after those accepted so far.
  void computeMask();
  /// Whether computeMask() ran since the last accept().
  bool maskReady() const;
  /// Sets `logits[t]` to -inf for every token t the mask disallows.
  void applyMask(float *logits, int64_t vocabSize) const;
  /// Advances past `token`; false (and no change) if the grammar rejects it.
  bool accept(int32_t token);
  /// A stop token was accepted (or, with no stop tokens, the output is
  /// complete).
  bool terminated() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace llmc::runtime::structured

#endif // LLMC_RUNTIME_STRUCTURED_GRAMMAR_H
