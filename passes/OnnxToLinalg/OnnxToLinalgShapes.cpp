//===- OnnxToLinalgShapes.cpp - shape and data-movement onnx ops to linalg ===//
//
// Ops that move elements without computing on them: reshapes, transposes,
// broadcasts, concatenation and slicing, gathers and scatters, and the
// generators (ConstantOfShape, Range, Trilu's mask). Every result shape is
// static, so sizes come from the result types and the operands that fix a
// shape (Slice's starts, ...) must be constants; indices read at run time
// are extracted inside linalg.generic bodies.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxToLinalg/OnnxToLinalg.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/ShapeHelpers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/IndexingUtils.h"

using namespace mlir;

namespace llmc::onnx_to_linalg {
namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Lowers a single-result op to a value of its static result type. A result
/// without elements is a bare tensor.empty, whatever the op computes, so
/// `lower` only sees results with elements.
template <typename OpTy>
struct SingleResultPattern : OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using Adaptor = typename OpTy::Adaptor;

  /// Builds the op's result at the op; failure (with the reason reported)
  /// before any op is created.
  virtual FailureOr<Value> lower(OpTy op, Adaptor adaptor, RankedTensorType resultType,
                                 ConversionPatternRewriter &rewriter) const = 0;

  LogicalResult matchAndRewrite(OpTy op, Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const final {
    auto type = staticResultType(rewriter, *this->getTypeConverter(), op, op->getResult(0));
    if (failed(type)) return failure();
    FailureOr<Value> result = type->getNumElements() == 0
                                  ? FailureOr<Value>(emptyTensor(rewriter, op.getLoc(), *type))
                                  : lower(op, adaptor, *type, rewriter);
    if (failed(result)) return failure();
    rewriter.replaceOp(op, *result);
    return success();
  }
};

/// The type of `value` when it is a ranked tensor of static shape, else null.
RankedTensorType staticType(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() ? type : nullptr;
}

/// `index` (a scalar of any integer type) as an index into a dim of `size`,
/// with ONNX's wrapping of negative values: index < 0 ? index + size : index.
Value wrapIndex(OpBuilder &b, Location loc, Value index, int64_t size) {
  Value asIndex = arith::IndexCastOp::create(b, loc, b.getIndexType(), index);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, asIndex, zero);
  Value wrapped =
      arith::AddIOp::create(b, loc, asIndex, arith::ConstantIndexOp::create(b, loc, size));
  return arith::SelectOp::create(b, loc, negative, wrapped, asIndex);
}

/// The iteration indices of the enclosing linalg.generic, dims [from, to).
SmallVector<Value> iterationIndices(OpBuilder &b, Location loc, int64_t from, int64_t to) {
  SmallVector<Value> indices;
  for (int64_t dim = from; dim < to; ++dim)
    indices.push_back(linalg::IndexOp::create(b, loc, dim));
  return indices;
}

/// Where a result element reads the input on one dim: a function of the dim
/// and of the element's iteration index on it.
using PositionFn = function_ref<Value(OpBuilder &, Location, int64_t dim, Value index)>;

/// A generic over `resultType` whose element at index i is input[position(i)],
/// dim by dim (the input has the result's rank). The input is read with
/// tensor.extract, not as an operand: an operand's map would make linalg
/// infer the loop bounds from the input's (larger) shape.
Value buildRemap(OpBuilder &b, Location loc, RankedTensorType resultType, Value input,
                 PositionFn position) {
  SmallVector<utils::IteratorType> iterators(resultType.getRank(), utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, ValueRange{}, emptyTensor(b, loc, resultType),
      b.getMultiDimIdentityMap(resultType.getRank()), iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange) {
        SmallVector<Value> positions;
        for (int64_t dim = 0; dim < resultType.getRank(); ++dim)
          positions.push_back(
              position(nested, nestedLoc, dim, linalg::IndexOp::create(nested, nestedLoc, dim)));
        linalg::YieldOp::create(
            nested, nestedLoc,
            tensor::ExtractOp::create(nested, nestedLoc, input, positions).getResult());
      });
  return generic.getResult(0);
}

/// `index` * `scale` + `offset` on index values, folding the trivial cases.
Value scaleAndShift(OpBuilder &b, Location loc, Value index, int64_t scale, int64_t offset) {
  if (scale != 1)
    index = arith::MulIOp::create(b, loc, index, arith::ConstantIndexOp::create(b, loc, scale));
  if (offset != 0)
    index = arith::AddIOp::create(b, loc, index, arith::ConstantIndexOp::create(b, loc, offset));
  return index;
}

/// Static offsets, sizes and unit strides of a slice as OpFoldResults.
struct SliceBounds {
  SmallVector<OpFoldResult> offsets, sizes, strides;

