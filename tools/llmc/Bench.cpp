//===- Bench.cpp - `llmc bench throughput`: the serving engine under load -===//
//
//   llmc bench throughput model.llmc [--num-prompts N] [--input-len-range A:B]
//            [--output-len-range A:B] [--seed S] [--dataset FILE.jsonl]
//            [--dump-workload FILE.jsonl] [--max-concurrency C] [--no-warmup]
//            [--json] [--quiet] [engine options]
//
// Submits a workload of token-id requests to the AsyncEngine, as vLLM's
// benchmark_throughput and benchmark_serving do, and reports the throughput
// and the latencies a streaming client sees: time to first token, time per
// output token, inter-token latency. Every request is greedy and has no stop
// tokens, so it generates exactly its max_tokens. Built with exceptions, as
// Run.cpp is.
//
//===----------------------------------------------------------------------===//
#include "Bench.h"

#include "EngineFlags.h"

#include "runtime/Error.h"
#include "runtime/Model.h"
#include "runtime/engine/AsyncEngine.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>

namespace llmc {
namespace {
using runtime::Error;
using Clock = std::chrono::steady_clock;

constexpr const char *kUsage =
    "usage: llmc bench throughput model.llmc [options]\n"
    "\n"
    "Runs a workload of requests through the serving engine and reports throughput\n"
    "(requests/s, tokens/s) and latency (time to first token, time per output token,\n"
    "inter-token latency). Every request is greedy and ignores end-of-sequence, so it\n"
    "generates exactly its max_tokens.\n"
    "Workload:\n"
    "  --num-prompts N              requests (default 32; with --dataset, its first N)\n"
    "  --input-len-range A:B        prompt lengths, uniform in [A, B] (default 128:512)\n"
    "  --output-len-range A:B       output lengths, uniform in [A, B] (default 64:256)\n"
    "  --seed S                     seeds the lengths and the prompts' token ids (default 0)\n"
    "  --dataset FILE               requests from a JSON-lines file, one a line:\n"
    "                               {\"prompt_ids\": [...], \"max_tokens\": N}; \"prompt\": \"text\"\n"
    "                               (the artifact's tokenizer encodes it) in place of\n"
    "                               prompt_ids; max_tokens left out: drawn from\n"
    "                               --output-len-range\n"
    "  --dump-workload FILE         write the requests to FILE as --dataset reads them, and\n"
    "                               exit without running them\n"
    "Running:\n"
    "  --max-concurrency C          at most C requests in flight; the next is submitted when\n"
    "                               one finishes (default: all at once; 1: one at a time)\n"
    "  --no-warmup                  skip the short request run, unmeasured, before the rest\n"
    "  --json                       print the results as one JSON object, nothing else\n"
    "  --quiet                      no progress or start-up log on stderr\n"
    "Engine:\n";

constexpr int64_t kDefaultNumPrompts = 32;

/// Lengths drawn uniformly from [low, high].
struct LengthRange {
  int64_t low;
  int64_t high;

