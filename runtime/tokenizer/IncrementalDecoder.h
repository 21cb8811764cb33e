//===- IncrementalDecoder.h - detokenization for streaming ------*- C++ -*-===//
//
// Turns generated ids into text as they come. Text is released only once it
// is final: a character still missing bytes, a run of byte-fallback tokens
// that the next token could make ill-formed, or text a later token could
// still change, is held back. The concatenation of everything released
// (add() calls, then finish()) equals Tokenizer::decode of all the ids.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENIZER_INCREMENTALDECODER_H
#define LLMC_RUNTIME_TOKENIZER_INCREMENTALDECODER_H

#include <cstdint>
#include <string>
#include <vector>

namespace llmc::runtime::tokenizer {

class Tokenizer;

class IncrementalDecoder {
public:
  /// The tokenizer must outlive the decoder.
  explicit IncrementalDecoder(const Tokenizer &tokenizer, bool skipSpecialTokens = true)
      : tokenizer(tokenizer), skipSpecialTokens(skipSpecialTokens) {}

  /// Adds the next id; returns the text that became final (often empty).
  std::string add(int32_t id);
  /// Ends the stream: returns the text still held back.
  std::string finish();

private:
  const Tokenizer &tokenizer;
  bool skipSpecialTokens;
  /// Token strings since the last released text; decoded together.
  std::vector<std::string> pending;
  /// Whether nothing was released yet (the pending tokens start the text).
  bool atStart = true;
};

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_INCREMENTALDECODER_H
