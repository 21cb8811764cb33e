//===- TokenizerConfig.cpp - what tokenizer_config.json names -------------===//
#include "runtime/tokenizer/TokenizerConfig.h"

#include "runtime/tokenizer/JsonNode.h"

#include "runtime/Error.h"

#include <fstream>
#include <sstream>

namespace llmc::runtime::tokenizer {
namespace {

/// A special token as transformers writes it: a string, or an object whose
/// "content" is the string (an AddedToken).
std::optional<std::string> specialToken(const JsonNode &config, const char *key) {
  if (!config.has(key)) return std::nullopt;
  JsonNode token = config[key];
  if (token.json().is_object()) return token["content"].string();
  return token.string();
}
} // namespace

TokenizerConfig TokenizerConfig::load(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw Error(path + ": cannot open it");
  std::ostringstream contents;
  contents << stream.rdbuf();
  nlohmann::json document = nlohmann::json::parse(contents.str(), nullptr, false);
  if (document.is_discarded() || !document.is_object()) throw Error(path + ": not a JSON object");
  JsonNode root(document, path);
  TokenizerConfig config;
  config.bosToken = specialToken(root, "bos_token");
  config.eosToken = specialToken(root, "eos_token");
  return config;
}

} // namespace llmc::runtime::tokenizer
