//===- CpuPanelMatmul.cpp - f32 matmul over weights packed in panels ------===//
//
// The generated matmul for f32 weights that only matmuls read (and
// embeddings, for a tied table). llm-lower-to-cpu stores such a weight (f32,
// or bf16 widened as loaded) in panels of 48 output columns, each panel its
// columns for k = 0, 1, ... one after the other, so a kernel streams a
// panel front to back. A tile of 8 rows x 48 columns keeps 24 accumulators
// in registers; each k loads the panel's 3 vectors once and broadcasts each
// row's x[r, k] (an outer product), 24 fmas for 11 loads and no sums across
// lanes. Every output sums x[r, k] * w[k, c] over k = 0, 1, ... in one fma
// chain, whatever the tile, the rows and the threads: a row's result does
// not depend on the batch. A tied embedding table is stored once, in its
// logits head's panels, and the embedding gathers from them. Products of
// bf16 pairs (--bf16-activations) use panels of pairs of k: each step
// broadcasts a row's pair of rounded x and adds 32 products a vector with
// vdpbf16ps, one chain over the pairs in order; on a host with AMX the same
// panels are tiles of 16 pairs by 16 columns, and TDPBF16PS multiplies 16
// rows by them at once, for every row count, so that a row's sums still do
// not depend on the batch. Quantised weights keep the [out, in] rows of
// CpuMatmul.cpp's dot-product tiles.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace llmc::cpu {

