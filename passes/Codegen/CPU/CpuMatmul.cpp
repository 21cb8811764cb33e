//===- CpuMatmul.cpp - matrix products: BLAS or generated loops -----------===//
//
// The one place that decides how `x * W` runs on the CPU. `generated` (the
// default) emits register-tiled vector loops: outer products over a panel
// weight (CpuPanelMatmul.cpp), else the dot-product tiles below over [out,
// in] rows. Both sum each output in one order whatever the batch, where
// OpenBLAS 0.3.21's small-matrix kernels round a row differently depending
// on how many rows a call has, which would make a sequence's logits depend
// on the batch. `blas` calls the runtime's sgemm through the host API table
// (the runtime owns the BLAS threads). bench/RESULTS.md has the figures.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace llmc::cpu {

namespace {

/// Rows of one task: a decode batch of up to 32 sequences is one task per
/// column range, as is reading the weights once needs; more rows split.
constexpr int64_t kRowsPerTask = 32;

/// Input bytes a block of rows keeps in a core's L2 (2 MB on the CPUs we
/// measured) while a weight's panels pass over it, with room for the panels.
constexpr int64_t kRowBlockBytes = 512 * 1024;

/// Row chunks (kRowsPerTask rows) of one block of rows over `input` [rows,
/// k]: as many as kRowBlockBytes holds, at least one.
int64_t rowChunksPerBlock(MemRefType input) {
  int64_t k = input.getRank() == 2 ? input.getDimSize(1) : ShapedType::kDynamic;
  if (ShapedType::isDynamic(k)) return 8;
  int64_t rowBytes = k * std::max<int64_t>(1, input.getElementTypeBitWidth() / 8);
  return std::max<int64_t>(1, kRowBlockBytes / (rowBytes * kRowsPerTask));
}

/// api->sgemm(api->context, m, n, k, a, k, w, ldw, transposed, out, n).
void callSgemm(StepLowering &step, Location loc, Value input, Value weight, bool transposed,
               Value output, int64_t n, int64_t k) {
  OpBuilder &b = step.b;
  auto ptr = llvmPointerType(b);
  auto i32 = b.getI32Type(), i64 = b.getI64Type();
  Value rows = arith::IndexCastOp::create(b, loc, i64, memref::DimOp::create(b, loc, input, 0));
  Value bTransposed = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(transposed));
  auto sgemmType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                               {ptr, i64, i64, i64, ptr, i64, ptr, i64, i32, ptr, i64});
  LLVM::CallOp::create(
      b, loc, sgemmType,
      ValueRange{hostApiField(step, loc, kApiSgemm), hostApiField(step, loc, kApiContext), rows,
                 constantI64(b, loc, n), constantI64(b, loc, k), pointerTo(b, loc, input),
                 constantI64(b, loc, k), pointerTo(b, loc, weight),
                 constantI64(b, loc, transposed ? k : n), bTransposed, pointerTo(b, loc, output),
                 constantI64(b, loc, n)});
}

/// A register tile: this many rows times this many columns share each load.
constexpr int64_t kTileRows = 4;
constexpr int64_t kTileColumns = 4;

/// The lanes of `vector` summed as a fixed tree (halves added, then halves of
/// those...). The adds carry no fast-math flags, so LLVM keeps the order.
Value sumLanes(OpBuilder &b, Location loc, Value vector) {
  int64_t lanes = cast<VectorType>(vector.getType()).getNumElements();
  for (int64_t width = lanes / 2; width >= 1; width /= 2) {
    auto half = [&](int64_t offset) -> Value {
      return vector::ExtractStridedSliceOp::create(b, loc, vector, ArrayRef<int64_t>{offset},
                                                   ArrayRef<int64_t>{width}, ArrayRef<int64_t>{1});
    };
    vector = arith::AddFOp::create(b, loc, half(0), half(width));
  }
  return vector::ExtractOp::create(b, loc, vector, ArrayRef<int64_t>{0});
}

} // namespace

