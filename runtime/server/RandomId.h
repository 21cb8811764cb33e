//===- RandomId.h - the random ids of responses and tool calls --*- C++ -*-===//
#ifndef LLMC_RUNTIME_SERVER_RANDOMID_H
#define LLMC_RUNTIME_SERVER_RANDOMID_H

#include <cstdio>
#include <random>
#include <string>

namespace llmc::runtime::server {

/// `prefix` and 24 random hex digits, as OpenAI's ids look ("chatcmpl-...",
/// "call_...").
inline std::string randomId(const std::string &prefix) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  char digits[32];
  std::snprintf(digits, sizeof digits, "%016llx%08llx", (unsigned long long)random(),
                (unsigned long long)(random() & 0xffffffffu));
  return prefix + digits;
}

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_RANDOMID_H
