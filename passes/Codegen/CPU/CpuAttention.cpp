//===- CpuAttention.cpp - the paged KV write and paged attention ----------===//
//
// Paged attention walks a sequence's blocks through its block table and
// keeps an online softmax (running max, running sum, rescaled accumulator):
// one pass over the keys, O(head_dim) extra memory per query row whatever the
// context length, as flash attention does. Its tasks, per (sequence, run of
// KV heads) for the query heads that share them, run on the runtime's
// threads and read each block's keys, then its values, in address order;
// rows are vectors in registers, and each block's weights come from a
// polynomial exp the vectoriser widens. A decode row's keys are split among
// tasks (split-KV) and a combine kernel folds the parts, in the order a
// prefill task folds the same parts, so the bits do not depend on the path.
// Attention sinks (gpt-oss) join a row's sum in the step both paths end with
// (SoftmaxState::finish). Linear biases (ALiBi: BLOOM) join each block's
// scores as they are loaded for its max, slope * (key - query position), a
// vector of the block's slots.
//
// A bf16 pool (--kv-cache-dtype bf16) holds the rows rounded to nearest
// even, widened as attention loads them. An int8 pool (--kv-cache-dtype
// int8) holds each row as codes followed by the row's f32 scale. Attention
// reads the codes and applies the scales to what they multiply: a key's
// scale to its dot product, a value's to its softmax weight, so no row is
// ever dequantised into memory.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuAttention.h"

#include <numeric>

using namespace mlir;

namespace llmc::cpu {

using namespace attention;

namespace {
/// The most accumulator vectors (query heads x vectors a row) a task keeps.
constexpr int64_t kMaxTaskAccumulators = 64;

/// The largest divisor of `count` that is at most `bound` (1 when none above
/// 1 is): how many of a task's heads or chunks one loop takes.
int64_t largestDivisorAtMost(int64_t count, int64_t bound) {
  for (int64_t divisor = std::min(count, bound); divisor > 1; --divisor)
    if (count % divisor == 0) return divisor;
  return 1;
}

/// How many consecutive KV heads one attention task reads. A block holds its
/// KV heads' key tiles side by side, then their value rows: a task that
/// reads all of them streams the block's keys, then its values, in address
/// order, which the hardware prefetcher follows. In a standalone loop on the
/// 2-core AMD EPYC VM, with the default model's blocks (three 4 KB tiles of
/// keys, three of values), reading whole blocks ran at 1.3x the rate of
/// reading one KV head's 4 KB of keys and 4 KB of values per block with the
/// blocks scattered, 1.6x with a sequence's blocks adjacent. The task's
/// running state (an accumulator row per query head) bounds the run: the
/// largest divisor of the KV heads whose query heads keep at most
/// kMaxTaskAccumulators vectors.
int64_t kvHeadsPerTask(int64_t kvHeads, int64_t accumulatorsPerKvHead) {
  return largestDivisorAtMost(kvHeads, kMaxTaskAccumulators / accumulatorsPerKvHead);
}

/// The most query heads whose sums one loop over a key row carries (a pool
/// of one row per token): each is a chain of fmas, and enough of them keep
/// the fma units busy.
constexpr int64_t kMaxRowScoreHeads = 8;

/// The most accumulator vectors one loop over a block's value rows carries:
/// AVX-512 has 32 vector registers, and the loop also holds the rows' chunks
/// and a weight.
constexpr int64_t kSlotLoopAccumulators = 24;

/// How many of a value row's `chunks` vectors one loop over a block's slots
/// accumulates for each of a GQA group's `group` query heads: all of them
/// when they fit in kSlotLoopAccumulators, else the most that do and divide
/// `chunks` (multi-head latent attention's group of every query head over a
/// 128-feature latent would otherwise carry 64 accumulators, mostly spilled).
int64_t chunksPerSlotLoop(int64_t group, int64_t chunks) {
  return largestDivisorAtMost(chunks, kSlotLoopAccumulators / group);
}


/// The blocks of layer `layer` of a [layers, blocks, 2, kv_heads, block_size,
/// row] pool as a [blocks, 2, kv_heads, block_size, row] memref over the same
/// memory: every layer calls the same kernels, each with its own view.
Value layerBlocks(StepLowering &step, Location loc, Value pool, int64_t layer) {
  OpBuilder &b = step.b;
  auto type = cast<MemRefType>(pool.getType());
  auto layerType = MemRefType::get(type.getShape().drop_front(), type.getElementType());
  int64_t blockBytes = type.getElementTypeBitWidth() / 8;
  for (int64_t size : type.getShape().drop_front(2)) blockBytes *= size;
  Value blocks = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                            memref::DimOp::create(b, loc, pool, 1));
  Value offset = LLVM::MulOp::create(b, loc, blocks, constantI64(b, loc, layer * blockBytes));
  Value address = LLVM::GEPOp::create(b, loc, llvmPointerType(b), b.getI8Type(),
                                      pointerTo(b, loc, pool), ArrayRef<LLVM::GEPArg>{offset});
  return memrefAt(b, loc, layerType, address, {blocks});
}

/// The rows of KV cache group `group` in a step input that holds `rows` rows
/// for each group (block_tables [groups * seqs, max_blocks], slot_mapping
/// [groups * tokens]), as a memref of `rows` rows over the same memory; the
/// input itself for an op of no group.
Value groupRows(StepLowering &step, Location loc, Value input, std::optional<int64_t> group,
                Value rows) {
  if (!group) return input;
  OpBuilder &b = step.b;
  auto type = cast<MemRefType>(input.getType());
  auto i64 = [&](Value index) { return arith::IndexCastOp::create(b, loc, b.getI64Type(), index); };
  Value rowCount = i64(rows);
  Value rowBytes = constantI64(b, loc, type.getElementTypeBitWidth() / 8);
  if (type.getRank() == 2)
    rowBytes = LLVM::MulOp::create(b, loc, rowBytes, i64(memref::DimOp::create(b, loc, input, 1)));
  Value offset = LLVM::MulOp::create(
      b, loc, LLVM::MulOp::create(b, loc, rowCount, rowBytes), constantI64(b, loc, *group));
  Value address = LLVM::GEPOp::create(b, loc, llvmPointerType(b), b.getI8Type(),
                                      pointerTo(b, loc, input), ArrayRef<LLVM::GEPArg>{offset});
  SmallVector<Value> sizes;
  for (int64_t dim = 0; dim < type.getRank(); ++dim)
    if (type.isDynamicDim(dim))
      sizes.push_back(dim == 0 ? rowCount : i64(memref::DimOp::create(b, loc, input, dim)));
  return memrefAt(b, loc, type, address, sizes);
}
} // namespace