namespace {

/// The tiles' rows, largest first: whole tiles of 8, then one tile of the
/// rows left over, so every row count below 8 reads the panel once (2 rows
/// as 1-row tiles read it twice: a 2-sequence decode step took longer than a
/// 4-sequence one).
constexpr int64_t kPanelTileRows[] = {8, 7, 6, 5, 4, 3, 2, 1};

/// An AMX product's tiles: kAmxRows rows of 2 x kAmxPairs bf16 (16 pairs of
/// k, a 64-byte tile row) times kAmxPairs pairs of 16 columns, into
/// kAmxRows x 16 f32 sums.
constexpr int64_t kAmxPairs = 16;

/// The vector sums of `rows` rows from `row` of `block`'s panel (`vectors`
/// vectors per part from column block.begin), handed to `finish` a vector
/// (one sum per part) at a time; the last vector has `lastLanes` outputs.
/// With `pairs`, `x` holds the rows rounded to bf16 (roundRowsToBf16) and
/// the panel pairs of k (packPanels): a step takes two of k, each vector
/// one vdpbf16ps with the row's pair broadcast.
void emitPanelTile(KernelBuilder &kb, Value x, Value panels, const OutputBlock &block, Value row,
                   int64_t rows, int64_t vectors, int64_t lastLanes, int64_t parts, int64_t k,
                   bool pairs, VectorFinish finish) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto vectorType = VectorType::get({kLanes}, b.getF32Type());
  auto pairsType = VectorType::get({2 * kLanes}, b.getBF16Type());
  // Panels of f32, f16 or bf16 bit patterns (i16) are widened as they are
  // loaded, or with pairs taken as they are.
  Type stored = cast<MemRefType>(panels.getType()).getElementType();
  int64_t perVector = pairs ? 2 * kLanes : kLanes;
  auto loadWeights = [&](Value at) -> Value {
    Value loaded = vector::LoadOp::create(b, loc, VectorType::get({perVector}, stored), panels,
                                          ValueRange{at});
    return pairs ? arith::BitcastOp::create(b, loc, pairsType, loaded)
                 : widenWeight(b, loc, loaded);
  };
  // x[r, k] in every lane, or the pair x[r, 2i], x[r, 2i + 1] in every pair.
  auto broadcastRow = [&](Value r, Value i) -> Value {
    if (!pairs)
      return vector::BroadcastOp::create(b, loc, vectorType, kb.load(x, {r, i}));
    Value pair = vector::LoadOp::create(b, loc, VectorType::get({2}, b.getI16Type()), x,
                                        ValueRange{r, kb.mulIndex(i, kb.index(2))});
    Value word = vector::ExtractOp::create(
        b, loc, vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getI32Type()), pair),
        ArrayRef<int64_t>{0});
    Value words = vector::BroadcastOp::create(b, loc, VectorType::get({kLanes}, b.getI32Type()),
                                              word);
    return vector::BitCastOp::create(b, loc, pairsType, words);
  };
  auto multiplyAdd = [&](Value xs, Value ws, Value acc) -> Value {
    return pairs ? dotPairs(b, loc, acc, xs, ws) : vector::FMAOp::create(b, loc, xs, ws, acc);
  };
  // A step's elements of the panel: every part's vectors for its k (pair).
  int64_t steps = pairs ? k / 2 : k;
  int64_t stride = parts * vectors * perVector;
  Value base = kb.mulIndex(block.begin, kb.index(k * parts));
  // The block's tiles prefetch the next panel into L2 between them, each
  // its share in step with its progress: were each tile to fetch all of it,
  // the block's first tile would ask DRAM for a panel in a tile's time and
  // wait on it, its others for nothing (4 tiles of 8 rows that did so ran
  // 15-20% slower in a standalone loop). Progress counts `prefetches` per
  // step per row; the share's element offset is progress x
  // elementsPerPrefetch / blockRows, the division a multiply by
  // 2^32 / blockRows and a shift.
  int64_t elementBytes = stored.getIntOrFloatBitWidth() / 8;
  int64_t prefetches = llvm::divideCeil(stride * elementBytes, 64);
  int64_t elementsPerPrefetch = stride / prefetches;
  Value blockRows = kb.subIndex(block.rowEnd, block.rowBegin);
  Value reciprocal = kb.divIndex(
      kb.addIndex(kb.index(int64_t(1) << 32), kb.subIndex(blockRows, kb.index(1))), blockRows);
  Value progressBefore =
      kb.mulIndex(kb.subIndex(row, block.rowBegin), kb.index(steps * prefetches));
  Value nextPanel = kb.addIndex(base, kb.index(steps * stride));
  Value last = kb.index(cast<MemRefType>(panels.getType()).getNumElements() - 1);
  auto slot = [&](int64_t r, int64_t part, int64_t v) { return (r * parts + part) * vectors + v; };
  Value zeros = arith::ConstantOp::create(b, loc, vectorType, DenseElementsAttr::get(vectorType, 0.0f));
  SmallVector<Value> acc(rows * parts * vectors, zeros);
  auto loop = scf::ForOp::create(
      b, loc, kb.index(0), kb.index(steps), kb.index(1), acc,
      [&](OpBuilder &nested, Location, Value i, ValueRange carried) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
        Value at = kb.addIndex(base, kb.mulIndex(i, kb.index(stride)));
        SmallVector<Value> ws;
        for (int64_t v = 0; v < parts * vectors; ++v)
          ws.push_back(loadWeights(kb.addIndex(at, kb.index(v * perVector))));
        for (int64_t p = 0; p < prefetches; ++p) {
          Value progress = kb.addIndex(
              progressBefore,
              kb.mulIndex(kb.addIndex(kb.mulIndex(i, kb.index(prefetches)), kb.index(p)),
                          kb.index(rows)));
          Value scaled =
              kb.mulIndex(kb.mulIndex(progress, kb.index(elementsPerPrefetch)), reciprocal);
          Value offset = arith::ShRUIOp::create(b, loc, scaled, kb.index(32));
          memref::PrefetchOp::create(b, loc, panels,
                                     ValueRange{kb.minIndex(kb.addIndex(nextPanel, offset), last)},
                                     /*isWrite=*/false, /*localityHint=*/2, /*isDataCache=*/true);
        }
        SmallVector<Value> next(carried.begin(), carried.end());
        for (int64_t r = 0; r < rows; ++r) {
          Value broadcast = broadcastRow(kb.addIndex(row, kb.index(r)), i);
          for (int64_t part = 0; part < parts; ++part)
            for (int64_t v = 0; v < vectors; ++v)
              next[slot(r, part, v)] =
                  multiplyAdd(broadcast, ws[part * vectors + v], next[slot(r, part, v)]);
        }
        scf::YieldOp::create(b, loc, next);
      });
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t v = 0; v < vectors; ++v) {
      SmallVector<Value> sums;
      for (int64_t part = 0; part < parts; ++part)
        sums.push_back(loop.getResult(slot(r, part, v)));
      finish(kb.addIndex(row, kb.index(r)), kb.addIndex(block.begin, kb.index(v * kLanes)), sums,
             v + 1 == vectors ? lastLanes : kLanes);
    }
}

