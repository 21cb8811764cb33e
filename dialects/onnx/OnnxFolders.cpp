//===- OnnxFolders.cpp - constant folding of onnx ops ---------------------===//
//
// Folding is aimed at the shape subgraphs exports compute at run time
// (Shape -> Gather -> Concat -> Reshape, Range/Trilu masks built from
// constants): small integer and float tensors. Weights are never folded;
// every folder gives up on results above kMaxFoldedElements.
//
//===----------------------------------------------------------------------===//
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/ShapeHelpers.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace llmc::onnx {

namespace {
constexpr int64_t kMaxFoldedElements = 1 << 16;

/// The result's static type, if it is small enough to fold into.
RankedTensorType foldableType(Value result) {
  auto type = dyn_cast<RankedTensorType>(result.getType());
  if (!type || !type.hasStaticShape() || type.getNumElements() > kMaxFoldedElements)
    return nullptr;
  return type;
}

/// Folds a 1-D or scalar integer result whose every entry a shape evaluation knows.
OpFoldResult foldShapeTensor(Value result) {
  RankedTensorType type = foldableType(result);
  if (!type || type.getRank() > 1 || !isa<IntegerType>(type.getElementType())) return {};
  auto values = evaluateShapeTensor(result);
  if (!values || int64_t(values->size()) != type.getNumElements() ||
      llvm::any_of(*values, ShapedType::isDynamic))
    return {};
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  SmallVector<APInt> ints;
  for (int64_t v : *values) ints.push_back(APInt(width, v, /*isSigned=*/true));
  return DenseElementsAttr::get(type, ints);
}

/// The values of `attr` broadcast to `type`'s element count (same shape or a splat).
template <typename T>
std::optional<SmallVector<T>> valuesFor(DenseElementsAttr attr, RankedTensorType type) {
  if (attr.isSplat()) return SmallVector<T>(type.getNumElements(), attr.getSplatValue<T>());
  if (attr.getType().getShape() != type.getShape()) return std::nullopt;
  auto range = attr.getValues<T>();
  return SmallVector<T>(range.begin(), range.end());
}

/// Folds an elementwise binary op over constant operands that are the same
/// shape as the result or splats. `intFn`/`floatFn` compute one element.
template <typename IntFn, typename FloatFn>
OpFoldResult foldBinary(Value result, ArrayRef<Attribute> operands, IntFn intFn, FloatFn floatFn) {
  RankedTensorType type = foldableType(result);
  auto lhs = dyn_cast_or_null<DenseElementsAttr>(operands[0]);
  auto rhs = dyn_cast_or_null<DenseElementsAttr>(operands[1]);
  if (!type || !lhs || !rhs || lhs.getElementType() != rhs.getElementType()) return {};
  Type resultElement = type.getElementType();
  if (isa<IntegerType>(lhs.getElementType()) && !lhs.getElementType().isInteger(1)) {
    auto a = valuesFor<APInt>(lhs, type), b = valuesFor<APInt>(rhs, type);
    if (!a || !b) return {};
    SmallVector<APInt> out;
    for (auto [x, y] : llvm::zip(*a, *b)) {
      std::optional<APInt> v = intFn(x, y);
      if (!v) return {};
      out.push_back(v->zextOrTrunc(resultElement.getIntOrFloatBitWidth()));
    }
    return DenseElementsAttr::get(type, out);
  }
  if (isa<FloatType>(lhs.getElementType()) && isa<FloatType>(resultElement)) {
    auto a = valuesFor<APFloat>(lhs, type), b = valuesFor<APFloat>(rhs, type);
    if (!a || !b) return {};
    SmallVector<APFloat> out;
    for (auto [x, y] : llvm::zip(*a, *b)) out.push_back(floatFn(x, y));
    return DenseElementsAttr::get(type, out);
  }
  return {};
}

/// Folds a logic op over constant bool operands of the result's shape or
/// splats (shape subgraphs in function bodies compute flags this way).
OpFoldResult foldLogic(Value result, ArrayRef<Attribute> operands,
                       llvm::function_ref<bool(ArrayRef<bool>)> fn) {
  RankedTensorType type = foldableType(result);
  if (!type || !type.getElementType().isInteger(1)) return {};
  SmallVector<SmallVector<bool>> values;
  for (Attribute operand : operands) {
    auto attr = dyn_cast_or_null<DenseElementsAttr>(operand);
    if (!attr || !attr.getElementType().isInteger(1)) return {};
    auto elements = valuesFor<bool>(attr, type);
    if (!elements) return {};
    values.push_back(std::move(*elements));
  }
  SmallVector<bool> out;
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    SmallVector<bool> args;
    for (const auto &operand : values) args.push_back(operand[i]);
    out.push_back(fn(args));
  }
  return DenseElementsAttr::get(type, out);
}

/// Reuses the constant data of `operand` under the result's static shape.
/// A weight blob is shared, not copied: reshaping keeps its raw layout.
OpFoldResult foldReshapeOfConstant(Value result, Attribute operand) {
  auto resultType = dyn_cast<RankedTensorType>(result.getType());
  if (auto blob = dyn_cast_or_null<DenseResourceElementsAttr>(operand);
      blob && resultType && resultType.hasStaticShape() &&
      resultType.getNumElements() == blob.getNumElements())
    return DenseResourceElementsAttr::get(resultType, blob.getRawHandle());
  RankedTensorType type = foldableType(result);
  auto data = dyn_cast_or_null<DenseElementsAttr>(operand);
  if (!type || !data || data.getNumElements() != type.getNumElements()) return {};
  return data.reshape(type);
}
} // namespace

