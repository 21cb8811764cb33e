//===- BenchServe.cpp - `llmc bench serve`: a running server under load ---===//
//
//   llmc bench serve [--url http://127.0.0.1:8000] [--request-rate R]
//            [--burstiness K] [--max-concurrency C] [--model NAME]
//            [--endpoint /v1/completions|/v1/chat/completions] [--api-key KEY]
//            [workload options, as `llmc bench throughput`] [--json] [--quiet]
//
// Sends the workload of `llmc bench throughput` to an OpenAI-compatible
// server as streaming requests that arrive at a given rate, as vLLM's
// benchmark_serving does, and reports the throughput and the latencies its
// client sees. The HTTP client is BenchServeClient.cpp. Built with exceptions,
// as Bench.cpp is.
//
//===----------------------------------------------------------------------===//
#include "BenchServe.h"

#include "BenchReport.h"
#include "BenchServeClient.h"
#include "BenchWorkload.h"
#include "EngineFlags.h"

#include "runtime/core/Error.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <random>

namespace llmc {
namespace {
using runtime::Error;

constexpr const char *kUsage =
    "usage: llmc bench serve [--url http://HOST:PORT] [options]\n"
    "\n"
    "Sends a workload of streaming requests to a running OpenAI-compatible server as\n"
    "they arrive, and reports throughput (requests/s, tokens/s) and the latencies its\n"
    "client sees (time to first token, time per output token, inter-token latency).\n"
    "Every request is greedy and ignores end-of-sequence (\"ignore_eos\": true), so it\n"
    "generates exactly its max_tokens.\n"
    "Server:\n"
    "  --url URL                    the server's base URL (default http://127.0.0.1:8000)\n"
    "  --endpoint PATH              /v1/completions (default) or /v1/chat/completions (text\n"
    "                               prompts only: a --dataset of \"prompt\" texts)\n"
    "  --model NAME                 the requests' model (default: the first GET /v1/models\n"
    "                               lists)\n"
    "  --api-key KEY                sent as a bearer token (default: $OPENAI_API_KEY, if set)\n"
    "Workload:\n"
    "  --num-prompts N              requests (default 32; with --dataset, its first N)\n"
    "  --input-len-range A:B        prompt lengths, uniform in [A, B] (default 128:512)\n"
    "  --output-len-range A:B       output lengths, uniform in [A, B] (default 64:256)\n"
    "  --vocab-size V               the prompts' token ids are uniform in [0, V) (default 512:\n"
    "                               within any model's vocabulary; the ids' values do not\n"
    "                               change the work)\n"
    "  --seed S                     seeds the lengths, the token ids and the arrivals\n"
    "                               (default 0)\n"
    "  --dataset FILE               requests from a JSON-lines file, one a line:\n"
    "                               {\"prompt_ids\": [...], \"max_tokens\": N}; \"prompt\": \"text\"\n"
    "                               (sent as text) in place of prompt_ids; max_tokens left\n"
    "                               out: drawn from --output-len-range\n"
    "  --dump-workload FILE         write the requests to FILE as --dataset reads them, and\n"
    "                               exit without sending them\n"
    "Arrivals:\n"
    "  --request-rate R             requests per second, arriving as a Poisson process\n"
    "                               (default inf: all at once)\n"
    "  --burstiness K               the gaps between arrivals are gamma-distributed with\n"
    "                               shape K and mean 1/R: 1 is Poisson, below 1 burstier,\n"
    "                               above 1 more regular (default 1)\n"
    "  --max-concurrency C          at most C requests in flight; an arrival beyond them\n"
    "                               waits for one to finish (default: no limit)\n"
    "Output:\n"
    "  --json                       print the results as one JSON object, nothing else\n"
    "  --quiet                      no progress or warnings on stderr\n";

constexpr const char *kCompletions = "/v1/completions";
constexpr const char *kChatCompletions = "/v1/chat/completions";

/// http://HOST[:PORT][/PATH], HOST a name, an IPv4 address or [an IPv6 one].
HttpServer parseServerUrl(const std::string &url) {
  const std::string scheme = "http://";
  auto bad = [&](const std::string &why) {
    return Error("--url must be http://HOST[:PORT][/PATH] (" + why + "), not '" + url + "'");
  };
  if (url.rfind(scheme, 0) != 0) throw bad("http only: no TLS");
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  HttpServer server;
  server.authority = rest.substr(0, slash);
  server.basePath = slash == std::string::npos ? "" : rest.substr(slash);
  while (!server.basePath.empty() && server.basePath.back() == '/') server.basePath.pop_back();
  const std::string &authority = server.authority;
  size_t portColon;
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) throw bad("no ']' after the IPv6 address");
    server.host = authority.substr(1, close - 1);
    portColon = close + 1 < authority.size() && authority[close + 1] == ':' ? close + 1
                                                                           : std::string::npos;
    if (portColon == std::string::npos && close + 1 != authority.size())
      throw bad("text after the IPv6 address");
  } else {
    portColon = authority.find(':');
    server.host = authority.substr(0, portColon);
  }
  if (server.host.empty()) throw bad("no host");
  server.port = portColon == std::string::npos ? "80" : authority.substr(portColon + 1);
  if (server.port.empty() || server.port.find_first_not_of("0123456789") != std::string::npos ||
      server.port.size() > 5 || std::stoi(server.port) < 1 || std::stoi(server.port) > 65535)
    throw bad("the port must be a number from 1 to 65535");
  return server;
}

