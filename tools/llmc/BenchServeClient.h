//===- BenchServeClient.h - the HTTP client of `llmc bench serve` -*- C++ -*-===//
//
// Streams requests to an OpenAI-compatible server and records when each
// one's tokens arrive. The implementation (Boost.Beast on one io_context
// thread) is built with exceptions and RTTI in its own library; this header
// needs neither Boost nor RTTI. Errors are thrown as runtime::Error.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TOOLS_LLMC_BENCHSERVECLIENT_H
#define LLMC_TOOLS_LLMC_BENCHSERVECLIENT_H

#include "BenchReport.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace llmc {

/// Where the server listens, from an http:// URL.
struct HttpServer {
  std::string host;
  std::string port;
  /// HOST:PORT as the Host header gives it.
  std::string authority;
  /// The URL's path, without a trailing '/': endpoints are appended to it.
  std::string basePath;
};

struct HttpReply {
  unsigned status = 0;
  std::string body;
};

/// GETs `path` from the server. Throws runtime::Error when the server cannot
/// be reached or does not answer within 30 seconds; any HTTP status is a
/// reply.
HttpReply httpGet(const HttpServer &server, const std::string &path, const std::string &apiKey);

/// One request of a load: a POST whose response is a stream of Server-Sent
/// Events, each `data: {json}` with the text in choices[0].text (or
/// choices[0].delta.content), the last `data: [DONE]`.
struct StreamingRequest {
  /// The JSON body.
  std::string body;
  /// When it arrives, in seconds from the start of the run.
  double arrival = 0;
  /// Its prompt's length, for a server that reports no usage.
  int64_t promptTokens = 0;
};

struct StreamingLoad {
  HttpServer server;
  /// The endpoint's path, base path included.
  std::string path;
  /// Sent as `Authorization: Bearer KEY` when not empty.
  std::string apiKey;
  /// At most this many requests in flight (0: no limit); one that arrives
  /// beyond it waits for the next to finish.
  int64_t maxConcurrency = 0;
  /// Called as each request ends, with the number ended so far.
  std::function<void(size_t)> onFinished;
};

/// Sends the requests when they arrive, one connection each, and records
/// every request: submitted when it is sent, a token arrival for each event
/// with text, output and input tokens from the last `usage` (completion_tokens,
/// prompt_tokens; without one, the events with text and the prompt's length).
/// A request fails on a connection error, an HTTP status other than 200, an
/// error event, or a stream that ends without `[DONE]` or without text.
std::vector<RequestRecord> runStreamingLoad(const StreamingLoad &load,
                                            const std::vector<StreamingRequest> &requests);

} // namespace llmc

#endif // LLMC_TOOLS_LLMC_BENCHSERVECLIENT_H