OpFoldResult NoneOp::fold(FoldAdaptor) { return UnitAttr::get(getContext()); }
OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }
OpFoldResult IdentityOp::fold(FoldAdaptor) {
  return getX().getType() == getType() ? getX() : Value();
}
OpFoldResult ShapeOp::fold(FoldAdaptor) { return foldShapeTensor(getResult()); }

OpFoldResult SizeOp::fold(FoldAdaptor) {
  auto type = dyn_cast<RankedTensorType>(getData().getType());
  if (!type || !type.hasStaticShape()) return {};
  return DenseElementsAttr::get(cast<ShapedType>(getType()), APInt(64, type.getNumElements()));
}

OpFoldResult AddOp::fold(FoldAdaptor adaptor) {
  return foldBinary(getResult(), adaptor.getOperands(),
                    [](const APInt &a, const APInt &b) { return std::optional<APInt>(a + b); },
                    [](const APFloat &a, const APFloat &b) { return a + b; });
}

OpFoldResult SubOp::fold(FoldAdaptor adaptor) {
  return foldBinary(getResult(), adaptor.getOperands(),
                    [](const APInt &a, const APInt &b) { return std::optional<APInt>(a - b); },
                    [](const APFloat &a, const APFloat &b) { return a - b; });
}

OpFoldResult MulOp::fold(FoldAdaptor adaptor) {
  return foldBinary(getResult(), adaptor.getOperands(),
                    [](const APInt &a, const APInt &b) { return std::optional<APInt>(a * b); },
                    [](const APFloat &a, const APFloat &b) { return a * b; });
}

OpFoldResult SqrtOp::fold(FoldAdaptor adaptor) {
  // Attention scales written as sqrt(1 / sqrt(head_dim)), applied to q and k each.
  RankedTensorType type = foldableType(getResult());
  auto input = dyn_cast_or_null<DenseElementsAttr>(adaptor.getX());
  if (!type || !input || !isa<FloatType>(type.getElementType()) ||
      input.getType() != type)
    return {};
  SmallVector<APFloat> out;
  for (APFloat value : input.getValues<APFloat>()) {
    bool lost;
    APFloat root(std::sqrt(value.convertToDouble()));
    root.convert(value.getSemantics(), APFloat::rmNearestTiesToEven, &lost);
    out.push_back(root);
  }
  return DenseElementsAttr::get(type, out);
}

OpFoldResult NegOp::fold(FoldAdaptor adaptor) {
  // As 0 - x, so that negated axes and dims in shape subgraphs fold.
  RankedTensorType type = foldableType(getResult());
  auto input = dyn_cast_or_null<DenseElementsAttr>(adaptor.getX());
  if (!type || !input) return {};
  Attribute zero = isa<FloatType>(type.getElementType())
                       ? Attribute(DenseElementsAttr::get(type, FloatAttr::get(type.getElementType(), 0.0)))
                       : Attribute(DenseElementsAttr::get(type, IntegerAttr::get(type.getElementType(), 0)));
  return foldBinary(getResult(), {zero, input},
                    [](const APInt &a, const APInt &b) { return std::optional<APInt>(a - b); },
                    [](const APFloat &a, const APFloat &b) { return a - b; });
}

