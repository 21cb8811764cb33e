//===- BenchServeClient.cpp - the HTTP client of `llmc bench serve` -------===//
//
// Every request is a chain of callbacks on one io_context thread (connect,
// write, read the header, read the body as it comes), so hundreds of streams
// in flight cost a socket and a small buffer each. A token's arrival time is
// taken when the read that carries it completes, before any parsing.
//
//===----------------------------------------------------------------------===//
#include "BenchServeClient.h"

#include "runtime/core/Error.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <sys/resource.h>

#include <array>
#include <deque>
#include <limits>
#include <memory>
#include <string_view>

namespace llmc {
namespace {
namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using beast::error_code;
using runtime::Error;

/// At most this much of a server's text goes into an error message.
constexpr size_t kMaxQuotedBytes = 300;
/// At most this much of an error response is kept, to find its message in.
constexpr size_t kMaxErrorBodyBytes = 64 * 1024;

/// The server's address, or an error naming it.
tcp::resolver::results_type resolve(net::io_context &io, const HttpServer &server) {
  tcp::resolver resolver(io);
  error_code error;
  tcp::resolver::results_type endpoints = resolver.resolve(server.host, server.port, error);
  if (error) throw Error("cannot resolve " + server.host + ": " + error.message());
  return endpoints;
}

/// The headers every request has.
template <typename Body>
void setCommonHeaders(http::request<Body> &request, const HttpServer &server,
                      const std::string &apiKey) {
  request.set(http::field::host, server.authority);
  request.set(http::field::user_agent, "llmc-bench");
  if (!apiKey.empty()) request.set(http::field::authorization, "Bearer " + apiKey);
}

std::string clip(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return "(nothing)";
  size_t end = text.find_last_not_of(" \t\r\n");
  text = text.substr(begin, end + 1 - begin);
  if (text.size() <= kMaxQuotedBytes) return std::string(text);
  return std::string(text.substr(0, kMaxQuotedBytes)) + "...";
}

/// The message of an error body: OpenAI's {"error": {"message": ...}},
/// {"error": "..."}, vLLM's {"message": ...}, or the text itself.
std::string errorMessage(const nlohmann::json &body, std::string_view text) {
  if (body.is_object()) {
    auto error = body.find("error");
    if (error != body.end() && error->is_object() && error->contains("message") &&
        (*error)["message"].is_string())
      return clip((*error)["message"].get<std::string>());
    if (error != body.end() && error->is_string()) return clip(error->get<std::string>());
    for (const char *key : {"message", "detail"})
      if (body.contains(key) && body[key].is_string()) return clip(body[key].get<std::string>());
  }
  return clip(text);
}

/// Splits a stream of Server-Sent Events into events, each the data of its
/// `data:` lines joined by newlines; other fields and comments are skipped.
class SseParser {
public:
  /// Takes the next bytes of the stream; calls onEvent(data) for each event
  /// they complete.
  template <typename OnEvent> void feed(std::string_view bytes, OnEvent &&onEvent) {
    while (!bytes.empty()) {
      size_t newline = bytes.find('\n');
      line.append(bytes.substr(0, newline));
      if (newline == std::string_view::npos) return;
      bytes.remove_prefix(newline + 1);
      takeLine(onEvent);
    }
  }

  /// At the end of the stream: an event the server did not end with a blank
  /// line still counts.
  template <typename OnEvent> void finish(OnEvent &&onEvent) {
    if (!line.empty()) takeLine(onEvent);
    if (hasData) onEvent(data);
    hasData = false;
  }

private:
  template <typename OnEvent> void takeLine(OnEvent &&onEvent) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      if (hasData) onEvent(data);
      data.clear();
      hasData = false;
    } else if (line.compare(0, 5, "data:") == 0) {
      std::string_view value(line);
      value.remove_prefix(value.size() > 5 && value[5] == ' ' ? 6 : 5);
      if (hasData) data += '\n';
      data.append(value);
      hasData = true;
    }
    line.clear();
  }

  std::string line;
  std::string data;
  bool hasData = false;
};

class LoadRun;

/// One request of the load: connect, send, read the event stream as it
/// comes, then report to the run. Owned by its pending operations.
class Exchange : public std::enable_shared_from_this<Exchange> {
public:
  Exchange(LoadRun &run, size_t index);
  void start();

private:
  void onConnected(const error_code &error);
  void onSent(const error_code &error);
  void onHeader(const error_code &error);
  void readBody();
  void onBody(error_code error);
  void onEvent(const std::string &data);
  /// Checks the finished response and ends the exchange.
  void complete();
  /// Records why the request failed (the first reason only).
  void fail(const std::string &why);
  void finish();

