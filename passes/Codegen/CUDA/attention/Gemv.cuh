// Gemv.cuh - the products of decode steps: D[m, n] = A[m, k] . B[n, k]^T
// (+ bias) (+ beta C) for m up to GEMV_ROWS (8), in place of cuBLASLt, which
// ran an H200's batch-1 projections at 1.3-1.9 TB/s of its 4.2
// (bench/RESULTS.md). Such a product reads each weight once for 2m flops: it
// is bound by reading B, as long as the arithmetic keeps up. On CUDA cores it
// did not (two versions measured slower than cuBLASLt on an H200, the more so
// the more rows), so it runs on the tensor cores with the operands swapped:
// mma.sync m16n8k16 computes D^T[16 columns, 8 rows] += B[16 columns, 16
// features] . A^T[16 features, 8 rows], A's m rows being the 8 columns of the
// MMA (rows past m are zeros). Which of a step's 16 features a fragment slot
// holds does not change the sum, so each lane loads 16 contiguous bytes of its
// two weight rows and of its A row (8 features) and feeds them to two MMAs.
//
// A block takes GEMV_COLUMNS (16) output columns; its GEMV_WARPS warps split k
// into slices of whole 32-feature chunks, each with UNROLL (8) chunks' loads
// in flight before its MMAs, and add their partial sums through shared memory
// in warp order. A row's sums do not involve the other rows, so a sequence's
// result is the same at any m the kernel serves. f32 accumulation, as
// cuBLASLt's.
//
// With LLMC_CUDA_GEMV=1 the runtime (runtime/cuda/CudaGemm.cpp) launches it,
// ceil(n / GEMV_COLUMNS) blocks of GEMV_THREADS, for a gemm step whose m is
// at most GEMV_ROWS and whose k, lda and ldb are multiples of 8 with A and B
// 16-byte aligned. A, B, bias and C are the model's storage type (STORAGE_BF16:
// bf16, else f16); D is f32 (`d_f32`) or the storage type. bias and c may be
// null.

/// Word `i` (elements 2i, 2i + 1) of eight storage elements.
__device__ __forceinline__ unsigned word_of(const storage8_t &x, int i) {
  return pack2(x.v[2 * i], x.v[2 * i + 1]);
}

/// The tensor-core core of the products by weight rows (this GEMV and the
/// mixture of experts' tiles, Moe.cuh): for each of MATS weight matrices w
/// ([n, k], rows `ldw` apart) and each group of 8 activation rows, D^T[16
/// columns from n0][8 rows] = w[n0 .., :] . rows^T, into the warp's slot of
/// `sums` [MATS][WARPS][16][8 GROUPS]. `rows[j]` is lane (g, t)'s row of group
/// j (the group's g-th), null for a row of zeros. The WARPS warps split k into
/// slices of whole 32-feature chunks, each with UNROLL chunks' loads in
/// flight before its MMAs. Ends with the block's sums in `sums` (a barrier).
template <bool BF16, int WARPS, int GROUPS, int MATS, int UNROLL>
__device__ __forceinline__ void mma_weight_rows(const storage_t *const (&w)[MATS], int ldw, int n,
                                                int k, int n0,
                                                const storage_t *const (&rows)[GROUPS],
                                                float (*sums)[WARPS][16][8 * GROUPS]) {
  constexpr int CHUNK = 32; // a chunk: 8 features for each of the 4 lanes of a row
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int slice = (k + WARPS * CHUNK - 1) / (WARPS * CHUNK) * CHUNK;
  const int begin = warp * slice, end = min(k, begin + slice);
  // This lane's weight rows: n0 + g and n0 + g + 8 of each matrix.
  const bool low_ok = n0 + g < n, high_ok = n0 + g + 8 < n;
  float acc[MATS][GROUPS][4] = {};
  for (int first = begin; first < end; first += UNROLL * CHUNK) {
    storage8_t w_low[UNROLL][MATS], w_high[UNROLL][MATS], x[UNROLL][GROUPS];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int at = first + u * CHUNK + t * 8;
      const bool in = at < end;
#pragma unroll
      for (int m = 0; m < MATS; ++m) {
        const storage_t *low = w[m] + (long long)(n0 + g) * ldw + at;
        w_low[u][m] = in && low_ok ? *reinterpret_cast<const storage8_t *>(low) : storage8_t{};
        w_high[u][m] =
            in && high_ok ? *reinterpret_cast<const storage8_t *>(low + 8LL * ldw) : storage8_t{};
      }
#pragma unroll
      for (int j = 0; j < GROUPS; ++j)
        x[u][j] = in && rows[j] ? *reinterpret_cast<const storage8_t *>(rows[j] + at)
                                : storage8_t{};
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int step = 0; step < 2; ++step) // features 4 step .. 4 step + 3 of the lane's 8
#pragma unroll
        for (int m = 0; m < MATS; ++m) {
          const unsigned frag_a[4] = {word_of(w_low[u][m], 2 * step),
                                      word_of(w_high[u][m], 2 * step),
                                      word_of(w_low[u][m], 2 * step + 1),
                                      word_of(w_high[u][m], 2 * step + 1)};
#pragma unroll
          for (int j = 0; j < GROUPS; ++j) {
            const unsigned frag_b[2] = {word_of(x[u][j], 2 * step), word_of(x[u][j], 2 * step + 1)};
            mma_16816<BF16>(acc[m][j], frag_a, frag_b);
          }
        }
  }
  // acc[m][j]: D^T[g][2t], D^T[g][2t + 1], D^T[g + 8][2t], D^T[g + 8][2t + 1] of group j.
