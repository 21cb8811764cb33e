//===- LoraProducts.cpp - a step's LoRA products, row by row --------------===//
#include "runtime/lora/LoraProducts.h"

#include "runtime/lora/LoraAdapter.h"

#include <cstring>
#include <vector>

namespace llmc::runtime {
namespace {

/// out += up^T (down x): down [rank, in], up [rank, outFeatures].
void addLoraRowProduct(const LoraAdapter::SiteWeights &weights, const float *x, int64_t in,
                float *out, int64_t outFeatures, float *scratch) {
  for (int64_t k = 0; k < weights.rank; ++k) {
    const float *row = weights.down.data() + k * in;
    float sum = 0;
    for (int64_t i = 0; i < in; ++i) sum += row[i] * x[i];
    scratch[k] = sum;
  }
  for (int64_t k = 0; k < weights.rank; ++k) {
    const float *row = weights.up.data() + k * outFeatures;
    float factor = scratch[k];
    for (int64_t o = 0; o < outFeatures; ++o) out[o] += factor * row[o];
  }
}

/// Rows a task of the pool takes: a decode batch stays on one thread.
constexpr int64_t kLoraRowsPerTask = 8;

} // namespace

void addLoraProducts(ThreadPool &pool, const StepBatch &batch, int64_t site,
                     const LoraSite &shape, bool perSequence, int64_t rows, const float *x,
                     int64_t ldx, const float *base, int64_t ldbase, float *out, int64_t ldout) {
  int64_t in = shape.in, outFeatures = shape.out;
  auto body = [&](int64_t beginTask, int64_t endTask) {
    std::vector<float> scratch;
    for (int64_t r = beginTask * kLoraRowsPerTask; r < std::min(rows, endTask * kLoraRowsPerTask); ++r) {
      float *row = out + r * ldout;
      const float *from = base + r * ldbase;
      if (row != from) std::memcpy(row, from, size_t(outFeatures) * sizeof(float));
      if (!batch.loraIndices) continue;
      int64_t token = perSequence ? batch.logitsIndices[r] : r;
      int32_t adapter = batch.loraIndices[token];
      if (adapter < 0) continue;
      const LoraAdapter::SiteWeights &weights = batch.loraAdapters[adapter]->site(site);
      if (!weights.rank) continue;
      scratch.resize(size_t(weights.rank));
      addLoraRowProduct(weights, x + r * ldx, in, row, outFeatures, scratch.data());
    }
  };
  int64_t tasks = (rows + kLoraRowsPerTask - 1) / kLoraRowsPerTask;
  if (tasks <= 1) {
    body(0, tasks);
    return;
  }
  pool.parallelFor(tasks, body);
}

} // namespace llmc::runtime
