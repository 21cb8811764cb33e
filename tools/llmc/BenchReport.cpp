//===- BenchReport.cpp - the latencies and throughput `llmc bench` reports -===//
#include "BenchReport.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace llmc {
namespace {

/// numpy's default percentile: linear between the closest ranks.
double percentile(const std::vector<double> &sorted, double p) {
  double rank = p / 100 * static_cast<double>(sorted.size() - 1);
  size_t below = static_cast<size_t>(rank);
  size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (rank - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

LatencySummary summarize(std::vector<double> values) {
  LatencySummary summary;
  if (values.empty()) return summary;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double value : values) sum += value;
  summary.mean = sum / static_cast<double>(values.size());
  summary.p50 = percentile(values, 50);
  summary.p99 = percentile(values, 99);
  return summary;
}

nlohmann::ordered_json toJson(const LatencySummary &summary) {
  nlohmann::ordered_json object;
  object["mean"] = summary.mean;
  object["p50"] = summary.p50;
  object["p99"] = summary.p99;
  return object;
}

} // namespace

double milliseconds(BenchClock::duration duration) {
  return std::chrono::duration<double, std::milli>(duration).count();
}

LoadResult measure(const std::vector<RequestRecord> &records) {
  LoadResult result;
  result.numRequests = records.size();
  if (records.empty()) return result;
  std::vector<double> ttft, tpot, itl;
  BenchClock::time_point start = records.front().submitted, end = start;
  for (size_t i = 0; i < records.size(); ++i) {
    const RequestRecord &record = records[i];
    start = std::min(start, record.submitted);
    end = std::max(end, record.finished);
    if (!record.error.empty()) {
      if (result.numFailed++ == 0)
        result.firstError = "request " + std::to_string(i) + ": " + record.error;
      continue;
    }
    result.inputTokens += record.inputTokens;
    result.outputTokens += record.outputTokens;
    ttft.push_back(milliseconds(record.firstToken - record.submitted));
    if (record.outputTokens > 1)
      tpot.push_back(milliseconds(record.finished - record.firstToken) /
                     static_cast<double>(record.outputTokens - 1));
    itl.insert(itl.end(), record.gaps.begin(), record.gaps.end());
  }
  result.seconds = std::chrono::duration<double>(end - start).count();
  result.ttft = summarize(std::move(ttft));
  result.tpot = summarize(std::move(tpot));
  result.itl = summarize(std::move(itl));
  return result;
}

void appendRequestCounts(nlohmann::ordered_json &report, const LoadResult &result) {
  report["num_requests"] = result.numRequests;
  report["failed_requests"] = result.numFailed;
  if (result.numFailed) report["first_error"] = result.firstError;
}

void appendMeasurements(nlohmann::ordered_json &report, const LoadResult &result) {
  report["input_tokens"] = result.inputTokens;
  report["output_tokens"] = result.outputTokens;
  report["duration_s"] = result.seconds;
  report["requests_per_s"] = result.perSecond(double(result.numRequests - result.numFailed));
  report["input_tokens_per_s"] = result.perSecond(double(result.inputTokens));
  report["output_tokens_per_s"] = result.perSecond(double(result.outputTokens));
  report["total_tokens_per_s"] = result.perSecond(double(result.inputTokens + result.outputTokens));
  report["ttft_ms"] = toJson(result.ttft);
  report["tpot_ms"] = toJson(result.tpot);
  report["itl_ms"] = toJson(result.itl);
}

void printMeasurements(const LoadResult &result) {
  std::printf("  %-22s %zu (%zu failed)\n", "requests", result.numRequests - result.numFailed,
              result.numFailed);
  std::printf("  %-22s %.2f s\n", "duration", result.seconds);
  std::printf("  %-22s %.3f\n", "requests/s",
              result.perSecond(double(result.numRequests - result.numFailed)));
  std::printf("  %-22s %lld (%.1f tokens/s)\n", "input tokens",
              static_cast<long long>(result.inputTokens), result.perSecond(double(result.inputTokens)));
  std::printf("  %-22s %lld (%.1f tokens/s)\n", "output tokens",
              static_cast<long long>(result.outputTokens),
              result.perSecond(double(result.outputTokens)));
  std::printf("  %-22s %.1f\n", "total tokens/s",
              result.perSecond(double(result.inputTokens + result.outputTokens)));
  std::printf("  %-22s %10s %10s %10s\n", "", "mean", "p50", "p99");
  for (auto [name, summary] : {std::pair{"TTFT (ms)", result.ttft}, std::pair{"TPOT (ms)", result.tpot},
                               std::pair{"ITL (ms)", result.itl}})
    std::printf("  %-22s %10.2f %10.2f %10.2f\n", name, summary.mean, summary.p50, summary.p99);
}

void ProgressLine::update(size_t done) {
  BenchClock::time_point now = BenchClock::now();
  bool last = done == total;
  if (done == shown || (!last && now - shownAt < std::chrono::milliseconds(250))) return;
  std::fprintf(stderr, "\r  done %zu/%zu requests", done, total);
  if (last) std::fputc('\n', stderr);
  shown = done;
  shownAt = now;
}

} // namespace llmc
