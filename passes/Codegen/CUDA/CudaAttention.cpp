//===- CudaAttention.cpp - paged attention as CUDA C++ for NVRTC ----------===//
//
// Attention is generated as CUDA C++ specialised to the model (head dim,
// query heads per KV head, KV heads, block size, dtype, scale, sliding window,
// softcap and attention sinks are constants) and compiled by the target with
// NVRTC. Every kernel serves all query heads of one KV head, so each K/V
// vector is loaded once per group (GQA). A query row with a window reads only
// its window's keys: the blocks before it may have been given back to the
// pool.
//
// - prefill: sequences with more than one query token (prefill chunks), a
//   tile of 64 (query row, head) pairs per block on tensor cores, K/V tiles
//   in shared memory, online softmax (FlashAttention-2): mma.sync with S, P
//   and O in registers for head dims up to 128, WMMA through shared memory
//   beyond;
// - decode + combine: sequences with one query token (decode), their
//   context split over up to kSplits blocks (flash-decoding), so one
//   sequence with a long context still occupies the GPU, and fewer as the
//   batch grows; the partial sums go to scratch and the combine kernel
//   merges them.
//
// Both run every step; each skips the other's sequences. The tests run the
// same source on the CPU through a host emulation of the CUDA features it
// uses (python/llmc/testing/cuda_emulation.h).
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CUDA/CudaLowering.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>
#include <limits>

using namespace mlir;
using namespace llmc::stepplan; // the plan's keys, symbols and buffers

