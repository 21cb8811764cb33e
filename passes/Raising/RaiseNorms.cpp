//===- RaiseNorms.cpp - rms_norm and layer_norm ---------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

using namespace mlir;

namespace llmc::raising {
namespace {

/// The input of a LayerNorm when `value` is x - mean(x, -1), else null.
Value centredInput(Value value) {
  auto sub = definedBy<onnx::SubOp>(value);
  auto mean = sub ? definedBy<onnx::ReduceMeanOp>(sub.getB()) : onnx::ReduceMeanOp();
  if (!mean || mean.getData() != sub.getA() || mean.getKeepdims() != 1 ||
      !isSingleAxis(mean.getAxes(), -1, rankOf(sub.getA())))
    return nullptr;
  return sub.getA();
}

/// The (weight, normalised value) factors of a norm's final `weight * normed`
/// (either order, the normalised value with its Casts removed); a null
/// weight when neither factor is a constant of rank `rank`.
std::pair<Value, Value> splitNormWeight(onnx::MulOp root, int64_t rank = 1) {
  Value weight = root.getA(), normed = root.getB();
  if (!isConstant(weight)) std::swap(weight, normed);
  if (!isConstant(weight) || rankOf(weight) != rank) return {};
  return {weight, skipCasts(normed)};
}

/// `normed` as x / sqrt(s), written x * Div(1, Sqrt(s)), x * Reciprocal(Sqrt(s))
/// or Div(x, Sqrt(s)): x and the Sqrt, or nulls.
std::pair<Value, onnx::SqrtOp> dividedBySqrt(Value normed) {
  Value x, sqrt;
  if (auto mul = definedBy<onnx::MulOp>(normed)) {
    for (auto [a, b] : {std::pair(mul.getA(), mul.getB()), std::pair(mul.getB(), mul.getA())}) {
      if (auto div = definedBy<onnx::DivOp>(b); div && isConstantScalar(div.getA(), 1.0)) {
        x = a, sqrt = div.getB();
        break;
      }
      if (auto reciprocal = definedBy<onnx::ReciprocalOp>(b)) {
        x = a, sqrt = reciprocal.getX();
        break;
      }
    }
  } else if (auto div = definedBy<onnx::DivOp>(normed)) {
    x = div.getA(), sqrt = div.getB();
  }
  auto sqrtOp = definedBy<onnx::SqrtOp>(sqrt);
  if (!x || !sqrtOp) return {};
  return {x, sqrtOp};
}

/// The decomposed RMSNorm torch.onnx writes:
///   weight * Cast?(x * 1/sqrt(mean(x^2, -1) + eps))   (x possibly a Cast)
/// with 1/sqrt as Div(1, Sqrt), Reciprocal(Sqrt), or x / Sqrt directly.
struct RaiseDecomposedRmsNorm : OpRewritePattern<onnx::MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(onnx::MulOp root, PatternRewriter &rewriter) const override {
    auto [weight, normed] = splitNormWeight(root);
    if (!weight) return rewriter.notifyMatchFailure(root, "no 1-D constant weight operand");

    auto [x, sqrtOp] = dividedBySqrt(normed);
    if (!x) return rewriter.notifyMatchFailure(root, "no x * 1/sqrt(...) factor");
    auto add = definedBy<onnx::AddOp>(sqrtOp.getX());
    if (!add) return rewriter.notifyMatchFailure(root, "sqrt operand is not mean + eps");
    Value mean = add.getA(), eps = add.getB();
    if (!constantScalar(eps)) std::swap(mean, eps);
    auto reduce = definedBy<onnx::ReduceMeanOp>(mean);
    std::optional<double> epsilon = constantScalar(eps);
    if (!reduce || !epsilon) return rewriter.notifyMatchFailure(root, "no ReduceMean + constant eps");
    int64_t rank = rankOf(x);
    if (rank < 1 || reduce.getKeepdims() != 1 || !isSingleAxis(reduce.getAxes(), -1, rank))
      return rewriter.notifyMatchFailure(root, "ReduceMean is not over the last axis with keepdims");
    auto pow = definedBy<onnx::PowOp>(reduce.getData());
    Value squared = pow ? pow.getA() : Value();
    if (!pow || !isConstantScalar(pow.getB(), 2.0)) {
      auto square = definedBy<onnx::MulOp>(reduce.getData());
      if (!square || square.getA() != square.getB())
        return rewriter.notifyMatchFailure(root, "mean is not of x^2");
      squared = square.getA();
    }
    if (squared != x) return rewriter.notifyMatchFailure(root, "x^2 and x are different values");
    if (dimOf(weight, 0) != dimOf(x, -1))
      return rewriter.notifyMatchFailure(root, "weight length differs from the hidden size");
    if (centredInput(x))
      return rewriter.notifyMatchFailure(root, "the input is centred (x - mean): a LayerNorm");

