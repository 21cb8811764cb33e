//===- CpuMoe.cpp - llm.moe: routing, then experts, then down projections -===//
//
// Four kernels, three of them spread over the runtime's threads:
//
//   route   (a task per 8 rows)  each row's softmax and its top_k experts
//           (equal logits: the lower expert first) with their weights;
//   plan    (one task)  each expert's list of the (row, slot) picks that
//           chose it, the lists back to back in expert order (a counting
//           sort), and where each pick lies in them;
//   experts (a task per expert and run of kInterRun intermediate features)
//           a[pick, i] = weight * silu(gate_e[i] . x) * (up_e[i] . x) for
//           the expert's picks, in tiles of kRowTile picks by kFeatureBlock
//           features: each weight vector dequantised is used for every
//           pick of the tile, and only chosen experts' rows are read;
//   down    (a task per row and run of kColumnRun output columns)
//           out[row, c] = sum over slots of down_e[c] . a[pick].
//
// Every product is a dot product of a weight row (f32, or quantised codes
// kept packed and dequantised in registers: WeightReader) by an activation
// row, computed by the matmul's dot tiles (emitDotTileOfRows), whose
// arithmetic for an output is the same whatever the tile: a row's result
// does not depend on the batch, and a quantised weight gives the bits its
// widened f32 copy gives. A decode step of one sequence spreads its experts
// over every thread.
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
/// Weight rows of one dot tile: each activation vector loaded is multiplied
/// by this many.
constexpr int64_t kFeatureBlock = 4;
/// Picks of one dot tile: each weight vector loaded is multiplied by this
/// many activation rows.
constexpr int64_t kRowTile = 4;

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

/// For c in [first, last): the sums of x[xRows[r]] . w[base + c] over the
/// first k features, handed to `finish` with r and c, in dot tiles of
/// kFeatureBlock weight rows and of one row for the rest.
void emitDots(KernelBuilder &kb, Value x, ArrayRef<Value> xRows, WeightReader &w, Value base,
              Value first, Value last, int64_t k,
              llvm::function_ref<void(int64_t, Value, Value)> finish) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value count = arith::SubIOp::create(b, loc, last, first);
  Value blocksEnd = kb.addIndex(
      first, kb.mulIndex(kb.divIndex(count, kb.index(kFeatureBlock)), kb.index(kFeatureBlock)));
  auto tiles = [&](Value from, Value to, int64_t cols) {
    kb.forEach(from, to, [&](Value c) {
      emitDotTileOfRows(kb, x, xRows, w, kb.addIndex(base, c), cols, /*parts=*/1,
                        /*partStride=*/0, k, [&](int64_t r, Value col, ArrayRef<Value> sums) {
                          finish(r, arith::SubIOp::create(b, loc, col, base), sums[0]);
                        });
    }, cols);
  };
  tiles(first, blocksEnd, kFeatureBlock);
  tiles(blocksEnd, last, 1);
}

/// An i32 loaded from `memref` as an index.
Value loadIndex(KernelBuilder &kb, Value memref, ValueRange indices) {
  OpBuilder &b = kb.builder();
  return arith::IndexCastOp::create(b, kb.location(), b.getIndexType(),
                                    kb.load(memref, indices));
}

/// An index stored into an i32 `memref`.
void storeIndex(KernelBuilder &kb, Value value, Value memref, ValueRange indices) {
  OpBuilder &b = kb.builder();
  kb.store(arith::IndexCastOp::create(b, kb.location(), b.getI32Type(), value), memref, indices);
}

/// The scratch views of a mixture of experts' picks and activations. A pick
/// p is (row p / top_k, slot p % top_k).
struct Picks {
  Value chosen;      ///< i32 [rows, top_k]: each pick's expert
  Value weights;     ///< f32 [rows, top_k]: its routing weight
  Value order;       ///< i32 [picks, 1]: the picks, each expert's in a run
  Value position;    ///< i32 [picks, 1]: where each pick lies in `order`
  Value offsets;     ///< i32 [1, experts + 1]: where each expert's run starts
  Value cursor;      ///< i32 [1, experts]: the plan's fill points
  Value activations; ///< f32 [picks, inter]: row q for order[q]

  SmallVector<Value> buffers() const {
    return {chosen, weights, order, position, offsets, cursor, activations};
  }
  static Picks in(ValueRange params) {
    return {params[0], params[1], params[2], params[3], params[4], params[5], params[6]};
  }
};
constexpr size_t kPicksBuffers = 7;

