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

std::string kernelKey(StringRef name, ValueRange args) {
  std::string key = name.str();
  llvm::raw_string_ostream os(key);
  for (Type type : args.getTypes()) os << "," << type;
  return key;
}

std::string kernelKey(Operation *op, ValueRange args) {
  std::string name;
  llvm::raw_string_ostream os(name);
  // Inherent attributes only: the planned offsets do not change the code.
  os << op->getName() << op->getPropertiesAsAttribute();
  return kernelKey(name, args);
}

namespace {

int64_t staticDim(Value memref, int64_t dim) {
  return cast<MemRefType>(memref.getType()).getDimSize(dim);
}

/// Calls a kernel that applies `scalar` to each element of same-shaped
/// [rows, features] inputs.
void mapRows(StepLowering &step, Operation *op, ValueRange inputs, Value output,
             function_ref<Value(KernelBuilder &, ValueRange)> scalar) {
  SmallVector<Value> args(inputs.begin(), inputs.end());
  args.push_back(output);
  StringRef name = op->getName().stripDialect();
  step.callKernel(op->getLoc(), name, kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
                    Value out = params.back();
                    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
                      kb.forEach(kb.index(0), kb.index(staticDim(out, 1)), [&](Value col) {
                        SmallVector<Value> values;
                        for (Value in : params.drop_back()) values.push_back(kb.load(in, {row, col}));
                        kb.store(scalar(kb, values), out, {row, col});
                      });
                    });
                  });
}

Value silu(KernelBuilder &kb, Value x) {
  return kb.div(x, kb.add(kb.f32(1.0), kb.exp(kb.neg(x))));
}

Value gelu(KernelBuilder &kb, Value x, bool tanhApproximation) {
  Value half = kb.mul(kb.f32(0.5), x);
  if (tanhApproximation) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Value cube = kb.mul(kb.mul(x, x), x);
    Value inner = kb.mul(kb.f32(0.7978845608028654), kb.add(x, kb.mul(kb.f32(0.044715), cube)));
    return kb.mul(half, kb.add(kb.f32(1.0), kb.tanh(inner)));
  }
  return kb.mul(half, kb.add(kb.f32(1.0), kb.erf(kb.mul(x, kb.f32(0.7071067811865476)))));
}

} // namespace

LogicalResult lowerElementwise(StepLowering &step, Operation *op, ArrayRef<Value> operands,
                               Value output) {
  return TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](llm::SiluOp) {
        mapRows(step, op, operands, output, [](KernelBuilder &kb, ValueRange v) { return silu(kb, v[0]); });
        return success();
      })
      .Case([&](llm::GeluOp geluOp) {
        bool tanhApproximation = geluOp.getTanhApproximation();
        mapRows(step, op, operands, output, [&](KernelBuilder &kb, ValueRange v) {
          return gelu(kb, v[0], tanhApproximation);
        });
        return success();
      })
      .Case([&](llm::SwigluOp) {
        mapRows(step, op, operands, output,
                [](KernelBuilder &kb, ValueRange v) { return kb.mul(silu(kb, v[0]), v[1]); });
        return success();
      })
      .Case([&](llm::AddOp) {
        mapRows(step, op, operands, output, [](KernelBuilder &kb, ValueRange v) { return kb.add(v[0], v[1]); });
        return success();
      })
      .Case([&](llm::MulOp) {
        mapRows(step, op, operands, output, [](KernelBuilder &kb, ValueRange v) { return kb.mul(v[0], v[1]); });
        return success();
      })
      .Case([&](llm::CastOp) {
        // Only f32 models are lowered, so a remaining cast is f32 -> f32.
        mapRows(step, op, operands, output, [](KernelBuilder &, ValueRange v) { return v[0]; });
        return success();
      })
      .Default([](Operation *op) { return op->emitOpError("has no CPU kernel"); });
}

LogicalResult lowerNorm(StepLowering &step, Operation *op, ArrayRef<Value> operands, Value output) {
  auto rms = dyn_cast<llm::RmsNormOp>(op);
  auto layer = dyn_cast<llm::LayerNormOp>(op);
  double epsilon = rms ? rms.getEpsilon().convertToFloat() : layer.getEpsilon().convertToFloat();
  SmallVector<Value> args{operands[0], operands[1]};
  if (layer && operands[2]) args.push_back(operands[2]);
  args.push_back(output);
  bool hasBias = args.size() == 4;
  step.callKernel(op->getLoc(), op->getName().stripDialect(), kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value x = params[0], weight = params[1], out = params.back();
    int64_t features = staticDim(out, 1);
    Value zero = kb.index(0), width = kb.index(features), count = kb.f32(features);
    kb.forEach(zero, kb.dim(out, 0), [&](Value row) {
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
      Value inverse =
          kb.div(kb.f32(1.0), kb.sqrt(kb.add(kb.div(squares, count), kb.f32(epsilon))));
      kb.forEach(zero, width, [&](Value col) {
        Value normed = kb.mul(kb.sub(kb.load(x, {row, col}), mean), inverse);
        Value scaled = kb.mul(normed, kb.load(weight, {col}));
        if (hasBias) scaled = kb.add(scaled, kb.load(params[2], {col}));
        kb.store(scaled, out, {row, col});
      });
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
    int64_t features = staticDim(out, 1), heads = features / headDim;
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      Value position = kb.load(positions, {row});
      kb.forEach(kb.index(0), kb.index(heads), [&](Value head) {
        Value base = kb.mulIndex(head, kb.index(headDim));
        kb.forEach(kb.index(0), kb.index(halfRotary), [&](Value i) {
          Value cosine, sine;
          if (cached) {
            Value p = kb.toIndex(position);
            cosine = kb.load(params[2], {p, i});
            sine = kb.load(params[3], {p, i});
          } else {
            Value angle = kb.mul(kb.toF32(position), kb.load(params[2], {i}));
            cosine = kb.cos(angle);
            sine = kb.sin(angle);
          }
          // rotate_half pairs feature i with i + rotary/2; interleaved, 2i with 2i+1.
          Value first = interleaved ? kb.addIndex(base, kb.mulIndex(i, kb.index(2)))
                                    : kb.addIndex(base, i);
          Value second = kb.addIndex(first, kb.index(interleaved ? 1 : halfRotary));
          Value a = kb.load(x, {row, first}), c = kb.load(x, {row, second});
          kb.store(kb.sub(kb.mul(a, cosine), kb.mul(c, sine)), out, {row, first});
          kb.store(kb.add(kb.mul(c, cosine), kb.mul(a, sine)), out, {row, second});
        });
        // Features past the rotary dims pass through.
        kb.forEach(kb.index(2 * halfRotary), kb.index(headDim), [&](Value i) {
          Value col = kb.addIndex(base, i);
          kb.store(kb.load(x, {row, col}), out, {row, col});
        });
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
