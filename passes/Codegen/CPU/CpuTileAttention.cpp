//===- CpuTileAttention.cpp - paged attention's products on AMX tiles ------===//
//
// With bf16-products=amx, paged attention multiplies on AMX tiles, as the
// matmuls do. A tile's 16 rows are (position, query head) pairs of one KV
// head's GQA group, rounded to bf16: the tile times a block's 16 keys
// (TDPBF16PS, 32 features a step) gives the rows' 16 x 16 scores; the rows'
// online-softmax step (rows as lanes where they meet) turns them into
// weights rounded to bf16, and the weights times the block's values give the
// rows' block sums, which join their f32 accumulators. A block's keys and
// values are repacked into the tiles' layout (pairs of k side by side:
// features for the keys, slots for the values) once for a pass of several
// tiles, so the pool keeps the vector kernel's layout.
//
// A row's arithmetic does not depend on the other rows of its tile (each
// output of a tile product is its own row's and column's), so a decode row,
// a tile of its group's rows, gets the bits it would get in a prefill. Its
// keys are cut into the same ranges (KeyRanges) and the ranges' states
// folded by the same combine as the vector kernel's: a decode row's ranges
// are tasks whose states the combine kernel folds, a prefill tile folds each
// row's range state where the row's next range starts.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuAttention.h"

#include "mlir/Dialect/AMX/AMXDialect.h"

#include <numeric>

namespace llmc::cpu::attention {

namespace {
/// Query rows a tile takes: an AMX tile's rows.
constexpr int64_t kTileRows = kAmxRows;
/// Tiles of a prefill that share a pass over the blocks: each block's keys
/// and values are read and repacked once for all of them.
constexpr int64_t kPassTiles = 4;
/// Rows of a pass: every tile's, tile t's row r at t x kTileRows + r.
constexpr int64_t kPassRows = kPassTiles * kTileRows;
/// Features of k one A tile holds: 32 bf16, a 64-byte tile row.
constexpr int64_t kTileK = 32;
/// The key slots a tile product covers: one block.
constexpr int64_t kTileSlots = 16;

/// The bits of the 16 cached elements at `indices` of `memref` as bf16 (a
/// vector of i16): a bf16 pool's as they are, an f32 pool's rounded to
/// nearest even, as the matmuls round their activations.
Value bf16Bits(KernelBuilder &kb, bool bf16, Value memref, ValueRange indices) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value loaded =
      bf16 ? vector::LoadOp::create(b, loc, VectorType::get({kLanes}, b.getBF16Type()), memref,
                                    indices)
                 .getResult()
           : roundToBf16(b, loc,
                         vector::LoadOp::create(b, loc, VectorType::get({kLanes}, b.getF32Type()),
                                                memref, indices));
  return arith::BitcastOp::create(b, loc, VectorType::get({kLanes}, b.getI16Type()), loaded);
}

/// Stores two vectors of bf16 bits with their lanes interleaved (even's lane
/// i, then odd's): a pair of k side by side, as a B tile's row holds it.
void storePairs(KernelBuilder &kb, Value even, Value odd, Value memref, ValueRange indices) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value pairs = vector::InterleaveOp::create(b, loc, even, odd);
  vector::StoreOp::create(
      b, loc,
      arith::BitcastOp::create(b, loc, VectorType::get({2 * kLanes}, b.getBF16Type()), pairs),
      memref, indices);
}

