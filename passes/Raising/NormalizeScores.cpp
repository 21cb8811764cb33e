//===- NormalizeScores.cpp - decomposed attention's scores in one form ---===//
//
// Before the masks are proven, the scores of decomposed attention are put in
// the form the mask analysis and the attention patterns read:
// MatMul(q, k^T) [* scale] + mask over [batch, heads, s, keys].
//
// - BLOOM's attention multiplies 3-D batches: q, k and v [batch, heads, s, d]
//   flattened to [batch * heads, s, d] for torch.baddbmm and torch.bmm, the
//   scores (plus the linear biases, [batch * heads, 1, keys]) viewed as
//   [batch, heads, s, keys] for the mask and the softmax, and flattened again
//   for the product with v. The products are viewed as 4-D again, each view
//   pushed back to the heads it splits.
// - Without a cache between them, TorchScript joins the keys' heads transpose
//   and their K^T into one [0, 2, 3, 1]: it is split in two again.
// - GPT-Neo selects its scores, torch.where(causal, scores, finfo.min), and
//   MPT fills them, masked_fill(mask, finfo.min): with a fill that hides a
//   key, the selection is an added mask of 0 and the fill.
// - What is added to the scores, `(scores + bias) + mask` (BLOOM's linear
//   biases, GPT-Neo's selection, then the padding mask), is gathered into one
//   operand: the mask that proving runs.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"
#include "llmc/Support/MatchFailureListener.h"

#define DEBUG_TYPE "raise-onnx-to-llm"

using namespace mlir;

namespace llmc::raising {
namespace {

/// The 4-D [b, heads, m, n] value that `flat` [b * heads, m, n] flattens
/// (a Reshape keeping the last two dims), or null.
Value headsFlattenedBy(Value flat, int64_t heads) {
  auto reshape = definedBy<onnx::ReshapeOp>(flat);
  if (!reshape || rankOf(flat) != 3) return {};
  Value heads4 = reshape.getData();
  if (rankOf(heads4) != 4 || dimOf(heads4, 1) != heads || !sameDim(flat, 1, heads4, 2) ||
      !sameDim(flat, 2, heads4, 3))
    return {};
  return heads4;
}

/// The 4-D operands of `product`, a MatMul of flattened heads: A [b * heads,
/// m, k] flattens a [b, heads, m, k], B flattens a [b, heads, k, n] or is the
/// transpose of one that flattens [b, heads, n, k] (then returned transposed
/// [0, 1, 3, 2], created when `rewriter` is given). Nulls when not.
std::pair<Value, Value> headOperands(onnx::MatMulOp product, int64_t heads,
                                     PatternRewriter *rewriter = nullptr) {
  Value lhs = headsFlattenedBy(product.getA(), heads);
  Value rhs = headsFlattenedBy(product.getB(), heads);
  auto transposed = definedBy<onnx::TransposeOp>(product.getB());
  if (!rhs && transposed && hasPerm(transposed, {0, 2, 1})) {
    Value keys = headsFlattenedBy(transposed.getData(), heads);
    if (keys && rewriter) {
      auto type = cast<RankedTensorType>(keys.getType());
      rhs = onnx::TransposeOp::create(
          *rewriter, transposed.getLoc(),
          type.clone({type.getDimSize(0), heads, type.getDimSize(3), type.getDimSize(2)}), keys,
          rewriter->getDenseI64ArrayAttr({0, 1, 3, 2}));
    } else {
      rhs = keys;
    }
  }
  if (!lhs || !rhs) return {};
  return {lhs, rhs};
}

/// Whether `value` is computed from a product of flattened heads through
/// the elementwise ops a view of heads may be pushed through.
bool reachesHeadProduct(Value value, int64_t heads, int depth = 0) {
  Operation *op = value.getDefiningOp();
  if (!op || depth > 8) return false;
  if (auto product = dyn_cast<onnx::MatMulOp>(op))
    return rankOf(value) == 3 && headOperands(product, heads).first;
  if (!isa<onnx::AddOp, onnx::SubOp, onnx::MulOp, onnx::DivOp, onnx::CastOp>(op)) return false;
  return llvm::any_of(op->getOperands(), [&](Value operand) {
    return reachesHeadProduct(operand, heads, depth + 1);
  });
}

/// `flat` [b * heads or 1, m, n] viewed as [b or 1, heads or 1, m, n] by a
/// Reshape to [-1, heads, Shape(flat)[1:3]] (or [1, 1, ...]): the view of
/// `like`'s dims 0 and 1 for an operand that broadcasts against it.
Value viewAsHeads(PatternRewriter &rewriter, Location loc, Value flat, int64_t heads,
                  Value like) {
  auto type = cast<RankedTensorType>(flat.getType());
  bool broadcast = type.getDimSize(0) == 1;
  auto leadingType = RankedTensorType::get({2}, rewriter.getI64Type());
  Value leading = onnx::ConstantOp::create(
      rewriter, loc, leadingType,
      DenseIntElementsAttr::get(leadingType, broadcast ? ArrayRef<int64_t>{1, 1}
                                                       : ArrayRef<int64_t>{-1, heads}));
  Value trailing = onnx::ShapeOp::create(rewriter, loc,
                                         RankedTensorType::get({2}, rewriter.getI64Type()), flat,
                                         rewriter.getI64IntegerAttr(1),
                                         rewriter.getI64IntegerAttr(3));
  Value shape = onnx::ConcatOp::create(rewriter, loc,
                                       RankedTensorType::get({4}, rewriter.getI64Type()),
                                       ValueRange{leading, trailing},
                                       rewriter.getI64IntegerAttr(0));
  auto viewType = type.clone({broadcast ? 1 : dimOf(like, 0), broadcast ? 1 : heads,
                              type.getDimSize(1), type.getDimSize(2)});
  return onnx::ReshapeOp::create(rewriter, loc, viewType, flat, shape);
}

/// Reshape(x[b * heads, m, n] -> [b, heads, m, n]) with x a product of
/// flattened heads, or an elementwise op over one -> the product of the 4-D
/// heads, or the op over its operands viewed as heads (the scores of BLOOM's
/// baddbmm, their linear biases, the probabilities times v). Only dim 0 is
/// split, so the operands' broadcast is unchanged: an operand of rank 2 or
/// less broadcasts over the kept dims alike, a 3-D one is viewed as heads.
struct UnflattenHeadBatch : OpRewritePattern<onnx::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ReshapeOp op, PatternRewriter &rewriter) const override {
    Value flat = op.getData();
    int64_t heads = dimOf(op, 1);
    if (rankOf(flat) != 3 || rankOf(op) != 4 || ShapedType::isDynamic(heads) ||
        !sameDim(op, 2, flat, 1) || !sameDim(op, 3, flat, 2))
      return rewriter.notifyMatchFailure(op, "not [b * heads, m, n] -> [b, heads, m, n]");
    Operation *producer = flat.getDefiningOp();
    if (!producer || !reachesHeadProduct(flat, heads))
      return rewriter.notifyMatchFailure(op, "does not view a product of flattened heads");
    Location loc = producer->getLoc();
    if (auto product = dyn_cast<onnx::MatMulOp>(producer)) {
      auto [lhs, rhs] = headOperands(product, heads, &rewriter);
      rewriter.replaceOpWithNewOp<onnx::MatMulOp>(op, op.getType(), lhs, rhs);
      return success();
    }
    if (llvm::any_of(producer->getOperands(),
                     [](Value operand) { return rankOf(operand) < 0 || rankOf(operand) > 3; }))
      return rewriter.notifyMatchFailure(op, "an operand is not of rank 3 or less");
    SmallVector<Value> operands;
    for (Value operand : producer->getOperands())
      operands.push_back(rankOf(operand) == 3 ? viewAsHeads(rewriter, loc, operand, heads, op)
                                              : operand);
    OperationState state(loc, producer->getName(), operands, TypeRange{op.getType()},
                         producer->getAttrs());
    rewriter.replaceOp(op, rewriter.create(state)->getResults());
    return success();
  }
};

