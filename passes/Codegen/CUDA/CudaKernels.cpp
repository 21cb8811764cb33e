//===- CudaKernels.cpp - token-wise llm ops as GPU row kernels ------------===//
//
// One thread block per row (token or sequence); its threads stride over the
// row's features, so loads of neighbouring threads are neighbouring
// addresses. Values are read and widened to f32, computed in f32 with the
// same scalar code as the CPU kernels, and narrowed to the storage type
// when stored. Row reductions (norms) go through gpu.all_reduce.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CUDA/CudaLowering.h"

#include "llmc/Support/TensorShape.h"

using namespace mlir;

namespace llmc::cuda {

using codegen::staticDim;

namespace {

/// The element at `indices`, widened to f32 when it is a narrower float.
Value loadF32(codegen::KernelBuilder &kb, Value memref, ValueRange indices) {
  Value value = kb.load(memref, indices);
  if (isa<BFloat16Type, Float16Type>(value.getType()))
    return arith::ExtFOp::create(kb.builder(), kb.location(), kb.builder().getF32Type(), value);
  return value;
}

/// Stores `value`, narrowed to the memref's element type when that is a
/// narrower float.
void storeNarrowed(codegen::KernelBuilder &kb, Value value, Value memref, ValueRange indices) {
  Type element = cast<MemRefType>(memref.getType()).getElementType();
  if (element != value.getType() && isa<FloatType>(element))
    value = arith::TruncFOp::create(kb.builder(), kb.location(), element, value);
  kb.store(value, memref, indices);
}

/// The stores of one feature, held back by RowThread::forEach until the
/// loads of the features unrolled with it have been issued.
class DeferredStores {
public:
  /// Stores `value` (narrowed to the memref's element type) later.
  void store(Value value, Value memref, ValueRange indices) {
    pending.push_back({value, memref, SmallVector<Value>(indices)});
  }
  void emit(codegen::KernelBuilder &kb) const {
    for (const Pending &each : pending) storeNarrowed(kb, each.value, each.memref, each.indices);
  }

private:
  struct Pending {
    Value value, memref;
    SmallVector<Value> indices;
  };
  SmallVector<Pending, 2> pending;
};

/// Features a thread of a row kernel works on at once: their loads are in
/// flight together.
inline constexpr int64_t kRowUnroll = 8;

/// Moves the loads among the operations [first, end) of one block, and the
/// index arithmetic they need, above the others, each part in its order.
/// The backends schedule near source order, so a feature's maths placed
/// before the next feature's loads would hold those loads back until its own
/// arrived. Safe because nothing in the range writes memory.
void hoistLoads(Block::iterator first, Block::iterator end) {
  SmallVector<Operation *> ops;
  for (Operation &op : llvm::make_range(first, end)) ops.push_back(&op);
  llvm::SmallPtrSet<Operation *, 32> feeding;
  for (Operation *op : llvm::reverse(ops)) {
    bool feeds = isa<memref::LoadOp>(op) || llvm::any_of(op->getUsers(), [&](Operation *user) {
      return feeding.contains(user);
    });
    if (feeds) feeding.insert(op);
  }
  auto anchor = llvm::find_if(ops, [&](Operation *op) { return !feeding.contains(op); });
  if (anchor == ops.end()) return;
  for (Operation *op : llvm::make_range(std::next(anchor), ops.end()))
    if (feeding.contains(op)) op->moveBefore(*anchor);
}

/// The block's row and the thread's place in it.
struct RowThread {
  Value row, thread;
  explicit RowThread(codegen::KernelBuilder &kb) {
    row = gpu::BlockIdOp::create(kb.builder(), kb.location(), gpu::Dimension::x);
    thread = gpu::ThreadIdOp::create(kb.builder(), kb.location(), gpu::Dimension::x);
  }
  /// body(i, stores) for i = thread, thread + block size, ... < count; body
  /// loads and computes, and hands its stores to `stores`. The features are
  /// taken kRowUnroll at a time, unrolled; a group's loads come first, then
  /// its maths, then its stores: a GPU issues each warp's instructions in
  /// order, and nothing may move a load above a store to memory it might
  /// alias, so a loop of load-then-store pays one memory round trip per
  /// feature. A feature past `count` (the last group's tail) runs body on
  /// feature count - 1, and its stores are skipped.
  void forEach(codegen::KernelBuilder &kb, int64_t count,
               function_ref<void(Value, DeferredStores &)> body) const {
    int64_t chunks = llvm::divideCeil(count, kRowBlockSize);
    int64_t unroll = std::min(chunks, kRowUnroll);
    int64_t groups = llvm::divideCeil(chunks, unroll);
    bool ragged = groups * unroll * kRowBlockSize != count;
    auto emitGroup = [&](Value first) {
      SmallVector<std::pair<Value, DeferredStores>> features(unroll);
      Block *block = kb.builder().getInsertionBlock();
      Block::iterator end = kb.builder().getInsertionPoint();
      bool atBegin = end == block->begin();
      Block::iterator last = atBegin ? end : std::prev(end);
      for (int64_t k = 0; k < unroll; ++k) {
        Value col = kb.addIndex(first, kb.index(k * kRowBlockSize));
        Value valid = ragged ? kb.lessThan(col, kb.index(count)) : Value();
        features[k].first = valid;
        body(ragged ? kb.minIndex(col, kb.index(count - 1)) : col, features[k].second);
      }
      hoistLoads(atBegin ? block->begin() : std::next(last), kb.builder().getInsertionPoint());
      for (const auto &[valid, stores] : features) {
        if (valid) kb.ifThen(valid, [&] { stores.emit(kb); });
        else stores.emit(kb);
      }
    };
    if (groups == 1) return emitGroup(thread);
    int64_t stride = unroll * kRowBlockSize;
    scf::ForOp::create(kb.builder(), kb.location(), thread, kb.index(groups * stride), kb.index(stride),
                       ValueRange{}, [&](OpBuilder &nested, Location loc, Value first, ValueRange) {
                         OpBuilder::InsertionGuard guard(kb.builder());
                         kb.builder().setInsertionPoint(nested.getInsertionBlock(),
                                                        nested.getInsertionPoint());
                         emitGroup(first);
                         scf::YieldOp::create(kb.builder(), loc);
                       });
  }
  /// The sum over the thread's features of body(i), then over the block.
  Value sum(codegen::KernelBuilder &kb, int64_t count, function_ref<Value(Value)> body) const {
    auto loop = scf::ForOp::create(
        kb.builder(), kb.location(), thread, kb.index(count), kb.index(kRowBlockSize),
        ValueRange{kb.f32(0.0)}, [&](OpBuilder &nested, Location loc, Value i, ValueRange acc) {
          OpBuilder::InsertionGuard guard(kb.builder());
          kb.builder().setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
          scf::YieldOp::create(kb.builder(), loc, kb.add(acc.front(), body(i)));
        });
    return gpu::AllReduceOp::create(kb.builder(), kb.location(), loop.getResult(0),
                                    gpu::AllReduceOperationAttr::get(kb.builder().getContext(),
                                                                     gpu::AllReduceOperation::ADD),
                                    /*uniform=*/true);
  }
};

/// The element of `input` for output element (row, col): inputs are
/// [rows, features], [rows, 1] (one value per row), [features] or rank 0.
Value loadBroadcast(codegen::KernelBuilder &kb, Value input, Value row, Value col) {
  auto type = cast<MemRefType>(input.getType());
  switch (type.getRank()) {
  case 0: return loadF32(kb, input, {});
  case 1: return loadF32(kb, input, {col});
  default: return loadF32(kb, input, {row, type.getShape().back() == 1 ? kb.index(0) : col});
  }
}

/// The TensorRefs of `operands`, failing on an omitted one.
FailureOr<SmallVector<TensorRef>> required(Operation *op, ArrayRef<std::optional<TensorRef>> operands) {
  SmallVector<TensorRef> refs;
  for (const auto &operand : operands) {
    if (!operand) return op->emitOpError("has an omitted operand this kernel needs"), failure();
    refs.push_back(*operand);
  }
  return refs;
}

/// What identifies a kernel beyond its argument types: the op's name,
/// inherent attributes and regions.
std::string opKey(Operation *op) { return codegen::kernelKey(op, TypeRange{}); }

/// The key of a KV-writing op's kernel, which takes the layer as an
/// argument: every layer shares one kernel.
std::string keyWithoutLayer(Operation *op) {
  NamedAttrList properties(cast<DictionaryAttr>(op->getPropertiesAsAttribute()));
  properties.erase("layer");
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getName() << properties.getDictionary(op->getContext());
  return key;
}

} // namespace

LogicalResult lowerEmbedding(StepContext &step, llm::EmbeddingOp op,
                             ArrayRef<std::optional<TensorRef>> operands, const TensorRef &output) {
  auto refs = required(op, operands);
  if (failed(refs)) return failure();
  refs->push_back(output);
  bool transposed = op.getTransposeTable();
  step.launchRows(op.getLoc(), "embedding", opKey(op), output.sizes[0], *refs,
                  [&](codegen::KernelBuilder &kb, ValueRange params) {
    Value table = params[0], ids = params[1], out = params[2];
    RowThread rt(kb);
    Value id = kb.toIndex(kb.load(ids, {rt.row}));
    rt.forEach(kb, staticDim(out, 1), [&](Value col, DeferredStores &stores) {
      Value value = transposed ? kb.load(table, {col, id}) : kb.load(table, {id, col});
      stores.store(value, out, {rt.row, col});
    });
  });
  return success();
}

LogicalResult lowerGatherRows(StepContext &step, llm::GatherRowsOp op,
                              ArrayRef<std::optional<TensorRef>> operands, const TensorRef &output) {
  auto refs = required(op, operands);
  if (failed(refs)) return failure();
  refs->push_back(output);
  step.launchRows(op.getLoc(), "gather_rows", opKey(op), output.sizes[0], *refs,
                  [&](codegen::KernelBuilder &kb, ValueRange params) {
    Value in = params[0], indices = params[1], out = params[2];
    RowThread rt(kb);
    Value source = kb.toIndex(kb.load(indices, {rt.row}));
    rt.forEach(kb, staticDim(out, 1), [&](Value col, DeferredStores &stores) {
      stores.store(kb.load(in, {source, col}), out, {rt.row, col});
    });
  });
  return success();
}

namespace {
/// `rows` (a plan dimension: an integer, a symbol or a scaled symbol) times
/// `factor`.
Attribute timesRows(MLIRContext *context, Attribute rows, int64_t factor) {
  if (auto value = dyn_cast<IntegerAttr>(rows)) return planDim(context, value.getInt() * factor);
  if (auto symbol = dyn_cast<StringAttr>(rows)) return planDim(context, symbol.getValue(), factor);
  auto scaled = cast<ArrayAttr>(rows);
  return planDim(context, cast<StringAttr>(scaled[0]).getValue(),
                 cast<IntegerAttr>(scaled[1]).getInt() * factor,
                 cast<IntegerAttr>(scaled[2]).getInt());
}
} // namespace

LogicalResult lowerNorm(StepContext &step, Operation *op, ArrayRef<std::optional<TensorRef>> operands,
                        ArrayRef<TensorRef> outputs) {
  auto [epsilon, layer] = codegen::normKind(op);
  bool fused = isa<llm::AddRmsNormOp, llm::AddLayerNormOp>(op);
  // input, weight[, bias] or lhs, rhs, weight[, bias]; then the outputs.
  size_t inputs = fused ? 3 : 2;
  auto rowType = cast<ShapedType>(op->getResult(op->getNumResults() - 1).getType());
  int64_t rowLength = 1;
  for (int64_t dim : rowType.getShape().drop_front()) rowLength *= dim;
  // Each run of the weight's length is normalised on its own: a weight
  // shorter than the row is a per-head norm (Qwen3's and Gemma-3's q/k
  // norms), each head a row of its own, one block per (row, head).
  // A weight [groups, n] has a row for each head.
  auto weightType = cast<ShapedType>(op->getOperand(inputs - 1).getType());
  bool perHead = weightType.getRank() == 2;
  int64_t features = weightType.getShape().back();
  if (features <= 0 || rowLength % features != 0)
    return op->emitOpError("has a weight whose length does not divide the row's");
  int64_t heads = rowLength / features;
  if (heads > 1 && fused)
    return op->emitOpError("normalises each head on its own after a residual add, which the "
                           "CUDA norm kernels do not compute");
  auto refs = required(op, operands.take_front(inputs));
  if (failed(refs)) return failure();
  bool hasBias = layer && operands.size() > inputs;
  if (hasBias) refs->push_back(*operands[inputs]);
  refs->append(outputs.begin(), outputs.end());
  Attribute rows = timesRows(op->getContext(), outputs.back().sizes[0], heads);
  step.launchRows(op->getLoc(), op->getName().stripDialect(), opKey(op), rows, *refs,
                  [&, epsilon = epsilon, layer = layer](codegen::KernelBuilder &kb,
                                                        ValueRange params) {
    RowThread rt(kb);
    // The block's row of the tensors, and where its head's features start.
    Value row = rt.row, head = kb.index(0), first = kb.index(0);
    if (heads > 1) {
      row = kb.divIndex(rt.row, kb.index(heads));
      head = kb.remIndex(rt.row, kb.index(heads));
      first = kb.mulIndex(head, kb.index(features));
    }
    auto scaleAt = [&](Value col) -> SmallVector<Value> {
      if (perHead) return {head, col};
      return {col};
    };
    auto at = [&](Value col) -> SmallVector<Value> { return {row, kb.addIndex(first, col)}; };
    Value normed = params.back();
    Value x = params[0], weight = params[inputs - 1];
    Value bias = hasBias ? params[inputs] : Value();
    if (fused) {
      // The sum is stored, then normalised from memory as an unfused norm
      // reads its input: the same rounding to the storage type. Each thread
      // reads back only the features it wrote.
      x = params[params.size() - 2];
      rt.forEach(kb, features, [&](Value col, DeferredStores &stores) {
        Value sum = kb.add(loadF32(kb, params[0], at(col)), loadF32(kb, params[1], at(col)));
        stores.store(sum, x, at(col));
      });
    }
    Value count = kb.f32(features);
    Value mean = kb.f32(0.0);
    if (layer)
      mean = kb.div(rt.sum(kb, features, [&](Value col) { return loadF32(kb, x, at(col)); }),
                    count);
    Value squares = rt.sum(kb, features, [&](Value col) {
      Value centred = kb.sub(loadF32(kb, x, at(col)), mean);
      return kb.mul(centred, centred);
    });
    Value inverse = kb.div(kb.f32(1.0), kb.sqrt(kb.add(kb.div(squares, count), kb.f32(epsilon))));
    rt.forEach(kb, features, [&](Value col, DeferredStores &stores) {
      Value scaled = kb.mul(kb.mul(kb.sub(loadF32(kb, x, at(col)), mean), inverse),
                            loadF32(kb, weight, scaleAt(col)));
      if (bias) scaled = kb.add(scaled, loadF32(kb, bias, scaleAt(col)));
      stores.store(scaled, normed, at(col));
    });
  });
  return success();
}

LogicalResult lowerScalarFunction(StepContext &step, llm::ScalarFunctionOpInterface op,
                                  ArrayRef<std::optional<TensorRef>> operands, const TensorRef &output) {
  auto refs = required(op, operands);
  if (failed(refs)) return failure();
  for (Value operand : op->getOperands())
    if (!cast<ShapedType>(operand.getType()).getElementType().isF32())
      return op->emitOpError("takes ") << operand.getType() << "; CUDA elementwise kernels take f32 models";
  refs->push_back(output);
  bool failedScalar = false;
  step.launchRows(op->getLoc(), op->getName().stripDialect(), opKey(op), output.sizes[0], *refs,
                  [&](codegen::KernelBuilder &kb, ValueRange params) {
    RowThread rt(kb);
    Value out = params.back();
    rt.forEach(kb, staticDim(out, 1), [&](Value col, DeferredStores &stores) {
      SmallVector<Value> values;
      for (Value in : params.drop_back()) values.push_back(loadBroadcast(kb, in, rt.row, col));
      Value result = op.buildScalar(kb.builder(), kb.location(), values);
      if (!result) {
        failedScalar = true;
        return;
      }
      stores.store(result, out, {rt.row, col});
    });
  });
  if (failedScalar) return op->emitOpError("has no scalar form for these element types");
  return success();
}

namespace {
/// Rotates `heads` heads of one row: thread t takes rotary pair t % half of
/// head t / half, then features past the rotary dims are copied.
void rotateHeads(codegen::KernelBuilder &kb, const RowThread &rt, const codegen::Rotation &rotation,
                 int64_t heads, Value position, function_ref<Value(Value)> read,
                 function_ref<void(DeferredStores &, Value, Value)> write) {
  int64_t half = rotation.halfRotary, headDim = rotation.headDim;
  rt.forEach(kb, heads * half, [&](Value pair, DeferredStores &stores) {
    Value base = kb.mulIndex(kb.divIndex(pair, kb.index(half)), kb.index(headDim));
    codegen::emitRotatedPair(
        kb, rotation, position, kb.remIndex(pair, kb.index(half)),
        [&](Value i) { return read(kb.addIndex(base, i)); },
        [&](Value i, Value value) { write(stores, kb.addIndex(base, i), value); });
  });
  int64_t passed = headDim - 2 * half;
  if (passed == 0) return;
  rt.forEach(kb, heads * passed, [&](Value index, DeferredStores &stores) {
    Value head = kb.divIndex(index, kb.index(passed));
    Value feature = kb.addIndex(kb.mulIndex(head, kb.index(headDim)),
                                kb.addIndex(kb.index(2 * half), kb.remIndex(index, kb.index(passed))));
    write(stores, feature, read(feature));
  });
}
} // namespace

LogicalResult lowerRope(StepContext &step, Operation *op, ArrayRef<std::optional<TensorRef>> operands,
                        const TensorRef &output) {
  auto cached = dyn_cast<llm::RopeCachedOp>(op);
  bool interleaved = cached ? cached.getInterleaved() : cast<llm::RopeOp>(op).getInterleaved();
  // YaRN's and LongRoPE's attention factor scales cos and sin (cached tables
  // hold it already), as on the CPU.
  std::optional<APFloat> scaleAttr = cached ? std::nullopt : cast<llm::RopeOp>(op).getScale();
  double scale = scaleAttr ? scaleAttr->convertToDouble() : 1.0;
  int64_t headDim = cast<ShapedType>(op->getResult(0).getType()).getShape().back();
  auto refs = required(op, operands);
  if (failed(refs)) return failure();
  refs->push_back(output);
  step.launchRows(op->getLoc(), op->getName().stripDialect(), opKey(op), output.sizes[0], *refs,
                  [&](codegen::KernelBuilder &kb, ValueRange params) {
    RowThread rt(kb);
    Value x = params[0], positions = params[1], out = params.back();
    int64_t halfRotary = staticDim(params[2], cached ? 1 : 0);
    codegen::Rotation rotation{headDim, halfRotary, interleaved, cached ? Value() : params[2],
                               cached ? params[2] : Value(), cached ? params[3] : Value(), scale};
    Value position = kb.load(positions, {rt.row});
    rotateHeads(kb, rt, rotation, staticDim(out, 1) / headDim, position,
                [&](Value i) { return loadF32(kb, x, {rt.row, i}); },
                [&](DeferredStores &stores, Value i, Value value) {
                  stores.store(value, out, {rt.row, i});
                });
  });
  return success();
}

LogicalResult lowerConcatHeads(StepContext &step, llm::ConcatHeadsOp op,
                               ArrayRef<std::optional<TensorRef>> operands,
                               const TensorRef &output) {
  auto refs = required(op, operands);
  if (failed(refs)) return failure();
  refs->push_back(output);
  int64_t heads = dimOf(op.getOutput(), 1), lhsWidth = dimOf(op.getLhs(), -1);
  int64_t rhsWidth = dimOf(op.getRhs(), -1), width = lhsWidth + rhsWidth;
  bool sharedRhs = dimOf(op.getRhs(), 1) == 1;
  step.launchRows(op.getLoc(), "concat_heads", opKey(op), output.sizes[0], *refs,
                  [&](codegen::KernelBuilder &kb, ValueRange params) {
    RowThread rt(kb);
    Value lhs = params[0], rhs = params[1], out = params[2];
    rt.forEach(kb, heads * width, [&](Value col, DeferredStores &stores) {
      Value head = kb.divIndex(col, kb.index(width)), within = kb.remIndex(col, kb.index(width));
      Value fromLhs = kb.lessThan(within, kb.index(lhsWidth));
      // Both loads stay in bounds: a feature index past either operand's
      // width is clamped to its last, and the select keeps the right one.
      Value lhsAt = kb.addIndex(kb.mulIndex(head, kb.index(lhsWidth)),
                                kb.minIndex(within, kb.index(lhsWidth - 1)));
      Value rhsFeature = kb.maxIndex(kb.subIndex(within, kb.index(lhsWidth)), kb.index(0));
      Value rhsAt = sharedRhs ? rhsFeature
                              : kb.addIndex(kb.mulIndex(head, kb.index(rhsWidth)), rhsFeature);
      Value value = arith::SelectOp::create(kb.builder(), kb.location(), fromLhs,
                                            kb.load(lhs, {rt.row, lhsAt}),
                                            kb.load(rhs, {rt.row, rhsAt}));
      stores.store(value, out, {rt.row, col});
    });
  });
  return success();
}

LogicalResult lowerSplitQkv(StepContext &step, llm::SplitQkvOp op,
                            ArrayRef<std::optional<TensorRef>> operands, ArrayRef<TensorRef> outputs) {
  auto refs = required(op, operands);
  if (failed(refs)) return failure();
  refs->append(outputs.begin(), outputs.end());
  step.launchRows(op.getLoc(), "split_qkv", opKey(op), outputs.front().sizes[0], *refs,
                  [&](codegen::KernelBuilder &kb, ValueRange params) {
    RowThread rt(kb);
    int64_t start = 0;
    for (Value out : params.drop_front()) {
      Value offset = kb.index(start);
      rt.forEach(kb, staticDim(out, 1), [&](Value col, DeferredStores &stores) {
        stores.store(kb.load(params[0], {rt.row, kb.addIndex(offset, col)}), out, {rt.row, col});
      });
      start += staticDim(out, 1);
    }
  });
  return success();
}

LogicalResult lowerPagedKvWrite(StepContext &step, Operation *op,
                                ArrayRef<std::optional<TensorRef>> operands, ArrayRef<TensorRef> outputs) {
  // llm.paged_kv_write: pool, k, v, slots. llm.rope_paged_kv_write: pool, q,
  // k, v, slots, positions, then inv_freq or the cos and sin caches; its
  // output is the rotated query.
  auto fused = dyn_cast<llm::RopePagedKvWriteOp>(op);
  int64_t layer = fused ? fused.getLayer() : cast<llm::PagedKvWriteOp>(op).getLayer();
  if (!fused) {
    auto write = cast<llm::PagedKvWriteOp>(op);
    if (!write.getValue())
      return op->emitOpError("caches one row per token whose first features are the values "
                             "(multi-head latent attention over its latent); the CUDA attention "
                             "kernels read key and value rows, the CPU target runs it");
    if (write.getKey().getType() != write.getValue().getType())
      return op->emitOpError("writes values narrower than its keys (multi-head latent "
                             "attention); the CUDA attention kernels take one head_dim, the CPU "
                             "target runs it");
  }
  SmallVector<TensorRef> refs;
  for (const auto &operand : operands)
    if (operand) refs.push_back(*operand);
  bool cached = fused && fused.getCosCache();
  refs.append(outputs.begin(), outputs.end());
  Attribute rows = refs[fused ? 2 : 1].sizes[0];
  size_t layerParam = refs.size();
  step.launchRows(op->getLoc(), op->getName().stripDialect(), keyWithoutLayer(op), rows, refs,
                  [&](codegen::KernelBuilder &kb, ValueRange params) {
    RowThread rt(kb);
    Value pool = params[0];
    auto poolShape = cast<MemRefType>(pool.getType()).getShape();
    int64_t kvHeads = poolShape[3], blockSize = poolShape[4], headDim = poolShape[5];
    Value keys = params[fused ? 2 : 1], values = params[fused ? 3 : 2];
    Value slots = params[fused ? 4 : 3];
    Value zero = kb.index(0), one = kb.index(1), layerIndex = kb.toIndex(params[layerParam]);
    std::optional<codegen::Rotation> rotation;
    Value position;
    if (fused) {
      Value out = params[layerParam - 1];
      int64_t half = staticDim(params[6], cached ? 1 : 0);
      rotation = codegen::Rotation{headDim, half, fused.getInterleaved(),
                                   cached ? Value() : params[6], cached ? params[6] : Value(),
                                   cached ? params[7] : Value()};
      position = kb.load(params[5], {rt.row});
      rotateHeads(kb, rt, *rotation, staticDim(out, 1) / headDim, position,
                  [&](Value i) { return loadF32(kb, params[1], {rt.row, i}); },
                  [&](DeferredStores &stores, Value i, Value value) {
                    stores.store(value, out, {rt.row, i});
                  });
    }
    Value slot = kb.toIndex(kb.load(slots, {rt.row}));
    // A negative slot marks a token whose K/V must not be cached.
    kb.ifThen(kb.lessThan(kb.index(-1), slot), [&] {
      Value block = kb.divIndex(slot, kb.index(blockSize));
      Value offset = kb.remIndex(slot, kb.index(blockSize));
      auto poolIndex = [&](Value kv, Value feature) -> SmallVector<Value> {
        Value head = kb.divIndex(feature, kb.index(headDim));
        return {layerIndex, block, kv, head, offset, kb.remIndex(feature, kb.index(headDim))};
      };
      rt.forEach(kb, kvHeads * headDim, [&](Value feature, DeferredStores &stores) {
        stores.store(loadF32(kb, values, {rt.row, feature}), pool, poolIndex(one, feature));
        if (!rotation)
          stores.store(loadF32(kb, keys, {rt.row, feature}), pool, poolIndex(zero, feature));
      });
      if (rotation)
        rotateHeads(kb, rt, *rotation, kvHeads, position,
                    [&](Value i) { return loadF32(kb, keys, {rt.row, i}); },
                    [&](DeferredStores &stores, Value i, Value value) {
                      stores.store(value, pool, poolIndex(zero, i));
                    });
    });
  }, {planDim(op->getContext(), layer)});
  return success();
}

LogicalResult lowerEpilogue(StepContext &step, Operation *op, const EpilogueRefs &epilogue,
                            const TensorRef &product, const TensorRef &output) {
  // product, [bias], extras..., output
  SmallVector<TensorRef> refs{product};
  bool hasBias = epilogue.bias.has_value();
  if (hasBias) refs.push_back(*epilogue.bias);
  llvm::append_range(refs, epilogue.extras);
  refs.push_back(output);
  unsigned accumulators = epilogue.accumulators;
  step.launchRows(op->getLoc(), "epilogue", opKey(op), output.sizes[0], refs,
                  [&](codegen::KernelBuilder &kb, ValueRange params) {
    RowThread rt(kb);
    Value out = params.back();
    int64_t columns = staticDim(out, 1);
    ValueRange extras = params.drop_front(hasBias ? 2 : 1).drop_back();
    rt.forEach(kb, columns, [&](Value col, DeferredStores &stores) {
      SmallVector<Value> scalars;
      for (unsigned part = 0; part < accumulators; ++part) {
        Value column = kb.addIndex(col, kb.index(part * columns));
        Value acc = kb.load(params[0], {rt.row, column});
        scalars.push_back(hasBias ? kb.add(acc, loadF32(kb, params[1], {column})) : acc);
      }
      for (Value extra : extras) scalars.push_back(loadBroadcast(kb, extra, rt.row, col));
      // No body (a logits head with only a bias): the biased product itself.
      Value result = epilogue.body->empty()
                         ? scalars.front()
                         : llm::inlineScalarBody(kb.builder(), *epilogue.body, scalars);
      stores.store(result, out, {rt.row, col});
    });
  });
  return success();
}

} // namespace llmc::cuda
