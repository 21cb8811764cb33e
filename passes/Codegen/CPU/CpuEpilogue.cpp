//===- CpuEpilogue.cpp - what a CPU matmul does with an output element ----===//
//
// Every CPU matmul kernel (generated f32 or quantised, int8 activations, the
// in-place pass after sgemm) ends an output element the same way: the bias
// added to each accumulator, the epilogue's body (cloned scalar ops) run on
// them and the extras read at the element, then the store.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

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