/// Whether `value`, less its scales and softcap, is a QK^T product: a 4-D
/// MatMul by keys transposed [0, 1, 3, 2].
bool isScoreProduct(Value value) {
  double scale = 1.0;
  std::optional<double> softcap;
  auto product = definedBy<onnx::MatMulOp>(peelScores(value, scale, softcap));
  if (!product || rankOf(product) != 4) return false;
  double keyScale = 1.0;
  std::optional<double> noSoftcap;
  auto keys = definedBy<onnx::TransposeOp>(peelScores(product.getB(), keyScale, noSoftcap));
  return keys && hasPerm(keys, {0, 1, 3, 2});
}

/// Softmax((scores + bias) + mask) -> Softmax(scores + (bias + mask)): every
/// term added to a softmax's scores (BLOOM's linear biases or GPT-Neo's
/// selection, then the padding mask) in one operand, the mask that proving
/// runs.
struct GatherScoreTerms : OpRewritePattern<onnx::SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::SoftmaxOp op, PatternRewriter &rewriter) const override {
    auto outer = definedBy<onnx::AddOp>(op.getInput());
    if (!outer) return rewriter.notifyMatchFailure(op, "the softmax does not take a sum");
    for (auto [nested, mask] : {std::pair(outer.getA(), outer.getB()),
                                std::pair(outer.getB(), outer.getA())}) {
      auto inner = definedBy<onnx::AddOp>(nested);
      if (!inner || !inner->hasOneUse() || isScoreProduct(mask)) continue;
      for (auto [scores, bias] : {std::pair(inner.getA(), inner.getB()),
                                  std::pair(inner.getB(), inner.getA())}) {
        if (!isScoreProduct(scores) || isScoreProduct(bias)) continue;
        auto biasType = dyn_cast<RankedTensorType>(bias.getType());
        auto maskType = dyn_cast<RankedTensorType>(mask.getType());
        if (!biasType || !maskType) continue;
        auto shape = onnx::broadcastShapes({biasType.getShape(), maskType.getShape()});
        if (failed(shape)) continue;
        Value terms = onnx::AddOp::create(rewriter, inner.getLoc(), biasType.clone(*shape), bias,
                                          mask);
        Value sum = onnx::AddOp::create(rewriter, outer.getLoc(), outer.getType(), scores, terms);
        rewriter.modifyOpInPlace(op, [&] { op.getInputMutable().assign(sum); });
        return success();
      }
    }
    return rewriter.notifyMatchFailure(op, "not (scores + bias) + mask");
  }
};