/// One attention task's tiles and scratch: the kernel body of one op. A
/// tile's rows are (position, query head) pairs, position r's heads of the
/// GQA group side by side (row r x group + g), so a decode row's group
/// shares one product and a block's keys and values serve every row.
class TileAttention {
public:
  TileAttention(KernelBuilder &kb, ValueRange params, const AttentionPlan &plan)
      : kb(kb), b(kb.builder()), loc(kb.location()), plan(plan), rows(params[1]),
        query(params[0]), blockTables(params[2]), out(params[5]), parts(params[6]),
        tiles(rows.keyTiles(kb)), chunks(plan.valueDim / kLanes),
        head{1, chunks, VectorType::get({kLanes}, b.getF32Type()), plan.sinks} {
    Type bf16 = b.getBF16Type(), f32 = b.getF32Type();
    auto scratch = [&](ArrayRef<int64_t> shape, Type element) {
      return memref::AllocaOp::create(b, loc, MemRefType::get(shape, element)).getResult();
    };
    queries = scratch({kPassRows, rows.headDim}, bf16);
    keyPairs = scratch({rows.headDim / 2, 2 * kTileSlots}, bf16);
    valuePairs = scratch({kTileSlots / 2, 2 * plan.valueDim}, bf16);
    scores = scratch({kTileRows, kTileSlots}, f32);
    weights = scratch({kTileRows, kTileSlots}, bf16);
    products = scratch({kTileRows, plan.valueDim}, f32);
    corrections = scratch({kTileRows}, f32);
    for (RowStates *states : {&running, &folded}) {
      states->max = scratch({kPassRows}, f32);
      states->sum = scratch({kPassRows}, f32);
      states->acc = scratch({kPassRows, plan.valueDim}, f32);
    }
    for (Value *column :
         {&rowFirstKey, &rowVisible, &rowFirstBlock, &rowBlocks, &rowPerRange, &rowNextRange})
      *column = scratch({kPassRows}, b.getIndexType());
    // Rows past a tile's own multiply zeros until a tile fills them.
    Value zeros = arith::BitcastOp::create(b, loc, VectorType::get({kLanes}, bf16),
                                           vectorOf(b.getI16Type(), kLanes, 0));
    kb.forEach(kb.index(0), kb.index(kPassRows), [&](Value r) {
      for (int64_t d = 0; d < rows.headDim; d += kLanes)
        vector::StoreOp::create(b, loc, zeros, queries, ValueRange{r, kb.index(d)});
    });
  }

  /// Positions a tile takes: the group's heads of each.
  int64_t tilePositions() const { return kTileRows / plan.group; }
  /// Positions a pass takes.
  int64_t passPositions() const { return kPassTiles * tilePositions(); }

  /// The state of decode row `row` of sequence `seq` (which sees
  /// `contextLen` keys) over blocks [begin, end) of its range `split`, for
  /// the KV heads of run `kvRun`, stored where the combine kernel reads it.
  void decodeRange(Value seq, Value row, Value contextLen, Value kvRun, Value split, Value begin,
                   Value end) {
    Value tileRows = kb.index(plan.group);
    setRows([&](Value r) { return kb.lessThan(r, tileRows); }, [&](Value) { return contextLen; });
    Value firstKvHead = kb.mulIndex(kvRun, kb.index(plan.taskKvHeads));
    Value base = plan.runSoftmax.partsColumn(kb, kvRun, split);
    kb.forEach(kb.index(0), kb.index(plan.taskKvHeads), [&](Value h) {
      Value kvHead = kb.addIndex(firstKvHead, h);
      loadQueries(row, kb.index(1), kvHead);
      reset(running);
      blockLoop(seq, begin, end, kb.index(1), kvHead, /*foldRanges=*/false);
      // Query head h x group + g of the run, where SoftmaxState::store puts
      // the run's heads.
      Value headBase =
          kb.addIndex(base, kb.mulIndex(h, kb.index(plan.group * head.storedFloats())));
      for (int64_t g = 0; g < plan.group; ++g) {
        SmallVector<Value> state = head.foldRange(kb, head.empty(kb), begin, end, [&] {
          return load(running, kb.index(g));
        });
        head.store(kb, state, parts, seq, kb.addIndex(headBase, kb.index(g * head.storedFloats())));
      }
    });
  }

