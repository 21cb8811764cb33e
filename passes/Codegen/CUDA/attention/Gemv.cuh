// Gemv.cuh - the products of decode steps: D[m, n] = A[m, k] . B[n, k]^T
// (+ bias) (+ beta C) for m up to GEMV_ROWS, in place of cuBLASLt, which ran
// an H200's batch-1 projections at 1.3-1.9 TB/s of its 4.2 (bench/RESULTS.md).
// Such a product does 2m flops a weight read once: it is bound by reading B.
// A warp takes one output column: its lanes stream that column's weight row
// (contiguous, since the compiler stores every matmul weight [n, k]) 16 bytes
// at a time, GEMV_UNROLL loads in flight each before any arithmetic, and dot
// them with the m rows of A, which every warp reads and L1 holds. Sums are f32,
// as cuBLASLt's; each row's sum does not depend on the other rows, so a
// sequence's result is the same at any m the kernel serves.
//
// The runtime (runtime/cuda/CudaGemm.cpp) launches it, (n + GEMV_WARPS - 1) /
// GEMV_WARPS blocks of GEMV_THREADS, for a gemm step whose m is at most
// GEMV_ROWS and whose k, lda and ldb are multiples of 8 with A and B 16-byte
// aligned. A, B, bias and C are the model's storage type (GEMV_BF16: bf16,
// else f16); D is f32 (`d_f32`) or the storage type. bias and c may be null.

template <bool BF16>
__device__ __forceinline__ void gemv_nk(const storage_t *__restrict__ a, int lda,
                                        const storage_t *__restrict__ b, int ldb, void *d, int ldd,
                                        int d_f32, const storage_t *bias, const storage_t *c,
                                        int ldc, float beta, int m, int n, int k) {
  constexpr int GEMV_UNROLL = 8, CHUNK = 32 * 8; // a warp's 16-byte loads cover 256 features
  const int lane = threadIdx.x & 31;
  const int col = blockIdx.x * GEMV_WARPS + (threadIdx.x >> 5);
  if (col >= n) return; // a whole warp
  const storage_t *weights = b + (long long)col * ldb;
  float acc[GEMV_ROWS];
#pragma unroll
  for (int r = 0; r < GEMV_ROWS; ++r) acc[r] = 0.f;
  for (int first = lane * 8; first < k; first += GEMV_UNROLL * CHUNK) {
    storage8_t w[GEMV_UNROLL];
#pragma unroll
    for (int u = 0; u < GEMV_UNROLL; ++u) {
      const int at = first + u * CHUNK;
      w[u] = at < k ? *reinterpret_cast<const storage8_t *>(weights + at) : storage8_t{};
    }
#pragma unroll
    for (int u = 0; u < GEMV_UNROLL; ++u) {
      const int at = first + u * CHUNK;
      if (at >= k) break;
      float wf[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) wf[j] = to_f32<BF16>(w[u].v[j]);
#pragma unroll
      for (int r = 0; r < GEMV_ROWS; ++r) {
        if (r >= m) break;
        const storage8_t x = *reinterpret_cast<const storage8_t *>(a + (long long)r * lda + at);
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[r] += wf[j] * to_f32<BF16>(x.v[j]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < GEMV_ROWS; ++r) {
    if (r >= m) break;
    acc[r] = warp_sum(acc[r]);
    if (lane != r) continue; // lane r writes row r
    float value = acc[r];
    if (bias) value += to_f32<BF16>(bias[col]);
    if (c) value += beta * to_f32<BF16>(c[(long long)r * ldc + col]);
    if (d_f32) static_cast<float *>(d)[(long long)r * ldd + col] = value;
    else static_cast<storage_t *>(d)[(long long)r * ldd + col] = from_f32<BF16>(value);
  }
}

extern "C" __global__ void __launch_bounds__(GEMV_THREADS)
llmc_gemv(const storage_t *a, int lda, const storage_t *b, int ldb, void *d, int ldd, int d_f32,
          const storage_t *bias, const storage_t *c, int ldc, float beta, int m, int n, int k) {
  gemv_nk<GEMV_BF16>(a, lda, b, ldb, d, ldd, d_f32, bias, c, ldc, beta, m, n, k);
}