    auto norm = llm::RmsNormOp::create(rewriter, fusedLocOf({root, sqrtOp, reduce}), root.getType(),
                                       skipCasts(x), weight, rewriter.getF32FloatAttr(*epsilon));
    rewriter.replaceOp(root, norm);
    return success();
  }
};

/// The decomposed LayerNorm torch.onnx writes before opset 17:
///   weight * ((x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps))
/// with the division as for RMSNorm (Cohere's, without a bias, multiplies by
/// 1/sqrt). A bias add after it is folded in by the glue stage.
///
/// Cohere's q/k norm (`use_qk_norm`) normalises each head of a projection
/// viewed as [.., heads, head_dim] with a [heads, head_dim] weight: the norm
/// of the projection itself, its runs of head_dim scaled by the weight's
/// rows, then the view.
struct RaiseDecomposedLayerNorm : OpRewritePattern<onnx::MulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(onnx::MulOp root, PatternRewriter &rewriter) const override {
    auto [weight, normed] = splitNormWeight(root);
    bool perHead = !weight;
    if (perHead) std::tie(weight, normed) = splitNormWeight(root, 2);
    if (!weight) return rewriter.notifyMatchFailure(root, "no 1-D or 2-D constant weight operand");
    auto [centred, sqrt] = dividedBySqrt(normed);
    Value x = centred ? centredInput(centred) : Value();
    if (!x) return rewriter.notifyMatchFailure(root, "not (x - mean(x)) / sqrt(...)");
    auto add = definedBy<onnx::AddOp>(sqrt.getX());
    if (!add) return rewriter.notifyMatchFailure(root, "divisor is not sqrt(var + eps)");
    Value variance = add.getA(), eps = add.getB();
    if (!constantScalar(eps)) std::swap(variance, eps);
    auto reduce = definedBy<onnx::ReduceMeanOp>(variance);
    auto pow = reduce ? definedBy<onnx::PowOp>(reduce.getData()) : onnx::PowOp();
    if (!constantScalar(eps) || !pow || pow.getA() != centred ||
        !isConstantScalar(pow.getB(), 2.0) || reduce.getKeepdims() != 1 ||
        !isSingleAxis(reduce.getAxes(), -1, rankOf(x)))
      return rewriter.notifyMatchFailure(root, "variance is not mean((x - mean)^2, -1) + eps");
    if (dimOf(weight, -1) != dimOf(x, -1))
      return rewriter.notifyMatchFailure(root, "weight length differs from the hidden size");
    Location loc = fusedLocOf({root, sqrt, reduce});
    FloatAttr epsilon = rewriter.getF32FloatAttr(*constantScalar(eps));
    if (!perHead) {
      rewriter.replaceOp(root, llm::LayerNormOp::create(rewriter, loc, root.getType(),
                                                        skipCasts(x), weight, Value(), epsilon));
      return success();
    }
    auto view = definedBy<onnx::ReshapeOp>(skipCasts(x));
    Value projection = view ? view.getData() : Value();
    int64_t heads = dimOf(weight, 0), head = dimOf(weight, 1);
    if (!projection || rankOf(projection) < 1 || rankOf(projection) + 1 != rankOf(view) ||
        dimOf(view, -2) != heads || dimOf(projection, -1) != heads * head ||
        root.getType() != view.getType())
      return rewriter.notifyMatchFailure(
          root, "a [heads, head_dim] weight normalises what is not a projection viewed as "
                "[.., heads, head_dim]");
    Value norm = llm::LayerNormOp::create(rewriter, loc, projection.getType(), projection, weight,
                                          Value(), epsilon);
    rewriter.replaceOpWithNewOp<onnx::ReshapeOp>(root, root.getType(), norm, view.getShape());
    return success();
  }
};

/// Whether a normalisation op with an `axis` attribute normalises over the last axis.
bool normalizesLastAxis(Value input, int64_t axis) {
  int64_t rank = rankOf(input);
  return rank > 0 && (axis == -1 || axis == rank - 1);
}

