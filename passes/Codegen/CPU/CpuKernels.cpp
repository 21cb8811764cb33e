//===- CpuKernels.cpp - token-wise llm ops as CPU loop nests --------------===//
//
// Every kernel here treats rows (tokens) independently: a row's result never
// depends on how many other rows the step carries.
//
//===----------------------------------------------------------------------===//
#include "passes/CpuLowering.h"

#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace llmc::cpu {

std::string kernelKey(StringRef name, TypeRange argTypes) {
  std::string key = name.str();
  llvm::raw_string_ostream os(key);
  for (Type type : argTypes) os << "," << type;
  return key;
}

std::string kernelKey(StringRef name, ValueRange args) { return kernelKey(name, args.getTypes()); }

namespace {
/// The scalar body of an op, written so that two bodies print the same iff
/// they compute the same: every value is named by the block argument or
/// the op (in order) that defines it.
void describeBody(Region &region, llvm::raw_ostream &os) {
  DenseMap<Value, std::string> names;
  for (BlockArgument argument : region.front().getArguments())
    names[argument] = "a" + std::to_string(argument.getArgNumber());
  unsigned index = 0;
  for (Operation &op : region.front()) {
    os << "{" << op.getName() << op.getPropertiesAsAttribute() << op.getAttrDictionary() << "(";
    for (Value operand : op.getOperands()) os << names.lookup(operand) << ",";
    os << ")";
    for (Value result : op.getResults()) {
      names[result] = "v" + std::to_string(index++);
      os << result.getType();
    }
    os << "}";
  }
}
} // namespace

std::string kernelKey(Operation *op, TypeRange argTypes) {
  std::string name;
  llvm::raw_string_ostream os(name);
  // Inherent attributes only: the planned offsets do not change the code.
  os << op->getName() << op->getPropertiesAsAttribute();
  for (Region &region : op->getRegions()) describeBody(region, os);
  return kernelKey(name, argTypes);
}

std::string kernelKey(Operation *op, ValueRange args) { return kernelKey(op, args.getTypes()); }

namespace {

int64_t staticDim(Value memref, int64_t dim) {
  return cast<MemRefType>(memref.getType()).getDimSize(dim);
}

/// Loads the element of `input` for output element (row, col): inputs are
/// [rows, features], [features] (the same for every row) or rank 0.
Value loadBroadcast(KernelBuilder &kb, Value input, Value row, Value col) {
  switch (cast<MemRefType>(input.getType()).getRank()) {
  case 0: return kb.load(input, {});
  case 1: return kb.load(input, {col});
  default: return kb.load(input, {row, col});
  }
}

/// One row of a norm: x's row normalised (its mean
/// subtracted for a layer norm), scaled by the weight, plus the bias.
void emitNormRow(KernelBuilder &kb, Value x, Value weight, Value bias, Value out, Value row,
                 bool layer, double epsilon) {
  int64_t features = staticDim(out, 1);
  Value zero = kb.index(0), width = kb.index(features), count = kb.f32(features);
  Value mean = kb.f32(0.0);
  if (layer) {
    Value sum = kb.reduce(zero, width, kb.f32(0.0), [&](Value col, Value acc) {
      return kb.add(acc, kb.load(x, {row, col}));
    });
    mean = kb.div(sum, count);
  }
  Value squares = kb.reduce(zero, width, kb.f32(0.0), [&](Value col, Value acc) {
    Value centred = kb.sub(kb.load(x, {row, col}), mean);
    return kb.add(acc, kb.mul(centred, centred));
  });
  Value inverse = kb.div(kb.f32(1.0), kb.sqrt(kb.add(kb.div(squares, count), kb.f32(epsilon))));
  kb.forEach(zero, width, [&](Value col) {
    Value normed = kb.mul(kb.sub(kb.load(x, {row, col}), mean), inverse);
    Value scaled = kb.mul(normed, kb.load(weight, {col}));
    if (bias) scaled = kb.add(scaled, kb.load(bias, {col}));
    kb.store(scaled, out, {row, col});
  });
}

} // namespace

std::pair<double, bool> normKind(Operation *op) {
  if (auto rms = dyn_cast<llm::RmsNormOp>(op)) return {rms.getEpsilon().convertToFloat(), false};
  if (auto fused = dyn_cast<llm::AddRmsNormOp>(op))
    return {fused.getEpsilon().convertToFloat(), false};
  if (auto fused = dyn_cast<llm::AddLayerNormOp>(op))
    return {fused.getEpsilon().convertToFloat(), true};
  return {cast<llm::LayerNormOp>(op).getEpsilon().convertToFloat(), true};
}