  SliceBounds(OpBuilder &b, ArrayRef<int64_t> offsetValues, ArrayRef<int64_t> sizeValues) {
    for (auto [offset, size] : llvm::zip(offsetValues, sizeValues)) {
      offsets.push_back(b.getIndexAttr(offset));
      sizes.push_back(b.getIndexAttr(size));
      strides.push_back(b.getIndexAttr(1));
    }
  }
};

//===----------------------------------------------------------------------===//
// Shape, Size
//===----------------------------------------------------------------------===//

/// Shape: the input's dims [start, end), clamped as ONNX does, as a constant.
struct LowerShape : SingleResultPattern<onnx::ShapeOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::ShapeOp op, OpAdaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    RankedTensorType dataType = staticType(op.getData());
    if (!dataType) return rewriter.notifyMatchFailure(op, "the input shape is not static");
    int64_t rank = dataType.getRank();
    auto clampToRank = [&](int64_t dim) {
      return std::clamp(dim < 0 ? dim + rank : dim, int64_t(0), rank);
    };
    int64_t start = clampToRank(op.getStart()), end = clampToRank(op.getEnd().value_or(rank));
    ArrayRef<int64_t> dims = dataType.getShape().slice(start, std::max(end - start, int64_t(0)));
    if (int64_t(dims.size()) != resultType.getNumElements())
      return rewriter.notifyMatchFailure(op, "the result length is not end - start");
    return Value(arith::ConstantOp::create(rewriter, op.getLoc(),
                                           DenseIntElementsAttr::get(resultType, dims)));
  }
};

/// Size: the input's element count as a constant.
struct LowerSize : SingleResultPattern<onnx::SizeOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::SizeOp op, OpAdaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    RankedTensorType dataType = staticType(op.getData());
    if (!dataType) return rewriter.notifyMatchFailure(op, "the input shape is not static");
    return Value(arith::ConstantOp::create(
        rewriter, op.getLoc(),
        DenseIntElementsAttr::get(resultType, ArrayRef<int64_t>{dataType.getNumElements()})));
  }
};

//===----------------------------------------------------------------------===//
// Reshapes, Transpose, Expand, Tile
//===----------------------------------------------------------------------===//

/// Reshape, Flatten, Squeeze, Unsqueeze: the elements keep their order, so
/// each is a reshape of its first operand to the static result shape.
template <typename OpTy>
struct LowerReshapeLike : SingleResultPattern<OpTy> {
  using SingleResultPattern<OpTy>::SingleResultPattern;
  FailureOr<Value> lower(OpTy op, typename OpTy::Adaptor adaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getOperands()[0];
    RankedTensorType inputType = staticType(input);
    if (!inputType || inputType.getNumElements() != resultType.getNumElements())
      return rewriter.notifyMatchFailure(op, "the input is not static with the result's size");
    return reshapeTo(rewriter, op.getLoc(), input, resultType.getShape());
  }
};

/// Transpose by `perm`, or reversing the dims when it is absent.
struct LowerTranspose : SingleResultPattern<onnx::TransposeOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::TransposeOp op, OpAdaptor adaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    int64_t rank = resultType.getRank();
    SmallVector<int64_t> perm;
    if (auto given = op.getPerm()) perm.assign(given->begin(), given->end());
    else perm = llvm::to_vector(llvm::reverse(llvm::seq<int64_t>(0, rank)));
    if (int64_t(perm.size()) != rank || !isPermutationVector(perm))
      return rewriter.notifyMatchFailure(op, "perm is not a permutation of the dims");
    Location loc = op.getLoc();
    return linalg::TransposeOp::create(rewriter, loc, adaptor.getData(),
                                       emptyTensor(rewriter, loc, resultType), perm)
        ->getResult(0);
  }
};

/// Expand: numpy broadcasting of the input to the (static) result shape.
struct LowerExpand : SingleResultPattern<onnx::ExpandOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::ExpandOp op, OpAdaptor adaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    RankedTensorType inputType = staticType(adaptor.getInput());
    if (!inputType || inputType.getRank() > resultType.getRank())
      return rewriter.notifyMatchFailure(op, "the input does not broadcast to the result");
    return buildElementwise(rewriter, op.getLoc(), resultType, adaptor.getInput(),
                            [](OpBuilder &, Location, ValueRange args) { return args[0]; });
  }
};

