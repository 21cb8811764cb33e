// Moe.cuh - a mixture of experts (llm.moe) in five launches over the step's
// rows, whose grids depend only on the step's token count, as a CUDA graph
// needs:
//
//   llmc_moe_route    a thread per row: the scores of its router logits
//                     (softmax or sigmoid), its top_k experts (equal
//                     scores: the lower expert first; within the best
//                     groups when grouped) and their weights, as the CPU's
//                     route kernel;
//   llmc_moe_plan     one block: each expert's picks (pick p = row p / top_k,
//                     slot p % top_k) in a run of positions padded to whole
//                     tiles of MOE_TILE, the expert of every tile (-1 past
//                     the last), and each pick's position;
//   llmc_moe_experts  a block per (tile, MOE_COLUMNS intermediate features):
//                     h[q] = w * act(gate_e . x, up_e . x) for the tile's
//                     picks q, stored in the storage type;
//   llmc_moe_down     a block per (tile, MOE_COLUMNS hidden features):
//                     y[q] = down_e . h[q] (+ w * down bias), f32;
//   llmc_moe_sum      a block per row: the row's y added slot by slot to
//                     zeros.
//
// A tile's products run on the tensor cores through the decode GEMV's core
// (Gemv.cuh, mma_weight_rows): mma.sync m16n8k16 with the expert's 16 weight
// rows as A and the tile's picks as the 8 columns of B, each lane loading 16
// contiguous bytes of a weight row and of a pick's row, so each weight row
// read serves the MOE_TILE picks of a tile. The block's warps split k and add
// their sums through shared memory in warp order. A pick's sums involve only its own
// row: where the plan puts it (its atomics order an expert's picks as they
// come) changes no bit, and a sequence's result does not depend on the batch.
//
// There are at most ceil(picks / MOE_TILE) + experts tiles (every expert's
// run ends in at most one partial tile): the plan's tile dimension
// [rows, top_k, MOE_TILE, experts]. Hidden and intermediate sizes are
// multiples of 8 and every row 16-byte aligned (CudaMoe.cpp checks).

/// This lane's pick row of each group of the block's tile (the g-th of the
/// group): `row_of(q, pick)` for the pick at position q, null for a padding
/// slot.
template <typename RowOf>
__device__ __forceinline__ void moe_lane_rows(const int *order,
                                              const storage_t *(&rows)[MOE_GROUPS],
                                              RowOf row_of) {
  const int g = (threadIdx.x & 31) >> 2;
#pragma unroll
  for (int j = 0; j < MOE_GROUPS; ++j) {
    const int q = blockIdx.x * MOE_TILE + 8 * j + g, pick = order[q];
    rows[j] = pick >= 0 ? row_of(q, pick) : nullptr;
  }
}

/// Calls `finish(q, pick, c, r, col)` for each output of the block's tile,
/// spread over its threads: (r, c) its place in the tile's sums, q its
/// position, col its column, skipping padding slots and columns past n.
template <typename Finish>
__device__ __forceinline__ void moe_for_each_output(const int *order, int n, Finish finish) {
  const int n0 = blockIdx.y * MOE_COLUMNS;
  for (int i = threadIdx.x; i < MOE_COLUMNS * MOE_TILE; i += blockDim.x) {
    const int r = i / MOE_COLUMNS, c = i % MOE_COLUMNS, col = n0 + c;
    const int q = blockIdx.x * MOE_TILE + r, pick = order[q];
    if (pick >= 0 && col < n) finish(q, pick, c, r, col);
  }
}

/// The index in [begin, end) after (prev_key, prev) in the order (key
/// descending, index ascending), -1 when none is (past NaN keys); its key in
/// `best_key`. Each slot of a top k is the pick after the previous slot's.
template <typename Key>
__device__ __forceinline__ int moe_pick_next(Key key, int begin, int end, float prev_key,
                                             int prev, float &best_key) {
  int best = -1;
  best_key = -INFINITY;
  for (int i = begin; i < end; ++i) {
    const float value = key(i);
    const bool after = value < prev_key || (value == prev_key && i > prev);
    if (after && (best < 0 || value > best_key)) best_key = value, best = i;
  }
  return best;
}

