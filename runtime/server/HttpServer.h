//===- HttpServer.h - HTTP/1.1 connections as coroutines --------*- C++ -*-===//
//
// The transport under the OpenAI API: an acceptor and one coroutine per
// connection, all on a few threads (no thread per connection), each
// connection on its own strand. A connection reads a request (refusing a
// body over the limit with 413), hands it to the handler as an HttpExchange,
// and keeps the connection alive while the client wants. A handler answers
// with one response or with a stream of Server-Sent Events, and may ask to
// hear at once when the client goes away (so that its work is aborted).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_HTTPSERVER_H
#define LLMC_RUNTIME_SERVER_HTTPSERVER_H

#include "runtime/server/Asio.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace llmc::runtime::server {

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  /// 0 picks a free port (HttpServer::port() tells which).
  uint16_t port = 8000;
  /// Threads running the connections.
  int threads = 2;
  /// A larger request body is answered 413.
  size_t maxBodyBytes = 16 << 20;
  /// How long a keep-alive connection may sit idle, or a request take to arrive.
  std::chrono::seconds idleTimeout{60};
};

class Connection;

/// One request on a connection, and the means to answer it.
class HttpExchange {
public:
  HttpExchange(Connection &connection, HttpRequest &request)
      : request(request), connection(connection) {}

  HttpRequest &request;
  asio::any_io_executor executor() const;

  /// Sends a complete response (keep-alive as the request asked).
  Task<void> respond(HttpResponse response);
  /// Sends the headers of an event stream (chunked text/event-stream).
  Task<void> beginEvents();
  /// Sends events, each `data: <data>\n\n`, in one write; false once the
  /// client is gone.
  Task<bool> sendEvents(const std::vector<std::string> &events);
  /// Ends the event stream.
  Task<void> endEvents();
  /// Calls `onGone` (on the connection's strand) when the client closes the
  /// connection before the answer is complete; reading stops when the
  /// exchange ends.
  void watchDisconnect(std::function<void()> onGone);
  bool clientGone() const;

private:
  Connection &connection;
};

using HttpHandler = std::function<Task<void>(HttpExchange &)>;
/// The response to a request the transport refuses itself (413, 400), so
/// that its body has the API's error format.
using HttpErrorResponder = std::function<HttpResponse(http::status, const std::string &message)>;

class HttpServer {
public:
  /// Binds and listens; throws boost::system::system_error when it cannot.
  HttpServer(const HttpServerConfig &config, HttpHandler handler, HttpErrorResponder onError);
  ~HttpServer();

  uint16_t port() const;
  asio::io_context &context() { return io; }

  /// Serves on config.threads threads (this one among them) until stop().
  void run();
  /// Closes the listening socket: no new connections; open ones finish
  /// their requests, and close after their response.
  void stopAccepting();
  /// Ends run(): every connection is dropped.
  void stop();
  /// Requests being answered now.
  int64_t activeExchanges() const { return active.load(); }

private:
  Task<void> acceptLoop();

  HttpServerConfig config;
  HttpHandler handler;
  HttpErrorResponder onError;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> keepRunning;
  std::atomic<bool> closing{false};
  asio::ip::tcp::acceptor acceptor;
  std::atomic<int64_t> active{0};
  friend class Connection;
};

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_HTTPSERVER_H
