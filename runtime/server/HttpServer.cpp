//===- HttpServer.cpp - HTTP/1.1 connections as coroutines ----------------===//
#include "runtime/server/HttpServer.h"

#include <iostream>

namespace llmc::runtime::server {

using asio::ip::tcp;
using boost::system::error_code;

namespace {
constexpr size_t kMaxHeaderBytes = 64 << 10;
/// After refusing a request whose body is still coming, how long to read and
/// drop the rest before closing, so that the client sees the refusal instead
/// of a reset connection.
constexpr std::chrono::seconds kDrainTime{2};

auto tolerate(error_code &ec) { return asio::redirect_error(asio::use_awaitable, ec); }
} // namespace

/// One client connection: reads requests one after another and hands them to
/// the server's handler, all on the connection's strand.
class Connection : public std::enable_shared_from_this<Connection> {
public:
  Connection(HttpServer &server, tcp::socket socket)
      : server(server), stream(std::move(socket)),
        watcherStopped(stream.get_executor(), asio::steady_timer::time_point::max()) {}

  asio::any_io_executor executor() { return stream.get_executor(); }

  Task<void> serve();

  HttpServer &server;
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  bool keepAlive = false;
  unsigned version = 11;
  /// Whether the exchange has sent anything (then a failure cannot become a 500).
  bool responded = false;
  bool gone = false;
  bool watching = false;
  /// Set by stopWatching(): a read that completed before its cancel must not
  /// start another, or the watcher would hold the next request's bytes while
  /// the client waits for its answer.
  bool stopRequested = false;
  std::function<void()> onGone;
  asio::steady_timer watcherStopped;

