//===- CpuMatmul.cpp - matrix products: BLAS or generated loops -----------===//
//
// The one place that decides how `x * W` runs on the CPU. `generated` (the
// default) emits register-tiled vector loops: at batch 1 they run at the
// memory floor and beat OpenBLAS 0.3.21, whose small-matrix kernels also
// round a row differently depending on how many rows a call has, which
// would make a sequence's logits depend on the batch. `blas`
// calls the runtime's sgemm through the host API table (the runtime owns the
// BLAS threads), faster for long prefills. bench/RESULTS.md has the figures.
//
//===----------------------------------------------------------------------===//
#include "passes/CpuLowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace llmc::cpu {

namespace {

/// Field indices of LlmcCpuHostApi (include/llmc/Runtime/StepABI.h).
constexpr int32_t kApiContext = 2;
constexpr int32_t kApiSgemm = 3;
constexpr int32_t kApiParallelFor = 4;

/// Output columns of one parallel_for task of the generated matmul: enough
/// work to amortise a task, few enough that two threads share a 576-wide layer.
constexpr int64_t kColumnsPerTask = 64;

LLVM::LLVMPointerType pointerType(OpBuilder &b) { return LLVM::LLVMPointerType::get(b.getContext()); }

/// Loads field `index` (a pointer) of the host API table.
Value loadApiField(StepLowering &step, Location loc, int32_t index) {
  OpBuilder &b = step.b;
  auto ptr = pointerType(b);
  auto apiType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), {b.getI32Type(), b.getI32Type(), ptr, ptr, ptr});
  Value address =
      LLVM::GEPOp::create(b, loc, ptr, apiType, step.api, ArrayRef<LLVM::GEPArg>{0, index});
  return LLVM::LoadOp::create(b, loc, ptr, address);
}

Value constantI64(OpBuilder &b, Location loc, int64_t value) {
  return LLVM::ConstantOp::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(value));
}

/// A memref of `type` over the row-major data at `pointer`, its dynamic
/// leading dim `rows`: the descriptor the LLVM lowering of memrefs uses,
/// built by hand because the data arrives as a raw pointer.
Value memrefAt(OpBuilder &b, Location loc, MemRefType type, Value pointer, Value rows) {
  auto i64 = b.getI64Type();
  int64_t rank = type.getRank();
  auto dims = LLVM::LLVMArrayType::get(i64, rank);
  auto descriptorType =
      LLVM::LLVMStructType::getLiteral(b.getContext(), {pointerType(b), pointerType(b), i64, dims, dims});
  Value descriptor = LLVM::PoisonOp::create(b, loc, descriptorType);
  auto insert = [&](Value value, ArrayRef<int64_t> position) {
    descriptor = LLVM::InsertValueOp::create(b, loc, descriptor, value, position);
  };
  insert(pointer, {0});
  insert(pointer, {1});
  insert(constantI64(b, loc, 0), {2});
  int64_t stride = 1;
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    int64_t size = type.getDimSize(dim);
    insert(ShapedType::isDynamic(size) ? rows : constantI64(b, loc, size), {3, dim});
    insert(constantI64(b, loc, stride), {4, dim});
    stride *= ShapedType::isDynamic(size) ? 1 : size;
  }
  return UnrealizedConversionCastOp::create(b, loc, type, descriptor).getResult(0);
}

/// The address of a memref's first element as an !llvm.ptr. Views of the
/// workspace and of the weights have offset 0, so the aligned pointer is it.
Value pointerTo(OpBuilder &b, Location loc, Value memref) {
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, b.getIndexType(), memref);
  Value integer = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()),
                                  ValueRange{integer});
}

/// api->sgemm(api->context, m, n, k, a, k, w, ldw, transposed, out, n).
void callSgemm(StepLowering &step, Location loc, Value input, Value weight, bool transposed,
               Value output, int64_t n, int64_t k) {
  OpBuilder &b = step.b;
  auto ptr = pointerType(b);
  auto i32 = b.getI32Type(), i64 = b.getI64Type();
  Value rows = arith::IndexCastOp::create(b, loc, i64, memref::DimOp::create(b, loc, input, 0));
  Value bTransposed = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(transposed));
  auto sgemmType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                               {ptr, i64, i64, i64, ptr, i64, ptr, i64, i32, ptr, i64});
  LLVM::CallOp::create(
      b, loc, sgemmType,
      ValueRange{loadApiField(step, loc, kApiSgemm), loadApiField(step, loc, kApiContext), rows,
                 constantI64(b, loc, n), constantI64(b, loc, k), pointerTo(b, loc, input),
                 constantI64(b, loc, k), pointerTo(b, loc, weight),
                 constantI64(b, loc, transposed ? k : n), bTransposed, pointerTo(b, loc, output),
                 constantI64(b, loc, n)});
}

