//===- LoraProducts.cpp - a step's LoRA products, row by row --------------===//
//
// Two passes over a site's rows: u = A x per row (rank values), then
// out += u^T (scaling B^T) over chunks of output columns, so that one row (a
// decode step of one sequence) still spreads over the threads. Both inner
// loops run along contiguous memory (A is kept transposed, [in, rank]), and
// are compiled for AVX-512, AVX2 and plain x86-64, picked at load: the
// runtime is built for any x86-64, the adapters' products want the host's
// vectors.
//
//===----------------------------------------------------------------------===//
#include "runtime/lora/LoraProducts.h"

#include "runtime/lora/LoraAdapter.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LLMC_LORA_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2,fma", "default")))
#else
#define LLMC_LORA_VECTOR_CLONES
#endif

namespace llmc::runtime {
namespace {

/// u[r][k] = sum_i x[r][i] * downT[i][k] (A x, A kept transposed: [in, rank]) for `rows`
/// rows of one adapter (u's rows `ldu` apart), each row of A^T read once for all of them.
/// Every u[r][k] sums over i in order, however many rows come together.
LLMC_LORA_VECTOR_CLONES
void loraDownProduct(const float *downT, const float *x, int64_t ldx, int64_t rows, int64_t in,
                     int64_t rank, float *u, int64_t ldu) {
  for (int64_t r = 0; r < rows; ++r) std::fill(u + r * ldu, u + r * ldu + rank, 0.0f);
  for (int64_t i = 0; i < in; ++i) {
    const float *row = downT + i * rank;
    for (int64_t r = 0; r < rows; ++r) {
      float value = x[r * ldx + i];
      float *sums = u + r * ldu;
      for (int64_t k = 0; k < rank; ++k) sums[k] += value * row[k];
    }
  }
}

/// out[o] += sum_k u[k] * up[k][o] for o in [begin, end): up [rank, outFeatures].
LLMC_LORA_VECTOR_CLONES
void loraUpProduct(const float *up, const float *u, int64_t rank, int64_t outFeatures,
                   int64_t begin, int64_t end, float *out) {
  for (int64_t k = 0; k < rank; ++k) {
    const float *row = up + k * outFeatures;
    float factor = u[k];
    for (int64_t o = begin; o < end; ++o) out[o] += factor * row[o];
  }
}

/// Rows a task of the first pass takes, and output columns a task of the
/// second: a decode batch's rows stay on one thread, a wide layer's
/// columns spread.
constexpr int64_t kLoraRowsPerTask = 8;
constexpr int64_t kLoraColumnsPerTask = 256;
/// Rows whose sums one pass over A^T accumulates: their u rows stay in L1.
constexpr int64_t kLoraRowsPerDownRun = 4;

} // namespace

void addLoraProducts(ThreadPool &pool, const StepBatch &batch, int64_t site,
                     const LoraSite &shape, bool perSequence, int64_t rows, const float *x,
                     int64_t ldx, const float *base, int64_t ldbase, float *out, int64_t ldout) {
  const int64_t in = shape.in, outFeatures = shape.out;
  // Each row's weights at this site; null where it runs without an adapter or
  // its adapter leaves the site be.
  std::vector<const LoraAdapter::SiteWeights *> weightsOf(size_t(rows), nullptr);
  int64_t maxRank = 0;
  if (batch.loraIndices)
    for (int64_t r = 0; r < rows; ++r) {
      int32_t adapter = batch.loraIndices[perSequence ? batch.logitsIndices[r] : r];
      if (adapter < 0) continue;
      const LoraAdapter::SiteWeights &weights = batch.loraAdapters[adapter]->site(site);
      if (!weights.rank) continue;
      weightsOf[size_t(r)] = &weights;
      maxRank = std::max(maxRank, weights.rank);
    }

  // The base product, and each row's u = A x, a run of rows of one adapter at a time.
  std::vector<float> u(size_t(rows * maxRank));
  auto down = [&](int64_t beginTask, int64_t endTask) {
    int64_t end = std::min(rows, endTask * kLoraRowsPerTask);
    for (int64_t r = beginTask * kLoraRowsPerTask; r < end; ++r)
      if (out + r * ldout != base + r * ldbase)
        std::memcpy(out + r * ldout, base + r * ldbase, size_t(outFeatures) * sizeof(float));
    for (int64_t r = beginTask * kLoraRowsPerTask, run; r < end; r += run) {
      const LoraAdapter::SiteWeights *weights = weightsOf[size_t(r)];
      for (run = 1; r + run < end && weightsOf[size_t(r + run)] == weights;) ++run;
      if (weights)
        for (int64_t first = r; first < r + run; first += kLoraRowsPerDownRun) {
          int64_t count = std::min(kLoraRowsPerDownRun, r + run - first);
          loraDownProduct(weights->down.data(), x + first * ldx, ldx, count, in, weights->rank,
                          u.data() + first * maxRank, maxRank);
        }
    }
  };
  int64_t rowTasks = (rows + kLoraRowsPerTask - 1) / kLoraRowsPerTask;
  if (rowTasks <= 1)
    down(0, rowTasks);
  else
    pool.parallelFor(rowTasks, down);
  if (!maxRank) return;

  // out += u^T (scaling B^T), by chunks of columns.
  int64_t columnTasks = (outFeatures + kLoraColumnsPerTask - 1) / kLoraColumnsPerTask;
  pool.parallelFor(rowTasks * columnTasks, [&](int64_t beginTask, int64_t endTask) {
    for (int64_t task = beginTask; task < endTask; ++task) {
      int64_t rowTask = task / columnTasks, column = task % columnTasks;
      int64_t begin = column * kLoraColumnsPerTask;
      int64_t end = std::min(outFeatures, begin + kLoraColumnsPerTask);
      for (int64_t r = rowTask * kLoraRowsPerTask;
           r < std::min(rows, (rowTask + 1) * kLoraRowsPerTask); ++r)
        if (const LoraAdapter::SiteWeights *weights = weightsOf[size_t(r)])
          loraUpProduct(weights->up.data(), u.data() + r * maxRank, weights->rank, outFeatures,
                        begin, end, out + r * ldout);
    }
  });
}

} // namespace llmc::runtime
