//===- Metrics.cpp - the server's Prometheus metrics ----------------------===//
#include "runtime/server/Metrics.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace llmc::runtime::server {
namespace {

/// Seconds, from 1 ms to 5 min: a token on a busy CPU to a long generation.
std::vector<double> latencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
          0.75,  1.0,    2.5,   5.0,  7.5,   10.0, 20.0,  40.0, 80.0, 160.0, 320.0};
}

/// The shortest text that reads back as `value` ("0.005", "4").
std::string number(double value) {
  if (value == std::floor(value) && std::fabs(value) < 1e15)
    return std::to_string(static_cast<int64_t>(value));
  return nlohmann::json(value).dump();
}

void header(std::string &out, const char *name, const char *type, const char *help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string &out, const char *name, double value) {
  out.append(name).append(" ").append(number(value)).append("\n");
}

void metric(std::string &out, const char *name, const char *type, const char *help,
            double value) {
  header(out, name, type, help);
  sample(out, name, value);
}

template <typename Key>
int64_t &entry(std::vector<std::pair<Key, int64_t>> &counts, const Key &key) {
  for (auto &[existing, count] : counts)
    if (existing == key) return count;
  return counts.emplace_back(key, 0).second;
}
} // namespace

Histogram::Histogram(std::vector<double> upperBounds)
    : bounds(std::move(upperBounds)), counts(bounds.size() + 1, 0) {}

void Histogram::observe(double seconds) {
  size_t bucket = std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin();
  ++counts[bucket];
  sum += seconds;
  ++total;
}

void Histogram::render(const std::string &name, std::string &out) const {
  int64_t cumulative = 0;
  for (size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += counts[i];
    std::string bound = i < bounds.size() ? number(bounds[i]) : "+Inf";
    out.append(name).append("_bucket{le=\"").append(bound).append("\"} ");
    out.append(std::to_string(cumulative)).append("\n");
  }
  out.append(name).append("_sum ").append(number(sum)).append("\n");
  out.append(name).append("_count ").append(std::to_string(total)).append("\n");
}

ServerMetrics::ServerMetrics()
    : timeToFirstToken(latencyBuckets()), interTokenLatency(latencyBuckets()),
      requestLatency(latencyBuckets()) {}

void ServerMetrics::observeFirstToken(double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  timeToFirstToken.observe(seconds);
}

void ServerMetrics::observeNextToken(double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  interTokenLatency.observe(seconds);
}

void ServerMetrics::countToken(Clock::time_point when) {
  int64_t second =
      std::chrono::duration_cast<std::chrono::seconds>(when.time_since_epoch()).count();
  std::lock_guard<std::mutex> lock(mutex);
  ++generationTokens;
  auto &slot = tokensBySecond[static_cast<size_t>(second) % tokensBySecond.size()];
  if (slot.first != second) slot = {second, 0};
  ++slot.second;
}

void ServerMetrics::observeRequestEnd(const std::string &finishReason, int64_t prompt,
                                      double seconds) {
  std::lock_guard<std::mutex> lock(mutex);
  ++entry(finishedRequests, finishReason);
  promptTokens += prompt;
  requestLatency.observe(seconds);
}

void ServerMetrics::countError(int status) {
  std::lock_guard<std::mutex> lock(mutex);
  ++entry(errors, status);
}

double ServerMetrics::tokensPerSecond(Clock::time_point now) const {
  // The current second is still filling: average the kRateWindow before it.
  int64_t current =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  int64_t tokens = 0;
  for (const auto &[second, count] : tokensBySecond)
    if (second < current && second >= current - kRateWindow) tokens += count;
  return static_cast<double>(tokens) / kRateWindow;
}

