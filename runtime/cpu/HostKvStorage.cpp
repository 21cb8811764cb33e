//===- HostKvStorage.cpp - the KV cache in host memory --------------------===//
#include "runtime/cpu/HostKvStorage.h"

#include <cstring>

namespace llmc::runtime {

void HostKvStorage::copyBytes(int64_t from, int64_t to, int64_t bytes) {
  auto *base = static_cast<unsigned char *>(memory.data());
  std::memcpy(base + to, base + from, static_cast<size_t>(bytes));
}

} // namespace llmc::runtime