/// The sums of rows [row, row + kAmxRows) of `block`'s panel (as
/// emitPanelTile) through AMX: per 16 pairs of k, one tile load of the
/// rows' 32 rounded values and, per accumulator tile (16 columns of a
/// part), one of the panel's 16 pairs of its columns (the panel's layout,
/// a row every `parts * vectors` vectors) and a TDPBF16PS, software-
/// pipelined. The loop over k is unrolled: a tile held across a loop's
/// blocks is not lowered. The
/// accumulators go through `sums` (kAmxRows x every tile's 16 columns) to
/// `finish`, for the rows before block.rowEnd; the rows past it are the
/// rounded input's padding (lowerMatmul makes it whole tiles of zeros).
void emitAmxPanelTile(KernelBuilder &kb, Value x, Value panels, Value sums,
                      const OutputBlock &block, Value row, int64_t vectors, int64_t lastLanes,
                      int64_t parts, int64_t k, VectorFinish finish) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto accumulatorType = amx::TileType::get({kAmxRows, kLanes}, b.getF32Type());
  auto operandType = amx::TileType::get({kAmxRows, 2 * kAmxPairs}, b.getBF16Type());
  int64_t tiles = parts * vectors, pairStride = tiles * 2 * kLanes;
  Value base = kb.mulIndex(block.begin, kb.index(k * parts));
  Value stride = kb.index(pairStride);
  SmallVector<Value> acc;
  for (int64_t t = 0; t < tiles; ++t)
    acc.push_back(amx::TileZeroOp::create(b, loc, accumulatorType));
  auto loadRows = [&](int64_t step) {
    return amx::TileLoadOp::create(b, loc, operandType, x,
                                   ValueRange{row, kb.index(2 * kAmxPairs * step)});
  };
  auto loadWeights = [&](int64_t step, int64_t t) {
    Value at = kb.addIndex(base, kb.index(step * kAmxPairs * pairStride + t * 2 * kLanes));
    return amx::TileLoadOp::create(b, loc, operandType, panels, ValueRange{at}, stride);
  };
  // Software-pipelined: each product is followed by the next step's load
  // into the tile it frees, so loads overlap products (tile registers are not
  // renamed): the rows' two steps, the weights' one, the accumulators: 8.
  int64_t steps = k / 2 / kAmxPairs;
  Value rows = loadRows(0);
  SmallVector<Value> weights;
  for (int64_t t = 0; t < tiles; ++t) weights.push_back(loadWeights(0, t));
  for (int64_t step = 0; step < steps; ++step) {
    bool more = step + 1 < steps;
    Value nextRows = more ? loadRows(step + 1) : Value();
    for (int64_t t = 0; t < tiles; ++t) {
      acc[t] = amx::TileMulFOp::create(b, loc, accumulatorType, rows, weights[t], acc[t]);
      if (more) weights[t] = loadWeights(step + 1, t);
    }
    rows = nextRows;
  }
  for (int64_t t = 0; t < tiles; ++t)
    amx::TileStoreOp::create(b, loc, sums, ValueRange{kb.index(0), kb.index(t * kLanes)}, acc[t]);
  auto vectorType = VectorType::get({kLanes}, b.getF32Type());
  Value rowsLeft = kb.minIndex(kb.subIndex(block.rowEnd, row), kb.index(kAmxRows));
  kb.forEach(kb.index(0), rowsLeft, [&](Value r) {
    for (int64_t v = 0; v < vectors; ++v) {
      SmallVector<Value> partSums;
      for (int64_t part = 0; part < parts; ++part)
        partSums.push_back(vector::LoadOp::create(
            b, loc, vectorType, sums, ValueRange{r, kb.index((part * vectors + v) * kLanes)}));
      finish(kb.addIndex(row, r), kb.addIndex(block.begin, kb.index(v * kLanes)), partSums,
             v + 1 == vectors ? lastLanes : kLanes);
    }
  });
}

