//===- OnnxToLinalgReductions.cpp - reductions and normalisations to linalg ===//
//
// Reductions become linalg.generics with reduction iterators (buildReduction),
// reshaped to the result's shape, which keeps or drops the reduced dims. The
// ops that use a reduction again over the reduced tensor (Softmax and the
// normalisations) reshape it with the reduced dims kept as size 1, so that the
// broadcasting elementwise generics read it along those dims. CumSum is a
// loop nest of scalar steps along the axis.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxToLinalg/OnnxToLinalg.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/ShapeHelpers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;

namespace llmc::onnx_to_linalg {
namespace {

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

/// The normalised dims that `axes` name in a tensor of `rank`, sorted and
/// without repeats; nullopt when one is out of range.
std::optional<SmallVector<int64_t>> normalizedAxes(ArrayRef<int64_t> axes, int64_t rank) {
  SmallVector<int64_t> dims;
  for (int64_t axis : axes) {
    auto dim = onnx::normalizeAxis(axis, rank);
    if (!dim) return std::nullopt;
    dims.push_back(*dim);
  }
  llvm::sort(dims);
  dims.erase(llvm::unique(dims), dims.end());
  return dims;
}

/// The dims from `first` to the last of a tensor of `rank`.
SmallVector<int64_t> dimsFrom(int64_t first, int64_t rank) {
  return llvm::to_vector(llvm::seq<int64_t>(first, rank));
}

/// `shape` with the `reducedDims` set to 1: the shape of a reduction that
/// keeps its reduced dims.
SmallVector<int64_t> keptDimsShape(ArrayRef<int64_t> shape, ArrayRef<int64_t> reducedDims) {
  SmallVector<int64_t> kept(shape);
  for (int64_t dim : reducedDims) kept[dim] = 1;
  return kept;
}

/// The number of elements that each result element of a reduction over
/// `reducedDims` of `shape` combines.
int64_t reducedCount(ArrayRef<int64_t> shape, ArrayRef<int64_t> reducedDims) {
  int64_t count = 1;
  for (int64_t dim : reducedDims) count *= shape[dim];
  return count;
}

/// The type of `value` when it is a ranked tensor of static shape, else null.
RankedTensorType staticInputType(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() ? type : nullptr;
}

/// The type that sums and products of `elementType` accumulate in: f16 and
/// bf16 sums lose too much precision over long rows, so they use f32.
Type accumulatorType(Type elementType) {
  if (elementType.isF16() || elementType.isBF16())
    return Float32Type::get(elementType.getContext());
  return elementType;
}

/// lhs + rhs, for floats or integers.
Value addScalars(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  if (isa<FloatType>(lhs.getType())) return arith::AddFOp::create(b, loc, lhs, rhs);
  return arith::AddIOp::create(b, loc, lhs, rhs);
}

/// The sum of the `reducedDims` of `input` (onnx element type
/// `elementType`), accumulated in `accumulator`.
Value sumOver(OpBuilder &b, Location loc, Value input, Type elementType, Type accumulator,
              ArrayRef<int64_t> reducedDims) {
  return buildReduction(b, loc, input, reducedDims, scalarConstant(b, loc, accumulator, 0),
                        [&](OpBuilder &nb, Location nl, Value element, Value acc) {
                          return addScalars(
                              nb, nl, castScalar(nb, nl, element, elementType, accumulator), acc);
                        });
}

/// lhs / rhs, for floats or integers of the given signedness.
Value divideScalars(OpBuilder &b, Location loc, Value lhs, Value rhs, bool isUnsigned) {
  if (isa<FloatType>(lhs.getType())) return arith::DivFOp::create(b, loc, lhs, rhs);
  if (isUnsigned) return arith::DivUIOp::create(b, loc, lhs, rhs);
  return arith::DivSIOp::create(b, loc, lhs, rhs);
}

/// 1 / sqrt(meanOfSquares + epsilon), the scale of a normalisation.
Value inverseRootOf(OpBuilder &b, Location loc, Value meanOfSquares, double epsilon) {
  Type type = meanOfSquares.getType();
  Value shifted =
      arith::AddFOp::create(b, loc, meanOfSquares, scalarConstant(b, loc, type, epsilon));
  return arith::DivFOp::create(b, loc, scalarConstant(b, loc, type, 1),
                               math::SqrtOp::create(b, loc, shifted));
}

//===----------------------------------------------------------------------===//
// ReduceSum, ReduceMean, ReduceProd, ReduceMax, ReduceMin, ReduceL2
//===----------------------------------------------------------------------===//

/// L2: the square root of the sum of squares.
enum class ReduceKind { Sum, Mean, Prod, Max, Min, L2 };

/// The value of an empty reduction of `kind` over the onnx `elementType`, in
/// the signless `type`: 0 for sums, 1 for products, and for max/min the lowest
/// or highest value of the type (-inf/+inf for floats, false/true for bools).
Value reductionIdentity(OpBuilder &b, Location loc, ReduceKind kind, Type elementType, Type type) {
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
  case ReduceKind::L2: return scalarConstant(b, loc, type, 0);
  case ReduceKind::Prod: return scalarConstant(b, loc, type, 1);
  case ReduceKind::Max:
  case ReduceKind::Min: break;
  }
  bool max = kind == ReduceKind::Max;
  if (isa<FloatType>(type)) return scalarConstant(b, loc, type, max ? -INFINITY : INFINITY);
  unsigned width = type.getIntOrFloatBitWidth();
  APInt bound = isUnsignedInteger(elementType) || isBool(elementType)
                    ? (max ? APInt::getMinValue(width) : APInt::getMaxValue(width))
                    : (max ? APInt::getSignedMinValue(width) : APInt::getSignedMaxValue(width));
  return arith::ConstantOp::create(b, loc, IntegerAttr::get(type, bound));
}

/// Folds `element` into `acc` for a reduction of `kind`; `isUnsigned` picks
/// the unsigned integer max/min (bools compare as unsigned: max is any, min
/// is all). Max/min of floats propagate NaN, as numpy does.
Value combineScalars(OpBuilder &b, Location loc, ReduceKind kind, bool isUnsigned, Value element,
                     Value acc) {
  bool isFloat = isa<FloatType>(acc.getType());
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean: return addScalars(b, loc, element, acc);
  case ReduceKind::L2: {
    Value square = isFloat ? Value(arith::MulFOp::create(b, loc, element, element))
                           : Value(arith::MulIOp::create(b, loc, element, element));
    return addScalars(b, loc, square, acc);
  }
  case ReduceKind::Prod:
    if (isFloat) return arith::MulFOp::create(b, loc, element, acc);
    return arith::MulIOp::create(b, loc, element, acc);
  case ReduceKind::Max:
    if (isFloat) return arith::MaximumFOp::create(b, loc, element, acc);
    if (isUnsigned) return arith::MaxUIOp::create(b, loc, element, acc);
    return arith::MaxSIOp::create(b, loc, element, acc);
  case ReduceKind::Min:
    if (isFloat) return arith::MinimumFOp::create(b, loc, element, acc);
    if (isUnsigned) return arith::MinUIOp::create(b, loc, element, acc);
    return arith::MinSIOp::create(b, loc, element, acc);
  }
  llvm_unreachable("unknown reduction kind");
}