/// The plan: a counting sort of the picks by expert into `order`, and
/// `position`, its inverse.
void emitPlan(KernelBuilder &kb, const Picks &picks, int64_t experts) {
  int64_t topK = staticDim(picks.chosen, 1);
  Value zero = kb.index(0), one = kb.index(1);
  Value count = kb.mulIndex(kb.dim(picks.chosen, 0), kb.index(topK));
  auto expertOf = [&](Value pick) {
    return loadIndex(kb, picks.chosen, {kb.divIndex(pick, kb.index(topK)),
                                        kb.remIndex(pick, kb.index(topK))});
  };
  kb.forEach(zero, kb.index(experts + 1),
             [&](Value e) { storeIndex(kb, zero, picks.offsets, {zero, e}); });
  kb.forEach(zero, count, [&](Value pick) {
    Value next = kb.addIndex(expertOf(pick), one);
    storeIndex(kb, kb.addIndex(loadIndex(kb, picks.offsets, {zero, next}), one), picks.offsets,
               {zero, next});
  });
  kb.forEach(zero, kb.index(experts), [&](Value e) {
    Value next = kb.addIndex(e, one);
    Value start = loadIndex(kb, picks.offsets, {zero, e});
    storeIndex(kb, start, picks.cursor, {zero, e});
    storeIndex(kb, kb.addIndex(loadIndex(kb, picks.offsets, {zero, next}), start), picks.offsets,
               {zero, next});
  });
  kb.forEach(zero, count, [&](Value pick) {
    Value expert = expertOf(pick);
    Value at = loadIndex(kb, picks.cursor, {zero, expert});
    storeIndex(kb, kb.addIndex(at, one), picks.cursor, {zero, expert});
    storeIndex(kb, pick, picks.order, {at, zero});
    storeIndex(kb, at, picks.position, {pick, zero});
  });
}

/// The intermediate features [first, last) of expert `expert` for the
/// `rows` picks from order[at]: the gate's products stored first, then the
/// activations that the up products complete.
void emitPickTile(KernelBuilder &kb, Value x, const Picks &picks, WeightReader &gate,
                  WeightReader &up, Value expert, Value at, int64_t rows, Value first,
                  Value last) {
  int64_t hidden = staticDim(x, 1), topK = staticDim(picks.chosen, 1);
  int64_t inter = staticDim(picks.activations, 1);
  Value zero = kb.index(0);
  SmallVector<Value> xRows, slots, routing;
  for (int64_t r = 0; r < rows; ++r) {
    Value slot = kb.addIndex(at, kb.index(r));
    Value pick = loadIndex(kb, picks.order, {slot, zero});
    Value row = kb.divIndex(pick, kb.index(topK));
    xRows.push_back(row);
    slots.push_back(slot);
    routing.push_back(kb.load(picks.weights, {row, kb.remIndex(pick, kb.index(topK))}));
  }
  Value base = kb.mulIndex(expert, kb.index(inter));
  emitDots(kb, x, xRows, gate, base, first, last, hidden, [&](int64_t r, Value i, Value g) {
    kb.store(g, picks.activations, {slots[r], i});
  });
  emitDots(kb, x, xRows, up, base, first, last, hidden, [&](int64_t r, Value i, Value u) {
    Value g = kb.load(picks.activations, {slots[r], i});
    Value silu = kb.div(g, kb.add(kb.f32(1.0), kb.exp(kb.neg(g))));
    kb.store(kb.mul(routing[r], kb.mul(silu, u)), picks.activations, {slots[r], i});
  });
}

/// The features [first, last) of expert `expert` for every pick of it, in
/// tiles of kRowTile picks and of one for the rest.
void emitExpertRun(KernelBuilder &kb, Value x, const Picks &picks, const MatmulWeight &gateWeight,
                   const MatmulWeight &upWeight, Value expert, Value first, Value last) {
  WeightReader gate(kb, gateWeight), up(kb, upWeight);
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value zero = kb.index(0);
  Value begin = loadIndex(kb, picks.offsets, {zero, expert});
  Value end = loadIndex(kb, picks.offsets, {zero, kb.addIndex(expert, kb.index(1))});
  Value count = arith::SubIOp::create(b, loc, end, begin);
  Value tilesEnd =
      kb.addIndex(begin, kb.mulIndex(kb.divIndex(count, kb.index(kRowTile)), kb.index(kRowTile)));
  kb.forEach(begin, tilesEnd, [&](Value at) {
    emitPickTile(kb, x, picks, gate, up, expert, at, kRowTile, first, last);
  }, kRowTile);
  kb.forEach(tilesEnd, end, [&](Value at) {
    emitPickTile(kb, x, picks, gate, up, expert, at, 1, first, last);
  });
}

