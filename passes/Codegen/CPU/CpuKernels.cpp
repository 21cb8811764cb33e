//===- CpuKernels.cpp - token-wise llm ops as CPU loop nests --------------===//
//
// Every kernel here treats rows (tokens) independently: a row's result never
// depends on how many other rows the step carries.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

#include "llmc/Support/TensorShape.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace llmc::cpu {

func::FuncOp StepLowering::getOrCreateKernel(Location loc, StringRef name, const std::string &key,
                                             TypeRange argTypes, KernelBody body) {
  func::FuncOp &kernel = kernels[key];
  if (kernel) return kernel;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  std::string symbol = ("llmc_" + name + "_" + std::to_string(kernels.size())).str();
  kernel = func::FuncOp::create(b, loc, symbol, b.getFunctionType(argTypes, {}));
  kernel.setPrivate();
  // Internal linkage: LLVM may inline kernels and drop their symbols.
  kernel->setAttr("llvm.linkage", LLVM::LinkageAttr::get(b.getContext(), LLVM::Linkage::Internal));
  Block *entry = kernel.addEntryBlock();
  b.setInsertionPointToStart(entry);
  KernelBuilder kb(b, loc);
  body(kb, entry->getArguments());
  func::ReturnOp::create(b, loc);
  // Scratch of a static size moves to the entry block: an alloca in a loop
  // would grow the stack every iteration.
  kernel.walk([&](memref::AllocaOp alloca) {
    if (alloca->getBlock() != entry && alloca.getOperands().empty())
      alloca->moveBefore(entry, entry->begin());
  });
  return kernel;
}

Value StepLowering::scratchView(Location loc, Type element, int64_t cols, Value rows,
                                int64_t offset) {
  auto type = MemRefType::get({ShapedType::kDynamic, cols}, element);
  Value start = arith::ConstantIndexOp::create(b, loc, scratchOffset + offset);
  return memref::ViewOp::create(b, loc, type, workspace, start, ValueRange{rows});
}

QuantizedRows StepLowering::quantizedRows(Value input, int64_t blockSize, int64_t blocks) const {
  if (scratchHolds.input != input || scratchHolds.blockSize != blockSize ||
      scratchHolds.blocks != blocks)
    return {};
  return scratchHolds.rows;
}

void StepLowering::rememberQuantizedRows(Value input, int64_t blockSize, int64_t blocks,
                                         QuantizedRows rows) {
  scratchHolds = {input, blockSize, blocks, rows};
}

void StepLowering::callKernel(Location loc, StringRef name, const std::string &key,
                              ValueRange args, KernelBody body) {
  func::CallOp::create(b, loc, getOrCreateKernel(loc, name, key, args.getTypes(), body), args);
}

namespace {

/// Loads the element of `input` for output element (row, col): inputs are
/// [rows, features], [rows, 1] (one value per row), [features] (the same for
/// every row) or rank 0.
Value loadBroadcast(KernelBuilder &kb, Value input, Value row, Value col) {
  auto type = cast<MemRefType>(input.getType());
  switch (type.getRank()) {
  case 0: return kb.load(input, {});
  case 1: return kb.load(input, {col});
  default: return kb.load(input, {row, type.getShape().back() == 1 ? kb.index(0) : col});
  }
}

/// One row of a norm: each run of the weight's length of x's row (the whole
/// row, or one head of a per-head q/k norm) normalised (its mean subtracted
/// for a layer norm), scaled by the weight, plus the bias.
void emitNormRow(KernelBuilder &kb, Value x, Value weight, Value bias, Value out, Value row,
                 bool layer, double epsilon) {
  // A weight [n] scales every run of n features alike, one [groups, n] run
  // g by its row g (and the bias likewise).
  bool perGroup = cast<MemRefType>(weight.getType()).getRank() == 2;
  int64_t features = staticDim(out, 1), group = staticDim(weight, perGroup ? 1 : 0);
  Value zero = kb.index(0), width = kb.index(group), count = kb.f32(group);
  kb.forEach(zero, kb.index(features / group), [&](Value g) {
    Value first = kb.mulIndex(g, width);
    auto load = [&](Value memref, Value col) { return kb.load(memref, {row, kb.addIndex(first, col)}); };
    auto loadScale = [&](Value memref, Value col) {
      return perGroup ? kb.load(memref, {g, col}) : kb.load(memref, {col});
    };
    Value mean = kb.f32(0.0);
    if (layer) {
      Value sum = kb.reduce(zero, width, kb.f32(0.0),
                            [&](Value col, Value acc) { return kb.add(acc, load(x, col)); });
      mean = kb.div(sum, count);
    }
    Value squares = kb.reduce(zero, width, kb.f32(0.0), [&](Value col, Value acc) {
      Value centred = kb.sub(load(x, col), mean);
      return kb.add(acc, kb.mul(centred, centred));
    });
    Value inverse = kb.div(kb.f32(1.0), kb.sqrt(kb.add(kb.div(squares, count), kb.f32(epsilon))));
    kb.forEach(zero, width, [&](Value col) {
      Value normed = kb.mul(kb.sub(load(x, col), mean), inverse);
      Value scaled = kb.mul(normed, loadScale(weight, col));
      if (bias) scaled = kb.add(scaled, loadScale(bias, col));
      kb.store(scaled, out, {row, kb.addIndex(first, col)});
    });
  });
}

} // namespace