/// Tile: result index i reads the input at i mod (input dim).
struct LowerTile : SingleResultPattern<onnx::TileOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::TileOp op, OpAdaptor adaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    RankedTensorType inputType = staticType(adaptor.getInput());
    if (!inputType || inputType.getRank() != resultType.getRank())
      return rewriter.notifyMatchFailure(op, "the input is not static of the result's rank");
    return buildRemap(rewriter, op.getLoc(), resultType, adaptor.getInput(),
                      [&](OpBuilder &b, Location loc, int64_t dim, Value index) -> Value {
                        int64_t size = inputType.getDimSize(dim);
                        if (size == resultType.getDimSize(dim)) return index;
                        return arith::RemUIOp::create(b, loc, index,
                                                      arith::ConstantIndexOp::create(b, loc, size));
                      });
  }
};

//===----------------------------------------------------------------------===//
// Concat, Split, Slice
//===----------------------------------------------------------------------===//

/// Concat: each input inserted into an empty result at its offset on `axis`.
struct LowerConcat : SingleResultPattern<onnx::ConcatOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::ConcatOp op, OpAdaptor adaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    auto axis = onnx::normalizeAxis(op.getAxis(), resultType.getRank());
    if (!axis) return rewriter.notifyMatchFailure(op, "axis is out of range");
    int64_t total = 0;
    for (Value input : adaptor.getInputs()) {
      RankedTensorType type = staticType(input);
      if (!type || type.getRank() != resultType.getRank())
        return rewriter.notifyMatchFailure(op, "an input is not static of the result's rank");
      total += type.getDimSize(*axis);
    }
    if (total != resultType.getDimSize(*axis))
      return rewriter.notifyMatchFailure(op, "the inputs do not add up to the result on axis");

    Location loc = op.getLoc();
    Value result = emptyTensor(rewriter, loc, resultType);
    SmallVector<int64_t> offsets(resultType.getRank(), 0);
    for (Value input : adaptor.getInputs()) {
      auto type = cast<RankedTensorType>(input.getType());
      if (type.getNumElements() != 0) {
        // linalg.copy into the slot, so that the insert_slice copies nothing
        // once bufferized (a strided memref.copy needs a runtime routine).
        SliceBounds bounds(rewriter, offsets, type.getShape());
        Value slot = tensor::ExtractSliceOp::create(rewriter, loc, result, bounds.offsets,
                                                    bounds.sizes, bounds.strides);
        Value copied = linalg::CopyOp::create(rewriter, loc, input, slot)->getResult(0);
        result = tensor::InsertSliceOp::create(rewriter, loc, copied, result, bounds.offsets,
                                               bounds.sizes, bounds.strides);
      }
      offsets[*axis] += type.getDimSize(*axis);
    }
    return result;
  }
};

/// Split: consecutive slices on `axis` whose sizes are the static result
/// types' (shape inference computed them from `split` or num_outputs).
struct LowerSplit : OpConversionPattern<onnx::SplitOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::SplitOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    RankedTensorType inputType = staticType(adaptor.getInput());
    if (!inputType) return rewriter.notifyMatchFailure(op, "the input shape is not static");
    auto axis = onnx::normalizeAxis(op.getAxis(), inputType.getRank());
    if (!axis) return rewriter.notifyMatchFailure(op, "axis is out of range");
    SmallVector<RankedTensorType> resultTypes;
    int64_t total = 0;
    for (Value result : op.getOutputs()) {
      auto type = staticResultType(rewriter, *getTypeConverter(), op, result);
      if (failed(type)) return failure();
      if (type->getRank() != inputType.getRank())
        return rewriter.notifyMatchFailure(op, "a result's rank is not the input's");
      resultTypes.push_back(*type);
      total += type->getDimSize(*axis);
    }
    if (total != inputType.getDimSize(*axis))
      return rewriter.notifyMatchFailure(op, "the results do not add up to the input on axis");

    Location loc = op.getLoc();
    SmallVector<Value> results;
    int64_t offset = 0;
    for (RankedTensorType type : resultTypes) {
      if (type.getNumElements() == 0) {
        results.push_back(emptyTensor(rewriter, loc, type));
        continue;
      }
      // A copy, not an extract_slice: returning a strided view would need a
      // runtime copy routine.
      results.push_back(buildRemap(rewriter, loc, type, adaptor.getInput(),
                                   [&](OpBuilder &b, Location nestedLoc, int64_t dim,
                                       Value index) {
                                     return scaleAndShift(b, nestedLoc, index, 1,
                                                          dim == *axis ? offset : 0);
                                   }));
      offset += type.getDimSize(*axis);
    }
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// Where a Slice starts and how it steps on every dim of the data (ONNX's
/// clamping of starts and ends applied), and the sizes that follow.
struct SliceSpec {
  SmallVector<int64_t> starts, steps, sizes;
};

