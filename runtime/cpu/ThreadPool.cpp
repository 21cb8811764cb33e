//===- ThreadPool.cpp - a fixed pool running parallel loops ---------------===//
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <chrono>

namespace llmc::runtime {
namespace {
/// Set on pool threads and while the caller runs a loop: a nested parallelFor
/// then runs inline instead of waiting on the pool it occupies.
thread_local bool insideParallelFor = false;

/// How long a thread polls before it sleeps on a condition variable. A model
/// step issues hundreds of short loops a few microseconds apart; waking a
/// sleeping thread costs tens of microseconds each time.
constexpr std::chrono::microseconds kSpinTime{200};

/// Polls `ready` until it holds or kSpinTime has passed; returns whether it held.
template <typename Ready>
bool spinUntil(Ready ready) {
  auto deadline = std::chrono::steady_clock::now() + kSpinTime;
  for (unsigned polls = 1;; ++polls) {
    if (ready()) return true;
    if (polls % 64 == 0 && std::chrono::steady_clock::now() > deadline) return false;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}
} // namespace

/// One parallel loop, on the stack of the thread that issued it. Workers only
/// touch a loop they registered on (under the pool's mutex), and the issuer
/// waits until they have all left it.
struct ThreadPool::Loop {
  int64_t n;
  ChunkFn body;
  void *closure;
  std::atomic<int64_t> indicesDone{0};
  /// Changed under the pool's mutex; read without it by the issuer's spin.
  std::atomic<int> activeWorkers{0};
};

namespace {
uint64_t packRange(uint64_t front, uint64_t back) { return front << 32 | back; }
uint64_t frontOf(uint64_t range) { return range >> 32; }
uint64_t backOf(uint64_t range) { return range & 0xffffffffu; }

/// Takes the first index of `share` (fromBack: the last), or -1 when it is empty.
int64_t take(std::atomic<uint64_t> &share, bool fromBack) {
  uint64_t range = share.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t front = frontOf(range), back = backOf(range);
    if (front >= back) return -1;
    uint64_t taken = fromBack ? packRange(front, back - 1) : packRange(front + 1, back);
    if (share.compare_exchange_weak(range, taken, std::memory_order_acq_rel,
                                    std::memory_order_relaxed))
      return static_cast<int64_t>(fromBack ? back - 1 : front);
  }
}
} // namespace

ThreadPool::ThreadPool(unsigned numThreads) {
  if (numThreads == 0) numThreads = std::max(1u, std::thread::hardware_concurrency());
  shares = std::make_unique<Share[]>(numThreads);
  workers.reserve(numThreads - 1);
  for (unsigned slot = 1; slot < numThreads; ++slot)
    workers.emplace_back([this, slot] { workerMain(slot); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wakeWorkers.notify_all();
  for (std::thread &worker : workers) worker.join();
}

int64_t ThreadPool::runShares(Loop &loop, unsigned slot) {
  unsigned threads = numThreads();
  int64_t ran = 0;
  for (unsigned k = 0; k < threads; ++k) {
    std::atomic<uint64_t> &share = shares[(slot + k) % threads].range;
    for (int64_t index; (index = take(share, /*fromBack=*/k != 0)) >= 0; ++ran)
      loop.body(loop.closure, index, index + 1);
  }
  return ran;
}

void ThreadPool::workerMain(unsigned slot) {
  insideParallelFor = true;
  uint64_t seenGeneration = 0;
  for (;;) {
    Loop *loop;
    spinUntil([&] { return publishedGeneration.load(std::memory_order_acquire) != seenGeneration; });
    {
      std::unique_lock<std::mutex> lock(mutex);
      wakeWorkers.wait(lock, [&] {
        return stopping || (currentLoop && loopGeneration != seenGeneration);
      });
      if (stopping) return;
      seenGeneration = loopGeneration;
      loop = currentLoop;
      ++loop->activeWorkers;
    }
    loop->indicesDone.fetch_add(runShares(*loop, slot), std::memory_order_acq_rel);
    {
      std::lock_guard<std::mutex> lock(mutex);
      --loop->activeWorkers;
    }
    loopDone.notify_all();
  }
}

void ThreadPool::parallelFor(int64_t n, ChunkFn body, void *closure) {
  if (n <= 0) return;
  unsigned threads = numThreads();
  // Shares pack 32-bit indices; no step has 2^32 tasks.
  if (workers.empty() || n == 1 || insideParallelFor || n > int64_t(UINT32_MAX)) {
    body(closure, 0, n);
    return;
  }

  std::lock_guard<std::mutex> submitLock(submitMutex);
  Loop loop;
  loop.n = n;
  loop.body = body;
  loop.closure = closure;
  {
    std::lock_guard<std::mutex> lock(mutex);
    // Balanced contiguous shares: sizes differ by at most one.
    for (unsigned t = 0; t < threads; ++t)
      shares[t].range.store(packRange(uint64_t(n * t / threads), uint64_t(n * (t + 1) / threads)),
                            std::memory_order_relaxed);
    currentLoop = &loop;
    ++loopGeneration;
    publishedGeneration.store(loopGeneration, std::memory_order_release);
  }
  wakeWorkers.notify_all();

  insideParallelFor = true;
  loop.indicesDone.fetch_add(runShares(loop, 0), std::memory_order_acq_rel);
  insideParallelFor = false;

  // Spin until the workers have left the loop too: a worker leaves just after
  // its last index, and an issuer that slept on loopDone for it would wait
  // for a wake-up through the kernel, tens of microseconds a loop.
  auto finished = [&] {
    return loop.indicesDone.load(std::memory_order_acquire) == n &&
           loop.activeWorkers.load(std::memory_order_acquire) == 0;
  };
  spinUntil(finished);
  std::unique_lock<std::mutex> lock(mutex);
  // No worker may register on the loop once it is done.
  loopDone.wait(lock, finished);
  currentLoop = nullptr;
}

} // namespace llmc::runtime