LogicalResult lowerScalarFunction(StepLowering &step, llm::ScalarFunctionOpInterface op,
                                  ArrayRef<Value> operands, Value output) {
  for (Value operand : operands)
    if (!operand) return op->emitOpError("has an omitted operand; elementwise ops take none");
  SmallVector<Value> args(operands.begin(), operands.end());
  args.push_back(output);
  StringRef name = op->getName().stripDialect();
  bool failedScalar = false;
  runOverRows(step, op->getLoc(), name, kernelKey(op, args), args, args.size() - 1,
              [&](KernelBuilder &kb, ValueRange params, Value begin, Value end) {
                    Value out = params.back();
                    kb.forEach(begin, end, [&](Value row) {
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
  // input, weight[, bias] -> output
  auto [epsilon, layer] = normKind(op);
  SmallVector<Value> args(operands);
  bool hasBias = args.size() == 3;
  args.push_back(output);
  runOverRows(step, op->getLoc(), op->getName().stripDialect(), kernelKey(op, args), args,
              args.size() - 1,
              [&, epsilon = epsilon, layer = layer](KernelBuilder &kb, ValueRange params,
                                                    Value begin, Value end) {
    Value bias = hasBias ? params[2] : Value();
    kb.forEach(begin, end, [&](Value row) {
      emitNormRow(kb, params[0], params[1], bias, params.back(), row, layer, epsilon);
    });
  });
  return success();
}

LogicalResult lowerAddNorm(StepLowering &step, Operation *op, ArrayRef<Value> operands,
                           ArrayRef<Value> outputs) {
  // lhs, rhs, weight[, bias] -> sum, normed
  auto [epsilon, layer] = normKind(op);
  SmallVector<Value> args(operands);
  bool hasBias = args.size() == 4;
  args.append(outputs.begin(), outputs.end());
  runOverRows(step, op->getLoc(), op->getName().stripDialect(), kernelKey(op, args), args,
              args.size() - 1,
              [&, epsilon = epsilon, layer = layer](KernelBuilder &kb, ValueRange params,
                                                    Value begin, Value end) {
    Value lhs = params[0], rhs = params[1], weight = params[2];
    Value bias = hasBias ? params[3] : Value();
    Value sum = params[params.size() - 2], normed = params.back();
    kb.forEach(begin, end, [&](Value row) {
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
        kb.store(widenWeight(kb.builder(), kb.location(), value), out, {row, col});
      });
    });
  });
  return success();
}

void emitRotatedHead(KernelBuilder &kb, const Rotation &rotation, Value position,
                     function_ref<Value(Value)> read, function_ref<void(Value, Value)> write) {
  kb.forEach(kb.index(0), kb.index(rotation.halfRotary),
             [&](Value i) { emitRotatedPair(kb, rotation, position, i, read, write); });
  // Features past the rotary dims pass through.
  kb.forEach(kb.index(2 * rotation.halfRotary), kb.index(rotation.headDim),
             [&](Value i) { write(i, read(i)); });
}

TokenRotation::TokenRotation(KernelBuilder &kb, const Rotation &given)
    : rotation(given), invFreq(given.invFreq), scale(given.scale) {
  if (!invFreq) return;
  OpBuilder &b = kb.builder();
  auto table = MemRefType::get({1, given.halfRotary}, b.getF32Type());
  rotation.invFreq = Value();
  rotation.scale = 1.0; // the tables hold it
  rotation.cosCache = memref::AllocaOp::create(b, kb.location(), table);
  rotation.sinCache = memref::AllocaOp::create(b, kb.location(), table);
}

Value TokenRotation::at(KernelBuilder &kb, Value position) {
  if (!invFreq) return position;
  Value row = kb.index(0);
  kb.forEach(kb.index(0), kb.index(rotation.halfRotary), [&](Value i) {
    Value angle = kb.mul(kb.toF32(position), kb.load(invFreq, {i}));
    kb.store(scaledBy(kb, kb.cos(angle), scale), rotation.cosCache, {row, i});
    kb.store(scaledBy(kb, kb.sin(angle), scale), rotation.sinCache, {row, i});
  });
  return arith::ConstantOp::create(kb.builder(), kb.location(),
                                   kb.builder().getIntegerAttr(position.getType(), 0));
}

LogicalResult lowerRope(StepLowering &step, Operation *op, ArrayRef<Value> operands, Value output) {
  auto cached = dyn_cast<llm::RopeCachedOp>(op);
  bool interleaved = cached ? cached.getInterleaved() : cast<llm::RopeOp>(op).getInterleaved();
  std::optional<APFloat> scaleAttr = cached ? std::nullopt : cast<llm::RopeOp>(op).getScale();
  double scale = scaleAttr ? scaleAttr->convertToDouble() : 1.0;
  int64_t headDim = cast<ShapedType>(op->getResult(0).getType()).getShape().back();
  SmallVector<Value> args(operands.begin(), operands.end());
  args.push_back(output);
  int64_t halfRotary = staticDim(operands[2], cached ? 1 : 0);
  step.callKernel(op->getLoc(), op->getName().stripDialect(), kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value x = params[0], positions = params[1], out = params.back();
    Rotation rotation{headDim, halfRotary, interleaved, cached ? Value() : params[2],
                      cached ? params[2] : Value(), cached ? params[3] : Value(), scale};
    int64_t heads = staticDim(out, 1) / headDim;
    TokenRotation token(kb, rotation);
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      Value position = token.at(kb, kb.load(positions, {row}));
      kb.forEach(kb.index(0), kb.index(heads), [&](Value head) {
        Value base = kb.mulIndex(head, kb.index(headDim));
        emitRotatedHead(
            kb, token.rotation, position,
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

void lowerCopyRows(StepLowering &step, Location loc, Value input, Value output) {
  SmallVector<Value> args{input, output};
  step.callKernel(loc, "copy_rows", kernelKey("copy_rows", args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value in = params[0], out = params[1];
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      kb.forEach(kb.index(0), kb.index(staticDim(out, 1)),
                 [&](Value col) { kb.store(kb.load(in, {row, col}), out, {row, col}); });
    });
  });
}

LogicalResult lowerPermuteFeatures(StepLowering &step, llm::PermuteFeaturesOp op,
                                   ArrayRef<Value> operands, Value output) {
  SmallVector<Value> args{operands[0], operands[1], output};
  step.callKernel(op.getLoc(), "permute_features", kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value in = params[0], indices = params[1], out = params[2];
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      kb.forEach(kb.index(0), kb.index(staticDim(out, 1)), [&](Value col) {
        Value source = kb.toIndex(kb.load(indices, {col}));
        kb.store(kb.load(in, {row, source}), out, {row, col});
      });
    });
  });
  return success();
}

LogicalResult lowerConcatHeads(StepLowering &step, llm::ConcatHeadsOp op,
                               ArrayRef<Value> operands, Value output) {
  int64_t heads = dimOf(op.getOutput(), 1), lhsWidth = dimOf(op.getLhs(), -1);
  int64_t rhsWidth = dimOf(op.getRhs(), -1);
  bool sharedRhs = dimOf(op.getRhs(), 1) == 1;
  SmallVector<Value> args{operands[0], operands[1], output};
  step.callKernel(op.getLoc(), "concat_heads", kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value lhs = params[0], rhs = params[1], out = params[2];
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      for (int64_t head = 0; head < heads; ++head) {
        int64_t at = head * (lhsWidth + rhsWidth), rhsAt = sharedRhs ? 0 : head * rhsWidth;
        kb.forEach(kb.index(0), kb.index(lhsWidth), [&](Value col) {
          kb.store(kb.load(lhs, {row, kb.addIndex(kb.index(head * lhsWidth), col)}), out,
                   {row, kb.addIndex(kb.index(at), col)});
        });
        kb.forEach(kb.index(0), kb.index(rhsWidth), [&](Value col) {
          kb.store(kb.load(rhs, {row, kb.addIndex(kb.index(rhsAt), col)}), out,
                   {row, kb.addIndex(kb.index(at + lhsWidth), col)});
        });
      }
    });
  });
  return success();
}

