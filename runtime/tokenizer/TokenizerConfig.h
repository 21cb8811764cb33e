//===- TokenizerConfig.h - what tokenizer_config.json names -----*- C++ -*-===//
#ifndef LLMC_RUNTIME_TOKENIZER_TOKENIZERCONFIG_H
#define LLMC_RUNTIME_TOKENIZER_TOKENIZERCONFIG_H

#include <optional>
#include <string>

namespace llmc::runtime::tokenizer {

/// The special tokens a transformers tokenizer_config.json names (as strings;
/// the tokenizer gives their ids).
struct TokenizerConfig {
  std::optional<std::string> bosToken;
  std::optional<std::string> eosToken;

  /// Reads `path`; throws Error when it cannot be read or is not a JSON object.
  static TokenizerConfig load(const std::string &path);
};

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_TOKENIZERCONFIG_H
