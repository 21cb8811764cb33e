//===- PostProcessor.cpp - special tokens around an encoding --------------===//
#include "runtime/tokenizer/PostProcessor.h"

#include <limits>
#include <map>
#include <string>

namespace llmc::runtime::tokenizer {
namespace {

int32_t parseId(const JsonNode &node) {
  return static_cast<int32_t>(node.integer(0, std::numeric_limits<int32_t>::max()));
}

/// The single-sequence template: special tokens' ids and the sequence
/// (marked by an empty entry) in order.
class TemplateProcessor : public PostProcessor {
public:
  explicit TemplateProcessor(std::vector<std::vector<int32_t>> pieces)
      : pieces(std::move(pieces)) {}

  void process(std::vector<int32_t> &ids, bool addSpecialTokens) const override {
    if (!addSpecialTokens) return;
    std::vector<int32_t> result;
    for (const std::vector<int32_t> &piece : pieces) {
      if (piece.empty())
        result.insert(result.end(), ids.begin(), ids.end());
      else
        result.insert(result.end(), piece.begin(), piece.end());
    }
    ids = std::move(result);
  }

private:
  std::vector<std::vector<int32_t>> pieces;
};

/// The identity on ids (ByteLevel's post-processing only trims offsets).
class IdentityProcessor : public PostProcessor {
public:
  void process(std::vector<int32_t> &, bool) const override {}
};

class SequenceProcessor : public PostProcessor {
public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps(std::move(steps)) {}
  void process(std::vector<int32_t> &ids, bool addSpecialTokens) const override {
    for (const auto &step : steps) step->process(ids, addSpecialTokens);
  }

private:
  std::vector<std::unique_ptr<PostProcessor>> steps;
};

std::unique_ptr<PostProcessor> parseTemplate(const JsonNode &node) {
  // special_tokens: name -> {"id": name, "ids": [...], "tokens": [...]}.
  std::map<std::string, std::vector<int32_t>> specialIds;
  JsonNode specials = node["special_tokens"];
  if (!specials.json().is_object()) specials.fail("expected an object");
  for (auto entry = specials.json().begin(); entry != specials.json().end(); ++entry) {
    JsonNode special = specials[entry.key().c_str()];
    JsonNode ids = special["ids"];
    std::vector<int32_t> values;
    for (size_t i = 0; i < ids.arraySize(); ++i) values.push_back(parseId(ids.element(i)));
    if (values.empty()) ids.fail("a special token needs at least one id");
    specialIds[entry.key()] = std::move(values);
  }
  JsonNode single = node["single"];
  std::vector<std::vector<int32_t>> pieces;
  for (size_t i = 0; i < single.arraySize(); ++i) {
    JsonNode piece = single.element(i);
    if (piece.has("Sequence")) {
      JsonNode sequence = piece["Sequence"];
      if (sequence["id"].string() != "A")
        sequence.fail("the single-sequence template can only hold sequence A");
      pieces.emplace_back();
    } else if (piece.has("SpecialToken")) {
      JsonNode name = piece["SpecialToken"]["id"];
      auto found = specialIds.find(name.string());
      if (found == specialIds.end())
        name.fail("'" + name.string() + "' is not in the template's special_tokens");
      pieces.push_back(found->second);
    } else {
      piece.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  return std::make_unique<TemplateProcessor>(std::move(pieces));
}

/// RobertaProcessing and BertProcessing on one sequence: cls, the sequence, sep.
std::unique_ptr<PostProcessor> parseClsSep(const JsonNode &node) {
  auto idOf = [&](const char *key) {
    JsonNode pair = node[key];
    if (pair.arraySize() != 2) pair.fail("expected [token, id]");
    return parseId(pair.element(1));
  };
  return std::make_unique<TemplateProcessor>(
      std::vector<std::vector<int32_t>>{{idOf("cls")}, {}, {idOf("sep")}});
}
} // namespace

std::unique_ptr<PostProcessor> parsePostProcessor(const JsonNode &node) {
  std::string type =
      node.type("post-processor", {"TemplateProcessing", "ByteLevel", "RobertaProcessing",
                                   "BertProcessing", "Sequence"});
  if (type == "TemplateProcessing") return parseTemplate(node);
  if (type == "ByteLevel") return std::make_unique<IdentityProcessor>();
  if (type == "RobertaProcessing" || type == "BertProcessing") return parseClsSep(node);
  JsonNode list = node["processors"];
  std::vector<std::unique_ptr<PostProcessor>> steps;
  for (size_t i = 0; i < list.arraySize(); ++i)
    steps.push_back(parsePostProcessor(list.element(i)));
  return std::make_unique<SequenceProcessor>(std::move(steps));
}

} // namespace llmc::runtime::tokenizer