  int64_t draw(std::mt19937_64 &rng) const {
    return std::uniform_int_distribution<int64_t>(low, high)(rng);
  }
};

struct BenchRequest {
  std::vector<int32_t> promptIds;
  int64_t maxTokens = 0;
};

struct BenchOptions {
  std::string artifactDir;
  /// Unset: 32 synthetic requests, or all of the dataset's.
  std::optional<int64_t> numPrompts;
  LengthRange inputLens{128, 512};
  LengthRange outputLens{64, 256};
  uint64_t seed = 0;
  std::string dataset;
  std::string dumpWorkload;
  /// 0: every request at once.
  int64_t maxConcurrency = 0;
  bool warmup = true;
  bool json = false;
  bool quiet = false;
  EngineFlags flags;
};

/// "A:B", or "A" for A:A, with 1 <= A <= B.
LengthRange parseRange(const std::string &text, const std::string &what) {
  size_t colon = text.find(':');
  LengthRange range;
  range.low = parseInteger(text.substr(0, colon), what + " (low end)", 1, INT32_MAX);
  range.high = colon == std::string::npos
                   ? range.low
                   : parseInteger(text.substr(colon + 1), what + " (high end)", range.low,
                                  INT32_MAX);
  return range;
}

/// Parses the arguments after "bench"; nothing when --help was asked for.
std::optional<BenchOptions> parseArguments(const std::vector<std::string> &args) {
  if (args.empty()) throw Error("no benchmark: llmc bench throughput model.llmc [options]");
  if (args[0] == "--help" || args[0] == "-h") return std::nullopt;
  if (args[0] != "throughput")
    throw Error("unknown benchmark '" + args[0] + "' (the one there is: throughput)");
  BenchOptions options;
  for (size_t i = 1; i < args.size(); ++i) {
    Argument argument =
        readArgument(args, i, {"--help", "-h", "--json", "--quiet", "--no-warmup"});
    const std::string &name = argument.name, &value = argument.value;
    if (name == "--help" || name == "-h") return std::nullopt;
    if (name == "--json") {
      options.json = true;
      continue;
    }
    if (name == "--quiet") {
      options.quiet = true;
      continue;
    }
    if (name == "--no-warmup") {
      options.warmup = false;
      continue;
    }
    if (argument.positional) {
      if (!options.artifactDir.empty())
        throw Error("one model at a time: '" + options.artifactDir + "' and '" + name + "'");
      options.artifactDir = name;
      continue;
    }
    if (name == "--num-prompts")
      options.numPrompts = parseInteger(value, name, 1, INT32_MAX);
    else if (name == "--input-len-range")
      options.inputLens = parseRange(value, name);
    else if (name == "--output-len-range")
      options.outputLens = parseRange(value, name);
    else if (name == "--seed")
      options.seed = static_cast<uint64_t>(parseInteger(value, name, 0));
    else if (name == "--dataset")
      options.dataset = value;
    else if (name == "--dump-workload")
      options.dumpWorkload = value;
    else if (name == "--max-concurrency")
      options.maxConcurrency = parseInteger(value, name, 1, INT32_MAX);
    else if (!options.flags.consume(name, value))
      throw Error("unknown option " + name + " (llmc bench throughput --help lists them)");
  }
  if (options.artifactDir.empty()) throw Error("no model: give the model.llmc directory");
  return options;
}

/// Requests of uniformly random lengths whose prompts are uniformly random
/// token ids.
std::vector<BenchRequest> syntheticWorkload(const BenchOptions &options, int64_t vocabSize) {
  std::mt19937_64 rng(options.seed);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocabSize - 1));
  std::vector<BenchRequest> requests(options.numPrompts.value_or(kDefaultNumPrompts));
  for (BenchRequest &request : requests) {
    request.promptIds.resize(options.inputLens.draw(rng));
    request.maxTokens = options.outputLens.draw(rng);
    for (int32_t &id : request.promptIds) id = token(rng);
  }
  return requests;
}

std::unique_ptr<runtime::tokenizer::Tokenizer> loadTokenizer(const runtime::Artifact &artifact) {
  if (artifact.tokenizerFile().empty())
    throw Error(artifact.directory() +
                " has no tokenizer.json, so the dataset's \"prompt\" texts cannot be encoded: "
                "give \"prompt_ids\"");
  return runtime::tokenizer::Tokenizer::fromFile(artifact.tokenizerFile());
}