LogicalResult lowerScalarFunction(StepLowering &step, llm::ScalarFunctionOpInterface op,
                                  ArrayRef<Value> operands, Value output) {
  for (Value operand : operands)
    if (!operand) return op->emitOpError("has an omitted operand; elementwise ops take none");
  SmallVector<Value> args(operands.begin(), operands.end());
  args.push_back(output);
  StringRef name = op->getName().stripDialect();
  bool failedScalar = false;
  step.callKernel(op->getLoc(), name, kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
                    Value out = params.back();
                    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
                      kb.forEach(kb.index(0), kb.index(staticDim(out, 1)), [&](Value col) {
                        SmallVector<Value> values;
                        for (Value in : params.drop_back())
                          values.push_back(loadBroadcast(kb, in, row, col));
                        Value result = op.buildScalar(kb.builder(), kb.location(), values);
                        if (!result) {
                          failedScalar = true;
                          return;
                        }
                        kb.store(result, out, {row, col});
                      });
                    });
                  });
  if (failedScalar) return op->emitOpError("has no scalar form for these element types");
  return success();
}

LogicalResult lowerNorm(StepLowering &step, Operation *op, ArrayRef<Value> operands, Value output) {
  auto [epsilon, layer] = normKind(op);
  SmallVector<Value> args{operands[0], operands[1]};
  bool hasBias = layer && operands[2];
  if (hasBias) args.push_back(operands[2]);
  args.push_back(output);
  step.callKernel(op->getLoc(), op->getName().stripDialect(), kernelKey(op, args), args,
                  [&, epsilon = epsilon, layer = layer](KernelBuilder &kb, ValueRange params) {
    Value bias = hasBias ? params[2] : Value();
    kb.forEach(kb.index(0), kb.dim(params.back(), 0), [&](Value row) {
      emitNormRow(kb, params[0], params[1], bias, params.back(), row, layer, epsilon);
    });
  });
  return success();
}

LogicalResult lowerAddNorm(StepLowering &step, Operation *op, ArrayRef<Value> operands,
                           ArrayRef<Value> outputs) {
  // lhs, rhs, weight[, bias] -> sum, normed
  auto [epsilon, layer] = normKind(op);
  SmallVector<Value> args{operands[0], operands[1], operands[2]};
  bool hasBias = layer && operands[3];
  if (hasBias) args.push_back(operands[3]);
  args.append(outputs.begin(), outputs.end());
  step.callKernel(op->getLoc(), op->getName().stripDialect(), kernelKey(op, args), args,
                  [&, epsilon = epsilon, layer = layer](KernelBuilder &kb, ValueRange params) {
    Value lhs = params[0], rhs = params[1], weight = params[2];
    Value bias = hasBias ? params[3] : Value();
    Value sum = params[params.size() - 2], normed = params.back();
    kb.forEach(kb.index(0), kb.dim(normed, 0), [&](Value row) {
      // The sum is stored, then normalised from memory exactly as an
      // unfused norm reads its input: the same rounding, the same loop.
      kb.forEach(kb.index(0), kb.index(staticDim(normed, 1)), [&](Value col) {
        kb.store(kb.add(kb.load(lhs, {row, col}), kb.load(rhs, {row, col})), sum, {row, col});
      });
      emitNormRow(kb, sum, weight, bias, normed, row, layer, epsilon);
    });
  });
  return success();
}

LogicalResult lowerEmbedding(StepLowering &step, llm::EmbeddingOp op, ArrayRef<Value> operands,
                             Value output) {
  SmallVector<Value> args{operands[0], operands[1], output};
  bool transposed = op.getTransposeTable();
  step.callKernel(op.getLoc(), "embedding", kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value table = params[0], ids = params[1], out = params[2];
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      Value id = kb.toIndex(kb.load(ids, {row}));
      kb.forEach(kb.index(0), kb.index(staticDim(out, 1)), [&](Value col) {
        Value value = transposed ? kb.load(table, {col, id}) : kb.load(table, {id, col});
        kb.store(value, out, {row, col});
      });
    });
  });
  return success();
}