/// out[row, c] for c in [first, last): the sum over the row's slots of its
/// expert's down rows times the pick's activations, added slot by slot to
/// zeros.
void emitDownRun(KernelBuilder &kb, const Picks &picks, const MatmulWeight &downWeight, Value out,
                 Value row, Value first, Value last) {
  WeightReader down(kb, downWeight);
  int64_t topK = staticDim(picks.chosen, 1), inter = staticDim(picks.activations, 1);
  int64_t hidden = staticDim(out, 1);
  Value zero = kb.index(0);
  kb.forEach(first, last, [&](Value c) { kb.store(kb.f32(0.0), out, {row, c}); });
  kb.forEach(zero, kb.index(topK), [&](Value slot) {
    Value expert = loadIndex(kb, picks.chosen, {row, slot});
    Value pick = kb.addIndex(kb.mulIndex(row, kb.index(topK)), slot);
    Value activations = loadIndex(kb, picks.position, {pick, zero});
    emitDots(kb, picks.activations, {activations}, down, kb.mulIndex(expert, kb.index(hidden)),
             first, last, inter, [&](int64_t, Value c, Value sum) {
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

  // The scratch: the picks, their plan and their activations.
  int64_t picksBytes = llvm::alignTo(step.maxRows * topK * 4, 64);
  int64_t offsetsBytes = llvm::alignTo((experts + 1) * 4, 64);
  Value rows = memref::DimOp::create(b, loc, x, 0);
  Value count = stepBuilder.mulIndex(rows, stepBuilder.index(topK));
  Value one = stepBuilder.index(1);
  Picks picks{step.scratchView(loc, b.getI32Type(), topK, rows, 0),
              step.scratchView(loc, b.getF32Type(), topK, rows, picksBytes),
              step.scratchView(loc, b.getI32Type(), 1, count, 2 * picksBytes),
              step.scratchView(loc, b.getI32Type(), 1, count, 3 * picksBytes),
              step.scratchView(loc, b.getI32Type(), experts + 1, one, 4 * picksBytes),
              step.scratchView(loc, b.getI32Type(), experts, one, 4 * picksBytes + offsetsBytes),
              step.scratchView(loc, b.getF32Type(), inter, count,
                               4 * picksBytes + 2 * offsetsBytes)};
  step.clobberScratch(4 * picksBytes + 2 * offsetsBytes + step.maxRows * topK * inter * 4);

  SmallVector<Value> routeArgs{logits, picks.chosen, picks.weights};
  runOverRows(step, loc, "moe_route", kernelKey(op, routeArgs) + "/route", routeArgs, 0,
              [&](KernelBuilder &kb, ValueRange params, Value begin, Value end) {
                kb.forEach(begin, end, [&](Value row) {
                  emitRoute(kb, params[0], params[1], params[2], row, normalize);
                });
              });
  SmallVector<Value> planArgs = picks.buffers();
  step.callKernel(loc, "moe_plan", kernelKey(op, planArgs) + "/plan", planArgs,
                  [&](KernelBuilder &kb, ValueRange params) {
                    emitPlan(kb, Picks::in(params), experts);
                  });

  // Task t is run t / experts of expert t % experts: a thread's range of
  // tasks covers every expert, whichever the rows chose.
  int64_t interRuns = llvm::divideCeil(inter, kInterRun);
  SmallVector<Value> expertArgs = picks.buffers();
  expertArgs.push_back(x);
  llvm::append_range(expertArgs, gate.buffers());
  llvm::append_range(expertArgs, up.buffers());
  runParallel(step, loc, "moe_experts",
              kernelKey(op, expertArgs) + "/experts/" + gate.key() + "/" + up.key(), expertArgs,
              stepBuilder.index(experts * interRuns),
              [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
                Picks kernelPicks = Picks::in(params);
                ValueRange weights = params.drop_front(kPicksBuffers + 1);
                MatmulWeight kernelGate = gate.withBuffers(weights);
                MatmulWeight kernelUp = up.withBuffers(weights.drop_front(gate.buffers().size()));
                kb.forEach(firstTask, lastTask, [&](Value task) {
                  Value expert = kb.remIndex(task, kb.index(experts));
                  Value first = kb.mulIndex(kb.divIndex(task, kb.index(experts)),
                                            kb.index(kInterRun));
                  Value last = kb.minIndex(kb.addIndex(first, kb.index(kInterRun)),
                                           kb.index(inter));
                  emitExpertRun(kb, params[kPicksBuffers], kernelPicks, kernelGate, kernelUp,
                                expert, first, last);
                });
              });

  int64_t columnRuns = llvm::divideCeil(hidden, kColumnRun);
  SmallVector<Value> downArgs = picks.buffers();
  downArgs.push_back(output);
  llvm::append_range(downArgs, down.buffers());
  runParallel(step, loc, "moe_down", kernelKey(op, downArgs) + "/down/" + down.key(), downArgs,
              stepBuilder.mulIndex(rows, stepBuilder.index(columnRuns)),
              [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
                Picks kernelPicks = Picks::in(params);
                Value out = params[kPicksBuffers];
                MatmulWeight kernelDown = down.withBuffers(params.drop_front(kPicksBuffers + 1));
                kb.forEach(firstTask, lastTask, [&](Value task) {
                  Value row = kb.divIndex(task, kb.index(columnRuns));
                  Value first = kb.mulIndex(kb.remIndex(task, kb.index(columnRuns)),
                                            kb.index(kColumnRun));
                  Value last = kb.minIndex(kb.addIndex(first, kb.index(kColumnRun)),
                                           kb.index(hidden));
                  emitDownRun(kb, kernelPicks, kernelDown, out, row, first, last);
                });
              });
  return success();
}

} // namespace llmc::cpu