extern "C" __global__ void __launch_bounds__(MOE_THREADS)
llmc_moe_route(const float *logits, int logits_stride, int rows, int experts, int top_k,
               int normalize, int sigmoid_scores, const float *selection_bias, int groups,
               int kept_groups, int exclude_hidden_groups, int sparse_mixer,
               float sparse_mixer_threshold, float epsilon, float normalize_min, float routed_scale,
               int *chosen, float *weights) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  const float *r = logits + (long long)row * logits_stride;
  float max_logit = -INFINITY, denominator = 0.f;
  if (!sigmoid_scores) {
    for (int e = 0; e < experts; ++e) max_logit = fmaxf(max_logit, r[e]);
    for (int e = 0; e < experts; ++e) denominator += expf(r[e] - max_logit);
  }
  auto score = [&](int e) {
    return sigmoid_scores ? 1.f / (1.f + expf(-r[e])) : expf(r[e] - max_logit) / denominator;
  };
  auto choice = [&](int e) { return selection_bias ? score(e) + selection_bias[e] : score(e); };
  // Softmax routing alone ranks the experts by their logits (the softmax is
  // monotonic); otherwise by their choices, within the best groups: a
  // group scores its two best choices, the others' experts choose 0 (or
  // -inf: never chosen).
  const bool by_logits = !sigmoid_scores && !selection_bias && groups == 0;
  unsigned long long kept = ~0ull;
  const int group_size = groups ? experts / groups : experts;
  if (groups) {
    float group_scores[MOE_MAX_GROUPS];
    for (int g = 0; g < groups; ++g) {
      float first, second;
      const int begin = g * group_size, end = begin + group_size;
      const int best = moe_pick_next(choice, begin, end, INFINITY, -1, first);
      moe_pick_next(choice, begin, end, first, best, second);
      group_scores[g] = first + second;
    }
    kept = 0;
    float prev_score = INFINITY, group_score;
    int prev_group = -1;
    for (int slot = 0; slot < kept_groups; ++slot) {
      prev_group = moe_pick_next([&](int g) { return group_scores[g]; }, 0, groups, prev_score,
                                 prev_group, group_score);
      if (prev_group >= 0) kept |= 1ull << prev_group;
      prev_score = group_score;
    }
  }
  auto key = [&](int e) {
    if (by_logits) return r[e];
    return (kept >> (e / group_size)) & 1 ? choice(e) : exclude_hidden_groups ? -INFINITY : 0.f;
  };
  // PhiMoE's sparsemixer: a slot's weight is the softmax at its expert (the
  // largest logit it sees, best_key: its term is 1) over the experts it
  // sees, those near enough to it and, in the second slot, not the first's.
  auto sparse_mixer_weight = [&](float best_key, int excluded) {
    float sum = 0.f;
    for (int e = 0; e < experts; ++e) {
      const float gap = (best_key - r[e]) / fmaxf(fabsf(r[e]), best_key);
      const bool hidden = e == excluded || gap > sparse_mixer_threshold;
      if (!hidden) sum += expf(r[e] - best_key);
    }
    return 1.f / sum;
  };
  float prev_key = INFINITY, total = 0.f;
  int prev_expert = -1, first_expert = -1;
  for (int slot = 0; slot < top_k; ++slot) {
    float best_key;
    const int best = moe_pick_next(key, 0, experts, prev_key, prev_expert, best_key);
    if (slot == 0) first_expert = best;
    const float weight = best < 0 ? 0.f
                         : sparse_mixer ? sparse_mixer_weight(best_key, slot ? first_expert : -1)
                                        : score(best);
    chosen[row * top_k + slot] = best; // -1 only past NaN logits: the plan skips it
    weights[row * top_k + slot] = weight;
    total += weight;
    prev_key = best_key, prev_expert = best;
  }
  total += epsilon;
  if (normalize_min > 0.f) total = fmaxf(total, normalize_min);
  for (int slot = 0; slot < top_k; ++slot) {
    float &weight = weights[row * top_k + slot];
    if (normalize) weight /= total;
    weight *= routed_scale;
  }
}

extern "C" __global__ void __launch_bounds__(MOE_PLAN_THREADS)
llmc_moe_plan(const int *chosen, int picks, int experts, int max_tiles, int *order, int *position,
              int *tile_expert) {
  __shared__ int s_count[MOE_MAX_EXPERTS], s_start[MOE_MAX_EXPERTS + 1];
  for (int e = threadIdx.x; e < experts; e += blockDim.x) s_count[e] = 0;
  for (int q = threadIdx.x; q < max_tiles * MOE_TILE; q += blockDim.x) order[q] = -1;
  __syncthreads();
  for (int p = threadIdx.x; p < picks; p += blockDim.x) {
    const int e = chosen[p];
    if (e >= 0 && e < experts) atomicAdd(&s_count[e], 1);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int start = 0;
    for (int e = 0; e < experts; ++e) {
      s_start[e] = start;
      start += (s_count[e] + MOE_TILE - 1) / MOE_TILE * MOE_TILE;
      s_count[e] = s_start[e]; // from here on: the expert's next free position
    }
    s_start[experts] = start;
  }
  __syncthreads();
  for (int tile = threadIdx.x; tile < max_tiles; tile += blockDim.x) {
    const int q = tile * MOE_TILE;
    int e = -1; // past the last expert's run
    if (q < s_start[experts]) {
      e = 0;
      while (s_start[e + 1] <= q) ++e;
    }
    tile_expert[tile] = e;
  }
  for (int p = threadIdx.x; p < picks; p += blockDim.x) {
    const int e = chosen[p];
    int q = -1;
    if (e >= 0 && e < experts) {
      q = atomicAdd(&s_count[e], 1);
      order[q] = p;
    }
    position[p] = q;
  }
}