/// The square root of a sum of squares `value` (of type `accumulator`) as
/// `type`: in floating point, and an integer's truncated, as onnxruntime's
/// ReduceL2 gives it.
Value squareRoot(OpBuilder &b, Location loc, Value value, Type accumulator, Type type) {
  if (isa<FloatType>(accumulator))
    return castScalar(b, loc, math::SqrtOp::create(b, loc, value), accumulator, type);
  Value real = arith::SIToFPOp::create(b, loc, b.getF64Type(), value);
  Value rooted = math::SqrtOp::create(b, loc, real);
  return arith::FPToSIOp::create(b, loc, type, rooted);
}

/// Lowers a Reduce* op whose axes are constant or omitted.
template <typename OpTy>
struct LowerReduce : OpConversionPattern<OpTy> {
  LowerReduce(TypeConverter &converter, MLIRContext *context, ReduceKind kind)
      : OpConversionPattern<OpTy>(converter, context), kind(kind) {}

  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto resultType = staticResultType(rewriter, *this->getTypeConverter(), op, op.getReduced());
    if (failed(resultType)) return failure();
    RankedTensorType inputType = staticInputType(adaptor.getData());
    if (!inputType) return rewriter.notifyMatchFailure(op, "the input shape is not static");

    SmallVector<int64_t> axes;
    if (!isa<NoneType>(op.getAxes().getType())) {
      auto constantAxes = onnx::getConstantInts(op.getAxes());
      if (!constantAxes) return rewriter.notifyMatchFailure(op, "the axes are not constant");
      axes = *constantAxes;
    }
    if (axes.empty()) {
      if (op.getNoopWithEmptyAxes()) {
        rewriter.replaceOp(op, adaptor.getData());
        return success();
      }
      axes = dimsFrom(0, inputType.getRank());
    }
    auto reducedDims = normalizedAxes(axes, inputType.getRank());
    if (!reducedDims) return rewriter.notifyMatchFailure(op, "an axis is out of range");

