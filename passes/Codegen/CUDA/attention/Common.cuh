// Common.cuh - what every attention config shares: the sequence lookup, the
// CUDA-core attend loop of decode and the tensor-core tile of prefill.
// Embedded into llm-lower-to-cuda (CudaAttention.cpp) at build time.

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

/// The splits of each decode sequence's context this step: enough (sequence,
/// KV head, split) blocks for DECODE_BLOCKS, so that a small batch still fills
/// the GPU, and no more than SPLITS, so that a large one does not pay for
/// partial sums it need not make. The decode and combine kernels agree on it.
template <int KVH, int SPLITS> __device__ __forceinline__ int decode_splits(int num_seqs) {
  const int pairs = num_seqs * KVH;
  return max(1, min(SPLITS, (DECODE_BLOCKS + pairs - 1) / pairs));
}

/// Keys per split of a `context`-key sequence cut in `splits`: whole KV
/// blocks, so that a split reads whole blocks. Splits past the context have
/// no keys and make no partial sum.
template <int BS> __device__ __forceinline__ int split_chunk(int context, int splits) {
  return ((context + splits - 1) / splits + BS - 1) / BS * BS;
}

/// The first key that the query at `position` sees: with a sliding window
/// of `window` keys (0: none), the keys above position - window, as
/// llm.paged_attention defines it. Keys before it may sit in blocks the
/// engine has given back (their table entries are 0): never read them.
__device__ __forceinline__ int first_visible_key(int position, int window) {
  return window > 0 ? max(0, position - window + 1) : 0;
}

/// Where a decode row's splits start: the block of its first visible key,
/// so that the splits still read whole blocks. The decode and combine
/// kernels agree on it.
template <int BS> __device__ __forceinline__ int decode_keys_start(int context, int window) {
  return first_visible_key(context - 1, window) / BS * BS;
}

/// A scaled score through Gemma-2's softcap c: c * tanh(s / c); s as it is
/// when c is 0.
__device__ __forceinline__ float softcapped(float score, float softcap) {
  return softcap > 0.f ? softcap * tanhf(score / softcap) : score;
}