OpFoldResult NotOp::fold(FoldAdaptor adaptor) {
  return foldLogic(getResult(), adaptor.getOperands(), [](ArrayRef<bool> x) { return !x[0]; });
}

OpFoldResult AndOp::fold(FoldAdaptor adaptor) {
  return foldLogic(getResult(), adaptor.getOperands(),
                   [](ArrayRef<bool> x) { return x[0] && x[1]; });
}

OpFoldResult OrOp::fold(FoldAdaptor adaptor) {
  return foldLogic(getResult(), adaptor.getOperands(),
                   [](ArrayRef<bool> x) { return x[0] || x[1]; });
}

OpFoldResult ModOp::fold(FoldAdaptor adaptor) {
  // Signed integers only: Python's modulo (the divisor's sign) unless fmod.
  Type element = getElementTypeOrSelf(getA().getType());
  if (!isa<IntegerType>(element) || element.isUnsignedInteger()) return {};
  bool fmod = getFmod() != 0;
  return foldBinary(
      getResult(), adaptor.getOperands(),
      [fmod](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isZero()) return std::nullopt;
        APInt remainder = a.srem(b);
        if (!fmod && !remainder.isZero() && remainder.isNegative() != b.isNegative())
          remainder += b;
        return remainder;
      },
      [](const APFloat &a, const APFloat &) { return a; });
}

OpFoldResult DivOp::fold(FoldAdaptor adaptor) {
  return foldBinary(
      getResult(), adaptor.getOperands(),
      [](const APInt &a, const APInt &b) -> std::optional<APInt> {
        if (b.isZero()) return std::nullopt;
        return a.sdiv(b);
      },
      [](const APFloat &a, const APFloat &b) { return a / b; });
}

namespace {
/// Equal over shape tensors whose entries are not all known: an entry known
/// to be >= 0 (a dim) never equals a negative constant, which is how
/// torch.onnx spells `expand(-1, ...)`: Where(Equal(shape, -1), 1, shape).
OpFoldResult foldEqualOfShapes(EqualOp op) {
  RankedTensorType type = foldableType(op.getResult());
  if (!type || type.getRank() > 1) return {};
  auto lhs = evaluateShapeEntries(op.getA()), rhs = evaluateShapeEntries(op.getB());
  if (!lhs || !rhs) return {};
  int64_t size = type.getNumElements();
  auto entry = [&](const SmallVector<ShapeEntry> &entries, int64_t i) -> const ShapeEntry * {
    if (int64_t(entries.size()) == size) return &entries[i];
    return entries.size() == 1 ? &entries[0] : nullptr; // a broadcast scalar
  };
  SmallVector<bool> equal;
  for (int64_t i = 0; i < size; ++i) {
    const ShapeEntry *a = entry(*lhs, i), *b = entry(*rhs, i);
    if (!a || !b) return {};
    bool aKnown = !ShapedType::isDynamic(a->value), bKnown = !ShapedType::isDynamic(b->value);
    if (aKnown && bKnown) equal.push_back(a->value == b->value);
    else if ((aKnown && a->value < 0 && b->nonNegative) ||
             (bKnown && b->value < 0 && a->nonNegative))
      equal.push_back(false);
    else
      return {};
  }
  return DenseElementsAttr::get(type, ArrayRef<bool>(equal));
}
} // namespace

OpFoldResult EqualOp::fold(FoldAdaptor adaptor) {
  OpFoldResult folded = foldBinary(
      getResult(), adaptor.getOperands(),
      [](const APInt &a, const APInt &b) { return std::optional<APInt>(APInt(1, a == b)); },
      [](const APFloat &a, const APFloat &b) { return a; } /* floats are not folded */);
  if (folded || !getElementTypeOrSelf(getA().getType()).isSignlessInteger(64)) return folded;
  return foldEqualOfShapes(*this);
}