struct ServeOptions {
  HttpServer server = parseServerUrl("http://127.0.0.1:8000");
  std::string endpoint = kCompletions;
  /// Empty: the first model the server lists.
  std::string model;
  std::string apiKey;
  double requestRate = std::numeric_limits<double>::infinity();
  double burstiness = 1;
  /// 0: no limit.
  int64_t maxConcurrency = 0;
  int64_t vocabSize = 512;
  WorkloadOptions workload;
  bool json = false;
  bool quiet = false;
};

/// A finite number above zero, or "inf" when `allowInfinity`.
double parsePositiveNumber(const std::string &text, const std::string &what,
                           bool allowInfinity) {
  if (allowInfinity && text == "inf") return std::numeric_limits<double>::infinity();
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(value) || value <= 0)
    throw Error(what + " must be a number above 0" + (allowInfinity ? " or inf" : "") +
                ", not '" + text + "'");
  return value;
}

/// Parses the arguments after "bench serve"; nothing when --help was asked
/// for.
std::optional<ServeOptions> parseArguments(const std::vector<std::string> &args) {
  ServeOptions options;
  if (const char *key = std::getenv("OPENAI_API_KEY")) options.apiKey = key;
  for (size_t i = 0; i < args.size(); ++i) {
    Argument argument = readArgument(args, i, {"--help", "-h", "--json", "--quiet"});
    const std::string &name = argument.name, &value = argument.value;
    if (name == "--help" || name == "-h") return std::nullopt;
    if (argument.positional)
      throw Error("unexpected argument '" + name + "' (llmc bench serve takes options only)");
    if (name == "--json")
      options.json = true;
    else if (name == "--quiet")
      options.quiet = true;
    else if (options.workload.consume(name, value))
      continue;
    else if (name == "--url")
      options.server = parseServerUrl(value);
    else if (name == "--endpoint") {
      if (value != kCompletions && value != kChatCompletions)
        throw Error(name + " must be " + kCompletions + " or " + kChatCompletions + ", not '" +
                    value + "'");
      options.endpoint = value;
    } else if (name == "--model")
      options.model = value;
    else if (name == "--api-key")
      options.apiKey = value;
    else if (name == "--request-rate")
      options.requestRate = parsePositiveNumber(value, name, /*allowInfinity=*/true);
    else if (name == "--burstiness")
      options.burstiness = parsePositiveNumber(value, name, /*allowInfinity=*/false);
    else if (name == "--max-concurrency")
      options.maxConcurrency = parseInteger(value, name, 1, INT32_MAX);
    else if (name == "--vocab-size")
      options.vocabSize = parseInteger(value, name, 1, INT32_MAX);
    else
      throw Error("unknown option " + name + " (llmc bench serve --help lists them)");
  }
  return options;
}

/// The first model GET /v1/models lists.
std::string firstListedModel(const HttpReply &reply) {
  if (reply.status != 200)
    throw Error("GET /v1/models answered HTTP " + std::to_string(reply.status) +
                ": give the model with --model");
  nlohmann::json models = nlohmann::json::parse(reply.body, nullptr, /*allow_exceptions=*/false);
  if (models.is_object() && models.contains("data") && models["data"].is_array() &&
      !models["data"].empty() && models["data"][0].is_object() &&
      models["data"][0].contains("id") && models["data"][0]["id"].is_string())
    return models["data"][0]["id"].get<std::string>();
  throw Error("GET /v1/models lists no model ({\"data\": [{\"id\": ...}]}): give the model with "
              "--model");
}

/// When each request arrives, in seconds from the start: the first at once,
/// then after gaps drawn from a gamma distribution of shape `burstiness` and
/// mean 1/rate (an exponential one for burstiness 1: a Poisson process).
std::vector<double> arrivalTimes(size_t count, double rate, double burstiness, uint64_t seed) {
  std::vector<double> times(count, 0.0);
  if (std::isinf(rate)) return times;
  // Not the workload's generator: the same seed gives the same requests at
  // any rate.
  std::mt19937_64 rng(~seed);
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  for (size_t i = 1; i < count; ++i) times[i] = times[i - 1] + gap(rng);
  return times;
}

/// The JSON body of a streaming, greedy request that generates exactly its
/// max_tokens.
std::string requestBody(const BenchRequest &request, const std::string &model, bool chat) {
  nlohmann::ordered_json body;
  body["model"] = model;
  if (chat)
    body["messages"] = {{{"role", "user"}, {"content", request.promptText}}};
  else if (!request.promptText.empty())
    body["prompt"] = request.promptText;
  else
    body["prompt"] = request.promptIds;
  body["max_tokens"] = request.maxTokens;
  body["temperature"] = 0;
  body["ignore_eos"] = true;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  return body.dump();
}

