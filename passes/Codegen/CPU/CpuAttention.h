//===- CpuAttention.h - what the paged attention kernels share ---*- C++ -*-===//
//
// The cached rows of a layer's pool, the online-softmax state of a query row
// and the cut of a row's keys into ranges: what the vector attention kernel
// (CpuAttention.cpp) and the AMX tile one (CpuTileAttention.cpp) share, so
// that a decode row's stored range states fold the same way whichever wrote
// them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_CPU_CPUATTENTION_H
#define LLMC_PASSES_CODEGEN_CPU_CPUATTENTION_H

#include "passes/Codegen/CPU/CpuLowering.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

namespace llmc::cpu::attention {
using namespace mlir;

/// Attention tasks per (sequence, KV head): a prefill's rows are dealt out
/// among them, a decode row's keys are cut into as many ranges.
constexpr int64_t kSplits = 4;
/// The fewest keys a range holds: shorter contexts are cut into fewer
/// ranges, whose partial states would cost more than they save.
constexpr int64_t kMinRangeKeys = 64;

/// The cached rows of one layer's [blocks, 2, kv_heads, block_size, row]
/// view of the pool (layerBlocks), f32, bf16 or int8. A block's values are
/// rows (for int8: codes, then the row's scale in the last 4 bytes). Its
/// keys are transposed: the [block_size, row] tile holds feature d of every
/// slot together, [head_dim, block_size] (for int8: codes, then the
/// block_size scales), so attention computes a block's scores with one
/// vector fma per feature and no horizontal sum.
///
/// A pool of one row per token ([blocks, 1, ...]: the values are the keys'
/// first features) keeps its keys as rows, which the values are read from;
/// a score is then a key row times a query row, summed across lanes.
struct CachedRows {
  Value pool;
  int64_t kvHeads, blockSize, headDim;
  bool int8, bf16, valuesInKeys;
  explicit CachedRows(Value pool) : pool(pool) {
    auto type = cast<MemRefType>(pool.getType());
    kvHeads = type.getDimSize(2);
    blockSize = type.getDimSize(3);
    headDim = llm::cachedHeadDim(type);
    int8 = llm::isInt8KvPool(type);
    bf16 = type.getElementType().isBF16();
    valuesInKeys = type.getDimSize(1) == 1;
  }

  /// The indices of the key row of `slot` in block `block`, KV head `head`
  /// (a pool of one row per token), or of its value row.
  SmallVector<Value> keyRow(KernelBuilder &kb, Value block, Value head, Value slot) const {
    return {block, kb.index(0), head, slot};
  }
  SmallVector<Value> valueRow(KernelBuilder &kb, Value block, Value head, Value slot) const {
    return {block, kb.index(valuesInKeys ? 0 : 1), head, slot};
  }

  /// Elements [d, d + lanes) of a value row (or of a key row of a pool of one
  /// row per token) as an f32 vector: the elements, or for int8 the codes
  /// (the caller applies the scale).
  Value chunk(KernelBuilder &kb, ValueRange row, int64_t d, VectorType type) const {
    return chunk(kb, row, kb.index(d), type);
  }
  Value chunk(KernelBuilder &kb, ValueRange row, Value d, VectorType type) const {
    SmallVector<Value> indices(row);
    indices.push_back(d);
    return widened(kb, pool, indices, type);
  }

  /// The scale of an int8 row; null for an f32 pool.
  Value scale(KernelBuilder &kb, ValueRange row) const {
    if (!int8) return nullptr;
    SmallVector<Value> indices(row);
    indices.push_back(kb.index(headDim));
    Value scales = scalesAt(kb, pool, indices, 1);
    return vector::ExtractOp::create(kb.builder(), kb.location(), scales, ArrayRef<int64_t>{0});
  }

  /// Writes a row of `width` elements (a value's head_dim, or fewer: the
  /// rest of the row is never read), element `d` of which is `read(d)`.
  void writeRow(KernelBuilder &kb, ValueRange row, int64_t width,
                function_ref<Value(Value)> read) const {
    auto at = [&](Value d) {
      SmallVector<Value> indices(row);
      indices.push_back(d);
      return indices;
    };
    write(kb, width, read, [&](Value d, Value element) { kb.store(element, pool, at(d)); },
          [&](Value scale) { storeScale(kb, scale, pool, at(kb.index(headDim))); });
  }

  /// The keys' tiles: the blocks with each [block_size, row] tile flat; null
  /// for a pool of one row per token, whose keys are rows.
  Value keyTiles(KernelBuilder &kb) const {
    if (valuesInKeys) return nullptr;
    SmallVector<ReassociationIndices> dims{{0}, {1}, {2}, {3, 4}};
    return memref::CollapseShapeOp::create(kb.builder(), kb.location(), pool, dims);
  }