void emitRotatedPair(KernelBuilder &kb, const Rotation &rotation, Value position, Value i,
                     function_ref<Value(Value)> read, function_ref<void(Value, Value)> write) {
  int64_t half = rotation.halfRotary;
  Value cosine, sine;
  if (rotation.cosCache) {
    Value p = kb.toIndex(position);
    cosine = kb.load(rotation.cosCache, {p, i});
    sine = kb.load(rotation.sinCache, {p, i});
  } else {
    Value angle = kb.mul(kb.toF32(position), kb.load(rotation.invFreq, {i}));
    cosine = kb.cos(angle);
    sine = kb.sin(angle);
  }
  // rotate_half pairs feature i with i + rotary/2; interleaved, 2i with 2i+1.
  Value first = rotation.interleaved ? kb.mulIndex(i, kb.index(2)) : i;
  Value second = kb.addIndex(first, kb.index(rotation.interleaved ? 1 : half));
  Value a = read(first), c = read(second);
  write(first, kb.sub(kb.mul(a, cosine), kb.mul(c, sine)));
  write(second, kb.add(kb.mul(c, cosine), kb.mul(a, sine)));
}

void emitRotatedHead(KernelBuilder &kb, const Rotation &rotation, Value position,
                     function_ref<Value(Value)> read, function_ref<void(Value, Value)> write) {
  kb.forEach(kb.index(0), kb.index(rotation.halfRotary),
             [&](Value i) { emitRotatedPair(kb, rotation, position, i, read, write); });
  // Features past the rotary dims pass through.
  kb.forEach(kb.index(2 * rotation.halfRotary), kb.index(rotation.headDim),
             [&](Value i) { write(i, read(i)); });
}

LogicalResult lowerRope(StepLowering &step, Operation *op, ArrayRef<Value> operands, Value output) {
  auto cached = dyn_cast<llm::RopeCachedOp>(op);
  bool interleaved = cached ? cached.getInterleaved() : cast<llm::RopeOp>(op).getInterleaved();
  int64_t headDim = cast<ShapedType>(op->getResult(0).getType()).getShape().back();
  SmallVector<Value> args(operands.begin(), operands.end());
  args.push_back(output);
  int64_t halfRotary = staticDim(operands[2], cached ? 1 : 0);
  step.callKernel(op->getLoc(), op->getName().stripDialect(), kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value x = params[0], positions = params[1], out = params.back();
    Rotation rotation{headDim, halfRotary, interleaved, cached ? Value() : params[2],
                      cached ? params[2] : Value(), cached ? params[3] : Value()};
    int64_t heads = staticDim(out, 1) / headDim;
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      Value position = kb.load(positions, {row});
      kb.forEach(kb.index(0), kb.index(heads), [&](Value head) {
        Value base = kb.mulIndex(head, kb.index(headDim));
        emitRotatedHead(
            kb, rotation, position,
            [&](Value i) { return kb.load(x, {row, kb.addIndex(base, i)}); },
            [&](Value i, Value value) { kb.store(value, out, {row, kb.addIndex(base, i)}); });
      });
    });
  });
  return success();
}

LogicalResult lowerGatherRows(StepLowering &step, llm::GatherRowsOp op, ArrayRef<Value> operands,
                              Value output) {
  SmallVector<Value> args{operands[0], operands[1], output};
  step.callKernel(op.getLoc(), "gather_rows", kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value in = params[0], indices = params[1], out = params[2];
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      Value source = kb.toIndex(kb.load(indices, {row}));
      kb.forEach(kb.index(0), kb.index(staticDim(out, 1)),
                 [&](Value col) { kb.store(kb.load(in, {source, col}), out, {row, col}); });
    });
  });
  return success();
}

LogicalResult lowerSplitQkv(StepLowering &step, llm::SplitQkvOp op, ArrayRef<Value> operands,
                            ArrayRef<Value> outputs) {
  SmallVector<Value> args{operands[0]};
  args.append(outputs.begin(), outputs.end());
  step.callKernel(op.getLoc(), "split_qkv", kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value in = params[0];
    kb.forEach(kb.index(0), kb.dim(in, 0), [&](Value row) {
      int64_t start = 0;
      for (Value out : params.drop_front()) {
        Value offset = kb.index(start);
        kb.forEach(kb.index(0), kb.index(staticDim(out, 1)), [&](Value col) {
          kb.store(kb.load(in, {row, kb.addIndex(offset, col)}), out, {row, col});
        });
        start += staticDim(out, 1);
      }
    });
  });
  return success();
}

} // namespace llmc::cpu