LogicalResult lowerPagedKvWrite(StepLowering &step, llm::PagedKvWriteOp op,
                                ArrayRef<Value> operands) {
  // pool, keys, values (unless the pool holds one row per token), slots.
  SmallVector<Value> args(operands);
  args[0] = layerBlocks(step, op.getLoc(), operands[0], op.getLayer());
  args.back() = groupRows(step, op.getLoc(), args.back(), op.getKvGroup(), step.numTokens);
  step.callKernel(op.getLoc(), "paged_kv_write", kernelKey(op, args, {"layer", "kv_group"}), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    // A pool of one row per token takes no values: they are the keys'.
    bool withValues = params.size() == 4;
    Value keys = params[1], values = withValues ? params[2] : Value(), slots = params.back();
    CachedRows rows(params[0]);
    Value tiles = rows.keyTiles(kb);
    Value zero = kb.index(0);
    Value blockSize = kb.index(rows.blockSize), headDim = kb.index(rows.headDim);
    // Values may be narrower than the keys (multi-head latent attention).
    int64_t valueDim = withValues ? staticDim(values, 1) / rows.kvHeads : 0;
    kb.forEach(zero, kb.dim(keys, 0), [&](Value token) {
      Value slot = kb.toIndex(kb.load(slots, {token}));
      // A negative slot marks a token whose K/V must not be cached.
      kb.ifThen(kb.lessThan(kb.index(-1), slot), [&] {
        Value block = kb.divIndex(slot, blockSize), offset = kb.remIndex(slot, blockSize);
        kb.forEach(zero, kb.index(rows.kvHeads), [&](Value head) {
          Value base = kb.mulIndex(head, headDim);
          rows.writeKey(kb, tiles, block, head, offset, [&](Value d) {
            return kb.load(keys, {token, kb.addIndex(base, d)});
          });
          if (!withValues) return;
          Value valueBase = kb.mulIndex(head, kb.index(valueDim));
          rows.writeRow(kb, rows.valueRow(kb, block, head, offset), valueDim, [&](Value d) {
            return kb.load(values, {token, kb.addIndex(valueBase, d)});
          });
        });
      });
    });
  });
  return success();
}