  /// Feature d of the keys in slots [slot, slot + lanes) of a key tile
  /// (`tile` = block, 0, head of `tiles`) as an f32 vector: the keys,
  /// or for int8 their codes.
  Value keyLanes(KernelBuilder &kb, Value tiles, ValueRange tile, Value d, int64_t slot,
                 VectorType type) const {
    SmallVector<Value> indices(tile);
    indices.push_back(kb.addIndex(kb.mulIndex(d, kb.index(blockSize)), kb.index(slot)));
    return widened(kb, tiles, indices, type);
  }

  /// The scales of the int8 keys in slots [slot, slot + lanes); null for f32.
  Value keyScales(KernelBuilder &kb, Value tiles, ValueRange tile, int64_t slot,
                  int64_t lanes) const {
    if (!int8) return nullptr;
    SmallVector<Value> indices(tile);
    indices.push_back(kb.index(headDim * blockSize + slot * llm::kInt8KvScaleBytes));
    return scalesAt(kb, tiles, indices, lanes);
  }

  /// Writes the key in `slot` of block `block`, KV head `head` (a row of
  /// `tiles`'s tile, or a row of a pool of one row per token), feature `d`
  /// of which is `read(d)`.
  void writeKey(KernelBuilder &kb, Value tiles, Value block, Value head, Value slot,
                function_ref<Value(Value)> read) const {
    if (valuesInKeys) return writeRow(kb, keyRow(kb, block, head, slot), headDim, read);
    SmallVector<Value> tile{block, kb.index(0), head};
    auto at = [&](Value offset) {
      SmallVector<Value> indices(tile);
      indices.push_back(offset);
      return indices;
    };
    write(
        kb, headDim, read,
        [&](Value d, Value element) {
          kb.store(element, tiles, at(kb.addIndex(kb.mulIndex(d, kb.index(blockSize)), slot)));
        },
        [&](Value scale) {
          Value first = kb.index(headDim * blockSize);
          storeScale(kb, scale, tiles,
                     at(kb.addIndex(first, kb.mulIndex(slot, kb.index(llm::kInt8KvScaleBytes)))));
        });
  }

private:
  /// Elements of `memref` from `indices` on as an f32 vector of `type`
  /// (bf16 widened; int8 codes converted, not scaled).
  Value widened(KernelBuilder &kb, Value memref, ValueRange indices, VectorType type) const {
    OpBuilder &b = kb.builder();
    if (bf16) {
      Value loaded = vector::LoadOp::create(
          b, kb.location(), VectorType::get(type.getShape(), b.getBF16Type()), memref, indices);
      return widenBf16(b, kb.location(),
                       arith::BitcastOp::create(
                           b, kb.location(), VectorType::get(type.getShape(), b.getI16Type()),
                           loaded));
    }
    if (!int8) return vector::LoadOp::create(b, kb.location(), type, memref, indices);
    auto codes = VectorType::get(type.getShape(), b.getI8Type());
    Value loaded = vector::LoadOp::create(b, kb.location(), codes, memref, indices);
    return arith::SIToFPOp::create(b, kb.location(), type, loaded);
  }

  /// `count` f32 scales from the bytes at `indices`.
  static Value scalesAt(KernelBuilder &kb, Value memref, ValueRange indices, int64_t count) {
    OpBuilder &b = kb.builder();
    auto bytes = VectorType::get({count * llm::kInt8KvScaleBytes}, b.getI8Type());
    Value loaded = vector::LoadOp::create(b, kb.location(), bytes, memref, indices);
    return vector::BitCastOp::create(b, kb.location(), VectorType::get({count}, b.getF32Type()),
                                     loaded);
  }

  static void storeScale(KernelBuilder &kb, Value scale, Value memref, ValueRange indices) {
    OpBuilder &b = kb.builder();
    Value word = vector::BroadcastOp::create(b, kb.location(),
                                             VectorType::get({1}, b.getF32Type()), scale);
    auto bytes = VectorType::get({llm::kInt8KvScaleBytes}, b.getI8Type());
    vector::StoreOp::create(b, kb.location(),
                            vector::BitCastOp::create(b, kb.location(), bytes, word), memref,
                            indices);
  }

