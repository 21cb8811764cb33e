//===- CpuAttention.cpp - the paged KV write and paged attention ----------===//
//
// Paged attention walks a sequence's blocks through its block table and
// keeps an online softmax (running max, running sum, rescaled accumulator):
// one pass over the keys, O(head_dim) extra memory per query row whatever the
// context length, as flash attention does.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

using namespace mlir;

namespace llmc::cpu {

namespace {
/// The static dims of a [layers, blocks, 2, kv_heads, block_size, head_dim] pool.
struct PoolShape {
  int64_t kvHeads, blockSize, headDim;
  explicit PoolShape(Value pool) {
    auto shape = cast<MemRefType>(pool.getType()).getShape();
    kvHeads = shape[3];
    blockSize = shape[4];
    headDim = shape[5];
  }
};
} // namespace

LogicalResult lowerPagedKvWrite(StepLowering &step, llm::PagedKvWriteOp op,
                                ArrayRef<Value> operands) {
  SmallVector<Value> args{operands[0], operands[1], operands[2], operands[3]};
  int64_t layer = op.getLayer();
  step.callKernel(op.getLoc(), "paged_kv_write", kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value pool = params[0], keys = params[1], values = params[2], slots = params[3];
    PoolShape shape(pool);
    Value zero = kb.index(0), one = kb.index(1), layerIndex = kb.index(layer);
    Value blockSize = kb.index(shape.blockSize), headDim = kb.index(shape.headDim);
    kb.forEach(zero, kb.dim(keys, 0), [&](Value token) {
      Value slot = kb.toIndex(kb.load(slots, {token}));
      // A negative slot marks a token whose K/V must not be cached.
      kb.ifThen(kb.lessThan(kb.index(-1), slot), [&] {
        Value block = kb.divIndex(slot, blockSize), offset = kb.remIndex(slot, blockSize);
        kb.forEach(zero, kb.index(shape.kvHeads), [&](Value head) {
          Value base = kb.mulIndex(head, headDim);
          kb.forEach(zero, headDim, [&](Value d) {
            Value col = kb.addIndex(base, d);
            kb.store(kb.load(keys, {token, col}), pool, {layerIndex, block, zero, head, offset, d});
            kb.store(kb.load(values, {token, col}), pool, {layerIndex, block, one, head, offset, d});
          });
        });
      });
    });
  });
  return success();
}

LogicalResult lowerRopePagedKvWrite(StepLowering &step, llm::RopePagedKvWriteOp op,
                                    ArrayRef<Value> operands, Value rotatedQuery) {
  // pool, q, k, v, slots, positions, then inv_freq or the cos and sin caches.
  bool cached = static_cast<bool>(op.getCosCache());
  SmallVector<Value> args(operands);
  args.push_back(rotatedQuery);
  int64_t layer = op.getLayer();
  bool interleaved = op.getInterleaved();
  int64_t halfRotary = cast<MemRefType>(args[6].getType()).getShape().back();
  step.callKernel(op.getLoc(), "rope_paged_kv_write", kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value pool = params[0], query = params[1], keys = params[2], values = params[3];
    Value slots = params[4], positions = params[5], out = params.back();
    PoolShape shape(pool);
    Rotation rotation{shape.headDim, halfRotary, interleaved, cached ? Value() : params[6],
                      cached ? params[6] : Value(), cached ? params[7] : Value()};
    int64_t heads = cast<MemRefType>(out.getType()).getDimSize(1) / shape.headDim;
    Value zero = kb.index(0), one = kb.index(1), layerIndex = kb.index(layer);
    Value blockSize = kb.index(shape.blockSize), headDim = kb.index(shape.headDim);
    kb.forEach(zero, kb.dim(out, 0), [&](Value token) {
      Value position = kb.load(positions, {token});
      kb.forEach(zero, kb.index(heads), [&](Value head) {
        Value base = kb.mulIndex(head, headDim);
        emitRotatedHead(
            kb, rotation, position, [&](Value i) { return kb.load(query, {token, kb.addIndex(base, i)}); },
            [&](Value i, Value value) { kb.store(value, out, {token, kb.addIndex(base, i)}); });
      });
      Value slot = kb.toIndex(kb.load(slots, {token}));
      // A negative slot marks a token whose K/V must not be cached.
      kb.ifThen(kb.lessThan(kb.index(-1), slot), [&] {
        Value block = kb.divIndex(slot, blockSize), offset = kb.remIndex(slot, blockSize);
        kb.forEach(zero, kb.index(shape.kvHeads), [&](Value head) {
          Value base = kb.mulIndex(head, headDim);
          emitRotatedHead(
              kb, rotation, position,
              [&](Value i) { return kb.load(keys, {token, kb.addIndex(base, i)}); },
              [&](Value i, Value value) {
                kb.store(value, pool, {layerIndex, block, zero, head, offset, i});
              });
          kb.forEach(zero, headDim, [&](Value d) {
            kb.store(kb.load(values, {token, kb.addIndex(base, d)}), pool,
                     {layerIndex, block, one, head, offset, d});
          });
        });
      });
    });
  });
  return success();
}

