//===- Base64.h - RFC 4648 base64, for embeddings as bytes ------*- C++ -*-===//
#ifndef LLMC_RUNTIME_SERVER_BASE64_H
#define LLMC_RUNTIME_SERVER_BASE64_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace llmc::runtime::server {

/// The standard alphabet with '=' padding, as Python's base64.b64encode.
inline std::string base64Encode(const void *data, size_t size) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto *bytes = static_cast<const uint8_t *>(data);
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    uint32_t group = uint32_t(bytes[i]) << 16;
    if (i + 1 < size) group |= uint32_t(bytes[i + 1]) << 8;
    if (i + 2 < size) group |= bytes[i + 2];
    out += kAlphabet[(group >> 18) & 63];
    out += kAlphabet[(group >> 12) & 63];
    out += i + 1 < size ? kAlphabet[(group >> 6) & 63] : '=';
    out += i + 2 < size ? kAlphabet[group & 63] : '=';
  }
  return out;
}

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_BASE64_H