/// out[rows of `block`, panel at block.begin] through tiles of kPanelTileRows
/// rows, the panel `vectors` vectors wide, `lastLanes` of the last. A tile
/// takes the whole panel: 8 x 3 vectors (24 accumulators and 3 weight
/// vectors of the 32 registers), or 8 x 1 x 2 parts when gated (4 x 3 x 2
/// reads twice the panel bytes per fma and ran at half the speed). With
/// `amxSums` (emitAmxPanelTile's scratch), AMX tiles of kAmxRows rows
/// instead, the last one's rows past the block padding.
void buildPanelBlock(KernelBuilder &kb, Value x, Value panels, Value amxSums,
                     const OutputBlock &block, int64_t vectors, int64_t lastLanes, int64_t parts,
                     int64_t k, bool pairs, VectorFinish finish) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value row = block.rowBegin;
  if (amxSums) {
    kb.forEach(row, block.rowEnd, [&](Value tileRow) {
      emitAmxPanelTile(kb, x, panels, amxSums, block, tileRow, vectors, lastLanes, parts, k,
                       finish);
    }, kAmxRows);
    return;
  }
  for (int64_t rows : kPanelTileRows) {
    // Whole tiles of `rows` from `row`; the next size starts where they end.
    Value count = kb.divIndex(kb.subIndex(block.rowEnd, row), kb.index(rows));
    Value end = kb.addIndex(row, kb.mulIndex(count, kb.index(rows)));
    scf::ForOp::create(b, loc, row, end, kb.index(rows), ValueRange{},
                       [&](OpBuilder &nested, Location, Value tileRow, ValueRange) {
                         OpBuilder::InsertionGuard guard(b);
                         b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
                         emitPanelTile(kb, x, panels, block, tileRow, rows, vectors, lastLanes,
                                       parts, k, pairs, finish);
                         scf::YieldOp::create(b, loc);
                       });
    row = end;
  }
}

} // namespace

std::vector<float> packPanels(const float *weight, int64_t out, int64_t in, bool outIn,
                              int64_t parts, bool pairs) {
  assert((!pairs || in % 2 == 0) && "pairs of k need an even k");
  int64_t columns = out / parts;
  std::vector<float> panels(llvm::alignTo(columns, kLanes) * in * parts, 0.0f);
  auto at = [&](int64_t o, int64_t i) { return outIn ? weight[o * in + i] : weight[i * out + o]; };
  int64_t panel = panelColumns(parts);
  for (int64_t begin = 0; begin < columns; begin += panel) {
    int64_t width = std::min(panel, columns - begin);
    int64_t padded = llvm::alignTo(width, kLanes);
    float *start = panels.data() + begin * in * parts;
    // Element (i, part, c): k = i's row of the part's columns, or with pairs
    // the pair's row, column c's two values side by side.
    auto offset = [&](int64_t i, int64_t part, int64_t c) {
      if (!pairs) return (i * parts + part) * padded + c;
      return ((i / 2 * parts + part) * padded + c) * 2 + i % 2;
    };
    for (int64_t i = 0; i < in; ++i)
      for (int64_t part = 0; part < parts; ++part)
        for (int64_t c = 0; c < width; ++c)
          start[offset(i, part, c)] = at(part * columns + begin + c, i);
  }
  return panels;
}

