//===- AsyncEngineTest.cpp - the engine's threads and queues over the toy step ===//
#include "TestArtifact.h"

#include "runtime/engine/AsyncEngine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <mutex>
#include <thread>

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

TEST_F(AsyncEngineTest, ShutdownWithoutDrainAbortsWhatIsPending) {
  AsyncEngineConfig config;
  config.maxPendingRequests = 3;
  AsyncEngine engine(*model, nullptr, config);
  std::vector<std::unique_ptr<Collector>> collectors;
  for (int i = 0; i < 3; ++i) {
    collectors.push_back(std::make_unique<Collector>());
    engine.submit(request({i + 1}, 1000, *collectors.back()));
  }
  Collector overflow;
  EXPECT_THROW(engine.submit(request({1}, 1, overflow)), QueueFullError);
  engine.shutdown(false);
  for (auto &collector : collectors) {
    collector->wait();
    EXPECT_EQ(collector->reasons[0], FinishReason::Abort);
  }
  EXPECT_THROW(engine.submit(request({1}, 1, overflow)), QueueFullError);
  EXPECT_EQ(engine.stats().engine.numKvBlocksHeld, 0);
}
} // namespace
