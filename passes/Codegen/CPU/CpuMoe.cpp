//===- CpuMoe.cpp - llm.moe: routing, then experts, then down projections -===//
//
// Three kernels, each spread over the runtime's threads:
//
//   route   (a task per 8 rows)  each row's softmax and its top_k experts
//           (equal logits: the lower expert first) with their weights, into
//           the scratch;
//   experts (a task per expert and run of kInterRun intermediate features)
//           a[row, slot, i] = weight * silu(gate_e[i] . x) * (up_e[i] . x)
//           for every row that chose e: the run's weight rows stay in cache
//           for all of them, and only chosen experts' rows are read;
//   down    (a task per row and run of kColumnRun output columns)
//           out[row, c] = sum over slots of down_e[c] . a[row, slot].
//
// Every product is a dot product of a weight row (f32, or quantised codes
// kept packed and dequantised in registers: WeightReader) by an activation
// row, computed by the matmul's dot tiles (emitDotTile), kFeatureBlock
// outputs a tile. A decode step of one sequence thus spreads its experts
// over every thread, and a prefill reads each chosen expert's gate and up
// rows once per task. Every row is computed by the same loops whatever the
// batch holds, so a row's result does not depend on its neighbours; a
// quantised weight gives the bits its widened f32 copy gives.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace llmc::cpu {
namespace {

/// Intermediate features of one expert task.
constexpr int64_t kInterRun = 32;
/// Output columns of one down task.
constexpr int64_t kColumnRun = 64;
/// Outputs of one dot tile: each activation vector loaded is multiplied by
/// this many weight rows.
constexpr int64_t kFeatureBlock = 4;

/// The expert a row picks after (prevLogit, prevExpert) in the order
/// (logit descending, expert ascending): the best of those after it. The
/// softmax is monotonic, so the logits order the experts as their
/// probabilities do.
std::pair<Value, Value> pickNext(KernelBuilder &kb, Value logits, Value row, int64_t experts,
                                 Value prevLogit, Value prevExpert) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value none = kb.index(-1);
  auto loop = scf::ForOp::create(
      b, loc, kb.index(0), kb.index(experts), kb.index(1),
      ValueRange{kb.f32(-std::numeric_limits<double>::infinity()), none},
      [&](OpBuilder &, Location, Value expert, ValueRange best) {
        Value logit = kb.load(logits, {row, expert});
        auto cmpf = [&](arith::CmpFPredicate predicate, Value a, Value c) {
          return arith::CmpFOp::create(b, loc, predicate, a, c).getResult();
        };
        auto cmpi = [&](arith::CmpIPredicate predicate, Value a, Value c) {
          return arith::CmpIOp::create(b, loc, predicate, a, c).getResult();
        };
        Value after = arith::OrIOp::create(
            b, loc, cmpf(arith::CmpFPredicate::OLT, logit, prevLogit),
            arith::AndIOp::create(b, loc, cmpf(arith::CmpFPredicate::OEQ, logit, prevLogit),
                                  cmpi(arith::CmpIPredicate::sgt, expert, prevExpert)));
        Value better = arith::OrIOp::create(b, loc, cmpf(arith::CmpFPredicate::OGT, logit, best[0]),
                                            cmpi(arith::CmpIPredicate::eq, best[1], none));
        Value take = arith::AndIOp::create(b, loc, after, better);
        scf::YieldOp::create(b, loc,
                             ValueRange{arith::SelectOp::create(b, loc, take, logit, best[0]),
                                        arith::SelectOp::create(b, loc, take, expert, best[1])});
      });
  return {loop.getResult(0), loop.getResult(1)};
}

/// Row `row`'s top_k experts into chosen[row, slot] (i32) and their routing
/// weights into weights[row, slot]: probabilities as onnxruntime's Softmax
/// computes them, divided by their sum when `normalize`.
void emitRoute(KernelBuilder &kb, Value logits, Value chosen, Value weights, Value row,
               bool normalize) {
  int64_t experts = staticDim(logits, 1), topK = staticDim(chosen, 1);
  Value zero = kb.index(0);
  Value maxLogit = kb.reduce(zero, kb.index(experts),
                             kb.f32(-std::numeric_limits<double>::infinity()),
                             [&](Value e, Value acc) { return kb.max(acc, kb.load(logits, {row, e})); });
  Value denominator = kb.reduce(zero, kb.index(experts), kb.f32(0.0), [&](Value e, Value acc) {
    return kb.add(acc, kb.exp(kb.sub(kb.load(logits, {row, e}), maxLogit)));
  });
  OpBuilder &b = kb.builder();
  Value prevLogit = kb.f32(std::numeric_limits<double>::infinity()), prevExpert = kb.index(-1);
  Value total = kb.f32(0.0);
  SmallVector<Value> probabilities;
  for (int64_t slot = 0; slot < topK; ++slot) {
    auto [logit, expert] = pickNext(kb, logits, row, experts, prevLogit, prevExpert);
    Value probability = kb.div(kb.exp(kb.sub(logit, maxLogit)), denominator);
    kb.store(arith::IndexCastOp::create(b, kb.location(), b.getI32Type(), expert), chosen,
             {row, kb.index(slot)});
    probabilities.push_back(probability);
    total = kb.add(total, probability);
    prevLogit = logit, prevExpert = expert;
  }
  for (auto [slot, probability] : llvm::enumerate(probabilities))
    kb.store(normalize ? kb.div(probability, total) : probability, weights,
             {row, kb.index(slot)});
}