/// RMSNormalization (opset 23) and SimplifiedLayerNormalization (onnxruntime).
template <typename OpTy>
struct RaiseRmsNormOp : OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;
  LogicalResult matchAndRewrite(OpTy op, PatternRewriter &rewriter) const override {
    if (!normalizesLastAxis(op.getX(), op.getAxis()))
      return rewriter.notifyMatchFailure(op, "does not normalise over the last axis");
    for (Value statistic : op->getResults().drop_front())
      if (!statistic.use_empty())
        return rewriter.notifyMatchFailure(op, "its statistics outputs are used");
    auto norm = llm::RmsNormOp::create(rewriter, op.getLoc(), op->getResult(0).getType(),
                                       op.getX(), op.getScale(), op.getEpsilonAttr());
    SmallVector<Value> replacements(op->getNumResults(), norm);
    rewriter.replaceOp(op, replacements);
    return success();
  }
};

/// The norm of a Skip*LayerNormalization's sum: llm.rms_norm for the
/// simplified op, llm.layer_norm (with its beta) for the other.
Value createSkipNorm(PatternRewriter &rewriter, onnx::SkipSimplifiedLayerNormalizationOp op,
                     Value sum) {
  return llm::RmsNormOp::create(rewriter, op.getLoc(), op.getOutput().getType(), sum,
                                op.getGamma(), op.getEpsilonAttr());
}
Value createSkipNorm(PatternRewriter &rewriter, onnx::SkipLayerNormalizationOp op, Value sum) {
  return llm::LayerNormOp::create(rewriter, op.getLoc(), op.getOutput().getType(), sum,
                                  op.getGamma(), optionalOperand(op.getBeta()),
                                  op.getEpsilonAttr());
}

/// Skip(Simplified)LayerNormalization: sum = input + skip; output = norm(sum),
/// and the sum feeds the next residual.
template <typename SkipNormOp>
struct RaiseSkipNorm : OpRewritePattern<SkipNormOp> {
  using OpRewritePattern<SkipNormOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(SkipNormOp op, PatternRewriter &rewriter) const override {
    if (!isNone(op.getBias())) return rewriter.notifyMatchFailure(op, "has a bias input");
    if (!op.getMean().use_empty() || !op.getInvStdVar().use_empty())
      return rewriter.notifyMatchFailure(op, "its statistics outputs are used");
    Value sum = llm::AddOp::create(rewriter, op.getLoc(), op.getInput().getType(), op.getInput(),
                                   op.getSkip());
    Value norm = createSkipNorm(rewriter, op, sum);
    rewriter.replaceOp(op, {norm, norm, norm, sum});
    return success();
  }
};

struct RaiseLayerNormalization : OpRewritePattern<onnx::LayerNormalizationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::LayerNormalizationOp op,
                                PatternRewriter &rewriter) const override {
    if (!normalizesLastAxis(op.getX(), op.getAxis()))
      return rewriter.notifyMatchFailure(op, "does not normalise over the last axis");
    if (!op.getMean().use_empty() || !op.getInvStdDev().use_empty())
      return rewriter.notifyMatchFailure(op, "its statistics outputs are used");
    auto norm = llm::LayerNormOp::create(rewriter, op.getLoc(), op.getY().getType(), op.getX(),
                                         op.getScale(), optionalOperand(op.getB()),
                                         op.getEpsilonAttr());
    rewriter.replaceOp(op, {norm, norm, norm});
    return success();
  }
};

/// Whether `reshaped`, a reshape of `x` (so with as many elements), has x's
/// shape: every dim x's (sameDim) but for at most one, which then must be too.
bool keepsShapeOf(Value reshaped, Value x) {
  int64_t rank = rankOf(x), unproven = 0;
  if (rank < 0 || rankOf(reshaped) != rank) return false;
  for (int64_t i = 0; i < rank; ++i)
    if (!sameDim(reshaped, i, x, i)) ++unproven;
  return unproven <= 1;
}

/// Reshape(rms_norm(Reshape(x[..., H*D] -> [..., D])) -> x's shape): a norm of
/// each run of D features, as onnxruntime-genai writes Qwen3's q_norm and
/// k_norm -> the per-head llm.rms_norm of x. Reshapes keep the element order,
/// so each group of D is a head of one token.
struct RaiseReshapedHeadNorm : OpRewritePattern<onnx::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ReshapeOp op, PatternRewriter &rewriter) const override {
    auto norm = definedBy<llm::RmsNormOp>(op.getData());
    auto inner = norm ? definedBy<onnx::ReshapeOp>(norm.getInput()) : onnx::ReshapeOp();
    if (!inner || !norm->hasOneUse() || !inner->hasOneUse())
      return rewriter.notifyMatchFailure(op, "does not reshape a norm of a reshape back");
    Value x = inner.getData();
    int64_t features = dimOf(x, -1), group = dimOf(norm.getWeight(), 0);
    if (ShapedType::isDynamic(features) || ShapedType::isDynamic(group) || group <= 0 ||
        features % group || dimOf(inner, -1) != group)
      return rewriter.notifyMatchFailure(op, "the norm is not over groups of x's last dim");
    if (op.getType() != x.getType() || !keepsShapeOf(op, x))
      return rewriter.notifyMatchFailure(op, "the result is not shaped as x");
    rewriter.replaceOpWithNewOp<llm::RmsNormOp>(op, x.getType(), x, norm.getWeight(),
                                                norm.getEpsilonAttr());
    return success();
  }
};

