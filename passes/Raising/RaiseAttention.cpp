//===- RaiseAttention.cpp - heads, KV cache, decomposed attention ---------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"


using namespace mlir;

namespace llmc::raising {
namespace {

/// Transpose(Reshape(x[b, s, H*D] -> [b, s, H, D]), [0, 2, 1, 3]) -> split_heads,
/// also with a norm over D between the two (Qwen3's q_norm and k_norm), which
/// becomes a per-head norm of x before the split.
struct RaiseSplitHeads : OpRewritePattern<onnx::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::TransposeOp op, PatternRewriter &rewriter) const override {
    if (!hasPerm(op, {0, 2, 1, 3})) return rewriter.notifyMatchFailure(op, "perm is not [0, 2, 1, 3]");
    auto headNorm = definedBy<llm::RmsNormOp>(op.getData());
    if (headNorm && !headNorm->hasOneUse())
      return rewriter.notifyMatchFailure(op, "the norm before the transpose has other users");
    auto reshape = definedBy<onnx::ReshapeOp>(headNorm ? headNorm.getInput() : op.getData());
    if (!reshape) return rewriter.notifyMatchFailure(op, "input is not a Reshape");
    Value x = reshape.getData();
    int64_t heads = dimOf(reshape, 2), head = dimOf(reshape, 3), hidden = dimOf(x, 2);
    if (rankOf(x) != 3 || rankOf(reshape) != 4 || ShapedType::isDynamic(heads) ||
        ShapedType::isDynamic(head))
      return rewriter.notifyMatchFailure(op, "not [b, s, H*D] -> [b, s, H, D] with static H, D");
    if (!ShapedType::isDynamic(hidden) && hidden != heads * head)
      return rewriter.notifyMatchFailure(op, "H*D differs from the hidden size");
    // The leading dims must be carried over: 0 (copy), or x's own dims.
    auto target = onnx::evaluateShapeTensor(reshape.getShape());
    if (!target || target->size() != 4)
      return rewriter.notifyMatchFailure(op, "reshape target unknown");
    for (int i = 0; i < 2; ++i) {
      int64_t dim = (*target)[i];
      // -1 is inferred: x's own dim when the other entries cancel the rest (OPT's
      // view(batch, -1, heads, head_dim)).
      bool inferredAsX = dim == -1 && sameDim(reshape, i, x, i);
      if (dim != 0 && !ShapedType::isDynamic(dim) && dim != dimOf(x, i) && !inferredAsX)
        return rewriter.notifyMatchFailure(op, "reshape changes batch or sequence dims");
    }
    if (headNorm) {
      if (dimOf(headNorm.getWeight(), 0) != head)
        return rewriter.notifyMatchFailure(op, "the norm's weight is not one head long");
      x = llm::RmsNormOp::create(rewriter, headNorm.getLoc(), x.getType(), x,
                                 headNorm.getWeight(), headNorm.getEpsilonAttr());
    }
    rewriter.replaceOpWithNewOp<llm::SplitHeadsOp>(op, op.getType(), x,
                                                   rewriter.getI64IntegerAttr(heads));
    return success();
  }
};

/// Reshape(Transpose(x[b, H, s, D], [0, 2, 1, 3]) -> [b, s, H*D]) -> merge_heads.
struct RaiseMergeHeads : OpRewritePattern<onnx::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ReshapeOp op, PatternRewriter &rewriter) const override {
    auto transpose = definedBy<onnx::TransposeOp>(op.getData());
    if (!hasPerm(transpose, {0, 2, 1, 3}))
      return rewriter.notifyMatchFailure(op, "input is not Transpose [0, 2, 1, 3]");
    Value x = transpose.getData();
    int64_t heads = dimOf(x, 1), head = dimOf(x, 3);
    if (rankOf(x) != 4 || rankOf(op) != 3 || ShapedType::isDynamic(heads) ||
        ShapedType::isDynamic(head) || dimOf(op, 2) != heads * head)
      return rewriter.notifyMatchFailure(op, "not [b, s, H, D] -> [b, s, H*D]");
    rewriter.replaceOpWithNewOp<llm::MergeHeadsOp>(op, op.getType(), x);
    return success();
  }
};

