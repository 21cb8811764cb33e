//===- RaiseInterleavedRope.cpp - rotary embeddings over interleaved pairs -===//
//
// The rotation over interleaved pairs written out: each pair (x[2i], x[2i+1])
// turned by angle i, as x * cos + rotate_every_two(x) * sin, with cos and sin
// repeated pairwise (RopeTables.cpp says from what). GPT-J and CodeGen rotate
// the first rotary_dim features of each head on [batch, seq, heads, head_dim],
// before the heads' transpose, so that pattern is rooted at the transpose and
// rotates the transposed heads; Cohere, GLM and Helium rotate [batch, heads,
// seq, head_dim]. Both give llm.rope or llm.rope_cached, interleaved.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"
#include "passes/Raising/RopeTables.h"

#include "dialects/onnx/ShapeHelpers.h"

using namespace mlir;

namespace llmc::raising {
namespace {

/// Which element of each pair a Slice of x's last axis takes: 0 for
/// x[..., ::2], 1 for x[..., 1::2].
std::optional<int> pairElement(Value value, Value x) {
  auto slice = definedBy<onnx::SliceOp>(value);
  auto taken = lastAxisSlice(slice);
  if (!taken || slice.getData() != x || taken->step != 2 || taken->end < dimOf(x, -1) ||
      (taken->start != 0 && taken->start != 1))
    return std::nullopt;
  return int(taken->start);
}

/// Whether `rotated` is rotate_every_two(x): each pair (a, b) turned to
/// (-b, a), written stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2).
bool isRotateEveryTwo(Value rotated, Value x) {
  int64_t rank = rankOf(x), dim = dimOf(x, -1);
  auto flatten = definedBy<onnx::ReshapeOp>(rotated);
  if (!flatten || rank < 1 || ShapedType::isDynamic(dim) || dim % 2 ||
      rankOf(flatten) != rank || dimOf(flatten, -1) != dim)
    return false;
  for (int64_t i = 0; i + 1 < rank; ++i)
    if (!sameDim(flatten, i, x, i)) return false;
  auto stack = definedBy<onnx::ConcatOp>(flatten.getData());
  if (!stack || stack.getInputs().size() != 2 || rankOf(stack) != rank + 1 ||
      !isSingleAxisValue(stack.getAxis(), rank + 1))
    return false;
  auto stacked = [&](Value value) {
    auto unsqueeze = definedBy<onnx::UnsqueezeOp>(value);
    return unsqueeze && isSingleAxis(unsqueeze.getAxes(), rank, rank + 1) ? unsqueeze.getData()
                                                                          : Value();
  };
  auto neg = definedBy<onnx::NegOp>(stacked(stack.getInputs()[0]));
  return neg && pairElement(neg.getX(), x) == 1 &&
         pairElement(stacked(stack.getInputs()[1]), x) == 0;
}

/// Transpose(v, [0, 2, 1, 3]) of v = x * cos + rotate_every_two(x) * sin on
/// [batch, seq, heads, head_dim], or of Concat(that, y[..., r:]) with
/// x = y[..., :r] (a partial rotary) -> rope_cached (interleaved) of the
/// transposed x or y.
struct RaiseTokenMajorInterleavedRope : OpRewritePattern<onnx::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::TransposeOp op, PatternRewriter &rewriter) const override {
    if (!hasPerm(op, {0, 2, 1, 3}))
      return rewriter.notifyMatchFailure(op, "not the heads' transpose [0, 2, 1, 3]");
    Value rotatedPart = op.getData(), passed;
    auto concat = definedBy<onnx::ConcatOp>(rotatedPart);
    if (concat && concat.getInputs().size() == 2 && isSingleAxisValue(concat.getAxis(), 4))
      rotatedPart = concat.getInputs()[0], passed = concat.getInputs()[1];
    auto add = definedBy<onnx::AddOp>(rotatedPart);
    if (!add || !add->hasOneUse())
      return rewriter.notifyMatchFailure(op, "the rotated part is not a sum used only here");
    std::optional<RotationFactors> factors = rotationFactors(add, isRotateEveryTwo);
    if (!factors)
      return rewriter.notifyMatchFailure(op, "no x * cos + rotate_every_two(x) * sin");
    FailureOr<RopeTables> tables =
        analysePairwiseTables(factors->cos, factors->sin, rewriter, op.getLoc());
    if (failed(tables) || tables->headsAxis != 2)
      return rewriter.notifyMatchFailure(
          op, "cos/sin are not columns of a constant table's rows gathered at positions, "
              "repeated pairwise and broadcast over the heads of [batch, seq, heads, head_dim]");
    Value x = factors->x;
    if (passed) {
      x = partialRotaryInput(factors->x, passed);
      if (!x) return rewriter.notifyMatchFailure(op, "the parts are not y[..., :r] and y[..., r:]");
    }
    if (dimOf(x, -1) != dimOf(op, -1))
      return rewriter.notifyMatchFailure(op, "the rotated value is not the transposed one");
    Location loc = fusedLocOf({op, add, factors->direct, factors->rotatedProduct});
    Value heads = onnx::TransposeOp::create(rewriter, loc, op.getType(), x, op.getPermAttr());
    rewriter.replaceOp(op, createRope(rewriter, loc, op.getType(), heads, *tables,
                                      /*interleaved=*/true));
    return success();
  }
};

/// x * cos + rotate_every_two(x) * sin on [batch, heads, seq, head_dim]
/// (Cohere, GLM, Helium) -> llm.rope (interleaved).
struct RaiseHeadMajorInterleavedRope : OpRewritePattern<onnx::AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::AddOp op, PatternRewriter &rewriter) const override {
    std::optional<RotationFactors> factors = rotationFactors(op, [](Value rotated, Value x) {
      return rankOf(x) == 4 && isRotateEveryTwo(rotated, x);
    });
    if (!factors) return rewriter.notifyMatchFailure(op, "no x * cos + rotate_every_two(x) * sin");
    FailureOr<RopeTables> tables =
        analysePairwiseTables(factors->cos, factors->sin, rewriter, op.getLoc());
    if (failed(tables) || tables->headsAxis != 1)
      return rewriter.notifyMatchFailure(
          op, "cos/sin are not repeated pairwise from tables, or the angles, computed from "
              "inv_freq and positions or read at them, broadcast over the heads at axis 1");
    if (factors->x.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "the sum is not shaped as x");
    Location loc = fusedLocOf({op, factors->direct, factors->rotatedProduct});
    rewriter.replaceOp(op, createRope(rewriter, loc, op.getType(), factors->x, *tables,
                                      /*interleaved=*/true));
    return success();
  }
};

} // namespace

void populateInterleavedRopePatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseTokenMajorInterleavedRope, RaiseHeadMajorInterleavedRope>(
      patterns.getContext());
}

} // namespace llmc::raising
