//===- Metrics.h - the server's Prometheus metrics --------------*- C++ -*-===//
//
// Counters and latency histograms the server records as requests run, and
// the text exposition of GET /metrics, which adds the engine's gauges
// (running and waiting sequences, KV blocks, prefix-cache hit rate) from a
// stats snapshot. Names follow Prometheus conventions with the `llmc_`
// prefix; docs/serving.md lists them.
//
// Thread-safe: tokens are observed on the engine's output thread, requests
// on the connections' threads, and the text is rendered on either.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_METRICS_H
#define LLMC_RUNTIME_SERVER_METRICS_H

#include "runtime/engine/AsyncEngine.h"

#include <array>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace llmc::runtime::server {

using Clock = std::chrono::steady_clock;

inline double secondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

/// A Prometheus histogram of durations in seconds (cumulative buckets).
class Histogram {
public:
  explicit Histogram(std::vector<double> upperBounds);
  void observe(double seconds);
  /// Appends `name_bucket{le=...}`, `name_sum` and `name_count` lines.
  void render(const std::string &name, std::string &out) const;

private:
  std::vector<double> bounds;
  std::vector<int64_t> counts; // per bucket, not cumulative; the last is +Inf
  double sum = 0;
  int64_t total = 0;
};

class ServerMetrics {
public:
  ServerMetrics();

  void observeFirstToken(double secondsSinceArrival);
  void observeNextToken(double secondsSinceLastToken);
  /// A generated token, for the tokens/s rate.
  void countToken(Clock::time_point when);
  void observeRequestEnd(const std::string &finishReason, int64_t promptTokens,
                         double secondsSinceArrival);
  /// A request answered with an error status.
  void countError(int status);

  std::string render(const AsyncEngineStats &engine) const;

private:
  /// Tokens generated per second, averaged over the last kRateWindow seconds.
  double tokensPerSecond(Clock::time_point now) const;

  static constexpr int kRateWindow = 10;

  mutable std::mutex mutex;
  Histogram timeToFirstToken, interTokenLatency, requestLatency;
  int64_t promptTokens = 0, generationTokens = 0;
  std::vector<std::pair<std::string, int64_t>> finishedRequests; // by finish reason
  std::vector<std::pair<int, int64_t>> errors;                   // by status
  /// Generated tokens per whole second of the steady clock, a ring.
  std::array<std::pair<int64_t, int64_t>, kRateWindow + 1> tokensBySecond{};
};

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_METRICS_H