    Location loc = op.getLoc();
    Type elementType = getElementTypeOrSelf(op.getData().getType());
    Type type = inputType.getElementType();
    bool isUnsigned = isUnsignedInteger(elementType) || isBool(elementType);
    bool accumulates = kind == ReduceKind::Sum || kind == ReduceKind::Mean ||
                       kind == ReduceKind::Prod || kind == ReduceKind::L2;
    Type accumulator = accumulates ? accumulatorType(type) : type;
    Value init = reductionIdentity(rewriter, loc, kind, elementType, accumulator);
    Value reduced =
        buildReduction(rewriter, loc, adaptor.getData(), *reducedDims, init,
                       [&](OpBuilder &b, Location nl, Value element, Value acc) {
                         return combineScalars(b, nl, kind, isUnsigned,
                                               castScalar(b, nl, element, type, accumulator), acc);
                       });

    int64_t count = reducedCount(inputType.getShape(), *reducedDims);
    // An integer mean of nothing stays 0 rather than dividing by zero.
    bool divides = kind == ReduceKind::Mean && (isa<FloatType>(accumulator) || count != 0);
    bool root = kind == ReduceKind::L2;
    if (divides || root || accumulator != type) {
      auto reducedType = cast<RankedTensorType>(reduced.getType());
      reduced = buildElementwise(
          rewriter, loc, reducedType.clone(type), reduced,
          [&](OpBuilder &b, Location nl, ValueRange args) {
            Value value = args[0];
            if (divides)
              value = divideScalars(b, nl, value, scalarConstant(b, nl, accumulator, double(count)),
                                    isUnsigned);
            if (root) return squareRoot(b, nl, value, accumulator, type);
            return castScalar(b, nl, value, accumulator, type);
          });
    }
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, reduced, resultType->getShape()));
    return success();
  }

  ReduceKind kind;
};

//===----------------------------------------------------------------------===//
// ArgMax
//===----------------------------------------------------------------------===//

/// Whether `element` replaces the best value so far, `best`: for the first
/// index of the maximum only a greater element does, for the last an equal
/// one too. A NaN counts as the greatest value, as in numpy's argmax.
Value replacesBest(OpBuilder &b, Location loc, Value element, Value best, bool isUnsigned,
                   bool lastIndex) {
  if (!isa<FloatType>(element.getType())) {
    arith::CmpIPredicate predicate =
        isUnsigned ? (lastIndex ? arith::CmpIPredicate::uge : arith::CmpIPredicate::ugt)
                   : (lastIndex ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sgt);
    return arith::CmpIOp::create(b, loc, predicate, element, best);
  }
  Value greater = arith::CmpFOp::create(
      b, loc, lastIndex ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OGT, element, best);
  Value elementIsNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, element, element);
  if (!lastIndex) {
    // The first NaN stays.
    Value bestIsNumber = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ORD, best, best);
    elementIsNaN = arith::AndIOp::create(b, loc, elementIsNaN, bestIsNumber);
  }
  return arith::OrIOp::create(b, loc, greater, elementIsNaN);
}