  /// Positions [pass x passPositions(), ...) of a prefill of rows [first,
  /// last) of sequence `seq`, the first at position `startPosition`, for KV
  /// head `kvHead`: their outputs.
  void prefillPass(Value seq, Value first, Value last, Value startPosition, Value pass,
                   Value kvHead) {
    Value firstRow = kb.addIndex(first, kb.mulIndex(pass, kb.index(passPositions())));
    Value positions = kb.minIndex(kb.subIndex(last, firstRow), kb.index(passPositions()));
    Value tileCount = kb.divIndex(kb.addIndex(positions, kb.index(tilePositions() - 1)),
                                  kb.index(tilePositions()));
    Value offset = kb.addIndex(startPosition, kb.subIndex(firstRow, first));
    setRows(
        [&](Value r) {
          Value inTile = kb.remIndex(r, kb.index(kTileRows));
          return arith::AndIOp::create(b, loc,
                                       kb.lessThan(inTile, kb.index(tilePositions() * plan.group)),
                                       kb.lessThan(positionOf(r), positions))
              .getResult();
        },
        [&](Value r) { return kb.addIndex(kb.addIndex(offset, positionOf(r)), kb.index(1)); });
    loadQueries(firstRow, positions, kvHead);
    reset(running);
    reset(folded);
    // Rows are consecutive positions: the first starts at the smallest
    // block, the last ends at the largest.
    Value begin = kb.load(rowFirstBlock, {kb.index(0)});
    Value visibleLast = kb.addIndex(offset, positions);
    Value end = kb.divIndex(kb.addIndex(visibleLast, kb.index(rows.blockSize - 1)),
                            kb.index(rows.blockSize));
    blockLoop(seq, begin, end, tileCount, kvHead, /*foldRanges=*/true);
    Value group = kb.index(plan.group);
    kb.forEach(kb.index(0), kb.mulIndex(tileCount, kb.index(kTileRows)), [&](Value r) {
      Value inTile = kb.remIndex(r, kb.index(kTileRows));
      kb.ifThen(kb.lessThan(kb.load(rowFirstKey, {r}), kb.load(rowVisible, {r})), [&] {
        foldRow(r);
        Value queryHead = kb.addIndex(kb.mulIndex(kvHead, group), kb.remIndex(inTile, group));
        head.finish(kb, load(folded, r), out, kb.addIndex(firstRow, positionOf(r)), queryHead,
                    [&](int64_t, int64_t c) {
                      return kb.addIndex(kb.mulIndex(queryHead, kb.index(plan.valueDim)),
                                         kb.index(c * kLanes));
                    });
      });
    });
  }

private:
  /// Every tile row's online-softmax state: max and sum [rows],
  /// accumulators [rows, value_dim].
  struct RowStates {
    Value max, sum, acc;
  };

  Value vectorOf(Type element, int64_t lanes, double value) {
    auto type = VectorType::get({lanes}, element);
    TypedAttr attr = isa<FloatType>(element)
                         ? DenseElementsAttr::get(type, b.getFloatAttr(element, value))
                         : DenseElementsAttr::get(type, b.getIntegerAttr(element, int64_t(value)));
    return arith::ConstantOp::create(b, loc, type, attr);
  }

  /// The position in its pass of row r: tile r / 16's positions, the
  /// group's heads of each side by side.
  Value positionOf(Value r) {
    Value tile = kb.divIndex(r, kb.index(kTileRows));
    Value inTile = kb.remIndex(r, kb.index(kTileRows));
    return kb.addIndex(kb.mulIndex(tile, kb.index(tilePositions())),
                       kb.divIndex(inTile, kb.index(plan.group)));
  }