  LoadRun &run;
  RequestRecord &record;
  tcp::socket socket;
  beast::flat_buffer buffer;
  http::request<http::string_body> request;
  http::response_parser<http::buffer_body> parser;
  std::array<char, 16384> chunk;
  SseParser events;
  /// When the read being parsed completed: the arrival time of its tokens.
  BenchClock::time_point arrived;
  unsigned status = 0;
  /// The body of a response whose status is not 200, for the message.
  std::string errorBody;
  int64_t textEvents = 0;
  bool sawUsage = false;
  bool sawDone = false;
};

/// The load as a whole: arrivals on a timer, the concurrency limit, and the
/// records.
class LoadRun {
public:
  LoadRun(const StreamingLoad &load, const std::vector<StreamingRequest> &requests)
      : load(load), requests(requests), records(requests.size()), arrivalTimer(io) {}

  std::vector<RequestRecord> run() {
    endpoints = resolve(io, load.server);
    start = BenchClock::now();
    admitArrivals();
    io.run();
    return std::move(records);
  }

  /// Called by an exchange as it ends.
  void exchangeFinished() {
    --inFlight;
    if (load.onFinished) load.onFinished(++numFinished);
    startWaiting();
  }

  net::io_context io;
  tcp::resolver::results_type endpoints;
  const StreamingLoad &load;
  const std::vector<StreamingRequest> &requests;
  std::vector<RequestRecord> records;

private:
  /// Queues the requests whose time has come, starts what the limit allows,
  /// and sets the timer for the next arrival.
  void admitArrivals() {
    double elapsed = std::chrono::duration<double>(BenchClock::now() - start).count();
    while (nextArrival < requests.size() && requests[nextArrival].arrival <= elapsed)
      waiting.push_back(nextArrival++);
    startWaiting();
    if (nextArrival == requests.size()) return;
    arrivalTimer.expires_at(start + std::chrono::duration_cast<BenchClock::duration>(
                                        std::chrono::duration<double>(
                                            requests[nextArrival].arrival)));
    arrivalTimer.async_wait([this](const error_code &) { admitArrivals(); });
  }

  void startWaiting() {
    while (!waiting.empty() &&
           (load.maxConcurrency <= 0 || inFlight < static_cast<size_t>(load.maxConcurrency))) {
      size_t index = waiting.front();
      waiting.pop_front();
      ++inFlight;
      std::make_shared<Exchange>(*this, index)->start();
    }
  }

  net::steady_timer arrivalTimer;
  BenchClock::time_point start;
  size_t nextArrival = 0;
  /// Arrived, waiting for a place under the concurrency limit.
  std::deque<size_t> waiting;
  size_t inFlight = 0;
  size_t numFinished = 0;
};

Exchange::Exchange(LoadRun &run, size_t index)
    : run(run), record(run.records[index]), socket(run.io),
      request(http::verb::post, run.load.path, /*version=*/11) {
  const StreamingLoad &load = run.load;
  setCommonHeaders(request, load.server, load.apiKey);
  request.set(http::field::content_type, "application/json");
  request.set(http::field::accept, "text/event-stream");
  request.body() = run.requests[index].body;
  request.prepare_payload();
  // A long generation streams more than the default 8 MB limit. (Not
  // boost::none: Boost 1.74 then refuses every body with a Content-Length.)
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  record.inputTokens = run.requests[index].promptTokens;
}

void Exchange::start() {
  record.submitted = BenchClock::now();
  net::async_connect(socket, run.endpoints,
                     [self = shared_from_this()](const error_code &error, const tcp::endpoint &) {
                       self->onConnected(error);
                     });
}

void Exchange::onConnected(const error_code &error) {
  if (error) {
    fail("cannot connect to " + run.load.server.authority + ": " + error.message());
    return finish();
  }
  error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  http::async_write(socket, request, [self = shared_from_this()](const error_code &error, size_t) {
    self->onSent(error);
  });
}

void Exchange::onSent(const error_code &error) {
  if (error) {
    fail("sending the request: " + error.message());
    return finish();
  }
  http::async_read_header(socket, buffer, parser,
                          [self = shared_from_this()](const error_code &error, size_t) {
                            self->onHeader(error);
                          });
}

void Exchange::onHeader(const error_code &error) {
  if (error) {
    fail("reading the response: " + error.message());
    return finish();
  }
  status = parser.get().result_int();
  if (parser.is_done()) return complete();
  readBody();
}

void Exchange::readBody() {
  parser.get().body().data = chunk.data();
  parser.get().body().size = chunk.size();
  http::async_read_some(socket, buffer, parser,
                        [self = shared_from_this()](const error_code &error, size_t) {
                          self->onBody(error);
                        });
}

