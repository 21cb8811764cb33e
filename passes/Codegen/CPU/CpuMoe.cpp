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
//           out[row, c] = sum over slots and i of a[row, slot, i] * down_e[i, c].
//
// A decode step of one sequence thus spreads its experts over every thread,
// and a prefill reads each chosen expert's gate and up rows once per task.
// Every row is computed by the same loops whatever the batch holds, so a
// row's result does not depend on its neighbours.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace llmc::cpu {
namespace {

/// Intermediate features of one expert task.
constexpr int64_t kInterRun = 32;
/// Output columns of one down task: 4 vectors of 16 when the hidden size
/// is a multiple of it (else scalar loops).
constexpr int64_t kColumnRun = 64;
/// Features whose gate and up products one pass over a row computes (when
/// the hidden size is a multiple of 16 and the intermediate size of this).
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

/// gate[e, i] . x[row] and up[e, i] . x[row] for the features [first, last)
/// of an expert, kFeatureBlock features at a time: each 16 values of the row
/// are loaded once for the 2 x kFeatureBlock vector accumulators. `store`
/// gets each feature with its two products.
void emitGateUpBlocks(KernelBuilder &kb, Value x, Value gate, Value up, Value expert, Value row,
                      Value first, Value last,
                      llvm::function_ref<void(Value, Value, Value)> store) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto vectorType = VectorType::get({kLanes}, b.getF32Type());
  Value zeros = arith::ConstantOp::create(b, loc, vectorType,
                                          DenseElementsAttr::get(vectorType, 0.0f));
  int64_t hidden = staticDim(gate, 2);
  kb.forEach(first, last, [&](Value block) {
    SmallVector<Value> init(2 * kFeatureBlock, zeros);
    auto loop = scf::ForOp::create(
        b, loc, kb.index(0), kb.index(hidden), kb.index(kLanes), init,
        [&](OpBuilder &, Location, Value h, ValueRange accs) {
          Value xs = vector::LoadOp::create(b, loc, vectorType, x, ValueRange{row, h});
          SmallVector<Value> next;
          for (Value matrix : {gate, up})
            for (int64_t f = 0; f < kFeatureBlock; ++f) {
              Value feature = kb.addIndex(block, kb.index(f));
              Value w = vector::LoadOp::create(b, loc, vectorType, matrix,
                                               ValueRange{expert, feature, h});
              next.push_back(vector::FMAOp::create(b, loc, xs, w, accs[next.size()]));
            }
          scf::YieldOp::create(b, loc, next);
        });
    for (int64_t f = 0; f < kFeatureBlock; ++f) {
      auto sum = [&](int64_t at) {
        return vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD,
                                           loop.getResult(at)).getResult();
      };
      store(kb.addIndex(block, kb.index(f)), sum(f), sum(kFeatureBlock + f));
    }
  }, kFeatureBlock);
}

/// The intermediate features [first, last) of expert `expert` for every row
/// that chose it: a[row, slot * inter + i].
void emitExpertRun(KernelBuilder &kb, ValueRange params, Value expert, Value first, Value last) {
  Value x = params[0], gate = params[1], up = params[2], chosen = params[3], weights = params[4],
        activations = params[5];
  int64_t inter = staticDim(gate, 1), hidden = staticDim(gate, 2), topK = staticDim(chosen, 1);
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value zero = kb.index(0);
  Value expertId = arith::IndexCastOp::create(b, loc, b.getI32Type(), expert);
  // Rows outermost: each row's check of its picks is made once per task,
  // and the run's gate and up rows (2 x kInterRun x hidden) stay in cache
  // across the rows that chose the expert.
  kb.forEach(zero, kb.dim(x, 0), [&](Value row) {
    for (int64_t slot = 0; slot < topK; ++slot) {
      Value picked = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                           kb.load(chosen, {row, kb.index(slot)}), expertId);
      kb.ifThen(picked, [&] {
        Value weight = kb.load(weights, {row, kb.index(slot)});
        auto store = [&](Value i, Value g, Value u) {
          Value silu = kb.div(g, kb.add(kb.f32(1.0), kb.exp(kb.neg(g))));
          kb.store(kb.mul(weight, kb.mul(silu, u)), activations,
                   {row, kb.addIndex(kb.index(slot * inter), i)});
        };
        if (hidden % kLanes == 0 && inter % kFeatureBlock == 0) {
          emitGateUpBlocks(kb, x, gate, up, expert, row, first, last, store);
          return;
        }
        kb.forEach(first, last, [&](Value i) {
          auto dot = [&](Value matrix) {
            return kb.reduce(zero, kb.index(hidden), kb.f32(0.0), [&](Value h, Value acc) {
              return kb.add(acc, kb.mul(kb.load(x, {row, h}), kb.load(matrix, {expert, i, h})));
            });
          };
          store(i, dot(gate), dot(up));
        });
      });
    }
  });
}