namespace llmc::cuda {

namespace {

constexpr int64_t kAttentionThreads = 128; // 4 warps
/// At most this many splits of a decode sequence's context (flash-decoding),
/// and as many as give kDecodeBlocks (sequence, KV head, split) blocks: 8 a
/// multiprocessor on an H100, where fewer left a batch-1 decode latency-bound
/// and 32 splits of every sequence at batch 64 made four waves of blocks that
/// each did little.
constexpr int64_t kSplits = 32;
constexpr int64_t kDecodeBlocks = 1024;
/// Static shared memory a block may use without opting in.
constexpr int64_t kSharedLimit = 48 * 1024;
/// The prefill kernel's tensor-core tiles: (query row, head) pairs per block
/// (16 per warp) and keys per K/V tile.
constexpr int64_t kPrefillTileM = 64;
constexpr int64_t kPrefillTileK = 32;
/// The largest head dim the mma.sync prefill tile takes (Common.cuh,
/// prefill_tile_mma); its S, P and O stay in registers, which a larger one
/// would overflow.
constexpr int64_t kMmaMaxHeadDim = 128;

/// Keys per K/V tile of the mma.sync prefill tile: 64 while Q and both tiles
/// fit the 48 KiB of shared memory, 32 past head dim 64 (padded to 16).
int64_t mmaTileKeys(int64_t paddedHeadDim) { return paddedHeadDim <= 64 ? 64 : 32; }

/// The kernels' CUDA C++, embedded by the build (cmake/EmbedText.cmake) from
/// attention/: kDevicePrelude (Prelude.cuh), kCommonSource (Common.cuh),
/// kConfigSource (Config.cuh.in, the template of one config), kArgmaxSource
/// (Argmax.cuh, the greedy token of each logits row, which the runtime
/// launches after a step of greedy sequences), kGemvSource (Gemv.cuh, the
/// products the runtime launches for decode steps' gemms) and kMoeSource
/// (Moe.cuh, a mixture of experts' kernels, CudaMoe.cpp).
#include "passes/Codegen/CUDA/AttentionSource.h.inc"

/// `value` as an exact CUDA float literal (hexadecimal).
std::string floatLiteral(float value) {
  char literal[32];
  std::snprintf(literal, sizeof(literal), "%af", static_cast<double>(value));
  return literal;
}

/// A per-head attribute (`perHead`: the sinks, the ALiBi slopes) of every
/// layer with `heads` query heads, as a CUDA array initializer of
/// [layers][heads] values: row L is layer L's. A config reads the rows of
/// its own layers; the others hold `unused` and are never read.
std::string layerTable(llm::PagedAttentionOp op, int64_t heads,
                       function_ref<std::optional<ArrayRef<float>>(llm::PagedAttentionOp)> perHead,
                       float unused) {
  SmallVector<float> table;
  op->getParentOp()->walk([&](llm::PagedAttentionOp layerOp) {
    auto values = perHead(layerOp);
    if (!values || static_cast<int64_t>(values->size()) != heads) return;
    auto begin = static_cast<size_t>(layerOp.getLayer() * heads);
    if (table.size() < begin + heads) table.resize(begin + heads, unused);
    llvm::copy(*values, table.begin() + begin);
  });
  std::string initializer = "{";
  for (auto [i, sink] : llvm::enumerate(table))
    initializer += (i ? ", " : "") + floatLiteral(sink);
  return initializer + "}";
}

/// The row stride of a [rows, features] tensor with unit feature stride.
FailureOr<int64_t> rowStride(Operation *op, const TensorRef &ref, StringRef what) {
  if (auto stride = ref.rowStride()) return *stride;
  return op->emitOpError("has a ") << what << " that is not rows of unit feature stride", failure();
}

} // namespace

void addModulePrelude(const StepContext &step, std::string &source) {
  if (!source.empty()) return;
  source = kDevicePrelude.str();
  source += llvm::formatv("constexpr bool STORAGE_BF16 = {0};\n"
                          "constexpr int PREFILL_TILE_M = {1}, PREFILL_TILE_K = {2}, "
                          "DECODE_BLOCKS = {3}, MMA_MAX_HEAD_DIM = {4};\n"
                          "#define GEMV_THREADS {5}\n"
                          "constexpr int GEMV_WARPS = GEMV_THREADS / 32, GEMV_ROWS = {6}, "
                          "GEMV_COLUMNS = {7};\n",
                          step.storageType.isBF16() ? "true" : "false", kPrefillTileM,
                          kPrefillTileK, kDecodeBlocks, kMmaMaxHeadDim, kGemvThreads, kGemvMaxRows,
                          kGemvColumns)
                .str();
  source += kCommonSource;
  source += kArgmaxSource;
  source += kGemvSource;
}

void addMoeSource(const StepContext &step, std::string &source) {
  addModulePrelude(step, source);
  if (source.find("llmc_moe_route(") != std::string::npos) return;
  source += llvm::formatv("#define MOE_THREADS {0}\n"
                          "#define MOE_PLAN_THREADS {1}\n"
                          "constexpr int MOE_WARPS = MOE_THREADS / 32, MOE_GROUPS = {2}, "
                          "MOE_TILE = 8 * MOE_GROUPS, MOE_COLUMNS = {3}, MOE_MAX_EXPERTS = {4}, "
                          "MOE_MAX_GROUPS = {5};\n",
                          kMoeThreads, kMoePlanThreads, kMoeTilePicks / 8, kMoeColumns,
                          kMoeMaxExperts, kMoeMaxGroups)
                .str();
  source += kMoeSource;
}

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
  if (op.getType() != op.getQuery().getType())
    return op.emitOpError("reads values narrower than its keys (multi-head latent attention); "
                          "the CUDA attention kernels take one head_dim, the CPU target runs it");
  int64_t group = heads / kvHeads;
  constexpr int64_t kWarps = kAttentionThreads / 32;
  static_assert(kPrefillTileM == 16 * kWarps, "the prefill tile gives each warp 16 rows");
  if (group > kPrefillTileM)
    return op.emitOpError("has more than ") << kPrefillTileM << " query heads per KV head";
  int64_t decodeShared = (kWarps + 1) * group * headDim * 4 + 2 * kWarps * group * 4;
  int64_t paddedDim = llvm::alignTo(headDim, 16), paddedStride = paddedDim + 8;
  // Head dims up to 128: Q and one K and one V tile (prefill_tile_mma); larger:
  // the WMMA tile's staging, P and scratch (prefill_tile).
  int64_t mmaTileK = mmaTileKeys(paddedDim);
  int64_t prefillShared =
      headDim <= kMmaMaxHeadDim
          ? (kPrefillTileM + 2 * mmaTileK) * paddedStride * 2
          : std::max(kPrefillTileM, 2 * kPrefillTileK) * paddedStride * 2 +
                kWarps * 16 * kPrefillTileK * (2 + 4);
  if (std::max(decodeShared, prefillShared) > kSharedLimit)
    return op.emitOpError("needs more than 48 KiB of shared memory per block (")
           << group << " query heads per KV head of dim " << headDim << ")";
  auto qStride = rowStride(op, query, "query");
  auto outStride = rowStride(op, output, "result");
  if (failed(qStride) || failed(outStride)) return failure();

