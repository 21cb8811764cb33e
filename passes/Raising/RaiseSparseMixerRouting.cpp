//===- RaiseSparseMixerRouting.cpp - PhiMoE's sparsemixer router ----------===//
//
// PhiMoE (Phi-3.5-MoE) routes each token to two experts with sparsemixer,
// whose eval path transformers writes and torch.onnx's dynamo exporter
// traces as
//
//   e1   = ArgMax(r)                                          r: router logits [tokens, E]
//   r2   = ScatterElements(r, e1, -inf)                       (e1 taken out)
//   e2   = ArgMax(r2)
//   w_s  = GatherElements(Softmax(Where(Greater(Div(Sub(m_s, r), Max(Abs(r), m_s)), T),
//                                       -inf, base_s)), e_s)
//          m_s = ReduceMax(base_s), base_1 = r, base_2 = r2, T = 2 x router_jitter_noise
//   ids  = Concat(e1, e2);  w = Concat(w_1, w_2)
//
// which is llm.moe's sparse_mixer_threshold T. The matcher checks each link
// from the ids back to the router's logits and finds the weights from them.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

#include <cmath>

using namespace mlir;

namespace llmc::raising {
namespace {

/// Whether `op` takes the largest along the last axis of a [tokens, experts]
/// tensor, the first on ties (torch.argmax and max's index).
bool isArgMaxOfExperts(onnx::ArgMaxOp op) {
  return op && rankOf(op.getData()) == 2 && onnx::normalizeAxis(op.getAxis(), 2) == 1 &&
         op.getKeepdims() == 1 && op.getSelectLastIndex() == 0;
}

/// Whether `value` is ReduceMax(`of`) along the experts, kept as a column.
bool isRowMax(Value value, Value of) {
  auto max = definedBy<onnx::ReduceMaxOp>(value);
  return max && max.getData() == of && max.getKeepdims() == 1 && isSingleAxis(max.getAxes(), -1, 2);
}

/// The threshold T of one slot's weight `w_s` (the header's form) for
/// expert `chosen` of `base`, whose largest is compared with `logits`; or
/// nothing when it is not that form.
std::optional<double> slotThreshold(Value weight, Value chosen, Value base, Value logits) {
  auto gather = definedBy<onnx::GatherElementsOp>(weight);
  if (!gather || gather.getIndices() != chosen || onnx::normalizeAxis(gather.getAxis(), 2) != 1)
    return std::nullopt;
  auto softmax = definedBy<onnx::SoftmaxOp>(gather.getData());
  auto where = softmax && isSingleAxisValue(softmax.getAxis(), 2)
                   ? definedBy<onnx::WhereOp>(softmax.getInput())
                   : onnx::WhereOp();
  std::optional<double> fill = where ? constantScalar(where.getX()) : std::nullopt;
  if (!fill || !std::isinf(*fill) || *fill > 0.0 || where.getY() != base) return std::nullopt;
  auto greater = definedBy<onnx::GreaterOp>(where.getCondition());
  auto ratio = greater ? definedBy<onnx::DivOp>(greater.getA()) : onnx::DivOp();
  auto gap = ratio ? definedBy<onnx::SubOp>(ratio.getA()) : onnx::SubOp();
  auto factor = ratio ? definedBy<onnx::MaxOp>(ratio.getB()) : onnx::MaxOp();
  if (!gap || !factor || gap.getB() != logits || !isRowMax(gap.getA(), base) ||
      factor.getData_0().size() != 2)
    return std::nullopt;
  // max(|r|, m), in either order.
  Value first = factor.getData_0()[0], second = factor.getData_0()[1];
  auto abs = definedBy<onnx::AbsOp>(first);
  Value best = second;
  if (!abs) abs = definedBy<onnx::AbsOp>(second), best = first;
  if (!abs || abs.getX() != logits || best != gap.getA()) return std::nullopt;
  return constantScalar(greater.getB());
}

} // namespace

FailureOr<SparseMixerRouting> matchSparseMixerRouting(Value ids, std::string &why) {
  auto concat = definedBy<onnx::ConcatOp>(ids);
  if (!concat || concat.getInputs().size() != 2 || rankOf(concat) != 2 ||
      onnx::normalizeAxis(concat.getAxis(), 2) != 1)
    return fail(why, "the experts are chosen by neither a TopK nor two ArgMaxes (PhiMoE's "
                     "sparsemixer)");
  auto first = definedBy<onnx::ArgMaxOp>(concat.getInputs()[0]);
  auto second = definedBy<onnx::ArgMaxOp>(concat.getInputs()[1]);
  if (!isArgMaxOfExperts(first) || !isArgMaxOfExperts(second))
    return fail(why, "the two experts are not ArgMaxes along the experts");
  Value logits = first.getData(), rest = second.getData();
  auto takenOut = definedBy<onnx::ScatterElementsOp>(rest);
  if (!takenOut || takenOut.getData() != logits || takenOut.getIndices() != first.getResult() ||
      onnx::normalizeAxis(takenOut.getAxis(), 2) != 1 || takenOut.getReduction() != "none" ||
      !isFilledWith(takenOut.getUpdates(), -std::numeric_limits<double>::infinity()))
    return fail(why,
                "the second expert is not the largest of the logits with the first set to -inf");

  // The weights: the Concat of each slot's weight, found from the first's.
  SparseMixerRouting routing{logits, Value(), 0.0f};
  for (Operation *user : first->getUsers()) {
    auto gather = dyn_cast<onnx::GatherElementsOp>(user);
    if (!gather) continue;
    for (Operation *reader : gather->getUsers()) {
      auto weights = dyn_cast<onnx::ConcatOp>(reader);
      if (!weights || weights.getInputs().size() != 2 || weights.getInputs()[0] != gather ||
          onnx::normalizeAxis(weights.getAxis(), 2) != 1)
        continue;
      std::optional<double> t1 = slotThreshold(weights.getInputs()[0], first, logits, logits);
      std::optional<double> t2 = slotThreshold(weights.getInputs()[1], second, rest, logits);
      if (!t1 || !t2 || *t1 != *t2) continue;
      routing.weights = weights;
      routing.threshold = static_cast<float>(*t1);
    }
  }
  if (!routing.weights)
    return fail(why, "the routing weights are not each expert's softmax over the logits within "
                     "sparsemixer's threshold of it");
  return routing;
}

} // namespace llmc::raising