/// ArgMax: one generic reduces the axis to two results, the best value and
/// its index; the index is the op's result.
struct LowerArgMax : OpConversionPattern<onnx::ArgMaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::ArgMaxOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto resultType = staticResultType(rewriter, *getTypeConverter(), op, op.getReduced());
    if (failed(resultType)) return failure();
    RankedTensorType inputType = staticInputType(adaptor.getData());
    if (!inputType) return rewriter.notifyMatchFailure(op, "the input shape is not static");
    int64_t rank = inputType.getRank();
    auto axis = onnx::normalizeAxis(op.getAxis(), rank);
    if (!axis) return rewriter.notifyMatchFailure(op, "the axis is out of range");

    Location loc = op.getLoc();
    MLIRContext *context = getContext();
    Type elementType = getElementTypeOrSelf(op.getData().getType());
    Type type = inputType.getElementType();
    bool isUnsigned = isUnsignedInteger(elementType) || isBool(elementType);
    bool lastIndex = op.getSelectLastIndex();

    SmallVector<int64_t> keptShape;
    SmallVector<AffineExpr> keptExprs;
    SmallVector<utils::IteratorType> iterators;
    for (int64_t dim = 0; dim < rank; ++dim) {
      bool reduced = dim == *axis;
      iterators.push_back(reduced ? utils::IteratorType::reduction : utils::IteratorType::parallel);
      if (reduced) continue;
      keptShape.push_back(inputType.getDimSize(dim));
      keptExprs.push_back(getAffineDimExpr(dim, context));
    }
    auto valuesType = RankedTensorType::get(keptShape, type);
    auto indicesType = RankedTensorType::get(keptShape, rewriter.getI64Type());
    Value lowest = reductionIdentity(rewriter, loc, ReduceKind::Max, elementType, type);
    Value initValues = filledTensor(rewriter, loc, valuesType, lowest);
    Value initIndices = filledTensor(rewriter, loc, indicesType,
                                     scalarConstant(rewriter, loc, rewriter.getI64Type(), 0));
    AffineMap keptMap = AffineMap::get(rank, 0, keptExprs, context);
    SmallVector<AffineMap> maps{rewriter.getMultiDimIdentityMap(rank), keptMap, keptMap};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valuesType, indicesType}, adaptor.getData(),
        ValueRange{initValues, initIndices}, maps, iterators,
        [&](OpBuilder &b, Location nl, ValueRange args) {
          Value element = args[0], best = args[1], bestIndex = args[2];
          Value index = arith::IndexCastOp::create(b, nl, b.getI64Type(),
                                                   linalg::IndexOp::create(b, nl, *axis));
          Value replaces = replacesBest(b, nl, element, best, isUnsigned, lastIndex);
          linalg::YieldOp::create(
              b, nl,
              ValueRange{arith::SelectOp::create(b, nl, replaces, element, best),
                         arith::SelectOp::create(b, nl, replaces, index, bestIndex)});
        });
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, generic.getResult(1), resultType->getShape()));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// CumSum
//===----------------------------------------------------------------------===//

