//===- AsyncEngine.cpp - the engine on its own threads, fed by many callers ===//
#include "runtime/engine/AsyncEngine.h"

#include "runtime/tokenizer/IncrementalDecoder.h"
#include "runtime/tokenizer/Tokenizer.h"

namespace llmc::runtime {
namespace {

/// Drops all but the last `keep` tokens (0: keeps them all).
void keepLast(std::vector<int32_t> &prompt, int64_t keep) {
  if (keep > 0 && static_cast<int64_t>(prompt.size()) > keep)
    prompt.erase(prompt.begin(), prompt.end() - keep);
}

} // namespace

AsyncEngine::AsyncEngine(Model &model, const tokenizer::Tokenizer *tokenizer,
                         const AsyncEngineConfig &config)
    : tokenizer(tokenizer), config(config),
      engine(std::make_unique<Engine>(model, config.engine)),
      submitted(config.maxPendingRequests),
      // Room for every pending request's add and abort, and a stop.
      commands(2 * config.maxPendingRequests + 1), outputs(config.outputQueueSteps) {
  snapshot.engine = engine->stats();
  tokenizeThread = std::thread([this] { tokenizeLoop(); });
  engineThread = std::thread([this] { engineLoop(); });
  outputThread = std::thread([this] { outputLoop(); });
}

AsyncEngine::~AsyncEngine() { shutdown(false); }

RequestId AsyncEngine::submit(AsyncRequest request) {
  std::vector<AsyncRequest> one;
  one.push_back(std::move(request));
  return submit(std::move(one)).front();
}

std::vector<RequestId> AsyncEngine::submit(std::vector<AsyncRequest> requests) {
  for (const AsyncRequest &request : requests) {
    if ((request.text || request.detokenize) && !tokenizer)
      throw RequestError("this model has no tokenizer: give the prompt as token ids");
    if (!request.stopStrings.empty() && !request.detokenize)
      throw RequestError("stop strings need a detokenized request");
  }
  Submission submission;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!accepting) throw QueueFullError("the engine is shutting down");
    if (streams.size() + requests.size() > config.maxPendingRequests)
      throw QueueFullError("the engine has " + std::to_string(streams.size()) +
                           " pending requests and takes at most " +
                           std::to_string(config.maxPendingRequests) + ", not " +
                           std::to_string(requests.size()) + " more; retry later");
    for (AsyncRequest &request : requests) {
      keepLast(request.promptIds, request.truncatePromptTokens);
      RequestId id = nextId++;
      Stream stream;
      stream.onEvent = std::move(request.onEvent);
      stream.unfinishedSamples = std::max<int32_t>(request.options.n, 1);
      stream.numPromptTokens = static_cast<int64_t>(request.promptIds.size());
      stream.returnPromptTokenIds = request.returnPromptTokenIds;
      if (request.returnPromptTokenIds) stream.promptTokenIds = request.promptIds;
      if (request.detokenize)
        for (int32_t i = 0; i < stream.unfinishedSamples; ++i) {
          SampleText &sample = stream.samples.emplace_back();
          sample.decoder = std::make_unique<tokenizer::IncrementalDecoder>(
              *tokenizer, request.skipSpecialTokens);
          if (!request.stopStrings.empty()) sample.stops.emplace(request.stopStrings);
          sample.unmatchedTokens = request.options.sampling.minTokens;
        }
      streams.emplace(id, std::move(stream));
      submission.emplace_back(id, std::move(request));
    }
    snapshot.numPendingRequests = static_cast<int64_t>(streams.size());
  }
  std::vector<RequestId> ids;
  for (const auto &entry : submission) ids.push_back(entry.first);
  // Cannot block for long: there is room for every pending request.
  if (!submission.empty()) submitted.push(std::move(submission));
  return ids;
}

void AsyncEngine::abort(RequestId id) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!streams.count(id)) return;
  }
  commands.push(AbortCommand{id});
}

void AsyncEngine::shutdown(bool drain) {
  std::vector<RequestId> pending;
  {
    std::unique_lock<std::mutex> lock(mutex);
    if (stopped) return;
    accepting = false;
    if (!drain)
      for (const auto &entry : streams) pending.push_back(entry.first);
  }
  for (RequestId id : pending) commands.push(AbortCommand{id});
  {
    std::unique_lock<std::mutex> lock(mutex);
    allFinished.wait(lock, [&] { return streams.empty(); });
    stopped = true;
  }
  // The tokenizer thread forwards the stop after whatever it still holds.
  submitted.close();
  tokenizeThread.join();
  engineThread.join();
  outputThread.join();
}

AsyncEngineStats AsyncEngine::stats() const {
  std::lock_guard<std::mutex> lock(mutex);
  return snapshot;
}

void AsyncEngine::tokenizeLoop() {
  while (std::optional<Submission> submission = submitted.pop()) {
    AddCommands adds;
    for (auto &[id, request] : *submission) {
      AddCommand &add = adds.emplace_back(
          AddCommand{id, std::move(request.promptIds), std::move(request.options), {}});
      if (!request.text) continue;
      try {
        add.prompt = tokenizer->encode(*request.text, request.addSpecialTokens);
        keepLast(add.prompt, request.truncatePromptTokens);
      } catch (const std::exception &error) {
        add.error = std::string("cannot tokenize the prompt: ") + error.what();
      }
      std::lock_guard<std::mutex> lock(mutex);
      auto found = streams.find(id);
      if (found == streams.end()) continue;
      found->second.numPromptTokens = static_cast<int64_t>(add.prompt.size());
      if (found->second.returnPromptTokenIds) found->second.promptTokenIds = add.prompt;
    }
    commands.push(std::move(adds));
  }
  commands.push(StopCommand{});
}

