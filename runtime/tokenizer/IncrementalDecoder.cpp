//===- IncrementalDecoder.cpp - detokenization for streaming --------------===//
#include "runtime/tokenizer/IncrementalDecoder.h"

#include "runtime/tokenizer/Tokenizer.h"

namespace llmc::runtime::tokenizer {

std::string IncrementalDecoder::add(int32_t id) {
  const std::string *token = tokenizer.decodingToken(id, skipSpecialTokens);
  if (!token) return std::string();
  pending.push_back(*token);
  // Decoding the pending tokens costs their number; they are released, and
  // forgotten, as soon as their text is final, usually at once.
  DecodedText decoded = tokenizer.decodeTokens(pending, atStart);
  if (!decoded.final) return std::string();
  pending.clear();
  atStart = false;
  return std::move(decoded.text);
}

std::string IncrementalDecoder::finish() {
  if (pending.empty()) return std::string();
  DecodedText decoded = tokenizer.decodeTokens(std::move(pending), atStart);
  pending.clear();
  atStart = false;
  return std::move(decoded.text);
}

} // namespace llmc::runtime::tokenizer
