//===- CpuTileAttention.cpp - paged attention's products on AMX tiles ------===//
//
// With bf16-products=amx, paged attention multiplies on AMX tiles, as the
// matmuls do. A tile's 16 rows are (position, query head) pairs of one KV
// head's GQA group, rounded to bf16. The keys come in softmax steps of 4
// blocks: the tile times each block's 16 keys (TDPBF16PS, 32 features a
// product) gives the rows' 16 x 64 scores; the rows' online-softmax step
// (rows as lanes where they meet) turns them into weights rounded to bf16,
// and the weights times the step's values (32 keys a product, accumulated
// in the tile) give the rows' step sums, which join their f32 accumulators.
// A step's keys and values are repacked into the tiles' layout (pairs of k
// side by side: features for the keys, slots for the values) once for a
// pass of several tiles, so the pool keeps the vector kernel's layout.
//
// A row's arithmetic does not depend on the other rows of its tile (each
// output of a tile product is its own row's and column's), so a decode row,
// a tile of its group's rows, gets the bits it would get in a prefill. Its
// keys are cut into the same ranges (KeyRanges, starting at multiples of a
// step, so that no step straddles two) and the ranges' states
// folded by the same combine as the vector kernel's: a decode row's ranges
// are tasks whose states the combine kernel folds, a prefill tile folds each
// row's range state where the row's next range starts.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuAttention.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

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
/// The key slots a score tile covers: one block.
constexpr int64_t kTileSlots = 16;
/// The key slots of a softmax step: kTileStepBlocks blocks.
constexpr int64_t kStepSlots = kTileStepBlocks * kTileSlots;

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
    keyPairs = scratch({kTileStepBlocks * rows.headDim / 2, 2 * kTileSlots}, bf16);
    valuePairs = scratch({kStepSlots / 2, 2 * plan.valueDim}, bf16);
    scores = scratch({kTileRows, kStepSlots}, f32);
    weights = scratch({kTileRows, kStepSlots}, bf16);
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
    tileLastFirstKey = scratch({kPassTiles}, b.getIndexType());
    tileFirstEnd = scratch({kPassTiles}, b.getIndexType());
    // Rows past a tile's own multiply zeros until a tile fills them.
    Value zeros = arith::BitcastOp::create(b, loc, VectorType::get({kLanes}, bf16),
                                           vectorOf(b.getI16Type(), kLanes, 0));
    kb.forEach(kb.index(0), kb.index(kPassRows), [&](Value r) {
      for (int64_t d = 0; d < rows.headDim; d += kLanes)
        vector::StoreOp::create(b, loc, zeros, queries, ValueRange{r, kb.index(d)});
    });
    // Weights of rows no softmax step computes (blockLoop's usedRows) are 0.
    kb.forEach(kb.index(0), kb.index(kTileRows), [&](Value r) {
      for (int64_t slot = 0; slot < kStepSlots; slot += kLanes)
        vector::StoreOp::create(b, loc, zeros, weights, ValueRange{r, kb.index(slot)});
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
      blockLoop(seq, begin, end, kb.index(1), plan.group, kvHead, /*foldRanges=*/false);
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
    blockLoop(seq, begin, end, tileCount, tilePositions() * plan.group, kvHead,
              /*foldRanges=*/true);
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
      KeyRanges ranges(kb, visible, rows.blockSize, plan.window, plan.minRangeBlocks,
                       plan.rangeAlign);
      kb.store(ranges.firstKey, rowFirstKey, {r});
      kb.store(visible, rowVisible, {r});
      kb.store(ranges.firstBlock, rowFirstBlock, {r});
      kb.store(ranges.blocks, rowBlocks, {r});
      kb.store(ranges.perRange, rowPerRange, {r});
      kb.store(ranges.secondStart(kb), rowNextRange, {r});
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

  /// Block `block`'s keys and values in the tiles' layout, as block `sub`
  /// of the step: keyPairs row sub x head_dim / 2 + i holds features 2i and
  /// 2i + 1 of every slot side by side, valuePairs row sub x 8 + j slots 2j
  /// and 2j + 1 of every feature.
  void repack(int64_t sub, Value block, Value kvHead) {
    Value zero = kb.index(0), one = kb.index(1);
    Value firstKeyRow = kb.index(sub * rows.headDim / 2);
    kb.forEach(zero, kb.index(rows.headDim / 2), [&](Value i) {
      Value even = kb.mulIndex(kb.mulIndex(i, kb.index(2)), kb.index(rows.blockSize));
      Value odd = kb.addIndex(even, kb.index(rows.blockSize));
      storePairs(kb, bf16Bits(kb, rows.bf16, tiles, {block, zero, kvHead, even}),
                 bf16Bits(kb, rows.bf16, tiles, {block, zero, kvHead, odd}), keyPairs,
                 {kb.addIndex(firstKeyRow, i), zero});
    });
    kb.forEach(zero, kb.index(kTileSlots / 2), [&](Value j) {
      Value even = kb.mulIndex(j, kb.index(2)), odd = kb.addIndex(even, one);
      Value pairRow = kb.addIndex(kb.index(sub * kTileSlots / 2), j);
      for (int64_t d = 0; d < plan.valueDim; d += kLanes)
        storePairs(kb, bf16Bits(kb, rows.bf16, rows.pool, {block, one, kvHead, even, kb.index(d)}),
                   bf16Bits(kb, rows.bf16, rows.pool, {block, one, kvHead, odd, kb.index(d)}),
                   valuePairs, {pairRow, kb.index(2 * d)});
    });
  }

  /// Zero values for block `sub` of the step, one the sequence does not
  /// hold or the step's rows do not read: its weights are 0, and 0 times
  /// whatever the scratch held (a NaN) would not be. Its keys' scores are
  /// masked.
  void zeroValues(int64_t sub) {
    Value zeros = arith::BitcastOp::create(b, loc, VectorType::get({2 * kLanes}, b.getBF16Type()),
                                           vectorOf(b.getI16Type(), 2 * kLanes, 0));
    kb.forEach(kb.index(0), kb.index(kTileSlots / 2), [&](Value j) {
      Value pairRow = kb.addIndex(kb.index(sub * kTileSlots / 2), j);
      for (int64_t d = 0; d < plan.valueDim; d += kLanes)
        vector::StoreOp::create(b, loc, zeros, valuePairs, ValueRange{pairRow, kb.index(2 * d)});
    });
  }

  /// Whether row r reads a block of the step from `stepStart`: one of its
  /// visible keys is there.
  Value reads(Value r, Value stepStart) {
    Value from = kb.load(rowFirstBlock, {r}), to = kb.load(rowBlocks, {r});
    Value stepEnd = kb.addIndex(stepStart, kb.index(kTileStepBlocks));
    return arith::AndIOp::create(b, loc, kb.lessThan(from, stepEnd),
                                 kb.lessThan(stepStart, to));
  }

  /// Whether `block` (a step's first) starts row r's next range (one it
  /// reads).
  Value startsRange(Value r, Value block) {
    return arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, block,
                              kb.load(rowNextRange, {r})),
        kb.lessThan(block, kb.load(rowBlocks, {r})));
  }

  /// Blocks [begin, end) of sequence `seq` for the pass's first
  /// `tileCount` tiles and KV head `kvHead`, in steps of kTileStepBlocks
  /// blocks from a multiple of it (a range starts at one, KeyRanges): each
  /// step's blocks repacked once, then each tile's products and softmax
  /// step. Only a tile's first `usedRows` rows can be used (a decode's
  /// group, a prefill tile's positions times the group): the others' softmax
  /// is not computed, and their weights stay 0. With `foldRanges`, a row's
  /// range state is folded where its next range starts.
  void blockLoop(Value seq, Value begin, Value end, Value tileCount, int64_t usedRows,
                 Value kvHead, bool foldRanges) {
    auto sumTile = amx::TileType::get({kTileRows, kTileSlots}, b.getF32Type());
    auto operandTile = amx::TileType::get({kTileRows, kTileK}, b.getBF16Type());
    auto valueTile = amx::TileType::get({kTileK / 2, 2 * kLanes}, b.getBF16Type());
    Value zero = kb.index(0), tileRows = kb.index(kTileRows), used = kb.index(usedRows);
    Value stepBlocks = kb.index(kTileStepBlocks);
    Value firstStep = kb.mulIndex(kb.divIndex(begin, stepBlocks), stepBlocks);
    // Per tile, the keys every used row sees: from the last first key to
    // the first end.
    kb.forEach(zero, tileCount, [&](Value tile) {
      Value firstRow = kb.mulIndex(tile, tileRows);
      Value lastFirstKey = kb.load(rowFirstKey, {firstRow});
      Value firstEnd = kb.load(rowVisible, {firstRow});
      for (int64_t r = 1; r < usedRows; ++r) {
        Value row = kb.addIndex(firstRow, kb.index(r));
        lastFirstKey = kb.maxIndex(lastFirstKey, kb.load(rowFirstKey, {row}));
        firstEnd = kb.minIndex(firstEnd, kb.load(rowVisible, {row}));
      }
      kb.store(lastFirstKey, tileLastFirstKey, {tile});
      kb.store(firstEnd, tileFirstEnd, {tile});
    });
    kb.forEach(firstStep, end, [&](Value stepStart) {
      for (int64_t sub = 0; sub < kTileStepBlocks; ++sub) {
        Value blockIndex = kb.addIndex(stepStart, kb.index(sub));
        Value held = arith::AndIOp::create(
            b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, begin, blockIndex),
            kb.lessThan(blockIndex, end));
        auto ifHeld = scf::IfOp::create(b, loc, held, /*withElse=*/true);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&ifHeld.getThenRegion().front());
        repack(sub, kb.toIndex(kb.load(blockTables, {seq, blockIndex})), kvHead);
        b.setInsertionPointToStart(&ifHeld.getElseRegion().front());
        zeroValues(sub);
      }
      kb.forEach(zero, tileCount, [&](Value tile) {
        Value firstRow = kb.mulIndex(tile, tileRows);
        // The step's scores, a tile per block; each query tile loaded once.
        SmallVector<Value> sums;
        for (int64_t sub = 0; sub < kTileStepBlocks; ++sub)
          sums.push_back(amx::TileZeroOp::create(b, loc, sumTile));
        for (int64_t k = 0; k < rows.headDim / kTileK; ++k) {
          Value q = amx::TileLoadOp::create(b, loc, operandTile, queries,
                                            ValueRange{firstRow, kb.index(k * kTileK)});
          for (int64_t sub = 0; sub < kTileStepBlocks; ++sub) {
            Value keys = amx::TileLoadOp::create(
                b, loc, operandTile, keyPairs,
                ValueRange{kb.index(sub * rows.headDim / 2 + k * kTileK / 2), zero});
            sums[sub] = amx::TileMulFOp::create(b, loc, sumTile, q, keys, sums[sub]);
          }
        }
        for (int64_t sub = 0; sub < kTileStepBlocks; ++sub)
          amx::TileStoreOp::create(b, loc, scores, ValueRange{zero, kb.index(sub * kTileSlots)},
                                   sums[sub]);
        if (foldRanges)
          kb.forEach(firstRow, kb.addIndex(firstRow, used), [&](Value r) {
            kb.ifThen(startsRange(r, stepStart), [&] {
              foldRow(r);
              kb.store(kb.addIndex(kb.load(rowNextRange, {r}), kb.load(rowPerRange, {r})),
                       rowNextRange, {r});
            });
          });
        // Every used row sees the whole step (most steps of a long
        // context): no masks.
        Value stepKey = kb.mulIndex(stepStart, kb.index(rows.blockSize));
        Value whole = arith::AndIOp::create(
            b, loc,
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                  kb.load(tileLastFirstKey, {tile}), stepKey),
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle,
                                  kb.addIndex(stepKey, kb.index(kStepSlots)),
                                  kb.load(tileFirstEnd, {tile})));
        auto ifWhole = scf::IfOp::create(b, loc, whole, /*withElse=*/true);
        {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(&ifWhole.getThenRegion().front());
          softmaxStep(firstRow, stepStart, usedRows, /*masked=*/false);
          b.setInsertionPointToStart(&ifWhole.getElseRegion().front());
          softmaxStep(firstRow, stepStart, usedRows, /*masked=*/true);
        }
        // The step's sums: its weights, 32 keys a tile, times the values.
        SmallVector<Value> p;
        for (int64_t half = 0; half < kStepSlots / kTileK; ++half)
          p.push_back(amx::TileLoadOp::create(b, loc, operandTile, weights,
                                              ValueRange{zero, kb.index(half * kTileK)}));
        for (int64_t c = 0; c < chunks; ++c) {
          Value stepSums = amx::TileZeroOp::create(b, loc, sumTile);
          for (int64_t half = 0; half < kStepSlots / kTileK; ++half) {
            Value v = amx::TileLoadOp::create(
                b, loc, valueTile, valuePairs,
                ValueRange{kb.index(half * kTileK / 2), kb.index(2 * c * kLanes)});
            stepSums = amx::TileMulFOp::create(b, loc, sumTile, p[half], v, stepSums);
          }
          amx::TileStoreOp::create(b, loc, products, ValueRange{zero, kb.index(c * kLanes)},
                                   stepSums);
        }
        kb.forEach(zero, used, [&](Value r) {
          Value row = kb.addIndex(firstRow, r);
          kb.ifThen(reads(row, stepStart), [&] {
            Value correction =
                vector::BroadcastOp::create(b, loc, head.vectorType, kb.load(corrections, {r}));
            for (int64_t c = 0; c < chunks; ++c) {
              SmallVector<Value, 2> at{row, kb.index(c * kLanes)};
              Value acc = vector::LoadOp::create(b, loc, head.vectorType, running.acc, at);
              Value stepSum = vector::LoadOp::create(b, loc, head.vectorType, products,
                                                     ValueRange{r, kb.index(c * kLanes)});
              vector::StoreOp::create(
                  b, loc, vector::FMAOp::create(b, loc, acc, correction, stepSum), running.acc,
                  at);
            }
          });
        });
      });
    }, kTileStepBlocks);
  }

  /// Every row's online-softmax step over the scores of the step from block
  /// `stepStart`, rows as lanes where they meet: each row's visible slots,
  /// their max (each row's 4 vectors, then the rows' maxima reduced
  /// together, before the scale: it is positive), its weights rounded to bf16
  /// (the second product's rows, and what the sums add), the running max and
  /// sum rescaled; the accumulators' rescale waits in `corrections`. A row
  /// that sees none of the step's keys keeps its state: weights 0, rescale 1;
  /// rows from `usedRows` on are skipped (their weights stay 0). Without
  /// `masked` every used row sees every key of the step. The scores are read
  /// twice, for the max and for the weights, rather than held in registers.
  void softmaxStep(Value firstRow, Value stepStart, int64_t usedRows, bool masked) {
    auto scoreType = VectorType::get({kTileSlots}, b.getF32Type());
    auto laneType = VectorType::get({kTileSlots}, b.getI32Type());
    auto lanesOf = [&](Value index) {
      return vector::BroadcastOp::create(
          b, loc, laneType, arith::IndexCastOp::create(b, loc, b.getI32Type(), index));
    };
    auto splat = [&](Value scalar) {
      return vector::BroadcastOp::create(b, loc, scoreType, scalar).getResult();
    };
    SmallVector<Value> keys;
    if (masked) {
      Value firstKey = lanesOf(kb.mulIndex(stepStart, kb.index(rows.blockSize)));
      for (int64_t sub = 0; sub < kTileStepBlocks; ++sub) {
        SmallVector<int32_t> slots(kTileSlots);
        std::iota(slots.begin(), slots.end(), int32_t(sub * kTileSlots));
        keys.push_back(arith::AddIOp::create(
            b, loc,
            arith::ConstantOp::create(b, loc, laneType,
                                      DenseElementsAttr::get(laneType, ArrayRef<int32_t>(slots))),
            firstKey));
      }
    }
    Value negInfs = splat(kb.f32(-std::numeric_limits<float>::infinity()));
    Value zeros = splat(kb.f32(0.0)), scale = splat(kb.f32(plan.scale));
    // Row r's scores of block `sub` of the step, and (masked) which it sees:
    // keys [seenFrom, seenTo).
    auto rowBound = [&](int64_t r, Value column) {
      return lanesOf(kb.load(column, {kb.addIndex(firstRow, kb.index(r))}));
    };
    auto rowScores = [&](int64_t r, int64_t sub) -> Value {
      return vector::LoadOp::create(b, loc, scoreType, scores,
                                    ValueRange{kb.index(r), kb.index(sub * kTileSlots)});
    };
    auto visibleOf = [&](int64_t sub, Value seenFrom, Value seenTo) -> Value {
      return arith::AndIOp::create(
          b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, keys[sub], seenFrom),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, keys[sub], seenTo));
    };
    auto maximum = [&](Value x, Value y) { return arith::MaximumFOp::create(b, loc, x, y); };
    auto add = [&](Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); };
    SmallVector<Value> rowMaxima(kTileRows, negInfs);
    for (int64_t r = 0; r < usedRows; ++r) {
      Value seenFrom, seenTo;
      if (masked) seenFrom = rowBound(r, rowFirstKey), seenTo = rowBound(r, rowVisible);
      for (int64_t sub = 0; sub < kTileStepBlocks; ++sub) {
        Value score = rowScores(r, sub);
        if (masked)
          score = arith::SelectOp::create(b, loc, visibleOf(sub, seenFrom, seenTo), score, negInfs);
        rowMaxima[r] = maximum(rowMaxima[r], score);
      }
    }
    Value stepMax = arith::MulFOp::create(b, loc, reduceLanesPacked(b, loc, rowMaxima, maximum),
                                          scale);
    Value oldMax = vector::LoadOp::create(b, loc, scoreType, running.max, ValueRange{firstRow});
    Value newMax = maximum(oldMax, stepMax);
    // Weights exp(score x scale - max), two blocks rounded to bf16 by one
    // vcvtne2ps2bf16; the row's sum adds them as rounded, pair by pair.
    auto wordType = VectorType::get({kTileSlots}, b.getI32Type());
    Value highHalves = arith::ConstantOp::create(
        b, loc, wordType, DenseElementsAttr::get(wordType, b.getI32IntegerAttr(int32_t(0xffff0000))));
    Value sixteen = arith::ConstantOp::create(
        b, loc, wordType, DenseElementsAttr::get(wordType, b.getI32IntegerAttr(16)));
    SmallVector<Value> kept(kTileRows, zeros);
    for (int64_t r = 0; r < usedRows; ++r) {
      Value negatedMax = splat(arith::NegFOp::create(
          b, loc, vector::ExtractOp::create(b, loc, newMax, ArrayRef<int64_t>{r})));
      Value seenFrom, seenTo;
      if (masked) seenFrom = rowBound(r, rowFirstKey), seenTo = rowBound(r, rowVisible);
      SmallVector<Value, kTileStepBlocks> exps;
      for (int64_t sub = 0; sub < kTileStepBlocks; ++sub) {
        Value e = kb.expPolynomial(math::FmaOp::create(b, loc, rowScores(r, sub), scale, negatedMax));
        if (masked) e = arith::SelectOp::create(b, loc, visibleOf(sub, seenFrom, seenTo), e, zeros);
        exps.push_back(e);
      }
      for (int64_t sub = 0; sub < kTileStepBlocks; sub += 2) {
        Value rounded = roundPairToBf16(b, loc, exps[sub], exps[sub + 1]);
        vector::StoreOp::create(b, loc, rounded, weights,
                                ValueRange{kb.index(r), kb.index(sub * kTileSlots)});
        Value words = vector::BitCastOp::create(b, loc, wordType, rounded);
        Value even = arith::BitcastOp::create(b, loc, scoreType,
                                              arith::ShLIOp::create(b, loc, words, sixteen));
        Value odd = arith::BitcastOp::create(b, loc, scoreType,
                                             arith::AndIOp::create(b, loc, words, highHalves));
        kept[r] = add(kept[r], add(even, odd));
      }
    }
    Value stepSum = reduceLanesPacked(b, loc, kept, add);
    Value seen = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, stepMax, negInfs);
    Value correction = arith::SelectOp::create(
        b, loc, seen, kb.expPolynomial(arith::SubFOp::create(b, loc, oldMax, newMax)),
        splat(kb.f32(1.0)));
    Value oldSum = vector::LoadOp::create(b, loc, scoreType, running.sum, ValueRange{firstRow});
    vector::StoreOp::create(b, loc, correction, corrections, ValueRange{kb.index(0)});
    vector::StoreOp::create(b, loc, arith::SelectOp::create(b, loc, seen, newMax, oldMax),
                            running.max, ValueRange{firstRow});
    vector::StoreOp::create(
        b, loc, add(arith::MulFOp::create(b, loc, oldSum, correction), stepSum), running.sum,
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
  /// Per tile of the pass: the keys every used row sees, [lastFirstKey,
  /// firstEnd).
  Value tileLastFirstKey, tileFirstEnd;
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
  if (!(op.getScale().convertToFloat() > 0)) return "its scale is not positive";
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
      KeyRanges ranges(kb, contextLen, plan.blockSize, plan.window, plan.minRangeBlocks,
                       plan.rangeAlign);
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
