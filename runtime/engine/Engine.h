//===- Engine.h - requests in, sampled tokens out, one step at a time -*- C++ -*-===//
//
// The synchronous core of serving: requests of token ids are added, each
// step() schedules one ragged batch (Scheduler), does the copy-on-write
// block copies, runs the model and samples every sequence whose logits are
// ready, and returns the new tokens. A request with n > 1 samples computes
// its prompt once and forks at its first token. Nothing here is
// thread-safe; AsyncEngine runs it on its own thread.
//
// Contract:
// - addRequest() refuses, with RequestError and before queuing anything, a
//   request that is malformed or could never run: an empty prompt, a token
//   outside the vocabulary, a prompt of max_model_len tokens or more, bad
//   sampling parameters.
// - Every sample of a request ends with exactly one StepOutput whose
//   finishReason is not None: Stop (a stop token, included in the output),
//   Length (max_tokens, or max_model_len reached) or Abort.
// - A sequence's tokens do not depend on the batch it runs in, on
//   preemption (it is recomputed with the same sampler state) or on prefix
//   caching. With speculative decoding, greedy tokens are those without
//   it; sampled ones follow the same distribution, but how many draft
//   tokens a step had room for changes which are drawn.
// - With speculative decoding a step may give a sample several tokens (a
//   StepOutput each, in order); a draft token's K/V stays in the cache only
//   once it is accepted.
// - A request with prompt logprobs gets them in StepOutputs of their own,
//   before its first token; each prompt token runs as a query row of the
//   step (so the rows of a step bound how many a step computes).
// - A request with a grammar samples only tokens its grammar allows, and
//   ends (Stop) when the grammar has accepted a stop token. The mask for a
//   sequence's next token is computed on another thread while the next
//   model step runs.
// - When a request ends, its blocks are free (or cached and evictable).
// - A model that returns hidden states (an embedding model, exported without
//   its LM head) or a classifier's logits serves pooling requests only, and a
//   generative model none: such a request's prompt is computed (chunked,
//   prefix-cached, preempted like any other) and ends with one StepOutput
//   carrying its last prompt token's row (vLLM's LAST pooling): the final
//   hidden state L2-normalised, or the class probabilities, unless the
//   request says not to.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_ENGINE_H
#define LLMC_RUNTIME_ENGINE_ENGINE_H