  /// Writes one cached row of `width` elements, element `d` of which is
  /// `read(d)`, through `store(d, element)`: as is, rounded for bf16, or for
  /// int8 quantised by the row's absolute maximum (llm.paged_kv_write says
  /// how), the scale through `storeRowScale`. `read` is called twice per
  /// element then: it must be cheap.
  void write(KernelBuilder &kb, int64_t width, function_ref<Value(Value)> read,
             function_ref<void(Value, Value)> store,
             function_ref<void(Value)> storeRowScale) const {
    Value zero = kb.index(0), last = kb.index(width);
    if (!int8) {
      kb.forEach(zero, last, [&](Value d) {
        Value element = read(d);
        store(d, bf16 ? roundToBf16(kb.builder(), kb.location(), element) : element);
      });
      return;
    }
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    Value absMax = kb.reduce(zero, last, kb.f32(0.0), [&](Value d, Value acc) {
      return kb.max(acc, math::AbsFOp::create(b, loc, read(d)));
    });
    Value scale = kb.div(absMax, kb.f32(127.0));
    Value nonZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, scale, kb.f32(0.0));
    // A row of zeros keeps scale 0 and codes 0; dividing by 1 makes them.
    Value divisor = arith::SelectOp::create(b, loc, nonZero, scale, kb.f32(1.0));
    kb.forEach(zero, last, [&](Value d) {
      Value rounded = math::RoundEvenOp::create(b, loc, kb.div(read(d), divisor));
      Value clamped = arith::MinimumFOp::create(
          b, loc, arith::MaximumFOp::create(b, loc, rounded, kb.f32(-127.0)), kb.f32(127.0));
      store(d, arith::FPToSIOp::create(b, loc, b.getI8Type(), clamped));
    });
    storeRowScale(scale);
  }
};

/// The online-softmax state of one query row for `heads` query heads (the
/// GQA groups of one or more KV heads), flat so that it can be a loop's
/// iter_args: every head's running max, then every head's running sum, then
/// every head's `chunks` accumulator vectors.
struct SoftmaxState {
  int64_t heads, chunks;
  VectorType vectorType;
  /// Every query head's sink logit (the op's, not only this state's heads),
  /// or empty.
  ArrayRef<float> sinks;

  /// Where head g's max, sum and accumulator vector c sit in a state.
  int64_t maxAt(int64_t g) const { return g; }
  int64_t sumAt(int64_t g) const { return heads + g; }
  int64_t accumulatorAt(int64_t g, int64_t c) const { return 2 * heads + g * chunks + c; }
  int64_t size() const { return 2 * heads + heads * chunks; }

  /// The state of no keys: max -inf, sum 0, accumulators 0.
  SmallVector<Value> empty(KernelBuilder &kb) const {
    OpBuilder &b = kb.builder();
    Value zeros = arith::ConstantOp::create(b, kb.location(), vectorType,
                                            DenseElementsAttr::get(vectorType, 0.0f));
    SmallVector<Value> state(heads, kb.f32(-std::numeric_limits<float>::infinity()));
    state.append(heads, kb.f32(0.0));
    state.append(heads * chunks, zeros);
    return state;
  }

  /// The state of two adjacent key ranges from each one's: rescaled to the
  /// larger max and added. Ops without fast-math flags, fma where a product
  /// is added: the bits are the same wherever this is emitted, which is what
  /// lets a row folded in one task equal one folded from stored parts.
  /// `right` must have seen a key; `left` may be empty (its max -inf then
  /// gives it weight 0, and the result is `right` bit for bit).
  SmallVector<Value> combine(KernelBuilder &kb, ArrayRef<Value> left, ArrayRef<Value> right) const {
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    SmallVector<Value> state(size());
    for (int64_t g = 0; g < heads; ++g) {
      Value both = arith::MaximumFOp::create(b, loc, left[maxAt(g)], right[maxAt(g)]);
      Value leftScale = kb.expPolynomial(arith::SubFOp::create(b, loc, left[maxAt(g)], both));
      Value rightScale = kb.expPolynomial(arith::SubFOp::create(b, loc, right[maxAt(g)], both));
      state[maxAt(g)] = both;
      state[sumAt(g)] = math::FmaOp::create(
          b, loc, left[sumAt(g)], leftScale,
          arith::MulFOp::create(b, loc, right[sumAt(g)], rightScale));
      Value leftSplat = vector::BroadcastOp::create(b, loc, vectorType, leftScale);
      Value rightSplat = vector::BroadcastOp::create(b, loc, vectorType, rightScale);
      for (int64_t c = 0; c < chunks; ++c) {
        int64_t at = accumulatorAt(g, c);
        state[at] = vector::FMAOp::create(
            b, loc, left[at], leftSplat, arith::MulFOp::create(b, loc, right[at], rightSplat));
      }
    }
    return state;
  }

