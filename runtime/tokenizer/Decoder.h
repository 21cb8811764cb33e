//===- Decoder.h - token strings back to text -------------------*- C++ -*-===//
//
// The decoders of tokenizer.json (ByteLevel, Metaspace, ByteFallback, Fuse,
// Strip, Replace, Sequence) turn the token strings of some ids into text, as
// the reference's decode_chain does. For streaming they also say whether the
// text of a run of tokens is final: whether it may be emitted, and the next
// tokens decoded on their own, with the concatenation equal to decoding all
// tokens at once.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENIZER_DECODER_H
#define LLMC_RUNTIME_TOKENIZER_DECODER_H

#include "runtime/tokenizer/JsonNode.h"

#include <memory>
#include <string>
#include <vector>

namespace llmc::runtime::tokenizer {

/// Token strings on their way to text.
struct DecodeState {
  std::vector<std::string> pieces;
  /// Whether the pieces start the text (the first token of the whole decode),
  /// or continue text decoded before.
  bool atStart = true;
  /// Whether an earlier step joined the pieces into one (Fuse, ByteLevel).
  bool fused = false;
  /// Whether the text is final: decoding the next tokens on their own
  /// (atStart false) continues it exactly.
  bool final = true;
};

class Decoder {
public:
  virtual ~Decoder() = default;
  virtual void decode(DecodeState &state) const = 0;
};

/// The decoder `node` describes; throws Error for a type this runtime does
/// not support.
std::unique_ptr<Decoder> parseDecoder(const JsonNode &node);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_DECODER_H
