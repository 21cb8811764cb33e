//===- OpenAiServer.cpp - the OpenAI API over an AsyncEngine --------------===//
#include "runtime/server/OpenAiServer.h"

#include "runtime/server/ApiError.h"
#include "runtime/server/Mailbox.h"
#include "runtime/server/OpenAiResponse.h"
#include "runtime/server/RandomId.h"
#include "runtime/server/Reasoning.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <chrono>

namespace llmc::runtime::server {
namespace {

using json = nlohmann::ordered_json;

/// Times one engine request's tokens for the latency histograms. Called on
/// the engine's output thread only.
class TokenTimer {
public:
  TokenTimer(Clock::time_point arrival, int32_t samples, ServerMetrics &metrics)
      : arrival(arrival), lastToken(samples), metrics(metrics) {}

  void observe(const StreamEvent &event) {
    if (!event.token) return;
    Clock::time_point now = Clock::now();
    metrics.countToken(now);
    std::optional<Clock::time_point> &last = lastToken.at(event.index);
    if (!firstTokenSeen)
      metrics.observeFirstToken(secondsBetween(arrival, now));
    else if (last)
      metrics.observeNextToken(secondsBetween(*last, now));
    firstTokenSeen = true;
    last = now;
  }

private:
  Clock::time_point arrival;
  bool firstTokenSeen = false;
  std::vector<std::optional<Clock::time_point>> lastToken;
  ServerMetrics &metrics;
};

std::string bearerToken(const HttpRequest &request) {
  auto header = request.find(http::field::authorization);
  if (header == request.end()) return {};
  std::string_view value(header->value().data(), header->value().size());
  constexpr std::string_view prefix = "Bearer ";
  if (value.substr(0, prefix.size()) != prefix) return {};
  return std::string(value.substr(prefix.size()));
}

} // namespace

json OpenAiServer::parseBody(const HttpRequest &request) {
  json body = json::parse(request.body(), nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) throw ApiError(400, "the request body is not valid JSON");
  return body;
}

OpenAiServer::OpenAiServer(AsyncEngine &engine, const ServedModel &served,
                           const ServerOptions &options)
    : engine(engine), served(served), options(options),
      startTime(std::chrono::duration_cast<std::chrono::seconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count()),
      loraModules(served.loraModules) {}

HttpResponse OpenAiServer::jsonResponse(const json &body) const {
  HttpResponse response{http::status::ok, 11};
  response.set(http::field::content_type, "application/json");
  response.body() = body.dump();
  return response;
}

HttpResponse OpenAiServer::errorResponse(int status, const std::string &message,
                                         const std::string &param, const std::string &code) {
  metrics.countError(status);
  HttpResponse response = jsonResponse(ApiError::body(status, message, param, code));
  response.result(static_cast<http::status>(status));
  if (status == 429 || status == 503) response.set(http::field::retry_after, "1");
  return response;
}

void OpenAiServer::checkApiKey(const HttpRequest &request) const {
  if (options.apiKey.empty()) return;
  std::string token = bearerToken(request);
  if (token.empty())
    throw ApiError(401, "no API key: send 'Authorization: Bearer <key>'", {}, "invalid_api_key");
  if (token != options.apiKey) throw ApiError(401, "incorrect API key", {}, "invalid_api_key");
}

std::shared_ptr<const LoraAdapter> OpenAiServer::adapterOf(const std::string &model) const {
  if (model.empty() || model == served.name) return nullptr;
  std::lock_guard<std::mutex> lock(loraMutex);
  auto found = ServedModel::findLoraModule(loraModules, model);
  if (found != loraModules.end()) return found->adapter;
  std::string names = "'" + served.name + "'";
  for (const ServedModel::LoraModule &module : loraModules) names += ", '" + module.name + "'";
  throw ApiError(404, "the model '" + model + "' does not exist; this server has " + names,
                 "model", "model_not_found");
}

std::string OpenAiServer::applyChatTemplate(const GenerationRequest &request) const {
  return renderChat(request.messages, request.tools, request.templateKwargs, true);
}

std::string OpenAiServer::renderChat(const json &messages, const json &tools,
                                     const json &templateKwargs, bool addGenerationPrompt) const {
  if (!served.chatTemplate)
    throw ApiError(400, "this model has no chat template: use /v1/completions");
  // chat_template_kwargs first: the request's own variables win, as in vLLM.
  json context = templateKwargs;
  context["messages"] = messages;
  context["add_generation_prompt"] = addGenerationPrompt;
  context["bos_token"] = served.bosToken;
  context["eos_token"] = served.eosToken;
  if (!tools.is_null()) context["tools"] = tools;
  try {
    return served.chatTemplate->render(context);
  } catch (const chat::ChatTemplateError &error) {
    throw ApiError(400, std::string("the chat template refused the messages: ") + error.what(),
                   "messages");
  }
}

const tokenizer::Tokenizer &OpenAiServer::requireTokenizer() const {
  if (!served.tokenizer) throw ApiError(400, "this model has no tokenizer");
  return *served.tokenizer;
}

json OpenAiServer::tokenizerEndpoint(std::string_view target, const HttpRequest &request) const {
  json body = parseBody(request);
  return target == "/tokenize" ? tokenize(body) : detokenize(body);
}

json OpenAiServer::tokenize(const json &body) const {
  TokenizeRequest request = parseTokenizeRequest(body);
  adapterOf(request.model); // the tokenizer is the base model's
  const tokenizer::Tokenizer &tokenizer = requireTokenizer();
  std::string text = request.prompt ? *request.prompt
                                    : renderChat(request.messages, request.tools,
                                                 request.templateKwargs,
                                                 request.addGenerationPrompt);
  std::vector<int32_t> tokens = tokenizer.encode(text, request.addSpecialTokens);
  json response = json::object();
  response["count"] = tokens.size();
  response["max_model_len"] = engine.maxModelLen();
  response["tokens"] = tokens;
  response["token_strs"] = nullptr;
  if (request.returnTokenStrs) {
    json strings = json::array();
    for (int32_t token : tokens) {
      const std::string *string = tokenizer.decodingToken(token, /*skipSpecialTokens=*/false);
      strings.push_back(string ? *string : std::string());
    }
    response["token_strs"] = std::move(strings);
  }
  return response;
}

json OpenAiServer::detokenize(const json &body) const {
  DetokenizeRequest request = parseDetokenizeRequest(body);
  adapterOf(request.model); // the tokenizer is the base model's
  const tokenizer::Tokenizer &tokenizer = requireTokenizer();
  for (int32_t token : request.tokens)
    if (token >= tokenizer.idLimit())
      throw ApiError(400, "token " + std::to_string(token) + " is outside the vocabulary (0 to " +
                              std::to_string(tokenizer.idLimit() - 1) + ")",
                     "tokens");
  // As vLLM (transformers' decode): special tokens are kept.
  json response = json::object();
  response["prompt"] = tokenizer.decode(request.tokens, /*skipSpecialTokens=*/false);
  return response;
}

void OpenAiServer::checkBaseModel(const std::string &model) const {
  if (adapterOf(model))
    throw ApiError(400, "'" + model + "' is a LoRA adapter, which serves completions and chat; "
                   "this endpoint runs the base model '" + served.name + "'", "model");
}

std::string OpenAiServer::updateLoraModules(std::string_view target,
                                            const HttpRequest &request) {
  if (!options.allowRuntimeLoraUpdating)
    throw ApiError(404, "loading and unloading LoRA adapters while serving is off: start llmc "
                        "serve with --allow-runtime-lora-updating");
  json body = parseBody(request);
  auto field = [&](const char *name) {
    if (!body.contains(name) || !body[name].is_string() || body[name].get<std::string>().empty())
      throw ApiError(400, std::string("'") + name + "' must be a non-empty string", name);
    return body[name].get<std::string>();
  };
  std::string name = field("lora_name");
  if (target == "/v1/unload_lora_adapter") {
    std::lock_guard<std::mutex> lock(loraMutex);
    auto found = ServedModel::findLoraModule(loraModules, name);
    if (found == loraModules.end())
      throw ApiError(404, "the LoRA adapter '" + name + "' is not loaded", "lora_name");
    loraModules.erase(found);
    return "Success: LoRA adapter '" + name + "' removed successfully.";
  }
  std::string path = field("lora_path");
  std::shared_ptr<const LoraAdapter> adapter;
  try {
    adapter = LoraAdapter::load(path, served.model.stepConfig().loraSites, options.maxLoraRank);
  } catch (const Error &error) {
    throw ApiError(400, error.what(), "lora_path");
  }
  std::lock_guard<std::mutex> lock(loraMutex);
  if (served.hasModelId(loraModules, name))
    throw ApiError(400, "the model id '" + name + "' is taken", "lora_name");
  loraModules.push_back({name, path, std::move(adapter)});
  return "Success: LoRA adapter '" + name + "' added successfully.";
}

json OpenAiServer::modelList() const {
  json models = json::array();
  models.push_back({{"id", served.name},    {"object", "model"},
                    {"created", startTime}, {"owned_by", "llmc"},
                    {"root", served.name},  {"parent", nullptr},
                    {"max_model_len", engine.maxModelLen()}});
  // As vLLM lists its LoRA modules: the adapter's path as root, the base as parent.
  std::lock_guard<std::mutex> lock(loraMutex);
  for (const ServedModel::LoraModule &module : loraModules)
    models.push_back({{"id", module.name},   {"object", "model"},
                      {"created", startTime}, {"owned_by", "llmc"},
                      {"root", module.path},  {"parent", served.name},
                      {"max_model_len", engine.maxModelLen()}});
  return {{"object", "list"}, {"data", std::move(models)}};
}

void OpenAiServer::abortAll() {
  std::lock_guard<std::mutex> lock(mutex);
  for (RequestId id : inFlight) engine.abort(id);
}

// The coroutines below build no JSON from braced lists: GCC 12 miscompiles
// initializer lists in coroutine frames ("array used as initializer").

Task<void> OpenAiServer::handle(HttpExchange &exchange) {
  std::optional<ApiError> failure;
  try {
    co_await route(exchange);
  } catch (const ApiError &error) {
    failure = error;
  }
  // (No co_await inside a handler.)
  if (failure)
    co_await exchange.respond(
        errorResponse(failure->status, failure->what(), failure->param, failure->code));
}

Task<void> OpenAiServer::route(HttpExchange &exchange) {
  const HttpRequest &request = exchange.request;
  std::string_view target(request.target().data(), request.target().size());
  target = target.substr(0, target.find('?'));
  bool get = request.method() == http::verb::get;
  bool post = request.method() == http::verb::post;

  if (target == "/health") {
    if (!get) throw ApiError(405, "use GET /health");
    if (draining) throw ApiError(503, "the server is shutting down");
    co_await exchange.respond(jsonResponse(json::object()));
    co_return;
  }
  if (target == "/metrics") {
    if (!get) throw ApiError(405, "use GET /metrics");
    HttpResponse response{http::status::ok, 11};
    response.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    response.body() = metrics.render(engine.stats());
    co_await exchange.respond(std::move(response));
    co_return;
  }
  // vLLM's tokenizer endpoints; like /health, outside /v1 and its API key.
  if (target == "/tokenize" || target == "/detokenize") {
    if (!post) throw ApiError(405, "use POST " + std::string(target));
    HttpResponse response = jsonResponse(tokenizerEndpoint(target, request));
    co_await exchange.respond(std::move(response));
    co_return;
  }
  if (target.substr(0, 4) == "/v1/") checkApiKey(request);
  if (target == "/v1/models") {
    if (!get) throw ApiError(405, "use GET /v1/models");
    co_await exchange.respond(jsonResponse(modelList()));
    co_return;
  }
  if (target == "/v1/load_lora_adapter" || target == "/v1/unload_lora_adapter") {
    if (!post) throw ApiError(405, "use POST " + std::string(target));
    HttpResponse response{http::status::ok, 11};
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = updateLoraModules(target, request);
    co_await exchange.respond(std::move(response));
    co_return;
  }
  std::optional<PoolingEndpoint> pooling;
  if (target == "/v1/embeddings") pooling = PoolingEndpoint::Embeddings;
  // vLLM's path, and under /v1/ as its other endpoints.
  if (target == "/classify" || target == "/v1/classify") pooling = PoolingEndpoint::Classify;
  if (pooling) {
    if (!post) throw ApiError(405, "use POST " + std::string(target));
    if (target == "/classify") checkApiKey(request);
    if (draining) throw ApiError(503, "the server is shutting down");
    co_await pool(exchange, *pooling);
    co_return;
  }
  // vLLM's scoring paths: /score and /rerank, also under /v1/ (and Cohere's /v2/rerank).
  std::optional<ScoringEndpoint> scoring;
  if (target == "/score" || target == "/v1/score") scoring = ScoringEndpoint::Score;
  if (target == "/rerank" || target == "/v1/rerank" || target == "/v2/rerank")
    scoring = ScoringEndpoint::Rerank;
  if (scoring) {
    if (!post) throw ApiError(405, "use POST " + std::string(target));
    if (target.substr(0, 4) != "/v1/") checkApiKey(request);
    if (draining) throw ApiError(503, "the server is shutting down");
    co_await score(exchange, *scoring);
    co_return;
  }
  std::optional<Endpoint> endpoint;
  if (target == "/v1/completions") endpoint = Endpoint::Completions;
  if (target == "/v1/chat/completions") endpoint = Endpoint::ChatCompletions;
  if (!endpoint) throw ApiError(404, "no such endpoint: " + std::string(target));
  if (!post) throw ApiError(405, "use POST " + std::string(target));
  if (draining) throw ApiError(503, "the server is shutting down");
  co_await generate(exchange, *endpoint);
}

Task<void> OpenAiServer::generate(HttpExchange &exchange, Endpoint endpoint) {
  Clock::time_point arrival = Clock::now();
  json body = parseBody(exchange.request);
  GenerationRequest request = parseGenerationRequest(endpoint, body, engine.maxModelLen());
  request.options.lora = adapterOf(request.model);
  bool chat = endpoint == Endpoint::ChatCompletions;
  request.modelToolCallFormat = served.toolCallFormat;
  if (request.toolChoice == GenerationRequest::ToolChoice::Auto) {
    if (!served.toolCallFormat)
      throw ApiError(400, "tool_choice 'auto' needs a tool-call format: this model's chat template "
                          "writes none llmc reads; start the server with --tool-call-parser",
                     "tool_choice");
    request.toolCallFormat = served.toolCallFormat;
  }
  if (chat) {
    request.prompts.emplace_back().text = applyChatTemplate(request);
    // The calls tool_choice forces are JSON, not thinking; an output under a
    // grammar starts where the grammar does, not inside a block the prompt opened.
    using ToolChoice = GenerationRequest::ToolChoice;
    request.reasoning = served.reasoning && request.toolChoice != ToolChoice::Required &&
                        request.toolChoice != ToolChoice::Named;
    request.startsThinking = request.reasoning && !request.grammar &&
                             promptOpensThinking(*request.prompts[0].text);
  }
  bool hasText = false;
  for (const PromptInput &prompt : request.prompts) hasText |= prompt.text.has_value();
  if (!served.tokenizer &&
      (hasText || !request.stop.empty() || request.logprobs || request.promptLogprobs ||
       request.echo))
    throw ApiError(400, "this model has no tokenizer: give prompts as token ids, without stop "
                        "strings, logprobs or echo");
  if (request.grammar) {
    if (!served.grammars)
      throw ApiError(400, "this model has no tokenizer: '" + request.grammar->field +
                              "' cannot be followed", request.grammar->field);
    try {
      request.options.grammar = served.grammars->compile(*request.grammar);
    } catch (const structured::GrammarError &error) {
      throw ApiError(400, error.what(), error.field);
    }
  }
  if (!request.ignoreEos)
    request.options.stopTokenIds.insert(request.options.stopTokenIds.end(),
                                        served.eosTokenIds.begin(), served.eosTokenIds.end());

  const size_t samples = static_cast<size_t>(request.options.n);
  const size_t numPrompts = request.prompts.size();
  request.returnTokensAsTokenIds =
      request.returnTokensAsTokenIds.value_or(options.returnTokensAsTokenIds);
  // Before the prompts move into the engine's requests: an echo takes their text.
  // A response names the model the request asked for: the base, or an adapter.
  ResponseBuilder builder(request, request.options.lora ? request.model : served.name,
                          numPrompts, served.tokenizer);
  auto mailbox = std::make_shared<Mailbox<PromptEvent>>(exchange.executor());
  std::vector<AsyncRequest> works;
  for (size_t i = 0; i < numPrompts; ++i) {
    AsyncRequest &work = works.emplace_back();
    work.text = std::move(request.prompts[i].text);
    work.promptIds = std::move(request.prompts[i].ids);
    work.addSpecialTokens = !chat; // the template wrote them
    work.options = request.options;
    work.detokenize = served.tokenizer != nullptr;
    work.skipSpecialTokens = request.skipSpecialTokens;
    work.truncatePromptTokens = request.truncatePromptTokens;
    work.stopStrings = request.stop;
    work.returnPromptTokenIds = request.echo;
    auto timer = std::make_shared<TokenTimer>(arrival, request.options.n, metrics);
    work.onEvent = [mailbox, timer, i](const StreamEvent &event) {
      timer->observe(event);
      mailbox->put({i, event});
    };
  }
  std::vector<RequestId> ids = submitAll(exchange, std::move(works));

  std::vector<size_t> openSamples(numPrompts, samples);
  std::vector<bool> promptCounted(numPrompts, false);
  size_t unfinished = numPrompts * samples;
  bool streaming = false;
  std::optional<ApiError> failure;
  const char *finishReason = nullptr;
  while (unfinished > 0) {
    std::vector<PromptEvent> events = co_await mailbox->take();
    std::vector<std::string> chunks;
    for (const auto &[prompt, event] : events) {
      if (!promptCounted[prompt] && event.error.empty()) {
        builder.addPromptTokens(prompt, event.numPromptTokens);
        promptCounted[prompt] = true;
      }
      if (!event.error.empty()) {
        // A prompt refused or a failed step: the whole response fails.
        if (!failure) failure = ApiError(event.rejected ? 400 : 500, event.error);
        unfinished -= openSamples[prompt];
        openSamples[prompt] = 0;
        for (RequestId id : ids) engine.abort(id);
        continue;
      }
      std::vector<json> eventChunks = builder.add(prompt, event);
      if (event.last()) {
        --openSamples[prompt];
        --unfinished;
        if (!finishReason) finishReason = finishReasonText(event.finishReason);
      }
      if (request.stream && !failure)
        for (const json &chunk : eventChunks) chunks.push_back(chunk.dump());
    }
    if (chunks.empty() || exchange.clientGone()) continue;
    if (!streaming) {
      co_await exchange.beginEvents();
      streaming = true;
    }
    if (!co_await exchange.sendEvents(chunks))
      for (RequestId id : ids) engine.abort(id);
  }
  forget(ids);
  metrics.observeRequestEnd(failure ? "error" : finishReason ? finishReason : "abort",
                            builder.numPromptTokens(),
                            secondsBetween(arrival, Clock::now()));

  if (!streaming && failure) throw *failure;
  if (!request.stream) {
    co_await exchange.respond(jsonResponse(builder.response()));
    co_return;
  }
  if (!streaming) {
    co_await exchange.beginEvents(); // every sample ended without a chunk
    streaming = true;
  }
  std::vector<std::string> last;
  if (failure)
    last.push_back(failure->body().dump());
  else if (request.includeUsage)
    last.push_back(builder.usageChunk().dump());
  last.push_back("[DONE]");
  co_await exchange.sendEvents(last);
  co_await exchange.endEvents();
}

std::vector<RequestId> OpenAiServer::submitAll(HttpExchange &exchange,
                                               std::vector<AsyncRequest> works) {
  std::vector<RequestId> ids;
  try {
    ids = engine.submit(std::move(works));
  } catch (const QueueFullError &error) {
    throw ApiError(429, error.what(), {}, "rate_limit_exceeded");
  } catch (const RequestError &error) {
    throw ApiError(400, error.what());
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    inFlight.insert(ids.begin(), ids.end());
  }
  exchange.watchDisconnect([this, ids] {
    for (RequestId id : ids) engine.abort(id);
  });
  return ids;
}

void OpenAiServer::forget(const std::vector<RequestId> &ids) {
  std::lock_guard<std::mutex> lock(mutex);
  for (RequestId id : ids) inFlight.erase(id);
}

} // namespace llmc::runtime::server
