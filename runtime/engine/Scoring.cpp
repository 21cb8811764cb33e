//===- Scoring.cpp - vLLM's score task over a model that pools ------------===//
#include "runtime/engine/Scoring.h"

#include "runtime/tokenizer/Tokenizer.h"

#include <algorithm>
#include <cmath>

namespace llmc::runtime {

ScoringMethod scoringMethodOf(const Model &model) {
  if (model.outputsHiddenStates()) return ScoringMethod::EmbeddingSimilarity;
  if (model.outputsClassLogits() && model.outputSize() == 1) return ScoringMethod::CrossEncoder;
  std::string what = model.outputsClassLogits()
                         ? "a classifier of " + std::to_string(model.outputSize()) +
                               " labels, whose probabilities /classify gives"
                         : std::string("a generative model");
  throw RequestError("scoring needs a cross-encoder (a sequence classifier of one label, as "
                     "rerankers are) or an embedding model; this is " +
                     what);
}

PoolingParams ScoringPlan::pooling(bool activation) const {
  PoolingParams params;
  params.normalize = true;
  params.activation = method == ScoringMethod::CrossEncoder && activation;
  return params;
}

int64_t ScoringPlan::pairTokens(size_t pair) const {
  auto [first, second] = pairPrompts.at(pair);
  int64_t tokens = static_cast<int64_t>(prompts[first].size());
  if (second != first) tokens += static_cast<int64_t>(prompts[second].size());
  return tokens;
}

ScoringPlan planScoring(ScoringMethod method, const tokenizer::Tokenizer &tokenizer,
                        const std::vector<std::string> &texts1,
                        const std::vector<std::string> &texts2,
                        std::optional<size_t> maxTokens) {
  if (texts1.empty()) throw RequestError("scoring needs at least one text to score against");
  if (texts2.empty()) throw RequestError("scoring needs at least one text to score");
  if (texts1.size() > 1 && texts1.size() != texts2.size())
    throw RequestError("scoring pairs 1:1, 1:N or N:N texts, not " +
                       std::to_string(texts1.size()) + ":" + std::to_string(texts2.size()));
  auto first = [&](size_t pair) -> const std::string & {
    return texts1[texts1.size() == 1 ? 0 : pair];
  };
  ScoringPlan plan{method, {}, {}};
  try {
    if (method == ScoringMethod::CrossEncoder) {
      for (size_t pair = 0; pair < texts2.size(); ++pair) {
        plan.prompts.push_back(tokenizer.encodePair(first(pair), texts2[pair], true, maxTokens));
        plan.pairPrompts.emplace_back(pair, pair);
      }
      return plan;
    }
    // Each text of texts1 is embedded once, however many texts it meets.
    for (const std::string &text : texts1)
      plan.prompts.push_back(tokenizer.encode(text, true, maxTokens));
    for (size_t pair = 0; pair < texts2.size(); ++pair) {
      plan.pairPrompts.emplace_back(texts1.size() == 1 ? 0 : pair, plan.prompts.size());
      plan.prompts.push_back(tokenizer.encode(texts2[pair], true, maxTokens));
    }
  } catch (const RequestError &) {
    throw;
  } catch (const Error &error) {
    throw RequestError(error.what());
  }
  return plan;
}

namespace {
/// torch's cosine_similarity: the dot product over the product of the norms,
/// that product held above 1e-8 so that a zero vector scores 0.
double cosineSimilarity(const std::vector<float> &a, const std::vector<float> &b) {
  double dot = 0, normA = 0, normB = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double(a[i]) * b[i];
    normA += double(a[i]) * a[i];
    normB += double(b[i]) * b[i];
  }
  return dot / std::max(std::sqrt(normA) * std::sqrt(normB), 1e-8);
}
} // namespace

std::vector<double> scorePairs(const ScoringPlan &plan,
                               const std::vector<std::vector<float>> &rows) {
  if (rows.size() != plan.prompts.size())
    throw Error("scoring expected " + std::to_string(plan.prompts.size()) + " pooled rows, got " +
                std::to_string(rows.size()));
  std::vector<double> scores;
  for (auto [first, second] : plan.pairPrompts) {
    const std::vector<float> &a = rows[first], &b = rows[second];
    if (plan.method == ScoringMethod::CrossEncoder) {
      if (a.size() != 1) throw Error("a cross-encoder's row must hold one score");
      scores.push_back(a[0]);
    } else {
      if (a.size() != b.size()) throw Error("embeddings of different widths cannot be compared");
      scores.push_back(cosineSimilarity(a, b));
    }
  }
  return scores;
}

} // namespace llmc::runtime