/// The constant starts/ends/axes/steps of `op` resolved against `shape`,
/// whose dims are all non-zero.
FailureOr<SliceSpec> resolveSlice(onnx::SliceOp op, ArrayRef<int64_t> shape,
                                  ConversionPatternRewriter &rewriter) {
  int64_t rank = shape.size();
  auto starts = onnx::getConstantInts(op.getStarts());
  auto ends = onnx::getConstantInts(op.getEnds());
  if (!starts || !ends || starts->size() != ends->size())
    return rewriter.notifyMatchFailure(op, "starts and ends are not constants of one length");
  SmallVector<int64_t> axes = llvm::to_vector(llvm::seq<int64_t>(0, starts->size()));
  if (!isa<NoneType>(op.getAxes().getType())) {
    auto given = onnx::getConstantInts(op.getAxes());
    if (!given) return rewriter.notifyMatchFailure(op, "axes is not a constant");
    axes = *given;
  }
  SmallVector<int64_t> steps(starts->size(), 1);
  if (!isa<NoneType>(op.getSteps().getType())) {
    auto given = onnx::getConstantInts(op.getSteps());
    if (!given) return rewriter.notifyMatchFailure(op, "steps is not a constant");
    steps = *given;
  }
  if (axes.size() != starts->size() || steps.size() != starts->size())
    return rewriter.notifyMatchFailure(op, "starts, ends, axes and steps differ in length");

  SliceSpec spec{SmallVector<int64_t>(rank, 0), SmallVector<int64_t>(rank, 1),
                 SmallVector<int64_t>(shape)};
  for (auto [i, axisValue] : llvm::enumerate(axes)) {
    auto axis = onnx::normalizeAxis(axisValue, rank);
    int64_t step = steps[i];
    if (!axis || step == 0) return rewriter.notifyMatchFailure(op, "an axis or step is invalid");
    int64_t dim = shape[*axis], start = (*starts)[i], end = (*ends)[i];
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t size;
    if (step > 0) {
      start = std::clamp(start, int64_t(0), dim);
      end = std::clamp(end, int64_t(0), dim);
      size = end > start ? llvm::divideCeil(end - start, step) : 0;
    } else {
      start = std::clamp(start, int64_t(0), dim - 1);
      end = std::clamp(end, int64_t(-1), dim - 1);
      // -step in unsigned arithmetic: a step of INT64_MIN has no positive twin.
      uint64_t stride = uint64_t(0) - uint64_t(step);
      size = start > end ? int64_t(llvm::divideCeil(uint64_t(start - end), stride)) : 0;
    }
    spec.starts[*axis] = start;
    spec.steps[*axis] = step;
    spec.sizes[*axis] = size;
  }
  return spec;
}

/// Slice: a generic reading the data at start + step * i on every dim,
/// negative steps included.
struct LowerSlice : SingleResultPattern<onnx::SliceOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::SliceOp op, OpAdaptor adaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    RankedTensorType dataType = staticType(adaptor.getData());
    if (!dataType) return rewriter.notifyMatchFailure(op, "the input shape is not static");
    FailureOr<SliceSpec> spec = resolveSlice(op, dataType.getShape(), rewriter);
    if (failed(spec)) return failure();
    if (ArrayRef<int64_t>(spec->sizes) != resultType.getShape())
      return rewriter.notifyMatchFailure(op, "the slice's sizes are not the result shape");
    return buildRemap(rewriter, op.getLoc(), resultType, adaptor.getData(),
                      [&](OpBuilder &b, Location loc, int64_t dim, Value index) {
                        return scaleAndShift(b, loc, index, spec->steps[dim], spec->starts[dim]);
                      });
  }
};

//===----------------------------------------------------------------------===//
// Gather, GatherElements
//===----------------------------------------------------------------------===//

/// Gather: result[outer, j..., inner] = data[outer, indices[j...], inner],
/// iterating the result and reading `indices` through a projection.
struct LowerGather : SingleResultPattern<onnx::GatherOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::GatherOp op, OpAdaptor adaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    RankedTensorType dataType = staticType(adaptor.getData());
    RankedTensorType indicesType = staticType(adaptor.getIndices());
    if (!dataType || !indicesType)
      return rewriter.notifyMatchFailure(op, "an operand shape is not static");
    auto axis = onnx::normalizeAxis(op.getAxis(), dataType.getRank());
    if (!axis) return rewriter.notifyMatchFailure(op, "axis is out of range");
    int64_t indicesRank = indicesType.getRank();
    if (resultType.getRank() != dataType.getRank() - 1 + indicesRank)
      return rewriter.notifyMatchFailure(op, "the result rank is not data + indices - 1");

    MLIRContext *context = rewriter.getContext();
    SmallVector<AffineExpr> indicesExprs;
    for (int64_t dim = 0; dim < indicesRank; ++dim)
      indicesExprs.push_back(getAffineDimExpr(*axis + dim, context));
    SmallVector<AffineMap> maps{AffineMap::get(resultType.getRank(), 0, indicesExprs, context),
                                rewriter.getMultiDimIdentityMap(resultType.getRank())};
    SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                               utils::IteratorType::parallel);
    Value data = adaptor.getData();
    int64_t axisSize = dataType.getDimSize(*axis);
    Location loc = op.getLoc();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType, adaptor.getIndices(), emptyTensor(rewriter, loc, resultType),
        maps, iterators, [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
          SmallVector<Value> coords = iterationIndices(b, nestedLoc, 0, *axis);
          coords.push_back(wrapIndex(b, nestedLoc, args[0], axisSize));
          coords.append(iterationIndices(b, nestedLoc, *axis + indicesRank, resultType.getRank()));
          Value element = tensor::ExtractOp::create(b, nestedLoc, data, coords);
          linalg::YieldOp::create(b, nestedLoc, element);
        });
    return generic.getResult(0);
  }
};