  bool bf16 = step.storageType.isBF16();
  float scale = op.getScale().convertToFloat();
  int64_t window = op.getSlidingWindow().value_or(0);
  float softcap = op.getSoftcap() ? op.getSoftcap()->convertToFloat() : 0.0f;
  if (window < 0 || window > std::numeric_limits<int32_t>::max() || softcap < 0)
    return op.emitOpError("has a sliding window or softcap out of range");
  // Whether every query row starts 16 bytes aligned (the pool's rows do).
  bool queryAligned = *qStride % 8 == 0 && query.offset % 16 == 0;
  // A window or softcap names its configs: Gemma-2's local and global layers differ.
  std::string config = llvm::formatv("attention_d{0}_g{1}_kv{2}_bs{3}_{4}_s{5:x}", headDim, group,
                                     kvHeads, blockSize, bf16 ? "bf16" : "f16",
                                     llvm::bit_cast<uint32_t>(scale));
  if (window) config += llvm::formatv("_w{0}", window).str();
  if (softcap) config += llvm::formatv("_c{0:x}", llvm::bit_cast<uint32_t>(softcap)).str();
  // Sinks name a config too; their values are a table indexed by layer, so
  // the layers of gpt-oss share its two configs (local, global).
  bool sinks = op.getSinks().has_value();
  if (sinks) config += "_sinks";
  // ALiBi slopes likewise (BLOOM's are the same in every layer, but need not be).
  bool alibi = op.getAlibiSlopes().has_value();
  if (alibi) config += "_alibi";
  if (!queryAligned) config += "_u";
  addModulePrelude(step, source);
  if (source.find(config + "_prefill(") == std::string::npos)
    source += llvm::formatv(kConfigSource.data(), config, headDim, group, kvHeads, blockSize, kSplits,
                            bf16 ? "true" : "false", floatLiteral(scale),
                            queryAligned ? "true" : "false", mmaTileK, window,
                            floatLiteral(softcap), sinks ? "true" : "false",
                            sinks ? layerTable(
                                        op, heads, [](auto layerOp) { return layerOp.getSinks(); },
                                        std::numeric_limits<float>::lowest())
                                  : std::string("{0.f}"),
                            alibi ? "true" : "false",
                            alibi ? layerTable(
                                        op, heads,
                                        [](auto layerOp) { return layerOp.getAlibiSlopes(); }, 0.0f)
                                  : std::string("{0.f}"))
                  .str();

  MLIRContext *context = op.getContext();
  auto dim = [&](int64_t value) { return planDim(context, value); };
  auto sym = [&](StringRef name) { return planDim(context, name); };
  const TensorRef &blockTables = *operands[2], &contextLens = *operands[3], &cuSeqlens = *operands[4];
  int64_t layer = op.getLayer();
  std::array<int64_t, 3> block{kAttentionThreads, 1, 1};
  // Decode steps skip the prefill kernel: its grid is 0 blocks wide then.
  step.plan.launch(kAttentionModule, config + "_prefill", {sym(kPrefillTokensSymbol), dim(kvHeads), dim(1)}, block,
                   {KernelArg::pointer(query), KernelArg::i32(dim(*qStride)), KernelArg::pointer(pool),
                    KernelArg::pointer(output), KernelArg::i32(dim(*outStride)),
                    KernelArg::pointer(blockTables), KernelArg::i32(sym(kBlockTableWidthSymbol)),
                    KernelArg::pointer(contextLens), KernelArg::pointer(cuSeqlens),
                    KernelArg::i32(sym(kSeqsSymbol)), KernelArg::i32(sym(kNumBlocksSymbol)),
                    KernelArg::i32(dim(layer))});

  int64_t partialsOffset = step.scratch(step.maxSeqs * heads * kSplits * (headDim + 2) * 4);
  TensorRef partials =
      contiguousTensor(context, kWorkspaceBuffer, partialsOffset, Float32Type::get(context),
                       {sym(kSeqsSymbol), dim(heads * kSplits * (headDim + 2))});
  step.plan.launch(kAttentionModule, config + "_decode", {sym(kSeqsSymbol), dim(kvHeads), dim(kSplits)}, block,
                   {KernelArg::pointer(query), KernelArg::i32(dim(*qStride)), KernelArg::pointer(pool),
                    KernelArg::pointer(partials), KernelArg::pointer(blockTables),
                    KernelArg::i32(sym(kBlockTableWidthSymbol)), KernelArg::pointer(contextLens),
                    KernelArg::pointer(cuSeqlens), KernelArg::i32(sym(kSeqsSymbol)),
                    KernelArg::i32(sym(kNumBlocksSymbol)), KernelArg::i32(dim(layer))});
  step.plan.launch(kAttentionModule, config + "_combine", {sym(kSeqsSymbol), dim(heads), dim(1)}, block,
                   {KernelArg::pointer(partials), KernelArg::pointer(output),
                    KernelArg::i32(dim(*outStride)), KernelArg::pointer(cuSeqlens),
                    KernelArg::pointer(contextLens), KernelArg::i32(sym(kSeqsSymbol)),
                    KernelArg::i32(dim(layer))});
  return success();
}

} // namespace llmc::cuda
