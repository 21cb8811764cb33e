//===- Server.cpp - `llmc serve`: the OpenAI-compatible server ------------===//
#include "runtime/server/Server.h"

#include "runtime/core/Error.h"
#include "runtime/server/ApiError.h"
#include "runtime/server/OpenAiServer.h"

#include <csignal>
#include <iostream>
#include <sys/resource.h>

namespace llmc::runtime::server {
namespace {

/// Each open connection is a file descriptor: raise the soft limit to the
/// hard one so that thousands of streams fit.
void raiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

/// Graceful shutdown: refuse new work, let the requests in flight finish
/// for up to the grace period, abort the rest, then stop serving.
Task<void> shutDown(HttpServer &http, OpenAiServer &api, const ServerOptions &options,
                    asio::signal_set &signals) {
  std::cerr << "llmc serve: shutting down; " << http.activeExchanges()
            << " request(s) in flight\n";
  api.stopTakingRequests();
  http.stopAccepting();
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                     std::chrono::duration<double>(options.shutdownTimeoutSeconds));
  // A second signal aborts at once.
  signals.async_wait([&deadline](boost::system::error_code ec, int) {
    if (!ec) deadline = Clock::now();
  });
  asio::steady_timer poll(http.context());
  bool aborted = false;
  while (http.activeExchanges() > 0) {
    if (!aborted && Clock::now() >= deadline) {
      std::cerr << "llmc serve: aborting " << http.activeExchanges() << " request(s)\n";
      api.abortAll();
      aborted = true;
    }
    poll.expires_after(std::chrono::milliseconds(20));
    boost::system::error_code ignored;
    co_await poll.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }
  signals.cancel();
  http.stop();
}
} // namespace

void serve(ServedModel &served, const AsyncEngineConfig &engineConfig,
           const ServerOptions &options, const std::function<void(uint16_t)> &onListening) {
  // A client gone mid-write is an error code on the socket, not a signal.
  std::signal(SIGPIPE, SIG_IGN);
  raiseOpenFileLimit();
  AsyncEngine engine(served.model, served.tokenizer, engineConfig);
  OpenAiServer api(engine, served, options);

  HttpServerConfig httpConfig;
  httpConfig.host = options.host;
  httpConfig.port = options.port;
  httpConfig.threads = options.httpThreads;
  httpConfig.maxBodyBytes = options.maxBodyBytes;
  std::unique_ptr<HttpServer> http;
  try {
    http = std::make_unique<HttpServer>(
        httpConfig, [&api](HttpExchange &exchange) { return api.handle(exchange); },
        [&api](http::status status, const std::string &message) {
          return api.errorResponse(static_cast<int>(status), message);
        });
  } catch (const boost::system::system_error &error) {
    throw Error("cannot listen on " + options.host + ":" + std::to_string(options.port) + ": " +
                error.code().message());
  }

  asio::signal_set signals(http->context(), SIGINT, SIGTERM);
  HttpServer &server = *http;
  signals.async_wait([&](boost::system::error_code ec, int) {
    if (!ec)
      asio::co_spawn(server.context(), shutDown(server, api, options, signals), asio::detached);
  });
  onListening(http->port());
  http->run();
  engine.shutdown(/*drain=*/false);
}

} // namespace llmc::runtime::server