LogicalResult lowerPagedAttention(StepLowering &step, llm::PagedAttentionOp op,
                                  ArrayRef<Value> operands, Value output) {
  // query, pool, block_tables, context_lens, cu_seqlens_q, output
  if (!op.getCuSeqlensQ()) return op.emitOpError("is not ragged: run llm-ragged-batching first");
  SmallVector<Value> args(operands);
  args.push_back(output);
  int64_t layer = op.getLayer();
  double scale = op.getScale().convertToFloat();
  std::optional<int64_t> window = op.getSlidingWindow();
  std::optional<float> softcap;
  if (auto cap = op.getSoftcap()) softcap = cap->convertToFloat();
  step.callKernel(op.getLoc(), "paged_attention", kernelKey(op, args), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    Value query = params[0], pool = params[1], blockTables = params[2];
    Value contextLens = params[3], cuSeqlens = params[4], out = params[5];
    PoolShape shape(pool);
    int64_t heads = cast<MemRefType>(query.getType()).getDimSize(1) / shape.headDim;
    int64_t group = heads / shape.kvHeads;
    OpBuilder &b = kb.builder();
    // The rescaled sum of values of one query row; allocated once per call.
    Value accumulator = memref::AllocaOp::create(
        b, kb.location(), MemRefType::get({shape.headDim}, b.getF32Type()));
    Value zero = kb.index(0), one = kb.index(1), layerIndex = kb.index(layer);
    Value headDim = kb.index(shape.headDim), blockSize = kb.index(shape.blockSize);
    Value scaleValue = kb.f32(scale);
    Value sequences = kb.subIndex(kb.dim(cuSeqlens, 0), one);
    kb.forEach(zero, sequences, [&](Value seq) {
      Value first = kb.toIndex(kb.load(cuSeqlens, {seq}));
      Value last = kb.toIndex(kb.load(cuSeqlens, {kb.addIndex(seq, one)}));
      Value contextLen = kb.toIndex(kb.load(contextLens, {seq}));
      // Row `first + i` sits at position contextLen - qLen + i.
      Value startPosition = kb.subIndex(contextLen, kb.subIndex(last, first));
      kb.forEach(first, last, [&](Value row) {
        Value visible = kb.addIndex(kb.addIndex(startPosition, kb.subIndex(row, first)), one);
        Value blocks = kb.divIndex(kb.addIndex(visible, kb.subIndex(blockSize, one)), blockSize);
        // A sliding window starts at the row's position - window + 1: the blocks
        // before the one holding that key are never read.
        Value firstKey = window ? kb.maxIndex(zero, kb.subIndex(visible, kb.index(*window))) : zero;
        Value firstBlock = kb.divIndex(firstKey, blockSize);
        kb.forEach(zero, kb.index(heads), [&](Value head) {
          Value kvHead = kb.divIndex(head, kb.index(group));
          Value qBase = kb.mulIndex(head, headDim);
          kb.forEach(zero, headDim, [&](Value d) { kb.store(kb.f32(0.0), accumulator, {d}); });
          // Running (max, sum) over the blocks, then over each block's slots.
          Value negInf = kb.f32(-std::numeric_limits<float>::infinity());
          auto blockLoop = scf::ForOp::create(
              b, kb.location(), firstBlock, blocks, one, ValueRange{negInf, kb.f32(0.0)},
              [&](OpBuilder &, Location, Value blockIndex, ValueRange state) {
                Value block = kb.toIndex(kb.load(blockTables, {seq, blockIndex}));
                Value begin = kb.mulIndex(blockIndex, blockSize);
                Value count = kb.minIndex(blockSize, kb.subIndex(visible, begin));
                Value firstSlot = kb.maxIndex(zero, kb.subIndex(firstKey, begin));
                auto slotLoop = scf::ForOp::create(
                    b, kb.location(), firstSlot, count, one, state,
                    [&](OpBuilder &, Location, Value slot, ValueRange running) {
                      Value dot = kb.reduce(zero, headDim, kb.f32(0.0), [&](Value d, Value acc) {
                        Value q = kb.load(query, {row, kb.addIndex(qBase, d)});
                        Value k = kb.load(pool, {layerIndex, block, zero, kvHead, slot, d});
                        return kb.add(acc, kb.mul(q, k));
                      });
                      Value score = kb.mul(dot, scaleValue);
                      if (softcap)
                        score = kb.mul(kb.f32(*softcap), kb.tanh(kb.div(score, kb.f32(*softcap))));
                      Value maxSoFar = kb.max(running[0], score);
                      Value correction = kb.exp(kb.sub(running[0], maxSoFar));
                      Value weight = kb.exp(kb.sub(score, maxSoFar));
                      Value sum = kb.add(kb.mul(running[1], correction), weight);
                      kb.forEach(zero, headDim, [&](Value d) {
                        Value v = kb.load(pool, {layerIndex, block, one, kvHead, slot, d});
                        Value acc = kb.load(accumulator, {d});
                        kb.store(kb.add(kb.mul(acc, correction), kb.mul(weight, v)), accumulator,
                                 {d});
                      });
                      scf::YieldOp::create(b, kb.location(), ValueRange{maxSoFar, sum});
                    });
                scf::YieldOp::create(b, kb.location(), slotLoop.getResults());
              });
          Value sum = blockLoop.getResult(1);
          kb.forEach(zero, headDim, [&](Value d) {
            kb.store(kb.div(kb.load(accumulator, {d}), sum), out, {row, kb.addIndex(qBase, d)});
          });
        });
      });
    });
  });
  return success();
}

} // namespace llmc::cpu
