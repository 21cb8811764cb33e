//===- CpuDeviceTest.cpp - the thread pool and the host API table ---------===//
#include "runtime/cpu/CpuDevice.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

using namespace llmc::runtime;

namespace {
/// Counts how often each index of [0, n) is visited.
std::vector<int> visitCounts(ThreadPool &pool, int64_t n) {
  std::vector<std::atomic<int>> counts(static_cast<size_t>(n));
  pool.parallelFor(n, [&](int64_t begin, int64_t end) {
    EXPECT_LE(0, begin);
    EXPECT_LT(begin, end);
    EXPECT_LE(end, n);
    for (int64_t i = begin; i < end; ++i) counts[i].fetch_add(1);
  });
  std::vector<int> result;
  for (auto &count : counts) result.push_back(count.load());
  return result;
}

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (unsigned threads : {1u, 2u, 4u}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.numThreads(), threads);
    for (int64_t n : {0, 1, 7, 1000}) {
      std::vector<int> counts = visitCounts(pool, n);
      EXPECT_EQ(counts, std::vector<int>(static_cast<size_t>(n), 1))
          << "threads " << threads << ", n " << n;
    }
  }
}

TEST(ThreadPool, RunsManyLoopsInARow) {
  ThreadPool pool(3);
  for (int round = 0; round < 2000; ++round) {
    std::atomic<int64_t> sum{0};
    pool.parallelFor(64, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) sum += i;
    });
    ASSERT_EQ(sum.load(), 64 * 63 / 2);
  }
}

// The caller's share starts at index 0, which here waits for every other
// index: only a worker that takes the caller's indices from the back once its
// own share is done can finish them.
TEST(ThreadPool, AThreadDoneWithItsShareTakesTheRestOfAnother) {
  ThreadPool pool(2);
  constexpr int64_t n = 64;
  std::atomic<int64_t> othersDone{0};
  bool waited = false;
  pool.parallelFor(n, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (i != 0) {
        ++othersDone;
        continue;
      }
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (othersDone.load() < n - 1 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
      waited = othersDone.load() == n - 1;
    }
  });
  EXPECT_TRUE(waited);
  EXPECT_EQ(othersDone.load(), n - 1);
}

TEST(ThreadPool, NestedLoopsRunInline) {
  ThreadPool pool(4);
  std::atomic<int64_t> visits{0};
  pool.parallelFor(8, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      pool.parallelFor(10, [&](int64_t innerBegin, int64_t innerEnd) {
        visits += innerEnd - innerBegin;
      });
  });
  EXPECT_EQ(visits.load(), 80);
}

TEST(ThreadPool, ZeroMeansOnePerHardwareThread) {
  ThreadPool pool(0);
  EXPECT_GE(pool.numThreads(), 1u);
}

TEST(CpuDevice, HostApiParallelForCoversEveryIndex) {
  CpuDevice device(3);
  const LlmcCpuHostApi *api = device.hostApi();
  EXPECT_EQ(api->abi_version, unsigned(LLMC_STEP_ABI_VERSION));
  std::vector<int> counts(1000, 0);
  api->parallel_for(
      api->context, 1000,
      [](void *closure, int64_t begin, int64_t end) {
        auto &counts = *static_cast<std::vector<int> *>(closure);
        for (int64_t i = begin; i < end; ++i) ++counts[i];
      },
      &counts);
  EXPECT_EQ(counts, std::vector<int>(1000, 1));
}

/// C = A * B (or A * B^T) the plain way, in double.
std::vector<float> naiveMatmul(int64_t m, int64_t n, int64_t k, const std::vector<float> &a,
                               int64_t lda, const std::vector<float> &b, int64_t ldb,
                               bool bTransposed) {
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p)
        sum += double(a[i * lda + p]) * double(bTransposed ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * n + j] = static_cast<float>(sum);
    }
  return c;
}

TEST(CpuDevice, SgemmMatchesANaiveLoopForBothLayouts) {
  CpuDevice device(2);
  const LlmcCpuHostApi *api = device.hostApi();
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1, 1);
  const int64_t m = 37, n = 29, k = 53;
  for (bool bTransposed : {false, true}) {
    // Leading dimensions wider than the matrices, to check they are honoured.
    int64_t lda = k + 3, ldb = (bTransposed ? k : n) + 5, ldc = n + 2;
    std::vector<float> a(static_cast<size_t>(m * lda)), b(static_cast<size_t>(
                                                            (bTransposed ? n : k) * ldb));
    for (float &x : a) x = uniform(random);
    for (float &x : b) x = uniform(random);
    std::vector<float> c(static_cast<size_t>(m * ldc), 123.0f);
    api->sgemm(api->context, m, n, k, a.data(), lda, b.data(), ldb, bTransposed, c.data(), ldc);
    std::vector<float> expected = naiveMatmul(m, n, k, a, lda, b, ldb, bTransposed);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        ASSERT_NEAR(c[i * ldc + j], expected[i * n + j], 1e-4)
            << "b_transposed " << bTransposed << " at " << i << "," << j;
  }
}

TEST(CpuDevice, SgemmWithEmptyInnerDimensionWritesZeros) {
  CpuDevice device(1);
  const LlmcCpuHostApi *api = device.hostApi();
  std::vector<float> c(6, 5.0f);
  api->sgemm(api->context, 2, 3, 0, nullptr, 0, nullptr, 0, 0, c.data(), 3);
  EXPECT_EQ(c, std::vector<float>(6, 0.0f));
}
} // namespace
