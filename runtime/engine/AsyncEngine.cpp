//===- AsyncEngine.cpp - the engine on its own threads, fed by many callers ===//
#include "runtime/engine/AsyncEngine.h"

#include "runtime/tokenizer/IncrementalDecoder.h"
#include "runtime/tokenizer/Tokenizer.h"

namespace llmc::runtime {

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
  if ((request.text || request.detokenize) && !tokenizer)
    throw RequestError("this model has no tokenizer: give the prompt as token ids");
  RequestId id;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!accepting) throw QueueFullError("the engine is shutting down");
    if (streams.size() >= config.maxPendingRequests)
      throw QueueFullError("the engine has " + std::to_string(streams.size()) +
                           " pending requests, its limit; retry later");
    id = nextId++;
    Stream stream;
    stream.onEvent = std::move(request.onEvent);
    stream.unfinishedSamples = std::max<int32_t>(request.options.n, 1);
    if (request.detokenize)
      for (int32_t i = 0; i < stream.unfinishedSamples; ++i)
        stream.decoders.push_back(std::make_unique<tokenizer::IncrementalDecoder>(*tokenizer));
    streams.emplace(id, std::move(stream));
    snapshot.numPendingRequests = static_cast<int64_t>(streams.size());
  }
  // Cannot block for long: there is room for every pending request.
  submitted.push({id, std::move(request)});
  return id;
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
  while (std::optional<std::pair<RequestId, AsyncRequest>> item = submitted.pop()) {
    auto &[id, request] = *item;
    AddCommand add{id, std::move(request.promptIds), std::move(request.options), {}};
    if (request.text) {
      try {
        add.prompt = tokenizer->encode(*request.text);
      } catch (const std::exception &error) {
        add.error = std::string("cannot tokenize the prompt: ") + error.what();
      }
    }
    commands.push(std::move(add));
  }
  commands.push(StopCommand{});
}

bool AsyncEngine::apply(Command command, std::vector<Output> &results) {
  if (std::holds_alternative<StopCommand>(command)) return false;
  if (auto *abort = std::get_if<AbortCommand>(&command)) {
    if (!inEngine.count(abort->id)) {
      // Still being tokenized: drop it when its AddCommand arrives.
      earlyAborts.insert(abort->id);
      return true;
    }
    for (StepOutput &output : engine->abort(abort->id))
      results.push_back({abort->id, std::move(output), {}, false});
    inEngine.erase(abort->id);
    return true;
  }
  AddCommand &add = std::get<AddCommand>(command);
  if (earlyAborts.erase(add.id)) {
    for (int32_t i = 0; i < std::max<int32_t>(add.options.n, 1); ++i)
      results.push_back({add.id, StepOutput{add.id, i, std::nullopt, FinishReason::Abort}, {},
                         false});
    return true;
  }
  if (!add.error.empty()) {
    results.push_back({add.id, std::nullopt, add.error, true});
    return true;
  }
  try {
    engine->addRequest(add.id, std::move(add.prompt), add.options);
    inEngine.insert(add.id);
  } catch (const RequestError &error) {
    results.push_back({add.id, std::nullopt, error.what(), true});
  }
  return true;
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

void AsyncEngine::deliver(const Output &output) {
  StreamCallback callback;
  tokenizer::IncrementalDecoder *decoder = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto found = streams.find(output.id);
    if (found == streams.end()) return;
    callback = found->second.onEvent;
    if (output.step && !found->second.decoders.empty())
      decoder = found->second.decoders.at(output.step->index).get();
  }
  StreamEvent event;
  event.request = output.id;
  event.error = output.error;
  event.rejected = output.rejected;
  if (output.step) {
    event.index = output.step->index;
    event.token = output.step->token;
    event.finishReason = output.step->finishReason;
    if (decoder) {
      if (event.token) event.text = decoder->add(event.token->token);
      if (event.last()) event.text += decoder->finish();
    }
  }
  if (callback) callback(event);

  if (!event.last()) return;
  std::lock_guard<std::mutex> lock(mutex);
  auto found = streams.find(output.id);
  if (found != streams.end() && (!event.error.empty() || --found->second.unfinishedSamples == 0))
    streams.erase(found);
  snapshot.numPendingRequests = static_cast<int64_t>(streams.size());
  if (streams.empty()) allFinished.notify_all();
}

void AsyncEngine::outputLoop() {
  while (std::optional<std::vector<Output>> batch = outputs.pop())
    for (const Output &output : *batch) deliver(output);
}

} // namespace llmc::runtime
