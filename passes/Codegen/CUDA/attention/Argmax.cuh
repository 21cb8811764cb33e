// Argmax.cuh - each logits row's greedy token on the GPU, so that a step whose
// sequences all decode greedily returns [seqs] token ids, not [seqs, vocab]
// f32 logits (8 MB at 64 sequences of a 32k vocabulary). Compiled into the
// NVRTC module beside the attention kernels; the runtime launches it after
// the step (CudaExecutor::stepGreedy), one block a row. The answer is the
// host's argmax (runtime/core/Argmax.h): the lowest index of the largest
// value, where a NaN is never the largest, unless the row starts with one,
// which then is the answer.

/// Takes (value, index) into the best so far (an index of -1: nothing yet) if
/// it is larger, or as large at a lower index.
__device__ __forceinline__ void argmax_take(float &best, int &best_index, float value, int index) {
  if (index < 0) return;
  if (best_index < 0 || value > best || (value == best && index < best_index)) {
    best = value;
    best_index = index;
  }
}

/// A block of up to 1024 threads a row. Each thread loads UNROLL values
/// before comparing any, so that a batch-1 step's one block keeps many loads
/// in flight instead of waiting on one at a time.
extern "C" __global__ void __launch_bounds__(1024)
llmc_argmax_rows(const float *logits, int vocab, int *tokens) {
  constexpr int UNROLL = 8;
  const float *row = logits + (long long)blockIdx.x * vocab;
  float best = 0.f;
  int best_index = -1;
  for (int first = threadIdx.x; first < vocab; first += UNROLL * blockDim.x) {
    float values[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int i = first + u * blockDim.x;
      values[u] = i < vocab ? row[i] : 0.f;
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int i = first + u * blockDim.x;
      if (i < vocab && values[u] == values[u]) argmax_take(best, best_index, values[u], i);
    }
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float value = __shfl_xor_sync(0xffffffffu, best, offset);
    const int index = __shfl_xor_sync(0xffffffffu, best_index, offset);
    argmax_take(best, best_index, value, index);
  }
  __shared__ float s_best[32];
  __shared__ int s_index[32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) {
    s_best[warp] = best;
    s_index[warp] = best_index;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < (int)(blockDim.x + 31) / 32; ++w)
    argmax_take(best, best_index, s_best[w], s_index[w]);
  const float first = row[0];
  tokens[blockIdx.x] = first != first || best_index < 0 ? 0 : best_index;
}