extern "C" __global__ void __launch_bounds__(MOE_THREADS)
llmc_moe_experts(const storage_t *x, int x_stride, const storage_t *gate_w, const storage_t *up_w,
                 const storage_t *gate_b, const storage_t *up_b, const int *order,
                 const int *tile_expert, const float *weights, int top_k, int hidden, int inter,
                 int clamped, float limit, float alpha, storage_t *h) {
  __shared__ float s_sums[2][MOE_WARPS][MOE_COLUMNS][MOE_TILE];
  const int e = tile_expert[blockIdx.x];
  if (e < 0) return;
  const storage_t *rows[MOE_GROUPS];
  moe_lane_rows(order, rows,
                [&](int, int pick) { return x + (long long)(pick / top_k) * x_stride; });
  const long long expert = (long long)e * inter * hidden;
  const storage_t *const w[2] = {gate_w + expert, up_w + expert};
  mma_weight_rows<STORAGE_BF16, MOE_WARPS, MOE_GROUPS, 2, 4>(w, hidden, inter, hidden,
                                                            blockIdx.y * MOE_COLUMNS, rows, s_sums);
  moe_for_each_output(order, inter, [&](int q, int pick, int c, int r, int col) {
    float gate = warp_order_sum<MOE_WARPS, MOE_TILE>(s_sums[0], c, r);
    float up = warp_order_sum<MOE_WARPS, MOE_TILE>(s_sums[1], c, r);
    if (gate_b) gate += to_f32<STORAGE_BF16>(gate_b[(long long)e * inter + col]);
    if (up_b) up += to_f32<STORAGE_BF16>(up_b[(long long)e * inter + col]);
    float act;
    if (clamped) { // gpt-oss: min(g, L) sigmoid(alpha min(g, L)) (clamp(u, -L, L) + 1)
      gate = fminf(gate, limit);
      up = fminf(fmaxf(up, -limit), limit);
      act = gate / (1.f + expf(-alpha * gate)) * (up + 1.f);
    } else {
      act = gate / (1.f + expf(-gate)) * up;
    }
    h[(long long)q * inter + col] = from_f32<STORAGE_BF16>(weights[pick] * act);
  });
}

extern "C" __global__ void __launch_bounds__(MOE_THREADS)
llmc_moe_down(const storage_t *h, const storage_t *down_w, const storage_t *down_b,
              const int *order, const int *tile_expert, const float *weights, int inter,
              int hidden, float *products) {
  __shared__ float s_sums[1][MOE_WARPS][MOE_COLUMNS][MOE_TILE];
  const int e = tile_expert[blockIdx.x];
  if (e < 0) return;
  const storage_t *rows[MOE_GROUPS];
  moe_lane_rows(order, rows, [&](int q, int) { return h + (long long)q * inter; });
  const storage_t *const w[1] = {down_w + (long long)e * hidden * inter};
  mma_weight_rows<STORAGE_BF16, MOE_WARPS, MOE_GROUPS, 1, 4>(w, inter, hidden, inter,
                                                            blockIdx.y * MOE_COLUMNS, rows, s_sums);
  moe_for_each_output(order, hidden, [&](int q, int pick, int c, int r, int col) {
    float value = warp_order_sum<MOE_WARPS, MOE_TILE>(s_sums[0], c, r);
    // h carries the routing weight; the bias takes it here.
    if (down_b) value += weights[pick] * to_f32<STORAGE_BF16>(down_b[(long long)e * hidden + col]);
    products[(long long)q * hidden + col] = value;
  });
}

extern "C" __global__ void __launch_bounds__(MOE_THREADS)
llmc_moe_sum(const float *products, const int *position, int top_k, int hidden, storage_t *out,
             int out_stride) {
  const int row = blockIdx.x;
  for (int col = threadIdx.x; col < hidden; col += blockDim.x) {
    float sum = 0.f;
    for (int slot = 0; slot < top_k; ++slot) {
      const int q = position[row * top_k + slot];
      if (q >= 0) sum += products[(long long)q * hidden + col];
    }
    out[(long long)row * out_stride + col] = from_f32<STORAGE_BF16>(sum);
  }
}
