//===- ApiError.h - an OpenAI-style error response --------------*- C++ -*-===//
//
// What a request gets when it cannot be served: an HTTP status and the body
// OpenAI's API sends, {"error": {"message", "type", "param", "code"}}, which
// the official clients turn into their typed exceptions.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_APIERROR_H
#define LLMC_RUNTIME_SERVER_APIERROR_H

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace llmc::runtime::server {

class ApiError : public std::runtime_error {
public:
  /// The error type is chosen from the status as OpenAI does.
  ApiError(int status, const std::string &message, std::string param = {}, std::string code = {})
      : std::runtime_error(message), status(status), param(std::move(param)),
        code(std::move(code)) {}

  int status;
  std::string param;
  std::string code;

  nlohmann::ordered_json body() const { return body(status, what(), param, code); }

  static nlohmann::ordered_json body(int status, const std::string &message, const std::string &param = {},
                             const std::string &code = {}) {
    const char *type = status == 401   ? "authentication_error"
                       : status == 404 ? "not_found_error"
                       : status == 429 ? "rate_limit_error"
                       : status >= 500 ? "server_error"
                                       : "invalid_request_error";
    nlohmann::ordered_json error = {{"message", message}, {"type", type}};
    error["param"] = param.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(param);
    error["code"] = code.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(code);
    return {{"error", std::move(error)}};
  }
};

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_APIERROR_H
