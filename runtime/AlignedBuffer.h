//===- AlignedBuffer.h - 64-byte aligned host memory ------------*- C++ -*-===//
#ifndef LLMC_RUNTIME_ALIGNEDBUFFER_H
#define LLMC_RUNTIME_ALIGNEDBUFFER_H

#include "runtime/Error.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace llmc::runtime {

/// A zero-filled block of host memory aligned to 64 bytes (a cache line, and
/// the widest vector the generated code loads), as the step ABI asks of the
/// KV pool and the workspace.
class AlignedBuffer {
public:
  static constexpr size_t kAlignment = 64;

  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes) : size(bytes) {
    if (bytes == 0) return;
    // aligned_alloc wants a size that is a multiple of the alignment.
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    memory.reset(std::aligned_alloc(kAlignment, rounded));
    if (!memory)
      throw Error("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    std::memset(memory.get(), 0, rounded);
  }

  void *data() const { return memory.get(); }
  size_t bytes() const { return size; }

private:
  struct FreeDeleter {
    void operator()(void *pointer) const { std::free(pointer); }
  };
  std::unique_ptr<void, FreeDeleter> memory;
  size_t size = 0;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ALIGNEDBUFFER_H
