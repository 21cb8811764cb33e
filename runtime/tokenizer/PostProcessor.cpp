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

/// One piece of a template: a special token's ids, or one of the sequences.
struct TemplatePiece {
  /// The sequence this piece stands for (0: A, 1: B), or -1 for `ids`.
  int sequence = -1;
  std::vector<int32_t> ids;
};
using Template = std::vector<TemplatePiece>;

/// Joins the sequences into one by a template: for one sequence the single
/// one, for a pair the pair one. RobertaProcessing and BertProcessing are
/// templates too.
class TemplateProcessor : public PostProcessor {
public:
  TemplateProcessor(Template single, Template pair)
      : single(std::move(single)), pair(std::move(pair)) {}

  void process(EncodedSequences &sequences, bool addSpecialTokens) const override {
    if (!addSpecialTokens) return;
    const Template &chosen = sequences.size() == 1 ? single : pair;
    std::vector<int32_t> joined;
    for (const TemplatePiece &piece : chosen) {
      const std::vector<int32_t> &ids =
          piece.sequence < 0 ? piece.ids : sequences[static_cast<size_t>(piece.sequence)];
      joined.insert(joined.end(), ids.begin(), ids.end());
    }
    sequences = {std::move(joined)};
  }

private:
  Template single;
  Template pair;
};

/// The identity on ids (ByteLevel's post-processing only trims offsets).
class IdentityProcessor : public PostProcessor {
public:
  void process(EncodedSequences &, bool) const override {}
};

class SequenceProcessor : public PostProcessor {
public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps(std::move(steps)) {}
  void process(EncodedSequences &sequences, bool addSpecialTokens) const override {
    for (const auto &step : steps) step->process(sequences, addSpecialTokens);
  }

private:
  std::vector<std::unique_ptr<PostProcessor>> steps;
};

/// A template's pieces in order; `sequences` is how many it may refer to
/// (1: A only, 2: A and B).
Template parseTemplatePieces(const JsonNode &list, size_t sequences,
                             const std::map<std::string, std::vector<int32_t>> &specialIds) {
  Template pieces;
  for (size_t i = 0; i < list.arraySize(); ++i) {
    JsonNode piece = list.element(i);
    if (piece.has("Sequence")) {
      JsonNode sequence = piece["Sequence"];
      std::string id = sequence["id"].string();
      if (id != "A" && (id != "B" || sequences < 2))
        sequence.fail(sequences < 2 ? "the single-sequence template can only hold sequence A"
                                    : "expected sequence A or B");
      pieces.push_back({id == "A" ? 0 : 1, {}});
    } else if (piece.has("SpecialToken")) {
      JsonNode name = piece["SpecialToken"]["id"];
      auto found = specialIds.find(name.string());
      if (found == specialIds.end())
        name.fail("'" + name.string() + "' is not in the template's special_tokens");
      pieces.push_back({-1, found->second});
    } else {
      piece.fail("expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  return pieces;
}

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
  Template single = parseTemplatePieces(node["single"], 1, specialIds);
  // The reference writes both templates; a file without the pair one joins
  // a pair as it would with no post-processor.
  Template pair = node.has("pair") ? parseTemplatePieces(node["pair"], 2, specialIds)
                                   : Template{{0, {}}, {1, {}}};
  return std::make_unique<TemplateProcessor>(std::move(single), std::move(pair));
}

/// RobertaProcessing and BertProcessing: cls A sep, and for a pair
/// cls A sep sep B sep (RoBERTa) or cls A sep B sep (BERT).
std::unique_ptr<PostProcessor> parseClsSep(const JsonNode &node, bool roberta) {
  auto idOf = [&](const char *key) {
    JsonNode entry = node[key];
    if (entry.arraySize() != 2) entry.fail("expected [token, id]");
    return TemplatePiece{-1, {parseId(entry.element(1))}};
  };
  TemplatePiece cls = idOf("cls"), sep = idOf("sep");
  TemplatePiece a{0, {}}, b{1, {}};
  Template pair = roberta ? Template{cls, a, sep, sep, b, sep} : Template{cls, a, sep, b, sep};
  return std::make_unique<TemplateProcessor>(Template{cls, a, sep}, std::move(pair));
}
} // namespace

std::unique_ptr<PostProcessor> parsePostProcessor(const JsonNode &node) {
  std::string type =
      node.type("post-processor", {"TemplateProcessing", "ByteLevel", "RobertaProcessing",
                                   "BertProcessing", "Sequence"});
  if (type == "TemplateProcessing") return parseTemplate(node);
  if (type == "ByteLevel") return std::make_unique<IdentityProcessor>();
  if (type == "RobertaProcessing" || type == "BertProcessing")
    return parseClsSep(node, type == "RobertaProcessing");
  JsonNode list = node["processors"];
  std::vector<std::unique_ptr<PostProcessor>> steps;
  for (size_t i = 0; i < list.arraySize(); ++i)
    steps.push_back(parsePostProcessor(list.element(i)));
  return std::make_unique<SequenceProcessor>(std::move(steps));
}

} // namespace llmc::runtime::tokenizer
