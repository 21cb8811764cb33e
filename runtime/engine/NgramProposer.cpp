//===- NgramProposer.cpp - draft tokens from the sequence itself ----------===//
#include "runtime/engine/NgramProposer.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <string>

namespace llmc::runtime {

void SpeculativeConfig::validate() const {
  if (numSpeculativeTokens < 0)
    throw Error("num_speculative_tokens must not be negative, got " +
                std::to_string(numSpeculativeTokens));
  if (promptLookupMin < 1)
    throw Error("prompt_lookup_min must be at least 1, got " + std::to_string(promptLookupMin));
  if (promptLookupMax < promptLookupMin)
    throw Error("prompt_lookup_max (" + std::to_string(promptLookupMax) +
                ") must be at least prompt_lookup_min (" + std::to_string(promptLookupMin) + ")");
}

std::vector<int32_t> proposeNgramDraft(const std::vector<int32_t> &tokens,
                                       const SpeculativeConfig &config, int64_t maxTokens) {
  int64_t length = static_cast<int64_t>(tokens.size());
  if (maxTokens <= 0) return {};
  for (int64_t n = std::min(config.promptLookupMax, length - 1); n >= config.promptLookupMin;
       --n) {
    const int32_t *suffix = tokens.data() + length - n;
    // The most recent occurrence before the suffix itself (the two may
    // overlap): at least one known token follows it.
    for (int64_t start = length - n - 1; start >= 0; --start) {
      if (!std::equal(suffix, suffix + n, tokens.data() + start)) continue;
      // Copied as LZ77 copies: a copy that reaches the sequence's end goes
      // on with its own first tokens, so a repeating span repeats on.
      std::vector<int32_t> draft;
      for (int64_t from = start + n; static_cast<int64_t>(draft.size()) < maxTokens; ++from)
        draft.push_back(from < length ? tokens[from] : draft[from - length]);
      return draft;
    }
  }
  return {};
}

} // namespace llmc::runtime
