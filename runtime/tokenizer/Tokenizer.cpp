//===- Tokenizer.cpp - Hugging Face tokenizer.json in C++ -----------------===//
#include "runtime/tokenizer/Tokenizer.h"

#include "runtime/core/Error.h"
#include "runtime/tokenizer/AddedVocabulary.h"
#include "runtime/tokenizer/Bpe.h"
#include "runtime/tokenizer/Decoder.h"
#include "runtime/tokenizer/JsonNode.h"
#include "runtime/tokenizer/Normalizer.h"
#include "runtime/tokenizer/PostProcessor.h"
#include "runtime/tokenizer/PreTokenizer.h"
#include "runtime/tokenizer/Utf8.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace llmc::runtime::tokenizer {
namespace {

/// Truncation and padding change what encode returns; padding to the
/// longest of a batch is the only form that leaves one sequence alone.
void checkTruncationAndPadding(const JsonNode &root) {
  if (root.has("truncation")) root["truncation"].fail("truncation is not supported");
  if (!root.has("padding")) return;
  JsonNode padding = root["padding"];
  bool batchLongest = padding.has("strategy") && padding["strategy"].json() == "BatchLongest";
  if (!batchLongest || padding.has("pad_to_multiple_of"))
    padding.fail("padding other than to the longest sequence of a batch is not supported");
}
} // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

std::unique_ptr<Tokenizer> Tokenizer::fromFile(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw Error(path + ": cannot open the tokenizer");
  std::ostringstream contents;
  contents << stream.rdbuf();
  return fromJson(contents.str(), path);
}

std::unique_ptr<Tokenizer> Tokenizer::fromJson(std::string_view jsonText,
                                               const std::string &source) {
  nlohmann::json document = nlohmann::json::parse(jsonText, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) throw Error(source + ": not valid JSON");
  JsonNode root(document, source);
  if (!document.is_object()) root.fail("expected a tokenizer.json object");
  if (root.has("version") && root["version"].string() != "1.0")
    root["version"].fail("unknown tokenizer version '" + root["version"].string() + "'");
  checkTruncationAndPadding(root);

  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
  tokenizer->model = BpeModel::parse(root["model"]);
  if (root.has("normalizer")) tokenizer->normalizer = parseNormalizer(root["normalizer"]);
  if (root.has("pre_tokenizer")) tokenizer->preTokenizer = parsePreTokenizer(root["pre_tokenizer"]);
  if (root.has("post_processor"))
    tokenizer->postProcessor = parsePostProcessor(root["post_processor"]);
  if (root.has("decoder")) tokenizer->decoder = parseDecoder(root["decoder"]);
  tokenizer->addedVocabulary = std::make_unique<AddedVocabulary>();
  if (root.has("added_tokens"))
    tokenizer->addedVocabulary->parse(root["added_tokens"], *tokenizer->model,
                                      tokenizer->normalizer.get());
  return tokenizer;
}

std::vector<int32_t> Tokenizer::encodeSequence(std::string_view text) const {
  size_t invalid = findInvalidUtf8(text);
  if (invalid != std::string_view::npos)
    throw Error("the text is not valid UTF-8 (at byte " + std::to_string(invalid) + ")");

  // Added tokens first (the raw ones, then the normalized ones in the
  // normalized text), so that nothing later splits them.
  std::vector<TextSegment> segments;
  if (!text.empty()) segments.push_back({std::string(text), -1, true});
  addedVocabulary->split(segments, /*normalized=*/false);
  if (normalizer) {
    for (TextSegment &segment : segments)
      if (segment.tokenId < 0) normalizer->normalize(segment.text);
    segments.erase(std::remove_if(segments.begin(), segments.end(),
                                  [](const TextSegment &segment) {
                                    return segment.tokenId < 0 && segment.text.empty();
                                  }),
                   segments.end());
  }
  addedVocabulary->split(segments, /*normalized=*/true);

  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<Word> words;
  for (TextSegment &segment : segments) {
    if (segment.tokenId >= 0) {
      ids.push_back(segment.tokenId);
      continue;
    }
    words.clear();
    words.push_back({std::move(segment.text), segment.atInputStart});
    if (preTokenizer) preTokenizer->preTokenize(words);
    for (const Word &word : words) model->tokenize(word.text, ids);
  }
  return ids;
}