/// The requests of the --dataset file (see kUsage), the first --num-prompts.
std::vector<BenchRequest> readDataset(const BenchOptions &options,
                                      const runtime::Artifact &artifact) {
  std::ifstream stream(options.dataset);
  if (!stream) throw Error(options.dataset + ": cannot open the dataset");
  std::mt19937_64 rng(options.seed);
  // Loaded at the first text prompt: a file of ids needs none.
  std::unique_ptr<runtime::tokenizer::Tokenizer> tokenizer;
  std::vector<BenchRequest> requests;
  std::string line;
  for (int lineNumber = 1;
       (!options.numPrompts || static_cast<int64_t>(requests.size()) < *options.numPrompts) &&
       std::getline(stream, line);
       ++lineNumber) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    std::string where = options.dataset + ":" + std::to_string(lineNumber) + ": ";
    nlohmann::json entry = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (entry.is_discarded() || !entry.is_object()) throw Error(where + "not a JSON object");
    BenchRequest request;
    if (entry.contains("prompt_ids")) {
      const nlohmann::json &ids = entry["prompt_ids"];
      if (!ids.is_array() || ids.empty())
        throw Error(where + "prompt_ids must be a non-empty list of token ids");
      for (const nlohmann::json &id : ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
          throw Error(where + "prompt_ids must be non-negative integer token ids");
        request.promptIds.push_back(id.get<int32_t>());
      }
    } else if (entry.contains("prompt") && entry["prompt"].is_string()) {
      if (!tokenizer) tokenizer = loadTokenizer(artifact);
      request.promptIds = tokenizer->encode(entry["prompt"].get<std::string>());
      if (request.promptIds.empty()) throw Error(where + "the prompt encodes to no tokens");
    } else {
      throw Error(where + "expected \"prompt_ids\": [...] or \"prompt\": \"text\"");
    }
    if (entry.contains("max_tokens")) {
      const nlohmann::json &maxTokens = entry["max_tokens"];
      if (!maxTokens.is_number_integer() || maxTokens.get<int64_t>() < 1)
        throw Error(where + "max_tokens must be a positive integer");
      request.maxTokens = maxTokens.get<int64_t>();
    } else {
      request.maxTokens = options.outputLens.draw(rng);
    }
    requests.push_back(std::move(request));
  }
  if (options.numPrompts && static_cast<int64_t>(requests.size()) < *options.numPrompts)
    throw Error(options.dataset + " has " + std::to_string(requests.size()) +
                " requests, fewer than --num-prompts " + std::to_string(*options.numPrompts));
  if (requests.empty()) throw Error(options.dataset + " has no requests");
  return requests;
}

void writeWorkload(const std::string &path, const std::vector<BenchRequest> &requests) {
  std::ofstream stream(path);
  if (!stream) throw Error(path + ": cannot write the workload");
  for (const BenchRequest &request : requests) {
    nlohmann::ordered_json line;
    line["prompt_ids"] = request.promptIds;
    line["max_tokens"] = request.maxTokens;
    stream << line.dump() << "\n";
  }
  if (!stream.flush()) throw Error(path + ": cannot write the workload");
}

/// Refuses a request that max_model_len would cut short, since its output
/// length is part of the workload.
void checkFits(const std::vector<BenchRequest> &requests, int64_t maxModelLen) {
  for (size_t i = 0; i < requests.size(); ++i) {
    int64_t length = static_cast<int64_t>(requests[i].promptIds.size()) + requests[i].maxTokens;
    if (length > maxModelLen)
      throw Error("request " + std::to_string(i) + ": its " +
                  std::to_string(requests[i].promptIds.size()) + " prompt and " +
                  std::to_string(requests[i].maxTokens) +
                  " output tokens exceed the engine's max model length, " +
                  std::to_string(maxModelLen) +
                  " (shorter --input-len-range/--output-len-range, or a larger KV cache or "
                  "--max-model-len)");
  }
}

/// What the callbacks record of one request.
struct RequestRecord {
  Clock::time_point submitted, firstToken, lastToken, finished;
  int64_t outputTokens = 0;
  /// Milliseconds between consecutive tokens.
  std::vector<double> gaps;
  /// Why it failed; empty when it generated all its tokens.
  std::string error;
};

/// The records, shared by the submitting thread and the engine's output
/// thread (which calls the callbacks). The callbacks hold it by shared_ptr:
/// after an error the engine may outlive the function that submitted.
struct Tracker {
  std::mutex mutex;
  std::condition_variable finishedOne;
  std::vector<RequestRecord> records;
  size_t numFinished = 0;
};