  /// `running` folded with the state of blocks [begin, end) that `part`
  /// builds, or `running` as it is when the range is empty.
  SmallVector<Value> foldRange(KernelBuilder &kb, ValueRange running, Value begin, Value end,
                               function_ref<SmallVector<Value>()> part) const {
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    auto seen = scf::IfOp::create(
        b, loc, kb.lessThan(begin, end),
        [&](OpBuilder &, Location) {
          scf::YieldOp::create(b, loc, combine(kb, SmallVector<Value>(running), part()));
        },
        [&](OpBuilder &, Location) { scf::YieldOp::create(b, loc, running); });
    return SmallVector<Value>(seen.getResults());
  }

  /// Stores each head's attention output, accumulator / sum, at `column(g, c)`
  /// of `row`; the state's heads are the op's from `firstHead`. A head's sink
  /// joins its sum here, as one more key whose value is never added: with m
  /// the running max and M = max(m, sink), the output is
  /// acc * e^(m - M) / (sum * e^(m - M) + e^(sink - M)).
  void finish(KernelBuilder &kb, ArrayRef<Value> state, Value out, Value row, Value firstHead,
              function_ref<Value(int64_t, int64_t)> column) const {
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    Value sinkLogits;
    if (!sinks.empty()) {
      auto type = VectorType::get({static_cast<int64_t>(sinks.size())}, b.getF32Type());
      sinkLogits = arith::ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, sinks));
    }
    for (int64_t g = 0; g < heads; ++g) {
      Value sum = state[sumAt(g)], correction;
      if (sinkLogits) {
        Value sink = vector::ExtractOp::create(
            b, loc, sinkLogits, OpFoldResult(kb.addIndex(firstHead, kb.index(g))));
        Value max = arith::MaximumFOp::create(b, loc, state[maxAt(g)], sink);
        correction = kb.expPolynomial(arith::SubFOp::create(b, loc, state[maxAt(g)], max));
        sum = math::FmaOp::create(b, loc, sum, correction,
                                  kb.expPolynomial(arith::SubFOp::create(b, loc, sink, max)));
      }
      Value sumSplat = vector::BroadcastOp::create(b, loc, vectorType, sum);
      for (int64_t c = 0; c < chunks; ++c) {
        Value accumulator = state[accumulatorAt(g, c)];
        if (correction)
          accumulator = arith::MulFOp::create(
              b, loc, accumulator, vector::BroadcastOp::create(b, loc, vectorType, correction));
        Value normalised = arith::DivFOp::create(b, loc, accumulator, sumSplat);
        vector::StoreOp::create(b, loc, normalised, out, ValueRange{row, column(g, c)});
      }
    }
  }

  /// Floats one stored state takes per query head: its accumulator, its
  /// max, its sum.
  int64_t storedFloats() const { return chunks * vectorType.getNumElements() + 2; }

  /// Where the stored state of the `kvRun`th run of KV heads' key range
  /// `range` starts in a sequence's row of the parts: [run, range, head].
  Value partsColumn(KernelBuilder &kb, Value kvRun, Value range) const {
    return kb.mulIndex(kb.addIndex(kb.mulIndex(kvRun, kb.index(kSplits)), range),
                       kb.index(heads * storedFloats()));
  }

  /// Stores `state` at column `base` of `row` of `parts`, or loads it back.
  void store(KernelBuilder &kb, ArrayRef<Value> state, Value parts, Value row, Value base) const {
    OpBuilder &b = kb.builder();
    int64_t lanes = vectorType.getNumElements();
    for (int64_t g = 0; g < heads; ++g) {
      Value head = kb.addIndex(base, kb.index(g * storedFloats()));
      for (int64_t c = 0; c < chunks; ++c)
        vector::StoreOp::create(b, kb.location(), state[accumulatorAt(g, c)], parts,
                                ValueRange{row, kb.addIndex(head, kb.index(c * lanes))});
      kb.store(state[maxAt(g)], parts, {row, kb.addIndex(head, kb.index(chunks * lanes))});
      kb.store(state[sumAt(g)], parts, {row, kb.addIndex(head, kb.index(chunks * lanes + 1))});
    }
  }
  SmallVector<Value> load(KernelBuilder &kb, Value parts, Value row, Value base) const {
    OpBuilder &b = kb.builder();
    int64_t lanes = vectorType.getNumElements();
    SmallVector<Value> state(size());
    for (int64_t g = 0; g < heads; ++g) {
      Value head = kb.addIndex(base, kb.index(g * storedFloats()));
      for (int64_t c = 0; c < chunks; ++c)
        state[accumulatorAt(g, c)] = vector::LoadOp::create(
            b, kb.location(), vectorType, parts,
            ValueRange{row, kb.addIndex(head, kb.index(c * lanes))});
      state[maxAt(g)] = kb.load(parts, {row, kb.addIndex(head, kb.index(chunks * lanes))});
      state[sumAt(g)] = kb.load(parts, {row, kb.addIndex(head, kb.index(chunks * lanes + 1))});
    }
    return state;
  }
};