/// How the requests arrive, for the table's title.
std::string arrivalsText(const ServeOptions &options) {
  if (std::isinf(options.requestRate)) return "all at once";
  char text[96];
  if (options.burstiness == 1)
    std::snprintf(text, sizeof text, "%g requests/s (Poisson)", options.requestRate);
  else
    std::snprintf(text, sizeof text, "%g requests/s (gamma, burstiness %g)",
                  options.requestRate, options.burstiness);
  return text;
}

/// What a run reports beyond the shared figures.
struct ServeResult {
  LoadResult load;
  std::string url;
  std::string model;
  int64_t maxConcurrency = 0;
};

void printJson(const ServeOptions &options, const ServeResult &result) {
  nlohmann::ordered_json report;
  report["model"] = result.model;
  report["url"] = result.url;
  appendRequestCounts(report, result.load);
  if (std::isinf(options.requestRate))
    report["request_rate"] = "inf";
  else
    report["request_rate"] = options.requestRate;
  report["burstiness"] = options.burstiness;
  report["max_concurrency"] = result.maxConcurrency;
  appendMeasurements(report, result.load);
  std::cout << report.dump() << "\n";
}

void printTable(const ServeOptions &options, const ServeResult &result) {
  std::printf("llmc bench serve: %zu requests to %s (model %s), %s, at most %lld in flight\n",
              result.load.numRequests, result.url.c_str(), result.model.c_str(),
              arrivalsText(options).c_str(), static_cast<long long>(result.maxConcurrency));
  printMeasurements(result.load);
}

/// Warns when the server generated other than the successful requests'
/// max_tokens: then it ignored ignore_eos, and the workload was not the one
/// asked for.
void checkOutputLengths(const std::vector<BenchRequest> &requests,
                        const std::vector<RequestRecord> &records) {
  int64_t asked = 0, generated = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    if (!records[i].error.empty()) continue;
    asked += requests[i].maxTokens;
    generated += records[i].outputTokens;
  }
  if (asked != generated)
    std::cerr << "llmc bench serve: warning: the server generated " << generated
              << " tokens where the requests asked for " << asked
              << " (does it honour \"ignore_eos\"?)\n";
}

} // namespace

int runBenchServe(const std::vector<std::string> &args) {
  try {
    std::optional<ServeOptions> options = parseArguments(args);
    if (!options) {
      std::cout << kUsage;
      return 0;
    }
    bool chatty = !options->quiet && !options->json;
    std::vector<BenchRequest> requests =
        options->workload.dataset.empty()
            ? syntheticWorkload(options->workload, options->vocabSize)
            : readDataset(options->workload, /*encode=*/nullptr);
    if (!options->workload.dumpWorkload.empty()) {
      writeWorkload(options->workload.dumpWorkload, requests);
      if (chatty)
        std::cerr << "llmc bench serve: wrote " << requests.size() << " requests to "
                  << options->workload.dumpWorkload << "\n";
      return 0;
    }
    bool chat = options->endpoint == kChatCompletions;
    if (chat)
      for (const BenchRequest &request : requests)
        if (request.promptText.empty())
          throw Error(std::string(kChatCompletions) +
                      " takes text prompts: give a --dataset whose lines have \"prompt\": "
                      "\"text\"");

    const HttpServer &server = options->server;
    // Asked even with --model: it tells an unreachable server before the run.
    HttpReply models = httpGet(server, server.basePath + "/v1/models", options->apiKey);
    ServeResult result;
    result.model = options->model.empty() ? firstListedModel(models) : options->model;
    result.url = "http://" + server.authority + server.basePath + options->endpoint;

    std::vector<double> arrivals = arrivalTimes(requests.size(), options->requestRate,
                                                options->burstiness, options->workload.seed);
    std::vector<StreamingRequest> streamingRequests(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      streamingRequests[i].body = requestBody(requests[i], result.model, chat);
      streamingRequests[i].arrival = arrivals[i];
      streamingRequests[i].promptTokens = static_cast<int64_t>(requests[i].promptIds.size());
    }
    StreamingLoad load;
    load.server = server;
    load.path = server.basePath + options->endpoint;
    load.apiKey = options->apiKey;
    load.maxConcurrency = options->maxConcurrency;
    ProgressLine progressLine(requests.size());
    if (chatty) load.onFinished = [&](size_t numFinished) { progressLine.update(numFinished); };
    std::vector<RequestRecord> records = runStreamingLoad(load, streamingRequests);

    result.load = measure(records);
    result.maxConcurrency = options->maxConcurrency > 0
                                ? std::min<int64_t>(options->maxConcurrency, requests.size())
                                : static_cast<int64_t>(requests.size());
    if (options->json)
      printJson(*options, result);
    else
      printTable(*options, result);
    if (!options->quiet) checkOutputLengths(requests, records);
    if (result.load.numFailed) {
      std::cerr << "llmc bench serve: error: " << result.load.numFailed << " of "
                << result.load.numRequests << " requests failed; " << result.load.firstError
                << "\n";
      return 1;
    }
    return 0;
  } catch (const std::exception &error) {
    std::cerr << "llmc bench serve: error: " << error.what() << "\n";
    return 1;
  }
}

} // namespace llmc
