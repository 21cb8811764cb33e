//===- Scoring.h - vLLM's score task over a model that pools ----*- C++ -*-===//
//
// /score, /rerank and LLM.score rate texts against texts (a query against
// documents) with a model that pools, as vLLM's score task does:
// - a cross-encoder (a sequence classifier of one label: a reranker) reads
//   each pair as one prompt, the tokenizer's encode(text_1, text_2), and the
//   pair's score is its label's probability (the sigmoid of its logit; the
//   logit itself without activation);
// - an embedding model embeds every text alone, and a pair's score is the
//   cosine of the two embeddings.
// A plan holds the prompts to pool; the caller pools them through an engine
// and hands the rows back to scorePairs.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_SCORING_H
#define LLMC_RUNTIME_ENGINE_SCORING_H

#include "runtime/engine/Engine.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llmc::runtime {

namespace tokenizer {
class Tokenizer;
}

enum class ScoringMethod { CrossEncoder, EmbeddingSimilarity };

/// How `model` scores pairs; throws RequestError saying what it does
/// instead when it cannot (it generates text, or classifies into several
/// labels).
ScoringMethod scoringMethodOf(const Model &model);

struct ScoringPlan {
  ScoringMethod method;
  /// The prompts to pool, each alone.
  std::vector<std::vector<int32_t>> prompts;
  /// For each pair, the prompts whose rows make its score: the same one
  /// twice for a cross-encoder, one per text for embeddings.
  std::vector<std::pair<size_t, size_t>> pairPrompts;

  /// The pooling every prompt asks for: a cross-encoder's sigmoid unless
  /// `activation` is false; embeddings at unit norm.
  PoolingParams pooling(bool activation) const;
  /// The prompt tokens pair `pair` read (what usage counts): its prompt, or
  /// both texts'.
  int64_t pairTokens(size_t pair) const;
};

/// Plans scoring `texts1` against `texts2`: pairwise (1:1, N:N) or the one
/// text against each (1:N). With `maxTokens` every prompt is cut on the
/// right to that many tokens, as the reference tokenizer's truncation does
/// (a pair longest first). Throws RequestError for other counts, no texts,
/// text that is not UTF-8 or a `maxTokens` below the template's tokens.
ScoringPlan planScoring(ScoringMethod method, const tokenizer::Tokenizer &tokenizer,
                        const std::vector<std::string> &texts1,
                        const std::vector<std::string> &texts2,
                        std::optional<size_t> maxTokens);

/// Each pair's score from `rows`, the pooled rows of plan.prompts in order.
std::vector<double> scorePairs(const ScoringPlan &plan,
                               const std::vector<std::vector<float>> &rows);

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_SCORING_H
