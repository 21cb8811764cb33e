//===- CpuMatmul.cpp - matrix products: BLAS or generated loops -----------===//
//
// The one place that decides how `x * W` runs on the CPU. `generated` (the
// default) emits loops: at batch 1 they beat OpenBLAS 0.3.21, whose small-
// matrix kernels also round a row differently depending on how many rows a
// call has, which would make a sequence's logits depend on the batch. `blas`
// calls the runtime's sgemm through the host API table (the runtime owns the
// BLAS threads), faster for long prefills. bench/RESULTS.md has the figures.
//
//===----------------------------------------------------------------------===//
#include "passes/CpuLowering.h"

using namespace mlir;

namespace llmc::cpu {

namespace {

/// Field indices of LlmcCpuHostApi (include/llmc/Runtime/StepABI.h).
constexpr int32_t kApiContext = 2;
constexpr int32_t kApiSgemm = 3;

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
  MLIRContext *context = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(context);
  auto i32 = b.getI32Type(), i64 = b.getI64Type();
  auto apiType = LLVM::LLVMStructType::getLiteral(context, {i32, i32, ptr, ptr, ptr});
  auto field = [&](int32_t index) {
    Value address = LLVM::GEPOp::create(b, loc, ptr, apiType, step.api,
                                        ArrayRef<LLVM::GEPArg>{0, index});
    return LLVM::LoadOp::create(b, loc, ptr, address).getResult();
  };
  auto constant = [&](Type type, int64_t value) -> Value {
    return LLVM::ConstantOp::create(b, loc, type, b.getIntegerAttr(type, value));
  };
  Value rows = arith::IndexCastOp::create(b, loc, i64, memref::DimOp::create(b, loc, input, 0));
  auto sgemmType = LLVM::LLVMFunctionType::get(
      LLVM::LLVMVoidType::get(context), {ptr, i64, i64, i64, ptr, i64, ptr, i64, i32, ptr, i64});
  LLVM::CallOp::create(b, loc, sgemmType,
                       ValueRange{field(kApiSgemm), field(kApiContext), rows, constant(i64, n),
                                  constant(i64, k), pointerTo(b, loc, input), constant(i64, k),
                                  pointerTo(b, loc, weight), constant(i64, transposed ? k : n),
                                  constant(i32, transposed), pointerTo(b, loc, output),
                                  constant(i64, n)});
}

/// Loops, with the weight outermost so that each weight row is read from
/// memory once per call whatever the number of rows (decode reads it once:
/// the memory-bound case). For [in, out] weights, out[r, :] += x[r, i] *
/// W[i, :] (the inner loop vectorises); for [out, in] weights, one dot
/// product per output. Every output sums over `in` in the same order
/// whatever the number of rows, so a row's result never depends on the batch.
void generateMatmul(StepLowering &step, Location loc, Value input, Value weight, bool transposed,
                    Value output, int64_t n, int64_t k) {
  SmallVector<Value> args{input, weight, output};
  std::string key = kernelKey(transposed ? "matmul_transposed" : "matmul", args);
  step.callKernel(loc, "matmul", key, args, [&](KernelBuilder &kb, ValueRange params) {
    Value x = params[0], w = params[1], out = params[2];
    Value zero = kb.index(0), outs = kb.index(n), ins = kb.index(k), rows = kb.dim(out, 0);
    if (transposed) {
      kb.forEach(zero, outs, [&](Value col) {
        kb.forEach(zero, rows, [&](Value row) {
          Value dot = kb.reduce(zero, ins, kb.f32(0.0), [&](Value i, Value acc) {
            return kb.add(acc, kb.mul(kb.load(x, {row, i}), kb.load(w, {col, i})));
          });
          kb.store(dot, out, {row, col});
        });
      });
      return;
    }
    kb.forEach(zero, rows, [&](Value row) {
      kb.forEach(zero, outs, [&](Value col) { kb.store(kb.f32(0.0), out, {row, col}); });
    });
    kb.forEach(zero, ins, [&](Value i) {
      kb.forEach(zero, rows, [&](Value row) {
        Value scale = kb.load(x, {row, i});
        kb.forEach(zero, outs, [&](Value col) {
          Value sum = kb.add(kb.load(out, {row, col}), kb.mul(scale, kb.load(w, {i, col})));
          kb.store(sum, out, {row, col});
        });
      });
    });
  });
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
  if (step.generatedMatmul)
    generateMatmul(step, loc, input, weight, transposed, output, n, k);
  else
    callSgemm(step, loc, input, weight, transposed, output, n, k);
  if (bias) addBias(step, loc, bias, output);
  return success();
}

} // namespace llmc::cpu
