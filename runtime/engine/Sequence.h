//===- Sequence.h - one sample of one request, as the engine tracks it -*- C++ -*-===//
//
// A request with n samples becomes n sequences. Until its prompt is computed
// a request is one sequence; at the first sampled token it forks the other
// n - 1, which share its prompt blocks (copy-on-write).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_SEQUENCE_H
#define LLMC_RUNTIME_ENGINE_SEQUENCE_H

#include "runtime/engine/KvCacheCoordinator.h"
#include "runtime/engine/Sampler.h"
#include "runtime/structured/Grammar.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace llmc::runtime {

using RequestId = uint64_t;

/// Why a sequence ended; None while it runs.
enum class FinishReason { None, Stop, Length, Abort };

/// OpenAI's name of the reason: "stop", "length", "abort" (empty for None).
const char *finishReasonName(FinishReason reason);

enum class SequenceStatus { Waiting, Running, Finished };

struct Sequence {
  Sequence(RequestId request, int32_t sampleIndex, uint64_t arrival, std::vector<int32_t> tokens,
           SequenceSampler sampler)
      : request(request), sampleIndex(sampleIndex), arrival(arrival), tokens(std::move(tokens)),
        promptLen(static_cast<int64_t>(this->tokens.size())), sampler(std::move(sampler)) {}

  RequestId request;
  /// Which of the request's n samples this is.
  int32_t sampleIndex;
  /// Admission order (first come, first served); samples of one request share it.
  uint64_t arrival;
  /// vLLM's request priority: under the priority policy a lower one is
  /// admitted first and preempted last.
  int64_t priority = 0;
  /// The prompt, then the generated tokens.
  std::vector<int32_t> tokens;
  int64_t promptLen;
  /// Its KV blocks in each KV cache group; blocks.numTokens() counts the
  /// tokens whose K/V are in the cache or are written by the step being built.
  SequenceKv blocks;
  SequenceSampler sampler;
  /// Where its output stands in the request's grammar; null without one.
  std::unique_ptr<structured::GrammarMatcher> grammar;
  /// Tokens proposed to follow `tokens` (speculative decoding), for the next
  /// step to verify; the engine sets them before each step.
  std::vector<int32_t> draft;
  /// Samples still to fork off when the first token is sampled (n - 1).
  int32_t pendingForks = 0;
  /// Whether the request asked for its prompt's logprobs, and the prompt
  /// positions whose logits rows have been reported so far. Until they all
  /// have (positions 0 .. promptLen - 2), each token from there on runs as a
  /// query row of its own, whose logits row gives the next token's logprob.
  bool reportsPromptLogprobs = false;
  int64_t promptRowsReported = 0;
  SequenceStatus status = SequenceStatus::Waiting;
  /// Times this sequence was preempted (its blocks freed; recomputed or
  /// swapped back in later).
  int32_t numPreemptions = 0;
  /// While swapped out: in each KV cache group, the swap slots holding its
  /// held blocks, in table order after the numReleased given back, and the
  /// block hashes; and the tokens those blocks carry.
  struct SwappedBlocks {
    struct Group {
      std::vector<int64_t> slots;
      int64_t numReleased = 0;
      std::vector<uint64_t> fullBlockHashes;
    };
    std::vector<Group> groups;
    int64_t numTokens = 0;
  };
  std::optional<SwappedBlocks> swapped;

  int64_t numOutput() const { return static_cast<int64_t>(tokens.size()) - promptLen; }
  int64_t numComputed() const { return blocks.numTokens(); }
  /// Tokens that still need a step: the next step runs tokens[numComputed()...].
  int64_t numPending() const { return static_cast<int64_t>(tokens.size()) - numComputed(); }
  /// Whether the next step must give some of its tokens a logits row each.
  bool needsPromptRows() const {
    return reportsPromptLogprobs && promptRowsReported < promptLen - 1;
  }
  /// The sequences this one stands for in max_num_seqs (its pending forks too).
  int64_t seqCount() const { return 1 + pendingForks; }
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_SEQUENCE_H
