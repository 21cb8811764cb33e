//===- ThreadPool.cpp - a fixed pool running parallel loops ---------------===//
#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <chrono>

namespace llmc::runtime {
namespace {
/// More chunks than threads, so that uneven chunks even out.
constexpr int64_t kChunksPerThread = 4;

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
  int64_t numChunks;
  ChunkFn body;
  void *closure;
  std::atomic<int64_t> nextChunk{0};
  std::atomic<int64_t> chunksDone{0};
  /// Changed under the pool's mutex; read without it by the issuer's spin.
  std::atomic<int> activeWorkers{0};
};

ThreadPool::ThreadPool(unsigned numThreads) {
  if (numThreads == 0) numThreads = std::max(1u, std::thread::hardware_concurrency());
  workers.reserve(numThreads - 1);
  for (unsigned i = 1; i < numThreads; ++i) workers.emplace_back([this] { workerMain(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wakeWorkers.notify_all();
  for (std::thread &worker : workers) worker.join();
}

void ThreadPool::runChunks(Loop &loop) {
  for (;;) {
    int64_t chunk = loop.nextChunk.fetch_add(1, std::memory_order_relaxed);
    if (chunk >= loop.numChunks) return;
    // Balanced bounds: chunk sizes differ by at most one.
    int64_t begin = loop.n * chunk / loop.numChunks;
    int64_t end = loop.n * (chunk + 1) / loop.numChunks;
    loop.body(loop.closure, begin, end);
    loop.chunksDone.fetch_add(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::workerMain() {
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
    runChunks(*loop);
    {
      std::lock_guard<std::mutex> lock(mutex);
      --loop->activeWorkers;
    }
    loopDone.notify_all();
  }
}

void ThreadPool::parallelFor(int64_t n, ChunkFn body, void *closure) {
  if (n <= 0) return;
  int64_t numChunks = std::min<int64_t>(n, kChunksPerThread * numThreads());
  if (workers.empty() || numChunks == 1 || insideParallelFor) {
    body(closure, 0, n);
    return;
  }

  std::lock_guard<std::mutex> submitLock(submitMutex);
  Loop loop;
  loop.n = n;
  loop.numChunks = numChunks;
  loop.body = body;
  loop.closure = closure;
  {
    std::lock_guard<std::mutex> lock(mutex);
    currentLoop = &loop;
    ++loopGeneration;
    publishedGeneration.store(loopGeneration, std::memory_order_release);
  }
  wakeWorkers.notify_all();

  insideParallelFor = true;
  runChunks(loop);
  insideParallelFor = false;

  // Spin until the workers have left the loop too: a worker leaves just after
  // its last chunk, and an issuer that slept on loopDone for it would wait
  // for a wake-up through the kernel, tens of microseconds a loop.
  spinUntil([&] {
    return loop.chunksDone.load(std::memory_order_acquire) == numChunks &&
           loop.activeWorkers.load(std::memory_order_acquire) == 0;
  });
  std::unique_lock<std::mutex> lock(mutex);
  // No worker may register on the loop once it is done.
  loopDone.wait(lock, [&] {
    return loop.chunksDone.load(std::memory_order_acquire) == numChunks &&
           loop.activeWorkers == 0;
  });
  currentLoop = nullptr;
}

} // namespace llmc::runtime
