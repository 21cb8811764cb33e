//===- Normalizer.h - text normalizers of tokenizer.json --------*- C++ -*-===//
#ifndef LLMC_RUNTIME_TOKENIZER_NORMALIZER_H
#define LLMC_RUNTIME_TOKENIZER_NORMALIZER_H

#include "runtime/tokenizer/JsonNode.h"

#include <memory>
#include <string>

namespace llmc::runtime::tokenizer {

/// Rewrites text before it is split into words: Unicode normalization
/// forms, Prepend, Replace and Sequences of them.
class Normalizer {
public:
  virtual ~Normalizer() = default;
  /// Rewrites `text` (well-formed UTF-8) in place.
  virtual void normalize(std::string &text) const = 0;
};

/// The normalizer `node` describes; throws Error for a type (or an option)
/// this runtime does not support.
std::unique_ptr<Normalizer> parseNormalizer(const JsonNode &node);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_NORMALIZER_H