#pragma unroll
  for (int m = 0; m < MATS; ++m)
#pragma unroll
    for (int j = 0; j < GROUPS; ++j) {
      sums[m][warp][g][8 * j + 2 * t] = acc[m][j][0];
      sums[m][warp][g][8 * j + 2 * t + 1] = acc[m][j][1];
      sums[m][warp][g + 8][8 * j + 2 * t] = acc[m][j][2];
      sums[m][warp][g + 8][8 * j + 2 * t + 1] = acc[m][j][3];
    }
  __syncthreads();
}

/// The sum over the block's warps of output (column c, row r) of
/// mma_weight_rows, in warp order.
template <int WARPS, int ROWS>
__device__ __forceinline__ float warp_order_sum(const float (*sums)[16][ROWS], int c, int r) {
  float value = 0.f;
  for (int w = 0; w < WARPS; ++w) value += sums[w][c][r];
  return value;
}

template <bool BF16>
__device__ __forceinline__ void gemv_nk(const storage_t *__restrict__ a, int lda,
                                        const storage_t *__restrict__ b, int ldb, void *d, int ldd,
                                        int d_f32, const storage_t *bias, const storage_t *c,
                                        int ldc, float beta, int m, int n, int k) {
  static_assert(GEMV_ROWS == 8 && GEMV_COLUMNS == 16, "one m16n8k16 tile of D^T per block");
  static_assert(GEMV_THREADS >= GEMV_COLUMNS * GEMV_ROWS, "a thread per output to add up");
  __shared__ float s_sums[1][GEMV_WARPS][GEMV_COLUMNS][GEMV_ROWS];
  const int g = (threadIdx.x & 31) >> 2, n0 = blockIdx.x * GEMV_COLUMNS;
  // This lane's A row: g, the MMA's column.
  const storage_t *const w[1] = {b}, *const rows[1] = {g < m ? a + (long long)g * lda : nullptr};
  mma_weight_rows<BF16, GEMV_WARPS, 1, 1, 8>(w, ldb, n, k, n0, rows, s_sums);
  if (threadIdx.x >= GEMV_COLUMNS * GEMV_ROWS) return;
  const int r = threadIdx.x / GEMV_COLUMNS, j = threadIdx.x % GEMV_COLUMNS, col = n0 + j;
  if (r >= m || col >= n) return;
  float value = warp_order_sum<GEMV_WARPS, GEMV_ROWS>(s_sums[0], j, r);
  if (bias) value += to_f32<BF16>(bias[col]);
  if (c) value += beta * to_f32<BF16>(c[(long long)r * ldc + col]);
  if (d_f32) static_cast<float *>(d)[(long long)r * ldd + col] = value;
  else static_cast<storage_t *>(d)[(long long)r * ldd + col] = from_f32<BF16>(value);
}

extern "C" __global__ void __launch_bounds__(GEMV_THREADS)
llmc_gemv(const storage_t *a, int lda, const storage_t *b, int ldb, void *d, int ldd, int d_f32,
          const storage_t *bias, const storage_t *c, int ldc, float beta, int m, int n, int k) {
  gemv_nk<STORAGE_BF16>(a, lda, b, ldb, d, ldd, d_f32, bias, c, ldc, beta, m, n, k);
}