bool AsyncEngine::apply(Command command, std::vector<Output> &results) {
  if (std::holds_alternative<StopCommand>(command)) return false;
  if (auto *abort = std::get_if<AbortCommand>(&command)) {
    if (!inEngine.count(abort->id)) {
      // Still being tokenized: drop it when its AddCommand arrives. (An id
      // below addedBelow has already finished.)
      if (abort->id >= addedBelow) earlyAborts.insert(abort->id);
      return true;
    }
    for (StepOutput &output : engine->abort(abort->id))
      results.push_back({abort->id, std::move(output), {}, false});
    inEngine.erase(abort->id);
    return true;
  }
  for (AddCommand &add : std::get<AddCommands>(command)) this->add(add, results);
  return true;
}

void AsyncEngine::add(AddCommand &add, std::vector<Output> &results) {
  addedBelow = add.id + 1;
  if (earlyAborts.erase(add.id)) {
    for (int32_t i = 0; i < std::max<int32_t>(add.options.n, 1); ++i)
      results.push_back({add.id, StepOutput{add.id, i, std::nullopt, FinishReason::Abort}, {},
                         false});
    return;
  }
  if (!add.error.empty()) {
    results.push_back({add.id, std::nullopt, add.error, true});
    return;
  }
  try {
    engine->addRequest(add.id, std::move(add.prompt), add.options);
    inEngine.insert(add.id);
  } catch (const RequestError &error) {
    results.push_back({add.id, std::nullopt, error.what(), true});
  }
}

void AsyncEngine::engineLoop() {
  bool running = true;
  while (running) {
    std::vector<Output> results;
    // Idle: sleep until a command comes. Busy: take what is there and step.
    std::optional<Command> command = engine->hasUnfinished() ? commands.tryPop() : commands.pop();
    while (command && running) {
      running = apply(std::move(*command), results);
      command = commands.tryPop();
    }
    if (running && engine->hasUnfinished()) {
      try {
        for (StepOutput &output : engine->step()) {
          RequestId id = output.request;
          results.push_back({id, std::move(output), {}, false});
        }
      } catch (const std::exception &error) {
        // The engine dropped every request: each one ends with the error.
        for (RequestId id : inEngine)
          results.push_back({id, std::nullopt, std::string("the model step failed: ") + error.what(),
                             false});
        inEngine.clear();
      }
    }
    for (const Output &result : results)
      if (result.step && result.step->finishReason != FinishReason::None &&
          !engine->hasRequest(result.id))
        inEngine.erase(result.id);
    {
      std::lock_guard<std::mutex> lock(mutex);
      snapshot.engine = engine->stats();
    }
    if (!results.empty()) outputs.push(std::move(results));
  }
  outputs.close();
}

bool AsyncEngine::addText(SampleText &sample, StreamEvent &event) {
  if (sample.stopped) return false;
  std::string text;
  if (event.token) text = sample.decoder->add(event.token->token);
  if (event.last()) text += sample.decoder->finish();
  bool unmatched = event.token && sample.unmatchedTokens > 0;
  if (unmatched) --sample.unmatchedTokens;
  if (!sample.stops || unmatched) {
    event.text = std::move(text);
    return true;
  }
  StopStringMatcher::Result matched = sample.stops->add(text);
  event.text = std::move(matched.text);
  if (matched.stop) {
    sample.stopped = true;
    event.finishReason = FinishReason::Stop;
    event.stopString = std::move(matched.stop);
  } else if (event.last()) {
    event.text += sample.stops->finish();
  }
  return true;
}

void AsyncEngine::deliver(const Output &output) {
  StreamCallback callback;
  SampleText *sample = nullptr; // stable: only this thread erases streams
  StreamEvent event;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = streams.find(output.id);
    if (found == streams.end()) return;
    Stream &stream = found->second;
    callback = stream.onEvent;
    event.numPromptTokens = stream.numPromptTokens;
    // The first event takes them; later ones find the vector empty.
    event.promptTokenIds = std::move(stream.promptTokenIds);
    stream.promptTokenIds.clear();
    if (output.step && !stream.samples.empty()) sample = &stream.samples.at(output.step->index);
  }
  event.request = output.id;
  event.error = output.error;
  event.rejected = output.rejected;
  if (output.step) {
    event.index = output.step->index;
    event.token = output.step->token;
    event.finishReason = output.step->finishReason;
    event.promptLogprobs = output.step->promptLogprobs;
    event.pooled = output.step->pooled;
  }
  // Prompt logprobs come before any text.
  if (sample && event.promptLogprobs.empty() && !addText(*sample, event)) return;
  if (callback) callback(event);

  if (!event.last()) return;
  bool requestEnded = false, abortInEngine = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    Stream &stream = streams.at(output.id);
    requestEnded = !event.error.empty() || --stream.unfinishedSamples == 0;
    // A sample ended at a stop string may still be running in the engine.
    for (const SampleText &text : stream.samples) abortInEngine |= requestEnded && text.stopped;
  }
  if (!requestEnded) return;
  // Before the request counts as finished, so that shutdown() cannot stop
  // the engine thread with the abort still to come.
  if (abortInEngine) commands.push(AbortCommand{output.id});
  std::lock_guard<std::mutex> lock(mutex);
  streams.erase(output.id);
  snapshot.numPendingRequests = static_cast<int64_t>(streams.size());
  if (streams.empty()) allFinished.notify_all();
}

void AsyncEngine::outputLoop() {
  while (std::optional<std::vector<Output>> batch = outputs.pop()) {
    for (const Output &output : *batch) deliver(output);
    if (config.onStepDelivered) config.onStepDelivered();
  }
}

} // namespace llmc::runtime
