//===- RaiseRope.cpp - rotary embeddings ----------------------------------===//
//
// Hugging Face's rope, x * cos + rotate_half(x) * sin on [batch, heads, seq,
// head_dim], with cos/sin either computed in the graph from an inv_freq
// constant and position_ids, or gathered from full-width caches; the same
// rotation written on x's halves with half-width cos/sin (gpt-oss); and the
// RotaryEmbedding ops of opset 23 and com.microsoft.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"
#include "passes/Raising/RopeTables.h"

#include "dialects/onnx/ShapeHelpers.h"

using namespace mlir;

namespace llmc::raising {
namespace {

/// The half of `x` a constant Slice along the last axis takes: 0 for
/// x[..., :half], 1 for x[..., half:], nullopt otherwise.
std::optional<int> sliceHalf(onnx::SliceOp slice, Value x, int64_t half) {
  if (!slice || slice.getData() != x) return std::nullopt;
  auto columns = lastAxisColumns(slice);
  if (columns == std::pair<int64_t, int64_t>(0, half)) return 0;
  if (columns == std::pair<int64_t, int64_t>(half, dimOf(x, -1))) return 1;
  return std::nullopt;
}

/// Whether `rotated` is rotate_half(x) = Concat(-x[..., half:], x[..., :half], -1).
bool isRotateHalf(Value rotated, Value x) {
  auto concat = definedBy<onnx::ConcatOp>(rotated);
  int64_t dim = dimOf(x, -1);
  if (!concat || concat.getInputs().size() != 2 || ShapedType::isDynamic(dim) || dim % 2 ||
      !isSingleAxisValue(concat.getAxis(), rankOf(x)))
    return false;
  auto neg = definedBy<onnx::NegOp>(concat.getInputs()[0]);
  if (!neg) return false;
  return sliceHalf(definedBy<onnx::SliceOp>(neg.getX()), x, dim / 2) == 1 &&
         sliceHalf(definedBy<onnx::SliceOp>(concat.getInputs()[1]), x, dim / 2) == 0;
}

} // namespace

bool isSingleAxisValue(int64_t axis, int64_t rank) { return axis == -1 || axis == rank - 1; }

namespace {

/// x * cos + rotate_half(x) * sin on [batch, heads, seq, head_dim].
struct RaiseDecomposedRope : OpRewritePattern<onnx::AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::AddOp root, PatternRewriter &rewriter) const override {
    std::optional<RotationFactors> factors = rotationFactors(root, [](Value rotated, Value x) {
      return rankOf(x) == 4 && isRotateHalf(rotated, x);
    });
    if (!factors) return rewriter.notifyMatchFailure(root, "no x * cos + rotate_half(x) * sin");
    FailureOr<RopeTables> tables =
        analyseRotateHalfTables(factors->cos, factors->sin, rewriter, root.getLoc());
    if (failed(tables))
      return rewriter.notifyMatchFailure(root, "cos/sin are not computed from inv_freq "
                                               "and positions, nor gathered from caches");
    Location loc = fusedLocOf({root, factors->direct, factors->rotatedProduct});
    rewriter.replaceOp(root, createRope(rewriter, loc, root.getType(), factors->x, *tables));
    return success();
  }
};

/// The half of a 4-D value with an even last dim that `factor` is: a Slice
/// of it, or a result of Split(x, 2 equal parts, last axis) (torch.chunk as
/// the dynamo exporter writes it); that value and which half (0: [...,
/// :d/2], 1: [..., d/2:]).
std::optional<std::pair<Value, int>> halfOf(Value factor) {
  Value x;
  std::optional<int> half;
  if (auto slice = definedBy<onnx::SliceOp>(factor)) {
    x = slice.getData();
    int64_t dim = dimOf(x, -1);
    if (!ShapedType::isDynamic(dim) && dim % 2 == 0) half = sliceHalf(slice, x, dim / 2);
  } else if (std::optional<int64_t> which = lastAxisHalf(factor, x)) {
    half = static_cast<int>(*which);
  }
  if (!half || rankOf(x) != 4) return std::nullopt;
  return std::pair(x, *half);
}

