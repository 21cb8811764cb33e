//===- TokenizerConfig.h - what tokenizer_config.json names -----*- C++ -*-===//
#ifndef LLMC_RUNTIME_TOKENIZER_TOKENIZERCONFIG_H
#define LLMC_RUNTIME_TOKENIZER_TOKENIZERCONFIG_H

#include <optional>
#include <string>

namespace llmc::runtime::tokenizer {

/// The special tokens a transformers tokenizer_config.json names (as strings;
/// the tokenizer gives their ids) and the model's chat template.
struct TokenizerConfig {
  std::optional<std::string> bosToken;
  std::optional<std::string> eosToken;
  /// The Jinja source of the chat template: chat_template.jinja beside the
  /// config when there is one (newer transformers write it there), else the
  /// config's `chat_template`, a string or a list of {name, template} of
  /// which "default" (or the first) is taken.
  std::optional<std::string> chatTemplate;

  /// Reads `path`; throws Error when it cannot be read or is not a JSON object.
  static TokenizerConfig load(const std::string &path);
};

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_TOKENIZERCONFIG_H
