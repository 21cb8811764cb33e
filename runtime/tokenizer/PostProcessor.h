//===- PostProcessor.h - special tokens around an encoding ------*- C++ -*-===//
#ifndef LLMC_RUNTIME_TOKENIZER_POSTPROCESSOR_H
#define LLMC_RUNTIME_TOKENIZER_POSTPROCESSOR_H

#include "runtime/tokenizer/JsonNode.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace llmc::runtime::tokenizer {

/// The encoded sequences a post-processor works on: one, or a pair (A, then
/// B) for a cross-encoder's (query, document).
using EncodedSequences = std::vector<std::vector<int32_t>>;

/// Adds the special tokens around an encoded sequence or pair (BOS/EOS
/// templates, a cross-encoder's separators): TemplateProcessing,
/// RobertaProcessing, BertProcessing, ByteLevel (which only trims offsets, so
/// it changes no ids) and Sequences of them.
class PostProcessor {
public:
  virtual ~PostProcessor() = default;
  /// Rewrites the sequences as the reference's process_encodings does: a
  /// template joins them into one, ByteLevel leaves them apart, and the
  /// caller concatenates what remains. `addSpecialTokens` false adds nothing,
  /// as the reference's add_special_tokens=False.
  virtual void process(EncodedSequences &sequences, bool addSpecialTokens) const = 0;
};

/// The post-processor `node` describes; throws Error for a type this runtime
/// does not support or a template that names an unknown special token.
std::unique_ptr<PostProcessor> parsePostProcessor(const JsonNode &node);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_POSTPROCESSOR_H
