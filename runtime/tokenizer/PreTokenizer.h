//===- PreTokenizer.h - splitting text into words ---------------*- C++ -*-===//
#ifndef LLMC_RUNTIME_TOKENIZER_PRETOKENIZER_H
#define LLMC_RUNTIME_TOKENIZER_PRETOKENIZER_H

#include "runtime/tokenizer/JsonNode.h"

#include <memory>
#include <string>
#include <vector>

namespace llmc::runtime::tokenizer {

/// A piece of the input on its way to the model, which encodes each word on
/// its own.
struct Word {
  std::string text;
  /// Whether it starts where the input starts (Metaspace's "first" scheme
  /// prepends its marker only there).
  bool atInputStart;
};

/// Splits words further and rewrites them: ByteLevel, Split, Digits,
/// Metaspace and Sequences of them.
class PreTokenizer {
public:
  virtual ~PreTokenizer() = default;
  /// Replaces `words` with their pieces; no piece is empty.
  virtual void preTokenize(std::vector<Word> &words) const = 0;
};

/// Metaspace's prepend_scheme, which its pre-tokenizer and its decoder share.
enum class PrependScheme { First, Never, Always };

/// The prepend_scheme of a Metaspace node ("always" when absent), or its older
/// form, add_prefix_space false for "never".
PrependScheme parsePrependScheme(const JsonNode &metaspace);

/// The pre-tokenizer `node` describes; throws Error for a type (or an
/// option) this runtime does not support.
std::unique_ptr<PreTokenizer> parsePreTokenizer(const JsonNode &node);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_PRETOKENIZER_H
