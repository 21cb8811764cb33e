//===- HostKvStorage.h - the KV cache in host memory ------------*- C++ -*-===//
#ifndef LLMC_RUNTIME_CPU_HOSTKVSTORAGE_H
#define LLMC_RUNTIME_CPU_HOSTKVSTORAGE_H

#include "runtime/core/AlignedBuffer.h"
#include "runtime/core/KvBlockPool.h"

namespace llmc::runtime {

/// The CPU's KV cache: `shape`'s bytes of 64-byte aligned, zero-filled host
/// memory, which the step function reads and writes as its kv_pool.
class HostKvStorage final : public KvBlockStorage {
public:
  explicit HostKvStorage(const KvCacheShape &shape)
      : memory(static_cast<size_t>(checkedKvCacheShape(shape).numBytes())) {}

  void *data() const { return memory.data(); }
  void copyBytes(int64_t from, int64_t to, int64_t bytes) override;
  void copyToHost(int64_t from, void *host, int64_t bytes) override;
  void copyFromHost(const void *host, int64_t to, int64_t bytes) override;
  void makeResident() override { memory.makeResident(); }

private:
  AlignedBuffer memory;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CPU_HOSTKVSTORAGE_H