/// CumSum: a loop nest over the elements, the axis walked from its start (from
/// its end for `reverse`), that carries the result, zeros at first: each
/// element is the previous one along the axis plus the input here (or, when
/// `exclusive`, at the previous position). Scalar steps update the result in
/// place; adding whole slices would copy them into strided subviews, which
/// lowers to a runtime library call (memrefCopy) that graphs do not link.
struct LowerCumSum : OpConversionPattern<onnx::CumSumOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::CumSumOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto resultType = staticResultType(rewriter, *getTypeConverter(), op, op.getY());
    if (failed(resultType)) return failure();
    auto axisValues = onnx::getConstantInts(op.getAxis());
    if (!axisValues || axisValues->size() != 1)
      return rewriter.notifyMatchFailure(op, "the axis is not a constant scalar");
    int64_t rank = resultType->getRank();
    auto axis = onnx::normalizeAxis(axisValues->front(), rank);
    if (!axis) return rewriter.notifyMatchFailure(op, "the axis is out of range");

    Location loc = op.getLoc();
    bool exclusive = op.getExclusive(), reverse = op.getReverse();
    int64_t length = resultType->getDimSize(*axis);
    Value zeroIndex = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value oneIndex = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value lastIndex = arith::ConstantIndexOp::create(rewriter, loc, length - 1);
    SmallVector<Value> lowers(rank, zeroIndex), steps(rank, oneIndex), uppers;
    for (int64_t size : resultType->getShape())
      uppers.push_back(arith::ConstantIndexOp::create(rewriter, loc, size));
    Value x = adaptor.getX();
    Type type = resultType->getElementType();
    Value zeros = filledTensor(rewriter, loc, *resultType, scalarConstant(rewriter, loc, type, 0));
    scf::LoopNest nest = scf::buildLoopNest(
        rewriter, loc, lowers, uppers, steps, zeros,
        [&](OpBuilder &b, Location nl, ValueRange ivs, ValueRange carried) -> scf::ValueVector {
          Value result = carried[0], step = ivs[*axis];
          Value first = arith::CmpIOp::create(b, nl, arith::CmpIPredicate::eq, step, zeroIndex);
          SmallVector<Value> here(ivs), previous(ivs);
          here[*axis] = reverse ? arith::SubIOp::create(b, nl, lastIndex, step).getResult() : step;
          // The first step reads its own position: 0 in the result, and an
          // input element that an exclusive sum must not add.
          Value back = reverse ? arith::AddIOp::create(b, nl, here[*axis], oneIndex).getResult()
                               : arith::SubIOp::create(b, nl, here[*axis], oneIndex).getResult();
          previous[*axis] = arith::SelectOp::create(b, nl, first, here[*axis], back);
          Value running = tensor::ExtractOp::create(b, nl, result, previous);
          Value addend = tensor::ExtractOp::create(b, nl, x, exclusive ? previous : here);
          if (exclusive)
            addend = arith::SelectOp::create(b, nl, first, scalarConstant(b, nl, type, 0), addend);
          Value sum = addScalars(b, nl, running, addend);
          return {tensor::InsertOp::create(b, nl, sum, result, here)};
        });
    rewriter.replaceOp(op, nest.results.front());
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

