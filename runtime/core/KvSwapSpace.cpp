//===- KvSwapSpace.cpp - host memory for swapped-out KV blocks ------------===//
#include "runtime/core/KvSwapSpace.h"

#include "runtime/core/Error.h"

#include <algorithm>
#include <chrono>
#include <string>

namespace llmc::runtime {

KvSwapSpace::KvSwapSpace(const KvBlockPool &pool, int64_t numSlots)
    : slots(numSlots), bytesPerSlot(pool.shape().bytesPerBlock()),
      memory(static_cast<size_t>(std::max<int64_t>(numSlots, 0) * bytesPerSlot)) {
  if (numSlots < 0) throw Error("the swap space must not be negative");
}

unsigned char *KvSwapSpace::slotData(int64_t slot) {
  if (slot < 0 || slot >= slots)
    throw Error("swap slot " + std::to_string(slot) + " is not in the swap space of " +
                std::to_string(slots));
  return static_cast<unsigned char *>(memory.data()) + slot * bytesPerSlot;
}

void KvSwapSpace::swapOut(KvBlockPool &pool, BlockId block, int64_t slot) {
  pool.saveBlock(block, slotData(slot));
}

void KvSwapSpace::swapIn(KvBlockPool &pool, int64_t slot, BlockId block) {
  pool.restoreBlock(slotData(slot), block);
}

double KvSwapSpace::measureRoundTrip(KvBlockPool &pool, BlockId block) {
  double fastest = 0;
  // The first trip faults the slot's pages in; later ones are the copies.
  for (int trip = 0; trip < 4; ++trip) {
    auto start = std::chrono::steady_clock::now();
    swapOut(pool, block, 0);
    swapIn(pool, 0, block);
    std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    fastest = trip == 0 ? seconds.count() : std::min(fastest, seconds.count());
  }
  return fastest;
}

} // namespace llmc::runtime
