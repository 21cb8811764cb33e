//===- RaiseScoredRouting.cpp - routers that choose by biased scores -----===//
//
// DeepSeek-V3 (and Kimi-K2, which reuses its model code) chooses a token's
// experts from sigmoid scores, not from a softmax, biased for the choice
// only and within groups of experts. transformers' DeepseekV3TopkRouter,
// as optimum exports it:
//
//   s      = Sigmoid(MatMul(xf, router))                       [tokens, E]
//   c      = s + e_score_correction_bias                       (a constant)
//   g      = ReduceSum(TopK(Reshape(c, [-1, G, E / G]), 2).values, -1)
//   kept   = ScatterElements(zeros [tokens, G], TopK(g, topk_group).ids, 1, axis 1)
//   hidden = Not(Reshape(Expand(Unsqueeze(kept, -1), [-1, G, E / G]), [-1, E]))
//   ids    = TopK(Where(hidden, 0, c), top_k).ids
//   w      = GatherElements(s, ids, axis 1)
//   w      = w / (ReduceSum(w, -1) + 1e-20) * routed_scaling_factor
//
// transformers 5 hides the other groups' experts with -inf instead of 0
// (Where(hidden, -inf, c): never chosen), as its DeepSeek-V3 and GLM-4.5's
// MoE, which reuses this router, export through torch.onnx.
//
// ERNIE 4.5's MoE chooses by softmax scores plus its moe_statics bias, in
// one group, and floors the sum it divides by:
//
//   s      = Softmax(Gemm(xf, router))
//   ids    = TopK(s + bias, top_k).ids
//   w      = GatherElements(s, ids, axis -1)
//   w      = w / Clip(ReduceSum(w, -1), moe_norm_min)
//
// The matcher reads either back into llm.moe's routing attributes, checking
// each link; the experts' loop after it is the softmax-routed blocks'.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

#include <cmath>

using namespace mlir;