/// The factor of `mul` that is half `half` (0: [..., :d/2], 1: [..., d/2:])
/// of a 4-D value, that value, and the other factor.
struct HalfFactor {
  Value x, other;
};
std::optional<HalfFactor> halfFactor(onnx::MulOp mul, int half) {
  if (!mul) return std::nullopt;
  for (auto [factor, other] : {std::pair(mul.getA(), mul.getB()),
                               std::pair(mul.getB(), mul.getA())}) {
    std::optional<std::pair<Value, int>> found = halfOf(factor);
    if (found && found->second == half) return HalfFactor{found->first, other};
  }
  return std::nullopt;
}

/// Concat(x1 * cos - x2 * sin, x2 * cos + x1 * sin, -1), x1 and x2 the halves
/// of x and cos/sin half as wide (gpt-oss's rotary): rope(x).
struct RaiseHalvesRope : OpRewritePattern<onnx::ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ConcatOp op, PatternRewriter &rewriter) const override {
    if (op.getInputs().size() != 2 || rankOf(op) != 4 || !isSingleAxisValue(op.getAxis(), 4))
      return rewriter.notifyMatchFailure(op, "not a 2-way concat on the last axis of heads");
    auto first = definedBy<onnx::SubOp>(op.getInputs()[0]);
    auto second = definedBy<onnx::AddOp>(op.getInputs()[1]);
    if (!first || !second)
      return rewriter.notifyMatchFailure(op, "not a difference then a sum of products");
    auto firstCos = halfFactor(definedBy<onnx::MulOp>(first.getA()), 0);
    auto secondSin = halfFactor(definedBy<onnx::MulOp>(first.getB()), 1);
    auto secondCos = halfFactor(definedBy<onnx::MulOp>(second.getA()), 1);
    auto firstSin = halfFactor(definedBy<onnx::MulOp>(second.getB()), 0);
    if (!secondCos || !firstSin) {
      secondCos = halfFactor(definedBy<onnx::MulOp>(second.getB()), 1);
      firstSin = halfFactor(definedBy<onnx::MulOp>(second.getA()), 0);
    }
    if (!firstCos || !secondSin || !secondCos || !firstSin)
      return rewriter.notifyMatchFailure(op, "the products are not of x's halves");
    Value x = firstCos->x;
    if (secondSin->x != x || secondCos->x != x || firstSin->x != x ||
        firstCos->other != secondCos->other || secondSin->other != firstSin->other ||
        x.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "not x1 * cos - x2 * sin, x2 * cos + x1 * sin");
    FailureOr<RopeTables> tables = analyseRotateHalfTables(
        firstCos->other, firstSin->other, rewriter, op.getLoc(), /*halfWidth=*/true);
    if (failed(tables))
      return rewriter.notifyMatchFailure(op, "cos/sin are not computed from inv_freq and "
                                             "positions, nor gathered from caches");
    rewriter.replaceOp(op, createRope(rewriter, fusedLocOf({op, first, second}), op.getType(),
                                      x, *tables));
    return success();
  }
};

/// Applies rope_cached to a 4-D [batch, heads, seq, d] input, or to a 3-D
/// [batch, seq, heads*d] one through split_heads/merge_heads.
Value createCachedRope(PatternRewriter &rewriter, Location loc, Value input, Type resultType,
                       Value positions, Value cosCache, Value sinCache, int64_t numHeads,
                       bool interleaved) {
  auto build = [&](Value x, Type type) {
    auto rope = llm::RopeCachedOp::create(rewriter, loc, type, x, positions, cosCache, sinCache);
    if (interleaved) rope.setInterleaved(true);
    return rope.getResult();
  };
  if (rankOf(input) == 4) return build(input, resultType);
  int64_t hidden = dimOf(input, 2);
  auto inputType = cast<RankedTensorType>(input.getType());
  auto headsType = RankedTensorType::get(
      {inputType.getDimSize(0), numHeads, inputType.getDimSize(1), hidden / numHeads},
      inputType.getElementType());
  Value heads = llm::SplitHeadsOp::create(rewriter, loc, headsType, input,
                                          rewriter.getI64IntegerAttr(numHeads));
  Value rotated = build(heads, headsType);
  return llm::MergeHeadsOp::create(rewriter, loc, resultType, rotated);
}

