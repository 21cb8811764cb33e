//===- TokenizerConfig.cpp - what tokenizer_config.json names -------------===//
#include "runtime/tokenizer/TokenizerConfig.h"

#include "runtime/tokenizer/JsonNode.h"
#include "runtime/tokenizer/Tokenizer.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <climits>
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

/// generation_config.json's eos_token_id: an id, a list of ids, or absent.
std::vector<int32_t> eosTokenIdsOf(const std::string &path, const std::string &contents) {
  nlohmann::json document = nlohmann::json::parse(contents, nullptr, false);
  if (document.is_discarded() || !document.is_object()) throw Error(path + ": not a JSON object");
  JsonNode root(document, path);
  if (!root.has("eos_token_id") || root["eos_token_id"].json().is_null()) return {};
  JsonNode field = root["eos_token_id"];
  constexpr int64_t kMaxId = INT32_MAX;
  if (!field.json().is_array()) return {static_cast<int32_t>(field.integer(0, kMaxId))};
  std::vector<int32_t> ids;
  for (size_t i = 0; i < field.arraySize(); ++i)
    ids.push_back(static_cast<int32_t>(field.element(i).integer(0, kMaxId)));
  return ids;
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
  std::string generationPath = siblingPath(path, "generation_config.json");
  if (std::optional<std::string> generation = readFileIfPresent(generationPath))
    config.eosTokenIds = eosTokenIdsOf(generationPath, *generation);
  return config;
}

std::vector<int32_t> endOfSequenceIds(const TokenizerConfig &config, const Tokenizer *tokenizer,
                                      int64_t vocabSize) {
  std::vector<int32_t> ids;
  if (tokenizer && config.eosToken)
    if (std::optional<int32_t> id = tokenizer->tokenToId(*config.eosToken)) ids.push_back(*id);
  for (int32_t id : config.eosTokenIds) {
    if (vocabSize > 0 && id >= vocabSize)
      throw Error("generation_config.json: eos_token_id " + std::to_string(id) +
                  " is outside the vocabulary of " + std::to_string(vocabSize));
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

} // namespace llmc::runtime::tokenizer
