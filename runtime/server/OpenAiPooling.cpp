//===- OpenAiPooling.cpp - the endpoints of models that pool --------------===//
//
// POST /v1/embeddings and /classify pool each input alone; POST /score and
// /rerank pool the prompts of a scoring plan (runtime/engine/Scoring.h) and
// answer with the pairs' scores, as vLLM's do.
//
//===----------------------------------------------------------------------===//
#include "runtime/server/OpenAiServer.h"

#include "runtime/server/ApiError.h"
#include "runtime/server/Base64.h"
#include "runtime/server/Mailbox.h"
#include "runtime/server/RandomId.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

namespace llmc::runtime::server {
namespace {
using json = nlohmann::ordered_json;
} // namespace

json OpenAiServer::poolingResponse(PoolingEndpoint endpoint, const PoolingRequest &request,
                                  const std::vector<std::vector<float>> &rows,
                                  int64_t promptTokens) const {
  json data = json::array();
  const std::vector<std::string> &labels = served.model.config().labels;
  for (size_t i = 0; i < rows.size(); ++i) {
    json entry = json::object();
    const std::vector<float> &values = rows[i];
    if (endpoint == PoolingEndpoint::Classify) {
      // vLLM's ClassificationData: the likeliest label, and every label's probability.
      entry["index"] = i;
      auto best = std::max_element(values.begin(), values.end()) - values.begin();
      entry["label"] = labels.at(best);
      entry["probs"] = values;
      entry["num_classes"] = values.size();
      data.push_back(std::move(entry));
      continue;
    }
    entry["object"] = "embedding";
    entry["index"] = i;
    // Little-endian float32, as numpy.frombuffer(..., dtype="float32") reads it.
    static_assert(std::endian::native == std::endian::little);
    entry["embedding"] = request.base64
                             ? json(base64Encode(values.data(), values.size() * sizeof(float)))
                             : json(values);
    data.push_back(std::move(entry));
  }
  json response = json::object();
  response["id"] = randomId(endpoint == PoolingEndpoint::Classify ? "classify-" : "embd-");
  response["object"] = "list";
  response["created"] = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  response["model"] = served.name;
  response["data"] = std::move(data);
  json usage = json::object();
  usage["prompt_tokens"] = promptTokens;
  usage["total_tokens"] = promptTokens;
  response["usage"] = std::move(usage);
  return response;
}

Task<OpenAiServer::PooledRows> OpenAiServer::poolPrompts(HttpExchange &exchange,
                                                        std::vector<AsyncRequest> works,
                                                        Clock::time_point arrival) {
  const size_t numPrompts = works.size();
  auto mailbox = std::make_shared<Mailbox<PromptEvent>>(exchange.executor());
  for (size_t i = 0; i < numPrompts; ++i)
    works[i].onEvent = [mailbox, i](const StreamEvent &event) { mailbox->put({i, event}); };
  std::vector<RequestId> ids = submitAll(exchange, std::move(works));

  PooledRows pooled;
  pooled.rows.resize(numPrompts);
  size_t unfinished = numPrompts;
  std::optional<ApiError> failure;
  while (unfinished > 0) {
    std::vector<PromptEvent> events = co_await mailbox->take();
    for (const auto &[prompt, event] : events) {
      if (!event.last()) continue;
      --unfinished;
      if (!event.error.empty()) {
        // A prompt refused or a failed step: the whole response fails.
        if (!failure) failure = ApiError(event.rejected ? 400 : 500, event.error);
        for (RequestId id : ids) engine.abort(id);
      } else if (event.pooled.empty()) {
        if (!failure) failure = ApiError(500, "the request was aborted");
      } else {
        pooled.rows[prompt] = event.pooled;
        pooled.promptTokens += event.numPromptTokens;
      }
    }
  }
  forget(ids);
  metrics.observeRequestEnd(failure ? "error" : "stop", pooled.promptTokens,
                            secondsBetween(arrival, Clock::now()));
  if (failure) throw *failure;
  co_return pooled;
}

Task<void> OpenAiServer::pool(HttpExchange &exchange, PoolingEndpoint endpoint) {
  Clock::time_point arrival = Clock::now();
  json body = parseBody(exchange.request);
  PoolingRequest request = parsePoolingRequest(endpoint, body, engine.maxModelLen());
  checkBaseModel(request.model);
  bool embeddings = endpoint == PoolingEndpoint::Embeddings;
  if (embeddings ? !served.model.outputsHiddenStates() : !served.model.outputsClassLogits())
    throw ApiError(400, std::string(embeddings ? "/v1/embeddings needs an embedding model"
                                               : "/classify needs a sequence classifier") +
                            "; this model " +
                            (served.model.outputsHiddenStates()  ? "embeds (/v1/embeddings)"
                             : served.model.outputsClassLogits() ? "classifies (/classify)"
                                                                 : "generates text"));
  for (const PromptInput &input : request.inputs)
    if (input.text && !served.tokenizer)
      throw ApiError(400, "this model has no tokenizer: give inputs as token ids", "input");
  std::vector<AsyncRequest> works;
  for (PromptInput &input : request.inputs) {
    AsyncRequest &work = works.emplace_back();
    work.text = std::move(input.text);
    work.promptIds = std::move(input.ids);
    work.addSpecialTokens = request.addSpecialTokens;
    work.options.pooling = request.pooling;
    work.truncatePromptTokens = request.truncatePromptTokens;
  }
  PooledRows pooled = co_await poolPrompts(exchange, std::move(works), arrival);
  co_await exchange.respond(
      jsonResponse(poolingResponse(endpoint, request, pooled.rows, pooled.promptTokens)));
}

ScoringPlan OpenAiServer::planScoringRequest(const ScoringRequest &request) const {
  try {
    ScoringMethod method = scoringMethodOf(served.model);
    if (!served.tokenizer)
      throw ApiError(400, "this model has no tokenizer, which scoring needs to read its texts");
    std::optional<size_t> maxTokens;
    if (request.truncatePromptTokens > 0)
      maxTokens = static_cast<size_t>(request.truncatePromptTokens);
    return planScoring(method, *served.tokenizer, request.texts1, request.texts2, maxTokens);
  } catch (const RequestError &error) {
    throw ApiError(400, error.what());
  }
}

json OpenAiServer::scoringResponse(ScoringEndpoint endpoint, const ScoringRequest &request,
                                   const ScoringPlan &plan,
                                   const std::vector<std::vector<float>> &rows) const {
  std::vector<double> scores = scorePairs(plan, rows);
  int64_t promptTokens = 0;
  for (size_t pair = 0; pair < scores.size(); ++pair) promptTokens += plan.pairTokens(pair);
  json response = json::object();
  if (endpoint == ScoringEndpoint::Score) {
    json data = json::array();
    for (size_t pair = 0; pair < scores.size(); ++pair)
      data.push_back({{"index", pair}, {"object", "score"}, {"score", scores[pair]}});
    response["id"] = randomId("score-");
    response["object"] = "list";
    response["created"] = std::chrono::duration_cast<std::chrono::seconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
    response["model"] = served.name;
    response["data"] = std::move(data);
    response["usage"] = {{"prompt_tokens", promptTokens},
                         {"total_tokens", promptTokens},
                         {"completion_tokens", 0}};
    return response;
  }
  // The documents best first (ties in their order; a NaN score last), the best top_n.
  auto rank = [&](size_t document) {
    return std::isnan(scores[document]) ? -std::numeric_limits<double>::infinity()
                                        : scores[document];
  };
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return rank(a) > rank(b); });
  if (request.topN > 0 && static_cast<size_t>(request.topN) < order.size())
    order.resize(static_cast<size_t>(request.topN));
  json results = json::array();
  for (size_t document : order) {
    json result = {{"index", document}};
    if (request.returnDocuments) result["document"] = {{"text", request.texts2[document]}};
    result["relevance_score"] = scores[document];
    results.push_back(std::move(result));
  }
  response["id"] = randomId("rerank-");
  response["model"] = served.name;
  response["usage"] = {{"total_tokens", promptTokens}};
  response["results"] = std::move(results);
  return response;
}

Task<void> OpenAiServer::score(HttpExchange &exchange, ScoringEndpoint endpoint) {
  Clock::time_point arrival = Clock::now();
  json body = parseBody(exchange.request);
  ScoringRequest request = parseScoringRequest(endpoint, body, engine.maxModelLen());
  checkBaseModel(request.model);
  ScoringPlan plan = planScoringRequest(request);
  PoolingParams pooling = plan.pooling(request.activation);
  std::vector<AsyncRequest> works;
  for (const std::vector<int32_t> &prompt : plan.prompts) {
    AsyncRequest &work = works.emplace_back();
    work.promptIds = prompt;
    work.options.pooling = pooling;
  }
  PooledRows pooled = co_await poolPrompts(exchange, std::move(works), arrival);
  co_await exchange.respond(jsonResponse(scoringResponse(endpoint, request, plan, pooled.rows)));
}

} // namespace llmc::runtime::server