LogicalResult lowerPanelEmbedding(StepLowering &step, llm::EmbeddingOp op, Value panels, Value ids,
                                  Value output) {
  auto tableType = cast<ShapedType>(op.getTable().getType());
  int64_t vocab = tableType.getDimSize(op.getTransposeTable() ? 1 : 0);
  int64_t hidden = cast<MemRefType>(output.getType()).getDimSize(1);
  SmallVector<Value> args{panels, ids, output};
  step.callKernel(op.getLoc(), "panel_embedding", kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value out = params[2];
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      // Column `id` of its panel: the panel's first column, its width (the
      // last one's padded to whole vectors), then one value per k.
      Value id = kb.toIndex(kb.load(params[1], {row}));
      int64_t panel = panelColumns(1);
      Value begin = kb.mulIndex(kb.divIndex(id, kb.index(panel)), kb.index(panel));
      Value rest = kb.subIndex(kb.index(vocab), begin);
      Value padded = kb.mulIndex(kb.divIndex(kb.addIndex(rest, kb.index(kLanes - 1)), kb.index(kLanes)),
                                 kb.index(kLanes));
      Value width = kb.minIndex(padded, kb.index(panel));
      Value at = kb.addIndex(kb.mulIndex(begin, kb.index(hidden)), kb.subIndex(id, begin));
      kb.forEach(kb.index(0), kb.index(hidden), [&](Value col) {
        Value value = kb.load(params[0], {kb.addIndex(at, kb.mulIndex(col, width))});
        kb.store(widenWeight(kb.builder(), kb.location(), value), out, {row, col});
      });
    });
  });
  return success();
}

void generatePanelMatmul(StepLowering &step, Location loc, Value input, const MatmulWeight &weight,
                         Value output, int64_t k, const Epilogue &epilogue, const std::string &key) {
  int64_t parts = epilogue.gated ? 2 : 1;
  int64_t columns = cast<MemRefType>(output.getType()).getDimSize(1);
  int64_t panelWidth = panelColumns(parts), panelVectors = panelWidth / kLanes;
  int64_t lastColumns = columns % panelWidth;
  int64_t lastVectors = llvm::divideCeil(lastColumns, kLanes);
  int64_t lastLanes = lastColumns % kLanes ? lastColumns % kLanes : kLanes;
  SmallVector<Value> buffers{input, output, weight.values};
  llvm::append_range(buffers, epilogueOperands(epilogue));
  runOverColumns(step, loc, buffers, columns, panelWidth, key,
                 [&](KernelBuilder &kb, ValueRange params, const OutputBlock &block) {
    auto epilogueParams = EpilogueParams::in(epilogue, params.drop_front(3));
    auto finish = [&](Value row, Value col, ArrayRef<Value> sums, int64_t lanes) {
      storeOutputVector(kb, epilogue, epilogueParams, params[1], row, col, sums, columns, lanes);
    };
    Value amxSums;
    if (weight.amxTiles)
      amxSums = memref::AllocaOp::create(
          kb.builder(), loc,
          MemRefType::get({kAmxRows, parts * panelWidth}, kb.builder().getF32Type()));
    auto panel = [&](int64_t vectors, int64_t lanes) {
      buildPanelBlock(kb, params[0], params[2], amxSums, block, vectors, lanes, parts, k,
                      weight.bf16Products, finish);
    };
    if (lastVectors == 0) return panel(panelVectors, kLanes);
    // Only the last panel is narrower.
    OpBuilder &b = kb.builder();
    Value whole = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        kb.subIndex(block.end, block.begin),
                                        kb.index(panelWidth));
    scf::IfOp::create(
        b, loc, whole,
        [&](OpBuilder &nested, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
          panel(panelVectors, kLanes);
          scf::YieldOp::create(b, loc);
        },
        [&](OpBuilder &nested, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
          panel(lastVectors, lastLanes);
          scf::YieldOp::create(b, loc);
        });
  });
}

} // namespace llmc::cpu