double milliseconds(Clock::duration duration) {
  return std::chrono::duration<double, std::milli>(duration).count();
}

/// Submits the requests in order, at most `maxConcurrency` in flight (0: no
/// limit), and waits for all of them. Shows `done i/n requests` on stderr
/// when `progress`.
std::vector<RequestRecord> runWorkload(runtime::AsyncEngine &engine,
                                       const std::vector<BenchRequest> &requests,
                                       int64_t maxConcurrency, bool progress) {
  auto tracker = std::make_shared<Tracker>();
  tracker->records.resize(requests.size());
  size_t limit = maxConcurrency > 0 ? static_cast<size_t>(maxConcurrency) : requests.size();
  size_t next = 0;
  size_t shown = SIZE_MAX;
  Clock::time_point shownAt;
  std::unique_lock<std::mutex> lock(tracker->mutex);
  while (tracker->numFinished < requests.size()) {
    while (next < requests.size() && next - tracker->numFinished < limit) {
      runtime::AsyncRequest request;
      request.promptIds = requests[next].promptIds;
      request.options.maxTokens = requests[next].maxTokens;
      request.options.sampling.temperature = 0;
      int64_t expected = requests[next].maxTokens;
      request.onEvent = [tracker, index = next, expected](const runtime::StreamEvent &event) {
        Clock::time_point now = Clock::now();
        std::lock_guard<std::mutex> guard(tracker->mutex);
        RequestRecord &record = tracker->records[index];
        if (event.token) {
          if (record.outputTokens++ == 0)
            record.firstToken = now;
          else
            record.gaps.push_back(milliseconds(now - record.lastToken));
          record.lastToken = now;
        }
        if (!event.last()) return;
        record.finished = now;
        if (!event.error.empty())
          record.error = event.error;
        else if (event.finishReason != runtime::FinishReason::Length ||
                 record.outputTokens != expected)
          record.error = std::string("ended (") + runtime::finishReasonName(event.finishReason) +
                         ") after " + std::to_string(record.outputTokens) + " of its " +
                         std::to_string(expected) + " tokens";
        ++tracker->numFinished;
        tracker->finishedOne.notify_all();
      };
      tracker->records[next++].submitted = Clock::now();
      // The callback takes the lock: submit without it.
      lock.unlock();
      engine.submit(std::move(request));
      lock.lock();
    }
    size_t seen = tracker->numFinished;
    tracker->finishedOne.wait_for(lock, std::chrono::milliseconds(250),
                                  [&] { return tracker->numFinished != seen; });
    // On a change, and at most four times a second but for the last.
    Clock::time_point now = Clock::now();
    bool done = tracker->numFinished == requests.size();
    if (progress && tracker->numFinished != shown &&
        (done || now - shownAt >= std::chrono::milliseconds(250))) {
      std::fprintf(stderr, "\r  done %zu/%zu requests", tracker->numFinished, requests.size());
      if (done) std::fputc('\n', stderr);
      shown = tracker->numFinished;
      shownAt = now;
    }
  }
  return tracker->records;
}

/// A one-block prompt and a few tokens, to fault in the weights and start the
/// threads before the measured run.
void warmUp(runtime::AsyncEngine &engine, int64_t vocabSize, uint64_t seed) {
  // Its own ids, so that the prefix cache gives the workload nothing.
  std::mt19937_64 rng(~seed);
  std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(vocabSize - 1));
  BenchRequest request;
  int64_t promptLen = std::min<int64_t>(16, engine.maxModelLen() / 2);
  request.promptIds.resize(promptLen);
  request.maxTokens = std::min<int64_t>(4, engine.maxModelLen() - promptLen);
  for (int32_t &id : request.promptIds) id = token(rng);
  std::vector<RequestRecord> records = runWorkload(engine, {request}, 0, false);
  if (!records[0].error.empty()) throw Error("the warm-up request failed: " + records[0].error);
}

/// The mean, median and 99th percentile of a sample (zeros when empty).
struct Summary {
  double mean = 0, p50 = 0, p99 = 0;
};