/// For c in [first, last): the sums of x[xRow] . w[base + c] over the
/// first k features, handed to `finish` with c, in dot tiles of
/// kFeatureBlock weight rows and of one row for the rest.
void emitDots(KernelBuilder &kb, Value x, Value xRow, WeightReader &w, Value base, Value first,
              Value last, int64_t k, llvm::function_ref<void(Value, Value)> finish) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value count = arith::SubIOp::create(b, loc, last, first);
  Value blocksEnd = kb.addIndex(
      first, kb.mulIndex(kb.divIndex(count, kb.index(kFeatureBlock)), kb.index(kFeatureBlock)));
  auto tiles = [&](Value from, Value to, int64_t cols) {
    kb.forEach(from, to, [&](Value c) {
      emitDotTile(kb, x, w, xRow, kb.addIndex(base, c), /*rows=*/1, cols, /*parts=*/1,
                  /*partStride=*/0, k, [&](Value, Value col, ArrayRef<Value> sums) {
                    finish(arith::SubIOp::create(b, loc, col, base), sums[0]);
                  });
    }, cols);
  };
  tiles(first, blocksEnd, kFeatureBlock);
  tiles(blocksEnd, last, 1);
}

/// Kernel buffers: x, chosen, routing weights, activations, then each
/// weight's buffers.
struct MoeParams {
  Value x, chosen, weights, activations;
  SmallVector<MatmulWeight> matrices;

  static MoeParams in(ValueRange params, ArrayRef<const MatmulWeight *> shapes) {
    MoeParams unpacked{params[0], params[1], params[2], params[3], {}};
    size_t at = 4;
    for (const MatmulWeight *shape : shapes) {
      size_t count = shape->buffers().size();
      unpacked.matrices.push_back(shape->withBuffers(params.slice(at, count)));
      at += count;
    }
    return unpacked;
  }
};

/// The intermediate features [first, last) of expert `expert` for every row
/// that chose it: a[row * top_k + slot, i], the gate's product stored there
/// first, then the activation that the up product completes.
void emitExpertRun(KernelBuilder &kb, MoeParams &params, Value expert, Value first, Value last) {
  WeightReader gate(kb, params.matrices[0]), up(kb, params.matrices[1]);
  int64_t hidden = staticDim(params.x, 1), topK = staticDim(params.chosen, 1);
  int64_t inter = staticDim(params.activations, 1);
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value expertId = arith::IndexCastOp::create(b, loc, b.getI32Type(), expert);
  Value base = kb.mulIndex(expert, kb.index(inter));
  // Rows outermost: each row's check of its picks is made once per task,
  // and the run's gate and up rows (2 x kInterRun x hidden) stay in cache
  // across the rows that chose the expert.
  kb.forEach(kb.index(0), kb.dim(params.x, 0), [&](Value row) {
    kb.forEach(kb.index(0), kb.index(topK), [&](Value slot) {
      Value picked = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           kb.load(params.chosen, {row, slot}), expertId);
      kb.ifThen(picked, [&] {
        Value weight = kb.load(params.weights, {row, slot});
        Value slotRow = kb.addIndex(kb.mulIndex(row, kb.index(topK)), slot);
        emitDots(kb, params.x, row, gate, base, first, last, hidden, [&](Value i, Value g) {
          kb.store(g, params.activations, {slotRow, i});
        });
        emitDots(kb, params.x, row, up, base, first, last, hidden, [&](Value i, Value u) {
          Value g = kb.load(params.activations, {slotRow, i});
          Value silu = kb.div(g, kb.add(kb.f32(1.0), kb.exp(kb.neg(g))));
          kb.store(kb.mul(weight, kb.mul(silu, u)), params.activations, {slotRow, i});
        });
      });
    });
  });
}