/// GatherElements: result[i] = data[i with i[axis] replaced by indices[i]].
struct LowerGatherElements : SingleResultPattern<onnx::GatherElementsOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::GatherElementsOp op, OpAdaptor adaptor,
                         RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    RankedTensorType dataType = staticType(adaptor.getData());
    if (!dataType || dataType.getRank() != resultType.getRank())
      return rewriter.notifyMatchFailure(op, "the data is not static of the result's rank");
    auto axis = onnx::normalizeAxis(op.getAxis(), dataType.getRank());
    if (!axis) return rewriter.notifyMatchFailure(op, "axis is out of range");
    Value data = adaptor.getData();
    int64_t axisSize = dataType.getDimSize(*axis);
    return buildElementwise(
        rewriter, op.getLoc(), resultType, adaptor.getIndices(),
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          SmallVector<Value> coords = iterationIndices(b, loc, 0, resultType.getRank());
          coords[*axis] = wrapIndex(b, loc, args[0], axisSize);
          return tensor::ExtractOp::create(b, loc, data, coords);
        });
  }
};

/// GatherND: result[b..., j..., r...] = data[b..., indices[b..., j..., :], r...], the
/// index tuple read element by element from `indices`.
struct LowerGatherND : SingleResultPattern<onnx::GatherNDOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::GatherNDOp op, OpAdaptor adaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    RankedTensorType dataType = staticType(adaptor.getData());
    RankedTensorType indicesType = staticType(adaptor.getIndices());
    if (!dataType || !indicesType)
      return rewriter.notifyMatchFailure(op, "an operand shape is not static");
    int64_t batch = op.getBatchDims(), depth = indicesType.getShape().back();
    int64_t tupleDims = indicesType.getRank() - 1;
    if (batch + depth > dataType.getRank() ||
        resultType.getRank() != tupleDims + dataType.getRank() - batch - depth)
      return rewriter.notifyMatchFailure(op, "the result rank does not follow the operands'");
    Value data = adaptor.getData(), indices = adaptor.getIndices();
    Location loc = op.getLoc();
    SmallVector<utils::IteratorType> iterators(resultType.getRank(), utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType, ValueRange{}, emptyTensor(rewriter, loc, resultType),
        rewriter.getMultiDimIdentityMap(resultType.getRank()), iterators,
        [&](OpBuilder &b, Location nestedLoc, ValueRange) {
          SmallVector<Value> tuple = iterationIndices(b, nestedLoc, 0, tupleDims);
          SmallVector<Value> coords(tuple.begin(), tuple.begin() + batch);
          for (int64_t d = 0; d < depth; ++d) {
            SmallVector<Value> at(tuple);
            at.push_back(arith::ConstantIndexOp::create(b, nestedLoc, d));
            Value index = tensor::ExtractOp::create(b, nestedLoc, indices, at);
            coords.push_back(wrapIndex(b, nestedLoc, index, dataType.getDimSize(batch + d)));
          }
          coords.append(iterationIndices(b, nestedLoc, tupleDims, resultType.getRank()));
          linalg::YieldOp::create(
              b, nestedLoc, tensor::ExtractOp::create(b, nestedLoc, data, coords).getResult());
        });
    return generic.getResult(0);
  }
};

//===----------------------------------------------------------------------===//
// ScatterND, TensorScatter
//===----------------------------------------------------------------------===//

