//===- BenchReport.h - the latencies and throughput `llmc bench` reports -*- C++ -*-===//
//
// What `llmc bench throughput` and `llmc bench serve` record of each request,
// the figures they make of the records (throughput; mean, p50 and p99 of
// TTFT, TPOT and ITL), how they print them, and their progress line.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TOOLS_LLMC_BENCHREPORT_H
#define LLMC_TOOLS_LLMC_BENCHREPORT_H

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace llmc {

using BenchClock = std::chrono::steady_clock;

double milliseconds(BenchClock::duration duration);

/// What a benchmark records of one request, as a streaming client sees it.
struct RequestRecord {
  BenchClock::time_point submitted, firstToken, lastToken, finished;
  int64_t inputTokens = 0;
  int64_t outputTokens = 0;
  /// Milliseconds between consecutive token arrivals.
  std::vector<double> gaps;
  /// Why it failed; empty when it succeeded.
  std::string error;
};

/// The mean, median and 99th percentile of a sample (zeros when empty).
struct LatencySummary {
  double mean = 0, p50 = 0, p99 = 0;
};

/// The figures of a run, over its successful requests.
struct LoadResult {
  size_t numRequests = 0;
  size_t numFailed = 0;
  /// "request i: why", of the first failed request.
  std::string firstError;
  int64_t inputTokens = 0;
  int64_t outputTokens = 0;
  /// From the first request's submission to the last request's end.
  double seconds = 0;
  LatencySummary ttft, tpot, itl; // milliseconds

  double perSecond(double count) const { return seconds > 0 ? count / seconds : 0.0; }
};

/// TTFT: first token - submission; TPOT: (end - first token) / (output
/// tokens - 1); ITL: every gap. Failed requests count only in numFailed and
/// the duration.
LoadResult measure(const std::vector<RequestRecord> &records);

/// Adds num_requests, failed_requests and first_error (when one failed).
void appendRequestCounts(nlohmann::ordered_json &report, const LoadResult &result);
/// Adds the token counts, duration, rates and latency summaries.
void appendMeasurements(nlohmann::ordered_json &report, const LoadResult &result);
/// Prints the rows of the table from `requests` to `ITL (ms)` on stdout.
void printMeasurements(const LoadResult &result);

/// `done i/n requests` on stderr, rewritten in place on a change, at most
/// four times a second but for the last.
class ProgressLine {
public:
  explicit ProgressLine(size_t total) : total(total) {}
  void update(size_t done);

private:
  size_t total;
  size_t shown = SIZE_MAX;
  BenchClock::time_point shownAt;
};

} // namespace llmc

#endif // LLMC_TOOLS_LLMC_BENCHREPORT_H