/// Lanes of the vectors a dot product accumulates in (one AVX-512 register).
constexpr int64_t kLanes = 16;
/// A register tile: this many rows times this many columns share each load.
constexpr int64_t kTileRows = 4;
constexpr int64_t kTileColumns = 4;

/// The lanes of `vector` summed as a fixed tree (halves added, then halves of
/// those...). The adds carry no fast-math flags, so LLVM keeps the order.
Value sumLanes(OpBuilder &b, Location loc, Value vector) {
  for (int64_t width = kLanes / 2; width >= 1; width /= 2) {
    auto half = [&](int64_t offset) -> Value {
      return vector::ExtractStridedSliceOp::create(b, loc, vector, ArrayRef<int64_t>{offset},
                                                   ArrayRef<int64_t>{width}, ArrayRef<int64_t>{1});
    };
    vector = arith::AddFOp::create(b, loc, half(0), half(width));
  }
  return vector::ExtractOp::create(b, loc, vector, ArrayRef<int64_t>{0});
}

/// out[rows, cols] for `rows` x `cols` outputs starting at (row, col): every
/// output accumulates x[r, i:i+16] * w[c, i:i+16] in one vector register
/// over i = 0, 16, ... (fused multiply-adds), sums its lanes with
/// sumLanes, then adds the k % 16 remaining products one at a time. A tile
/// shares each loaded x and w vector among its outputs; the arithmetic of an
/// output is the same whatever the tile it is in.
void emitDotTile(KernelBuilder &kb, Value x, Value w, Value out, Value row, Value col,
                 int64_t rows, int64_t cols, int64_t k) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto vectorType = VectorType::get({kLanes}, b.getF32Type());
  int64_t vectorEnd = k / kLanes * kLanes;
  auto rowAt = [&](int64_t r) { return kb.addIndex(row, kb.index(r)); };
  auto colAt = [&](int64_t c) { return kb.addIndex(col, kb.index(c)); };

  Value zeros = arith::ConstantOp::create(b, loc, vectorType, DenseElementsAttr::get(vectorType, 0.0f));
  SmallVector<Value> inits(rows * cols, zeros);
  auto loop = scf::ForOp::create(
      b, loc, kb.index(0), kb.index(vectorEnd), kb.index(kLanes), inits,
      [&](OpBuilder &nested, Location, Value i, ValueRange acc) {
        SmallVector<Value> xs, ws, next;
        for (int64_t r = 0; r < rows; ++r)
          xs.push_back(vector::LoadOp::create(nested, loc, vectorType, x, ValueRange{rowAt(r), i}));
        for (int64_t c = 0; c < cols; ++c)
          ws.push_back(vector::LoadOp::create(nested, loc, vectorType, w, ValueRange{colAt(c), i}));
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            next.push_back(vector::FMAOp::create(nested, loc, xs[r], ws[c], acc[r * cols + c]));
        scf::YieldOp::create(nested, loc, next);
      });
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      Value sum = sumLanes(b, loc, loop.getResult(r * cols + c));
      Value r_ = rowAt(r), c_ = colAt(c);
      sum = kb.reduce(kb.index(vectorEnd), kb.index(k), sum, [&](Value i, Value acc) {
        return math::FmaOp::create(b, loc, kb.load(x, {r_, i}), kb.load(w, {c_, i}), acc);
      });
      kb.store(sum, out, {r_, c_});
    }
}

/// out[:, begin:end] = x * W[begin:end, :]^T for a weight stored [out, in],
/// in register tiles (emitDotTile): 4 x 4 outputs, 1 x 4 for the rows past
/// the last whole tile, 1 x 1 for the columns past the last whole tile. The
/// weight rows of a column tile stay in L1 while every row runs over them:
/// decode (one row) reads the weights once, the memory-bound case. Every
/// output sums in the same order whatever the rows and the column range, so
/// a row's result depends neither on the batch nor on the threads.
void buildMatmulColumns(KernelBuilder &kb, ValueRange params, int64_t k) {
  Value x = params[0], w = params[1], out = params[2], begin = params[3], end = params[4];
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value rows = kb.dim(out, 0);
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
  Value tiledColumnsEnd = roundDown(begin, end, kTileColumns);
  Value tiledRowsEnd = roundDown(kb.index(0), rows, kTileRows);
  stepping(begin, tiledColumnsEnd, kTileColumns, [&](Value col) {
    stepping(kb.index(0), tiledRowsEnd, kTileRows, [&](Value row) {
      emitDotTile(kb, x, w, out, row, col, kTileRows, kTileColumns, k);
    });
    stepping(tiledRowsEnd, rows, 1,
             [&](Value row) { emitDotTile(kb, x, w, out, row, col, 1, kTileColumns, k); });
  });
  stepping(tiledColumnsEnd, end, 1, [&](Value col) {
    stepping(kb.index(0), rows, 1,
             [&](Value row) { emitDotTile(kb, x, w, out, row, col, 1, 1, k); });
  });
}

