//===- KvSwapSpace.h - host memory for swapped-out KV blocks ----*- C++ -*-===//
//
// Preemption by swapping (vLLM's swap_space): the blocks of a preempted
// sequence are copied here and its pool blocks freed; when it runs again its
// blocks are copied back into fresh pool blocks, bit for bit, instead of
// being recomputed. Which slot holds what is the scheduler's business; this
// class only holds the bytes and moves them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CORE_KVSWAPSPACE_H
#define LLMC_RUNTIME_CORE_KVSWAPSPACE_H

#include "runtime/core/AlignedBuffer.h"
#include "runtime/core/KvBlockPool.h"

#include <cstdint>

namespace llmc::runtime {

class KvSwapSpace {
public:
  /// `numSlots` slots of one of `pool`'s blocks each (all layers).
  KvSwapSpace(const KvBlockPool &pool, int64_t numSlots);

  int64_t numSlots() const { return slots; }
  int64_t slotBytes() const { return bytesPerSlot; }

  /// Copies `block` of `pool` into `slot`. Throws Error for a slot or block
  /// out of range.
  void swapOut(KvBlockPool &pool, BlockId block, int64_t slot);
  /// Copies `slot` into `block` of `pool`.
  void swapIn(KvBlockPool &pool, int64_t slot, BlockId block);

  /// Seconds to swap one block out and back in: the fastest of a few round
  /// trips of `block` through slot 0 (the block gets its own bytes back; the
  /// slot must be free).
  double measureRoundTrip(KvBlockPool &pool, BlockId block);

private:
  unsigned char *slotData(int64_t slot);

  int64_t slots;
  int64_t bytesPerSlot;
  AlignedBuffer memory;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CORE_KVSWAPSPACE_H
