//===- Asio.h - the Boost.Asio/Beast names the server uses ------*- C++ -*-===//
//
// One place for the includes and aliases of the HTTP layer. The server is
// built as C++20 for Asio's coroutines (co_await on sockets and timers), so
// each connection reads as straight-line code while one thread serves
// thousands of them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_ASIO_H
#define LLMC_RUNTIME_SERVER_ASIO_H

// Boost 1.74's awaitable.hpp uses std::exchange without including <utility>.
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace llmc::runtime::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;

using HttpRequest = http::request<http::string_body>;
using HttpResponse = http::response<http::string_body>;
template <typename T> using Task = asio::awaitable<T>;

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_ASIO_H