/// out[row, first + c], c < kColumnRun, with the run's columns in
/// kColumnRun / 16 vector accumulators through every slot and feature.
void emitDownVectors(KernelBuilder &kb, ValueRange params, Value row, Value first) {
  Value down = params[0], chosen = params[1], activations = params[2], out = params[3];
  int64_t inter = staticDim(down, 1), topK = staticDim(chosen, 1);
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto vectorType = VectorType::get({kLanes}, b.getF32Type());
  int64_t vectors = kColumnRun / kLanes;
  auto column = [&](int64_t v) { return kb.addIndex(first, kb.index(v * kLanes)); };
  SmallVector<Value> accs(vectors, arith::ConstantOp::create(
                                       b, loc, vectorType, DenseElementsAttr::get(vectorType, 0.0f)));
  for (int64_t slot = 0; slot < topK; ++slot) {
    Value expert = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                              kb.load(chosen, {row, kb.index(slot)}));
    auto loop = scf::ForOp::create(
        b, loc, kb.index(0), kb.index(inter), kb.index(1), accs,
        [&](OpBuilder &, Location, Value i, ValueRange carried) {
          Value a = kb.load(activations, {row, kb.addIndex(kb.index(slot * inter), i)});
          Value splat = vector::BroadcastOp::create(b, loc, vectorType, a);
          SmallVector<Value> next;
          for (int64_t v = 0; v < vectors; ++v) {
            Value w = vector::LoadOp::create(b, loc, vectorType, down,
                                             ValueRange{expert, i, column(v)});
            next.push_back(vector::FMAOp::create(b, loc, splat, w, carried[v]));
          }
          scf::YieldOp::create(b, loc, next);
        });
    accs.assign(loop.getResults().begin(), loop.getResults().end());
  }
  for (int64_t v = 0; v < vectors; ++v)
    vector::StoreOp::create(b, loc, accs[v], out, ValueRange{row, column(v)});
}

/// out[row, c] for c in [first, last): the row's experts' down projections
/// of their activations.
void emitDownRun(KernelBuilder &kb, ValueRange params, Value row, Value first, Value last) {
  Value down = params[0], chosen = params[1], activations = params[2], out = params[3];
  int64_t inter = staticDim(down, 1), hidden = staticDim(down, 2), topK = staticDim(chosen, 1);
  OpBuilder &b = kb.builder();
  if (hidden % kColumnRun == 0) {
    emitDownVectors(kb, params, row, first);
    return;
  }
  kb.forEach(first, last, [&](Value c) { kb.store(kb.f32(0.0), out, {row, c}); });
  for (int64_t slot = 0; slot < topK; ++slot) {
    Value expert = arith::IndexCastOp::create(b, kb.location(), b.getIndexType(),
                                              kb.load(chosen, {row, kb.index(slot)}));
    kb.forEach(kb.index(0), kb.index(inter), [&](Value i) {
      Value a = kb.load(activations, {row, kb.addIndex(kb.index(slot * inter), i)});
      kb.forEach(first, last, [&](Value c) {
        kb.store(kb.add(kb.load(out, {row, c}), kb.mul(a, kb.load(down, {expert, i, c}))), out,
                 {row, c});
      });
    });
  }
}

} // namespace

LogicalResult lowerMoe(StepLowering &step, llm::MoeOp op, ArrayRef<Value> operands,
                       Value output) {
  Value x = operands[0], logits = operands[1], gate = operands[2], up = operands[3],
        down = operands[4];
  int64_t experts = staticDim(gate, 0), inter = staticDim(gate, 1), hidden = staticDim(gate, 2);
  int64_t topK = op.getTopK();
  bool normalize = op.getNormalizeTopK();
  Location loc = op.getLoc();
  OpBuilder &b = step.b;

  // The scratch: the picks [rows, top_k] (i32), their weights and the
  // experts' activations [rows, top_k x inter].
  int64_t picksBytes = llvm::alignTo(step.maxRows * topK * 4, 64);
  Value rows = memref::DimOp::create(b, loc, x, 0);
  Value chosen = step.scratchView(loc, b.getI32Type(), topK, rows, 0);
  Value weights = step.scratchView(loc, b.getF32Type(), topK, rows, picksBytes);
  Value activations = step.scratchView(loc, b.getF32Type(), topK * inter, rows, 2 * picksBytes);
  step.clobberScratch(2 * picksBytes + step.maxRows * topK * inter * 4);

  SmallVector<Value> routeArgs{logits, chosen, weights};
  runOverRows(step, loc, "moe_route", kernelKey(op, routeArgs) + "/route", routeArgs, 0,
              [&](KernelBuilder &kb, ValueRange params, Value begin, Value end) {
                kb.forEach(begin, end, [&](Value row) {
                  emitRoute(kb, params[0], params[1], params[2], row, normalize);
                });
              });

  // Task t is run t / experts of expert t % experts: a thread's range of
  // tasks covers every expert, whichever the rows chose.
  int64_t interRuns = llvm::divideCeil(inter, kInterRun);
  SmallVector<Value> expertArgs{x, gate, up, chosen, weights, activations};
  KernelBuilder stepBuilder(b, loc);
  runParallel(step, loc, "moe_experts", kernelKey(op, expertArgs) + "/experts", expertArgs,
              stepBuilder.index(experts * interRuns),
              [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
                kb.forEach(firstTask, lastTask, [&](Value task) {
                  Value expert = kb.remIndex(task, kb.index(experts));
                  Value first = kb.mulIndex(kb.divIndex(task, kb.index(experts)),
                                            kb.index(kInterRun));
                  Value last = kb.minIndex(kb.addIndex(first, kb.index(kInterRun)),
                                           kb.index(inter));
                  emitExpertRun(kb, params, expert, first, last);
                });
              });

  int64_t columnRuns = llvm::divideCeil(hidden, kColumnRun);
  SmallVector<Value> downArgs{down, chosen, activations, output};
  runParallel(step, loc, "moe_down", kernelKey(op, downArgs) + "/down", downArgs,
              stepBuilder.mulIndex(rows, stepBuilder.index(columnRuns)),
              [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
                kb.forEach(firstTask, lastTask, [&](Value task) {
                  Value row = kb.divIndex(task, kb.index(columnRuns));
                  Value first = kb.mulIndex(kb.remIndex(task, kb.index(columnRuns)),
                                            kb.index(kColumnRun));
                  Value last = kb.minIndex(kb.addIndex(first, kb.index(kColumnRun)),
                                           kb.index(hidden));
                  emitDownRun(kb, params, row, first, last);
                });
              });
  return success();
}

} // namespace llmc::cpu