  /// Sets the rows for which `used(r)` holds by `visibleOf(r)`, the keys
  /// row r sees: [firstKey, visible), in blocks [firstBlock, blocks), cut
  /// into ranges of perRange blocks. The other rows see no key and read no
  /// block.
  void setRows(function_ref<Value(Value)> used, function_ref<Value(Value)> visibleOf) {
    kb.forEach(kb.index(0), kb.index(kPassRows), [&](Value r) {
      auto rowUsed = scf::IfOp::create(b, loc, used(r), /*withElse=*/true);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&rowUsed.getThenRegion().front());
      Value visible = visibleOf(r);
      KeyRanges ranges(kb, visible, rows.blockSize, plan.window, plan.minRangeBlocks);
      kb.store(ranges.firstKey, rowFirstKey, {r});
      kb.store(visible, rowVisible, {r});
      kb.store(ranges.firstBlock, rowFirstBlock, {r});
      kb.store(ranges.blocks, rowBlocks, {r});
      kb.store(ranges.perRange, rowPerRange, {r});
      kb.store(kb.addIndex(ranges.firstBlock, ranges.perRange), rowNextRange, {r});
      b.setInsertionPointToStart(&rowUsed.getElseRegion().front());
      for (Value column : {rowFirstKey, rowVisible, rowFirstBlock, rowBlocks, rowNextRange})
        kb.store(kb.index(0), column, {r});
    });
  }

  /// The group's query heads of rows [firstRow, firstRow + count), rounded
  /// to bf16, into their tiles' rows.
  void loadQueries(Value firstRow, Value count, Value kvHead) {
    auto f32s = VectorType::get({kLanes}, b.getF32Type());
    Value groupColumn = kb.mulIndex(kvHead, kb.index(plan.group * rows.headDim));
    kb.forEach(kb.index(0), count, [&](Value position) {
      for (int64_t g = 0; g < plan.group; ++g)
        for (int64_t d = 0; d < rows.headDim; d += kLanes) {
          Value column = kb.addIndex(groupColumn, kb.index(g * rows.headDim + d));
          Value loaded = vector::LoadOp::create(
              b, loc, f32s, query, ValueRange{kb.addIndex(firstRow, position), column});
          // Position p is tile p / P's (P: tilePositions()), its row
          // (p % P) x group + g.
          Value tile = kb.divIndex(position, kb.index(tilePositions()));
          Value inTile = kb.remIndex(position, kb.index(tilePositions()));
          Value tileRow = kb.addIndex(
              kb.mulIndex(tile, kb.index(kTileRows)),
              kb.addIndex(kb.mulIndex(inTile, kb.index(plan.group)), kb.index(g)));
          vector::StoreOp::create(b, loc, roundToBf16(b, loc, loaded), queries,
                                  ValueRange{tileRow, kb.index(d)});
        }
    });
  }

  /// Every row's state: no keys seen.
  void reset(const RowStates &states) {
    kb.forEach(kb.index(0), kb.index(kPassRows), [&](Value r) { store(head.empty(kb), states, r); });
  }

  /// Row r's state as SoftmaxState (one head) holds it.
  SmallVector<Value> load(const RowStates &states, Value r) {
    SmallVector<Value> state{kb.load(states.max, {r}), kb.load(states.sum, {r})};
    for (int64_t c = 0; c < chunks; ++c)
      state.push_back(vector::LoadOp::create(b, loc, head.vectorType, states.acc,
                                             ValueRange{r, kb.index(c * kLanes)}));
    return state;
  }
  void store(ArrayRef<Value> state, const RowStates &states, Value r) {
    kb.store(state[head.maxAt(0)], states.max, {r});
    kb.store(state[head.sumAt(0)], states.sum, {r});
    for (int64_t c = 0; c < chunks; ++c)
      vector::StoreOp::create(b, loc, state[head.accumulatorAt(0, c)], states.acc,
                              ValueRange{r, kb.index(c * kLanes)});
  }

  /// Row r's running range state folded into its folded state, the running
  /// one emptied: where the row's next range starts.
  void foldRow(Value r) {
    store(head.combine(kb, load(folded, r), load(running, r)), folded, r);
    store(head.empty(kb), running, r);
  }

  /// A block's keys and values in the tiles' layout: keyPairs row i holds
  /// features 2i and 2i + 1 of every slot side by side, valuePairs row j
  /// slots 2j and 2j + 1 of every feature.
  void repack(Value block, Value kvHead) {
    Value zero = kb.index(0), one = kb.index(1);
    kb.forEach(zero, kb.index(rows.headDim / 2), [&](Value i) {
      Value even = kb.mulIndex(kb.mulIndex(i, kb.index(2)), kb.index(rows.blockSize));
      Value odd = kb.addIndex(even, kb.index(rows.blockSize));
      storePairs(kb, bf16Bits(kb, rows.bf16, tiles, {block, zero, kvHead, even}),
                 bf16Bits(kb, rows.bf16, tiles, {block, zero, kvHead, odd}), keyPairs,
                 {i, zero});
    });
    kb.forEach(zero, kb.index(kTileSlots / 2), [&](Value j) {
      Value even = kb.mulIndex(j, kb.index(2)), odd = kb.addIndex(even, one);
      for (int64_t d = 0; d < plan.valueDim; d += kLanes)
        storePairs(kb, bf16Bits(kb, rows.bf16, rows.pool, {block, one, kvHead, even, kb.index(d)}),
                   bf16Bits(kb, rows.bf16, rows.pool, {block, one, kvHead, odd, kb.index(d)}),
                   valuePairs, {j, kb.index(2 * d)});
    });
  }

  /// Whether row r reads block `block`: one of its visible keys is there.
  Value reads(Value r, Value block) {
    Value from = kb.load(rowFirstBlock, {r}), to = kb.load(rowBlocks, {r});
    return arith::AndIOp::create(
        b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, from, block),
        kb.lessThan(block, to));
  }

  /// Whether `block` starts row r's next range (one it reads).
  Value startsRange(Value r, Value block) {
    return arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, block,
                              kb.load(rowNextRange, {r})),
        kb.lessThan(block, kb.load(rowBlocks, {r})));
  }

  /// Blocks [begin, end) of sequence `seq` for the pass's first
  /// `tileCount` tiles and KV head `kvHead`: each block repacked once, then
  /// each tile's products and softmax step. With `foldRanges`, a row's range
  /// state is folded where its next range starts.
  void blockLoop(Value seq, Value begin, Value end, Value tileCount, Value kvHead,
                 bool foldRanges) {
    auto sumTile = amx::TileType::get({kTileRows, kTileSlots}, b.getF32Type());
    auto operandTile = amx::TileType::get({kTileRows, kTileK}, b.getBF16Type());
    auto weightTile = amx::TileType::get({kTileRows, kTileSlots}, b.getBF16Type());
    auto valueTile = amx::TileType::get({kTileSlots / 2, 2 * kLanes}, b.getBF16Type());
    Value zero = kb.index(0), tileRows = kb.index(kTileRows);
    kb.forEach(begin, end, [&](Value blockIndex) {
      Value block = kb.toIndex(kb.load(blockTables, {seq, blockIndex}));
      repack(block, kvHead);
      kb.forEach(zero, tileCount, [&](Value tile) {
        Value firstRow = kb.mulIndex(tile, tileRows);
        Value sums = amx::TileZeroOp::create(b, loc, sumTile);
        for (int64_t step = 0; step < rows.headDim / kTileK; ++step) {
          Value q = amx::TileLoadOp::create(b, loc, operandTile, queries,
                                            ValueRange{firstRow, kb.index(step * kTileK)});
          Value k = amx::TileLoadOp::create(b, loc, operandTile, keyPairs,
                                            ValueRange{kb.index(step * kTileK / 2), zero});
          sums = amx::TileMulFOp::create(b, loc, sumTile, q, k, sums);
        }
        amx::TileStoreOp::create(b, loc, scores, ValueRange{zero, zero}, sums);
        if (foldRanges)
          kb.forEach(firstRow, kb.addIndex(firstRow, tileRows), [&](Value r) {
            kb.ifThen(startsRange(r, blockIndex), [&] {
              foldRow(r);
              kb.store(kb.addIndex(kb.load(rowNextRange, {r}), kb.load(rowPerRange, {r})),
                       rowNextRange, {r});
            });
          });
        softmaxStep(firstRow, blockIndex);
        Value p = amx::TileLoadOp::create(b, loc, weightTile, weights, ValueRange{zero, zero});
        for (int64_t c = 0; c < chunks; ++c) {
          Value v = amx::TileLoadOp::create(b, loc, valueTile, valuePairs,
                                            ValueRange{zero, kb.index(2 * c * kLanes)});
          Value blockSums = amx::TileMulFOp::create(b, loc, sumTile, p, v,
                                                    amx::TileZeroOp::create(b, loc, sumTile));
          amx::TileStoreOp::create(b, loc, products, ValueRange{zero, kb.index(c * kLanes)},
                                   blockSums);
        }
        kb.forEach(zero, tileRows, [&](Value r) {
          Value row = kb.addIndex(firstRow, r);
          kb.ifThen(reads(row, blockIndex), [&] {
            Value correction =
                vector::BroadcastOp::create(b, loc, head.vectorType, kb.load(corrections, {r}));
            for (int64_t c = 0; c < chunks; ++c) {
              SmallVector<Value, 2> at{row, kb.index(c * kLanes)};
              Value acc = vector::LoadOp::create(b, loc, head.vectorType, running.acc, at);
              Value blockSum = vector::LoadOp::create(b, loc, head.vectorType, products,
                                                      ValueRange{r, kb.index(c * kLanes)});
              vector::StoreOp::create(
                  b, loc, vector::FMAOp::create(b, loc, acc, correction, blockSum), running.acc,
                  at);
            }
          });
        });
      });
    });
  }

  /// Every row's online-softmax step over the block's scores, rows as
  /// lanes where they meet: each row's visible slots, their max (the rows'
  /// maxima reduced together), its weights rounded to bf16 (the second
  /// product's rows, and what the sums add), the running max and sum
  /// rescaled; the accumulators' rescale waits in `corrections`. A row that
  /// sees none of the block's keys keeps its state: weights 0, rescale 1.
  void softmaxStep(Value firstRow, Value blockIndex) {
    auto scoreType = VectorType::get({kTileSlots}, b.getF32Type());
    auto laneType = VectorType::get({kTileSlots}, b.getI32Type());
    auto lanesOf = [&](Value index) {
      return vector::BroadcastOp::create(
          b, loc, laneType, arith::IndexCastOp::create(b, loc, b.getI32Type(), index));
    };
    auto splat = [&](Value scalar) {
      return vector::BroadcastOp::create(b, loc, scoreType, scalar).getResult();
    };
    SmallVector<int32_t> slots(kTileSlots);
    std::iota(slots.begin(), slots.end(), 0);
    Value keys = arith::AddIOp::create(
        b, loc,
        arith::ConstantOp::create(b, loc, laneType,
                                  DenseElementsAttr::get(laneType, ArrayRef<int32_t>(slots))),
        lanesOf(kb.mulIndex(blockIndex, kb.index(rows.blockSize))));
    Value negInf = kb.f32(-std::numeric_limits<float>::infinity());
    Value negInfs = splat(negInf), zeros = splat(kb.f32(0.0));
    SmallVector<Value> scaled, visible, masked;
    for (int64_t r = 0; r < kTileRows; ++r) {
      Value row = kb.addIndex(firstRow, kb.index(r));
      visible.push_back(arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, keys,
                                lanesOf(kb.load(rowFirstKey, {row}))),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, keys,
                                lanesOf(kb.load(rowVisible, {row})))));
      scaled.push_back(arith::MulFOp::create(
          b, loc,
          vector::LoadOp::create(b, loc, scoreType, scores, ValueRange{kb.index(r), kb.index(0)}),
          splat(kb.f32(plan.scale))));
      masked.push_back(arith::SelectOp::create(b, loc, visible[r], scaled[r], negInfs));
    }
    auto maximum = [&](Value x, Value y) { return arith::MaximumFOp::create(b, loc, x, y); };
    auto add = [&](Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); };
    Value blockMax = reduceLanesPacked(b, loc, masked, maximum);
    Value oldMax = vector::LoadOp::create(b, loc, scoreType, running.max, ValueRange{firstRow});
    Value newMax = maximum(oldMax, blockMax);
    SmallVector<Value> kept;
    for (int64_t r = 0; r < kTileRows; ++r) {
      Value rowMax = vector::ExtractOp::create(b, loc, newMax, ArrayRef<int64_t>{r});
      Value exps = kb.expPolynomial(arith::SubFOp::create(b, loc, scaled[r], splat(rowMax)));
      Value rounded =
          roundToBf16(b, loc, arith::SelectOp::create(b, loc, visible[r], exps, zeros));
      vector::StoreOp::create(b, loc, rounded, weights, ValueRange{kb.index(r), kb.index(0)});
      kept.push_back(widenBf16(
          b, loc, arith::BitcastOp::create(b, loc, VectorType::get({kTileSlots}, b.getI16Type()),
                                           rounded)));
    }
    Value blockSum = reduceLanesPacked(b, loc, kept, add);
    Value seen = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, blockMax, negInfs);
    Value correction = arith::SelectOp::create(
        b, loc, seen, kb.expPolynomial(arith::SubFOp::create(b, loc, oldMax, newMax)),
        splat(kb.f32(1.0)));
    Value oldSum = vector::LoadOp::create(b, loc, scoreType, running.sum, ValueRange{firstRow});
    vector::StoreOp::create(b, loc, correction, corrections, ValueRange{kb.index(0)});
    vector::StoreOp::create(b, loc, arith::SelectOp::create(b, loc, seen, newMax, oldMax),
                            running.max, ValueRange{firstRow});
    vector::StoreOp::create(
        b, loc, add(arith::MulFOp::create(b, loc, oldSum, correction), blockSum), running.sum,
        ValueRange{firstRow});
  }

  KernelBuilder &kb;
  OpBuilder &b;
  Location loc;
  const AttentionPlan &plan;
  CachedRows rows;
  Value query, blockTables, out, parts, tiles;
  int64_t chunks;
  /// One query head's state, the form each row's is folded and finished in.
  SoftmaxState head;
  Value queries, keyPairs, valuePairs, scores, weights, products, corrections;
  RowStates running, folded;
  /// Per row: its first visible key and the last + 1, its first block and
  /// the last + 1, its ranges' length in blocks, where its next one starts.
  Value rowFirstKey, rowVisible, rowFirstBlock, rowBlocks, rowPerRange, rowNextRange;
};
} // namespace

