//===- CpuDevice.cpp - the host API table over a thread pool and BLAS -----===//
#include "runtime/cpu/CpuDevice.h"

#include "runtime/lora/LoraProducts.h"

#include <cblas.h>

#include <cstring>

namespace llmc::runtime {
namespace {
void sgemm(void *context, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
           const float *b, int64_t ldb, int32_t bTransposed, float *c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  // An empty inner dimension makes C zeros (beta = 0); BLAS would also refuse
  // the leading dimension 0 that such a caller may pass.
  if (k == 0) {
    for (int64_t row = 0; row < m; ++row) std::memset(c + row * ldc, 0, n * sizeof(float));
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, bTransposed ? CblasTrans : CblasNoTrans,
              static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), 1.0f, a,
              static_cast<blasint>(lda), b, static_cast<blasint>(ldb), 0.0f, c,
              static_cast<blasint>(ldc));
}

void poolParallelFor(void *context, int64_t n,
                     void (*body)(void *closure, int64_t begin, int64_t end), void *closure) {
  static_cast<CpuDevice::HostContext *>(context)->pool->parallelFor(n, body, closure);
}

void loraProducts(void *context, int64_t site, int32_t perSequence, int64_t rows,
                  const float *x, int64_t ldx, const float *base, int64_t ldbase, float *out,
                  int64_t ldout) {
  auto &host = *static_cast<CpuDevice::HostContext *>(context);
  addLoraProducts(*host.pool, *host.batch, site, (*host.loraSites)[size_t(site)],
                  perSequence != 0, rows, x, ldx, base, ldbase, out, ldout);
}
} // namespace

void CpuDevice::parallelFor(int64_t n, const std::function<void(int64_t)> &body) {
  pool.parallelFor(n, [&body](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) body(i);
  });
}

CpuDevice::CpuDevice(unsigned numThreads) : pool(numThreads) {
  openblas_set_num_threads(static_cast<int>(pool.numThreads()));
  api.abi_version = LLMC_STEP_ABI_VERSION;
  api.reserved = 0;
  context.pool = &pool;
  api.context = &context;
  api.sgemm = sgemm;
  api.parallel_for = poolParallelFor;
  api.lora = loraProducts;
}

} // namespace llmc::runtime