LogicalResult lowerRopePagedKvWrite(StepLowering &step, llm::RopePagedKvWriteOp op,
                                    ArrayRef<Value> operands, Value rotatedQuery) {
  // pool, q, k, v, slots, positions, then inv_freq or the cos and sin caches.
  bool cached = static_cast<bool>(op.getCosCache());
  SmallVector<Value> args(operands);
  args[0] = layerBlocks(step, op.getLoc(), args[0], op.getLayer());
  args[4] = groupRows(step, op.getLoc(), args[4], op.getKvGroup(), step.numTokens);
  args.push_back(rotatedQuery);
  bool interleaved = op.getInterleaved();
  int64_t halfRotary = cast<MemRefType>(args[6].getType()).getShape().back();
  runOverRows(step, op.getLoc(), "rope_paged_kv_write", kernelKey(op, args, {"layer", "kv_group"}), args,
              args.size() - 1, [&](KernelBuilder &kb, ValueRange params, Value begin, Value end) {
    Value query = params[1], keys = params[2], values = params[3];
    Value slots = params[4], positions = params[5], out = params.back();
    CachedRows rows(params[0]);
    Value tiles = rows.keyTiles(kb);
    Rotation rotation{rows.headDim, halfRotary, interleaved, cached ? Value() : params[6],
                      cached ? params[6] : Value(), cached ? params[7] : Value()};
    int64_t heads = cast<MemRefType>(out.getType()).getDimSize(1) / rows.headDim;
    Value zero = kb.index(0);
    Value blockSize = kb.index(rows.blockSize), headDim = kb.index(rows.headDim);
    // The rotated key of one head: an int8 row is quantised from all of it.
    Value rotatedKey = memref::AllocaOp::create(
        kb.builder(), kb.location(), MemRefType::get({rows.headDim}, kb.builder().getF32Type()));
    TokenRotation tokenRotation(kb, rotation);
    kb.forEach(begin, end, [&](Value token) {
      Value position = tokenRotation.at(kb, kb.load(positions, {token}));
      kb.forEach(zero, kb.index(heads), [&](Value head) {
        Value base = kb.mulIndex(head, headDim);
        emitRotatedHead(
            kb, tokenRotation.rotation, position,
            [&](Value i) { return kb.load(query, {token, kb.addIndex(base, i)}); },
            [&](Value i, Value value) { kb.store(value, out, {token, kb.addIndex(base, i)}); });
      });
      Value slot = kb.toIndex(kb.load(slots, {token}));
      // A negative slot marks a token whose K/V must not be cached.
      kb.ifThen(kb.lessThan(kb.index(-1), slot), [&] {
        Value block = kb.divIndex(slot, blockSize), offset = kb.remIndex(slot, blockSize);
        kb.forEach(zero, kb.index(rows.kvHeads), [&](Value head) {
          Value base = kb.mulIndex(head, headDim);
          emitRotatedHead(
              kb, tokenRotation.rotation, position,
              [&](Value i) { return kb.load(keys, {token, kb.addIndex(base, i)}); },
              [&](Value i, Value value) { kb.store(value, rotatedKey, {i}); });
          rows.writeKey(kb, tiles, block, head, offset,
                        [&](Value d) { return kb.load(rotatedKey, {d}); });
          rows.writeRow(kb, rows.valueRow(kb, block, head, offset), rows.headDim,
                        [&](Value d) { return kb.load(values, {token, kb.addIndex(base, d)}); });
        });
      });
    });
  });
  return success();
}

