//===- CudaAttention.cpp - paged attention as CUDA C++ for NVRTC ----------===//
//
// Attention is generated as CUDA C++ specialised to the model (head dim,
// query heads per KV head, KV heads, block size, dtype and scale are
// constants) and compiled by the target with NVRTC. One thread block
// serves all query heads of one KV head for one query row, so each K/V
// vector is loaded once per group (GQA); its four warps take every fourth
// key and keep an online softmax per head, merged at the end.
//
// - rows: the rows of sequences with more than one query token (prefill
//   chunks), the whole visible context in one block;
// - decode + combine: sequences with one query token (decode), their
//   context split over kSplits blocks (flash-decoding), so one sequence
//   with a long context still occupies the GPU; the partial sums go to
//   scratch and the combine kernel merges them.
//
// Both run every step; each skips the other's sequences.
//
//===----------------------------------------------------------------------===//
#include "passes/CudaLowering.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>

using namespace mlir;

namespace llmc::cuda {

namespace {

constexpr int64_t kAttentionThreads = 128; // 4 warps
constexpr int64_t kSplits = 32;
/// Static shared memory a block may use without opting in.
constexpr int64_t kSharedLimit = 48 * 1024;

/// What the generated code shares by every attention config: storage
/// conversions, the warp sum and the attend loop.
constexpr llvm::StringLiteral kCommonSource = R"cuda(
typedef unsigned short storage_t;
#define INFINITY __int_as_float(0x7f800000)

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
/// (head, feature) of the block's merged result.
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
)cuda";

/// The kernels of one attention config; `{0}` is its name prefix.
constexpr llvm::StringLiteral kConfigSource = R"cuda(
namespace {0}_config {{
constexpr int D = {1}, G = {2}, KVH = {3}, BS = {4}, SPLITS = {5};
constexpr bool BF16 = {6};
constexpr float SCALE = {7};
} // namespace {0}_config

extern "C" __global__ void __launch_bounds__(128)
{0}_rows(const storage_t *query, int q_stride, const storage_t *pool, storage_t *out,
         int out_stride, const int *block_tables, int table_width, const int *context_lens,
         const int *cu_seqlens, int num_seqs, int num_blocks, int layer) {{
  using namespace {0}_config;
  const int row = blockIdx.x, kvh = blockIdx.y;
  const int seq = sequence_of(cu_seqlens, num_seqs, row);
  const int q_begin = cu_seqlens[seq], q_len = cu_seqlens[seq + 1] - q_begin;
  if (q_len == 1) return; // a decode row: the split kernels take it
  const int visible = context_lens[seq] - q_len + (row - q_begin) + 1;
  const storage_t *layer_pool = pool + (long long)layer * num_blocks * 2 * KVH * BS * D;
  attend<D, G, KVH, BS, BF16>(query, q_stride, layer_pool, block_tables + (long long)seq * table_width,
                              row, kvh, 0, visible, SCALE,
                              [&](int g, int d, float o, float, float l) {{
    out[(long long)row * out_stride + (kvh * G + g) * D + d] = from_f32<BF16>(l > 0.f ? o / l : 0.f);
  });
}

extern "C" __global__ void __launch_bounds__(128)
{0}_decode(const storage_t *query, int q_stride, const storage_t *pool, float *partials,
           const int *block_tables, int table_width, const int *context_lens,
           const int *cu_seqlens, int num_seqs, int num_blocks, int layer) {{
  using namespace {0}_config;
  const int seq = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z;
  const int row = cu_seqlens[seq];
  if (cu_seqlens[seq + 1] - row != 1) return; // a prefill chunk: the rows kernel takes it
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
  if ((kWarps + 1) * group * headDim * 4 + 2 * kWarps * group * 4 > kSharedLimit)
    return op.emitOpError("needs more than 48 KiB of shared memory per block (")
           << group << " query heads per KV head of dim " << headDim << ")";
  auto qStride = rowStride(op, query, "query");
  auto outStride = rowStride(op, output, "result");
  if (failed(qStride) || failed(outStride)) return failure();

  bool bf16 = step.storageType.isBF16();
  float scale = op.getScale().convertToFloat();
  std::string config = llvm::formatv("attention_d{0}_g{1}_kv{2}_bs{3}_{4}_s{5:x}", headDim, group,
                                     kvHeads, blockSize, bf16 ? "bf16" : "f16",
                                     llvm::bit_cast<uint32_t>(scale));
  if (source.empty()) source = kCommonSource.str();
  if (source.find(config + "_rows(") == std::string::npos) {
    char scaleLiteral[32]; // exact: a hexadecimal float literal
    std::snprintf(scaleLiteral, sizeof(scaleLiteral), "%af", static_cast<double>(scale));
    source += llvm::formatv(kConfigSource.data(), config, headDim, group, kvHeads, blockSize, kSplits,
                            bf16 ? "true" : "false", scaleLiteral)
                  .str();
  }

  MLIRContext *context = op.getContext();
  auto dim = [&](int64_t value) { return planDim(context, value); };
  auto sym = [&](StringRef name) { return planDim(context, name); };
  const TensorRef &blockTables = *operands[2], &contextLens = *operands[3], &cuSeqlens = *operands[4];
  int64_t layer = op.getLayer();
  std::array<int64_t, 3> block{kAttentionThreads, 1, 1};
  step.plan.launch("attention", config + "_rows", {query.sizes[0], dim(kvHeads), dim(1)}, block,
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