/// Reshape(Transpose(Reshape(x[b, h, m, n] -> [b*h, m, n]), [0, 2, 1]) ->
/// [b, h, n, m]) -> Transpose(x, [0, 1, 3, 2]): K^T as torch.onnx's dynamo
/// exporter writes it, through 3-D batches, for the attention pattern.
struct RaiseFlattenedTranspose : OpRewritePattern<onnx::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ReshapeOp op, PatternRewriter &rewriter) const override {
    auto transpose = definedBy<onnx::TransposeOp>(op.getData());
    auto inner = transpose ? definedBy<onnx::ReshapeOp>(transpose.getData()) : onnx::ReshapeOp();
    if (!inner || !hasPerm(transpose, {0, 2, 1}) || !transpose->hasOneUse())
      return rewriter.notifyMatchFailure(op, "not a reshape of a 3-D transpose of a reshape");
    Value x = inner.getData();
    if (rankOf(x) != 4 || rankOf(inner) != 3 || rankOf(op) != 4)
      return rewriter.notifyMatchFailure(op, "not [b, h, m, n] through [b*h, m, n]");
    if (!sameDim(inner, 1, x, 2) || !sameDim(inner, 2, x, 3) || !sameDim(op, 0, x, 0) ||
        !sameDim(op, 1, x, 1) || !sameDim(op, 2, x, 3) || !sameDim(op, 3, x, 2))
      return rewriter.notifyMatchFailure(op, "the dims are not x's with the last two swapped");
    rewriter.replaceOpWithNewOp<onnx::TransposeOp>(op, op.getType(), x,
                                                   rewriter.getDenseI64ArrayAttr({0, 1, 3, 2}));
    return success();
  }
};

/// Where(condition, 0, attention) whose condition ProveMasks proved false on
/// the rows of real tokens -> attention.
struct DropInactiveGuard : OpRewritePattern<onnx::WhereOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::WhereOp op, PatternRewriter &rewriter) const override {
    if (!op->hasAttr(kInactiveGuardAttr) || op.getY().getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "not a guard proven never to fire");
    rewriter.replaceOp(op, op.getY());
    return success();
  }
};

/// Concat(past, new, axis = seq) of 4-D [b, kv, len, d] caches -> kv_concat.
struct RaiseKvConcat : OpRewritePattern<onnx::ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ConcatOp op, PatternRewriter &rewriter) const override {
    if (op.getInputs().size() != 2 || rankOf(op) != 4 || (op.getAxis() != 2 && op.getAxis() != -2))
      return rewriter.notifyMatchFailure(op, "not a 2-way concat on axis 2 of 4-D tensors");
    Value past = op.getInputs()[0], current = op.getInputs()[1];
    if (isConstant(past) || isConstant(current))
      return rewriter.notifyMatchFailure(op, "concatenates a constant");
    rewriter.replaceOpWithNewOp<llm::KvConcatOp>(op, op.getType(), past, current);
    return success();
  }
};

/// Reshape(Expand(Unsqueeze(kv, 2), [b, KV, n, T, D]), [b, KV*n, T, D]) -> repeat_kv.
struct RaiseRepeatKv : OpRewritePattern<onnx::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ReshapeOp op, PatternRewriter &rewriter) const override {
    auto expand = definedBy<onnx::ExpandOp>(op.getData());
    auto unsqueeze = expand ? definedBy<onnx::UnsqueezeOp>(expand.getInput()) : onnx::UnsqueezeOp();
    if (!unsqueeze) return rewriter.notifyMatchFailure(op, "not Reshape(Expand(Unsqueeze(x)))");
    Value kv = unsqueeze.getData();
    if (rankOf(kv) != 4 || !isSingleAxis(unsqueeze.getAxes(), 2, 5))
      return rewriter.notifyMatchFailure(op, "Unsqueeze does not insert axis 2 of a 4-D tensor");
    int64_t kvHeads = dimOf(kv, 1), repeats = dimOf(expand, 2);
    if (rankOf(expand) != 5 || ShapedType::isDynamic(repeats) || ShapedType::isDynamic(kvHeads) ||
        dimOf(expand, 1) != kvHeads || dimOf(expand, 4) != dimOf(kv, 3))
      return rewriter.notifyMatchFailure(op, "Expand does not repeat whole KV heads");
    if (rankOf(op) != 4 || dimOf(op, 1) != kvHeads * repeats || dimOf(op, 3) != dimOf(kv, 3))
      return rewriter.notifyMatchFailure(op, "Reshape does not merge the repeats into the heads");
    rewriter.replaceOpWithNewOp<llm::RepeatKvOp>(op, op.getType(), kv,
                                                 rewriter.getI64IntegerAttr(repeats));
    return success();
  }
};

} // namespace

