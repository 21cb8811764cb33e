//===- RaiseLatentAttention.cpp - multi-head latent attention's glue ------===//
//
// DeepSeek-V2 and V3 (multi-head latent attention) give each head a query
// and key of two parts: features without rotation, computed from the latent
// projections, and a few rotary features, the key's one for every head. As
// transformers writes it (rope_interleave) and optimum exports it:
//
//   q      = split_heads(q_b_proj(...))  split into [q_nope, q_pe]
//   k_pe   = Reshape(kv_a_proj(x)[..., rank:], [b, 1, s, rope_dim])
//   q_pe   = rope(Reshape(Transpose(Reshape(q_pe, [..., d / 2, 2]), swap)))
//   k_pe   = the same of k_pe
//   query  = Concat(q_nope, q_pe, -1)
//   key    = Concat(k_nope, Expand(k_pe, [b, heads, s, rope_dim]), -1)
//
// The de-interleaving view (features 0, 2, 4, ... then 1, 3, 5, ...) is a
// permutation of each head's columns, folded into the projection's constant
// weight once at compile time. The concatenations become llm.concat_heads,
// whose rhs may be the one shared head.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include <numeric>

using namespace mlir;

namespace llmc::raising {
namespace {

/// A projection's features [first, first + width) that a view reads as heads:
/// a linear's result, or one part of llm.split of it.
struct ProjectionColumns {
  llm::LinearOp linear;
  int64_t first = 0, width = 0;
};

/// The projection columns `value` holds, used only by `reader` (and shapes).
std::optional<ProjectionColumns> projectionColumns(Value value, Operation *reader) {
  if (!onlyReadBy(value, reader) || rankOf(value) != 3) return std::nullopt;
  int64_t width = dimOf(value, 2);
  if (ShapedType::isDynamic(width)) return std::nullopt;
  if (auto linear = definedBy<llm::LinearOp>(value)) return ProjectionColumns{linear, 0, width};
  auto split = definedBy<llm::SplitOp>(value);
  auto linear = split ? definedBy<llm::LinearOp>(split.getInput()) : llm::LinearOp();
  if (!linear || !onlyReadBy(linear, split)) return std::nullopt;
  unsigned part = cast<OpResult>(value).getResultNumber();
  ArrayRef<int64_t> sizes = split.getSizes();
  int64_t first = 0;
  for (unsigned i = 0; i < part; ++i) first += sizes[i];
  return ProjectionColumns{linear, first, width};
}

/// Reshape(Transpose(Reshape(x, [..., a, c]), swap the last two), [..., a * c])
/// of heads x [b, heads, s, d] -> x with each head's features reordered at
/// compile time in the projection that computes them: feature j1 * a + j0
/// of the result is feature j0 * c + j1 of x (a = d / 2, c = 2: DeepSeek's
/// rope_interleave). x is split_heads of the projection, or its [b, s, d]
/// viewed as one head.
struct FoldHeadFeaturePermutation : OpRewritePattern<onnx::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ReshapeOp op, PatternRewriter &rewriter) const override {
    auto transpose = definedBy<onnx::TransposeOp>(op.getData());
    auto view = transpose ? definedBy<onnx::ReshapeOp>(transpose.getData()) : onnx::ReshapeOp();
    if (!view || rankOf(view) != 5 || rankOf(op) != 4 || !hasPerm(transpose, {0, 1, 2, 4, 3}))
      return rewriter.notifyMatchFailure(op, "not a view of heads' features as [a, c] "
                                             "transposed and flattened back");
    int64_t a = dimOf(view, 3), c = dimOf(view, 4), heads = dimOf(op, 1), d = dimOf(op, 3);
    if (ShapedType::isDynamic(a) || ShapedType::isDynamic(c) || ShapedType::isDynamic(heads) ||
        a * c != d || dimOf(view, 1) != heads || !transpose->hasOneUse() ||
        !onlyReadBy(view, transpose))
      return rewriter.notifyMatchFailure(op, "the views do not keep the heads and head_dim");
    // The heads: split_heads(p), Reshape(p, [b, 1, s, d]), or p itself as one head.
    Value heads4 = view.getData(), columns = heads4;
    Operation *reader = view;
    if (auto split = definedBy<llm::SplitHeadsOp>(heads4)) {
      if (!onlyReadBy(split, view))
        return rewriter.notifyMatchFailure(op, "the heads have other users");
      columns = split.getInput();
      reader = split;
    } else if (auto oneHead = definedBy<onnx::ReshapeOp>(heads4);
               oneHead && rankOf(oneHead) == 4 && heads == 1) {
      if (!onlyReadBy(oneHead, view))
        return rewriter.notifyMatchFailure(op, "the head has other users");
      columns = oneHead.getData();
      reader = oneHead;
    } else if (rankOf(heads4) != 3 || heads != 1) {
      return rewriter.notifyMatchFailure(op, "does not view a projection's heads");
    }
    if (rankOf(columns) != 3 || dimOf(columns, 2) != heads * d || !sameDim(op, 0, columns, 0) ||
        !sameDim(op, 2, columns, 1))
      return rewriter.notifyMatchFailure(op, "the heads are not [b, s, heads * d] columns");
    auto projection = projectionColumns(columns, reader);
    if (!projection)
      return rewriter.notifyMatchFailure(op, "the heads are not a projection's columns read "
                                             "only here");
    // order[i]: the old feature of the projection that becomes feature i.
    int64_t features = dimOf(projection->linear, 2);
    SmallVector<int64_t> order(features);
    std::iota(order.begin(), order.end(), 0);
    for (int64_t head = 0; head < heads; ++head)
      for (int64_t j1 = 0; j1 < c; ++j1)
        for (int64_t j0 = 0; j0 < a; ++j0) {
          int64_t base = projection->first + head * d;
          order[base + j1 * a + j0] = base + j0 * c + j1;
        }
    llm::LinearOp permuted = reorderColumns(rewriter, projection->linear, order);
    if (!permuted)
      return rewriter.notifyMatchFailure(op, "the projection's weight or bias is not an f32 "
                                             "constant");
    if (columns == projection->linear.getResult()) columns = permuted;
    rewriter.replaceOp(projection->linear, permuted);
    rewriter.setInsertionPoint(op);
    rewriter.replaceOpWithNewOp<llm::SplitHeadsOp>(op, op.getType(), columns,
                                                   rewriter.getI64IntegerAttr(heads));
    return success();
  }
};