/// rms_norm(split_heads(x)) over each head's features (Gemma-3's q_norm and
/// k_norm, after the heads' transpose) -> split_heads(the per-head rms_norm
/// of x): the norm is token-wise again, as the serving form needs.
struct NormBeforeSplitHeads : OpRewritePattern<llm::RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(llm::RmsNormOp op, PatternRewriter &rewriter) const override {
    auto split = definedBy<llm::SplitHeadsOp>(op.getInput());
    if (!split || !split->hasOneUse())
      return rewriter.notifyMatchFailure(op, "does not normalise the heads of one split_heads");
    int64_t head = dimOf(split, -1);
    if (ShapedType::isDynamic(head) || dimOf(op.getWeight(), 0) != head)
      return rewriter.notifyMatchFailure(op, "the weight is not one head long");
    Value x = split.getInput();
    auto norm = llm::RmsNormOp::create(rewriter, op.getLoc(), x.getType(), x, op.getWeight(),
                                       op.getEpsilonAttr());
    rewriter.replaceOpWithNewOp<llm::SplitHeadsOp>(op, op.getType(), norm,
                                                   split.getNumHeadsAttr());
    return success();
  }
};

/// rms_norm(y) over each head's features, y [batch, heads, seq, head_dim]
/// made by another op of the heads form (Hunyuan normalises q and k after the
/// rotary) -> split_heads(the per-head rms_norm of merge_heads(y)). In the
/// ragged form both are views, and the norm is token-wise as serving needs.
struct NormOfHeadsOverMergedHeads : OpRewritePattern<llm::RmsNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(llm::RmsNormOp op, PatternRewriter &rewriter) const override {
    Operation *producer = op.getInput().getDefiningOp();
    if (!producer || isa<llm::SplitHeadsOp>(producer) ||
        !producer->hasTrait<llm::OpTrait::TokenWiseHeads>())
      return rewriter.notifyMatchFailure(op, "the input is not made in the heads form");
    auto heads = dyn_cast<RankedTensorType>(op.getType());
    if (!heads || heads.getRank() != 4)
      return rewriter.notifyMatchFailure(op, "is not [batch, heads, seq, head_dim]");
    int64_t numHeads = heads.getDimSize(1), head = heads.getDimSize(3);
    if (ShapedType::isDynamic(numHeads) || ShapedType::isDynamic(head) ||
        dimOf(op.getWeight(), 0) != head || rankOf(op.getWeight()) != 1)
      return rewriter.notifyMatchFailure(op, "the weight is not one head long");
    auto merged = RankedTensorType::get(
        {heads.getDimSize(0), heads.getDimSize(2), numHeads * head}, heads.getElementType());
    Value x = llm::MergeHeadsOp::create(rewriter, op.getLoc(), merged, op.getInput());
    auto norm = llm::RmsNormOp::create(rewriter, op.getLoc(), merged, x, op.getWeight(),
                                       op.getEpsilonAttr());
    rewriter.replaceOpWithNewOp<llm::SplitHeadsOp>(op, op.getType(), norm,
                                                   rewriter.getI64IntegerAttr(numHeads));
    return success();
  }
};

} // namespace

void populateNormGluePatterns(RewritePatternSet &patterns) {
  patterns.add<FoldBiasAdd<llm::LayerNormOp>, NormBeforeSplitHeads, NormOfHeadsOverMergedHeads>(
      patterns.getContext());
}

void populateNormPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseReshapedHeadNorm, RaiseDecomposedRmsNorm, RaiseDecomposedLayerNorm,
               RaiseRmsNormOp<onnx::RMSNormalizationOp>,
               RaiseRmsNormOp<onnx::SimplifiedLayerNormalizationOp>,
               RaiseSkipNorm<onnx::SkipSimplifiedLayerNormalizationOp>,
               RaiseSkipNorm<onnx::SkipLayerNormalizationOp>, RaiseLayerNormalization>(
      patterns.getContext());
}

} // namespace llmc::raising