/// numpy's default percentile: linear between the closest ranks.
double percentile(const std::vector<double> &sorted, double p) {
  double rank = p / 100 * static_cast<double>(sorted.size() - 1);
  size_t below = static_cast<size_t>(rank);
  size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (rank - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

Summary summarize(std::vector<double> values) {
  Summary summary;
  if (values.empty()) return summary;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double value : values) sum += value;
  summary.mean = sum / static_cast<double>(values.size());
  summary.p50 = percentile(values, 50);
  summary.p99 = percentile(values, 99);
  return summary;
}

/// The engine's counters of the measured run: `after` less the warm-up's.
runtime::EngineStats since(const runtime::EngineStats &after, const runtime::EngineStats &before) {
  runtime::EngineStats delta = after;
  delta.numSteps -= before.numSteps;
  delta.computedTokens -= before.computedTokens;
  delta.promptTokensComputed -= before.promptTokensComputed;
  delta.cachedPromptTokens -= before.cachedPromptTokens;
  delta.generatedTokens -= before.generatedTokens;
  delta.numPreemptions -= before.numPreemptions;
  delta.prefixCache.queriedBlocks -= before.prefixCache.queriedBlocks;
  delta.prefixCache.hitBlocks -= before.prefixCache.hitBlocks;
  delta.prefillStepSeconds -= before.prefillStepSeconds;
  delta.decodeStepSeconds -= before.decodeStepSeconds;
  return delta;
}

struct BenchResult {
  size_t numRequests = 0;
  size_t numFailed = 0;
  std::string firstError;
  int64_t maxConcurrency = 0;
  int64_t inputTokens = 0;
  int64_t outputTokens = 0;
  /// From the first submit to the last request's end.
  double seconds = 0;
  Summary ttft, tpot, itl; // milliseconds
  runtime::EngineStats engine;
  int64_t maxNumSeqs = 0;
  int64_t maxModelLen = 0;
  unsigned threads = 0;

  double perSecond(double count) const { return seconds > 0 ? count / seconds : 0.0; }
};

/// Throughput over the successful requests, latencies from their records.
void measure(const std::vector<BenchRequest> &requests, const std::vector<RequestRecord> &records,
             BenchResult &result) {
  result.numRequests = requests.size();
  std::vector<double> ttft, tpot, itl;
  Clock::time_point start = records.front().submitted, end = start;
  for (size_t i = 0; i < records.size(); ++i) {
    const RequestRecord &record = records[i];
    end = std::max(end, record.finished);
    if (!record.error.empty()) {
      if (result.numFailed++ == 0)
        result.firstError = "request " + std::to_string(i) + ": " + record.error;
      continue;
    }
    result.inputTokens += static_cast<int64_t>(requests[i].promptIds.size());
    result.outputTokens += record.outputTokens;
    ttft.push_back(milliseconds(record.firstToken - record.submitted));
    if (record.outputTokens > 1)
      tpot.push_back(milliseconds(record.lastToken - record.firstToken) /
                     static_cast<double>(record.outputTokens - 1));
    itl.insert(itl.end(), record.gaps.begin(), record.gaps.end());
  }
  result.seconds = std::chrono::duration<double>(end - start).count();
  result.ttft = summarize(std::move(ttft));
  result.tpot = summarize(std::move(tpot));
  result.itl = summarize(std::move(itl));
}

nlohmann::ordered_json toJson(const Summary &summary) {
  nlohmann::ordered_json object;
  object["mean"] = summary.mean;
  object["p50"] = summary.p50;
  object["p99"] = summary.p99;
  return object;
}

void printJson(const BenchOptions &options, const BenchResult &result) {
  nlohmann::ordered_json report;
  report["model"] = options.artifactDir;
  report["num_requests"] = result.numRequests;
  report["failed_requests"] = result.numFailed;
  if (result.numFailed) report["first_error"] = result.firstError;
  report["max_concurrency"] = result.maxConcurrency;
  report["threads"] = result.threads;
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
  nlohmann::ordered_json engine;
  engine["steps"] = result.engine.numSteps;
  engine["preemptions"] = result.engine.numPreemptions;
  engine["prefix_cache_hit_rate"] = result.engine.prefixCache.hitRate();
  engine["computed_tokens"] = result.engine.computedTokens;
  engine["cached_prompt_tokens"] = result.engine.cachedPromptTokens;
  engine["prefill_step_s"] = result.engine.prefillStepSeconds;
  engine["decode_step_s"] = result.engine.decodeStepSeconds;
  engine["kv_blocks"] = result.engine.numKvBlocks;
  engine["max_num_seqs"] = result.maxNumSeqs;
  engine["max_model_len"] = result.maxModelLen;
  report["engine"] = std::move(engine);
  std::cout << report.dump() << "\n";
}

void printTable(const BenchResult &result) {
  std::printf("llmc bench throughput: %zu requests, at most %lld in flight, %u threads\n",
              result.numRequests, static_cast<long long>(result.maxConcurrency), result.threads);
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
  std::printf("  engine: %lld steps, %lld preemptions, prefix cache hit rate %.1f%%, %lld KV blocks, "
              "max_num_seqs %lld, max_model_len %lld\n",
              static_cast<long long>(result.engine.numSteps),
              static_cast<long long>(result.engine.numPreemptions),
              100 * result.engine.prefixCache.hitRate(),
              static_cast<long long>(result.engine.numKvBlocks),
              static_cast<long long>(result.maxNumSeqs), static_cast<long long>(result.maxModelLen));
}
} // namespace

