//===- HostKvStorage.cpp - the KV cache in host memory --------------------===//
#include "runtime/cpu/HostKvStorage.h"

#include <cstring>

namespace llmc::runtime {

void HostKvStorage::copyBytes(int64_t from, int64_t to, int64_t bytes) {
  auto *base = static_cast<unsigned char *>(memory.data());
  std::memcpy(base + to, base + from, static_cast<size_t>(bytes));
}

void HostKvStorage::copyToHost(int64_t from, void *host, int64_t bytes) {
  std::memcpy(host, static_cast<unsigned char *>(memory.data()) + from, static_cast<size_t>(bytes));
}

void HostKvStorage::copyFromHost(const void *host, int64_t to, int64_t bytes) {
  std::memcpy(static_cast<unsigned char *>(memory.data()) + to, host, static_cast<size_t>(bytes));
}

} // namespace llmc::runtime