#include "runtime/core/Error.h"
#include "runtime/core/KvSwapSpace.h"
#include "runtime/core/Model.h"
#include "runtime/engine/BlockManager.h"
#include "runtime/engine/NgramProposer.h"
#include "runtime/engine/Sampler.h"
#include "runtime/engine/Scheduler.h"
#include "runtime/engine/Sequence.h"
#include "runtime/lora/LoraAdapter.h"
#include "runtime/structured/Grammar.h"

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace llmc::runtime {

/// A request the engine refuses (the caller's fault: HTTP 400, not 500).
class RequestError : public Error {
public:
  using Error::Error;
};

struct EngineConfig {
  /// Sequences per step; 0 = the artifact's max_num_seqs.
  int64_t maxNumSeqs = 0;
  /// Tokens per step; 0 = the artifact's max_num_batched_tokens.
  int64_t maxNumBatchedTokens = 0;
  /// Longest sequence, prompt and output; 0 = the model's max positions,
  /// capped by what the KV cache holds.
  int64_t maxModelLen = 0;
  bool enablePrefixCaching = true;
  /// Host memory for the blocks of preempted sequences (vLLM's swap_space);
  /// 0: preemption always recomputes.
  int64_t swapSpaceBytes = 0;
  /// Seeds the samplers of requests that carry no seed (mixed with the id).
  uint64_t seed = 0;
  /// Draft tokens by prompt lookup, verified in the step (off by default).
  SpeculativeConfig speculative;
  /// vLLM's scheduling_policy: first come, first served, or by request priority.
  SchedulingPolicy schedulingPolicy = SchedulingPolicy::Fcfs;
};

/// vLLM's PoolingParams: what a pooling request (an embedding model's, a
/// classifier's) asks for.
struct PoolingParams {
  /// Scale the embedding to unit L2 norm (vLLM's default for embed).
  bool normalize = true;
  /// Turn a classifier's logits into probabilities: a softmax over the
  /// labels, or a sigmoid of a single one (vLLM's default for classify).
  bool activation = true;
  /// A Matryoshka embedding model's embedding cut to its first this many
  /// features (before normalize); nullopt: all of them.
  std::optional<int64_t> dimensions;
};

struct RequestOptions {
  SamplingParams sampling;
  /// Tokens to generate per sample at most (>= 1).
  int64_t maxTokens = 16;
  /// A sample ends after one of these (which is part of its output).
  std::vector<int32_t> stopTokenIds;
  /// Parallel samples of the prompt.
  int32_t n = 1;
  /// Constrains every sample's output (structured outputs); null: none.
  std::shared_ptr<const structured::CompiledGrammar> grammar;
  /// vLLM's prompt_logprobs: report each prompt token's logprob given the
  /// tokens before it, with this many most likely alternatives (up to
  /// kMaxLogprobs); nullopt: none. The prompt is then computed whole, without
  /// the prefix cache.
  std::optional<int32_t> promptLogprobs;
  /// vLLM's priority (lower runs first); only under the priority policy.
  int64_t priority = 0;
  /// Set for every request to a model that pools (Model::pools(); for none
  /// to a generative one): the request embeds or classifies its prompt.
  std::optional<PoolingParams> pooling;
  /// The LoRA adapter every token of the request runs with (vLLM's
  /// lora_request), loaded for this model's sites; null: the base model.
  /// Its prefix cache entries are its own.
  std::shared_ptr<const LoraAdapter> lora;
};

/// What one step produced for one sample: a new token, an end, or both; or,
/// for a request that asked for them, the logprobs of some of its prompt's
/// tokens (index 0, no token, no finish reason).
struct StepOutput {
  RequestId request;
  int32_t index;
  std::optional<SampledToken> token;
  FinishReason finishReason = FinishReason::None;
  /// Prompt tokens under the model's distribution given the tokens before
  /// them, in prompt order across a request's outputs: the first entry is
  /// prompt token 1's (token 0 has no logprob), and every later token's
  /// comes, before the first sampled token.
  std::vector<SampledToken> promptLogprobs;
  /// A pooling request's result, in its one output: the embedding
  /// (hidden_size values) or the class probabilities (num_labels; the
  /// logits without PoolingParams::activation).
  std::vector<float> pooled;
};

struct EngineStats {
  int64_t numSteps = 0;
  /// Tokens run through the model, and of those the prompt tokens (a
  /// recomputed prompt counts again) and the generated ones recomputed
  /// after a preemption.
  int64_t computedTokens = 0;
  int64_t promptTokensComputed = 0;
  /// Prompt tokens whose K/V came from the prefix cache instead.
  int64_t cachedPromptTokens = 0;
  int64_t generatedTokens = 0;
  int64_t numPreemptions = 0;
  /// Of those, the ones whose blocks were swapped out (the rest recompute),
  /// the blocks swapped out and in, and the swap slots in use and in all.
  int64_t numSwapPreemptions = 0;
  int64_t numBlocksSwappedOut = 0;
  int64_t numBlocksSwappedIn = 0;
  int64_t numSwapSlotsUsed = 0;
  int64_t numSwapSlots = 0;
  PrefixCacheStats prefixCache;
  int64_t numRunning = 0;
  int64_t numWaiting = 0;
  int64_t numKvBlocks = 0;
  int64_t numKvBlocksHeld = 0;
  /// Wall-clock time in step(), split by whether the step carried prompt
  /// tokens, and the tokens the steps that did not computed (draft tokens
  /// included).
  double prefillStepSeconds = 0;
  double decodeStepSeconds = 0;
  int64_t decodeStepTokens = 0;
  /// Grammar masks computed, the time computing them (on any thread) and the
  /// time step() waited for the ones computed beside the model step.
  int64_t grammarMasks = 0;
  double grammarMaskSeconds = 0;
  double grammarWaitSeconds = 0;
  /// Speculative decoding: draft tokens the steps verified, and of those
  /// the ones accepted (each saved a step of its sequence).
  int64_t draftTokens = 0;
  int64_t acceptedDraftTokens = 0;
};

class Engine {
public:
  /// Throws Error when the config exceeds what the artifact was compiled for.
  Engine(Model &model, const EngineConfig &config);
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  /// The limits in force (the config with its defaults filled in).
  int64_t maxNumSeqs() const { return scheduler.limits().maxNumSeqs; }
  int64_t maxNumBatchedTokens() const { return scheduler.limits().maxNumBatchedTokens; }
  int64_t maxModelLen() const { return modelLen; }

  /// Queues a request; see the contract above for what it refuses. The id
  /// must not be one of an unfinished request.
  void addRequest(RequestId id, std::vector<int32_t> prompt, const RequestOptions &options);
  /// Ends every sample of the request now and frees its blocks; returns
  /// their Abort outputs (none when the id is unknown or finished).
  std::vector<StepOutput> abort(RequestId id);

  /// One model step; empty when there is nothing to run. When the model
  /// fails, every request is dropped (blocks freed) and the Error rethrown.
  std::vector<StepOutput> step();

  bool hasUnfinished() const { return !requests.empty(); }
  /// Whether the request is queued or running (not finished, not aborted).
  bool hasRequest(RequestId id) const { return requests.count(id) != 0; }
  EngineStats stats() const;
  const BlockManager &blockManager() const { return blocks; }

private:
  struct Request {
    RequestOptions options;
    /// The seed sample 0 draws with; sample i uses seed + i.
    uint64_t seed;
    std::vector<std::unique_ptr<Sequence>> samples;
    int32_t numFinished = 0;
  };

  void validate(const std::vector<int32_t> &prompt, const RequestOptions &options) const;
  /// Sets every running sequence's draft for the next step (empty where it
  /// does not speculate).
  void proposeDrafts();
  /// The batch arrays of a schedule. A chunk with a draft runs as one
  /// sequence per draft token after its own, each with its logits row; a
  /// row-per-token chunk as one sequence per token.
  StepBatchArrays buildBatch(const SchedulerOutput &plan) const;
  /// Creates the request's other samples at its first token.
  void forkSamples(Request &request, Sequence &parent);
  /// Whether every sequence that samples in `plan` takes the argmax of its
  /// logits row alone (greedy, no penalties, logprobs, grammar or draft) and
  /// no chunk reports prompt logprobs, so
  /// that the step may bring back token ids instead (Model::stepGreedy).
  bool picksArgmaxOnly(const SchedulerOutput &plan) const;
  /// A sample to draw from a step's logits row.
  struct Draw {
    Request *request;
    Sequence *sequence;
    /// Null where the step brought back tokens (a greedy step).
    const float *logits;
    /// Drawn beside the others (or picked by a greedy step), for a
    /// sequence without a grammar.
    std::optional<SampledToken> token;
  };
  /// Draws the tokens of the draws without a grammar or a token over the model's
  /// threads: each sequence's sampler (its random generator, its counts)
  /// is its own, so the tokens are those of a draw one after the other.
  void drawTokens(std::vector<Draw> &draws);
  /// Takes the next token of a draw (drawing it now for a grammar's
  /// sequence) and ends the sequence when it must; appends the output.
  void sampleNext(Draw &draw, std::vector<StepOutput> &outputs);
  /// The prompt logprobs a row-per-token chunk's logits `rows` give, as an
  /// output (none when they are all reported already).
  void reportPromptLogprobs(const ScheduledChunk &chunk, const float *rows,
                            std::vector<StepOutput> &outputs);
  /// Samples a chunk's rows against its draft, from `rows` (one per draft
  /// token and one after): tokens up to the first that differs from the
  /// draft, which is the last; keeps the accepted draft tokens' K/V.
  void verifyDraft(const ScheduledChunk &chunk, const float *rows,
                   std::vector<StepOutput> &outputs);
  /// A pooling request's output: the row of its last prompt token (a final
  /// hidden state, normalised as it asks, or a classifier's logits, as
  /// probabilities unless it asks not); ends its sequence.
  StepOutput pool(const Request &request, Sequence &sequence, const float *row);
  /// Refuses (RequestError) a Matryoshka width the model does not serve.
  void checkDimensions(int64_t dimensions) const;
  /// Ends a sample (its output carries the reason); the request goes when
  /// all its samples have.
  void finish(Sequence &sequence);
  void dropAll();
  /// Starts computing the next-token masks of `matchers` on another thread.
  void startMasks(std::vector<structured::GrammarMatcher *> matchers);
  /// Waits for the masks startMasks() began; before anything reads a mask or
  /// frees a sequence.
  void waitForMasks();

  /// Does the plan's swaps and copy-on-write copies, in the order
  /// SchedulerOutput gives.
  void moveBlocks(const SchedulerOutput &plan);

  Model &model;
  BlockManager blocks;
  std::unique_ptr<KvSwapSpace> swapSpace; // null without swap space
  Scheduler scheduler;
  int64_t modelLen;
  uint64_t defaultSeed;
  SpeculativeConfig speculative;
  uint64_t nextArrival = 0;
  std::unordered_map<RequestId, Request> requests;
  std::vector<float> logits;
  /// A greedy step's tokens, one per sequence (Model::stepGreedy).
  std::vector<int32_t> greedyTokens;
  /// A logits row with a grammar's mask applied.
  std::vector<float> maskedRow;
  /// The matchers that need a mask before the next step samples them.
  std::vector<structured::GrammarMatcher *> nextMasks;
  /// The masks being computed beside the model step; yields their seconds.
  std::future<double> pendingMasks;
  EngineStats counters;
};

/// The samples' tokens of one request, generated to the end.
using Completion = std::vector<std::vector<int32_t>>;

/// Adds each prompt as a request (ids 0, 1, ... in order, which must be free)
/// and steps until all have finished, handing every output to `onOutput` (if
/// set) as it comes. Returns the generated tokens of each request's samples.
std::vector<Completion> runToCompletion(Engine &engine,
                                        const std::vector<std::vector<int32_t>> &prompts,
                                        const RequestOptions &options,
                                        const std::function<void(const StepOutput &)> &onOutput = {});

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_ENGINE_H
