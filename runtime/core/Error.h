//===- Error.h - the runtime's error type -----------------------*- C++ -*-===//
#ifndef LLMC_RUNTIME_CORE_ERROR_H
#define LLMC_RUNTIME_CORE_ERROR_H

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace llmc::runtime {

/// Every failure the runtime reports: a bad artifact, a batch that breaks the
/// step's limits, a KV cache that ran out of blocks. what() is one line meant
/// for the user, naming the file or argument at fault.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// `value` in decimal, for messages.
inline std::string str(int64_t value) { return std::to_string(value); }

/// `bytes` as "12.3 MiB", for messages about memory.
inline std::string mebibytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", double(bytes) / double(1 << 20));
  return text;
}

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CORE_ERROR_H
