//===- AsyncEngineTest.cpp - the engine's threads and queues over the toy step ===//
#include "TestArtifact.h"

#include "runtime/engine/AsyncEngine.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <tuple>

using namespace llmc::runtime;
using llmc::test::TestArtifact;
using llmc::test::toyContinuation;

namespace {

/// Collects a request's events; wait() returns once its samples have ended.
class Collector {
public:
  explicit Collector(int32_t numSamples = 1) : tokens(numSamples), reasons(numSamples) {}

  StreamCallback callback() {
    return [this](const StreamEvent &event) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!event.error.empty()) {
        error = event.error;
        rejected = event.rejected;
        done.set_value();
        return;
      }
      if (event.token) tokens[event.index].push_back(event.token->token);
      if (event.last()) {
        reasons[event.index] = event.finishReason;
        if (++ended == static_cast<int32_t>(tokens.size())) done.set_value();
      }
    };
  }
  void wait() { ASSERT_EQ(finished.wait_for(std::chrono::seconds(30)), std::future_status::ready); }

  std::vector<std::vector<int32_t>> tokens;
  std::vector<FinishReason> reasons;
  std::string error;
  bool rejected = false;

private:
  std::mutex mutex;
  int32_t ended = 0;
  std::promise<void> done;
  std::future<void> finished = done.get_future();
};

class AsyncEngineTest : public ::testing::Test {
protected:
  AsyncEngineTest() : model(Model::open(artifact.dir(), {2, 64})) {}

  static AsyncRequest request(std::vector<int32_t> prompt, int64_t maxTokens, Collector &collector) {
    AsyncRequest request;
    request.promptIds = std::move(prompt);
    request.options.maxTokens = maxTokens;
    request.options.sampling.temperature = 0;
    request.onEvent = collector.callback();
    return request;
  }

  TestArtifact artifact; // vocab 64, block size 4, 16 tokens and 4 sequences per step
  std::unique_ptr<Model> model;
};

TEST_F(AsyncEngineTest, ManyThreadsSubmitAndEachStreamIsComplete) {
  AsyncEngine engine(*model, nullptr, {});
  constexpr int kThreads = 4, kPerThread = 8;
  std::vector<std::unique_ptr<Collector>> collectors;
  for (int i = 0; i < kThreads * kPerThread; ++i) collectors.push_back(std::make_unique<Collector>());
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t)
    submitters.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int index = t * kPerThread + i;
        engine.submit(request({index % 64, 3}, 5, *collectors[index]));
      }
    });
  for (std::thread &thread : submitters) thread.join();
  for (int index = 0; index < kThreads * kPerThread; ++index) {
    collectors[index]->wait();
    EXPECT_EQ(collectors[index]->tokens[0], toyContinuation({index % 64, 3}, 5, 64)) << index;
    EXPECT_EQ(collectors[index]->reasons[0], FinishReason::Length);
  }
  engine.shutdown(true);
  EXPECT_EQ(engine.stats().engine.numKvBlocksHeld, 0);
  EXPECT_EQ(engine.stats().numPendingRequests, 0);
}

TEST_F(AsyncEngineTest, ARejectedRequestGetsOneErrorEventAndOthersRun) {
  AsyncEngine engine(*model, nullptr, {});
  Collector bad, good;
  engine.submit(request({1, 99}, 3, bad));
  engine.submit(request({1, 2}, 3, good));
  bad.wait();
  good.wait();
  EXPECT_TRUE(bad.rejected);
  EXPECT_NE(bad.error.find("outside the vocabulary"), std::string::npos) << bad.error;
  EXPECT_EQ(good.tokens[0], toyContinuation({1, 2}, 3, 64));
  EXPECT_THROW(engine.submit([&] {
                 AsyncRequest text;
                 text.text = "hello";
                 return text;
               }()),
               RequestError);
}

TEST_F(AsyncEngineTest, AbortEndsAStreamAndFreesItsBlocks) {
  // With room for one step's results, the engine thread is at most a couple
  // of steps ahead of the callbacks: an abort from the first token lands
  // long before the 100th.
  AsyncEngineConfig config;
  config.outputQueueSteps = 1;
  AsyncEngine engine(*model, nullptr, config);
  Collector endless(2);
  std::promise<RequestId> submitted;
  std::shared_future<RequestId> id = submitted.get_future().share();
  AsyncRequest request = AsyncEngineTest::request({5, 6, 7}, 100, endless);
  request.options.n = 2;
  StreamCallback collect = request.onEvent;
  bool aborted = false;
  request.onEvent = [&](const StreamEvent &event) {
    collect(event);
    if (!aborted) engine.abort(id.get());
    aborted = true;
  };
  submitted.set_value(engine.submit(std::move(request)));
  endless.wait();
  for (int sample = 0; sample < 2; ++sample) {
    EXPECT_EQ(endless.reasons[sample], FinishReason::Abort);
    EXPECT_LT(endless.tokens[sample].size(), 10u);
  }
  engine.shutdown(true);
  EXPECT_EQ(engine.stats().engine.numKvBlocksHeld, 0);
}