std::vector<int32_t> Tokenizer::postProcess(EncodedSequences sequences,
                                            bool addSpecialTokens) const {
  if (postProcessor) postProcessor->process(sequences, addSpecialTokens);
  std::vector<int32_t> ids = std::move(sequences.front());
  for (size_t i = 1; i < sequences.size(); ++i)
    ids.insert(ids.end(), sequences[i].begin(), sequences[i].end());
  return ids;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool addSpecialTokens,
                                       std::optional<size_t> maxLength) const {
  std::vector<int32_t> ids = encodeSequence(text);
  if (maxLength) ids.resize(std::min(ids.size(), roomForText(*maxLength, 1, addSpecialTokens)));
  return postProcess({std::move(ids)}, addSpecialTokens);
}

size_t Tokenizer::numSpecialTokens(size_t numSequences) const {
  return postProcess(EncodedSequences(numSequences), true).size();
}

size_t Tokenizer::roomForText(size_t maxLength, size_t numSequences,
                              bool addSpecialTokens) const {
  size_t added = addSpecialTokens ? numSpecialTokens(numSequences) : 0;
  if (maxLength < added)
    throw Error("cannot truncate to " + std::to_string(maxLength) +
                " tokens: the tokenizer's template alone adds " + std::to_string(added));
  return maxLength - added;
}

std::vector<int32_t> Tokenizer::encodePair(std::string_view text, std::string_view pair,
                                           bool addSpecialTokens,
                                           std::optional<size_t> maxLength) const {
  std::vector<int32_t> first = encodeSequence(text);
  std::vector<int32_t> second = encodeSequence(pair);
  if (maxLength)
    truncateLongestFirst(first, second, roomForText(*maxLength, 2, addSpecialTokens));
  return postProcess({std::move(first), std::move(second)}, addSpecialTokens);
}

void truncateLongestFirst(std::vector<int32_t> &first, std::vector<int32_t> &second,
                          size_t maxLength) {
  if (first.size() + second.size() <= maxLength) return;
  // The reference's lengths: the shorter keeps what it has when the longer
  // can make up the rest, else both get half (the second the odd token).
  size_t shorter = std::min(first.size(), second.size());
  size_t longer = shorter > maxLength ? shorter : std::max(shorter, maxLength - shorter);
  if (shorter + longer > maxLength) {
    shorter = maxLength / 2;
    longer = shorter + maxLength % 2;
  }
  bool firstIsLonger = first.size() > second.size();
  first.resize(std::min(first.size(), firstIsLonger ? longer : shorter));
  second.resize(std::min(second.size(), firstIsLonger ? shorter : longer));
}

const std::string *Tokenizer::decodingToken(int32_t id, bool skipSpecialTokens) const {
  const std::string *token = nullptr;
  if (const AddedToken *added = addedVocabulary->byId(id))
    token = &added->text;
  else
    token = model->idToToken(id);
  // The reference skips by the token's string, whatever its id.
  if (token && skipSpecialTokens && addedVocabulary->isSpecialContent(*token)) return nullptr;
  return token;
}

DecodedText Tokenizer::decodeTokens(std::vector<std::string> tokens, bool atStart) const {
  if (!decoder) {
    // Without a decoder the reference joins the tokens with spaces.
    std::string text;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0 || !atStart) text += ' ';
      text += tokens[i];
    }
    return {std::move(text), true};
  }
  DecodeState state;
  state.pieces = std::move(tokens);
  state.atStart = atStart;
  decoder->decode(state);
  std::string text;
  for (const std::string &piece : state.pieces) text += piece;
  return {std::move(text), state.final};
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids, bool skipSpecialTokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids)
    if (const std::string *token = decodingToken(id, skipSpecialTokens)) tokens.push_back(*token);
  return decodeTokens(std::move(tokens), /*atStart=*/true).text;
}

std::optional<int32_t> Tokenizer::tokenToId(std::string_view token) const {
  if (std::optional<int32_t> id = addedVocabulary->idOf(token)) return id;
  return model->tokenToId(token);
}

int32_t Tokenizer::idLimit() const {
  int32_t limit = model->idLimit();
  for (const AddedToken &token : addedVocabulary->tokens()) limit = std::max(limit, token.id + 1);
  return limit;
}

} // namespace llmc::runtime::tokenizer