/// Softmax: exp(x - max) / sum(exp(x - max)) along the axis; subtracting the
/// maximum keeps exp from overflowing. f16/bf16 sums accumulate in f32.
struct LowerSoftmax : OpConversionPattern<onnx::SoftmaxOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::SoftmaxOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto resultType = staticResultType(rewriter, *getTypeConverter(), op, op.getOutput());
    if (failed(resultType)) return failure();
    Type type = resultType->getElementType();
    if (!isa<FloatType>(type)) return rewriter.notifyMatchFailure(op, "the input is not a float");
    auto axis = onnx::normalizeAxis(op.getAxis(), resultType->getRank());
    if (!axis) return rewriter.notifyMatchFailure(op, "the axis is out of range");

    Location loc = op.getLoc();
    ArrayRef<int64_t> shape = resultType->getShape();
    SmallVector<int64_t> keptShape = keptDimsShape(shape, *axis);
    Value max = buildReduction(rewriter, loc, adaptor.getInput(), *axis,
                               scalarConstant(rewriter, loc, type, -INFINITY),
                               [](OpBuilder &b, Location nl, Value element, Value acc) -> Value {
                                 return arith::MaximumFOp::create(b, nl, element, acc);
                               });
    Value exps = buildElementwise(
        rewriter, loc, *resultType,
        ValueRange{adaptor.getInput(), reshapeTo(rewriter, loc, max, keptShape)},
        [](OpBuilder &b, Location nl, ValueRange args) -> Value {
          return math::ExpOp::create(b, nl, arith::SubFOp::create(b, nl, args[0], args[1]));
        });
    Type accumulator = accumulatorType(type);
    Value sum = sumOver(rewriter, loc, exps, type, accumulator, *axis);
    Value result = buildElementwise(
        rewriter, loc, *resultType, ValueRange{exps, reshapeTo(rewriter, loc, sum, keptShape)},
        [&](OpBuilder &b, Location nl, ValueRange args) {
          Value exp = castScalar(b, nl, args[0], type, accumulator);
          return castScalar(b, nl, arith::DivFOp::create(b, nl, exp, args[1]), accumulator, type);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// LayerNormalization, RMSNormalization
//===----------------------------------------------------------------------===//

/// What the normalisations share: the dims normalised together (`axis` to the
/// last) and the type of the statistics (`stash_type`), read from the op.
struct Normalization {
  Type elementType; // of X, a float
  Type stashType;   // the statistics are computed in it
  SmallVector<int64_t> shape, dims, keptShape;
  int64_t count; // elements per normalised group
};

/// The normalisation of `x` from `axis` on, with statistics in the type of
/// ONNX data type `stashType`; failure (reported) when either is invalid.
FailureOr<Normalization> analyzeNormalization(ConversionPatternRewriter &rewriter, Operation *op,
                                              Value x, int64_t axis, int64_t stashType) {
  RankedTensorType type = staticInputType(x);
  if (!type) return rewriter.notifyMatchFailure(op, "the input shape is not static");
  if (!isa<FloatType>(type.getElementType()))
    return rewriter.notifyMatchFailure(op, "the input is not a float");
  Type stash = onnx::elementTypeForOnnxDataType(op->getContext(), stashType);
  if (!isa_and_nonnull<FloatType>(stash))
    return rewriter.notifyMatchFailure(op, "stash_type is not a float type");
  auto first = onnx::normalizeAxis(axis, type.getRank());
  if (!first) return rewriter.notifyMatchFailure(op, "the axis is out of range");
  Normalization norm{type.getElementType(),
                     stash,
                     llvm::to_vector(type.getShape()),
                     dimsFrom(*first, type.getRank()),
                     {},
                     0};
  norm.keptShape = keptDimsShape(norm.shape, norm.dims);
  norm.count = reducedCount(norm.shape, norm.dims);
  return norm;
}

/// `finish` of the means of the normalised groups, given their sums `sums`,
/// with the normalised dims kept as size 1.
Value fromMeans(OpBuilder &b, Location loc, Value sums, const Normalization &norm,
                function_ref<Value(OpBuilder &, Location, Value mean)> finish) {
  auto type = cast<RankedTensorType>(sums.getType());
  Value stats =
      buildElementwise(b, loc, type, sums, [&](OpBuilder &nb, Location nl, ValueRange args) {
        Value count = scalarConstant(nb, nl, type.getElementType(), double(norm.count));
        return finish(nb, nl, arith::DivFOp::create(nb, nl, args[0], count));
      });
  return reshapeTo(b, loc, stats, norm.keptShape);
}

/// LayerNormalization in the types of its ONNX function body: mean and
/// variance over the normalised dims in the stash type, the normalised X cast
/// back to X's type, then scaled and shifted in that type. The variance is the
/// mean of the squared deviations, as the reference computes it (the function
/// body's E[x^2] - E[x]^2 cancels badly). Mean and InvStdDev keep the
/// normalised dims as size 1.
struct LowerLayerNormalization : OpConversionPattern<onnx::LayerNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::LayerNormalizationOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    SmallVector<RankedTensorType> resultTypes;
    for (Value result : op->getResults()) {
      auto type = staticResultType(rewriter, *getTypeConverter(), op, result);
      if (failed(type)) return failure();
      resultTypes.push_back(*type);
    }
    auto norm = analyzeNormalization(rewriter, op, adaptor.getX(), op.getAxis(), op.getStashType());
    if (failed(norm)) return failure();

    Location loc = op.getLoc();
    Type type = norm->elementType, stash = norm->stashType;
    Value mean =
        fromMeans(rewriter, loc, sumOver(rewriter, loc, adaptor.getX(), type, stash, norm->dims),
                  *norm, [](OpBuilder &, Location, Value value) { return value; });
    Value centered = buildElementwise(rewriter, loc, RankedTensorType::get(norm->shape, stash),
                                      ValueRange{adaptor.getX(), mean},
                                      [&](OpBuilder &b, Location nl, ValueRange args) -> Value {
                                        Value x = castScalar(b, nl, args[0], type, stash);
                                        return arith::SubFOp::create(b, nl, x, args[1]);
                                      });
    Value squares =
        buildReduction(rewriter, loc, centered, norm->dims, scalarConstant(rewriter, loc, stash, 0),
                       [](OpBuilder &b, Location nl, Value element, Value acc) -> Value {
                         Value square = arith::MulFOp::create(b, nl, element, element);
                         return arith::AddFOp::create(b, nl, square, acc);
                       });
    double epsilon = op.getEpsilon().convertToDouble();
    Value invStdDev =
        fromMeans(rewriter, loc, squares, *norm, [&](OpBuilder &b, Location nl, Value variance) {
          return inverseRootOf(b, nl, variance, epsilon);
        });

    SmallVector<Value> inputs{centered, invStdDev, adaptor.getScale()};
    bool hasBias = !isa<NoneType>(op.getB().getType());
    if (hasBias) inputs.push_back(adaptor.getB());
    Value y = buildElementwise(
        rewriter, loc, resultTypes[0], inputs, [&](OpBuilder &b, Location nl, ValueRange args) {
          Value normalized =
              castScalar(b, nl, arith::MulFOp::create(b, nl, args[0], args[1]), stash, type);
          Value scaled = arith::MulFOp::create(b, nl, normalized, args[2]);
          if (!hasBias) return scaled;
          return Value(arith::AddFOp::create(b, nl, scaled, args[3]));
        });
    Type meanType = resultTypes[1].getElementType(), invStdDevType = resultTypes[2].getElementType();
    rewriter.replaceOp(op, {y, castElements(rewriter, loc, mean, stash, meanType),
                            castElements(rewriter, loc, invStdDev, stash, invStdDevType)});
    return success();
  }
};

