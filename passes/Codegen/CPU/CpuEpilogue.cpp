//===- CpuEpilogue.cpp - what a CPU matmul does with an output element ----===//
//
// Every CPU matmul kernel (generated f32 or quantised, int8 activations, the
// in-place pass after sgemm) ends an output element the same way: the bias
// added to each accumulator, the epilogue's body (cloned scalar ops) run on
// them and the extras read at the element, then the store. The panel matmul
// ends 16 elements at once, the body cloned on vectors.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace llmc::cpu {

SmallVector<Value> epilogueOperands(const Epilogue &epilogue) {
  SmallVector<Value> operands;
  if (epilogue.body && epilogue.bias) operands.push_back(epilogue.bias);
  if (epilogue.body) llvm::append_range(operands, epilogue.extras);
  return operands;
}

EpilogueParams EpilogueParams::in(const Epilogue &epilogue, ValueRange params) {
  bool hasBias = epilogue.body && epilogue.bias;
  return {hasBias ? params.front() : Value(), hasBias ? params.drop_front() : params};
}

/// Loads an extra of an epilogue at output element (row, col).
static Value loadExtra(KernelBuilder &kb, Value extra, Value row, Value col) {
  if (cast<MemRefType>(extra.getType()).getRank() == 1) return kb.load(extra, {col});
  return kb.load(extra, {row, col});
}

void storeOutput(KernelBuilder &kb, const Epilogue &epilogue, const EpilogueParams &params,
                 Value out, Value row, Value col, ArrayRef<Value> sums, int64_t partStride) {
  Value result = sums.front();
  if (epilogue.body) {
    SmallVector<Value> scalars;
    for (auto [part, acc] : llvm::enumerate(sums)) {
      Value column = kb.addIndex(col, kb.index(static_cast<int64_t>(part) * partStride));
      scalars.push_back(params.bias ? kb.add(acc, kb.load(params.bias, {column})) : acc);
    }
    for (Value extra : params.extras) scalars.push_back(loadExtra(kb, extra, row, col));
    result = llm::inlineScalarBody(kb.builder(), *epilogue.body, scalars);
  }
  kb.store(result, out, {row, col});
}

/// Whether `body` computes the same lane by lane on vectors: every op
/// elementwise (arith and math) or a constant, on ints and floats.
static bool isElementwiseBody(Region &body) {
  auto scalar = [](Type type) { return type.isIntOrFloat(); };
  for (Operation &op : body.front().without_terminator()) {
    if (!isa<arith::ConstantOp>(op) && !OpTrait::hasElementwiseMappableTraits(&op)) return false;
    if (!llvm::all_of(op.getOperandTypes(), scalar) || !llvm::all_of(op.getResultTypes(), scalar))
      return false;
  }
  return true;
}

/// `body` cloned on vectors of kLanes (isElementwiseBody): each op takes the
/// vectors of its scalars' lanes, constants become splats.
static Value inlineVectorBody(OpBuilder &b, Location loc, Region &body, ValueRange vectors) {
  Block &block = body.front();
  IRMapping mapping;
  mapping.map(block.getArguments(), vectors);
  auto vectorOf = [](Type scalar) { return VectorType::get({kLanes}, scalar); };
  for (Operation &op : block.without_terminator()) {
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto type = vectorOf(constant.getType());
      mapping.map(constant.getResult(),
                  arith::ConstantOp::create(b, loc, type,
                                            DenseElementsAttr::get(type, constant.getValue())));
      continue;
    }
    Operation *clone = b.clone(op, mapping);
    for (OpResult result : clone->getResults()) result.setType(vectorOf(result.getType()));
  }
  return mapping.lookupOrDefault(block.getTerminator()->getOperand(0));
}

void storeOutputVector(KernelBuilder &kb, const Epilogue &epilogue, const EpilogueParams &params,
                       Value out, Value row, Value col, ArrayRef<Value> sums, int64_t partStride,
                       int64_t lanes) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto f32s = VectorType::get({kLanes}, b.getF32Type());
  auto load = [&](Value memref, ValueRange indices) {
    return vector::LoadOp::create(b, loc, f32s, memref, indices).getResult();
  };
  bool f32Extras = llvm::all_of(params.extras, [](Value extra) {
    return cast<MemRefType>(extra.getType()).getElementType().isF32();
  });
  if (lanes < kLanes || (epilogue.body && !(f32Extras && isElementwiseBody(*epilogue.body)))) {
    for (int64_t lane = 0; lane < lanes; ++lane) {
      SmallVector<Value> laneSums;
      for (Value sum : sums)
        laneSums.push_back(vector::ExtractOp::create(b, loc, sum, ArrayRef<int64_t>{lane}));
      storeOutput(kb, epilogue, params, out, row, kb.addIndex(col, kb.index(lane)), laneSums,
                  partStride);
    }
    return;
  }
  Value result = sums.front();
  if (epilogue.body) {
    SmallVector<Value> vectors;
    for (auto [part, acc] : llvm::enumerate(sums)) {
      Value column = kb.addIndex(col, kb.index(static_cast<int64_t>(part) * partStride));
      vectors.push_back(params.bias ? kb.add(acc, load(params.bias, {column})) : acc);
    }
    for (Value extra : params.extras)
      vectors.push_back(cast<MemRefType>(extra.getType()).getRank() == 1 ? load(extra, {col})
                                                                         : load(extra, {row, col}));
    result = inlineVectorBody(b, loc, *epilogue.body, vectors);
  }
  vector::StoreOp::create(b, loc, result, out, ValueRange{row, col});
}

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

} // namespace llmc::cpu
