//===- NgramProposer.h - draft tokens from the sequence itself --*- C++ -*-===//
//
// Speculative decoding by prompt lookup (vLLM's "ngram" method, llama.cpp's
// lookup decoding): where the last n tokens of a sequence occurred before in
// its prompt or output, the tokens that followed them then are proposed as
// the next ones. The model verifies every proposal in one step, so a draft
// costs one step's weight reads however many of its tokens are accepted:
// output that copies from its context (edits, extraction, code) decodes
// several tokens a step.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_NGRAMPROPOSER_H
#define LLMC_RUNTIME_ENGINE_NGRAMPROPOSER_H

#include <cstdint>
#include <vector>

namespace llmc::runtime {

struct SpeculativeConfig {
  /// Draft tokens proposed per sequence and step at most; 0 turns speculation off.
  int64_t numSpeculativeTokens = 0;
  /// The longest and shortest suffix looked up (longer ones are tried first).
  int64_t promptLookupMax = 4;
  int64_t promptLookupMin = 2;

  bool enabled() const { return numSpeculativeTokens > 0; }
  /// Throws Error naming the first field out of range.
  void validate() const;
};

/// `maxTokens` tokens that followed the most recent earlier occurrence of the
/// longest suffix of `tokens` (from config.promptLookupMax tokens down to
/// config.promptLookupMin) that occurred before, the span after it repeated
/// where it runs out; none when no suffix occurred before.
std::vector<int32_t> proposeNgramDraft(const std::vector<int32_t> &tokens,
                                       const SpeculativeConfig &config, int64_t maxTokens);

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_NGRAMPROPOSER_H