/// Attends the G query heads of KV head `kvh` in query row `row` to keys
/// [k_begin, k_end) of the sequence whose block table is `table`, then calls
/// emit(g, d, unnormalised output, running max, running sum) once per
/// (head, feature) of the block's merged result. Scores are scaled by
/// `scale`, then softcapped (0: not), then biased by `slopes` (ALiBi's slope
/// per query head of the layer, nullptr: none) times the key's distance from
/// the query's `position`. CUDA cores: for one query row a tensor-core tile
/// would be 15/16 padding.
template <int D, int G, int KVH, int BS, bool BF16, typename Emit>
__device__ __forceinline__ void attend(const storage_t *__restrict__ query, int q_stride,
                                       const storage_t *__restrict__ layer_pool,
                                       const int *__restrict__ table, int row, int kvh,
                                       int k_begin, int k_end, float scale, float softcap,
                                       const float *slopes, int position, Emit emit) {
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
  // Each warp takes UNROLL consecutive keys at a time and loads all of them
  // before computing with the first, so that their loads are in flight
  // together rather than one round trip per key.
  constexpr int UNROLL = 4;
  for (int key0 = k_begin + warp * UNROLL; key0 < k_end; key0 += WARPS * UNROLL) {
    float kf[UNROLL][PER_LANE], vf[UNROLL][PER_LANE];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int key = min(key0 + u, k_end - 1); // past the range: loaded, not used
      const long long block = table[key / BS];
      const storage_t *k = layer_pool + ((block * 2 * KVH + kvh) * BS + key % BS) * D;
      const storage_t *v = k + (long long)KVH * BS * D;
#pragma unroll
      for (int j = 0; j < PER_LANE; ++j) {
        int d = lane + 32 * j;
        kf[u][j] = d < D ? to_f32<BF16>(k[d]) : 0.f;
        vf[u][j] = d < D ? to_f32<BF16>(v[d]) : 0.f;
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      if (key0 + u >= k_end) break; // the same for every lane of the warp
      for (int g = 0; g < G; ++g) {
        float dot = 0.f;
        for (int j = 0; j < PER_LANE; ++j) {
          int d = lane + 32 * j;
          if (d < D) dot += s_q[g][d] * kf[u][j];
        }
        dot = softcapped(warp_sum(dot), softcap);
        if (slopes) dot = fmaf(slopes[kvh * G + g], float(key0 + u - position), dot);
        float m_new = fmaxf(m[g], dot);
        float correction = expf(m[g] - m_new), p = expf(dot - m_new);
        l[g] = l[g] * correction + p;
        for (int j = 0; j < PER_LANE; ++j) acc[g][j] = acc[g][j] * correction + p * vf[u][j];
        m[g] = m_new;
      }
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

/// Stages a prefill tile's query: row m of the 64-row tile is query row
/// tile_row + m / G of the sequence whose rows start at q_begin, head m % G of
/// KV head `kvh`'s group; zero past the chunk and in the tile's spare rows.
template <int D, int G, int DP, int STRIDE, bool Q_ALIGNED>
__device__ __forceinline__ void stage_q_tile(storage_t *__restrict__ s_q,
                                             const storage_t *__restrict__ query, int q_stride,
                                             int kvh, int q_begin, int q_len, int tile_row) {
  constexpr int TILE_M = PREFILL_TILE_M, ROWS = TILE_M / G;
  stage_rows<D, DP, STRIDE, TILE_M, D % 8 == 0 && Q_ALIGNED>(s_q, query, [&](int m) -> long long {
    const int r = tile_row + m / G;
    if (m >= ROWS * G || r >= q_len) return -1;
    return (long long)(q_begin + r) * q_stride + (kvh * G + m % G) * D;
  });
}

/// Stages keys [k0, k0 + TILE_K) of KV head `kvh` (through the block table)
/// into the shared K and V tiles, zero from `visible` on.
template <int D, int DP, int STRIDE, int TILE_K, int KVH, int BS>
__device__ __forceinline__ void stage_kv_tile(storage_t *__restrict__ s_k, storage_t *__restrict__ s_v,
                                              const storage_t *__restrict__ layer_pool,
                                              const int *__restrict__ table, int kvh, int k0,
                                              int visible) {
  auto key_base = [&](int j) -> long long {
    const int key = k0 + j;
    if (key >= visible) return -1;
    return ((long long)table[key / BS] * 2 * KVH + kvh) * BS * D + (long long)(key % BS) * D;
  };
  stage_rows<D, DP, STRIDE, TILE_K, D % 8 == 0>(s_k, layer_pool, key_base);
  stage_rows<D, DP, STRIDE, TILE_K, D % 8 == 0>(s_v, layer_pool + (long long)KVH * BS * D, key_base);
}

constexpr float LOG2E = 1.4426950408889634f;

/// A prefill tile's score of a key for a query row, in base 2 for exp2f:
/// scaled, softcapped, biased by `slope_log2` (the row's ALiBi slope * LOG2E,
/// 0: none) times the key's distance from the row's position, and -inf
/// outside the keys [first, visible) the row sees. `scale_log2` is scale *
/// LOG2E.
__device__ __forceinline__ float tile_score(float dot, int key, int first, int visible,
                                            float scale, float scale_log2, float softcap,
                                            float slope_log2) {
  if (key < first || key >= visible) return -INFINITY;
  const float score = softcap > 0.f ? softcapped(dot * scale, softcap) * LOG2E : dot * scale_log2;
  return fmaf(slope_log2, float(key - visible + 1), score);
}

/// The ALiBi slope of query head `head` in base 2 (0 without `slopes`).
__device__ __forceinline__ float slope_log2_of(const float *slopes, int head) {
  return slopes ? slopes[head] * LOG2E : 0.f;
}

/// 1 / a prefill row's softmax denominator: its running sum `l` (base 2,
/// relative to its running max `m`) plus, with `sinks`, the share of its
/// head's attention sink; 0 for a row that saw no key.
__device__ __forceinline__ float inverse_softmax_sum(float l, float m, const float *sinks,
                                                     int head) {
  if (sinks) l += exp2f(sinks[head] * LOG2E - m);
  return l > 0.f ? 1.f / l : 0.f;
}

/// Two storage elements as one 32-bit MMA register, `lo` in the low half.
__device__ __forceinline__ unsigned pack2(storage_t lo, storage_t hi) {
  return (unsigned)lo | ((unsigned)hi << 16);
}

/// The 32-bit word at `p` (two consecutive storage elements, 4-byte aligned).
__device__ __forceinline__ unsigned word_at(const storage_t *p) {
  return *reinterpret_cast<const unsigned *>(p);
}

/// prefill_tile's work on mma.sync (FlashAttention-2's layout), for head dims
/// up to 128: the tile's 64 (query row, head) pairs, 16 per warp, over K/V
/// tiles of TILE_K keys (the config's MMA_TILE_K). S = Q K^T and O += P V run on m16n8k16 tensor-core
/// MMAs with S, P and O in registers: the S fragment of two 8-key column
/// tiles is the P operand of a 16-key step as it stands. A lane holds rows
/// g = lane / 4 and g + 8 of its warp's 16, columns 2t, 2t + 1 of every
/// 8-column tile (t = lane % 4); row maxima and sums reduce over the 4 lanes
/// of a row. Q, K and V are staged in shared memory; V's operand is read
/// across rows, two 16-bit loads a register. A row sees the keys of its
/// `window` (0: all before it); scores are softcapped by `softcap` (0: not).
/// `sinks` (nullptr: none) holds the attention sink of each of the layer's
/// query heads, `slopes` (nullptr: none) its ALiBi slope.
template <int D, int G, int KVH, int BS, bool BF16, bool Q_ALIGNED, int TILE_K>
__device__ __forceinline__ void prefill_tile_mma(const storage_t *__restrict__ query, int q_stride,
                                                 const storage_t *__restrict__ layer_pool,
                                                 const int *__restrict__ table,
                                                 storage_t *__restrict__ out, int out_stride,
                                                 int kvh, int q_begin, int q_len, int tile_row,
                                                 int context, float scale, int window,
                                                 float softcap, const float *sinks,
                                                 const float *slopes) {
  constexpr int TILE_M = PREFILL_TILE_M;
  constexpr int ROWS = TILE_M / G;                // query rows per tile
  constexpr int DP = (D + 15) / 16 * 16;          // the head dim padded to the MMA's k
  constexpr int STRIDE = DP + 8;                  // +16 bytes: rows start on different banks
  __shared__ __align__(16) storage_t s_q[TILE_M * STRIDE];
  __shared__ __align__(16) storage_t s_k[TILE_K * STRIDE];
  __shared__ __align__(16) storage_t s_v[TILE_K * STRIDE];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int g = lane >> 2, t = lane & 3;
  const float scale_log2 = scale * LOG2E;

  stage_q_tile<D, G, DP, STRIDE, Q_ALIGNED>(s_q, query, q_stride, kvh, q_begin, q_len, tile_row);

  // This lane's two rows of the tile: their query rows and the keys
  // [first, visible) each sees.
  int first[2], visible[2];
  bool valid[2];
  float slope_log2[2];
  for (int h = 0; h < 2; ++h) {
    const int m = warp * 16 + g + 8 * h, r = tile_row + m / G;
    valid[h] = m < ROWS * G && r < q_len;
    // A query row sees the cache before the chunk and the chunk up to itself.
    visible[h] = valid[h] ? context - q_len + r + 1 : 0;
    first[h] = first_visible_key(visible[h] - 1, window);
    slope_log2[h] = slope_log2_of(slopes, kvh * G + m % G);
  }
  const int tile_visible = context - q_len + min(q_len, tile_row + ROWS);
  // The tile's first row sees the earliest key any of its rows sees.
  const int tile_first = first_visible_key(context - q_len + tile_row, window);
  float o[DP / 8][4];
  for (int n = 0; n < DP / 8; ++n)
    for (int e = 0; e < 4; ++e) o[n][e] = 0.f;
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};
  const storage_t *q_rows = s_q + (warp * 16 + g) * STRIDE;

  for (int k0 = tile_first; k0 < tile_visible; k0 += TILE_K) {
    stage_kv_tile<D, DP, STRIDE, TILE_K, KVH, BS>(s_k, s_v, layer_pool, table, kvh, k0,
                                                  tile_visible);
    __syncthreads();

    // S = Q K^T: B[k][n] = K[key n][feature k], so each B register is two
    // consecutive features of one key row.
    float s[TILE_K / 8][4];
    for (int n = 0; n < TILE_K / 8; ++n)
      for (int e = 0; e < 4; ++e) s[n][e] = 0.f;
    for (int kk = 0; kk < DP / 16; ++kk) {
      const int col = kk * 16 + 2 * t;
      const unsigned a[4] = {word_at(q_rows + col), word_at(q_rows + 8 * STRIDE + col),
                             word_at(q_rows + col + 8), word_at(q_rows + 8 * STRIDE + col + 8)};
      for (int n = 0; n < TILE_K / 8; ++n) {
        const storage_t *k_row = s_k + (n * 8 + g) * STRIDE + col;
        const unsigned b[2] = {word_at(k_row), word_at(k_row + 8)};
        mma_16816<BF16>(s[n], a, b);
      }
    }

    // The online softmax of this lane's two rows, in base 2.
    float correction[2];
    for (int h = 0; h < 2; ++h) {
      float tile_max = -INFINITY;
      for (int n = 0; n < TILE_K / 8; ++n)
        for (int i = 0; i < 2; ++i) {
          const int key = k0 + n * 8 + 2 * t + i;
          float &v = s[n][2 * h + i];
          v = tile_score(v, key, first[h], visible[h], scale, scale_log2, softcap, slope_log2[h]);
          tile_max = fmaxf(tile_max, v);
        }
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      const float m_new = fmaxf(m_run[h], tile_max);
      // A row that has seen no key yet keeps zero sums (-inf - -inf is NaN).
      const float base = m_new == -INFINITY ? 0.f : m_new;
      correction[h] = exp2f(m_run[h] - base);
      float sum = 0.f;
      for (int n = 0; n < TILE_K / 8; ++n)
        for (int i = 0; i < 2; ++i) {
          // The weights P V uses, rounded to storage, so the normalisation matches them.
          const float p = to_f32<BF16>(from_f32<BF16>(exp2f(s[n][2 * h + i] - base)));
          s[n][2 * h + i] = p;
          sum += p;
        }
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      l_run[h] = l_run[h] * correction[h] + sum;
      m_run[h] = m_new;
    }
    for (int n = 0; n < DP / 8; ++n)
      for (int e = 0; e < 4; ++e) o[n][e] *= correction[e / 2];

    // O += P V: the S fragments of key tiles 2kk and 2kk + 1 are P's A
    // operand for keys [16 kk, 16 kk + 16); B[k][n] = V[key k][feature n].
    for (int kk = 0; kk < TILE_K / 16; ++kk) {
      const unsigned a[4] = {
          pack2(from_f32<BF16>(s[2 * kk][0]), from_f32<BF16>(s[2 * kk][1])),
          pack2(from_f32<BF16>(s[2 * kk][2]), from_f32<BF16>(s[2 * kk][3])),
          pack2(from_f32<BF16>(s[2 * kk + 1][0]), from_f32<BF16>(s[2 * kk + 1][1])),
          pack2(from_f32<BF16>(s[2 * kk + 1][2]), from_f32<BF16>(s[2 * kk + 1][3]))};
      const storage_t *v_rows = s_v + (kk * 16 + 2 * t) * STRIDE + g;
      for (int n = 0; n < DP / 8; ++n) {
        const storage_t *v = v_rows + n * 8;
        const unsigned b[2] = {pack2(v[0], v[STRIDE]), pack2(v[8 * STRIDE], v[9 * STRIDE])};
        mma_16816<BF16>(o[n], a, b);
      }
    }
    __syncthreads(); // the next K/V tiles overwrite these
  }

  for (int h = 0; h < 2; ++h) {
    if (!valid[h]) continue;
    const int m = warp * 16 + g + 8 * h;
    const float inv = inverse_softmax_sum(l_run[h], m_run[h], sinks, kvh * G + m % G);
    storage_t *dst = out + (long long)(q_begin + tile_row + m / G) * out_stride + (kvh * G + m % G) * D;
    for (int n = 0; n < DP / 8; ++n)
      for (int i = 0; i < 2; ++i) {
        const int d = n * 8 + 2 * t + i;
        if (d < D) dst[d] = from_f32<BF16>(o[n][2 * h + i] * inv);
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
/// Q_ALIGNED: query rows start 16 bytes aligned. `window`, `softcap`,
/// `sinks` and `slopes` as prefill_tile_mma's.
template <int D, int G, int KVH, int BS, bool BF16, bool Q_ALIGNED>
__device__ __forceinline__ void prefill_tile(const storage_t *__restrict__ query, int q_stride,
                                             const storage_t *__restrict__ layer_pool,
                                             const int *__restrict__ table,
                                             storage_t *__restrict__ out, int out_stride, int kvh,
                                             int q_begin, int q_len, int tile_row, int context,
                                             float scale, int window, float softcap,
                                             const float *sinks, const float *slopes) {
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

  stage_q_tile<D, G, DP, STRIDE, Q_ALIGNED>(s_tiles, query, q_stride, kvh, q_begin, q_len,
                                            tile_row);
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
  // A query row sees the cache before the chunk and the chunk up to itself,
  // from its window's first key.
  const int my_visible = my_valid ? context - q_len + my_r + 1 : 0;
  const int my_first = first_visible_key(my_visible - 1, window);
  const float my_slope_log2 = slope_log2_of(slopes, kvh * G + my_m % G);
  const int tile_visible = context - q_len + min(q_len, tile_row + ROWS);
  const int tile_first = first_visible_key(context - q_len + tile_row, window);
  float o[DP / 16][8];
  for (int n = 0; n < DP / 16; ++n)
    for (int e = 0; e < 8; ++e) o[n][e] = 0.f;
  float m_run = -INFINITY, l_run = 0.f;
  storage_t *s_k = s_tiles, *s_v = s_tiles + TILE_K * STRIDE;
  storage_t *p_tile = s_p[warp];
  float *scratch = s_scratch[warp];
  const float scale_log2 = scale * LOG2E;

  for (int k0 = tile_first; k0 < tile_visible; k0 += TILE_K) {
    stage_kv_tile<D, DP, STRIDE, TILE_K, KVH, BS>(s_k, s_v, layer_pool, table, kvh, k0,
                                                  tile_visible);
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
      s[c] = tile_score(scratch[my_row * TILE_K + col], k0 + col, my_first, my_visible, scale,
                        scale_log2, softcap, my_slope_log2);
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
  const float inv = inverse_softmax_sum(l_run, m_run, sinks, kvh * G + my_m % G);
  storage_t *dst = out + (long long)(q_begin + my_r) * out_stride + (kvh * G + my_m % G) * D;
  for (int n = 0; n < DP / 16; ++n)
    for (int e = 0; e < 8; ++e) {
      const int d = n * 16 + half * 8 + e;
      if (d < D) dst[d] = from_f32<BF16>(o[n][e] * inv);
    }
}
