//===- CpuMoe.cpp - llm.moe: routing and the chosen experts, per token ----===//
//
// Each token row routes itself: the softmax of its router logits, its top_k
// experts picked in order of probability (equal ones: the lower expert
// first), then the chosen experts' gated MLPs accumulated into its output
// row. A token reads only its own experts' weights, which is what makes a
// mixture of experts cheap to decode; rows are independent, so the rows run
// in parallel like any token-wise kernel.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

using namespace mlir;

namespace llmc::cpu {
namespace {

int64_t staticDim(Value memref, int64_t dim) {
  return cast<MemRefType>(memref.getType()).getDimSize(dim);
}

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

/// out[row] = sum over the row's chosen experts of weight * down(silu(gate(x)) * up(x)).
/// `chosen` and `weights` ([top_k] index and f32) hold the row's picks.
void emitMoeRow(KernelBuilder &kb, ValueRange params, Value row, Value chosen, Value weights,
                bool normalize) {
  Value x = params[0], logits = params[1], gate = params[2], up = params[3], down = params[4],
        out = params[5];
  int64_t experts = staticDim(gate, 0), inter = staticDim(gate, 1), hidden = staticDim(gate, 2);
  int64_t topK = staticDim(chosen, 0);
  Value zero = kb.index(0);

  // The softmax's max and denominator, as onnxruntime's Softmax computes them.
  Value maxLogit = kb.reduce(zero, kb.index(experts),
                             kb.f32(-std::numeric_limits<double>::infinity()),
                             [&](Value e, Value acc) { return kb.max(acc, kb.load(logits, {row, e})); });
  Value denominator = kb.reduce(zero, kb.index(experts), kb.f32(0.0), [&](Value e, Value acc) {
    return kb.add(acc, kb.exp(kb.sub(kb.load(logits, {row, e}), maxLogit)));
  });

  // The chosen experts and their probabilities, in TopK's order.
  Value prevLogit = kb.f32(std::numeric_limits<double>::infinity()), prevExpert = kb.index(-1);
  Value total = kb.f32(0.0);
  for (int64_t j = 0; j < topK; ++j) {
    auto [logit, expert] = pickNext(kb, logits, row, experts, prevLogit, prevExpert);
    Value probability = kb.div(kb.exp(kb.sub(logit, maxLogit)), denominator);
    kb.store(expert, chosen, {kb.index(j)});
    kb.store(probability, weights, {kb.index(j)});
    total = kb.add(total, probability);
    prevLogit = logit, prevExpert = expert;
  }

  kb.forEach(zero, kb.index(hidden), [&](Value c) { kb.store(kb.f32(0.0), out, {row, c}); });
  kb.forEach(zero, kb.index(topK), [&](Value j) {
    Value expert = kb.load(chosen, {j});
    Value weight = kb.load(weights, {j});
    if (normalize) weight = kb.div(weight, total);
    kb.forEach(zero, kb.index(inter), [&](Value i) {
      auto dot = [&](Value matrix) {
        return kb.reduce(zero, kb.index(hidden), kb.f32(0.0), [&](Value h, Value acc) {
          return kb.add(acc, kb.mul(kb.load(x, {row, h}), kb.load(matrix, {expert, i, h})));
        });
      };
      Value g = dot(gate), u = dot(up);
      Value silu = kb.div(g, kb.add(kb.f32(1.0), kb.exp(kb.neg(g))));
      Value scaled = kb.mul(weight, kb.mul(silu, u));
      kb.forEach(zero, kb.index(hidden), [&](Value c) {
        Value sum = kb.add(kb.load(out, {row, c}), kb.mul(scaled, kb.load(down, {expert, i, c})));
        kb.store(sum, out, {row, c});
      });
    });
  });
}

} // namespace

LogicalResult lowerMoe(StepLowering &step, llm::MoeOp op, ArrayRef<Value> operands,
                       Value output) {
  SmallVector<Value> args(operands);
  args.push_back(output);
  int64_t topK = op.getTopK();
  bool normalize = op.getNormalizeTopK();
  runOverRows(step, op.getLoc(), "moe", kernelKey(op, args), args, args.size() - 1,
              [&](KernelBuilder &kb, ValueRange params, Value begin, Value end) {
                OpBuilder &b = kb.builder();
                // Outside the row loop: an alloca in a loop grows the stack.
                Value chosen = memref::AllocaOp::create(
                    b, kb.location(), MemRefType::get({topK}, b.getIndexType()));
                Value weights = memref::AllocaOp::create(
                    b, kb.location(), MemRefType::get({topK}, b.getF32Type()));
                kb.forEach(begin, end, [&](Value row) {
                  emitMoeRow(kb, params, row, chosen, weights, normalize);
                });
              });
  return success();
}

} // namespace llmc::cpu