/// Combines an element of the data with an update under ScatterND's
/// `reduction` (add, mul, max or min); `elementType` has the signedness.
/// On bools, add and mul are numpy's: or and and.
Value combineScatter(OpBuilder &b, Location loc, StringRef reduction, Type elementType,
                     Value current, Value update) {
  if (isBool(elementType) && reduction == "add")
    return arith::OrIOp::create(b, loc, current, update);
  if (isBool(elementType) && reduction == "mul")
    return arith::AndIOp::create(b, loc, current, update);
  bool isFloat = isa<FloatType>(elementType);
  bool isUnsigned = isUnsignedInteger(elementType) || isBool(elementType);
  if (reduction == "add")
    return isFloat ? Value(arith::AddFOp::create(b, loc, current, update))
                   : Value(arith::AddIOp::create(b, loc, current, update));
  if (reduction == "mul")
    return isFloat ? Value(arith::MulFOp::create(b, loc, current, update))
                   : Value(arith::MulIOp::create(b, loc, current, update));
  if (reduction == "max") {
    if (isFloat) return arith::MaximumFOp::create(b, loc, current, update);
    if (isUnsigned) return arith::MaxUIOp::create(b, loc, current, update);
    return arith::MaxSIOp::create(b, loc, current, update);
  }
  if (isFloat) return arith::MinimumFOp::create(b, loc, current, update);
  if (isUnsigned) return arith::MinUIOp::create(b, loc, current, update);
  return arith::MinSIOp::create(b, loc, current, update);
}

/// ScatterND: an scf.for over the index tuples, in order (a later update of
/// the same slice sees the earlier ones), each writing its slice of
/// data.shape[k:] into the running result, combined with the slice's current
/// value under `reduction` unless it is "none".
struct LowerScatterND : SingleResultPattern<onnx::ScatterNDOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::ScatterNDOp op, OpAdaptor adaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    StringRef reduction = op.getReduction();
    if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction))
      return rewriter.notifyMatchFailure(op, "unknown reduction");
    RankedTensorType dataType = staticType(adaptor.getData());
    RankedTensorType indicesType = staticType(adaptor.getIndices());
    RankedTensorType updatesType = staticType(adaptor.getUpdates());
    if (!dataType || !indicesType || !updatesType || indicesType.getRank() == 0)
      return rewriter.notifyMatchFailure(op, "an operand is not static (or indices is a scalar)");
    int64_t depth = indicesType.getShape().back();
    if (depth > dataType.getRank())
      return rewriter.notifyMatchFailure(op, "index tuples are longer than the data's rank");
    ArrayRef<int64_t> sliceShape = dataType.getShape().drop_front(depth);
    SmallVector<int64_t> expectedUpdates(indicesType.getShape().drop_back());
    expectedUpdates.append(sliceShape.begin(), sliceShape.end());
    if (updatesType.getShape() != ArrayRef<int64_t>(expectedUpdates))
      return rewriter.notifyMatchFailure(op, "updates is not indices.shape[:-1] + data.shape[k:]");
    int64_t tupleCount = llvm::product_of(indicesType.getShape().drop_back());
    if (tupleCount == 0) return adaptor.getData();

    Location loc = op.getLoc();
    auto sliceType = RankedTensorType::get(sliceShape, dataType.getElementType());
    Value tuples = reshapeTo(rewriter, loc, adaptor.getIndices(), {tupleCount, depth});
    SmallVector<int64_t> updatesShape{tupleCount};
    updatesShape.append(sliceShape.begin(), sliceShape.end());
    Value updates = reshapeTo(rewriter, loc, adaptor.getUpdates(), updatesShape);
    Type elementType = getElementTypeOrSelf(op.getData().getType());
    // The updates go into a copy: bufferization would otherwise write them
    // into the data's buffer, which may be an input the caller owns.
    Value initial = linalg::CopyOp::create(rewriter, loc, adaptor.getData(),
                                           emptyTensor(rewriter, loc, resultType))
                        ->getResult(0);

    auto loop = scf::ForOp::create(
        rewriter, loc, arith::ConstantIndexOp::create(rewriter, loc, 0),
        arith::ConstantIndexOp::create(rewriter, loc, tupleCount),
        arith::ConstantIndexOp::create(rewriter, loc, 1), initial,
        [&](OpBuilder &b, Location loopLoc, Value tuple, ValueRange iterArgs) {
          // The slice of the result this tuple addresses: [tuple..., :, ...].
          SmallVector<OpFoldResult> offsets, sizes, strides;
          for (int64_t dim = 0; dim < dataType.getRank(); ++dim) {
            strides.push_back(b.getIndexAttr(1));
            if (dim >= depth) {
              offsets.push_back(b.getIndexAttr(0));
              sizes.push_back(b.getIndexAttr(dataType.getDimSize(dim)));
              continue;
            }
            Value position = arith::ConstantIndexOp::create(b, loopLoc, dim);
            Value index =
                tensor::ExtractOp::create(b, loopLoc, tuples, ValueRange{tuple, position});
            offsets.push_back(wrapIndex(b, loopLoc, index, dataType.getDimSize(dim)));
            sizes.push_back(b.getIndexAttr(1));
          }
          // This tuple's updates: updates[tuple, :, ...].
          SmallVector<OpFoldResult> updateOffsets{tuple}, updateSizes{b.getIndexAttr(1)},
              updateStrides{b.getIndexAttr(1)};
          for (int64_t size : sliceShape) {
            updateOffsets.push_back(b.getIndexAttr(0));
            updateSizes.push_back(b.getIndexAttr(size));
            updateStrides.push_back(b.getIndexAttr(1));
          }
          Value update = tensor::ExtractSliceOp::create(b, loopLoc, sliceType, updates,
                                                        updateOffsets, updateSizes, updateStrides);
          // Computed in the result's own slot, so that inserting it back copies nothing.
          Value slot = tensor::ExtractSliceOp::create(b, loopLoc, sliceType, iterArgs[0], offsets,
                                                      sizes, strides);
          SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(sliceType.getRank()));
          SmallVector<utils::IteratorType> iterators(sliceType.getRank(),
                                                     utils::IteratorType::parallel);
          auto combined = linalg::GenericOp::create(
              b, loopLoc, sliceType, update, slot, maps, iterators,
              [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
                Value result = reduction == "none"
                                   ? args[0]
                                   : combineScatter(nested, nestedLoc, reduction, elementType,
                                                    args[1], args[0]);
                linalg::YieldOp::create(nested, nestedLoc, result);
              });
          Value written = tensor::InsertSliceOp::create(b, loopLoc, combined.getResult(0),
                                                        iterArgs[0], offsets, sizes, strides);
          scf::YieldOp::create(b, loopLoc, written);
        });
    return loop.getResult(0);
  }
};