void Exchange::onBody(error_code error) {
  arrived = BenchClock::now();
  // The chunk is full: not an error, there is more to read.
  if (error == http::error::need_buffer) error = {};
  std::string_view bytes(chunk.data(), chunk.size() - parser.get().body().size);
  if (status != 200)
    errorBody.append(bytes.substr(0, kMaxErrorBodyBytes - std::min(errorBody.size(),
                                                                    kMaxErrorBodyBytes)));
  else
    events.feed(bytes, [this](const std::string &data) { onEvent(data); });
  if (!record.error.empty()) return finish();
  // [DONE] ends the stream, whatever follows it (the end of the chunked body).
  if (sawDone || parser.is_done() || (error && status != 200)) return complete();
  if (error) {
    fail("the stream broke off before data: [DONE] (" + error.message() + ")");
    return finish();
  }
  readBody();
}

void Exchange::onEvent(const std::string &data) {
  if (!record.error.empty()) return;
  if (data == "[DONE]") {
    sawDone = true;
    return;
  }
  nlohmann::json event = nlohmann::json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (event.is_discarded() || !event.is_object())
    return fail("an event that is not a JSON object: " + clip(data));
  if (event.contains("error") || (event.contains("object") && event["object"] == "error"))
    return fail("the server sent an error: " + errorMessage(event, data));
  auto choices = event.find("choices");
  if (choices != event.end() && choices->is_array() && !choices->empty()) {
    const nlohmann::json &choice = choices->front();
    const nlohmann::json *text = nullptr;
    if (choice.contains("text"))
      text = &choice["text"];
    else if (choice.contains("delta") && choice["delta"].is_object() &&
             choice["delta"].contains("content"))
      text = &choice["delta"]["content"];
    if (text && text->is_string() && !text->get_ref<const std::string &>().empty()) {
      if (textEvents++ == 0)
        record.firstToken = arrived;
      else
        record.gaps.push_back(milliseconds(arrived - record.lastToken));
      record.lastToken = arrived;
    }
  }
  auto usage = event.find("usage");
  if (usage != event.end() && usage->is_object()) {
    if (usage->contains("completion_tokens") && (*usage)["completion_tokens"].is_number_integer()) {
      record.outputTokens = (*usage)["completion_tokens"].get<int64_t>();
      sawUsage = true;
    }
    if (usage->contains("prompt_tokens") && (*usage)["prompt_tokens"].is_number_integer())
      record.inputTokens = (*usage)["prompt_tokens"].get<int64_t>();
  }
}

void Exchange::complete() {
  if (status != 200) {
    nlohmann::json body = nlohmann::json::parse(errorBody, nullptr, /*allow_exceptions=*/false);
    fail("HTTP " + std::to_string(status) + ": " + errorMessage(body, errorBody));
    return finish();
  }
  events.finish([this](const std::string &data) { onEvent(data); });
  if (!sawDone)
    fail("the stream ended without data: [DONE]");
  else if (textEvents == 0)
    fail("the stream had no text");
  else if (!sawUsage)
    record.outputTokens = textEvents;
  finish();
}

void Exchange::fail(const std::string &why) {
  if (record.error.empty()) record.error = why;
}

void Exchange::finish() {
  record.finished = BenchClock::now();
  error_code ignored;
  socket.shutdown(tcp::socket::shutdown_both, ignored);
  socket.close(ignored);
  run.exchangeFinished();
}

/// Lets the process open as many sockets as the hard limit allows: a load
/// with every request in flight needs one each.
void raiseOpenFileLimit() {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
}

} // namespace

HttpReply httpGet(const HttpServer &server, const std::string &path, const std::string &apiKey) {
  net::io_context io;
  tcp::resolver::results_type endpoints = resolve(io, server);
  beast::tcp_stream stream(io);
  http::request<http::empty_body> request{http::verb::get, path, /*version=*/11};
  setCommonHeaders(request, server, apiKey);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  error_code failure;
  stream.expires_after(std::chrono::seconds(30));
  stream.async_connect(endpoints, [&](const error_code &error, const tcp::endpoint &) {
    if (error) {
      failure = error;
      return;
    }
    http::async_write(stream, request, [&](const error_code &error, size_t) {
      if (error) {
        failure = error;
        return;
      }
      http::async_read(stream, buffer, response,
                       [&](const error_code &error, size_t) { failure = error; });
    });
  });
  io.run();
  if (failure)
    throw Error("cannot reach the server at http://" + server.authority + " (GET " + path +
                ": " + failure.message() + ")");
  return {response.result_int(), response.body()};
}

std::vector<RequestRecord> runStreamingLoad(const StreamingLoad &load,
                                            const std::vector<StreamingRequest> &requests) {
  raiseOpenFileLimit();
  return LoadRun(load, requests).run();
}

} // namespace llmc