LogicalResult lowerHeadLinear(StepLowering &step, llm::HeadLinearOp op, ArrayRef<Value> operands,
                              Value output) {
  int64_t heads = dimOf(op.getWeight(), 0), in = dimOf(op.getWeight(), 1);
  int64_t out = dimOf(op.getWeight(), 2);
  SmallVector<Value> buffers{operands[0], operands[1], output};
  runOverRows(step, op.getLoc(), "head_linear", kernelKey(op, buffers), buffers, 2,
              [&](KernelBuilder &kb, ValueRange params, Value begin, Value end) {
    Value x = params[0], weight = params[1], result = params[2];
    kb.forEach(begin, end, [&](Value row) {
      kb.forEach(kb.index(0), kb.index(heads), [&](Value head) {
        Value inAt = kb.mulIndex(head, kb.index(in)), outAt = kb.mulIndex(head, kb.index(out));
        auto column = [&](Value o) { return kb.addIndex(outAt, o); };
        kb.forEach(kb.index(0), kb.index(out),
                   [&](Value o) { kb.store(kb.f32(0), result, {row, column(o)}); });
        // Row k of the head's weight scaled into the whole result row: the
        // inner loop runs along contiguous weights, which LLVM widens.
        kb.forEach(kb.index(0), kb.index(in), [&](Value k) {
          Value xk = kb.load(x, {row, kb.addIndex(inAt, k)});
          kb.forEach(kb.index(0), kb.index(out), [&](Value o) {
            Value sum = kb.add(kb.load(result, {row, column(o)}),
                               kb.mul(xk, kb.load(weight, {head, k, o})));
            kb.store(sum, result, {row, column(o)});
          });
        });
      });
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
