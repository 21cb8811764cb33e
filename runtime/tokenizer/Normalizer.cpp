//===- Normalizer.cpp - text normalizers of tokenizer.json ----------------===//
#include "runtime/tokenizer/Normalizer.h"

#include "runtime/tokenizer/Pattern.h"
#include "runtime/tokenizer/Unicode.h"

#include <vector>

namespace llmc::runtime::tokenizer {
namespace {

/// NFC, NFD, NFKC or NFKD.
class UnicodeNormalizer : public Normalizer {
public:
  explicit UnicodeNormalizer(NormalizationForm form) : form(form) {}
  void normalize(std::string &text) const override { text = normalizeUnicode(text, form); }

private:
  NormalizationForm form;
};

/// Puts a prefix before non-empty text (Llama-2's "▁").
class PrependNormalizer : public Normalizer {
public:
  explicit PrependNormalizer(std::string prefix) : prefix(std::move(prefix)) {}
  void normalize(std::string &text) const override {
    if (!text.empty()) text.insert(0, prefix);
  }

private:
  std::string prefix;
};

/// Every match of a pattern replaced (Llama-2's spaces by "▁").
class ReplaceNormalizer : public Normalizer {
public:
  ReplaceNormalizer(Regex pattern, std::string content)
      : pattern(std::move(pattern)), content(std::move(content)) {}
  void normalize(std::string &text) const override { text = replaceAll(text, pattern, content); }

private:
  Regex pattern;
  std::string content;
};

class SequenceNormalizer : public Normalizer {
public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps(std::move(steps)) {}
  void normalize(std::string &text) const override {
    for (const auto &step : steps) step->normalize(text);
  }

private:
  std::vector<std::unique_ptr<Normalizer>> steps;
};
} // namespace

std::unique_ptr<Normalizer> parseNormalizer(const JsonNode &node) {
  std::string type =
      node.type("normalizer", {"NFC", "NFD", "NFKC", "NFKD", "Prepend", "Replace", "Sequence"});
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalizationForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalizationForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalizationForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalizationForm::NFKD);
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(node["prepend"].string());
  if (type == "Replace")
    return std::make_unique<ReplaceNormalizer>(parsePattern(node["pattern"]),
                                               node["content"].string());
  JsonNode list = node["normalizers"];
  std::vector<std::unique_ptr<Normalizer>> steps;
  for (size_t i = 0; i < list.arraySize(); ++i) steps.push_back(parseNormalizer(list.element(i)));
  return std::make_unique<SequenceNormalizer>(std::move(steps));
}

} // namespace llmc::runtime::tokenizer