  bool serverClosing() const { return server.closing; }
  /// Reads while a request is answered, to notice the client leaving.
  Task<void> watch();
  Task<void> stopWatching();

private:
  /// Answers a request the transport refuses and closes the connection.
  Task<void> refuse(http::status status, const std::string &message);
};

Task<void> Connection::serve() {
  auto self = shared_from_this();
  while (!server.closing) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(server.config.maxBodyBytes);
    parser.header_limit(kMaxHeaderBytes);
    stream.expires_after(server.config.idleTimeout);
    error_code ec;
    co_await http::async_read(stream, buffer, parser, tolerate(ec));
    if (ec == http::error::body_limit) {
      co_await refuse(http::status::payload_too_large,
                      "the request body is over the limit of " +
                          std::to_string(server.config.maxBodyBytes) + " bytes");
      break;
    }
    if (ec == http::error::header_limit) {
      co_await refuse(http::status::request_header_fields_too_large,
                      "the request headers are over the limit");
      break;
    }
    bool malformed = ec && &ec.category() == &http::make_error_code(http::error::bad_target).category() &&
                     ec != http::error::end_of_stream && ec != http::error::partial_message;
    if (malformed) {
      co_await refuse(http::status::bad_request, "malformed HTTP request: " + ec.message());
      break;
    }
    if (ec) break; // closed, timed out or reset
    stream.expires_never();

    HttpRequest request = parser.release();
    keepAlive = request.keep_alive();
    version = request.version();
    responded = false;
    HttpExchange exchange(*this, request);
    ++server.active;
    std::string failure;
    try {
      co_await server.handler(exchange);
    } catch (const std::exception &error) {
      failure = error.what();
    }
    if (!failure.empty()) {
      std::cerr << "llmc serve: error: " << request.method_string() << " " << request.target()
                << ": " << failure << "\n";
      if (!responded && !gone)
        co_await exchange.respond(server.onError(http::status::internal_server_error, failure));
      else
        keepAlive = false; // the response is cut short: the client must not reuse it
    }
    --server.active;
    co_await stopWatching();
    if (gone || !keepAlive) break;
  }
  error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

Task<void> Connection::refuse(http::status status, const std::string &message) {
  HttpResponse response = server.onError(status, message);
  response.version(version);
  response.keep_alive(false);
  response.prepare_payload();
  stream.expires_after(kDrainTime);
  error_code ec;
  co_await http::async_write(stream, response, tolerate(ec));
  if (ec) co_return;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  // Drop what the client still sends until it closes or the time is up.
  std::array<char, 16 << 10> sink;
  while (!ec) co_await stream.async_read_some(asio::buffer(sink), tolerate(ec));
}

Task<void> Connection::watch() {
  auto self = shared_from_this();
  for (;;) {
    error_code ec;
    // Bytes that come now belong to the next request (pipelining): keep them.
    size_t read = co_await stream.async_read_some(buffer.prepare(4096), tolerate(ec));
    buffer.commit(read);
    if (!ec && stopRequested) break;
    if (ec) {
      if (ec != asio::error::operation_aborted) {
        gone = true;
        if (onGone) onGone();
      }
      break;
    }
    if (buffer.size() > kMaxHeaderBytes + server.config.maxBodyBytes) {
      gone = true; // a client that floods us while it is answered is dropped
      if (onGone) onGone();
      break;
    }
  }
  watching = false;
  onGone = nullptr;
  watcherStopped.cancel();
}

Task<void> Connection::stopWatching() {
  if (!watching) co_return;
  // The cancel stops a read in flight; the flag, one whose completion is
  // already queued on the strand (the client's next request came early).
  stopRequested = true;
  stream.cancel();
  while (watching) {
    watcherStopped.expires_at(asio::steady_timer::time_point::max());
    error_code ignored;
    co_await watcherStopped.async_wait(tolerate(ignored));
  }
  stopRequested = false;
}

asio::any_io_executor HttpExchange::executor() const { return connection.executor(); }

Task<void> HttpExchange::respond(HttpResponse response) {
  connection.responded = true;
  if (connection.serverClosing()) connection.keepAlive = false;
  response.version(connection.version);
  response.keep_alive(connection.keepAlive);
  response.set(http::field::server, "llmc");
  response.prepare_payload();
  error_code ec;
  co_await http::async_write(connection.stream, response, tolerate(ec));
  if (ec) connection.gone = true;
}

Task<void> HttpExchange::beginEvents() {
  connection.responded = true;
  if (connection.serverClosing()) connection.keepAlive = false;
  http::response<http::empty_body> response{http::status::ok, connection.version};
  response.set(http::field::server, "llmc");
  response.set(http::field::content_type, "text/event-stream");
  response.set(http::field::cache_control, "no-cache");
  response.keep_alive(connection.keepAlive);
  response.chunked(true);
  http::response_serializer<http::empty_body> serializer{response};
  error_code ec;
  co_await http::async_write_header(connection.stream, serializer, tolerate(ec));
  if (ec) connection.gone = true;
}

Task<bool> HttpExchange::sendEvents(const std::vector<std::string> &events) {
  if (connection.gone) co_return false;
  std::string text;
  for (const std::string &data : events) text.append("data: ").append(data).append("\n\n");
  error_code ec;
  co_await asio::async_write(connection.stream, http::make_chunk(asio::buffer(text)), tolerate(ec));
  if (ec) connection.gone = true;
  co_return !connection.gone;
}

Task<void> HttpExchange::endEvents() {
  if (connection.gone) co_return;
  error_code ec;
  co_await asio::async_write(connection.stream, http::make_chunk_last(), tolerate(ec));
  if (ec) connection.gone = true;
}

void HttpExchange::watchDisconnect(std::function<void()> onGone) {
  connection.onGone = std::move(onGone);
  if (connection.watching || connection.gone) return;
  connection.watching = true;
  auto self = connection.shared_from_this();
  asio::co_spawn(connection.executor(), [self]() { return self->watch(); }, asio::detached);
}

bool HttpExchange::clientGone() const { return connection.gone; }

HttpServer::HttpServer(const HttpServerConfig &config, HttpHandler handler,
                       HttpErrorResponder onError)
    : config(config), handler(std::move(handler)), onError(std::move(onError)),
      keepRunning(io.get_executor()), acceptor(io) {
  tcp::endpoint endpoint(asio::ip::make_address(config.host), config.port);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);
  asio::co_spawn(io, acceptLoop(), asio::detached);
}

HttpServer::~HttpServer() { stop(); }

uint16_t HttpServer::port() const { return acceptor.local_endpoint().port(); }

Task<void> HttpServer::acceptLoop() {
  for (;;) {
    error_code ec;
    tcp::socket socket = co_await acceptor.async_accept(asio::make_strand(io), tolerate(ec));
    if (!acceptor.is_open()) co_return;
    if (ec) {
      // Out of file descriptors, most likely: let some connections close.
      asio::steady_timer pause(io, std::chrono::milliseconds(50));
      co_await pause.async_wait(tolerate(ec));
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto connection = std::make_shared<Connection>(*this, std::move(socket));
    asio::co_spawn(connection->executor(), [connection]() { return connection->serve(); },
                   asio::detached);
  }
}

void HttpServer::run() {
  std::vector<std::thread> helpers;
  for (int i = 1; i < config.threads; ++i) helpers.emplace_back([this] { io.run(); });
  io.run();
  for (std::thread &helper : helpers) helper.join();
}

void HttpServer::stopAccepting() {
  closing = true;
  asio::post(acceptor.get_executor(), [this] {
    error_code ignored;
    acceptor.close(ignored);
  });
}

void HttpServer::stop() {
  keepRunning.reset();
  io.stop();
}

} // namespace llmc::runtime::server