namespace {

/// Peels a Cast and a Mul/Div by a constant scalar; returns the scale factor.
Value peelScale(Value value, double &scale) {
  value = skipCasts(value);
  if (auto div = definedBy<onnx::DivOp>(value); div && constantScalar(div.getB())) {
    scale /= *constantScalar(div.getB());
    return div.getA();
  }
  if (auto mul = definedBy<onnx::MulOp>(value)) {
    if (constantScalar(mul.getB())) return scale *= *constantScalar(mul.getB()), mul.getA();
    if (constantScalar(mul.getA())) return scale *= *constantScalar(mul.getA()), mul.getB();
  }
  return value;
}

/// Whether `slice` drops the last column of a 4-D tensor: starts 0, ends -1
/// on the last axis, step 1 (the sink's weight, `probs[..., :-1]`).
bool dropsLastColumn(onnx::SliceOp slice) {
  auto taken = slice && rankOf(slice.getData()) == 4 ? lastAxisSlice(slice) : std::nullopt;
  return taken && taken->start == 0 && taken->end == -1 && taken->step == 1;
}

/// MatMul(Softmax(MatMul(q, Transpose(k)) * scale + mask), v) -> attention;
/// with sinks, MatMul(Slice(Softmax(Concat([scores, sinks])), [..., :-1]), v).
struct RaiseDecomposedAttention : OpRewritePattern<onnx::MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MatMulOp op, PatternRewriter &rewriter) const override {
    Value probs = skipCasts(skipNaNGuard(op.getA()));
    auto sinkColumnDropped = definedBy<onnx::SliceOp>(probs);
    if (sinkColumnDropped) probs = skipCasts(sinkColumnDropped.getData());
    auto softmax = definedBy<onnx::SoftmaxOp>(probs);
    if (!softmax) return rewriter.notifyMatchFailure(op, "A is not a Softmax");
    if (rankOf(op.getA()) != 4 || !isSingleAxisValue(softmax.getAxis(), 4))
      return rewriter.notifyMatchFailure(op, "softmax is not over the last axis of 4-D scores");
    AttentionScores parts = splitScores(softmax);
    std::vector<float> sinks;
    if (parts.sinks || sinkColumnDropped) {
      if (!parts.sinks || !dropsLastColumn(sinkColumnDropped))
        return rewriter.notifyMatchFailure(
            op, "attention sinks: the softmax must take a column of sink logits that is "
                "then sliced off, [..., :-1]");
      auto logits = readConstantFloats(parts.sinks);
      if (!logits) return rewriter.notifyMatchFailure(op, "the attention sinks are not f32");
      sinks = std::move(*logits);
    }
    double scale = parts.scale;
    auto qk = definedBy<onnx::MatMulOp>(parts.scores);
    if (!qk) return rewriter.notifyMatchFailure(op, "softmax input is not a QK^T product");
    Value q = peelScale(qk.getA(), scale);
    // Exports scale q and k by d^-1/4 each, k before or after its transpose.
    auto kT = definedBy<onnx::TransposeOp>(peelScale(qk.getB(), scale));
    if (!hasPerm(kT, {0, 1, 3, 2})) return rewriter.notifyMatchFailure(op, "K is not transposed [0, 1, 3, 2]");
    Value k = peelScale(kT.getData(), scale);
    Value v = op.getB();
    if (rankOf(q) != 4 || rankOf(k) != 4 || rankOf(v) != 4)
      return rewriter.notifyMatchFailure(op, "q, k, v are not 4-D");

