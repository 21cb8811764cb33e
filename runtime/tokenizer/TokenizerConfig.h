//===- TokenizerConfig.h - what tokenizer_config.json names -----*- C++ -*-===//
#ifndef LLMC_RUNTIME_TOKENIZER_TOKENIZERCONFIG_H
#define LLMC_RUNTIME_TOKENIZER_TOKENIZERCONFIG_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

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
  /// The ids generation ends at: generation_config.json's eos_token_id beside
  /// the config (one id or several: Llama-3 names three), when it is there.
  std::vector<int32_t> eosTokenIds;

  /// Reads `path` (and generation_config.json beside it); throws Error when
  /// either cannot be read or is not a JSON object, or an eos id is not one.
  static TokenizerConfig load(const std::string &path);
};

class Tokenizer;

/// The ids generation ends at: the eos token's id (when `tokenizer` knows it)
/// and generation_config.json's, each once. Throws Error when one is not below
/// `vocabSize` (0: unchecked), so that a bad config fails at startup, not
/// every request.
std::vector<int32_t> endOfSequenceIds(const TokenizerConfig &config, const Tokenizer *tokenizer,
                                      int64_t vocabSize);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_TOKENIZERCONFIG_H
