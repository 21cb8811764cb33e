//===- CudaAttention.cpp - paged attention as CUDA C++ for NVRTC ----------===//
//
// Attention is generated as CUDA C++ specialised to the model (head dim,
// query heads per KV head, KV heads, block size, dtype and scale are
// constants) and compiled by the target with NVRTC. Every kernel serves all
// query heads of one KV head, so each K/V vector is loaded once per group
// (GQA).
//
// - prefill: sequences with more than one query token (prefill chunks), a
//   tile of 64 (query row, head) pairs per block on tensor cores (WMMA),
//   K/V tiles in shared memory, online softmax (FlashAttention-2 style);
// - decode + combine: sequences with one query token (decode), their
//   context split over kSplits blocks (flash-decoding), so one sequence
//   with a long context still occupies the GPU; the partial sums go to
//   scratch and the combine kernel merges them.
//
// Both run every step; each skips the other's sequences. The tests run the
// same source on the CPU through a host emulation of the CUDA features it
// uses (python/llmc/testing/cuda_emulation.h).
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CUDA/CudaLowering.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>

using namespace mlir;

namespace llmc::cuda {

namespace {

constexpr int64_t kAttentionThreads = 128; // 4 warps
constexpr int64_t kSplits = 32;
/// Static shared memory a block may use without opting in.
constexpr int64_t kSharedLimit = 48 * 1024;
/// The prefill kernel's tensor-core tiles: (query row, head) pairs per block
/// (16 per warp) and keys per K/V tile.
constexpr int64_t kPrefillTileM = 64;
constexpr int64_t kPrefillTileK = 32;

/// What only the GPU build needs: the WMMA header and storage conversions in
/// PTX. The host emulation the tests run the kernels with
/// (python/llmc/testing/cuda_emulation.h) defines LLMC_CUDA_EMULATION and
/// gives its own.
constexpr llvm::StringLiteral kDevicePrelude = R"cuda(
#ifndef LLMC_CUDA_EMULATION
#include <mma.h>
#define INFINITY __int_as_float(0x7f800000)
typedef unsigned short storage_t;

template <bool BF16> __device__ __forceinline__ float to_f32(storage_t v) {
  if (BF16) return __uint_as_float(((unsigned)v) << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}

template <bool BF16> __device__ __forceinline__ storage_t from_f32(float f) {
  storage_t h;
  if (BF16) asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif
)cuda";

/// What every attention config shares: the sequence lookup, the CUDA-core
/// attend loop of decode and the tensor-core tile of prefill.
constexpr llvm::StringLiteral kCommonSource = R"cuda(
namespace wmma = nvcuda::wmma;

/// The WMMA element type of the storage.
template <bool BF16> struct mma_type { typedef __nv_bfloat16 type; };
template <> struct mma_type<false> { typedef __half type; };

/// Eight storage elements, for 16-byte loads.
struct __align__(16) storage8_t { storage_t v[8]; };

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/// The sequence of query row `row`: the last one whose rows start at or before it.
__device__ __forceinline__ int sequence_of(const int *cu_seqlens, int num_seqs, int row) {
  int lo = 0, hi = num_seqs - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (cu_seqlens[mid] <= row) lo = mid; else hi = mid - 1;
  }
  return lo;
}

/// Attends the G query heads of KV head `kvh` in query row `row` to keys
/// [k_begin, k_end) of the sequence whose block table is `table`, then calls
/// emit(g, d, unnormalised output, running max, running sum) once per
/// (head, feature) of the block's merged result. CUDA cores: for one query
/// row a tensor-core tile would be 15/16 padding.
template <int D, int G, int KVH, int BS, bool BF16, typename Emit>
__device__ __forceinline__ void attend(const storage_t *__restrict__ query, int q_stride,
                                       const storage_t *__restrict__ layer_pool,
                                       const int *__restrict__ table, int row, int kvh,
                                       int k_begin, int k_end, float scale, Emit emit) {
  constexpr int WARPS = 4, PER_LANE = (D + 31) / 32;
  __shared__ float s_q[G][D];
  __shared__ float s_acc[WARPS][G][D];
  __shared__ float s_m[WARPS][G], s_l[WARPS][G];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
    int g = i / D, d = i % D;
    s_q[g][d] = to_f32<BF16>(query[(long long)row * q_stride + (kvh * G + g) * D + d]) * scale;
  }
  __syncthreads();