/// A tokenizer of the toy vocabulary: token i is the i-th of 64 characters.
std::unique_ptr<tokenizer::Tokenizer> toyTokenizer() {
  const std::string characters =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/";
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < characters.size(); ++i) vocab[characters.substr(i, 1)] = i;
  nlohmann::json document = {
      {"version", "1.0"},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}},
      {"decoder", {{"type", "Fuse"}}}};
  return tokenizer::Tokenizer::fromJson(document.dump(), "toy.json");
}

/// Runs one detokenized request; its text, finish reason and stop string.
std::tuple<std::string, FinishReason, std::optional<std::string>>
generateText(AsyncEngine &engine, std::vector<std::string> stopStrings) {
  std::string text;
  FinishReason reason = FinishReason::None;
  std::optional<std::string> stop;
  std::promise<void> done;
  AsyncRequest request;
  request.promptIds = {3, 1, 4};
  request.options.maxTokens = 40;
  request.options.sampling.temperature = 0;
  request.detokenize = true;
  request.stopStrings = std::move(stopStrings);
  request.onEvent = [&](const StreamEvent &event) {
    text += event.text;
    if (!event.last()) return;
    reason = event.finishReason;
    stop = event.stopString;
    done.set_value();
  };
  engine.submit(std::move(request));
  EXPECT_EQ(done.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  return {text, reason, stop};
}

TEST_F(AsyncEngineTest, AStopStringEndsTheSampleBeforeItAndFreesItsBlocks) {
  std::unique_ptr<tokenizer::Tokenizer> tokenizer = toyTokenizer();
  AsyncEngine engine(*model, tokenizer.get(), {});
  auto [whole, lengthReason, none] = generateText(engine, {});
  ASSERT_EQ(whole.size(), 40u);
  EXPECT_EQ(lengthReason, FinishReason::Length);
  std::string stop = whole.substr(20, 2);

  auto [text, reason, matched] = generateText(engine, {"never", stop});
  EXPECT_EQ(text, whole.substr(0, whole.find(stop)));
  EXPECT_EQ(reason, FinishReason::Stop);
  EXPECT_EQ(matched, stop);
  // The engine was still running the sample: the stop aborts it there, and
  // its thread then frees the blocks and retires the request (in that order).
  for (int wait = 0; wait < 500 && (engine.stats().engine.numKvBlocksHeld ||
                                    engine.stats().numPendingRequests);
       ++wait)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(engine.stats().engine.numKvBlocksHeld, 0);
  EXPECT_EQ(engine.stats().numPendingRequests, 0);
}

TEST_F(AsyncEngineTest, ASubmissionIsAllOrNoneAndStartsInOneStep) {
  AsyncEngineConfig config;
  config.maxPendingRequests = 3;
  AsyncEngine engine(*model, nullptr, config);
  Collector unused;
  std::vector<AsyncRequest> tooMany;
  for (int i = 0; i < 4; ++i) tooMany.push_back(request({i + 1}, 1, unused));
  EXPECT_THROW(engine.submit(std::move(tooMany)), QueueFullError);
  std::vector<AsyncRequest> oneBad;
  oneBad.push_back(request({1}, 1, unused));
  oneBad.push_back(request({2}, 1, unused));
  oneBad.back().detokenize = true; // this engine has no tokenizer
  EXPECT_THROW(engine.submit(std::move(oneBad)), RequestError);
  EXPECT_EQ(engine.stats().numPendingRequests, 0);

  // Three two-token prompts fit one step (16 tokens, 4 sequences): added
  // together, they prefill together and finish after 4 steps.
  std::vector<std::unique_ptr<Collector>> collectors;
  std::vector<AsyncRequest> batch;
  for (int i = 0; i < 3; ++i) {
    collectors.push_back(std::make_unique<Collector>());
    batch.push_back(request({2 * i + 1, 2 * i + 2}, 4, *collectors.back()));
  }
  std::vector<RequestId> ids = engine.submit(std::move(batch));
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids[1], ids[0] + 1);
  EXPECT_EQ(ids[2], ids[0] + 2);
  for (int i = 0; i < 3; ++i) {
    collectors[i]->wait();
    EXPECT_EQ(collectors[i]->tokens[0], toyContinuation({2 * i + 1, 2 * i + 2}, 4, 64)) << i;
  }
  engine.shutdown(true);
  EXPECT_EQ(engine.stats().engine.numSteps, 4);
  EXPECT_EQ(engine.stats().engine.numKvBlocksHeld, 0);
}

TEST_F(AsyncEngineTest, ATruncatedPromptKeepsItsLastTokens) {
  AsyncEngine engine(*model, nullptr, {});
  Collector truncated;
  AsyncRequest work = request({9, 8, 7, 6, 5}, 4, truncated);
  work.truncatePromptTokens = 2;
  engine.submit(std::move(work));
  truncated.wait();
  EXPECT_EQ(truncated.tokens[0], toyContinuation({6, 5}, 4, 64));
}