std::optional<std::string> whyNotTiles(llm::PagedAttentionOp op, const CachedRows &rows,
                                       int64_t group, int64_t valueDim) {
  if (rows.int8) return "its KV cache is int8";
  if (rows.valuesInKeys) return "its cache holds one row a token";
  if (rows.blockSize != kTileSlots) return "its KV blocks are not 16 tokens";
  if (rows.headDim % kTileK) return "its head_dim is not a multiple of 32";
  if (valueDim % kLanes) return "its value head_dim is not a multiple of 16";
  if (group > kTileRows) return "a KV head serves more than 16 query heads";
  if (op.getSoftcap()) return "it caps its scores";
  if (op.getAlibiSlopes()) return "it adds linear biases (ALiBi)";
  return std::nullopt;
}

void emitTileAttentionTasks(KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask,
                            const AttentionPlan &plan) {
  Value contextLens = params[3], cuSeqlens = params[4];
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  TileAttention attention(kb, params, plan);
  Value one = kb.index(1), splits = kb.index(kSplits);
  // Tasks as the vector kernel's: (sequence, run of KV heads, split).
  kb.forEach(firstTask, lastTask, [&](Value task) {
    Value seq = kb.divIndex(task, kb.index(plan.kvRuns * kSplits));
    Value kvRun = kb.remIndex(kb.divIndex(task, splits), kb.index(plan.kvRuns));
    Value split = kb.remIndex(task, splits);
    Value first = kb.toIndex(kb.load(cuSeqlens, {seq}));
    Value last = kb.toIndex(kb.load(cuSeqlens, {kb.addIndex(seq, one)}));
    Value contextLen = kb.toIndex(kb.load(contextLens, {seq}));
    Value decode =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, kb.subIndex(last, first), one);
    // A decode row sees its whole context: the split's range of it.
    kb.ifThen(decode, [&] {
      KeyRanges ranges(kb, contextLen, plan.blockSize, plan.window, plan.minRangeBlocks);
      auto [begin, end] = ranges.range(kb, split);
      attention.decodeRange(seq, first, contextLen, kvRun, split, begin, end);
    });
    // A prefill's passes, every kSplits-th from the split's.
    Value prefill =
        arith::XOrIOp::create(b, loc, decode, arith::ConstantIntOp::create(b, loc, 1, 1));
    kb.ifThen(prefill, [&] {
      Value startPosition = kb.subIndex(contextLen, kb.subIndex(last, first));
      int64_t positions = attention.passPositions();
      Value passCount = kb.divIndex(kb.addIndex(kb.subIndex(last, first), kb.index(positions - 1)),
                                    kb.index(positions));
      Value firstKvHead = kb.mulIndex(kvRun, kb.index(plan.taskKvHeads));
      kb.forEach(kb.index(0), kb.index(plan.taskKvHeads), [&](Value h) {
        kb.forEach(split, passCount, [&](Value pass) {
          attention.prefillPass(seq, first, last, startPosition, pass, kb.addIndex(firstKvHead, h));
        }, kSplits);
      });
    });
  });
}

} // namespace llmc::cpu::attention