int runBench(const std::vector<std::string> &args) {
  try {
    std::optional<BenchOptions> options = parseArguments(args);
    if (!options) {
      std::cout << kUsage << kEngineFlagsUsage;
      return 0;
    }
    bool chatty = !options->quiet && !options->json;
    std::unique_ptr<runtime::Artifact> artifact = runtime::Artifact::load(options->artifactDir);
    int64_t vocabSize = artifact->model().vocabSize;
    std::vector<BenchRequest> requests = options->dataset.empty()
                                             ? syntheticWorkload(*options, vocabSize)
                                             : readDataset(*options, *artifact);
    if (!options->dumpWorkload.empty()) {
      writeWorkload(options->dumpWorkload, requests);
      if (chatty)
        std::cerr << "llmc bench: wrote " << requests.size() << " requests to "
                  << options->dumpWorkload << "\n";
      return 0;
    }

    runtime::Model model(std::move(artifact), options->flags.model);
    if (chatty) std::cerr << "llmc bench: " << model.kvCacheSummary() << "\n";
    runtime::AsyncEngineConfig config;
    config.engine = options->flags.engine;
    config.maxPendingRequests = std::max(config.maxPendingRequests, requests.size());
    runtime::AsyncEngine engine(model, /*tokenizer=*/nullptr, config);
    checkFits(requests, engine.maxModelLen());
    if (options->warmup) warmUp(engine, vocabSize, options->seed);
    runtime::EngineStats before = engine.stats().engine;
    std::vector<RequestRecord> records =
        runWorkload(engine, requests, options->maxConcurrency, chatty);
    engine.shutdown(/*drain=*/true);

    BenchResult result;
    measure(requests, records, result);
    result.engine = since(engine.stats().engine, before);
    result.maxConcurrency = options->maxConcurrency > 0
                                ? std::min<int64_t>(options->maxConcurrency, requests.size())
                                : static_cast<int64_t>(requests.size());
    result.maxNumSeqs = engine.maxNumSeqs();
    result.maxModelLen = engine.maxModelLen();
    result.threads = model.device().numThreads();
    if (options->json)
      printJson(*options, result);
    else
      printTable(result);
    if (result.numFailed) {
      std::cerr << "llmc bench: error: " << result.numFailed << " of " << result.numRequests
                << " requests failed; " << result.firstError << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception &error) {
    std::cerr << "llmc bench: error: " << error.what() << "\n";
    return 1;
  }
}

} // namespace llmc