Value reduceLanesPacked(OpBuilder &b, Location loc, ArrayRef<Value> vectors,
                        function_ref<Value(Value, Value)> combine) {
  int64_t lanes = cast<VectorType>(vectors.front().getType()).getNumElements();
  assert(vectors.size() <= size_t(lanes) && "at most a lane per vector");
  SmallVector<Value> level(vectors);
  for (int64_t width = lanes / 2; width >= 1; width /= 2) {
    // Each vector holds groups of 2 * width lanes, one per output.
    int64_t groups = lanes / (2 * width);
    auto halves = [&](int64_t offset) {
      SmallVector<int64_t> mask;
      for (int64_t source = 0; source < 2; ++source)
        for (int64_t group = 0; group < groups; ++group)
          for (int64_t lane = 0; lane < width; ++lane)
            mask.push_back(source * lanes + group * 2 * width + offset + lane);
      return mask;
    };
    SmallVector<Value> next;
    for (size_t i = 0; i < level.size(); i += 2) {
      Value left = level[i], right = i + 1 < level.size() ? level[i + 1] : level[i];
      Value low = vector::ShuffleOp::create(b, loc, left, right, halves(0));
      Value high = vector::ShuffleOp::create(b, loc, left, right, halves(width));
      next.push_back(combine(low, high));
    }
    level = std::move(next);
  }
  return level.front();
}

SmallVector<Value> sumLanesOfEach(OpBuilder &b, Location loc, ArrayRef<Value> vectors) {
  SmallVector<Value> sums;
  if (vectors.empty()) return sums;
  size_t lanes = cast<VectorType>(vectors.front().getType()).getNumElements();
  auto add = [&](Value low, Value high) { return arith::AddFOp::create(b, loc, low, high); };
  for (size_t first = 0; first < vectors.size(); first += lanes) {
    ArrayRef<Value> group = vectors.slice(first, std::min(lanes, vectors.size() - first));
    if (group.size() == 1) {
      sums.push_back(sumLanes(b, loc, group[0]));
      continue;
    }
    Value packed = reduceLanesPacked(b, loc, group, add);
    for (size_t i = 0; i < group.size(); ++i)
      sums.push_back(vector::ExtractOp::create(b, loc, packed, ArrayRef<int64_t>{int64_t(i)}));
  }
  return sums;
}

namespace {

/// An scf.for over [lower, upper) by `step` carrying `inits`, whose body
/// is built with `kb` (positioned inside it) and returns the next values.
scf::ForOp forCarrying(KernelBuilder &kb, int64_t lower, int64_t upper, int64_t step,
                       ValueRange inits,
                       function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  return scf::ForOp::create(
      b, loc, kb.index(lower), kb.index(upper), kb.index(step), inits,
      [&](OpBuilder &nested, Location, Value iv, ValueRange carried) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
        scf::YieldOp::create(b, loc, body(iv, carried));
      });
}

/// Rows of a matmul input rounded to bf16 in one task: a decode batch is
/// one task, a prefill splits.
constexpr int64_t kRoundedRowsPerTask = 32;

/// rounded[r, :] = input[r, :] rounded to bf16 (to nearest even), as bit
/// patterns, 32 at a time (vcvtne2ps2bf16 puts its second operand in the
/// low half); k is a multiple of 32. Every row once, whatever the tiles
/// that read it. Rows of `rounded` past the input's (AMX tiles' padding,
/// fewer than kRoundedRowsPerTask) are zeros.
void roundRowsToBf16(StepLowering &step, Location loc, Value input, Value rounded, int64_t k) {
  OpBuilder &b = step.b;
  KernelBuilder stepBuilder(b, loc);
  Value rows = memref::DimOp::create(b, loc, input, 0);
  Value tasks = stepBuilder.divIndex(
      stepBuilder.addIndex(rows, stepBuilder.index(kRoundedRowsPerTask - 1)),
      stepBuilder.index(kRoundedRowsPerTask));
  SmallVector<Value> buffers{input, rounded};
  runParallel(step, loc, "round_rows_bf16", kernelKey("round_rows_bf16", buffers), buffers, tasks,
              [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
    OpBuilder &kbb = kb.builder();
    Location kloc = kb.location();
    auto f32s = VectorType::get({kLanes}, kbb.getF32Type());
    Value begin = kb.mulIndex(firstTask, kb.index(kRoundedRowsPerTask));
    Value tasksEnd = kb.mulIndex(lastTask, kb.index(kRoundedRowsPerTask));
    Value inputRows = kb.dim(params[0], 0);
    Value end = kb.minIndex(tasksEnd, inputRows);
    Value zeros = arith::ConstantOp::create(
        kbb, kloc, DenseElementsAttr::get(VectorType::get({kLanes}, kbb.getI16Type()),
                                          kbb.getI16IntegerAttr(0).getValue()));
    kb.forEach(kb.maxIndex(begin, inputRows), kb.minIndex(tasksEnd, kb.dim(params[1], 0)),
               [&](Value row) {
      kb.forEach(kb.index(0), kb.index(k), [&](Value at) {
        vector::StoreOp::create(kbb, kloc, zeros, params[1], ValueRange{row, at});
      }, kLanes);
    });
    kb.forEach(begin, end, [&](Value row) {
      kb.forEach(kb.index(0), kb.index(k), [&](Value at) {
        Value low = vector::LoadOp::create(kbb, kloc, f32s, params[0], ValueRange{row, at});
        Value high = vector::LoadOp::create(kbb, kloc, f32s, params[0],
                                            ValueRange{row, kb.addIndex(at, kb.index(kLanes))});
        Value pairs = roundPairToBf16(kbb, kloc, low, high);
        Value bits = arith::BitcastOp::create(
            kbb, kloc, VectorType::get({2 * kLanes}, kbb.getI16Type()), pairs);
        vector::StoreOp::create(kbb, kloc, bits, params[1], ValueRange{row, at});
      }, 2 * kLanes);
    });
  });
}


} // namespace

