//===- Bench.cpp - `llmc bench`: the serving engine under load -----------===//
//
//   llmc bench serve --url http://127.0.0.1:8000 [options]   (BenchServe.cpp)
//   llmc bench throughput model.llmc [--num-prompts N] [--input-len-range A:B]
//            [--output-len-range A:B] [--seed S] [--dataset FILE.jsonl]
//            [--dump-workload FILE.jsonl] [--max-concurrency C] [--no-warmup]
//            [--json] [--quiet] [engine options]
//
// `llmc bench throughput` submits a workload of token-id requests
// (BenchWorkload.h) to the AsyncEngine, as vLLM's benchmark_throughput and
// benchmark_serving do, and reports the throughput and the latencies a
// streaming client sees (BenchReport.h): time to first token, time per output
// token, inter-token latency. Every request is greedy and has no stop tokens,
// so it generates exactly its max_tokens. `llmc bench serve` is
// BenchServe.cpp's. Built with exceptions, as Run.cpp is.
//
//===----------------------------------------------------------------------===//
#include "Bench.h"

#include "BenchReport.h"
#include "BenchServe.h"
#include "BenchWorkload.h"
#include "EngineFlags.h"

#include "runtime/core/Error.h"
#include "runtime/core/Model.h"
#include "runtime/engine/AsyncEngine.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>