/// A row's visible keys, cut into kSplits ranges of whole blocks. The cut
/// depends on the row's own context only (never on the batch or on how many
/// rows its sequence has in the step), so a row's bits do not either.
struct KeyRanges {
  /// The row sees keys [firstKey, visible), in blocks [firstBlock, blocks).
  Value visible, blocks, firstKey, firstBlock, perRange;
  /// The ranges start at alignedFirst, firstBlock rounded down to a multiple
  /// of `align` blocks, perRange (a multiple of `align`) apart: the first is
  /// cut at firstBlock.
  Value alignedFirst;

  /// With `align` > 1 every range but the first starts at a multiple of
  /// `align` blocks, so a group of `align` blocks from such a multiple (the
  /// tile kernel's softmax step) never straddles two ranges.
  KeyRanges(KernelBuilder &kb, Value visible, int64_t blockSize, std::optional<int64_t> window,
            int64_t minBlocks, int64_t align = 1)
      : visible(visible) {
    Value zero = kb.index(0), size = kb.index(blockSize);
    blocks = kb.divIndex(kb.addIndex(visible, kb.subIndex(size, kb.index(1))), size);
    // A sliding window starts at the row's position - window + 1: the blocks
    // before the one holding that key are never read.
    firstKey = window ? kb.maxIndex(zero, kb.subIndex(visible, kb.index(*window))) : zero;
    firstBlock = kb.divIndex(firstKey, size);
    alignedFirst = align > 1 ? kb.mulIndex(kb.divIndex(firstBlock, kb.index(align)),
                                           kb.index(align))
                             : firstBlock;
    Value count = kb.subIndex(blocks, alignedFirst);
    Value even = kb.divIndex(kb.addIndex(count, kb.index(kSplits - 1)), kb.index(kSplits));
    perRange = kb.maxIndex(even, kb.index(minBlocks));
    if (align > 1)
      perRange = kb.mulIndex(kb.divIndex(kb.addIndex(perRange, kb.index(align - 1)),
                                         kb.index(align)),
                             kb.index(align));
  }
  /// Blocks [begin, end) of range `r`; empty when begin >= end.
  std::pair<Value, Value> range(KernelBuilder &kb, Value r) const {
    Value start = kb.addIndex(alignedFirst, kb.mulIndex(r, perRange));
    return {kb.maxIndex(start, firstBlock), kb.minIndex(blocks, kb.addIndex(start, perRange))};
  }
  /// Where the range after the first starts.
  Value secondStart(KernelBuilder &kb) const { return kb.addIndex(alignedFirst, perRange); }
};

/// What the tasks of one paged attention op are, as the vector kernel cuts
/// them: the tile kernel's tasks, their stored decode states and the
/// combine kernel that folds them are the same.
struct AttentionPlan {
  /// Query heads a KV head serves, the values' head_dim, tokens a block.
  int64_t group, valueDim, blockSize;
  /// A task's KV heads and how many such runs there are.
  int64_t taskKvHeads, kvRuns;
  /// The fewest blocks of a key range, and the multiple of blocks its
  /// starts are aligned to (KeyRanges).
  int64_t minRangeBlocks, rangeAlign;
  double scale;
  std::optional<int64_t> window;
  ArrayRef<float> sinks;
  /// The state of a run's query heads, whose stored form the combine kernel
  /// reads.
  const SoftmaxState &runSoftmax;
};

/// Blocks one softmax step of the tile kernel takes (64 keys of 16-token
/// blocks): the rows' maxima, sums and accumulators are rescaled once a
/// step, and its key ranges start at multiples of it.
constexpr int64_t kTileStepBlocks = 4;

/// Why `op` cannot take its products on AMX tiles (emitTileAttentionTasks),
/// or nothing when it can.
std::optional<std::string> whyNotTiles(llm::PagedAttentionOp op, const CachedRows &rows,
                                       int64_t group, int64_t valueDim);

/// Attention tasks [firstTask, lastTask) of the kernel with `params` (the
/// vector kernel's) with their products on AMX tiles.
void emitTileAttentionTasks(KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask,
                            const AttentionPlan &plan);

} // namespace llmc::cpu::attention

#endif // LLMC_PASSES_CODEGEN_CPU_CPUATTENTION_H