std::string ServerMetrics::render(const AsyncEngineStats &stats) const {
  const EngineStats &engine = stats.engine;
  std::string out;
  metric(out, "llmc_num_requests_running", "gauge",
         "Sequences in the running batch (a request with n > 1 counts n once it has forked).",
         static_cast<double>(engine.numRunning));
  metric(out, "llmc_num_requests_waiting", "gauge",
         "Sequences waiting to be scheduled (queued or preempted).",
         static_cast<double>(engine.numWaiting));
  metric(out, "llmc_num_requests_pending", "gauge",
         "Requests accepted and not finished, those still being tokenized included.",
         static_cast<double>(stats.numPendingRequests));
  metric(out, "llmc_kv_cache_blocks_used", "gauge", "KV cache blocks held by requests.",
         static_cast<double>(engine.numKvBlocksHeld));
  metric(out, "llmc_kv_cache_blocks_total", "gauge", "KV cache blocks in the pool.",
         static_cast<double>(engine.numKvBlocks));
  metric(out, "llmc_kv_cache_usage_ratio", "gauge", "Fraction of the KV cache blocks held.",
         engine.numKvBlocks ? double(engine.numKvBlocksHeld) / engine.numKvBlocks : 0.0);
  metric(out, "llmc_prefix_cache_hit_rate", "gauge",
         "Fraction of the prompt blocks looked up that the prefix cache held.",
         engine.prefixCache.hitRate());
  metric(out, "llmc_num_preemptions_total", "counter",
         "Sequences preempted (swapped out or to be recomputed).",
         static_cast<double>(engine.numPreemptions));
  header(out, "llmc_preemptions_total", "counter",
         "Sequences preempted, by how they come back: swap (their KV blocks copied to host "
         "memory and back) or recompute.");
  out.append("llmc_preemptions_total{mode=\"swap\"} ")
      .append(std::to_string(engine.numSwapPreemptions)).append("\n");
  out.append("llmc_preemptions_total{mode=\"recompute\"} ")
      .append(std::to_string(engine.numPreemptions - engine.numSwapPreemptions)).append("\n");
  metric(out, "llmc_swap_blocks_used", "gauge", "Swap space slots holding a swapped-out KV block.",
         static_cast<double>(engine.numSwapSlotsUsed));
  metric(out, "llmc_swap_blocks_total", "gauge", "KV blocks the swap space holds (--swap-space).",
         static_cast<double>(engine.numSwapSlots));
  metric(out, "llmc_spec_decode_draft_tokens_total", "counter",
         "Draft tokens verified by speculative decoding (--speculative-config).",
         static_cast<double>(engine.draftTokens));
  metric(out, "llmc_spec_decode_accepted_tokens_total", "counter",
         "Of those, the ones accepted: each saved a model step of its request.",
         static_cast<double>(engine.acceptedDraftTokens));
  metric(out, "llmc_grammar_masks_total", "counter",
         "Next-token masks computed for requests with an output constraint.",
         static_cast<double>(engine.grammarMasks));
  metric(out, "llmc_grammar_mask_seconds_total", "counter",
         "Time spent computing those masks (mostly beside the model step).",
         engine.grammarMaskSeconds);
  metric(out, "llmc_grammar_wait_seconds_total", "counter",
         "Time engine steps waited for masks computed beside the model step.",
         engine.grammarWaitSeconds);

  std::lock_guard<std::mutex> lock(mutex);
  metric(out, "llmc_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
         static_cast<double>(promptTokens));
  metric(out, "llmc_generation_tokens_total", "counter", "Tokens generated.",
         static_cast<double>(generationTokens));
  metric(out, "llmc_generation_tokens_per_second", "gauge",
         "Tokens generated per second over the last 10 seconds.", tokensPerSecond(Clock::now()));
  header(out, "llmc_requests_finished_total", "counter", "Requests finished, by finish reason.");
  for (const auto &[reason, count] : finishedRequests)
    out.append("llmc_requests_finished_total{finish_reason=\"").append(reason).append("\"} ")
        .append(std::to_string(count)).append("\n");
  header(out, "llmc_request_errors_total", "counter", "Requests answered with an error status.");
  for (const auto &[status, count] : errors)
    out.append("llmc_request_errors_total{status=\"").append(std::to_string(status))
        .append("\"} ").append(std::to_string(count)).append("\n");
  header(out, "llmc_time_to_first_token_seconds", "histogram",
         "From a request's arrival to its first token.");
  timeToFirstToken.render("llmc_time_to_first_token_seconds", out);
  header(out, "llmc_inter_token_latency_seconds", "histogram",
         "Between consecutive tokens of a sample.");
  interTokenLatency.render("llmc_inter_token_latency_seconds", out);
  header(out, "llmc_e2e_request_latency_seconds", "histogram",
         "From a request's arrival to its last token.");
  requestLatency.render("llmc_e2e_request_latency_seconds", out);
  return out;
}

} // namespace llmc::runtime::server