/// RMSNormalization in the types of its ONNX function body: the mean of the
/// squares over the normalised dims in the stash type, X divided by its root
/// and cast back to X's type, then scaled in that type.
struct LowerRMSNormalization : OpConversionPattern<onnx::RMSNormalizationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::RMSNormalizationOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto resultType = staticResultType(rewriter, *getTypeConverter(), op, op.getY());
    if (failed(resultType)) return failure();
    auto norm = analyzeNormalization(rewriter, op, adaptor.getX(), op.getAxis(), op.getStashType());
    if (failed(norm)) return failure();

    Location loc = op.getLoc();
    Type type = norm->elementType, stash = norm->stashType;
    Value squares = buildReduction(
        rewriter, loc, adaptor.getX(), norm->dims, scalarConstant(rewriter, loc, stash, 0),
        [&](OpBuilder &b, Location nl, Value element, Value acc) -> Value {
          Value x = castScalar(b, nl, element, type, stash);
          Value square = arith::MulFOp::create(b, nl, x, x);
          return arith::AddFOp::create(b, nl, square, acc);
        });
    double epsilon = op.getEpsilon().convertToDouble();
    Value invRms =
        fromMeans(rewriter, loc, squares, *norm, [&](OpBuilder &b, Location nl, Value meanSquare) {
          return inverseRootOf(b, nl, meanSquare, epsilon);
        });
    Value y = buildElementwise(
        rewriter, loc, *resultType, ValueRange{adaptor.getX(), invRms, adaptor.getScale()},
        [&](OpBuilder &b, Location nl, ValueRange args) -> Value {
          Value x = castScalar(b, nl, args[0], type, stash);
          Value normalized =
              castScalar(b, nl, arith::MulFOp::create(b, nl, x, args[1]), stash, type);
          return arith::MulFOp::create(b, nl, normalized, args[2]);
        });
    rewriter.replaceOp(op, y);
    return success();
  }
};

} // namespace

void populateReductionPatterns(TypeConverter &converter, RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<LowerReduce<onnx::ReduceSumOp>>(converter, context, ReduceKind::Sum);
  patterns.add<LowerReduce<onnx::ReduceMeanOp>>(converter, context, ReduceKind::Mean);
  patterns.add<LowerReduce<onnx::ReduceProdOp>>(converter, context, ReduceKind::Prod);
  patterns.add<LowerReduce<onnx::ReduceMaxOp>>(converter, context, ReduceKind::Max);
  patterns.add<LowerReduce<onnx::ReduceMinOp>>(converter, context, ReduceKind::Min);
  patterns.add<LowerReduce<onnx::ReduceL2Op>>(converter, context, ReduceKind::L2);
  patterns
      .add<LowerArgMax, LowerCumSum, LowerSoftmax, LowerLayerNormalization, LowerRMSNormalization>(
          converter, context);
}

} // namespace llmc::onnx_to_linalg