OpFoldResult WhereOp::fold(FoldAdaptor adaptor) {
  auto condition = dyn_cast_or_null<DenseElementsAttr>(adaptor.getCondition());
  if (!condition || condition.empty()) return {};
  if (OpFoldResult shape = foldShapeTensor(getResult())) return shape;
  auto values = condition.getValues<bool>();
  bool first = *values.begin();
  if (llvm::any_of(values, [&](bool v) { return v != first; })) return {};
  Value chosen = first ? getX() : getY();
  return chosen.getType() == getType() ? chosen : Value();
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType()) return getInput();
  RankedTensorType type = foldableType(getResult());
  auto input = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput());
  if (!type || !input) return {};
  Type from = input.getElementType(), to = type.getElementType();
  // A bool is 0 or 1, not a 1-bit signed integer.
  auto widened = [&](const APInt &v) {
    return from.isInteger(1) ? v.zext(64) : v.sextOrTrunc(64);
  };
  if (isa<IntegerType>(from) && isa<IntegerType>(to)) {
    SmallVector<APInt> out;
    for (const APInt &v : input.getValues<APInt>())
      out.push_back(to.isInteger(1) ? APInt(1, !v.isZero())
                                    : widened(v).trunc(to.getIntOrFloatBitWidth()));
    return DenseElementsAttr::get(type, out);
  }
  if (isa<IntegerType>(from) && to.isF32()) {
    SmallVector<float> out;
    for (const APInt &v : input.getValues<APInt>()) out.push_back(float(widened(v).getSExtValue()));
    return DenseElementsAttr::get(type, ArrayRef<float>(out));
  }
  return foldShapeTensor(getResult());
}

namespace {
/// Whether a Reshape's target keeps every dim of its input: each entry a
/// copy (0), the input's static dim, or a Shape read of that very dim, and
/// at most one -1 (then the one left). GPT-2's export reshapes input_ids to
/// [-1, seq] this way.
bool reshapesNothing(ReshapeOp op) {
  auto type = dyn_cast<RankedTensorType>(op.getData().getType());
  auto entries = evaluateShapeEntries(op.getShape());
  if (!type || type != op.getType() || !entries || int64_t(entries->size()) != type.getRank())
    return false;
  int64_t inferred = 0;
  for (auto [index, entry] : llvm::enumerate(*entries)) {
    int64_t dim = type.getDimSize(index);
    bool copies = (entry.value == 0 && !op.getAllowzero()) ||
                  (!ShapedType::isDynamic(dim) && entry.value == dim) ||
                  (entry.dim.first && entry.dim == canonicalDim(op.getData(), index));
    if (entry.value == -1) ++inferred;
    else if (!copies) return false;
  }
  return inferred <= 1;
}
} // namespace

namespace {
/// Whether Reshape `op` of `inner`'s result means the same as that reshape of
/// `inner`'s input: each target entry is a positive size or -1, or, where it
/// may be 0 (a copy of the input's dim), that dim is the same in both inputs.
bool reshapesAlikeThrough(ReshapeOp op, ReshapeOp inner) {
  if (op.getAllowzero()) return true;
  auto entries = evaluateShapeEntries(op.getShape());
  if (!entries) return false;
  Value outer = op.getData(), input = inner.getData();
  auto sameDim = [&](int64_t i) {
    auto outerType = dyn_cast<RankedTensorType>(outer.getType());
    auto inputType = dyn_cast<RankedTensorType>(input.getType());
    if (!outerType || !inputType || i >= outerType.getRank() || i >= inputType.getRank())
      return false;
    if (!outerType.isDynamicDim(i) && !inputType.isDynamicDim(i))
      return outerType.getDimSize(i) == inputType.getDimSize(i);
    return canonicalDim(outer, i) == canonicalDim(input, i);
  };
  for (auto [i, entry] : llvm::enumerate(*entries))
    if (entry.value == 0 || (entry.value < -1 && !sameDim(i))) return false;
  return true;
}
} // namespace

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  // A reshape of a reshape is the second reshape of the first's input.
  if (auto inner = getData().getDefiningOp<ReshapeOp>();
      inner && reshapesAlikeThrough(*this, inner)) {
    getDataMutable().assign(inner.getData());
    return getResult();
  }
  if (getData().getType() == getType() &&
      (cast<ShapedType>(getType()).hasStaticShape() || reshapesNothing(*this)))
    return getData();
  return foldReshapeOfConstant(getResult(), adaptor.getData());
}

OpFoldResult UnsqueezeOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult folded = foldReshapeOfConstant(getResult(), adaptor.getData())) return folded;
  return foldShapeTensor(getResult());
}

OpFoldResult SqueezeOp::fold(FoldAdaptor adaptor) {
  if (OpFoldResult folded = foldReshapeOfConstant(getResult(), adaptor.getData())) return folded;
  return foldShapeTensor(getResult());
}

namespace {
/// Whether `value` is statically empty along `axis`.
bool isEmptyAlong(Value value, int64_t axis) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type) return false;
  auto normalized = normalizeAxis(axis, type.getRank());
  return normalized && type.getDimSize(*normalized) == 0;
}