/// TensorScatter (opset 24): present[b, ..., p, ...] is update[b, ..., p - w, ...]
/// where w = write_indices[b] and 0 <= p - w < the update's length on `axis`
/// (in circular mode p - w is taken modulo the cache length), else past[...].
struct LowerTensorScatter : SingleResultPattern<onnx::TensorScatterOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::TensorScatterOp op, OpAdaptor adaptor,
                         RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    StringRef mode = op.getMode();
    if (mode != "linear" && mode != "circular")
      return rewriter.notifyMatchFailure(op, "mode is neither linear nor circular");
    RankedTensorType updateType = staticType(adaptor.getUpdate());
    if (!updateType || updateType.getRank() != resultType.getRank())
      return rewriter.notifyMatchFailure(op, "the update is not static of the cache's rank");
    auto axis = onnx::normalizeAxis(op.getAxis(), resultType.getRank());
    // The batch dim (0) comes before the sequence axis.
    if (!axis || *axis == 0) return rewriter.notifyMatchFailure(op, "axis is not after the batch");
    int64_t updateLength = updateType.getDimSize(*axis);
    if (updateLength == 0) return adaptor.getPastCache();

    int64_t cacheLength = resultType.getDimSize(*axis);
    Value writeIndices = adaptor.getWriteIndices();
    bool hasWriteIndices = !isa<NoneType>(writeIndices.getType());
    bool circular = mode == "circular";
    Value update = adaptor.getUpdate();
    return buildElementwise(
        rewriter, op.getLoc(), resultType, adaptor.getPastCache(),
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          SmallVector<Value> coords = iterationIndices(b, loc, 0, resultType.getRank());
          Value zero = arith::ConstantIndexOp::create(b, loc, 0);
          Value offset = coords[*axis];
          if (hasWriteIndices) {
            Value start = tensor::ExtractOp::create(b, loc, writeIndices, coords[0]);
            offset = arith::SubIOp::create(
                b, loc, offset, arith::IndexCastOp::create(b, loc, b.getIndexType(), start));
          }
          if (circular) {
            Value length = arith::ConstantIndexOp::create(b, loc, cacheLength);
            Value remainder = arith::RemSIOp::create(b, loc, offset, length);
            Value negative =
                arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, remainder, zero);
            offset = arith::SelectOp::create(
                b, loc, negative, arith::AddIOp::create(b, loc, remainder, length), remainder);
          }
          Value afterStart = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, offset, zero);
          Value beforeEnd =
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, offset,
                                    arith::ConstantIndexOp::create(b, loc, updateLength));
          Value written = arith::AndIOp::create(b, loc, afterStart, beforeEnd);
          // Read the update at an in-bounds position either way; select after.
          coords[*axis] = arith::SelectOp::create(b, loc, written, offset, zero);
          Value updated = tensor::ExtractOp::create(b, loc, update, coords);
          return arith::SelectOp::create(b, loc, written, updated, args[0]);
        });
  }
};

//===----------------------------------------------------------------------===//
// ConstantOfShape, Range, Trilu
//===----------------------------------------------------------------------===//