void emitDotTile(KernelBuilder &kb, Value x, WeightReader &w, Value row, Value col, int64_t rows,
                 int64_t cols, int64_t parts, int64_t partStride, int64_t k, FinishOutput finish) {
  SmallVector<Value> xRows;
  for (int64_t r = 0; r < rows; ++r) xRows.push_back(kb.addIndex(row, kb.index(r)));
  emitDotTileOfRows(kb, x, xRows, w, col, cols, parts, partStride, k,
                    [&](int64_t r, Value c, ArrayRef<Value> sums) { finish(xRows[r], c, sums); });
}

void emitDotTileOfRows(KernelBuilder &kb, Value x, ArrayRef<Value> xRows, WeightReader &w,
                       Value col, int64_t cols, int64_t parts, int64_t partStride, int64_t k,
                       FinishTileOutput finish) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto vectorType = VectorType::get({kLanes}, b.getF32Type());
  int64_t vectorEnd = k / kLanes * kLanes;
  int64_t rows = static_cast<int64_t>(xRows.size());
  auto rowAt = [&](int64_t r) { return xRows[r]; };
  auto weightRow = [&](int64_t c, int64_t part) {
    return kb.addIndex(col, kb.index(c + part * partStride));
  };
  auto slot = [&](int64_t r, int64_t c, int64_t part) { return (r * cols + c) * parts + part; };

  // Accumulates the vectors of columns [i, i + span) into `acc`.
  auto accumulate = [&](Value i, int64_t span, ValueRange acc) {
    SmallVector<SmallVector<Value>> states;
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t part = 0; part < parts; ++part) states.push_back(w.blockState(weightRow(c, part), i));
    SmallVector<Value> next(acc.begin(), acc.end());
    if (w.productsOfPairs()) {
      for (int64_t offset = 0; offset < span; offset += 2 * kLanes) {
        Value at = kb.addIndex(i, kb.index(offset));
        SmallVector<Value> xs, ws;
        for (int64_t r = 0; r < rows; ++r) xs.push_back(loadBf16Pairs(b, loc, x, rowAt(r), at));
        for (int64_t c = 0; c < cols; ++c)
          for (int64_t part = 0; part < parts; ++part) ws.push_back(w.pairs(weightRow(c, part), at));
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            for (int64_t part = 0; part < parts; ++part)
              next[slot(r, c, part)] =
                  dotPairs(b, loc, next[slot(r, c, part)], xs[r], ws[c * parts + part]);
      }
      return next;
    }
    for (int64_t offset = 0; offset < span; offset += kLanes) {
      Value at = kb.addIndex(i, kb.index(offset));
      SmallVector<Value> xs, ws;
      for (int64_t r = 0; r < rows; ++r)
        xs.push_back(vector::LoadOp::create(b, loc, vectorType, x, ValueRange{rowAt(r), at}));
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t part = 0; part < parts; ++part)
          ws.push_back(w.vector(weightRow(c, part), at, states[c * parts + part]));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          for (int64_t part = 0; part < parts; ++part)
            next[slot(r, c, part)] = vector::FMAOp::create(b, loc, xs[r], ws[c * parts + part],
                                                           next[slot(r, c, part)]);
    }
    return next;
  };
  Value zeros = arith::ConstantOp::create(b, loc, vectorType, DenseElementsAttr::get(vectorType, 0.0f));
  SmallVector<Value> acc(rows * cols * parts, zeros);
  int64_t span = w.span(), spansEnd = k / span * span;
  acc = forCarrying(kb, 0, spansEnd, span, acc, [&](Value i, ValueRange carried) {
                      return accumulate(i, span, carried);
                    }).getResults();
  if (spansEnd < vectorEnd) // the whole vectors of a last, partial block
    acc = forCarrying(kb, spansEnd, vectorEnd, kLanes, acc, [&](Value i, ValueRange carried) {
            return accumulate(i, kLanes, carried);
          }).getResults();
  SmallVector<Value> laneSums = sumLanesOfEach(b, loc, acc);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      Value r_ = rowAt(r), c_ = kb.addIndex(col, kb.index(c));
      SmallVector<Value> sums;
      for (int64_t part = 0; part < parts; ++part) {
        Value sum = laneSums[slot(r, c, part)];
        Value wRow = weightRow(c, part);
        if (vectorEnd < k) // the k % 16 products past the last whole vector
          sum = kb.reduce(kb.index(vectorEnd), kb.index(k), sum, [&](Value i, Value total) {
            return math::FmaOp::create(b, loc, kb.load(x, {r_, i}), w.scalar(wRow, i), total);
          });
        sums.push_back(sum);
      }
      finish(r, c_, sums);
    }
}