/// The generated matmul, split by column tiles over the runtime's threads:
/// the step stores the operands' addresses in a closure on its stack and
/// calls api->parallel_for with a task function that rebuilds the memrefs
/// and runs the loops over its tiles.
void generateMatmul(StepLowering &step, Location loc, Value input, Value weight, Value output,
                    int64_t n, int64_t k) {
  OpBuilder &b = step.b;
  auto ptr = pointerType(b);
  Type i64 = b.getI64Type(), index = b.getIndexType();
  SmallVector<Type> kernelTypes{input.getType(), weight.getType(), output.getType(), index, index};
  std::string key = kernelKey("matmul", {input, weight, output});
  func::FuncOp columns = step.getOrCreateKernel(
      loc, "matmul", key, kernelTypes,
      [&](KernelBuilder &kb, ValueRange params) { buildMatmulColumns(kb, params, k); });

  // The closure: x, W and out addresses and the number of rows.
  auto closureType = LLVM::LLVMStructType::getLiteral(b.getContext(), {ptr, ptr, ptr, i64});
  func::FuncOp task = step.getOrCreateKernel(
      loc, "matmul_task", key + "/task", {ptr, i64, i64}, [&](KernelBuilder &kb, ValueRange params) {
        OpBuilder &tb = kb.builder();
        auto field = [&](int32_t position, Type type) -> Value {
          Value address = LLVM::GEPOp::create(tb, loc, ptr, closureType, params[0],
                                              ArrayRef<LLVM::GEPArg>{0, position});
          return LLVM::LoadOp::create(tb, loc, type, address);
        };
        Value rows = field(3, i64);
        SmallVector<Value> args;
        for (int32_t position = 0; position < 3; ++position)
          args.push_back(memrefAt(tb, loc, cast<MemRefType>(kernelTypes[position]),
                                  field(position, ptr), rows));
        Value tile = constantI64(tb, loc, kColumnsPerTask);
        Value begin = LLVM::MulOp::create(tb, loc, params[1], tile);
        Value end = LLVM::MulOp::create(tb, loc, params[2], tile);
        end = LLVM::SMinOp::create(tb, loc, end, constantI64(tb, loc, n));
        args.push_back(arith::IndexCastOp::create(tb, loc, index, begin));
        args.push_back(arith::IndexCastOp::create(tb, loc, index, end));
        func::CallOp::create(tb, loc, columns, args);
      });

  Value closure = LLVM::AllocaOp::create(b, loc, ptr, closureType, constantI64(b, loc, 1));
  Value rows = arith::IndexCastOp::create(b, loc, i64, memref::DimOp::create(b, loc, input, 0));
  SmallVector<Value> fields{pointerTo(b, loc, input), pointerTo(b, loc, weight),
                            pointerTo(b, loc, output), rows};
  for (auto [position, value] : llvm::enumerate(fields)) {
    Value address = LLVM::GEPOp::create(b, loc, ptr, closureType, closure,
                                        ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(position)});
    LLVM::StoreOp::create(b, loc, value, address);
  }
  Value taskValue = func::ConstantOp::create(b, loc, task.getFunctionType(),
                                             FlatSymbolRefAttr::get(task.getSymNameAttr()));
  Value taskPointer = UnrealizedConversionCastOp::create(b, loc, ptr, taskValue).getResult(0);
  auto parallelForType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                                     {ptr, i64, ptr, ptr});
  LLVM::CallOp::create(b, loc, parallelForType,
                       ValueRange{loadApiField(step, loc, kApiParallelFor),
                                  loadApiField(step, loc, kApiContext),
                                  constantI64(b, loc, llvm::divideCeil(n, kColumnsPerTask)),
                                  taskPointer, closure});
}

/// out[r, :] += bias
void addBias(StepLowering &step, Location loc, Value bias, Value output) {
  SmallVector<Value> args{bias, output};
  step.callKernel(loc, "bias_add", kernelKey("bias_add", args), args, [&](KernelBuilder &kb, ValueRange params) {
    Value b = params[0], out = params[1];
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      kb.forEach(kb.index(0), kb.dim(b, 0), [&](Value col) {
        kb.store(kb.add(kb.load(out, {row, col}), kb.load(b, {col})), out, {row, col});
      });
    });
  });
}

} // namespace

LogicalResult lowerMatmul(StepLowering &step, Location loc, Value input, Value weight,
                          bool transposed, Value bias, Value output) {
  auto weightType = cast<MemRefType>(weight.getType());
  int64_t k = weightType.getDimSize(transposed ? 1 : 0), n = weightType.getDimSize(transposed ? 0 : 1);
  if (step.generatedMatmul) {
    if (!transposed)
      return emitError(loc, "the generated matmul takes weights stored [out, in]");
    generateMatmul(step, loc, input, weight, output, n, k);
  } else
    callSgemm(step, loc, input, weight, transposed, output, n, k);
  if (bias) addBias(step, loc, bias, output);
  return success();
}

} // namespace llmc::cpu