  float m[G], l[G], acc[G][PER_LANE];
  for (int g = 0; g < G; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.f;
    for (int j = 0; j < PER_LANE; ++j) acc[g][j] = 0.f;
  }
  for (int key = k_begin + warp; key < k_end; key += WARPS) {
    const long long block = table[key / BS];
    const storage_t *k = layer_pool + ((block * 2 * KVH + kvh) * BS + key % BS) * D;
    const storage_t *v = k + (long long)KVH * BS * D;
    float kf[PER_LANE], vf[PER_LANE];
    for (int j = 0; j < PER_LANE; ++j) {
      int d = lane + 32 * j;
      kf[j] = d < D ? to_f32<BF16>(k[d]) : 0.f;
      vf[j] = d < D ? to_f32<BF16>(v[d]) : 0.f;
    }
    for (int g = 0; g < G; ++g) {
      float dot = 0.f;
      for (int j = 0; j < PER_LANE; ++j) {
        int d = lane + 32 * j;
        if (d < D) dot += s_q[g][d] * kf[j];
      }
      dot = warp_sum(dot);
      float m_new = fmaxf(m[g], dot);
      float correction = expf(m[g] - m_new), p = expf(dot - m_new);
      l[g] = l[g] * correction + p;
      for (int j = 0; j < PER_LANE; ++j) acc[g][j] = acc[g][j] * correction + p * vf[j];
      m[g] = m_new;
    }
  }
  for (int g = 0; g < G; ++g) {
    if (lane == 0) {
      s_m[warp][g] = m[g];
      s_l[warp][g] = l[g];
    }
    for (int j = 0; j < PER_LANE; ++j) {
      int d = lane + 32 * j;
      if (d < D) s_acc[warp][g][d] = acc[g][j];
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < G * D; i += blockDim.x) {
    int g = i / D, d = i % D;
    float m_all = -INFINITY;
    for (int w = 0; w < WARPS; ++w) m_all = fmaxf(m_all, s_m[w][g]);
    float l_all = 0.f, o = 0.f;
    if (m_all != -INFINITY)
      for (int w = 0; w < WARPS; ++w) {
        float weight = expf(s_m[w][g] - m_all);
        l_all += s_l[w][g] * weight;
        o += s_acc[w][g][d] * weight;
      }
    emit(g, d, o, m_all, l_all);
  }
}

/// Copies ROWS rows of D features into a shared tile of row stride STRIDE,
/// row r from base + row_base(r), zero where row_base(r) < 0 (no such row)
/// and in the padding to DP. VEC: every row starts 16 bytes aligned and
/// holds whole storage8_t, so the copy goes 16 bytes at a time.
template <int D, int DP, int STRIDE, int ROWS, bool VEC, typename RowBase>
__device__ __forceinline__ void stage_rows(storage_t *__restrict__ tile,
                                           const storage_t *__restrict__ base, RowBase row_base) {
  if (VEC) {
    for (int i = threadIdx.x; i < ROWS * DP / 8; i += blockDim.x) {
      const int r = i / (DP / 8), d = i % (DP / 8) * 8;
      const long long at = row_base(r);
      storage8_t v = {};
      if (at >= 0 && d < D) v = *reinterpret_cast<const storage8_t *>(base + at + d);
      *reinterpret_cast<storage8_t *>(tile + r * STRIDE + d) = v;
    }
  } else {
    for (int i = threadIdx.x; i < ROWS * DP; i += blockDim.x) {
      const int r = i / DP, d = i % DP;
      const long long at = row_base(r);
      tile[r * STRIDE + d] = at >= 0 && d < D ? base[at + d] : storage_t(0);
    }
  }
}

/// Attends one tile of a prefill chunk on tensor cores: query rows
/// [tile_row, tile_row + 64 / G) of the sequence whose rows start at q_begin,
/// every head of KV head `kvh`'s group, causally over the `context` keys
/// (the cache before the chunk, then the chunk). Row m of the 64-row MMA
/// tile is query row m / G, head m % G, so every K/V tile loaded into shared
/// memory serves the whole group. Each warp owns 16 rows: S = Q K^T and
/// P V on WMMA 16x16x16, the online softmax in f32 with two lanes per row,
/// and the output in registers (lane: row lane / 2, 8 columns of each 16).
/// Q_ALIGNED: query rows start 16 bytes aligned.
template <int D, int G, int KVH, int BS, bool BF16, bool Q_ALIGNED>
__device__ __forceinline__ void prefill_tile(const storage_t *__restrict__ query, int q_stride,
                                             const storage_t *__restrict__ layer_pool,
                                             const int *__restrict__ table,
                                             storage_t *__restrict__ out, int out_stride, int kvh,
                                             int q_begin, int q_len, int tile_row, int context,
                                             float scale_log2) {
  typedef typename mma_type<BF16>::type mma_t;
  constexpr int TILE_M = PREFILL_TILE_M, TILE_K = PREFILL_TILE_K, WARPS = TILE_M / 16;
  constexpr int ROWS = TILE_M / G;              // query rows per tile
  constexpr int DP = (D + 15) / 16 * 16;        // the head dim padded to the MMA's k
  constexpr int STRIDE = DP + 8;                // +16 bytes: rows start on different banks
  constexpr int TILE_ROWS = TILE_M > 2 * TILE_K ? TILE_M : 2 * TILE_K;
  __shared__ __align__(128) storage_t s_tiles[TILE_ROWS * STRIDE]; // Q, then K and V
  __shared__ __align__(128) storage_t s_p[WARPS][16 * TILE_K];
  __shared__ __align__(128) float s_scratch[WARPS][16 * TILE_K];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

  stage_rows<D, DP, STRIDE, TILE_M, D % 8 == 0 && Q_ALIGNED>(s_tiles, query, [&](int m) -> long long {
    const int r = tile_row + m / G;
    if (m >= ROWS * G || r >= q_len) return -1;
    return (long long)(q_begin + r) * q_stride + (kvh * G + m % G) * D;
  });
  __syncthreads();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, mma_t, wmma::row_major> q_frag[DP / 16];
  for (int kk = 0; kk < DP / 16; ++kk)
    wmma::load_matrix_sync(q_frag[kk],
                           reinterpret_cast<const mma_t *>(s_tiles + warp * 16 * STRIDE + kk * 16),
                           STRIDE);
  __syncthreads(); // the K/V tiles overwrite the staged Q

  const int my_row = lane >> 1, half = lane & 1, my_m = warp * 16 + my_row;
  const int my_r = tile_row + my_m / G;
  const bool my_valid = my_m < ROWS * G && my_r < q_len;
  // A query row sees the cache before the chunk and the chunk up to itself.
  const int my_visible = my_valid ? context - q_len + my_r + 1 : 0;
  const int tile_visible = context - q_len + min(q_len, tile_row + ROWS);
  float o[DP / 16][8];
  for (int n = 0; n < DP / 16; ++n)
    for (int e = 0; e < 8; ++e) o[n][e] = 0.f;
  float m_run = -INFINITY, l_run = 0.f;
  storage_t *s_k = s_tiles, *s_v = s_tiles + TILE_K * STRIDE;
  storage_t *p_tile = s_p[warp];
  float *scratch = s_scratch[warp];

  for (int k0 = 0; k0 < tile_visible; k0 += TILE_K) {
    auto key_base = [&](int j) -> long long {
      const int key = k0 + j;
      if (key >= tile_visible) return -1;
      return ((long long)table[key / BS] * 2 * KVH + kvh) * BS * D + (long long)(key % BS) * D;
    };
    stage_rows<D, DP, STRIDE, TILE_K, D % 8 == 0>(s_k, layer_pool, key_base);
    stage_rows<D, DP, STRIDE, TILE_K, D % 8 == 0>(s_v, layer_pool + (long long)KVH * BS * D, key_base);
    __syncthreads();

    // S = Q K^T: K's rows are the columns of K^T, so K is K^T column-major.
    for (int j = 0; j < TILE_K / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> s_frag;
      wmma::fill_fragment(s_frag, 0.f);
      for (int kk = 0; kk < DP / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, mma_t, wmma::col_major> k_frag;
        wmma::load_matrix_sync(k_frag, reinterpret_cast<const mma_t *>(s_k + j * 16 * STRIDE + kk * 16),
                               STRIDE);
        wmma::mma_sync(s_frag, q_frag[kk], k_frag, s_frag);
      }
      wmma::store_matrix_sync(scratch + j * 16, s_frag, TILE_K, wmma::mem_row_major);
    }
    __syncwarp();

    // The online softmax of this lane's half of its row, in base 2.
    float s[TILE_K / 2];
    float tile_max = -INFINITY;
    for (int c = 0; c < TILE_K / 2; ++c) {
      const int col = half * (TILE_K / 2) + c;
      s[c] = k0 + col < my_visible ? scratch[my_row * TILE_K + col] * scale_log2 : -INFINITY;
      tile_max = fmaxf(tile_max, s[c]);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    const float m_new = fmaxf(m_run, tile_max);
    // A row that has seen no key yet keeps zero sums (-inf - -inf is NaN).
    const float base = m_new == -INFINITY ? 0.f : m_new;
    const float correction = exp2f(m_run - base);
    float sum = 0.f;
    for (int c = 0; c < TILE_K / 2; ++c) {
      const storage_t p = from_f32<BF16>(exp2f(s[c] - base));
      p_tile[my_row * TILE_K + half * (TILE_K / 2) + c] = p;
      sum += to_f32<BF16>(p); // the weights P V uses, so the normalisation matches them
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l_run = l_run * correction + sum;
    m_run = m_new;
    for (int n = 0; n < DP / 16; ++n)
      for (int e = 0; e < 8; ++e) o[n][e] *= correction;
    __syncwarp();

    // O += P V, one 16-column chunk of V at a time through the scratch.
    wmma::fragment<wmma::matrix_a, 16, 16, 16, mma_t, wmma::row_major> p_frag[TILE_K / 16];
    for (int kk = 0; kk < TILE_K / 16; ++kk)
      wmma::load_matrix_sync(p_frag[kk], reinterpret_cast<const mma_t *>(p_tile + kk * 16), TILE_K);
    for (int n = 0; n < DP / 16; ++n) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> pv_frag;
      wmma::fill_fragment(pv_frag, 0.f);
      for (int kk = 0; kk < TILE_K / 16; ++kk) {
        wmma::fragment<wmma::matrix_b, 16, 16, 16, mma_t, wmma::row_major> v_frag;
        wmma::load_matrix_sync(v_frag, reinterpret_cast<const mma_t *>(s_v + kk * 16 * STRIDE + n * 16),
                               STRIDE);
        wmma::mma_sync(pv_frag, p_frag[kk], v_frag, pv_frag);
      }
      wmma::store_matrix_sync(scratch, pv_frag, TILE_K, wmma::mem_row_major);
      __syncwarp();
      for (int e = 0; e < 8; ++e) o[n][e] += scratch[my_row * TILE_K + half * 8 + e];
      __syncwarp();
    }
    __syncthreads(); // the next K/V tiles overwrite these
  }

  if (!my_valid) return;
  const float inv = l_run > 0.f ? 1.f / l_run : 0.f;
  storage_t *dst = out + (long long)(q_begin + my_r) * out_stride + (kvh * G + my_m % G) * D;
  for (int n = 0; n < DP / 16; ++n)
    for (int e = 0; e < 8; ++e) {
      const int d = n * 16 + half * 8 + e;
      if (d < D) dst[d] = from_f32<BF16>(o[n][e] * inv);
    }
}
)cuda";

/// The kernels of one attention config; `{0}` is its name prefix.
constexpr llvm::StringLiteral kConfigSource = R"cuda(
namespace {0}_config {{
constexpr int D = {1}, G = {2}, KVH = {3}, BS = {4}, SPLITS = {5};
constexpr bool BF16 = {6}, Q_ALIGNED = {8};
constexpr float SCALE = {7};
} // namespace {0}_config

/// Prefill chunks (sequences with more than one query row), a 64 / G-row
/// tile of one per block. Sequence s's tiles take the slots from its first
/// row on (a tile has at least one row, so they fit in `tokens` slots).
extern "C" __global__ void __launch_bounds__(128)
{0}_prefill(const storage_t *query, int q_stride, const storage_t *pool, storage_t *out,
            int out_stride, const int *block_tables, int table_width, const int *context_lens,
            const int *cu_seqlens, int num_seqs, int num_blocks, int layer) {{
  using namespace {0}_config;
  const int slot = blockIdx.x, kvh = blockIdx.y;
  const int seq = sequence_of(cu_seqlens, num_seqs, slot);
  const int q_begin = cu_seqlens[seq], q_len = cu_seqlens[seq + 1] - q_begin;
  const int tile_row = (slot - q_begin) * (PREFILL_TILE_M / G);
  if (q_len == 1 || tile_row >= q_len) return; // decode rows are the split kernels'
  const storage_t *layer_pool = pool + (long long)layer * num_blocks * 2 * KVH * BS * D;
  prefill_tile<D, G, KVH, BS, BF16, Q_ALIGNED>(query, q_stride, layer_pool,
                                    block_tables + (long long)seq * table_width, out, out_stride,
                                    kvh, q_begin, q_len, tile_row, context_lens[seq],
                                    SCALE * 1.4426950408889634f);
}

extern "C" __global__ void __launch_bounds__(128)
{0}_decode(const storage_t *query, int q_stride, const storage_t *pool, float *partials,
           const int *block_tables, int table_width, const int *context_lens,
           const int *cu_seqlens, int num_seqs, int num_blocks, int layer) {{
  using namespace {0}_config;
  const int seq = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z;
  const int row = cu_seqlens[seq];
  if (cu_seqlens[seq + 1] - row != 1) return; // a prefill chunk: the prefill kernel takes it
  const int context = context_lens[seq];
  // Whole KV blocks per split, so a split reads whole blocks.
  const int chunk = ((context + SPLITS - 1) / SPLITS + BS - 1) / BS * BS;
  const int k_begin = min(context, split * chunk), k_end = min(context, k_begin + chunk);
  const storage_t *layer_pool = pool + (long long)layer * num_blocks * 2 * KVH * BS * D;
  attend<D, G, KVH, BS, BF16>(query, q_stride, layer_pool, block_tables + (long long)seq * table_width,
                              row, kvh, k_begin, k_end, SCALE,
                              [&](int g, int d, float o, float m, float l) {{
    float *part = partials + (((long long)seq * KVH * G + kvh * G + g) * SPLITS + split) * (D + 2);
    part[d] = o;
    if (d == 0) {{
      part[D] = m;
      part[D + 1] = l;
    }
  });
}

extern "C" __global__ void __launch_bounds__(128)
{0}_combine(const float *partials, storage_t *out, int out_stride, const int *cu_seqlens,
            int num_seqs) {{
  using namespace {0}_config;
  const int seq = blockIdx.x, head = blockIdx.y;
  const int row = cu_seqlens[seq];
  if (cu_seqlens[seq + 1] - row != 1) return;
  const float *part = partials + ((long long)seq * KVH * G + head) * SPLITS * (D + 2);
  float m_all = -INFINITY;
  for (int s = 0; s < SPLITS; ++s) m_all = fmaxf(m_all, part[s * (D + 2) + D]);
  float l_all = 0.f;
  for (int s = 0; s < SPLITS; ++s) {{
    float m = part[s * (D + 2) + D];
    if (m != -INFINITY) l_all += part[s * (D + 2) + D + 1] * expf(m - m_all);
  }
  for (int d = threadIdx.x; d < D; d += blockDim.x) {{
    float o = 0.f;
    for (int s = 0; s < SPLITS; ++s) {{
      float m = part[s * (D + 2) + D];
      if (m != -INFINITY) o += part[s * (D + 2) + d] * expf(m - m_all);
    }
    out[(long long)row * out_stride + head * D + d] = from_f32<BF16>(l_all > 0.f ? o / l_all : 0.f);
  }
}
)cuda";

/// The row stride of a [rows, features] tensor with unit feature stride.
FailureOr<int64_t> rowStride(Operation *op, const TensorRef &ref, StringRef what) {
  auto stride = dyn_cast<IntegerAttr>(ref.strides.front());
  auto inner = dyn_cast<IntegerAttr>(ref.strides.back());
  if (ref.sizes.size() != 2 || !stride || !inner || inner.getInt() != 1)
    return op->emitOpError("has a ") << what << " that is not rows of unit feature stride", failure();
  return stride.getInt();
}

} // namespace

LogicalResult lowerPagedAttention(StepContext &step, llm::PagedAttentionOp op,
                                  ArrayRef<std::optional<TensorRef>> operands, const TensorRef &output,
                                  std::string &source) {
  // query, pool, block_tables, context_lens, cu_seqlens
  if (operands.size() < 5 || !operands[4])
    return op.emitOpError("is not ragged: run llm-ragged-batching first");
  const TensorRef &query = *operands[0], &pool = *operands[1];
  auto poolShape = cast<ShapedType>(op.getKvPool().getType()).getShape();
  int64_t kvHeads = poolShape[3], blockSize = poolShape[4], headDim = poolShape[5];
  int64_t heads = cast<ShapedType>(op.getType()).getDimSize(1);
  if (heads % kvHeads) return op.emitOpError("has query heads that are not a multiple of its KV heads");
  int64_t group = heads / kvHeads;
  constexpr int64_t kWarps = kAttentionThreads / 32;
  static_assert(kPrefillTileM == 16 * kWarps, "the prefill tile gives each warp 16 rows");
  if (group > kPrefillTileM)
    return op.emitOpError("has more than ") << kPrefillTileM << " query heads per KV head";
  int64_t decodeShared = (kWarps + 1) * group * headDim * 4 + 2 * kWarps * group * 4;
  int64_t paddedStride = llvm::alignTo(headDim, 16) + 8;
  int64_t prefillShared = std::max(kPrefillTileM, 2 * kPrefillTileK) * paddedStride * 2 +
                          kWarps * 16 * kPrefillTileK * (2 + 4);
  if (std::max(decodeShared, prefillShared) > kSharedLimit)
    return op.emitOpError("needs more than 48 KiB of shared memory per block (")
           << group << " query heads per KV head of dim " << headDim << ")";
  auto qStride = rowStride(op, query, "query");
  auto outStride = rowStride(op, output, "result");
  if (failed(qStride) || failed(outStride)) return failure();

  bool bf16 = step.storageType.isBF16();
  float scale = op.getScale().convertToFloat();
  // Whether every query row starts 16 bytes aligned (the pool's rows do).
  bool queryAligned = *qStride % 8 == 0 && query.offset % 16 == 0;
  std::string config = llvm::formatv("attention_d{0}_g{1}_kv{2}_bs{3}_{4}_s{5:x}{6}", headDim, group,
                                     kvHeads, blockSize, bf16 ? "bf16" : "f16",
                                     llvm::bit_cast<uint32_t>(scale), queryAligned ? "" : "_u");
  if (source.empty()) {
    source = kDevicePrelude.str();
    source += llvm::formatv("constexpr int PREFILL_TILE_M = {0}, PREFILL_TILE_K = {1};\n",
                            kPrefillTileM, kPrefillTileK)
                  .str();
    source += kCommonSource;
  }
  if (source.find(config + "_prefill(") == std::string::npos) {
    char scaleLiteral[32]; // exact: a hexadecimal float literal
    std::snprintf(scaleLiteral, sizeof(scaleLiteral), "%af", static_cast<double>(scale));
    source += llvm::formatv(kConfigSource.data(), config, headDim, group, kvHeads, blockSize, kSplits,
                            bf16 ? "true" : "false", scaleLiteral, queryAligned ? "true" : "false")
                  .str();
  }

  MLIRContext *context = op.getContext();
  auto dim = [&](int64_t value) { return planDim(context, value); };
  auto sym = [&](StringRef name) { return planDim(context, name); };
  const TensorRef &blockTables = *operands[2], &contextLens = *operands[3], &cuSeqlens = *operands[4];
  int64_t layer = op.getLayer();
  std::array<int64_t, 3> block{kAttentionThreads, 1, 1};
  step.plan.launch("attention", config + "_prefill", {query.sizes[0], dim(kvHeads), dim(1)}, block,
                   {KernelArg::pointer(query), KernelArg::i32(dim(*qStride)), KernelArg::pointer(pool),
                    KernelArg::pointer(output), KernelArg::i32(dim(*outStride)),
                    KernelArg::pointer(blockTables), KernelArg::i32(sym(kBlockTableWidthSymbol)),
                    KernelArg::pointer(contextLens), KernelArg::pointer(cuSeqlens),
                    KernelArg::i32(sym(kSeqsSymbol)), KernelArg::i32(sym(kNumBlocksSymbol)),
                    KernelArg::i32(dim(layer))});

  int64_t partialsOffset = step.scratch(step.maxSeqs * heads * kSplits * (headDim + 2) * 4);
  TensorRef partials = contiguousTensor(context, "workspace", partialsOffset, Float32Type::get(context),
                                        {sym(kSeqsSymbol), dim(heads * kSplits * (headDim + 2))});
  step.plan.launch("attention", config + "_decode", {sym(kSeqsSymbol), dim(kvHeads), dim(kSplits)}, block,
                   {KernelArg::pointer(query), KernelArg::i32(dim(*qStride)), KernelArg::pointer(pool),
                    KernelArg::pointer(partials), KernelArg::pointer(blockTables),
                    KernelArg::i32(sym(kBlockTableWidthSymbol)), KernelArg::pointer(contextLens),
                    KernelArg::pointer(cuSeqlens), KernelArg::i32(sym(kSeqsSymbol)),
                    KernelArg::i32(sym(kNumBlocksSymbol)), KernelArg::i32(dim(layer))});
  step.plan.launch("attention", config + "_combine", {sym(kSeqsSymbol), dim(heads), dim(1)}, block,
                   {KernelArg::pointer(partials), KernelArg::pointer(output),
                    KernelArg::i32(dim(*outStride)), KernelArg::pointer(cuSeqlens),
                    KernelArg::i32(sym(kSeqsSymbol))});
  return success();
}

} // namespace llmc::cuda