/// Checks shared by both RotaryEmbedding ops; the head count for 3-D inputs.
FailureOr<int64_t> ropeHeads(Value input, Value cosCache, int64_t numHeads,
                             int64_t rotaryDim, PatternRewriter &rewriter, Operation *op) {
  int64_t rank = rankOf(input);
  if (rank != 3 && rank != 4)
    return rewriter.notifyMatchFailure(op, "input is neither 3-D nor 4-D");
  if (rankOf(cosCache) != 2)
    return rewriter.notifyMatchFailure(op, "cos/sin caches are not 2-D [max_pos, rotary_dim/2]");
  if (rank == 3) {
    int64_t hidden = dimOf(input, 2);
    if (numHeads <= 0) {
      // Without num_heads, full rotation tells the head size: twice the cache width.
      int64_t head = 2 * dimOf(cosCache, 1);
      if (ShapedType::isDynamic(hidden) || rotaryDim != 0 || hidden % head)
        return rewriter.notifyMatchFailure(op, "3-D input without a known head count");
      numHeads = hidden / head;
    }
    if (ShapedType::isDynamic(hidden) || hidden % numHeads)
      return rewriter.notifyMatchFailure(op, "hidden size is not a multiple of num_heads");
  }
  return numHeads;
}

struct RaiseRotaryEmbedding : OpRewritePattern<onnx::RotaryEmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::RotaryEmbeddingOp op, PatternRewriter &rewriter) const override {
    if (isNone(op.getPositionIds())) {
      // Pre-gathered [b, s, d/2] tables: Cos and Sin of the angles, whose
      // frequencies and positions give llm.rope (torch.onnx's opset-23 export).
      auto cos = definedBy<onnx::CosOp>(op.getCosCache());
      auto sin = definedBy<onnx::SinOp>(op.getSinCache());
      if (!cos || !sin || cos.getX() != sin.getX() || rankOf(op.getX()) != 4 ||
          op.getRotaryEmbeddingDim() != 0)
        return rewriter.notifyMatchFailure(op, "cos/sin are pre-gathered, not Cos/Sin of the "
                                               "angles of a 4-D input's whole head");
      FailureOr<RopeTables> tables = analyseAngles(cos.getX(), rewriter, op.getLoc());
      if (failed(tables))
        return rewriter.notifyMatchFailure(op, "the angles are not positions x inv_freq");
      UnitAttr interleaved = op.getInterleaved() ? rewriter.getUnitAttr() : UnitAttr();
      rewriter.replaceOp(op, llm::RopeOp::create(rewriter, op.getLoc(), op.getType(), op.getX(),
                                                 tables->positions, tables->invFreq,
                                                 interleaved, /*scale=*/FloatAttr()));
      return success();
    }
    FailureOr<int64_t> heads = ropeHeads(op.getX(), op.getCosCache(), op.getNumHeads(),
                                         op.getRotaryEmbeddingDim(), rewriter, op);
    if (failed(heads)) return failure();
    rewriter.replaceOp(op, createCachedRope(rewriter, op.getLoc(), op.getX(), op.getType(),
                                            op.getPositionIds(), op.getCosCache(),
                                            op.getSinCache(), *heads, op.getInterleaved()));
    return success();
  }
};

struct RaiseMsRotaryEmbedding : OpRewritePattern<onnx::MsRotaryEmbeddingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MsRotaryEmbeddingOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getScale().convertToFloat() != 1.0f || op.getIsPackedBatching())
      return rewriter.notifyMatchFailure(op, "scaled or packed-batching rotary embedding");
    FailureOr<int64_t> heads = ropeHeads(op.getInput(), op.getCosCache(), op.getNumHeads(),
                                         op.getRotaryEmbeddingDim(), rewriter, op);
    if (failed(heads)) return failure();
    rewriter.replaceOp(op, createCachedRope(rewriter, op.getLoc(), op.getInput(), op.getType(),
                                            op.getPositionIds(), op.getCosCache(),
                                            op.getSinCache(), *heads, op.getInterleaved()));
    return success();
  }
};