LogicalResult lowerPagedAttention(StepLowering &step, llm::PagedAttentionOp op,
                                  ArrayRef<Value> operands, Value output) {
  // query, pool, block_tables, context_lens, cu_seqlens_q, output, parts
  if (!op.getCuSeqlensQ()) return op.emitOpError("is not ragged: run llm-ragged-batching first");
  SmallVector<Value> args(operands);
  args[1] = layerBlocks(step, op.getLoc(), args[1], op.getLayer());
  args[2] = groupRows(step, op.getLoc(), args[2], op.getKvGroup(), step.numSeqs);
  args.push_back(output);
  double scale = op.getScale().convertToFloat();
  std::optional<int64_t> window = op.getSlidingWindow();
  std::optional<float> softcap;
  if (auto cap = op.getSoftcap()) softcap = cap->convertToFloat();
  CachedRows shape(args[1]);
  int64_t heads = cast<MemRefType>(args[0].getType()).getDimSize(1) / shape.headDim;
  int64_t group = heads / shape.kvHeads;
  // A head's output row (the values' head_dim: the keys', or narrower in
  // multi-head latent attention) is `chunks` vectors of `lanes` f32, kept in
  // registers.
  int64_t valueDim = cast<MemRefType>(output.getType()).getDimSize(1) / heads;
  int64_t lanes = std::min<int64_t>(kLanes, valueDim & -valueDim);
  int64_t chunks = valueDim / lanes;
  // A task reads `taskKvHeads` KV heads for their `taskKvHeads` x `group`
  // query heads; the KV heads come in `kvRuns` such runs.
  int64_t taskKvHeads = kvHeadsPerTask(shape.kvHeads, group * chunks);
  int64_t loopChunks = chunksPerSlotLoop(group, chunks);
  int64_t kvRuns = shape.kvHeads / taskKvHeads;
  SmallVector<float> sinks, slopes;
  if (auto logits = op.getSinks()) sinks.assign(logits->begin(), logits->end());
  if (auto alibi = op.getAlibiSlopes()) slopes.assign(alibi->begin(), alibi->end());
  SoftmaxState softmax{taskKvHeads * group, chunks, VectorType::get({lanes}, step.b.getF32Type()),
                       sinks};
  int64_t minRangeBlocks = std::max<int64_t>(1, kMinRangeKeys / shape.blockSize);
  // With bf16-products=amx an op that fits the tiles takes its products on
  // them; the decode rows' stored states and their combine are the same, over
  // ranges aligned to the tile kernel's softmax steps.
  bool onTiles = step.tileAttention && !whyNotTiles(op, shape, group, valueDim);
  int64_t rangeAlign = onTiles ? kTileStepBlocks : 1;

  // The decode rows' partial states, [sequences, (run of KV heads, range,
  // query head of the run) x state], in the scratch.
  int64_t partsPerSequence = kvRuns * kSplits * softmax.heads * softmax.storedFloats();
  args.push_back(step.scratchView(op.getLoc(), step.b.getF32Type(), partsPerSequence,
                                  step.numSeqs, 0));
  step.clobberScratch(step.maxSeqs * partsPerSequence * 4);

  /// Where query head `kvHead` x group + g, feature c * lanes of it, sits in
  /// rows of `width` features a head (the query's, or the output's): g may
  /// run past the group into the next KV heads' groups.
  auto columnOf = [&](KernelBuilder &kb, Value kvHead, int64_t width) {
    Value groupBase = kb.mulIndex(kvHead, kb.index(group * width));
    return [&kb, groupBase, width, lanes](int64_t g, int64_t c) {
      return kb.addIndex(groupBase, kb.index(g * width + c * lanes));
    };
  };

  // One task per (sequence, run of KV heads, split) for the query heads
  // that share the run's KV heads (their GQA groups), so each cached row is
  // loaded once for its group. A sequence of one row (a decode) gives a task
  // one key range of that row for every KV head of the run, whose state it
  // stores for the combine kernel, so a long context keeps every thread busy
  // at batch 1; it reads a block's keys, then its values, in address order.
  // A sequence of several rows (a prefill) gives a task every kSplits-th row
  // from the split (rows interleaved, so causal rows of every length share
  // the threads evenly), one KV head after another, each row's key ranges
  // folded in turn: a KV head's keys stay in cache for the task's rows.
  // Either way a row is its ranges' states folded left to right by the same
  // combine.
  auto body = [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
    Value query = params[0], blockTables = params[2];
    Value contextLens = params[3], cuSeqlens = params[4], out = params[5], parts = params[6];
    CachedRows rows(params[1]);
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    VectorType vectorType = softmax.vectorType;
    auto splat = [&](Value scalar) {
      return vector::BroadcastOp::create(b, loc, vectorType, scalar);
    };
    auto fastMathFlags = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
    auto fastMath = arith::FastMathFlagsAttr::get(b.getContext(), fastMathFlags);
    // One block's scores, then its softmax weights, per query head of the run.
    Value weights = memref::AllocaOp::create(
        b, loc, MemRefType::get({softmax.heads, rows.blockSize}, b.getF32Type()));
    Value zero = kb.index(0), one = kb.index(1);
    Value blockSize = kb.index(rows.blockSize), splits = kb.index(kSplits);
    Value scaleValue = kb.f32(scale);
    Value negInf = kb.f32(-std::numeric_limits<float>::infinity());
    Value tiles = rows.keyTiles(kb);
    // Scores are vectors of a block's slots; enough interleaved sums over the
    // features that the group's fmas keep four chains in flight.
    int64_t scoreLanes = std::min<int64_t>(kLanes, rows.blockSize & -rows.blockSize);
    auto scoreType = VectorType::get({scoreLanes}, b.getF32Type());
    Value scoreZeros =
        arith::ConstantOp::create(b, loc, scoreType, DenseElementsAttr::get(scoreType, 0.0f));
    int64_t partials = 1;
    while (partials * group < 4 && rows.headDim % (2 * partials) == 0) partials *= 2;
    // A pool of one row per token: a key row is `rowLanes` features a
    // vector, and `scoreHeads` query heads of the group share each one.
    int64_t rowLanes = std::min<int64_t>(kLanes, rows.headDim & -rows.headDim);
    auto rowType = VectorType::get({rowLanes}, b.getF32Type());
    Value rowZeros =
        arith::ConstantOp::create(b, loc, rowType, DenseElementsAttr::get(rowType, 0.0f));
    int64_t scoreHeads = largestDivisorAtMost(group, kMaxRowScoreHeads);
    // Every query head's ALiBi slope, and each score vector's slots as floats.
    Value slopeTable;
    SmallVector<Value> slotOffsets;
    if (!slopes.empty()) {
      auto type = VectorType::get({static_cast<int64_t>(slopes.size())}, b.getF32Type());
      slopeTable = arith::ConstantOp::create(
          b, loc, type, DenseElementsAttr::get(type, ArrayRef<float>(slopes)));
      for (int64_t v = 0; v < rows.blockSize / scoreLanes; ++v) {
        SmallVector<float> slots(scoreLanes);
        std::iota(slots.begin(), slots.end(), float(v * scoreLanes));
        slotOffsets.push_back(arith::ConstantOp::create(
            b, loc, scoreType, DenseElementsAttr::get(scoreType, ArrayRef<float>(slots))));
      }
    }

    // The online-softmax `state` (of `kvHeads` consecutive KV heads' query
    // heads, from `firstKvHead`) of query row `row` of sequence `seq`, which
    // sees keys [firstKey, visible), over blocks [beginBlock, endBlock) a
    // block at a time: the block's scores (every KV head's keys), their max,
    // one rescale of each head's running (max, sum, accumulator), then the
    // block's weights (a vectorisable exp) times its values (every KV head's).
    auto rangeState = [&](const SoftmaxState &state, int64_t kvHeads, Value firstKvHead,
                          Value seq, Value row, Value firstKey, Value visible, Value beginBlock,
                          Value endBlock) {
      auto column = columnOf(kb, firstKvHead, rows.headDim);
      SmallVector<Value> kvHeadAt;
      for (int64_t h = 0; h < kvHeads; ++h)
        kvHeadAt.push_back(kb.addIndex(firstKvHead, kb.index(h)));
      // The scores of KV head `h`'s keys in `block` of a pool of one row per
      // token: each slot's key row times the query rows of the group's
      // heads, `scoreHeads` heads sharing each loaded chunk of the key, their
      // sums reduced across lanes together (sumLanesOfEach).
      auto storeRowScores = [&](Value block, int64_t h) {
        kb.forEach(zero, blockSize, [&](Value slot) {
          SmallVector<Value> keyRow = rows.keyRow(kb, block, kvHeadAt[h], slot);
          Value keyScale = rows.scale(kb, keyRow);
          for (int64_t first = 0; first < group; first += scoreHeads) {
            auto features = scf::ForOp::create(
                b, loc, zero, kb.index(rows.headDim), kb.index(rowLanes),
                SmallVector<Value>(scoreHeads, rowZeros),
                [&](OpBuilder &, Location, Value d, ValueRange sums) {
                  Value keys = rows.chunk(kb, keyRow, d, rowType);
                  SmallVector<Value> next;
                  for (int64_t g = 0; g < scoreHeads; ++g) {
                    Value q = vector::LoadOp::create(
                        b, loc, rowType, query,
                        ValueRange{row, kb.addIndex(column(h * group + first + g, 0), d)});
                    next.push_back(vector::FMAOp::create(b, loc, q, keys, sums[g]));
                  }
                  scf::YieldOp::create(b, loc, next);
                });
            SmallVector<Value> sums =
                sumLanesOfEach(b, loc, SmallVector<Value>(features.getResults()));
            for (int64_t g = 0; g < scoreHeads; ++g) {
              Value score = sums[g];
              if (keyScale) score = kb.mul(score, keyScale);
              kb.store(kb.mul(score, scaleValue), weights,
                       {kb.index(h * group + first + g), slot});
            }
          }
        });
      };
      auto blockLoop = scf::ForOp::create(
          b, loc, beginBlock, endBlock, one, state.empty(kb),
          [&](OpBuilder &, Location, Value blockIndex, ValueRange running) {
            Value block = kb.toIndex(kb.load(blockTables, {seq, blockIndex}));
            Value begin = kb.mulIndex(blockIndex, blockSize);
            Value count = kb.minIndex(blockSize, kb.subIndex(visible, begin));
            Value firstSlot = kb.maxIndex(zero, kb.subIndex(firstKey, begin));
            // The block's scores, `scoreLanes` slots a vector, KV head after
            // KV head: per feature d, the keys' feature d (a row of the
            // transposed tile) times each head of the group's q[d], in
            // `partials` interleaved sums over d so that enough fmas are in
            // flight.
            for (int64_t h = 0; h < kvHeads; ++h) {
              if (rows.valuesInKeys) {
                storeRowScores(block, h);
                continue;
              }
              SmallVector<Value> tile{block, zero, kvHeadAt[h]};
              for (int64_t v = 0; v < rows.blockSize / scoreLanes; ++v) {
                auto features = scf::ForOp::create(
                    b, loc, zero, kb.index(rows.headDim), kb.index(partials),
                    SmallVector<Value>(group * partials, scoreZeros),
                    [&](OpBuilder &, Location, Value d, ValueRange sums) {
                      SmallVector<Value> next(sums);
                      for (int64_t p = 0; p < partials; ++p) {
                        Value feature = kb.addIndex(d, kb.index(p));
                        Value keys =
                            rows.keyLanes(kb, tiles, tile, feature, v * scoreLanes, scoreType);
                        for (int64_t g = 0; g < group; ++g) {
                          Value q = kb.load(
                              query, {row, kb.addIndex(column(h * group + g, 0), feature)});
                          next[g * partials + p] = vector::FMAOp::create(
                              b, loc, vector::BroadcastOp::create(b, loc, scoreType, q), keys,
                              sums[g * partials + p]);
                        }
                      }
                      scf::YieldOp::create(b, loc, next);
                    });
                Value keyScales = rows.keyScales(kb, tiles, tile, v * scoreLanes, scoreLanes);
                for (int64_t g = 0; g < group; ++g) {
                  Value scores = features.getResult(g * partials);
                  for (int64_t p = 1; p < partials; ++p)
                    scores = arith::AddFOp::create(b, loc, scores,
                                                   features.getResult(g * partials + p), fastMath);
                  if (keyScales)
                    scores = arith::MulFOp::create(b, loc, scores, keyScales, fastMath);
                  scores = arith::MulFOp::create(
                      b, loc, scores, vector::BroadcastOp::create(b, loc, scoreType, scaleValue),
                      fastMath);
                  vector::StoreOp::create(
                      b, loc, scores, weights,
                      ValueRange{kb.index(h * group + g), kb.index(v * scoreLanes)});
                }
              }
            }
            if (softcap)
              for (int64_t g = 0; g < state.heads; ++g)
                kb.forEach(firstSlot, count, [&](Value slot) {
                  Value score = kb.load(weights, {kb.index(g), slot});
                  kb.store(kb.mul(kb.f32(*softcap), kb.tanh(kb.div(score, kb.f32(*softcap)))),
                           weights, {kb.index(g), slot});
                });
            // Each head's block max, weights and their sum, a score vector at
            // a time; the slots outside [firstSlot, count) are masked to -inf
            // for the max and to weight 0.
            auto laneType = VectorType::get({scoreLanes}, b.getI32Type());
            auto toLanes = [&](Value slot) {
              return vector::BroadcastOp::create(
                  b, loc, laneType, arith::IndexCastOp::create(b, loc, b.getI32Type(), slot));
            };
            Value firstLanes = toLanes(firstSlot), countLanes = toLanes(count);
            SmallVector<Value> visibleLanes;
            for (int64_t v = 0; v < rows.blockSize / scoreLanes; ++v) {
              SmallVector<int32_t> slots(scoreLanes);
              std::iota(slots.begin(), slots.end(), int32_t(v * scoreLanes));
              Value slotLanes = arith::ConstantOp::create(
                  b, loc, laneType, DenseElementsAttr::get(laneType, ArrayRef<int32_t>(slots)));
              visibleLanes.push_back(arith::AndIOp::create(
                  b, loc,
                  arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, slotLanes, firstLanes),
                  arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, slotLanes, countLanes)));
            }
            Value negInfs = vector::BroadcastOp::create(b, loc, scoreType, negInf);
            // ALiBi: slot s of the block is key `begin + s`, the query row sits
            // at position visible - 1.
            Value distance;
            auto scoreSplat = [&](Value scalar) {
              return vector::BroadcastOp::create(b, loc, scoreType, scalar);
            };
            if (slopeTable)
              distance = scoreSplat(arith::SIToFPOp::create(
                  b, loc, b.getF32Type(),
                  arith::IndexCastOp::create(
                      b, loc, b.getI64Type(),
                      kb.subIndex(kb.addIndex(begin, one), visible))));
            SmallVector<Value> maxima, sums, corrections;
            for (int64_t g = 0; g < state.heads; ++g) {
              SmallVector<Value> scores;
              Value largest, slope;
              if (slopeTable)
                slope = scoreSplat(vector::ExtractOp::create(
                    b, loc, slopeTable,
                    OpFoldResult(kb.addIndex(kb.mulIndex(firstKvHead, kb.index(group)),
                                             kb.index(g)))));
              for (auto [v, visible] : llvm::enumerate(visibleLanes)) {
                Value loaded = vector::LoadOp::create(
                    b, loc, scoreType, weights, ValueRange{kb.index(g), kb.index(v * scoreLanes)});
                if (slope)
                  loaded = vector::FMAOp::create(
                      b, loc, slope, arith::AddFOp::create(b, loc, slotOffsets[v], distance),
                      loaded);
                scores.push_back(arith::SelectOp::create(b, loc, visible, loaded, negInfs));
                largest = largest ? kb.max(largest, scores.back()) : scores.back();
              }
              Value blockMax =
                  vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXIMUMF, largest);
              Value maxSoFar = kb.max(running[state.maxAt(g)], blockMax);
              Value maxLanes = vector::BroadcastOp::create(b, loc, scoreType, maxSoFar);
              Value total;
              for (auto [v, visible] : llvm::enumerate(visibleLanes)) {
                Value weight = arith::SelectOp::create(
                    b, loc, visible, kb.expPolynomial(kb.sub(scores[v], maxLanes)), scoreZeros);
                vector::StoreOp::create(b, loc, weight, weights,
                                        ValueRange{kb.index(g), kb.index(v * scoreLanes)});
                total = total ? kb.add(total, weight) : weight;
              }
              Value blockSum = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                                           total, fastMathFlags);
              Value correction = kb.expPolynomial(kb.sub(running[state.maxAt(g)], maxSoFar));
              maxima.push_back(maxSoFar);
              sums.push_back(kb.add(kb.mul(running[state.sumAt(g)], correction), blockSum));
              corrections.push_back(splat(correction));
            }
            SmallVector<Value> next(maxima);
            llvm::append_range(next, sums);
            // The values, KV head after KV head: each slot's row times the
            // weights of the heads of the group, over the block's slots once
            // for every `loopChunks` chunks of the rows, so that a slot loop's
            // accumulators stay in registers.
            SmallVector<Value> accumulated(state.heads * chunks);
            for (int64_t h = 0; h < kvHeads; ++h) {
              for (int64_t first = 0; first < chunks; first += loopChunks) {
                SmallVector<Value> rescaled;
                for (int64_t g = h * group; g < (h + 1) * group; ++g)
                  for (int64_t c = first; c < first + loopChunks; ++c)
                    rescaled.push_back(arith::MulFOp::create(
                        b, loc, running[state.accumulatorAt(g, c)], corrections[g], fastMath));
                auto slotLoop = scf::ForOp::create(
                    b, loc, firstSlot, count, one, rescaled,
                    [&](OpBuilder &, Location, Value slot, ValueRange accumulators) {
                      SmallVector<Value> valueRow = rows.valueRow(kb, block, kvHeadAt[h], slot);
                      SmallVector<Value> values;
                      for (int64_t c = first; c < first + loopChunks; ++c)
                        values.push_back(rows.chunk(kb, valueRow, c * lanes, vectorType));
                      Value valueScale = rows.scale(kb, valueRow);
                      SmallVector<Value> updated;
                      for (int64_t g = 0; g < group; ++g) {
                        Value weight = kb.load(weights, {kb.index(h * group + g), slot});
                        if (valueScale) weight = kb.mul(weight, valueScale);
                        Value weightSplat = splat(weight);
                        for (int64_t c = 0; c < loopChunks; ++c)
                          updated.push_back(vector::FMAOp::create(
                              b, loc, weightSplat, values[c], accumulators[g * loopChunks + c]));
                      }
                      scf::YieldOp::create(b, loc, updated);
                    });
                for (int64_t g = 0; g < group; ++g)
                  for (int64_t c = 0; c < loopChunks; ++c)
                    accumulated[(h * group + g) * chunks + first + c] =
                        slotLoop.getResult(g * loopChunks + c);
              }
            }
            llvm::append_range(next, accumulated);
            scf::YieldOp::create(b, loc, next);
          });
      return SmallVector<Value>(blockLoop.getResults());
    };

    SoftmaxState groupSoftmax{group, chunks, vectorType, sinks};
    kb.forEach(firstTask, lastTask, [&](Value task) {
      Value seq = kb.divIndex(task, kb.index(kvRuns * kSplits));
      Value kvRun = kb.remIndex(kb.divIndex(task, splits), kb.index(kvRuns));
      Value firstKvHead = kb.mulIndex(kvRun, kb.index(taskKvHeads));
      Value split = kb.remIndex(task, splits);
      Value first = kb.toIndex(kb.load(cuSeqlens, {seq}));
      Value last = kb.toIndex(kb.load(cuSeqlens, {kb.addIndex(seq, one)}));
      Value contextLen = kb.toIndex(kb.load(contextLens, {seq}));
      Value decode = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           kb.subIndex(last, first), one);
      // A decode row sees its whole context: the split's range of it.
      kb.ifThen(decode, [&] {
        KeyRanges ranges(kb, contextLen, rows.blockSize, window, minRangeBlocks);
        auto [begin, end] = ranges.range(kb, split);
        SmallVector<Value> state =
            softmax.foldRange(kb, softmax.empty(kb), begin, end, [&, begin = begin, end = end] {
              return rangeState(softmax, taskKvHeads, firstKvHead, seq, first, ranges.firstKey,
                                contextLen, begin, end);
            });
        softmax.store(kb, state, parts, seq, softmax.partsColumn(kb, kvRun, split));
      });
      // Row `first + i` of a prefill sits at position contextLen - qLen + i.
      Value prefill =
          arith::XOrIOp::create(b, loc, decode, arith::ConstantIntOp::create(b, loc, 1, 1));
      kb.ifThen(prefill, [&] {
        Value startPosition = kb.subIndex(contextLen, kb.subIndex(last, first));
        kb.forEach(zero, kb.index(taskKvHeads), [&](Value h) {
          Value kvHead = kb.addIndex(firstKvHead, h);
          kb.forEach(kb.addIndex(first, split), last, [&](Value row) {
            Value visible = kb.addIndex(kb.addIndex(startPosition, kb.subIndex(row, first)), one);
            KeyRanges ranges(kb, visible, rows.blockSize, window, minRangeBlocks);
            auto rangeLoop = scf::ForOp::create(
                b, loc, zero, splits, one, groupSoftmax.empty(kb),
                [&](OpBuilder &, Location, Value r, ValueRange running) {
                  auto [begin, end] = ranges.range(kb, r);
                  auto part = [&, begin = begin, end = end] {
                    return rangeState(groupSoftmax, 1, kvHead, seq, row, ranges.firstKey, visible,
                                      begin, end);
                  };
                  scf::YieldOp::create(b, loc,
                                       groupSoftmax.foldRange(kb, running, begin, end, part));
                });
            groupSoftmax.finish(kb, SmallVector<Value>(rangeLoop.getResults()), out, row,
                                kb.mulIndex(kvHead, kb.index(group)),
                                columnOf(kb, kvHead, valueDim));
          }, kSplits);
        });
      });
    });
  };

  // The combine kernel: one task per (sequence, run of KV heads) folds a
  // decode row's stored range states left to right, as a prefill task folds
  // them.
  auto combineBody = [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
    Value contextLens = params[3], cuSeqlens = params[4], out = params[5], parts = params[6];
    Value one = kb.index(1);
    kb.forEach(firstTask, lastTask, [&](Value task) {
      Value seq = kb.divIndex(task, kb.index(kvRuns));
      Value kvRun = kb.remIndex(task, kb.index(kvRuns));
      Value first = kb.toIndex(kb.load(cuSeqlens, {seq}));
      Value last = kb.toIndex(kb.load(cuSeqlens, {kb.addIndex(seq, one)}));
      kb.ifThen(arith::CmpIOp::create(kb.builder(), kb.location(), arith::CmpIPredicate::eq,
                                      kb.subIndex(last, first), one),
                [&] {
        // A decode row sees its whole context.
        KeyRanges ranges(kb, kb.toIndex(kb.load(contextLens, {seq})), shape.blockSize, window,
                         minRangeBlocks, rangeAlign);
        SmallVector<Value> state = softmax.empty(kb);
        for (int64_t r = 0; r < kSplits; ++r) {
          auto [begin, end] = ranges.range(kb, kb.index(r));
          Value base = softmax.partsColumn(kb, kvRun, kb.index(r));
          state = softmax.foldRange(kb, state, begin, end,
                                    [&] { return softmax.load(kb, parts, seq, base); });
        }
        Value firstKvHead = kb.mulIndex(kvRun, kb.index(taskKvHeads));
        softmax.finish(kb, state, out, first, kb.mulIndex(firstKvHead, kb.index(group)),
                       columnOf(kb, firstKvHead, valueDim));
      });
    });
  };

  AttentionPlan plan{group,  valueDim, shape.blockSize, taskKvHeads, kvRuns, minRangeBlocks,
                     rangeAlign, scale, window,       sinks,       softmax};
  auto tasks = [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
    if (onTiles) return emitTileAttentionTasks(kb, params, firstTask, lastTask, plan);
    body(kb, params, firstTask, lastTask);
  };

  std::string key = kernelKey(op, args, {"layer", "kv_group"}) + (onTiles ? "/tiles" : "");
  OpBuilder &b = step.b;
  Location loc = op.getLoc();
  Value sequences = arith::SubIOp::create(b, loc, memref::DimOp::create(b, loc, args[4], 0),
                                          arith::ConstantIndexOp::create(b, loc, 1));
  auto times = [&](int64_t factor) {
    return arith::MulIOp::create(b, loc, sequences, arith::ConstantIndexOp::create(b, loc, factor))
        .getResult();
  };
  if (llvm::all_of(args, isAddressable)) {
    runParallel(step, loc, "paged_attention", key, args, times(kvRuns * kSplits), tasks);
    runParallel(step, loc, "paged_attention_combine", key + "/combine", args, times(kvRuns),
                combineBody);
    return success();
  }
  // A view with a dynamic layout is not addressable from a bare pointer: one
  // thread.
  step.callKernel(loc, "paged_attention", key, args, [&](KernelBuilder &kb, ValueRange params) {
    Value sequences = kb.subIndex(kb.dim(params[4], 0), kb.index(1));
    tasks(kb, params, kb.index(0), kb.mulIndex(sequences, kb.index(kvRuns * kSplits)));
    combineBody(kb, params, kb.index(0), kb.mulIndex(sequences, kb.index(kvRuns)));
  });
  return success();
}

} // namespace llmc::cpu