namespace llmc::raising {
namespace {

/// The k of a TopK of the largest along the last axis, or nullopt.
std::optional<int64_t> largestAlongLastAxis(onnx::TopKOp topk) {
  int64_t rank = rankOf(topk.getX());
  auto k = onnx::getConstantInts(topk.getK());
  if (rank < 1 || !isSingleAxisValue(topk.getAxis(), rank) || topk.getLargest() != 1 || !k ||
      k->size() != 1 || (*k)[0] < 1)
    return std::nullopt;
  return (*k)[0];
}

/// Whether `value` is [rows, dims...] with these static trailing dims.
bool hasTrailingDims(Value value, ArrayRef<int64_t> dims) {
  int64_t rank = rankOf(value);
  if (rank != static_cast<int64_t>(dims.size()) + 1) return false;
  for (auto [i, dim] : llvm::enumerate(dims))
    if (dimOf(value, i + 1) != dim) return false;
  return true;
}

/// Matches the mask that hides the experts of the groups not kept, `hidden`
/// above, over the choices `choice` [tokens, experts]; fills the groups.
LogicalResult matchHiddenGroups(Value hidden, Value choice, ScoredRouting &routing,
                                std::string &why) {
  int64_t experts = dimOf(choice, 1);
  auto notKept = definedBy<onnx::NotOp>(skipCasts(hidden));
  auto flat = notKept ? definedBy<onnx::ReshapeOp>(skipCasts(notKept.getX())) : onnx::ReshapeOp();
  auto expand = flat ? definedBy<onnx::ExpandOp>(flat.getData()) : onnx::ExpandOp();
  auto column = expand ? definedBy<onnx::UnsqueezeOp>(expand.getInput()) : onnx::UnsqueezeOp();
  auto kept = column ? definedBy<onnx::ScatterElementsOp>(column.getData())
                     : onnx::ScatterElementsOp();
  if (!kept || !hasTrailingDims(flat, {experts}))
    return fail(why, "the experts hidden from the choice are not those of the groups a "
                     "ScatterElements did not mark");
  int64_t groups = dimOf(kept, 1);
  if (ShapedType::isDynamic(groups) || groups < 1 || experts % groups ||
      !hasTrailingDims(expand, {groups, experts / groups}) ||
      !isSingleAxis(column.getAxes(), 2, 3))
    return fail(why, "the group mask is not spread over [groups, experts / groups]");
  // ScatterElements(zeros, kept ids, ones, axis 1): 1 for the kept groups.
  if (kept.getAxis() != 1 || kept.getReduction() != "none" || !isZeroFill(kept.getData()) ||
      !isFilledWith(kept.getUpdates(), 1.0))
    return fail(why, "the group mask does not mark the kept groups with ones in zeros");
  auto keptTopK = definedBy<onnx::TopKOp>(kept.getIndices());
  auto keptCount = keptTopK ? largestAlongLastAxis(keptTopK) : std::nullopt;
  if (!keptCount || kept.getIndices() != keptTopK.getIndices())
    return fail(why, "the kept groups are not a TopK of the group scores");
  // Group scores: the sum of each group's two best choices.
  auto sum = definedBy<onnx::ReduceSumOp>(keptTopK.getX());
  auto best = sum ? definedBy<onnx::TopKOp>(sum.getData()) : onnx::TopKOp();
  auto bestCount = best ? largestAlongLastAxis(best) : std::nullopt;
  auto view = best ? definedBy<onnx::ReshapeOp>(best.getX()) : onnx::ReshapeOp();
  if (!sum || sum.getKeepdims() != 0 || !isSingleAxis(sum.getAxes(), -1, 3) || !bestCount ||
      *bestCount != 2 || sum.getData() != best.getValues() || !view ||
      view.getData() != choice || !hasTrailingDims(view, {groups, experts / groups}))
    return fail(why, "a group's score is not the sum of its two best choices (DeepSeek-V3's; "
                     "DeepSeek-V2's best single score is not supported)");
  routing.groups = groups;
  routing.keptGroups = *keptCount;
  return success();
}

} // namespace

std::optional<WeightNormalization> normalizedWeights(Value weights) {
  for (Operation *user : weights.getUsers()) {
    auto div = dyn_cast<onnx::DivOp>(user);
    if (!div || div.getA() != weights) continue;
    WeightNormalization normalization{div};
    Value total = div.getB();
    if (auto add = definedBy<onnx::AddOp>(total)) {
      auto [sum, other] = operandDefinedBy<onnx::ReduceSumOp>(add);
      auto constant = sum ? constantScalar(other) : std::nullopt;
      if (!constant || *constant < 0.0) continue;
      normalization.epsilon = static_cast<float>(*constant);
      total = sum;
    } else if (auto clip = definedBy<onnx::ClipOp>(total)) {
      // A floor under the sum and no ceiling.
      auto floor = isNone(clip.getMax()) ? constantScalar(clip.getMin()) : std::nullopt;
      if (!floor || *floor < 0.0) continue;
      normalization.minimum = static_cast<float>(*floor);
      total = clip.getInput();
    }
    auto sum = definedBy<onnx::ReduceSumOp>(total);
    if (sum && sum.getData() == weights && sum.getKeepdims() == 1 &&
        isSingleAxis(sum.getAxes(), -1, 2))
      return normalization;
  }
  return std::nullopt;
}

FailureOr<ScoredRouting> matchScoredRouting(onnx::TopKOp topk, std::string &why) {
  ScoredRouting routing;
  // The choice, with the hidden groups' experts set to 0 (transformers 4) or
  // to -inf (transformers 5: never chosen).
  Value choice = skipCasts(topk.getX());
  if (auto where = definedBy<onnx::WhereOp>(choice)) {
    std::optional<double> fill = constantScalar(where.getX());
    routing.excludeHiddenGroups = fill && std::isinf(*fill) && *fill < 0.0;
    if (!routing.excludeHiddenGroups && !isConstantScalar(where.getX(), 0.0))
      return fail(why, "the experts of the groups not kept choose neither 0 nor -inf");
    choice = where.getY();
    if (failed(matchHiddenGroups(where.getCondition(), choice, routing, why))) return failure();
  }
  int64_t experts = dimOf(choice, 1);
  if (rankOf(choice) != 2 || ShapedType::isDynamic(experts))
    return fail(why, "the experts' choices are not [tokens, experts]");
  // c = s + bias, the bias a constant of one value per expert.
  Value scores = choice;
  if (auto add = definedBy<onnx::AddOp>(choice)) {
    Value bias = isConstant(add.getB()) ? add.getB() : add.getA();
    scores = bias == add.getB() ? add.getA() : add.getB();
    auto values = readConstantFloats(bias);
    if (!values || static_cast<int64_t>(values->size()) != experts ||
        cast<ShapedType>(bias.getType()).getRank() > 2)
      return fail(why, "the choice adds to the scores something other than a constant per expert");
    routing.selectionBias = bias;
  }
  auto rows = definedBy<onnx::ReshapeOp>(scores);
  if (rows && rankOf(rows.getData()) == 2 && dimOf(rows.getData(), 1) == experts)
    scores = rows.getData();
  if (auto sigmoid = definedBy<onnx::SigmoidOp>(scores)) {
    routing.sigmoid = true;
    routing.logits = sigmoid.getX();
  } else if (auto softmax = definedBy<onnx::SoftmaxOp>(scores);
             softmax && isSingleAxisValue(softmax.getAxis(), 2)) {
    routing.logits = softmax.getInput();
  } else {
    return fail(why, "the experts are chosen by something other than the sigmoid or the softmax "
                     "of the router's logits, or that plus a bias");
  }
  // The weights: the chosen experts' scores, without the bias.
  auto gather = [&]() -> onnx::GatherElementsOp {
    for (Operation *user : topk.getIndices().getUsers())
      if (auto pick = dyn_cast<onnx::GatherElementsOp>(user))
        if (pick.getIndices() == topk.getIndices() && pick.getData() == scores &&
            isSingleAxisValue(pick.getAxis(), 2))
          return pick;
    return {};
  }();
  if (!gather)
    return fail(why, "the routing weights are not the chosen experts' scores "
                     "(GatherElements of the TopK's ids)");
  routing.weights = gather;
  if (std::optional<WeightNormalization> normalized = normalizedWeights(gather)) {
    routing.normalize = true;
    routing.epsilon = normalized->epsilon;
    routing.minimum = normalized->minimum;
    routing.weights = normalized->division;
  }
  // times routed_scaling_factor
  for (Operation *user : routing.weights.getUsers()) {
    auto mul = dyn_cast<onnx::MulOp>(user);
    if (!mul) continue;
    Value other = mul.getA() == routing.weights ? mul.getB() : mul.getA();
    if (auto scale = constantScalar(other)) {
      routing.scale = static_cast<float>(*scale);
      routing.weights = mul;
      break;
    }
  }
  return routing;
}

FailureOr<Value> createSelectionBias(OpBuilder &builder, const ScoredRouting &routing) {
  if (!routing.selectionBias) return Value();
  auto bias = readConstantFloats(routing.selectionBias);
  if (!bias) return failure();
  return createF32Constant(builder, routing.selectionBias.getLoc(),
                           {static_cast<int64_t>(bias->size())}, *bias);
}

void setScoredRouting(llm::MoeOp moe, const ScoredRouting &routing, Value selectionBias) {
  if (selectionBias) moe.getSelectionBiasMutable().assign(selectionBias);
  moe.setSigmoidScores(routing.sigmoid);
  if (routing.groups) {
    moe.setExpertGroups(routing.groups);
    moe.setTopKGroups(routing.keptGroups);
    moe.setExcludeHiddenGroups(routing.excludeHiddenGroups);
  }
  if (routing.epsilon != 0.0f) moe.setNormalizeEpsilon(APFloat(routing.epsilon));
  if (routing.minimum != 0.0f) moe.setNormalizeMin(APFloat(routing.minimum));
  if (routing.scale) moe.setRoutedScale(APFloat(*routing.scale));
}

} // namespace llmc::raising