namespace {

/// out[:, begin:end] = x * W[begin:end, :]^T for a weight stored [out, in]
/// (read through `w`),
/// in register tiles (emitDotTile): 4 x 4 outputs (4 x 2 when gated),
/// 1 x that for the rows past the last whole tile, 1 x 1 for the columns
/// past the last whole tile. The weight rows of a column tile stay in L1
/// while every row runs over them: decode (one row) reads the weights
/// once, the memory-bound case. Every output sums in the same order
/// whatever the rows and the column range, so a row's result depends
/// neither on the batch nor on the threads.
void buildMatmulColumns(KernelBuilder &kb, Value x, WeightReader &w, Value out,
                        const OutputBlock &block, int64_t k, int64_t n, const Epilogue &epilogue,
                        const EpilogueParams &epilogueParams) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value begin = block.begin, end = block.end, rows = block.rowEnd;
  int64_t parts = epilogue.gated ? 2 : 1;
  int64_t tileColumns = kTileColumns / parts;
  auto finish = [&](Value row, Value col, ArrayRef<Value> sums) {
    storeOutput(kb, epilogue, epilogueParams, out, row, col, sums, n);
  };
  auto roundDown = [&](Value from, Value to, int64_t step) {
    Value span = arith::SubIOp::create(b, loc, to, from);
    Value whole = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, span, kb.index(step)), kb.index(step));
    return kb.addIndex(from, whole);
  };
  auto stepping = [&](Value lower, Value upper, int64_t step, function_ref<void(Value)> body) {
    scf::ForOp::create(b, loc, lower, upper, kb.index(step), ValueRange{},
                       [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                         OpBuilder::InsertionGuard guard(b);
                         b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
                         body(iv);
                         scf::YieldOp::create(b, loc);
                       });
  };
  auto tile = [&](Value row, Value col, int64_t tileRows, int64_t cols) {
    emitDotTile(kb, x, w, row, col, tileRows, cols, parts, n, k, finish);
  };
  Value tiledColumnsEnd = roundDown(begin, end, tileColumns);
  Value tiledRowsEnd = roundDown(block.rowBegin, rows, kTileRows);
  stepping(begin, tiledColumnsEnd, tileColumns, [&](Value col) {
    stepping(block.rowBegin, tiledRowsEnd, kTileRows,
             [&](Value row) { tile(row, col, kTileRows, tileColumns); });
    stepping(tiledRowsEnd, rows, 1, [&](Value row) { tile(row, col, 1, tileColumns); });
  });
  stepping(tiledColumnsEnd, end, 1, [&](Value col) {
    stepping(block.rowBegin, rows, 1, [&](Value row) { tile(row, col, 1, 1); });
  });
}

} // namespace