/// Whether a Slice takes all of its input: every sliced axis static and
/// taken whole with step 1. Partial-rotary exports slice the rotated part
/// this way when it is the whole head.
bool slicesNothing(SliceOp op) {
  auto type = dyn_cast<RankedTensorType>(op.getData().getType());
  auto starts = getConstantInts(op.getStarts());
  auto ends = getConstantInts(op.getEnds());
  if (!type || type != op.getType() || !starts || !ends || starts->size() != ends->size())
    return false;
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  if (isa<NoneType>(op.getAxes().getType())) {
    for (size_t i = 0; i < starts->size(); ++i) axes.push_back(i);
  } else if (auto constant = getConstantInts(op.getAxes())) {
    axes = *constant;
  }
  if (!isa<NoneType>(op.getSteps().getType())) {
    auto constant = getConstantInts(op.getSteps());
    if (!constant) return false;
    steps = *constant;
  }
  if (axes.size() != starts->size() || steps.size() != starts->size()) return false;
  for (size_t i = 0; i < axes.size(); ++i) {
    auto axis = normalizeAxis(axes[i], type.getRank());
    if (!axis || type.isDynamicDim(*axis) || steps[i] != 1) return false;
    int64_t dim = type.getDimSize(*axis), start = (*starts)[i], end = (*ends)[i];
    if ((start < 0 ? start + dim : start) > 0 || (end < 0 ? end + dim : end) < dim) return false;
  }
  return true;
}
} // namespace

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  // Concat with computed empty parts (a partial-rotary export's pass-through
  // part when the whole head rotates) is its one other input. An empty graph
  // input stays: a past KV cache fixed at length 0 is still the cache.
  SmallVector<Value> nonEmpty;
  for (Value input : getInputs())
    if (isa<BlockArgument>(input) || !isEmptyAlong(input, getAxis())) nonEmpty.push_back(input);
  if (nonEmpty.size() == 1 && nonEmpty[0].getType() == getType()) return nonEmpty[0];
  return foldShapeTensor(getResult());
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (slicesNothing(*this)) return getData();
  return foldShapeTensor(getResult());
}

OpFoldResult GatherOp::fold(FoldAdaptor) { return foldShapeTensor(getResult()); }

OpFoldResult ConstantOfShapeOp::fold(FoldAdaptor) {
  auto type = dyn_cast<RankedTensorType>(getType());
  if (!type || !type.hasStaticShape()) return {};
  if (!getValue()) return DenseElementsAttr::get(type, 0.0f);
  auto value = dyn_cast<DenseElementsAttr>(*getValue());
  if (!value || value.getNumElements() != 1) return {};
  return DenseElementsAttr::get(type, *value.value_begin<Attribute>());
}

OpFoldResult RangeOp::fold(FoldAdaptor) {
  RankedTensorType type = foldableType(getResult());
  if (!type || !isa<IntegerType>(type.getElementType())) return {};
  auto start = getConstantInts(getStart()), delta = getConstantInts(getDelta());
  if (!start || !delta || start->size() != 1 || delta->size() != 1) return {};
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  SmallVector<APInt> values;
  for (int64_t i = 0; i < type.getNumElements(); ++i)
    values.push_back(APInt(width, (*start)[0] + i * (*delta)[0], /*isSigned=*/true));
  return DenseElementsAttr::get(type, values);
}

namespace {
/// An If on a constant condition becomes the chosen branch, inlined.
struct InlineConstantIf : OpRewritePattern<IfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(IfOp op, PatternRewriter &rewriter) const override {
    DenseElementsAttr condition = getConstantAttr(op.getCond());
    if (!condition || condition.getNumElements() != 1)
      return rewriter.notifyMatchFailure(op, "condition is not a constant scalar");
    Region &branch = condition.getValues<bool>()[0] ? op.getThenBranch() : op.getElseBranch();
    Block &block = branch.front();
    Operation *yield = block.getTerminator();
    SmallVector<Value> results(yield->getOperands());
    rewriter.inlineBlockBefore(&block, op);
    rewriter.eraseOp(yield);
    rewriter.replaceOp(op, results);
    return success();
  }
};
} // namespace

void IfOp::getCanonicalizationPatterns(RewritePatternSet &patterns, MLIRContext *context) {
  patterns.add<InlineConstantIf>(context);
}

} // namespace llmc::onnx