/// Concat(lhs, rhs, -1) of heads [b, heads, s, d1] and [b, heads, s, d2],
/// the rhs possibly Expand of one head [b, 1, s, d2] to every head ->
/// llm.concat_heads. Both parts must be raised already.
struct RaiseHeadsConcat : OpRewritePattern<onnx::ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ConcatOp op, PatternRewriter &rewriter) const override {
    if (op.getInputs().size() != 2 || rankOf(op) != 4 || !isSingleAxisValue(op.getAxis(), 4))
      return rewriter.notifyMatchFailure(op, "not a 2-way concat on the last axis of heads");
    Value lhs = op.getInputs()[0], rhs = op.getInputs()[1];
    int64_t heads = dimOf(op, 1);
    // The Expand only copies the one head: its input has the lhs's batch and
    // sequence dims, which the concat's result has too.
    if (auto expand = definedBy<onnx::ExpandOp>(rhs);
        expand && rankOf(expand.getInput()) == 4 && dimOf(expand.getInput(), 1) == 1 &&
        dimOf(expand, 1) == heads && dimOf(expand, 3) == dimOf(expand.getInput(), 3) &&
        sameDim(expand.getInput(), 0, lhs, 0) && sameDim(expand.getInput(), 2, lhs, 2))
      rhs = expand.getInput();
    auto raised = [](Value value) {
      Operation *def = value.getDefiningOp();
      return def && isa<llm::LlmDialect>(def->getDialect());
    };
    if (ShapedType::isDynamic(heads) || dimOf(lhs, 1) != heads ||
        (dimOf(rhs, 1) != heads && dimOf(rhs, 1) != 1) || !raised(lhs) || !raised(rhs) ||
        !sameDim(rhs, 0, lhs, 0) || !sameDim(rhs, 2, lhs, 2))
      return rewriter.notifyMatchFailure(op, "the parts are not raised heads of one batch and "
                                             "sequence, the rhs of the lhs's heads or one");
    rewriter.replaceOpWithNewOp<llm::ConcatHeadsOp>(op, op.getType(), lhs, rhs);
    return success();
  }
};

} // namespace

void populateLatentAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<FoldHeadFeaturePermutation, RaiseHeadsConcat>(patterns.getContext());
}

} // namespace llmc::raising