/// Concat(rope(x[..., :r]), x[..., r:], -1) -> rope(x): a partial rotary
/// (StableLM, Phi-2, GPT-NeoX), whose frequencies or tables say r.
struct RaisePartialRotary : OpRewritePattern<onnx::ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ConcatOp op, PatternRewriter &rewriter) const override {
    if (op.getInputs().size() != 2 || rankOf(op) != 4 || !isSingleAxisValue(op.getAxis(), 4))
      return rewriter.notifyMatchFailure(op, "not a 2-way concat on the last axis of heads");
    Operation *rope = op.getInputs()[0].getDefiningOp();
    if (!isa_and_present<llm::RopeOp, llm::RopeCachedOp>(rope) || !rope->hasOneUse())
      return rewriter.notifyMatchFailure(op, "its first part is not a rope used only here");
    Value x = partialRotaryInput(rope->getOperand(0), op.getInputs()[1]);
    if (!x) return rewriter.notifyMatchFailure(op, "the parts are not x[..., :r] and x[..., r:]");
    if (x.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "the concat is not shaped as x");
    Operation *whole = rewriter.clone(*rope);
    whole->setOperand(0, x);
    whole->getResult(0).setType(op.getType());
    rewriter.replaceOp(op, whole->getResults());
    return success();
  }
};

} // namespace

std::optional<RotationFactors>
rotationFactors(onnx::AddOp add, llvm::function_ref<bool(Value, Value)> rotates) {
  auto lhs = definedBy<onnx::MulOp>(add.getA());
  auto rhs = definedBy<onnx::MulOp>(add.getB());
  if (!lhs || !rhs) return std::nullopt;
  for (auto [direct, rotatedProduct] : {std::pair(lhs, rhs), std::pair(rhs, lhs)})
    for (auto [x, cos] : {std::pair(direct.getA(), direct.getB()),
                          std::pair(direct.getB(), direct.getA())})
      for (auto [rotated, sin] : {std::pair(rotatedProduct.getA(), rotatedProduct.getB()),
                                  std::pair(rotatedProduct.getB(), rotatedProduct.getA())})
        if (rotates(rotated, x))
          return RotationFactors{x, cos, rotated, sin, direct, rotatedProduct};
  return std::nullopt;
}

Value partialRotaryInput(Value rotated, Value passed) {
  auto rotatedSlice = definedBy<onnx::SliceOp>(rotated);
  auto passedSlice = definedBy<onnx::SliceOp>(passed);
  if (!rotatedSlice || !passedSlice || rotatedSlice.getData() != passedSlice.getData())
    return nullptr;
  Value y = rotatedSlice.getData();
  int64_t rotary = dimOf(rotated, -1);
  if (lastAxisColumns(rotatedSlice) != std::pair<int64_t, int64_t>(0, rotary) ||
      lastAxisColumns(passedSlice) != std::pair<int64_t, int64_t>(rotary, dimOf(y, -1)))
    return nullptr;
  return y;
}

std::optional<std::string> unsupportedRopeFeature(Operation *op) {
  // rotate_every_two negates the odd elements of each pair: x[..., 1::2].
  auto neg = dyn_cast<onnx::NegOp>(op);
  auto taken = neg ? lastAxisSlice(definedBy<onnx::SliceOp>(neg.getX())) : std::nullopt;
  if (!taken || taken->step != 2) return std::nullopt;
  return std::string("a rotary embedding over interleaved pairs written out (rotate_every_two) "
                     "whose cos and sin are not repeated pairwise from a table read at the "
                     "positions, nor from angles of the positions times inv_freq");
}

Value createRopeForHeads(PatternRewriter &rewriter, Location loc, Value heads, Value positions,
                         Value cosCache, Value sinCache, bool interleaved) {
  return createCachedRope(rewriter, loc, heads, heads.getType(), positions, cosCache, sinCache,
                          /*numHeads=*/0, interleaved);
}

void populateRopePatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseDecomposedRope, RaiseHalvesRope, RaiseRotaryEmbedding,
               RaiseMsRotaryEmbedding, RaisePartialRotary>(patterns.getContext());
}

} // namespace llmc::raising