TEST_F(AsyncEngineTest, PromptTokensAndTheirLogprobsComeFirst) {
  std::unique_ptr<tokenizer::Tokenizer> tokenizer = toyTokenizer();
  AsyncEngine engine(*model, tokenizer.get(), {});
  std::vector<StreamEvent> events;
  std::promise<void> done;
  AsyncRequest work;
  work.promptIds = {9, 8, 7, 6, 5};
  work.truncatePromptTokens = 4;
  work.returnPromptTokenIds = true;
  work.detokenize = true;
  work.options.maxTokens = 2;
  work.options.sampling.temperature = 0;
  work.options.promptLogprobs = 1;
  work.onEvent = [&](const StreamEvent &event) {
    events.push_back(event);
    if (event.last()) done.set_value();
  };
  engine.submit(std::move(work));
  ASSERT_EQ(done.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  // The prompt as run (truncated) on the first event only; its tokens 1..3's
  // logprobs, without text, before the two tokens.
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events[0].promptTokenIds, (std::vector<int32_t>{8, 7, 6, 5}));
  std::vector<int32_t> scored;
  size_t i = 0;
  for (; i < events.size() && !events[i].promptLogprobs.empty(); ++i) {
    EXPECT_FALSE(events[i].token);
    EXPECT_TRUE(events[i].text.empty());
    for (const SampledToken &entry : events[i].promptLogprobs) scored.push_back(entry.token);
  }
  EXPECT_EQ(scored, (std::vector<int32_t>{7, 6, 5}));
  std::vector<int32_t> tokens;
  for (; i < events.size(); ++i) {
    EXPECT_TRUE(events[i].promptTokenIds.empty());
    EXPECT_TRUE(events[i].promptLogprobs.empty());
    if (events[i].token) tokens.push_back(events[i].token->token);
  }
  EXPECT_EQ(tokens, toyContinuation({8, 7, 6, 5}, 2, 64));
}

TEST_F(AsyncEngineTest, ShutdownWithoutDrainAbortsWhatIsPending) {
  // The output thread holds the first step's events until shutdown has queued its aborts,
  // and the output queue takes one step: the engine stops within three steps, so no
  // request can finish on its own before the aborts reach it (the toy steps in
  // microseconds, and one once did).
  std::mutex mutex;
  std::condition_variable releasedCondition;
  bool released = false;
  AsyncEngineConfig config;
  config.maxPendingRequests = 3;
  config.outputQueueSteps = 1;
  config.onStepDelivered = [&] {
    std::unique_lock<std::mutex> lock(mutex);
    releasedCondition.wait(lock, [&] { return released; });
  };
  AsyncEngine engine(*model, nullptr, config);
  std::vector<std::unique_ptr<Collector>> collectors;
  for (int i = 0; i < 3; ++i) {
    collectors.push_back(std::make_unique<Collector>());
    engine.submit(request({i + 1}, 1000, *collectors.back()));
  }
  Collector overflow;
  EXPECT_THROW(engine.submit(request({1}, 1, overflow)), QueueFullError);
  std::thread stopper([&] { engine.shutdown(false); });
  // shutdown queues its aborts at once, then waits for every stream to end.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  {
    std::lock_guard<std::mutex> lock(mutex);
    released = true;
  }
  releasedCondition.notify_all();
  stopper.join();
  for (auto &collector : collectors) {
    collector->wait();
    EXPECT_EQ(collector->reasons[0], FinishReason::Abort);
  }
  EXPECT_THROW(engine.submit(request({1}, 1, overflow)), QueueFullError);
  EXPECT_EQ(engine.stats().engine.numKvBlocksHeld, 0);
}
} // namespace

TEST_F(AsyncEngineTest, OnStepDeliveredFollowsEachStepsEvents) {
  // Markers in the order the output thread makes them: 'e' an event, 's' the hook.
  std::mutex mutex;
  std::string markers;
  AsyncEngineConfig config;
  config.onStepDelivered = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    markers += 's';
  };
  AsyncEngine engine(*model, nullptr, config);
  // Four samples step together: each step delivers four events.
  Collector collector(4);
  AsyncRequest work = request({1, 3}, 6, collector);
  work.options.n = 4;
  work.onEvent = [&, inner = std::move(work.onEvent)](const StreamEvent &event) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      markers += 'e';
    }
    inner(event);
  };
  engine.submit(std::move(work));
  collector.wait();
  engine.shutdown(true);
  EXPECT_EQ(std::count(markers.begin(), markers.end(), 'e'), 4 * 6) << markers;
  EXPECT_EQ(markers.back(), 's') << markers;
  // One call per step, after the step's events.
  EXPECT_EQ(std::count(markers.begin(), markers.end(), 's'), engine.stats().engine.numSteps)
      << markers;
  EXPECT_EQ(markers.find("ss"), std::string::npos) << markers;
}
