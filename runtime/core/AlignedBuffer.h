//===- AlignedBuffer.h - 64-byte aligned host memory ------------*- C++ -*-===//
#ifndef LLMC_RUNTIME_CORE_ALIGNEDBUFFER_H
#define LLMC_RUNTIME_CORE_ALIGNEDBUFFER_H

#include "runtime/core/Error.h"

#include <sys/mman.h>

#include <cstddef>
#include <string>
#include <utility>

namespace llmc::runtime {

/// Zero-filled host memory aligned to 64 bytes (a cache line, and the widest
/// vector the generated code loads), as the step ABI asks of the KV pool and
/// the workspace. It is an anonymous mapping: pages are zero and become
/// resident when first touched, or all at once by makeResident (which the
/// engine asks of its KV cache). It asks for transparent huge pages:
/// attention reads the pool a few KB per block from blocks anywhere in it,
/// and with 4 KB pages nearly every block missed the TLB (a 32-sequence
/// decode step at 600 tokens of context took 6% longer).
class AlignedBuffer {
public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) : size(bytes) {
    if (bytes == 0) return;
    void *mapped = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                          -1, 0);
    if (mapped == MAP_FAILED)
      throw Error("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    memory = mapped; // page-aligned, so 64-byte aligned
    ::madvise(mapped, bytes, MADV_HUGEPAGE); // advice: ignored where unsupported
  }
  ~AlignedBuffer() {
    if (memory) ::munmap(memory, size);
  }
  AlignedBuffer(AlignedBuffer &&other) noexcept
      : memory(std::exchange(other.memory, nullptr)), size(std::exchange(other.size, 0)) {}
  AlignedBuffer &operator=(AlignedBuffer &&other) noexcept {
    std::swap(memory, other.memory);
    std::swap(size, other.size);
    return *this;
  }
  AlignedBuffer(const AlignedBuffer &) = delete;
  AlignedBuffer &operator=(const AlignedBuffer &) = delete;

  void *data() const { return memory; }
  size_t bytes() const { return size; }

  /// Backs every page now: a first touch while serving would stop the step
  /// that writes there while the kernel finds and zeroes the page (5-9% of
  /// a 32-request run). MADV_POPULATE_WRITE (Linux 5.14); on an older kernel,
  /// a write of zero to every page.
  void makeResident() {
    if (!memory || ::madvise(memory, size, kPopulateWrite) == 0) return;
    auto *bytes = static_cast<volatile unsigned char *>(memory);
    for (size_t at = 0; at < size; at += 4096) bytes[at] = 0;
  }

private:
#ifdef MADV_POPULATE_WRITE
  static constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
  static constexpr int kPopulateWrite = 23; // the value since Linux 5.14
#endif
  void *memory = nullptr;
  size_t size = 0;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CORE_ALIGNEDBUFFER_H