/// Transpose(Reshape(k -> [b, s, H, D]), [0, 2, 3, 1]) -> the heads' transpose
/// [0, 2, 1, 3] then K^T's [0, 1, 3, 2]: TorchScript joins the two when no
/// cache comes between them (GPT-2 and MPT exported without their cache).
struct SplitKeyHeadsTranspose : OpRewritePattern<onnx::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::TransposeOp op, PatternRewriter &rewriter) const override {
    if (!hasPerm(op, {0, 2, 3, 1})) return rewriter.notifyMatchFailure(op, "perm is not [0, 2, 3, 1]");
    if (!definedBy<onnx::ReshapeOp>(op.getData()) || rankOf(op.getData()) != 4)
      return rewriter.notifyMatchFailure(op, "input is not a 4-D Reshape of the heads");
    auto type = cast<RankedTensorType>(op.getData().getType());
    ArrayRef<int64_t> bshd = type.getShape();
    auto heads = RankedTensorType::get({bshd[0], bshd[2], bshd[1], bshd[3]}, type.getElementType());
    Value split = onnx::TransposeOp::create(rewriter, op.getLoc(), heads, op.getData(),
                                            rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}));
    rewriter.replaceOpWithNewOp<onnx::TransposeOp>(op, op.getType(), split,
                                                   rewriter.getDenseI64ArrayAttr({0, 1, 3, 2}));
    return success();
  }
};

/// Whether `value` is a QK^T product, or one plus a few terms (MPT's linear
/// biases); not followed further, so that a residual stream's chain of adds
/// is not walked from every Where.
bool isSummedScores(Value value, int terms = 2) {
  if (isScoreProduct(value)) return true;
  auto sum = definedBy<onnx::AddOp>(value);
  return sum && terms > 0 &&
         (isSummedScores(sum.getA(), terms - 1) || isSummedScores(sum.getB(), terms - 1));
}

/// Where(keep, scores, fill) or Where(hide, fill, scores), scores maybe plus
/// terms, with fill a constant that hides a key -> scores + Where(keep, 0,
/// fill) (or Where(hide, fill, 0)): the softmax is the same, a hidden key's
/// weight 0 either way, and the selection becomes an added mask.
struct SelectedScoresAsMask : OpRewritePattern<onnx::WhereOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::WhereOp op, PatternRewriter &rewriter) const override {
    bool kept = isSummedScores(op.getX());
    Value scores = kept ? op.getX() : op.getY(), fill = kept ? op.getY() : op.getX();
    if (!isSummedScores(scores) || isSummedScores(fill))
      return rewriter.notifyMatchFailure(op, "does not select the scores of a QK^T product");
    auto hiding = constantScalar(fill);
    if (!hiding || *hiding > kHiddenBelow)
      return rewriter.notifyMatchFailure(op, "the fill is not a constant that hides a key");
    auto condition = dyn_cast<RankedTensorType>(op.getCondition().getType());
    auto scoresType = dyn_cast<RankedTensorType>(scores.getType());
    if (!condition || !scoresType)
      return rewriter.notifyMatchFailure(op, "the condition or the scores are unranked");
    Location loc = op.getLoc();
    auto scalarType = RankedTensorType::get({}, scoresType.getElementType());
    Value zero = onnx::ConstantOp::create(
        rewriter, loc, scalarType,
        DenseElementsAttr::get(scalarType, rewriter.getFloatAttr(scalarType.getElementType(), 0.0)));
    auto maskType = RankedTensorType::get(condition.getShape(), scoresType.getElementType());
    Value mask = onnx::WhereOp::create(rewriter, loc, maskType, op.getCondition(),
                                       kept ? zero : fill, kept ? fill : zero);
    rewriter.replaceOpWithNewOp<onnx::AddOp>(op, op.getType(), scores, mask);
    return success();
  }
};

} // namespace

LogicalResult normalizeAttentionScores(func::FuncOp func) {
  RewritePatternSet patterns(func.getContext());
  patterns.add<UnflattenHeadBatch, SplitKeyHeadsTranspose, SelectedScoresAsMask, GatherScoreTerms>(
      func.getContext());
  // Nothing is folded yet: proving the masks reads the graph as exported.
  GreedyRewriteConfig config;
  config.enableFolding(false);
  return applyPatternsExplained(func, std::move(patterns), DEBUG_TYPE, config);
}

} // namespace llmc::raising