/// ConstantOfShape: the result filled with `value` (f32 0 when absent).
struct LowerConstantOfShape : SingleResultPattern<onnx::ConstantOfShapeOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::ConstantOfShapeOp op, OpAdaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    Type elementType = resultType.getElementType();
    TypedAttr fill = rewriter.getZeroAttr(elementType);
    if (ElementsAttr value = op.getValueAttr()) {
      auto dense = dyn_cast<DenseElementsAttr>(value);
      if (!dense || dense.getNumElements() != 1 ||
          signless(dense.getElementType()) != elementType)
        return rewriter.notifyMatchFailure(op, "value is not one element of the result's type");
      if (dense.getElementType() != elementType) dense = dense.bitcast(elementType);
      fill = dense.getSplatValue<TypedAttr>();
    }
    Location loc = op.getLoc();
    return filledTensor(rewriter, loc, resultType, arith::ConstantOp::create(rewriter, loc, fill));
  }
};

/// Range: element i is start + i * delta, in the element type.
struct LowerRange : SingleResultPattern<onnx::RangeOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::RangeOp op, OpAdaptor adaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    if (resultType.getRank() != 1) return rewriter.notifyMatchFailure(op, "the result is not 1-D");
    Type elementType = resultType.getElementType();
    return buildElementwise(
        rewriter, op.getLoc(), resultType, {adaptor.getStart(), adaptor.getDelta()},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value step = arith::IndexCastOp::create(b, loc, b.getI64Type(),
                                                  linalg::IndexOp::create(b, loc, 0));
          if (isa<FloatType>(elementType)) {
            step = arith::SIToFPOp::create(b, loc, elementType, step);
            return arith::AddFOp::create(b, loc, args[0],
                                         arith::MulFOp::create(b, loc, step, args[1]));
          }
          step = castScalar(b, loc, step, b.getI64Type(), elementType);
          return arith::AddIOp::create(b, loc, args[0],
                                       arith::MulIOp::create(b, loc, step, args[1]));
        });
  }
};

/// Trilu: keeps element (i, j) of the last two dims where j - i >= k (upper)
/// or j - i <= k (lower) and zeroes the rest; k is read at run time.
struct LowerTrilu : SingleResultPattern<onnx::TriluOp> {
  using SingleResultPattern::SingleResultPattern;
  FailureOr<Value> lower(onnx::TriluOp op, OpAdaptor adaptor, RankedTensorType resultType,
                         ConversionPatternRewriter &rewriter) const override {
    int64_t rank = resultType.getRank();
    if (rank < 2) return rewriter.notifyMatchFailure(op, "the input has fewer than two dims");
    bool hasK = !isa<NoneType>(adaptor.getK().getType());
    auto kType = dyn_cast<RankedTensorType>(adaptor.getK().getType());
    if (hasK && (!kType || kType.getNumElements() != 1))
      return rewriter.notifyMatchFailure(op, "k is not a single integer");
    Location loc = op.getLoc();
    Value diagonal = arith::ConstantIndexOp::create(rewriter, loc, 0);
    if (hasK) {
      SmallVector<Value> zeros(kType.getRank(), diagonal);
      Value k = tensor::ExtractOp::create(rewriter, loc, adaptor.getK(), zeros);
      diagonal = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), k);
    }
    auto keep = op.getUpper() ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle;
    Type elementType = resultType.getElementType();
    return buildElementwise(
        rewriter, loc, resultType, adaptor.getInput(),
        [&](OpBuilder &b, Location nestedLoc, ValueRange args) -> Value {
          Value row = linalg::IndexOp::create(b, nestedLoc, rank - 2);
          Value column = linalg::IndexOp::create(b, nestedLoc, rank - 1);
          Value offset = arith::SubIOp::create(b, nestedLoc, column, row);
          Value kept = arith::CmpIOp::create(b, nestedLoc, keep, offset, diagonal);
          return arith::SelectOp::create(b, nestedLoc, kept, args[0],
                                         scalarConstant(b, nestedLoc, elementType, 0));
        });
  }
};

} // namespace

void populateShapePatterns(TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LowerShape, LowerSize, LowerReshapeLike<onnx::ReshapeOp>,
               LowerReshapeLike<onnx::FlattenOp>, LowerReshapeLike<onnx::SqueezeOp>,
               LowerReshapeLike<onnx::UnsqueezeOp>, LowerTranspose, LowerExpand, LowerTile,
               LowerConcat, LowerSplit, LowerSlice, LowerGather, LowerGatherElements,
               LowerGatherND, LowerScatterND, LowerTensorScatter, LowerConstantOfShape, LowerRange, LowerTrilu>(
      converter, patterns.getContext());
}

} // namespace llmc::onnx_to_linalg