Value dotPairs(OpBuilder &b, Location loc, Value acc, Value x, Value w) {
  return LLVM::CallIntrinsicOp::create(b, loc, acc.getType(),
                                       b.getStringAttr("llvm.x86.avx512bf16.dpbf16ps.512"),
                                       ValueRange{acc, x, w})
      .getResult(0);
}

void runOverColumns(StepLowering &step, Location loc, ArrayRef<Value> buffers, int64_t columns,
                    int64_t columnsPerTask, const std::string &key, ColumnsBody body) {
  OpBuilder &b = step.b;
  auto rowChunks = [](KernelBuilder &kb, Value rows) {
    return kb.divIndex(kb.addIndex(rows, kb.index(kRowsPerTask - 1)), kb.index(kRowsPerTask));
  };
  int64_t columnTasks = llvm::divideCeil(columns, columnsPerTask);
  int64_t chunksPerBlock = rowChunksPerBlock(cast<MemRefType>(buffers[0].getType()));
  KernelBuilder stepBuilder(b, loc);
  Value tasks = stepBuilder.mulIndex(
      stepBuilder.index(columnTasks),
      rowChunks(stepBuilder, memref::DimOp::create(b, loc, buffers[1], 0)));
  runParallel(step, loc, "matmul", key, buffers, tasks,
              [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
                // Tasks go block of rows by block: within one, column range
                // by column range, and within a column range its row chunks
                // (32 rows), so the block's rows stay in cache while every
                // weight panel passes over them once, and a panel while its
                // chunks read it. The last block has the chunks left over.
                Value rows = kb.dim(params[1], 0), chunks = rowChunks(kb, rows);
                Value wholeBlocks = kb.divIndex(chunks, kb.index(chunksPerBlock));
                Value lastBlockChunks = kb.remIndex(chunks, kb.index(chunksPerBlock));
                Value wholeBlockTasks = kb.index(columnTasks * chunksPerBlock);
                Value tasksInWholeBlocks = kb.mulIndex(wholeBlocks, wholeBlockTasks);
                kb.forEach(firstTask, lastTask, [&](Value task) {
                  OpBuilder &tb = kb.builder();
                  Value inWholeBlock = arith::CmpIOp::create(
                      tb, loc, arith::CmpIPredicate::ult, task, tasksInWholeBlocks);
                  Value blockChunks = arith::SelectOp::create(
                      tb, loc, inWholeBlock, kb.index(chunksPerBlock),
                      kb.maxIndex(lastBlockChunks, kb.index(1)));
                  Value rowBlock = arith::SelectOp::create(
                      tb, loc, inWholeBlock, kb.divIndex(task, wholeBlockTasks), wholeBlocks);
                  Value inBlock = arith::SelectOp::create(
                      tb, loc, inWholeBlock, kb.remIndex(task, wholeBlockTasks),
                      kb.subIndex(task, tasksInWholeBlocks));
                  Value columnTask = kb.divIndex(inBlock, blockChunks);
                  Value chunk = kb.addIndex(kb.mulIndex(rowBlock, kb.index(chunksPerBlock)),
                                            kb.remIndex(inBlock, blockChunks));
                  Value rowBegin = kb.mulIndex(chunk, kb.index(kRowsPerTask));
                  Value begin = kb.mulIndex(columnTask, kb.index(columnsPerTask));
                  OutputBlock block{
                      rowBegin, kb.minIndex(kb.addIndex(rowBegin, kb.index(kRowsPerTask)), rows),
                      begin,
                      kb.minIndex(kb.addIndex(begin, kb.index(columnsPerTask)),
                                  kb.index(columns))};
                  body(kb, params, block);
                });
              });
}

