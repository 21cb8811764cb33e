//===- PostProcessor.h - special tokens around an encoding ------*- C++ -*-===//
#ifndef LLMC_RUNTIME_TOKENIZER_POSTPROCESSOR_H
#define LLMC_RUNTIME_TOKENIZER_POSTPROCESSOR_H

#include "runtime/tokenizer/JsonNode.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace llmc::runtime::tokenizer {

/// Adds the special tokens around one encoded sequence (BOS/EOS templates):
/// TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel (which
/// only trims offsets, so it changes no ids) and Sequences of them.
class PostProcessor {
public:
  virtual ~PostProcessor() = default;
  /// Rewrites the ids of a sequence; `addSpecialTokens` false leaves them
  /// as they are, as the reference's add_special_tokens=False does.
  virtual void process(std::vector<int32_t> &ids, bool addSpecialTokens) const = 0;
};

/// The post-processor `node` describes; throws Error for a type this runtime
/// does not support or a template that names an unknown special token.
std::unique_ptr<PostProcessor> parsePostProcessor(const JsonNode &node);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_POSTPROCESSOR_H
