//===- LoraProducts.cpp - a step's LoRA products, row by row --------------===//
//
// Two passes over a site's rows: u = A x per row (rank values), then
// out += u^T (scaling B^T) over chunks of output columns, so that one row (a
// decode step of one sequence) still spreads over the threads. Both keep a
// vector of sums in registers while they stream the weights along contiguous
// memory (A is kept transposed, [in, rank]), and are compiled for AVX-512,
// AVX2 and plain x86-64, picked at load: the runtime is built for any x86-64,
// the adapters' products want the host's vectors.
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

/// Floats of one vector register (AVX-512): the products keep a run of this
/// many sums in registers while they stream the weights.
constexpr int64_t kLoraLanes = 16;

/// u[k] = sum_i x[i] * downT[i][k] (A x, A kept transposed and its rank padded with zeros
/// to a multiple of kLoraLanes: [in, paddedRank]), each u[k] summed over i in order.
LLMC_LORA_VECTOR_CLONES
void loraDownProduct(const float *downT, const float *x, int64_t in, int64_t paddedRank,
                     float *u) {
  for (int64_t k0 = 0; k0 < paddedRank; k0 += kLoraLanes) {
    float sums[kLoraLanes] = {};
    for (int64_t i = 0; i < in; ++i) {
      const float *row = downT + i * paddedRank + k0;
      float value = x[i];
      for (int64_t j = 0; j < kLoraLanes; ++j) sums[j] += value * row[j];
    }
    std::copy_n(sums, kLoraLanes, u + k0);
  }
}

/// out[o] += sum_k u[k] * up[k][o] for o in [begin, end) (up [rank, outFeatures]), each
/// out[o] adding over k in order: a run of kLoraLanes outputs stays in registers.
LLMC_LORA_VECTOR_CLONES
void loraUpProduct(const float *up, const float *u, int64_t rank, int64_t outFeatures,
                   int64_t begin, int64_t end, float *out) {
  int64_t o0 = begin;
  for (; o0 + kLoraLanes <= end; o0 += kLoraLanes) {
    float sums[kLoraLanes];
    std::copy_n(out + o0, kLoraLanes, sums);
    for (int64_t k = 0; k < rank; ++k) {
      const float *row = up + k * outFeatures + o0;
      float factor = u[k];
      for (int64_t j = 0; j < kLoraLanes; ++j) sums[j] += factor * row[j];
    }
    std::copy_n(sums, kLoraLanes, out + o0);
  }
  for (int64_t o = o0; o < end; ++o)
    for (int64_t k = 0; k < rank; ++k) out[o] += u[k] * up[k * outFeatures + o];
}

/// Rows a task of the first pass takes, and output columns a task of the
/// second: a decode batch's rows stay on one thread, a wide layer's
/// columns spread.
constexpr int64_t kLoraRowsPerTask = 8;
constexpr int64_t kLoraColumnsPerTask = 256;

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
      maxRank = std::max(maxRank, weights.paddedRank());
    }

  // The base product, and each row's u = A x.
  std::vector<float> u(size_t(rows * maxRank));
  auto down = [&](int64_t beginTask, int64_t endTask) {
    for (int64_t r = beginTask * kLoraRowsPerTask;
         r < std::min(rows, endTask * kLoraRowsPerTask); ++r) {
      if (out + r * ldout != base + r * ldbase)
        std::memcpy(out + r * ldout, base + r * ldbase, size_t(outFeatures) * sizeof(float));
      if (const LoraAdapter::SiteWeights *weights = weightsOf[size_t(r)])
        loraDownProduct(weights->down.data(), x + r * ldx, in, weights->paddedRank(),
                        u.data() + r * maxRank);
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
