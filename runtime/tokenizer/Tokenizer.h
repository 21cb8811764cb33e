//===- Tokenizer.h - Hugging Face tokenizer.json in C++ ---------*- C++ -*-===//
//
// Encodes text to token ids and decodes them back exactly as the Hugging Face
// `tokenizers` library does with the same tokenizer.json: byte-level BPE
// (GPT-2, Llama-3, Qwen2, SmolLM2) and SentencePiece-style BPE with byte
// fallback (Llama-2, Mistral), with their added tokens, normalizers,
// pre-tokenizers, post-processors and decoders (docs/tokenizer.md lists
// them). Whatever a tokenizer.json holds that this does not support is an
// Error when it loads, never a silent difference.
//
// A Tokenizer is immutable once loaded; encode and decode may run on several
// threads at once.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENIZER_TOKENIZER_H
#define LLMC_RUNTIME_TOKENIZER_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmc::runtime::tokenizer {

class AddedVocabulary;
class BpeModel;
class Decoder;
class Normalizer;
class PostProcessor;
class PreTokenizer;

/// Text decoded from some tokens; `final` when the text of later tokens
/// continues it exactly (see Decoder.h).
struct DecodedText {
  std::string text;
  bool final;
};

class Tokenizer {
public:
  /// Loads a tokenizer.json; throws Error naming the file and the field.
  static std::unique_ptr<Tokenizer> fromFile(const std::string &path);
  /// Loads tokenizer.json text; `source` names it in errors.
  static std::unique_ptr<Tokenizer> fromJson(std::string_view json, const std::string &source);
  ~Tokenizer();

  /// The ids of `text`, which must be well-formed UTF-8 (else Error);
  /// `addSpecialTokens` applies the post-processor's template (BOS, ...).
  /// With `maxLength` the text's ids are cut on the right to fit it with the
  /// template's, as the reference's truncation does; a `maxLength` below the
  /// template's own tokens is an Error.
  std::vector<int32_t> encode(std::string_view text, bool addSpecialTokens = true,
                              std::optional<size_t> maxLength = std::nullopt) const;

  /// The ids of a pair of texts (a cross-encoder's query and document), as
  /// the reference's encode(text, pair): each encoded alone, then joined by
  /// the post-processor's pair template (or concatenated). With `maxLength`
  /// the two are first cut to fit it with the template's tokens, as the
  /// reference's truncation "longest_first" on the right does; a `maxLength`
  /// below the template's own tokens is an Error.
  std::vector<int32_t> encodePair(std::string_view text, std::string_view pair,
                                  bool addSpecialTokens = true,
                                  std::optional<size_t> maxLength = std::nullopt) const;

  /// The text of `ids`; ids the vocabulary lacks are left out, as are
  /// special tokens when `skipSpecialTokens`.
  std::string decode(const std::vector<int32_t> &ids, bool skipSpecialTokens = true) const;

  /// The id of a token string (an added token's content or a model token).
  std::optional<int32_t> tokenToId(std::string_view token) const;
  /// The string decoding starts from for `id`, or null when decoding leaves
  /// it out (an unknown id, or a special token when `skipSpecialTokens`).
  const std::string *decodingToken(int32_t id, bool skipSpecialTokens) const;
  /// Runs the decoder over token strings; `atStart` false when they continue
  /// text decoded before.
  DecodedText decodeTokens(std::vector<std::string> tokens, bool atStart) const;

  /// One past the largest id of the model and the added tokens.
  int32_t idLimit() const;

private:
  Tokenizer();
  /// The ids of one text before the post-processor.
  std::vector<int32_t> encodeSequence(std::string_view text) const;
  /// Runs the post-processor and concatenates what it leaves.
  std::vector<int32_t> postProcess(std::vector<std::vector<int32_t>> sequences,
                                   bool addSpecialTokens) const;
  /// How many ids the template adds around `numSequences` (1 or 2) texts.
  size_t numSpecialTokens(size_t numSequences) const;
  /// The room `maxLength` leaves for the texts' own ids (throws Error when
  /// the template alone is longer).
  size_t roomForText(size_t maxLength, size_t numSequences, bool addSpecialTokens) const;

  std::unique_ptr<BpeModel> model;
  std::unique_ptr<AddedVocabulary> addedVocabulary;
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> preTokenizer;
  std::unique_ptr<PostProcessor> postProcessor;
  std::unique_ptr<Decoder> decoder;
};

/// Cuts a pair to `maxLength` ids in all, keeping each one's first ids, as
/// the reference's truncation "longest_first" does.
void truncateLongestFirst(std::vector<int32_t> &first, std::vector<int32_t> &second,
                          size_t maxLength);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_TOKENIZER_H