namespace {

/// The generated matmul over the runtime's threads (runOverColumns).
void generateMatmul(StepLowering &step, Location loc, Value input, const MatmulWeight &weight,
                    Value output, int64_t n, int64_t k, const Epilogue &epilogue,
                    const std::string &key) {
  // Kernel buffers: x, out, the weight's, the epilogue's.
  SmallVector<Value> buffers{input, output};
  SmallVector<Value> weightBuffers = weight.buffers();
  llvm::append_range(buffers, weightBuffers);
  llvm::append_range(buffers, epilogueOperands(epilogue));
  int64_t columns = epilogue.gated ? n / 2 : n;
  runOverColumns(step, loc, buffers, columns, kColumnsPerTask, key,
                 [&](KernelBuilder &kb, ValueRange params, const OutputBlock &block) {
                   auto epilogueParams =
                       EpilogueParams::in(epilogue, params.drop_front(2 + weightBuffers.size()));
                   MatmulWeight packed = weight.withBuffers(params.slice(2, weightBuffers.size()));
                   WeightReader reader(kb, packed);
                   buildMatmulColumns(kb, params[0], reader, params[1], block, k, columns,
                                      epilogue, epilogueParams);
                 });
}

/// The epilogue applied in place to a product sgemm wrote to `output`.
void applyEpilogueInPlace(StepLowering &step, Location loc, Value output, const Epilogue &epilogue,
                          const std::string &key) {
  SmallVector<Value> args{output};
  llvm::append_range(args, epilogueOperands(epilogue));
  step.callKernel(loc, "epilogue", key + "/epilogue", args, [&](KernelBuilder &kb, ValueRange params) {
    Value out = params[0];
    auto epilogueParams = EpilogueParams::in(epilogue, params.drop_front());
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      kb.forEach(kb.index(0), kb.dim(out, 1), [&](Value col) {
        storeOutput(kb, epilogue, epilogueParams, out, row, col, {kb.load(out, {row, col})}, 0);
      });
    });
  });
}

} // namespace

LogicalResult lowerMatmul(StepLowering &step, Location loc, Value input, const MatmulWeight &weight,
                          bool transposed, Value output, const Epilogue &epilogue) {
  auto weightType = cast<MemRefType>(weight.values.getType());
  int64_t k = cast<MemRefType>(input.getType()).getDimSize(1);
  int64_t n = weight.panels ? 0 : weightType.getDimSize(transposed ? 0 : 1);
  SmallVector<Value> buffers{input, output};
  llvm::append_range(buffers, epilogueOperands(epilogue));
  if (!llvm::all_of(buffers, isContiguous))
    return emitError(loc, "a matmul operand is a strided view (a column range of another "
                          "tensor); the CPU matmul reads contiguous rows only");
  if (weight.bf16Products) {
    // The rows rounded once into the scratch, not once per tile that reads them.
    // AMX tiles read whole tiles of rows: the rounded rows are padded.
    int64_t tileRows = weight.amxTiles ? kAmxRows : 1;
    Value rows = memref::DimOp::create(step.b, loc, input, 0);
    if (tileRows > 1) {
      KernelBuilder stepBuilder(step.b, loc);
      Value last = stepBuilder.index(tileRows - 1), whole = stepBuilder.index(tileRows);
      rows = stepBuilder.mulIndex(stepBuilder.divIndex(stepBuilder.addIndex(rows, last), whole),
                                  whole);
    }
    Value rounded = step.scratchView(loc, step.b.getI16Type(), k, rows, 0);
    step.clobberScratch(llvm::alignTo(llvm::alignTo(step.maxRows, tileRows) * k * 2, 64));
    roundRowsToBf16(step, loc, input, rounded, k);
    input = rounded;
    buffers[0] = rounded;
  }
  SmallVector<Value> keyed{input};
  llvm::append_range(keyed, weight.buffers());
  keyed.push_back(output);
  std::string key = kernelKey("matmul", keyed) + "/" + weight.key();
  if (epilogue.body) key = kernelKey(epilogue.body->getParentOp(), buffers) + "/" + key;
  if (weight.panels) {
    generatePanelMatmul(step, loc, input, weight, output, k, epilogue, key);
  } else if (step.generatedMatmul) {
    if (!transposed)
      return emitError(loc, "the generated matmul takes weights stored [out, in]");
    generateMatmul(step, loc, input, weight, output, n, k, epilogue, key);
  } else {
    if (weight.isQuantized())
      return emitError(loc, "sgemm reads f32 weights; quantised ones are kept packed for the "
                            "generated matmul only");
    if (epilogue.gated)
      return emitError(loc, "a gated epilogue needs the generated matmul: sgemm writes the whole "
                            "product (run llm-fuse-linear-epilogues{gated=false} for blas)");
    callSgemm(step, loc, input, weight.values, transposed, output, n, k);
    if (epilogue.body) applyEpilogueInPlace(step, loc, output, epilogue, key);
  }
  if (!epilogue.body && epilogue.bias) addBias(step, loc, epilogue.bias, output);
  return success();
}

} // namespace llmc::cpu