namespace llmc {
namespace {
using runtime::Error;

constexpr const char *kBenchesUsage =
    "usage: llmc bench throughput model.llmc [options]   the serving engine in this process\n"
    "       llmc bench serve --url URL [options]        a running server, over HTTP\n"
    "(llmc bench throughput --help, llmc bench serve --help: their options)\n";

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

struct BenchOptions {
  std::string artifactDir;
  WorkloadOptions workload;
  /// 0: every request at once.
  int64_t maxConcurrency = 0;
  bool warmup = true;
  bool json = false;
  bool quiet = false;
  EngineFlags flags;
};

/// Parses the arguments after "bench throughput"; nothing when --help was
/// asked for.
std::optional<BenchOptions> parseArguments(const std::vector<std::string> &args) {
  BenchOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
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
    if (options.workload.consume(name, value)) continue;
    if (name == "--max-concurrency")
      options.maxConcurrency = parseInteger(value, name, 1, INT32_MAX);
    else if (!options.flags.consume(name, value))
      throw Error("unknown option " + name + " (llmc bench throughput --help lists them)");
  }
  if (options.artifactDir.empty()) throw Error("no model: give the model.llmc directory");
  return options;
}

std::unique_ptr<runtime::tokenizer::Tokenizer> loadTokenizer(const runtime::Artifact &artifact) {
  if (artifact.tokenizerFile().empty())
    throw Error(artifact.directory() +
                " has no tokenizer.json, so the dataset's \"prompt\" texts cannot be encoded: "
                "give \"prompt_ids\"");
  return runtime::tokenizer::Tokenizer::fromFile(artifact.tokenizerFile());
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

/// The records, shared by the submitting thread and the engine's output
/// thread (which calls the callbacks). The callbacks hold it by shared_ptr:
/// after an error the engine may outlive the function that submitted.
struct Tracker {
  std::mutex mutex;
  std::condition_variable finishedOne;
  std::vector<RequestRecord> records;
  size_t numFinished = 0;
};

/// Submits the requests in order, at most `maxConcurrency` in flight (0: no
/// limit), and waits for all of them. The requests that fit at one time go in
/// one submission, which the engine starts in one step: the first ones do not
/// wait on the threads' timing, as in vLLM's offline runs. Shows `done i/n
/// requests` on stderr when `progress`.
std::vector<RequestRecord> runWorkload(runtime::AsyncEngine &engine,
                                       const std::vector<BenchRequest> &requests,
                                       int64_t maxConcurrency, bool progress) {
  auto tracker = std::make_shared<Tracker>();
  tracker->records.resize(requests.size());
  size_t limit = maxConcurrency > 0 ? static_cast<size_t>(maxConcurrency) : requests.size();
  size_t next = 0;
  ProgressLine progressLine(requests.size());
  std::unique_lock<std::mutex> lock(tracker->mutex);
  while (tracker->numFinished < requests.size()) {
    std::vector<runtime::AsyncRequest> batch;
    for (; next < requests.size() && next - tracker->numFinished < limit; ++next) {
      runtime::AsyncRequest &request = batch.emplace_back();
      request.promptIds = requests[next].promptIds;
      request.options.maxTokens = requests[next].maxTokens;
      request.options.sampling.temperature = 0;
      int64_t expected = requests[next].maxTokens;
      request.onEvent = [tracker, index = next, expected](const runtime::StreamEvent &event) {
        BenchClock::time_point now = BenchClock::now();
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
      tracker->records[next].inputTokens = static_cast<int64_t>(requests[next].promptIds.size());
      tracker->records[next].submitted = BenchClock::now();
    }
    if (!batch.empty()) {
      // The callbacks take the lock: submit without it.
      lock.unlock();
      engine.submit(std::move(batch));
      lock.lock();
    }
    size_t seen = tracker->numFinished;
    tracker->finishedOne.wait_for(lock, std::chrono::milliseconds(250),
                                  [&] { return tracker->numFinished != seen; });
    if (progress) progressLine.update(tracker->numFinished);
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

/// The engine's counters of the measured run: `after` less the warm-up's.
runtime::EngineStats since(const runtime::EngineStats &after, const runtime::EngineStats &before) {
  runtime::EngineStats delta = after;
  delta.numSteps -= before.numSteps;
  delta.computedTokens -= before.computedTokens;
  delta.promptTokensComputed -= before.promptTokensComputed;
  delta.cachedPromptTokens -= before.cachedPromptTokens;
  delta.generatedTokens -= before.generatedTokens;
  delta.numPreemptions -= before.numPreemptions;
  delta.numSwapPreemptions -= before.numSwapPreemptions;
  delta.prefixCache.queriedBlocks -= before.prefixCache.queriedBlocks;
  delta.prefixCache.hitBlocks -= before.prefixCache.hitBlocks;
  delta.prefillStepSeconds -= before.prefillStepSeconds;
  delta.decodeStepSeconds -= before.decodeStepSeconds;
  return delta;
}

/// A throughput run's figures and the engine's settings and counters.
struct BenchResult {
  LoadResult load;
  int64_t maxConcurrency = 0;
  runtime::EngineStats engine;
  int64_t maxNumSeqs = 0;
  int64_t maxModelLen = 0;
  unsigned threads = 0;
};

void printJson(const BenchOptions &options, const BenchResult &result) {
  nlohmann::ordered_json report;
  report["model"] = options.artifactDir;
  appendRequestCounts(report, result.load);
  report["max_concurrency"] = result.maxConcurrency;
  report["threads"] = result.threads;
  appendMeasurements(report, result.load);
  nlohmann::ordered_json engine;
  engine["steps"] = result.engine.numSteps;
  engine["preemptions"] = result.engine.numPreemptions;
  engine["swap_preemptions"] = result.engine.numSwapPreemptions;
  engine["prefix_cache_hit_rate"] = result.engine.prefixCache.hitRate();
  engine["computed_tokens"] = result.engine.computedTokens;
  engine["cached_prompt_tokens"] = result.engine.cachedPromptTokens;
  engine["prefill_step_s"] = result.engine.prefillStepSeconds;
  engine["decode_step_s"] = result.engine.decodeStepSeconds;
  engine["kv_blocks"] = result.engine.numKvBlocks;
  engine["draft_tokens"] = result.engine.draftTokens;
  engine["accepted_draft_tokens"] = result.engine.acceptedDraftTokens;
  engine["max_num_seqs"] = result.maxNumSeqs;
  engine["max_model_len"] = result.maxModelLen;
  report["engine"] = std::move(engine);
  std::cout << report.dump() << "\n";
}

void printTable(const BenchResult &result) {
  std::printf("llmc bench throughput: %zu requests, at most %lld in flight, %u threads\n",
              result.load.numRequests, static_cast<long long>(result.maxConcurrency),
              result.threads);
  printMeasurements(result.load);
  std::printf("  engine: %lld steps, %lld preemptions (%lld swapped), prefix cache hit rate "
              "%.1f%%, %lld KV blocks, max_num_seqs %lld, max_model_len %lld\n",
              static_cast<long long>(result.engine.numSteps),
              static_cast<long long>(result.engine.numPreemptions),
              static_cast<long long>(result.engine.numSwapPreemptions),
              100 * result.engine.prefixCache.hitRate(),
              static_cast<long long>(result.engine.numKvBlocks),
              static_cast<long long>(result.maxNumSeqs), static_cast<long long>(result.maxModelLen));
  if (result.engine.draftTokens > 0)
    std::printf("  speculative decoding: %lld of %lld draft tokens accepted (%.1f%%)\n",
                static_cast<long long>(result.engine.acceptedDraftTokens),
                static_cast<long long>(result.engine.draftTokens),
                100.0 * double(result.engine.acceptedDraftTokens) /
                    double(result.engine.draftTokens));
}

/// Runs `llmc bench throughput` with the arguments after "throughput".
int runThroughput(const std::vector<std::string> &args) {
  try {
    std::optional<BenchOptions> options = parseArguments(args);
    if (!options) {
      std::cout << kUsage << kEngineFlagsUsage;
      return 0;
    }
    bool chatty = !options->quiet && !options->json;
    std::unique_ptr<runtime::Artifact> artifact = runtime::Artifact::load(options->artifactDir);
    int64_t vocabSize = artifact->model().vocabSize;
    // Loaded at the first text prompt: a dataset of ids needs none.
    std::unique_ptr<runtime::tokenizer::Tokenizer> tokenizer;
    TextEncoder encode = [&](const std::string &text) {
      if (!tokenizer) tokenizer = loadTokenizer(*artifact);
      return tokenizer->encode(text);
    };
    std::vector<BenchRequest> requests = options->workload.dataset.empty()
                                             ? syntheticWorkload(options->workload, vocabSize)
                                             : readDataset(options->workload, encode);
    if (!options->workload.dumpWorkload.empty()) {
      writeWorkload(options->workload.dumpWorkload, requests);
      if (chatty)
        std::cerr << "llmc bench: wrote " << requests.size() << " requests to "
                  << options->workload.dumpWorkload << "\n";
      return 0;
    }

    runtime::Model model(std::move(artifact), options->flags.model);
    if (chatty) std::cerr << "llmc bench: " << model.kvCacheSummary() << "\n";
    runtime::AsyncEngineConfig config;
    config.engine = options->flags.engine;
    config.maxPendingRequests = std::max(config.maxPendingRequests, requests.size());
    runtime::AsyncEngine engine(model, /*tokenizer=*/nullptr, config);
    checkFits(requests, engine.maxModelLen());
    if (options->warmup) warmUp(engine, vocabSize, options->workload.seed);
    runtime::EngineStats before = engine.stats().engine;
    std::vector<RequestRecord> records =
        runWorkload(engine, requests, options->maxConcurrency, chatty);
    engine.shutdown(/*drain=*/true);

    BenchResult result;
    result.load = measure(records);
    result.engine = since(engine.stats().engine, before);
    result.maxConcurrency = options->maxConcurrency > 0
                                ? std::min<int64_t>(options->maxConcurrency, requests.size())
                                : static_cast<int64_t>(requests.size());
    result.maxNumSeqs = engine.maxNumSeqs();
    result.maxModelLen = engine.maxModelLen();
    result.threads = model.numThreads();
    if (options->json)
      printJson(*options, result);
    else
      printTable(result);
    if (result.load.numFailed) {
      std::cerr << "llmc bench: error: " << result.load.numFailed << " of "
                << result.load.numRequests << " requests failed; " << result.load.firstError
                << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception &error) {
    std::cerr << "llmc bench: error: " << error.what() << "\n";
    return 1;
  }
}
} // namespace

int runBench(const std::vector<std::string> &args) {
  std::string benchmark = args.empty() ? "" : args[0];
  std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  if (benchmark == "throughput") return runThroughput(rest);
  if (benchmark == "serve") return runBenchServe(rest);
  if (benchmark == "--help" || benchmark == "-h") {
    std::cout << kBenchesUsage;
    return 0;
  }
  std::cerr << "llmc bench: error: "
            << (args.empty() ? "no benchmark: llmc bench throughput model.llmc [options], or "
                               "llmc bench serve --url URL [options]"
                             : "unknown benchmark '" + benchmark +
                                   "' (the ones there are: throughput, serve)")
            << "\n";
  return 1;
}

} // namespace llmc
