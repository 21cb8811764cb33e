//===- TokenizerConfig.cpp - what tokenizer_config.json names -------------===//
#include "runtime/tokenizer/TokenizerConfig.h"

#include "runtime/tokenizer/JsonNode.h"

#include "runtime/core/Error.h"

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

/// `chat_template`: one template, or named ones of which transformers uses
/// "default" unless told otherwise.
std::optional<std::string> chatTemplateOf(const JsonNode &config) {
  if (!config.has("chat_template")) return std::nullopt;
  JsonNode field = config["chat_template"];
  if (field.json().is_string()) return field.string();
  if (!field.json().is_array() || field.arraySize() == 0)
    field.fail("expected a string or a list of {\"name\", \"template\"} objects");
  for (size_t i = 0; i < field.arraySize(); ++i) {
    JsonNode entry = field.element(i);
    if (entry["name"].string() == "default") return entry["template"].string();
  }
  return field.element(0)["template"].string();
}

/// The file `name` in the directory of `path`.
std::string siblingPath(const std::string &path, const std::string &name) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? name : path.substr(0, slash + 1) + name;
}

std::optional<std::string> readFileIfPresent(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) return std::nullopt;
  std::ostringstream contents;
  contents << stream.rdbuf();
  return contents.str();
}
} // namespace

TokenizerConfig TokenizerConfig::load(const std::string &path) {
  std::optional<std::string> contents = readFileIfPresent(path);
  if (!contents) throw Error(path + ": cannot open it");
  nlohmann::json document = nlohmann::json::parse(*contents, nullptr, false);
  if (document.is_discarded() || !document.is_object()) throw Error(path + ": not a JSON object");
  JsonNode root(document, path);
  TokenizerConfig config;
  config.bosToken = specialToken(root, "bos_token");
  config.eosToken = specialToken(root, "eos_token");
  config.chatTemplate = readFileIfPresent(siblingPath(path, "chat_template.jinja"));
  if (!config.chatTemplate) config.chatTemplate = chatTemplateOf(root);
  return config;
}

} // namespace llmc::runtime::tokenizer