    MaskInfo info;
    if (parts.mask) {
      std::string why;
      FailureOr<MaskInfo> proven = provenMask(softmax, why);
      if (failed(proven)) return rewriter.notifyMatchFailure(op, "attention mask: " + why);
      info = *proven;
    }
    // A softcap applies to the scaled scores: c * tanh(s * scale / c).
    rewriter.replaceOp(op, createAttention(rewriter, fusedLocOf({op, softmax, qk}), op.getType(),
                                           q, k, v, info, scale, parts.softcap, sinks));
    return success();
  }
};

} // namespace

/// Peels Gemma-2's softcap c * tanh(s / c) off `value` (scales outside it
/// are the caller's); returns s and sets `softcap` to c.
Value peelSoftcap(Value value, std::optional<double> &softcap) {
  double outer = 1.0, inner = 1.0;
  Value tanhOut = peelScale(value, outer);
  auto tanh = definedBy<onnx::TanhOp>(tanhOut);
  if (!tanh || tanhOut == value) return value;
  Value scores = peelScale(tanh.getX(), inner);
  // c * tanh(s * (1 / c)): the two scales are c and its inverse.
  if (scores == tanh.getX() || std::abs(outer * inner - 1.0) > 1e-6 || outer <= 0.0)
    return value;
  softcap = outer;
  return scores;
}

/// The scores under an optional softcap and a scale: softcap(s * scale) is
/// what llm.attention computes; a scale outside the softcap is not.
Value peelScores(Value value, double &scale, std::optional<double> &softcap) {
  return peelScale(peelSoftcap(value, softcap), scale);
}

/// The scores before a column of constant [1, heads, 1, 1] sink logits is
/// concatenated after them (through an Expand to the scores' rows), and
/// before the row max is subtracted (which a softmax does not see); sets
/// `sinks`. `value` itself when it is not that.
Value peelSinks(Value value, Value &sinks) {
  Value concatenated = value;
  if (auto shift = definedBy<onnx::SubOp>(value)) {
    auto max = definedBy<onnx::ReduceMaxOp>(shift.getB());
    if (max && max.getData() == shift.getA() && max.getKeepdims() &&
        isSingleAxis(max.getAxes(), -1, rankOf(shift.getA())))
      concatenated = shift.getA();
  }
  auto concat = definedBy<onnx::ConcatOp>(concatenated);
  if (!concat || concat.getInputs().size() != 2 || rankOf(concat) != 4 ||
      (concat.getAxis() != -1 && concat.getAxis() != 3))
    return value;
  Value column = concat.getInputs()[1];
  if (auto expand = definedBy<onnx::ExpandOp>(column)) column = expand.getInput();
  column = skipCasts(column);
  if (!isConstant(column) || rankOf(column) != 4 || dimOf(column, 0) != 1 ||
      dimOf(column, 2) != 1 || dimOf(column, 3) != 1)
    return value;
  sinks = column;
  return concat.getInputs()[0];
}

AttentionScores splitScores(onnx::SoftmaxOp softmax) {
  AttentionScores parts;
  parts.scores = peelScores(peelSinks(softmax.getInput(), parts.sinks), parts.scale,
                            parts.softcap);
  if (auto add = definedBy<onnx::AddOp>(parts.scores)) {
    // scores + mask: the mask side is the one that is not a QK product.
    double outerScale = parts.scale, lhsScale = parts.scale;
    std::optional<double> lhsSoftcap = parts.softcap;
    Value lhs = peelScores(add.getA(), lhsScale, lhsSoftcap);
    if (definedBy<onnx::MatMulOp>(lhs)) {
      parts.scores = lhs, parts.mask = add.getB(), parts.scale = lhsScale;
      parts.softcap = lhsSoftcap;
    } else {
      parts.scores = peelScores(add.getB(), parts.scale, parts.softcap);
      parts.mask = add.getA();
    }
    // k * (softcap(s) + mask) is no softcap of scaled scores: leave the scores
    // unsplit, so that nothing raises them.
    if (parts.softcap && outerScale != 1.0) parts.scores = add, parts.mask = Value();
  }
  return parts;
}

