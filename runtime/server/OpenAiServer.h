//===- OpenAiServer.h - the OpenAI API over an AsyncEngine ------*- C++ -*-===//
//
// The routes of `llmc serve`:
//   POST /v1/completions, POST /v1/chat/completions   (stream: true as SSE)
//   POST /v1/embeddings                                 (an embedding model)
//   POST /classify                                      (a sequence classifier)
//   POST /score, POST /rerank            (a cross-encoder or an embedding model)
//   GET /v1/models, GET /health, GET /metrics          (Prometheus text)
//   POST /v1/load_lora_adapter, /v1/unload_lora_adapter (when allowed)
// A generation request becomes one engine request per prompt; its events
// come back through a Mailbox to the connection's coroutine, which streams
// them as chunks or gathers the whole response. A client that goes away
// aborts its requests at once, freeing their KV blocks.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_OPENAISERVER_H
#define LLMC_RUNTIME_SERVER_OPENAISERVER_H

#include "runtime/engine/Scoring.h"
#include "runtime/server/HttpServer.h"
#include "runtime/server/Metrics.h"
#include "runtime/server/OpenAiRequest.h"
#include "runtime/server/Server.h"

#include <atomic>
#include <mutex>
#include <unordered_set>

namespace llmc::runtime::server {

class OpenAiServer {
public:
  OpenAiServer(AsyncEngine &engine, const ServedModel &served, const ServerOptions &options);

  /// The HttpServer's handler.
  Task<void> handle(HttpExchange &exchange);
  /// An error response in OpenAI's format (also for the transport's refusals).
  HttpResponse errorResponse(int status, const std::string &message,
                             const std::string &param = {}, const std::string &code = {});

  /// From now on /health says 503 and new generation requests are refused.
  void stopTakingRequests() { draining = true; }
  /// Aborts every request in flight (they end with finish_reason "abort").
  void abortAll();

private:
  Task<void> route(HttpExchange &exchange);
  Task<void> generate(HttpExchange &exchange, Endpoint endpoint);
  /// Submits one request's engine requests together (all run, or the request
  /// is refused: 429 when the queue is full, 400 when the engine refuses one),
  /// tracks them as in flight and aborts them when the client goes away.
  std::vector<RequestId> submitAll(HttpExchange &exchange, std::vector<AsyncRequest> works);
  /// Forgets finished engine requests (no longer in flight).
  void forget(const std::vector<RequestId> &ids);
  /// An engine event of one of a request's prompts.
  struct PromptEvent {
    size_t prompt;
    StreamEvent event;
  };
  /// The pooled rows of a request's prompts, in order.
  struct PooledRows {
    std::vector<std::vector<float>> rows;
    int64_t promptTokens = 0;
  };

  /// A request's JSON body; 400 when it is not JSON.
  static nlohmann::ordered_json parseBody(const HttpRequest &request);
  /// Pools every prompt of `works` (one engine request each) and gathers
  /// their rows; the whole request fails (ApiError) when one does.
  Task<PooledRows> poolPrompts(HttpExchange &exchange, std::vector<AsyncRequest> works,
                               Clock::time_point arrival);
  /// POST /v1/embeddings or /classify: one engine request per input,
  /// answered at once.
  Task<void> pool(HttpExchange &exchange, PoolingEndpoint endpoint);
  /// The body of an embeddings or classification response (not built in the
  /// coroutine: see tokenizerEndpoint).
  nlohmann::ordered_json poolingResponse(PoolingEndpoint endpoint, const PoolingRequest &request,
                                         const std::vector<std::vector<float>> &rows,
                                         int64_t promptTokens) const;
  /// POST /score or /rerank: the prompts of Scoring.h's plan, pooled at once.
  Task<void> score(HttpExchange &exchange, ScoringEndpoint endpoint);
  /// The plan of a scoring request (400 for what the model or the texts
  /// cannot do).
  ScoringPlan planScoringRequest(const ScoringRequest &request) const;
  /// The body of a score or rerank response.
  nlohmann::ordered_json scoringResponse(ScoringEndpoint endpoint, const ScoringRequest &request,
                                         const ScoringPlan &plan,
                                         const std::vector<std::vector<float>> &rows) const;
  HttpResponse jsonResponse(const nlohmann::ordered_json &body) const;
  /// The body of GET /v1/models.
  nlohmann::ordered_json modelList() const;
  void checkApiKey(const HttpRequest &request) const;
  /// The LoRA adapter a request's `model` names: null for the base model (or
  /// none named); 404 for a model the server does not have.
  std::shared_ptr<const LoraAdapter> adapterOf(const std::string &model) const;
  /// 404 for a model the server does not have, 400 for a LoRA adapter: the
  /// pooling endpoints run the base model.
  void checkBaseModel(const std::string &model) const;
  /// vLLM's POST /v1/load_lora_adapter ({lora_name, lora_path}) or
  /// /v1/unload_lora_adapter ({lora_name}): its plain-text answer.
  std::string updateLoraModules(std::string_view target, const HttpRequest &request);
  /// The chat prompt: the messages, tools and chat_template_kwargs through the
  /// model's chat template.
  std::string applyChatTemplate(const GenerationRequest &request) const;
  std::string renderChat(const nlohmann::ordered_json &messages,
                         const nlohmann::ordered_json &tools,
                         const nlohmann::ordered_json &templateKwargs,
                         bool addGenerationPrompt) const;
  /// The response of vLLM's POST /tokenize or /detokenize (`target`). Not a
  /// coroutine: GCC 12 miscompiles JSON temporaries in coroutine frames.
  nlohmann::ordered_json tokenizerEndpoint(std::string_view target,
                                           const HttpRequest &request) const;
  nlohmann::ordered_json tokenize(const nlohmann::ordered_json &body) const;
  nlohmann::ordered_json detokenize(const nlohmann::ordered_json &body) const;
  const tokenizer::Tokenizer &requireTokenizer() const;

  AsyncEngine &engine;
  const ServedModel &served;
  const ServerOptions &options;
  const int64_t startTime;
  ServerMetrics metrics;
  std::atomic<bool> draining{false};

  std::mutex mutex; // guards inFlight
  std::unordered_set<RequestId> inFlight;
  /// The LoRA adapters served as models: --lora-modules', then what
  /// /v1/load_lora_adapter adds. A request holds its adapter while it runs, so
  /// unloading one takes it from new requests only.
  mutable std::mutex loraMutex; // guards loraModules
  std::vector<ServedModel::LoraModule> loraModules;
};

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_OPENAISERVER_H
