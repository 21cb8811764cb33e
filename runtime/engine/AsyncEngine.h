//===- AsyncEngine.h - the engine on its own threads, fed by many callers -*- C++ -*-===//
//
// Serving runs three threads joined by bounded queues, so that the model
// step never waits for text work:
//
//   submit() --> [tokenizer thread] --> [engine thread: Engine::step() loop] --> [output thread]
//                 encodes text prompts    adds, aborts, steps                  detokenizes,
//                                                                               calls back
//
// Any thread may submit() and abort(). Each request's callback runs on the
// output thread, in order, one StreamEvent per new token of each sample
// (after those of its prompt logprobs, when it asked for them); the
// last event of a sample has its finishReason set, or `error` for a request
// that failed as a whole (rejected, or the model failed). Stop strings are
// matched on the output thread, on the detokenized text: a sample that meets
// one ends there (FinishReason::Stop), and when all of a request's samples
// have ended its blocks are freed.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_ASYNCENGINE_H
#define LLMC_RUNTIME_ENGINE_ASYNCENGINE_H

#include "runtime/engine/BoundedQueue.h"
#include "runtime/engine/Engine.h"
#include "runtime/engine/StopStrings.h"

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace llmc::runtime {
namespace tokenizer {
class Tokenizer;
class IncrementalDecoder;
} // namespace tokenizer

/// What a request's callback receives.
struct StreamEvent {
  RequestId request = 0;
  /// The sample (0 for a request-wide error).
  int32_t index = 0;
  std::optional<SampledToken> token;
  /// Prompt logprobs (RequestOptions::promptLogprobs), on events of their
  /// own before the first token's: see StepOutput::promptLogprobs.
  std::vector<SampledToken> promptLogprobs;
  /// A pooling request's result, on its one event (StepOutput::pooled).
  std::vector<float> pooled;
  /// The text the token completes (incremental: never half a character),
  /// when the request asked for text; the rest of the text on the last event.
  std::string text;
  /// Set on a sample's last event.
  FinishReason finishReason = FinishReason::None;
  /// The stop string that ended the sample (not part of `text`).
  std::optional<std::string> stopString;
  /// The prompt's length in tokens (0 on a rejection).
  int64_t numPromptTokens = 0;
  /// The prompt's tokens as the engine runs them (tokenized, truncated), on
  /// the request's first event when AsyncRequest::returnPromptTokenIds.
  std::vector<int32_t> promptTokenIds;
  /// Non-empty on a request's only event when it failed as a whole;
  /// `rejected` tells the caller's fault (a bad request) from the engine's.
  std::string error;
  bool rejected = false;

  bool last() const { return finishReason != FinishReason::None || !error.empty(); }
};

using StreamCallback = std::function<void(const StreamEvent &)>;

struct AsyncRequest {
  /// A text prompt, encoded on the tokenizer thread ...
  std::optional<std::string> text;
  /// ... or token ids.
  std::vector<int32_t> promptIds;
  /// Whether encoding `text` adds the tokenizer's special tokens (a BOS, as
  /// its post-processor says); a chat template writes its own.
  bool addSpecialTokens = true;
  /// Keep only the prompt's last this many tokens (vLLM's
  /// truncate_prompt_tokens); 0 keeps them all.
  int64_t truncatePromptTokens = 0;
  RequestOptions options;
  /// Give each event the text of its token (needs the tokenizer)...
  bool detokenize = false;
  /// ... without the text of special tokens (vLLM's skip_special_tokens).
  bool skipSpecialTokens = true;
  /// Each sample ends before the first of these in its text (needs
  /// `detokenize`).
  std::vector<std::string> stopStrings;
  /// Give the request's first event the prompt's token ids (an echo).
  bool returnPromptTokenIds = false;
  StreamCallback onEvent;
};

/// submit() refuses a request beyond AsyncEngineConfig::maxPendingRequests
/// (HTTP 429), or after shutdown.
class QueueFullError : public Error {
public:
  using Error::Error;
};

struct AsyncEngineConfig {
  EngineConfig engine;
  /// Requests submitted and not finished, at most.
  size_t maxPendingRequests = 4096;
  /// Step results waiting for the output thread, at most.
  size_t outputQueueSteps = 1024;
  /// Called on the output thread after the events of one engine step (or of
  /// one batch of refusals and aborts) have all been delivered, so that a
  /// consumer gathering events from many requests wakes once per step rather
  /// than once per event.
  std::function<void()> onStepDelivered;
};

/// A snapshot of the engine's counters after its latest step.
struct AsyncEngineStats {
  EngineStats engine;
  /// Requests submitted and not finished (queued for tokenization included).
  int64_t numPendingRequests = 0;
};

class AsyncEngine {
public:
  /// `tokenizer` may be null when every request gives token ids and no text.
  /// The model and the tokenizer must outlive the engine.
  AsyncEngine(Model &model, const tokenizer::Tokenizer *tokenizer, const AsyncEngineConfig &config);
  /// shutdown(false).
  ~AsyncEngine();
  AsyncEngine(const AsyncEngine &) = delete;
  AsyncEngine &operator=(const AsyncEngine &) = delete;

  /// Queues a request and returns its id; throws QueueFullError (nothing
  /// queued) when too many are pending or the engine is shutting down.
  RequestId submit(AsyncRequest request);
  /// Queues the requests as one: the engine adds them all before its next
  /// step, so they are scheduled as if they had come at once (an offline
  /// batch, the prompts of one API call). All or none: a refusal of any
  /// (RequestError, QueueFullError) queues none. Their ids, in order.
  std::vector<RequestId> submit(std::vector<AsyncRequest> requests);
  /// Ends a request now (its samples end with FinishReason::Abort and their
  /// blocks are freed); nothing for an id that is not pending.
  void abort(RequestId id);
  /// Stops taking requests, finishes (drain) or aborts the pending ones,
  /// waits for their last events, and stops the threads. Idempotent.
  void shutdown(bool drain);

  AsyncEngineStats stats() const;
  /// The limits the engine runs under (fixed when it is made, so any
  /// thread may read them).
  int64_t maxModelLen() const { return engine->maxModelLen(); }
  int64_t maxNumSeqs() const { return engine->maxNumSeqs(); }

private:
  /// The requests of one submit() call, in order.
  using Submission = std::vector<std::pair<RequestId, AsyncRequest>>;
  struct AddCommand {
    RequestId id;
    std::vector<int32_t> prompt;
    RequestOptions options;
    std::string error; // the tokenizer's, when encoding failed
  };
  /// One submission's requests, added to the engine together.
  using AddCommands = std::vector<AddCommand>;
  struct AbortCommand {
    RequestId id;
  };
  struct StopCommand {};
  using Command = std::variant<AddCommands, AbortCommand, StopCommand>;
  /// What the engine thread hands the output thread.
  struct Output {
    RequestId id;
    std::optional<StepOutput> step;
    std::string error;
    bool rejected = false;
  };
  /// The output thread's view of one sample of a pending request.
  struct SampleText {
    std::unique_ptr<tokenizer::IncrementalDecoder> decoder;
    std::optional<StopStringMatcher> stops;
    /// The first tokens, whose text no stop string may end the sample in
    /// (vLLM's min_tokens).
    int64_t unmatchedTokens = 0;
    /// Ended by a stop string while the engine still runs it.
    bool stopped = false;
  };
  /// The output thread's view of a pending request.
  struct Stream {
    StreamCallback onEvent;
    std::vector<SampleText> samples; // empty without detokenize
    int32_t unfinishedSamples;
    int64_t numPromptTokens = 0;
    /// The prompt's ids, kept for the first event (returnPromptTokenIds).
    bool returnPromptTokenIds = false;
    std::vector<int32_t> promptTokenIds;
  };

  void tokenizeLoop();
  void engineLoop();
  void outputLoop();
  /// Runs one command on the engine thread; false for StopCommand.
  bool apply(Command command, std::vector<Output> &outputs);
  void add(AddCommand &add, std::vector<Output> &outputs);
  void deliver(const Output &output);
  /// Fills in the event's text from the sample's decoder and stop strings;
  /// false when the sample has already ended at a stop string.
  static bool addText(SampleText &sample, StreamEvent &event);

  const tokenizer::Tokenizer *tokenizer;
  const AsyncEngineConfig config;

  std::unique_ptr<Engine> engine; // stepped on the engine thread only
  BoundedQueue<Submission> submitted;
  BoundedQueue<Command> commands;
  BoundedQueue<std::vector<Output>> outputs;

  mutable std::mutex mutex; // guards what follows
  std::condition_variable allFinished;
  std::unordered_map<RequestId, Stream> streams;
  RequestId nextId = 0;
  bool accepting = true;
  bool stopped = false;
  AsyncEngineStats snapshot;

  /// Engine thread only: aborts that overtook their request's AddCommand,
  /// and the ids below which every AddCommand has come (they come in order).
  std::unordered_set<RequestId> earlyAborts;
  RequestId addedBelow = 0;
  /// Engine thread only: the requests the engine holds.
  std::unordered_set<RequestId> inEngine;

  std::thread tokenizeThread, engineThread, outputThread;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_ASYNCENGINE_H