namespace {

/// Whether `value` is an f32 constant whose rows along its first axis longer
/// than 1 (heads) scale one another by one ratio in (0, 1): the per-head
/// slopes of linear attention biases (ALiBi's 2^(-8h/H)), alone (BLOOM's) or
/// times the positions (MPT's table).
bool holdsHeadSlopes(Value value) {
  auto values = readConstantFloats(value);
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!values || !type || !type.hasStaticShape()) return false;
  ArrayRef<int64_t> shape = type.getShape();
  auto axis = llvm::find_if(shape, [](int64_t dim) { return dim != 1; });
  if (axis == shape.end() || *axis < 2) return false;
  int64_t heads = *axis, inner = int64_t(values->size()) / heads;
  std::optional<double> ratio;
  for (int64_t h = 0; h + 1 < heads; ++h)
    for (int64_t j = 0; j < inner; ++j) {
      double a = (*values)[h * inner + j], b = (*values)[(h + 1) * inner + j];
      if (a == 0 && b == 0) continue;
      if (a == 0) return false;
      if (!ratio) ratio = b / a;
      else if (std::abs(b / a - *ratio) > 1e-4 * std::abs(*ratio)) return false;
    }
  return ratio && *ratio > 0 && *ratio < 1;
}

/// Whether `value` is Where(condition, scores, constant) or Where(condition,
/// constant, scores) with scores a QK^T product: the mask applied by
/// selecting the scores, not added to them (left so only when the constant
/// does not hide a key; NormalizeScores.cpp rewrites the others).
bool selectsScores(Value value) {
  auto where = definedBy<onnx::WhereOp>(value);
  if (!where) return false;
  double scale = 1.0;
  std::optional<double> softcap;
  for (auto [kept, fill] : {std::pair(where.getX(), where.getY()),
                            std::pair(where.getY(), where.getX())})
    if (constantScalar(fill) && definedBy<onnx::MatMulOp>(peelScores(kept, scale, softcap)))
      return true;
  return false;
}

} // namespace

std::optional<std::string> unsupportedScoresFeature(Operation *op) {
  auto softmax = dyn_cast<onnx::SoftmaxOp>(op);
  if (!softmax) return std::nullopt;
  // What is added to or selected over the scores: the softmax input's cone,
  // short of the q and k products (whose rotary frequencies are geometric too).
  bool selected = false;
  llvm::SetVector<Value> cone;
  cone.insert(softmax.getInput());
  for (size_t i = 0; i < cone.size() && i < 512; ++i) {
    Value value = cone[i];
    if (holdsHeadSlopes(value))
      return std::string("attention with linear biases per head (ALiBi) that are not proven "
                         "to be slope * the key's position");
    selected = selected || selectsScores(value);
    Operation *producer = value.getDefiningOp();
    if (producer && !isa<onnx::MatMulOp>(producer))
      for (Value operand : producer->getOperands()) cone.insert(operand);
  }
  if (selected)
    return std::string("attention masked by selecting its scores against a constant that "
                       "does not hide a key (Where(mask, scores, constant))");
  return std::nullopt;
}

/// Reshape(split_heads(x, 1 head)) -> Reshape(x): one head [b, 1, s, n] holds
/// x's elements in x's order, so the view reads x itself (GPT-BigCode's query,
/// unsqueezed to one head and viewed as its heads). Not with a 0 entry, which
/// copies the input dim at its position.
struct ReshapeOfOneHead : OpRewritePattern<onnx::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ReshapeOp op, PatternRewriter &rewriter) const override {
    auto oneHead = definedBy<llm::SplitHeadsOp>(op.getData());
    if (!oneHead || oneHead.getNumHeads() != 1)
      return rewriter.notifyMatchFailure(op, "does not view one head");
    auto target = onnx::evaluateShapeTensor(op.getShape());
    if (!target || (!op.getAllowzero() && llvm::is_contained(*target, 0)))
      return rewriter.notifyMatchFailure(op, "the target may copy an input dim (0)");
    rewriter.modifyOpInPlace(op, [&] { op.getDataMutable().assign(oneHead.getInput()); });
    return success();
  }
};

void populateAttentionGluePatterns(RewritePatternSet &patterns) {
  // Heads viewed again once glue has split the projections they come from.
  patterns.add<RaiseSplitHeads, ReshapeOfOneHead>(patterns.getContext());
}

void populateAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseSplitHeads, RaiseMergeHeads, RaiseKvConcat, RaiseRepeatKv,
               RaiseFlattenedTranspose, RaiseDecomposedAttention, DropInactiveGuard>(
      patterns.getContext());
}

} // namespace llmc::raising