/// out[row, c] for c in [first, last): the sum over the row's slots of its
/// expert's down rows times the slot's activations, added slot by slot to
/// zeros.
void emitDownRun(KernelBuilder &kb, MoeParams &params, Value out, Value row, Value first,
                 Value last) {
  WeightReader down(kb, params.matrices[0]);
  int64_t topK = staticDim(params.chosen, 1), inter = staticDim(params.activations, 1);
  int64_t hidden = staticDim(out, 1);
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  kb.forEach(first, last, [&](Value c) { kb.store(kb.f32(0.0), out, {row, c}); });
  kb.forEach(kb.index(0), kb.index(topK), [&](Value slot) {
    Value expert = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                              kb.load(params.chosen, {row, slot}));
    Value slotRow = kb.addIndex(kb.mulIndex(row, kb.index(topK)), slot);
    emitDots(kb, params.activations, slotRow, down, kb.mulIndex(expert, kb.index(hidden)), first,
             last, inter, [&](Value c, Value sum) {
               kb.store(kb.add(kb.load(out, {row, c}), sum), out, {row, c});
             });
  });
}

} // namespace

LogicalResult lowerMoe(StepLowering &step, llm::MoeOp op, Value x, Value logits,
                       const MatmulWeight &gate, const MatmulWeight &up, const MatmulWeight &down,
                       Value output) {
  auto gateType = cast<RankedTensorType>(op.getGateWeight().getType());
  int64_t experts = gateType.getDimSize(0), inter = gateType.getDimSize(1);
  int64_t hidden = gateType.getDimSize(2);
  int64_t topK = op.getTopK();
  bool normalize = op.getNormalizeTopK();
  Location loc = op.getLoc();
  OpBuilder &b = step.b;
  KernelBuilder stepBuilder(b, loc);

  // The scratch: the picks [rows, top_k] (i32), their weights and the
  // experts' activations [rows * top_k, inter].
  int64_t picksBytes = llvm::alignTo(step.maxRows * topK * 4, 64);
  Value rows = memref::DimOp::create(b, loc, x, 0);
  Value chosen = step.scratchView(loc, b.getI32Type(), topK, rows, 0);
  Value weights = step.scratchView(loc, b.getF32Type(), topK, rows, picksBytes);
  Value activations = step.scratchView(loc, b.getF32Type(), inter,
                                       stepBuilder.mulIndex(rows, stepBuilder.index(topK)),
                                       2 * picksBytes);
  step.clobberScratch(2 * picksBytes + step.maxRows * topK * inter * 4);

  SmallVector<Value> routeArgs{logits, chosen, weights};
  runOverRows(step, loc, "moe_route", kernelKey(op, routeArgs) + "/route", routeArgs, 0,
              [&](KernelBuilder &kb, ValueRange params, Value begin, Value end) {
                kb.forEach(begin, end, [&](Value row) {
                  emitRoute(kb, params[0], params[1], params[2], row, normalize);
                });
              });

  auto argsWith = [&](ArrayRef<const MatmulWeight *> matrices) {
    SmallVector<Value> args{x, chosen, weights, activations};
    std::string key;
    for (const MatmulWeight *matrix : matrices) {
      llvm::append_range(args, matrix->buffers());
      key += "/" + matrix->key();
    }
    return std::pair(args, key);
  };

  // Task t is run t / experts of expert t % experts: a thread's range of
  // tasks covers every expert, whichever the rows chose.
  int64_t interRuns = llvm::divideCeil(inter, kInterRun);
  SmallVector<const MatmulWeight *> gateUp{&gate, &up};
  auto [expertArgs, expertKey] = argsWith(gateUp);
  runParallel(step, loc, "moe_experts", kernelKey(op, expertArgs) + "/experts" + expertKey,
              expertArgs, stepBuilder.index(experts * interRuns),
              [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
                MoeParams unpacked = MoeParams::in(params, gateUp);
                kb.forEach(firstTask, lastTask, [&](Value task) {
                  Value expert = kb.remIndex(task, kb.index(experts));
                  Value first = kb.mulIndex(kb.divIndex(task, kb.index(experts)),
                                            kb.index(kInterRun));
                  Value last = kb.minIndex(kb.addIndex(first, kb.index(kInterRun)),
                                           kb.index(inter));
                  emitExpertRun(kb, unpacked, expert, first, last);
                });
              });

  int64_t columnRuns = llvm::divideCeil(hidden, kColumnRun);
  SmallVector<const MatmulWeight *> downOnly{&down};
  auto [downArgs, downKey] = argsWith(downOnly);
  downArgs.push_back(output);
  runParallel(step, loc, "moe_down", kernelKey(op, downArgs) + "/down" + downKey, downArgs,
              stepBuilder.mulIndex(rows, stepBuilder.index(columnRuns)),
              [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
                MoeParams unpacked = MoeParams::in(params.drop_back(), downOnly);
                Value out = params.back();
                kb.forEach(firstTask, lastTask, [&](Value task) {
                  Value row = kb.divIndex(task, kb.index(columnRuns));
                  Value first = kb.mulIndex(kb.remIndex(task, kb.index(columnRuns)),
                                            kb.index(kColumnRun));
                  Value last = kb.minIndex(kb.addIndex(first, kb.index(kColumnRun)),
                                           kb.index(hidden));
                  emitDownRun(kb, unpacked, out, row, first, last);
                });
              });
  return success();
}

} // namespace llmc::cpu
