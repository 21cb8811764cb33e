//===- OnnxShapeInference.cpp - result types of onnx ops ------------------===//
//
// Each op computes its result types from its operands. Element types are
// always known (the importer relies on that to type results as it goes);
// shapes are as precise as the operands and constant shape subgraphs allow,
// with `?` for unknown dims and unranked tensors where even the rank is
// unknown.
//
//===----------------------------------------------------------------------===//
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/ShapeHelpers.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace llmc::onnx {

namespace {
using Shape = SmallVector<int64_t>;
constexpr int64_t kDynamic = ShapedType::kDynamic;

Type elementTypeOf(Value value) {
  return cast<ShapedType>(value.getType()).getElementType();
}

std::optional<Shape> shapeOf(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type) return std::nullopt;
  return Shape(type.getShape());
}

bool isNone(Value value) { return isa<NoneType>(value.getType()); }

Type tensorOf(std::optional<Shape> shape, Type elementType) {
  if (!shape) return UnrankedTensorType::get(elementType);
  return RankedTensorType::get(*shape, elementType);
}

int64_t addDims(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) ? kDynamic : a + b;
}

/// a * b, unknown when either is, or when the product overflows (a
/// malformed model; the importer's dim limits keep real ones far below).
int64_t mulDims(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (ShapedType::isDynamic(a) || ShapedType::isDynamic(b)) return kDynamic;
  int64_t product;
  if (llvm::MulOverflow(a, b, product)) return kDynamic;
  return product;
}

/// The type of `like`, but with `elementType` when given.
Type typeLike(Value like, Type elementType = nullptr) {
  return tensorOf(shapeOf(like), elementType ? elementType : elementTypeOf(like));
}

/// One result with the type of `like`, but `elementType` when given.
LogicalResult sameAs(Value like, SmallVectorImpl<Type> &resultTypes,
                     Type elementType = nullptr) {
  resultTypes.push_back(typeLike(like, elementType));
  return success();
}

/// The shape with the dims from `axis` on set to 1 (normalisation statistics).
std::optional<Shape> statisticsShape(Value input, int64_t axis) {
  auto shape = shapeOf(input);
  if (!shape) return std::nullopt;
  auto first = normalizeAxis(axis, shape->size());
  if (!first) return std::nullopt;
  for (size_t i = *first; i < shape->size(); ++i) (*shape)[i] = 1;
  return shape;
}
} // namespace

//===----------------------------------------------------------------------===//
// Families
//===----------------------------------------------------------------------===//

LogicalResult inferUnaryShapes(Operation *op, SmallVectorImpl<Type> &resultTypes) {
  Value input = op->getOperand(0);
  Type elementType = elementTypeOf(input);
  if (isa<IsNaNOp, IsInfOp, NotOp>(op)) elementType = IntegerType::get(op->getContext(), 1);
  return sameAs(input, resultTypes, elementType);
}

LogicalResult inferBroadcastShapes(Operation *op, SmallVectorImpl<Type> &resultTypes) {
  if (op->getNumOperands() == 0) return op->emitOpError("needs at least one input");
  SmallVector<Shape> shapes;
  bool allRanked = true;
  for (Value operand : op->getOperands()) {
    if (auto shape = shapeOf(operand)) shapes.push_back(*shape);
    else allRanked = false;
  }
  Type elementType = elementTypeOf(op->getOperand(0));
  if (isa<EqualOp, LessOp, LessOrEqualOp, GreaterOp, GreaterOrEqualOp>(op))
    elementType = IntegerType::get(op->getContext(), 1);
  if (!allRanked) {
    resultTypes.push_back(UnrankedTensorType::get(elementType));
    return success();
  }
  SmallVector<ArrayRef<int64_t>> refs(shapes.begin(), shapes.end());
  auto result = broadcastShapes(refs);
  if (failed(result)) return op->emitOpError("operands do not broadcast");
  resultTypes.push_back(RankedTensorType::get(*result, elementType));
  return success();
}

LogicalResult inferReduceShapes(Operation *op, int64_t keepdims, int64_t noopWithEmptyAxes,
                                SmallVectorImpl<Type> &resultTypes) {
  Value data = op->getOperand(0);
  Value axesValue = op->getOperand(1);
  auto shape = shapeOf(data);
  std::optional<Shape> axes = isNone(axesValue) ? Shape{} : getConstantInts(axesValue);
  if (shape && !axes && keepdims) {
    // Axes known only at run time: with keepdims the rank is still known.
    resultTypes.push_back(RankedTensorType::get(Shape(shape->size(), kDynamic),
                                                elementTypeOf(data)));
    return success();
  }
  if (!shape || !axes) {
    resultTypes.push_back(UnrankedTensorType::get(elementTypeOf(data)));
    return success();
  }
  if (axes->empty()) {
    if (noopWithEmptyAxes) return sameAs(data, resultTypes);
    for (size_t i = 0; i < shape->size(); ++i) axes->push_back(i);
  }
  SmallVector<bool> reduced(shape->size(), false);
  for (int64_t axis : *axes) {
    auto a = normalizeAxis(axis, shape->size());
    if (!a) return op->emitOpError("reduction axis ") << axis << " out of range";
    reduced[*a] = true;
  }
  Shape result;
  for (auto [i, dim] : llvm::enumerate(*shape)) {
    if (!reduced[i]) result.push_back(dim);
    else if (keepdims) result.push_back(1);
  }
  resultTypes.push_back(RankedTensorType::get(result, elementTypeOf(data)));
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise and normalisation ops
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  resultTypes.push_back(getValue().getType());
  return success();
}

LogicalResult ClipOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return inferUnaryShapes(getOperation(), resultTypes);
}

LogicalResult WhereOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  SmallVector<Type> broadcast;
  if (failed(inferBroadcastShapes(getOperation(), broadcast))) return failure();
  auto type = cast<TensorType>(broadcast[0]);
  resultTypes.push_back(type.clone(elementTypeOf(getX())));
  return success();
}

LogicalResult CastOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeForOnnxDataType(getContext(), getTo());
  if (!elementType) return emitOpError("unsupported target data type ") << getTo();
  return sameAs(getInput(), resultTypes, elementType);
}

LogicalResult CastLikeOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return sameAs(getInput(), resultTypes, elementTypeOf(getTargetType()));
}

LogicalResult ArgMaxOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type i64 = IntegerType::get(getContext(), 64);
  auto shape = shapeOf(getData());
  if (!shape) return resultTypes.push_back(UnrankedTensorType::get(i64)), success();
  auto axis = normalizeAxis(getAxis(), shape->size());
  if (!axis) return emitOpError("axis out of range");
  if (getKeepdims()) (*shape)[*axis] = 1;
  else shape->erase(shape->begin() + *axis);
  resultTypes.push_back(RankedTensorType::get(*shape, i64));
  return success();
}

LogicalResult CumSumOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return sameAs(getX(), resultTypes);
}

LogicalResult SoftmaxOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return sameAs(getInput(), resultTypes);
}

LogicalResult LayerNormalizationOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  resultTypes.push_back(typeLike(getX()));
  Type f32 = Float32Type::get(getContext());
  resultTypes.push_back(tensorOf(statisticsShape(getX(), getAxis()), f32));
  resultTypes.push_back(tensorOf(statisticsShape(getX(), getAxis()), f32));
  return success();
}

LogicalResult RMSNormalizationOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return sameAs(getX(), resultTypes);
}

LogicalResult SimplifiedLayerNormalizationOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  resultTypes.push_back(typeLike(getX()));
  resultTypes.push_back(tensorOf(statisticsShape(getX(), getAxis()), Float32Type::get(getContext())));
  return success();
}

/// Results of the Skip*LayerNormalization ops: output, mean, inv_std_var, sum.
static LogicalResult inferSkipNormShapes(Value input, SmallVectorImpl<Type> &resultTypes) {
  resultTypes.push_back(typeLike(input));
  Type f32 = Float32Type::get(input.getContext());
  resultTypes.push_back(tensorOf(statisticsShape(input, -1), f32));
  resultTypes.push_back(tensorOf(statisticsShape(input, -1), f32));
  return sameAs(input, resultTypes);
}

LogicalResult SkipSimplifiedLayerNormalizationOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return inferSkipNormShapes(getInput(), resultTypes);
}

LogicalResult SkipLayerNormalizationOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return inferSkipNormShapes(getInput(), resultTypes);
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

LogicalResult ShapeOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type i64 = IntegerType::get(getContext(), 64);
  auto dims = evaluateShapeTensor(getResult());
  Shape shape = {dims ? int64_t(dims->size()) : kDynamic};
  resultTypes.push_back(RankedTensorType::get(shape, i64));
  return success();
}

LogicalResult SizeOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  resultTypes.push_back(RankedTensorType::get({}, IntegerType::get(getContext(), 64)));
  return success();
}

LogicalResult ReshapeOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getData());
  auto target = evaluateShapeEntries(getShape());
  if (!target) return resultTypes.push_back(UnrankedTensorType::get(elementType)), success();
  auto input = shapeOf(getData());
  Shape result;
  for (const ShapeEntry &entry : *target) result.push_back(entry.value);
  int64_t inferredIndex = -1;
  for (auto [i, dim] : llvm::enumerate(result)) {
    if (dim == 0 && !getAllowzero())
      dim = input && i < input->size() ? (*input)[i] : kDynamic;
    else if (dim == -1) {
      if (inferredIndex >= 0) return emitOpError("shape has more than one -1");
      inferredIndex = i;
    } else if (dim < 0 && !ShapedType::isDynamic(dim)) {
      return emitOpError("negative dim ") << dim << " in shape";
    }
  }
  if (inferredIndex >= 0) {
    auto inferred = inferReshapeDim(getData(), *target, inferredIndex, getAllowzero());
    result[inferredIndex] = inferred ? inferred->size : kDynamic;
  }
  resultTypes.push_back(RankedTensorType::get(result, elementType));
  return success();
}

LogicalResult FlattenOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  auto shape = shapeOf(getInput());
  if (!shape) return resultTypes.push_back(UnrankedTensorType::get(elementTypeOf(getInput()))), success();
  int64_t rank = shape->size();
  int64_t axis = getAxis() < 0 ? getAxis() + rank : getAxis();
  if (axis < 0 || axis > rank) return emitOpError("axis out of range");
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t &part = i < axis ? outer : inner;
    int64_t dim = (*shape)[i], product;
    if (!ShapedType::isDynamic(part) && !ShapedType::isDynamic(dim) &&
        llvm::MulOverflow(part, dim, product))
      return emitOpError("the flattened size overflows");
    part = mulDims(part, dim);
  }
  resultTypes.push_back(RankedTensorType::get({outer, inner}, elementTypeOf(getInput())));
  return success();
}

LogicalResult TransposeOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  auto shape = shapeOf(getData());
  if (!shape) return sameAs(getData(), resultTypes);
  Shape perm;
  if (auto p = getPerm()) perm.assign(p->begin(), p->end());
  else for (int64_t i = shape->size() - 1; i >= 0; --i) perm.push_back(i);
  if (perm.size() != shape->size()) return emitOpError("perm does not match the rank");
  Shape result;
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(shape->size())) return emitOpError("perm entry out of range");
    result.push_back((*shape)[p]);
  }
  resultTypes.push_back(RankedTensorType::get(result, elementTypeOf(getData())));
  return success();
}

LogicalResult UnsqueezeOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  auto shape = shapeOf(getData());
  auto axes = getConstantInts(getAxes());
  if (!shape || !axes) return resultTypes.push_back(UnrankedTensorType::get(elementTypeOf(getData()))), success();
  int64_t rank = shape->size() + axes->size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t axis : *axes) {
    auto a = normalizeAxis(axis, rank);
    if (!a || inserted[*a]) return emitOpError("invalid unsqueeze axes");
    inserted[*a] = true;
  }
  Shape result;
  auto next = shape->begin();
  for (int64_t i = 0; i < rank; ++i) result.push_back(inserted[i] ? 1 : *next++);
  resultTypes.push_back(RankedTensorType::get(result, elementTypeOf(getData())));
  return success();
}

LogicalResult SqueezeOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  auto shape = shapeOf(getData());
  std::optional<Shape> axes = isNone(getAxes()) ? Shape{} : getConstantInts(getAxes());
  if (!shape || !axes) return resultTypes.push_back(UnrankedTensorType::get(elementTypeOf(getData()))), success();
  SmallVector<bool> removed(shape->size(), false);
  if (axes->empty()) {
    for (auto [i, dim] : llvm::enumerate(*shape)) {
      if (ShapedType::isDynamic(dim))
        return resultTypes.push_back(UnrankedTensorType::get(elementTypeOf(getData()))), success();
      removed[i] = dim == 1;
    }
  }
  for (int64_t axis : *axes) {
    auto a = normalizeAxis(axis, shape->size());
    if (!a) return emitOpError("squeeze axis out of range");
    if ((*shape)[*a] != 1 && !ShapedType::isDynamic((*shape)[*a]))
      return emitOpError("squeezed dim ") << *a << " is not 1";
    removed[*a] = true;
  }
  Shape result;
  for (auto [i, dim] : llvm::enumerate(*shape))
    if (!removed[i]) result.push_back(dim);
  resultTypes.push_back(RankedTensorType::get(result, elementTypeOf(getData())));
  return success();
}

LogicalResult ExpandOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  auto shape = shapeOf(getInput());
  auto target = evaluateShapeTensor(getShape());
  // Target entries computed at run time (MPT's Where(Equal(shape, -1), 1, shape)): the rank
  // is still the target's length.
  auto targetType = dyn_cast<RankedTensorType>(getShape().getType());
  if (!target && targetType && targetType.getRank() == 1 && targetType.hasStaticShape())
    target = SmallVector<int64_t>(targetType.getDimSize(0), ShapedType::kDynamic);
  if (!shape || !target) return resultTypes.push_back(UnrankedTensorType::get(elementTypeOf(getInput()))), success();
  if (llvm::any_of(*target, [](int64_t d) { return d < 0 && !ShapedType::isDynamic(d); }))
    return emitOpError("negative dim in the target shape");
  auto result = broadcastShapes({*shape, *target});
  if (failed(result)) return emitOpError("input does not broadcast to the target shape");
  resultTypes.push_back(RankedTensorType::get(*result, elementTypeOf(getInput())));
  return success();
}

LogicalResult TileOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  auto shape = shapeOf(getInput());
  auto repeats = evaluateShapeTensor(getRepeats());
  if (!shape || !repeats || repeats->size() != shape->size())
    return resultTypes.push_back(UnrankedTensorType::get(elementTypeOf(getInput()))), success();
  for (auto [dim, repeat] : llvm::zip(*shape, *repeats)) {
    if (repeat < 0 && !ShapedType::isDynamic(repeat)) return emitOpError("negative repeat");
    dim = mulDims(dim, repeat);
  }
  resultTypes.push_back(RankedTensorType::get(*shape, elementTypeOf(getInput())));
  return success();
}

LogicalResult ConcatOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  if (getInputs().empty()) return emitOpError("needs at least one input");
  Type elementType = elementTypeOf(getInputs().front());
  std::optional<Shape> result;
  for (Value input : getInputs()) {
    auto shape = shapeOf(input);
    if (!shape) return resultTypes.push_back(UnrankedTensorType::get(elementType)), success();
    auto axis = normalizeAxis(getAxis(), shape->size());
    if (!axis) return emitOpError("axis out of range");
    if (!result) { result = shape; continue; }
    if (result->size() != shape->size()) return emitOpError("inputs differ in rank");
    for (size_t i = 0; i < shape->size(); ++i) {
      if (int64_t(i) == *axis) (*result)[i] = addDims((*result)[i], (*shape)[i]);
      else if (ShapedType::isDynamic((*result)[i])) (*result)[i] = (*shape)[i];
    }
  }
  resultTypes.push_back(RankedTensorType::get(*result, elementType));
  return success();
}

LogicalResult SplitOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getInput());
  size_t count = getNumResults();
  if (count == 0) return emitOpError("has no outputs");
  auto shape = shapeOf(getInput());
  auto unknown = [&] {
    for (size_t i = 0; i < count; ++i) resultTypes.push_back(UnrankedTensorType::get(elementType));
    return success();
  };
  if (!shape) return unknown();
  auto axis = normalizeAxis(getAxis(), shape->size());
  if (!axis) return emitOpError("axis out of range");
  Shape sizes;
  if (!isNone(getSplit())) {
    auto split = getConstantInts(getSplit());
    if (!split) return unknown();
    sizes = *split;
  } else {
    int64_t dim = (*shape)[*axis];
    int64_t chunk = ShapedType::isDynamic(dim) ? kDynamic : (dim + count - 1) / count;
    for (size_t i = 0; i < count; ++i)
      sizes.push_back(ShapedType::isDynamic(chunk) ? kDynamic
                                                   : std::min<int64_t>(chunk, dim - chunk * i));
  }
  if (sizes.size() != count) return emitOpError("split sizes do not match the outputs");
  for (int64_t size : sizes) {
    Shape part = *shape;
    part[*axis] = size;
    resultTypes.push_back(RankedTensorType::get(part, elementType));
  }
  return success();
}

LogicalResult SliceOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getData());
  auto shape = shapeOf(getData());
  if (!shape) return resultTypes.push_back(UnrankedTensorType::get(elementType)), success();
  auto starts = getConstantInts(getStarts());
  auto ends = getConstantInts(getEnds());
  std::optional<Shape> axes = isNone(getAxes()) ? std::nullopt : getConstantInts(getAxes());
  std::optional<Shape> steps = isNone(getSteps()) ? std::nullopt : getConstantInts(getSteps());
  // The sliced axes, when known; every dim they touch becomes unknown otherwise.
  auto startsType = dyn_cast<RankedTensorType>(getStarts().getType());
  int64_t count = startsType && startsType.hasStaticShape() ? startsType.getNumElements() : -1;
  if (!axes && !isNone(getAxes())) {
    for (int64_t &dim : *shape) dim = kDynamic;
    resultTypes.push_back(RankedTensorType::get(*shape, elementType));
    return success();
  }
  if (!axes) {
    if (count < 0) return resultTypes.push_back(UnrankedTensorType::get(elementType)), success();
    axes.emplace();
    for (int64_t i = 0; i < count; ++i) axes->push_back(i);
  }
  for (auto [i, axisValue] : llvm::enumerate(*axes)) {
    auto axis = normalizeAxis(axisValue, shape->size());
    if (!axis) return emitOpError("slice axis out of range");
    int64_t dim = (*shape)[*axis];
    if (!starts || !ends || ShapedType::isDynamic(dim) || (!steps && !isNone(getSteps()))) {
      // Slicing [0, INT_MAX) with step 1 keeps even an unknown dim.
      bool keepsAll = starts && ends && (*starts)[i] == 0 && (*ends)[i] >= (int64_t(1) << 62) &&
                      (isNone(getSteps()) || (steps && (*steps)[i] == 1));
      (*shape)[*axis] = keepsAll ? dim : kDynamic;
      continue;
    }
    int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0) return emitOpError("slice step is 0");
    auto clampIndex = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v += dim;
      return std::clamp(v, lo, hi);
    };
    int64_t start, end;
    if (step > 0) {
      start = clampIndex((*starts)[i], 0, dim);
      end = clampIndex((*ends)[i], 0, dim);
    } else {
      start = clampIndex((*starts)[i], 0, dim - 1);
      end = (*ends)[i] < -dim ? -1 : clampIndex((*ends)[i], -1, dim - 1);
    }
    int64_t size = step > 0 ? (end - start + step - 1) / step : (start - end - step - 1) / -step;
    (*shape)[*axis] = std::max<int64_t>(size, 0);
  }
  resultTypes.push_back(RankedTensorType::get(*shape, elementType));
  return success();
}

LogicalResult GatherOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getData());
  auto data = shapeOf(getData());
  auto indices = shapeOf(getIndices());
  if (!data || !indices) return resultTypes.push_back(UnrankedTensorType::get(elementType)), success();
  auto axis = normalizeAxis(getAxis(), data->size());
  if (!axis) return emitOpError("axis out of range");
  Shape result(data->begin(), data->begin() + *axis);
  result.append(*indices);
  result.append(data->begin() + *axis + 1, data->end());
  resultTypes.push_back(RankedTensorType::get(result, elementType));
  return success();
}

LogicalResult GatherElementsOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  auto data = shapeOf(getData()), indices = shapeOf(getIndices());
  if (data && indices && data->size() != indices->size())
    return emitOpError("indices and data differ in rank");
  return sameAs(getIndices(), resultTypes, elementTypeOf(getData()));
}

LogicalResult GatherNDOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getData());
  auto data = shapeOf(getData()), indices = shapeOf(getIndices());
  if (!data || !indices || indices->empty() || ShapedType::isDynamic(indices->back()))
    return resultTypes.push_back(UnrankedTensorType::get(elementType)), success();
  int64_t batch = getBatchDims(), depth = indices->back();
  if (batch < 0 || batch >= int64_t(indices->size()) || batch + depth > int64_t(data->size()))
    return emitOpError("batch_dims and the index tuples' length exceed the data's rank");
  Shape result(indices->begin(), indices->end() - 1);
  result.append(data->begin() + batch + depth, data->end());
  resultTypes.push_back(RankedTensorType::get(result, elementType));
  return success();
}

LogicalResult ScatterNDOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return sameAs(getData(), resultTypes);
}

LogicalResult TensorScatterOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return sameAs(getPastCache(), resultTypes);
}

LogicalResult TopKOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type i64 = IntegerType::get(getContext(), 64);
  auto shape = shapeOf(getX());
  if (!shape) {
    resultTypes.push_back(UnrankedTensorType::get(elementTypeOf(getX())));
    resultTypes.push_back(UnrankedTensorType::get(i64));
    return success();
  }
  auto axis = normalizeAxis(getAxis(), shape->size());
  if (!axis) return emitOpError("axis out of range");
  auto k = evaluateShapeTensor(getK());
  if (k && k->size() != 1) return emitOpError("k must hold one value");
  int64_t count = k ? k->front() : ShapedType::kDynamic;
  if (!ShapedType::isDynamic(count) &&
      (count < 0 || (!ShapedType::isDynamic((*shape)[*axis]) && count > (*shape)[*axis])))
    return emitOpError("k = ") << count << " is outside [0, " << (*shape)[*axis] << "]";
  (*shape)[*axis] = count;
  resultTypes.push_back(RankedTensorType::get(*shape, elementTypeOf(getX())));
  resultTypes.push_back(RankedTensorType::get(*shape, i64));
  return success();
}

LogicalResult OneHotOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type element = elementTypeOf(getValues());
  auto shape = shapeOf(getIndices());
  if (!shape) return resultTypes.push_back(UnrankedTensorType::get(element)), success();
  auto axis = normalizeAxis(getAxis(), shape->size() + 1);
  if (!axis) return emitOpError("axis out of range");
  auto depth = evaluateShapeTensor(getDepth());
  if (depth && depth->size() != 1) return emitOpError("depth must hold one value");
  int64_t size = depth ? depth->front() : ShapedType::kDynamic;
  if (!ShapedType::isDynamic(size) && size < 1) return emitOpError("depth must be positive");
  shape->insert(shape->begin() + *axis, size);
  resultTypes.push_back(RankedTensorType::get(*shape, element));
  return success();
}

LogicalResult NonZeroOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type i64 = IntegerType::get(getContext(), 64);
  auto shape = shapeOf(getX());
  int64_t rank = shape ? static_cast<int64_t>(shape->size()) : ShapedType::kDynamic;
  // One row per dim of x, one column per non-zero entry: known only at run time.
  resultTypes.push_back(RankedTensorType::get({rank, ShapedType::kDynamic}, i64));
  return success();
}

LogicalResult ScatterElementsOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return sameAs(getData(), resultTypes);
}

LogicalResult ConstantOfShapeOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = getValue() ? getValue()->getElementType() : Float32Type::get(getContext());
  auto shape = evaluateShapeTensor(getInput());
  if (shape && llvm::any_of(*shape, [](int64_t d) { return d < 0 && !ShapedType::isDynamic(d); }))
    return emitOpError("negative dim in the shape");
  resultTypes.push_back(tensorOf(shape, elementType));
  return success();
}

LogicalResult RangeOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getStart());
  int64_t count = kDynamic;
  auto start = getConstantSplatFloat(getStart());
  auto limit = getConstantSplatFloat(getLimit());
  auto delta = getConstantSplatFloat(getDelta());
  if (start && limit && delta && *delta != 0)
    count = std::max<int64_t>(int64_t(std::ceil((*limit - *start) / *delta)), 0);
  resultTypes.push_back(RankedTensorType::get({count}, elementType));
  return success();
}

LogicalResult TriluOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return sameAs(getInput(), resultTypes);
}

//===----------------------------------------------------------------------===//
// Linear algebra and attention
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getA());
  auto a = shapeOf(getA()), b = shapeOf(getB());
  if (!a || !b || a->empty() || b->empty())
    return resultTypes.push_back(UnrankedTensorType::get(elementType)), success();
  bool vectorA = a->size() == 1, vectorB = b->size() == 1;
  if (vectorA) a->insert(a->begin(), 1);
  if (vectorB) b->push_back(1);
  int64_t k1 = a->back(), k2 = (*b)[b->size() - 2];
  if (!ShapedType::isDynamic(k1) && !ShapedType::isDynamic(k2) && k1 != k2)
    return emitOpError("contraction dims differ: ") << k1 << " vs " << k2;
  auto batch = broadcastShapes({ArrayRef<int64_t>(*a).drop_back(2), ArrayRef<int64_t>(*b).drop_back(2)});
  if (failed(batch)) return emitOpError("batch dims do not broadcast");
  Shape result = *batch;
  if (!vectorA) result.push_back((*a)[a->size() - 2]);
  if (!vectorB) result.push_back(b->back());
  resultTypes.push_back(RankedTensorType::get(result, elementType));
  return success();
}

LogicalResult GemmOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getA());
  auto a = shapeOf(getA()), b = shapeOf(getB());
  if (!a || !b || a->size() != 2 || b->size() != 2)
    return resultTypes.push_back(UnrankedTensorType::get(elementType)), success();
  int64_t m = getTransA() ? (*a)[1] : (*a)[0];
  int64_t n = getTransB() ? (*b)[0] : (*b)[1];
  resultTypes.push_back(RankedTensorType::get({m, n}, elementType));
  return success();
}

LogicalResult MatMulNBitsOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  if (getN() <= 0 || getK() <= 0 || getBlockSize() <= 0)
    return emitOpError("N, K and block_size must be positive");
  auto a = shapeOf(getA());
  if (!a) return resultTypes.push_back(UnrankedTensorType::get(elementTypeOf(getA()))), success();
  a->back() = getN();
  resultTypes.push_back(RankedTensorType::get(*a, elementTypeOf(getA())));
  return success();
}

LogicalResult DequantizeLinearOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getXScale());
  if (getOutputDtype() != 0) elementType = elementTypeForOnnxDataType(getContext(), getOutputDtype());
  if (!elementType) return emitOpError("unsupported output_dtype");
  return sameAs(getX(), resultTypes, elementType);
}

LogicalResult GatherBlockQuantizedOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getScales());
  auto data = shapeOf(getData()), indices = shapeOf(getIndices());
  if (!data || !indices || getGatherAxis() != 0)
    return resultTypes.push_back(UnrankedTensorType::get(elementType)), success();
  // uint8 data packs 8/bits values per byte along the last axis.
  auto dataElement = cast<IntegerType>(elementTypeOf(getData()));
  if (getBits() != 4 && getBits() != 8) return emitOpError("bits must be 4 or 8");
  if (dataElement.getWidth() == 8 && getBits() < 8)
    data->back() = mulDims(data->back(), 8 / getBits());
  Shape result = *indices;
  result.append(data->begin() + 1, data->end());
  resultTypes.push_back(RankedTensorType::get(result, elementType));
  return success();
}

/// [batch, heads, seq, head] from a 4-D tensor, or from a 3-D [batch, seq,
/// heads*head] one given the head count.
static std::optional<Shape> headsLayout(Value value, std::optional<int64_t> numHeads) {
  auto shape = shapeOf(value);
  if (!shape) return std::nullopt;
  if (shape->size() == 4) return shape;
  if (shape->size() != 3 || !numHeads || *numHeads <= 0) return std::nullopt;
  int64_t hidden = (*shape)[2];
  int64_t head = ShapedType::isDynamic(hidden) ? kDynamic : hidden / *numHeads;
  return Shape{(*shape)[0], *numHeads, (*shape)[1], head};
}

/// The present cache: past followed by the new keys or values.
static Type presentType(Value past, std::optional<Shape> current, Type elementType) {
  if (!current) return UnrankedTensorType::get(elementType);
  Shape present = *current;
  if (!isa<NoneType>(past.getType())) {
    auto pastShape = shapeOf(past);
    present[2] = pastShape && pastShape->size() == 4 ? addDims((*pastShape)[2], present[2]) : kDynamic;
  }
  return RankedTensorType::get(present, elementType);
}

LogicalResult AttentionOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getQ());
  auto q = shapeOf(getQ());
  auto k = headsLayout(getK(), getKvNumHeads());
  auto v = headsLayout(getV(), getKvNumHeads());
  if (q && v && (q->size() == 4 || q->size() == 3)) {
    Shape y = *q;
    int64_t qHeads = q->size() == 4 ? (*q)[1] : getQNumHeads().value_or(0);
    y.back() = q->size() == 4 ? (*v)[3] : mulDims(qHeads, (*v)[3]);
    resultTypes.push_back(RankedTensorType::get(y, elementType));
  } else {
    resultTypes.push_back(UnrankedTensorType::get(elementType));
  }
  Type presentKey = presentType(getPastKey(), k, elementType);
  resultTypes.push_back(presentKey);
  resultTypes.push_back(presentType(getPastValue(), v, elementType));
  // qk_matmul_output: [batch, q_heads, q_seq, total kv_seq].
  auto keys = dyn_cast<RankedTensorType>(presentKey);
  if (q && keys && (q->size() == 4 || q->size() == 3)) {
    int64_t qHeads = q->size() == 4 ? (*q)[1] : getQNumHeads().value_or(kDynamic);
    int64_t qLength = q->size() == 4 ? (*q)[2] : (*q)[1];
    resultTypes.push_back(
        RankedTensorType::get({(*q)[0], qHeads, qLength, keys.getDimSize(2)}, elementType));
  } else {
    resultTypes.push_back(UnrankedTensorType::get(elementType));
  }
  return success();
}

LogicalResult GroupQueryAttentionOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getQuery());
  auto query = shapeOf(getQuery());
  int64_t heads = getNumHeads(), kvHeads = getKvNumHeads();
  if (heads <= 0 || kvHeads <= 0) return emitOpError("head counts must be positive");
  if (query && query->size() == 3) {
    int64_t hidden = (*query)[2];
    bool packed = isNone(getKey());
    int64_t headSize = ShapedType::isDynamic(hidden) ? kDynamic
                       : hidden / (packed ? heads + 2 * kvHeads : heads);
    Shape output = {(*query)[0], (*query)[1], mulDims(heads, headSize)};
    resultTypes.push_back(RankedTensorType::get(output, elementType));
    Shape current = {(*query)[0], kvHeads, (*query)[1], headSize};
    // past and present may share a buffer sized to the maximum length, in
    // which case present has the past's shape; otherwise past + seq.
    resultTypes.push_back(presentType(getPastKey(), current, elementType));
    resultTypes.push_back(presentType(getPastValue(), current, elementType));
  } else {
    resultTypes.append(3, UnrankedTensorType::get(elementType));
  }
  resultTypes.push_back(UnrankedTensorType::get(elementType));
  return success();
}

LogicalResult MoEOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return inferUnaryShapes(getOperation(), resultTypes);
}

LogicalResult QMoEOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return inferUnaryShapes(getOperation(), resultTypes);
}

LogicalResult MultiHeadAttentionOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  Type elementType = elementTypeOf(getQuery());
  auto query = shapeOf(getQuery());
  if (getNumHeads() <= 0) return emitOpError("num_heads must be positive");
  if (query && query->size() == 3) {
    resultTypes.push_back(RankedTensorType::get(*query, elementType));
    int64_t headSize = ShapedType::isDynamic((*query)[2]) ? kDynamic : (*query)[2] / getNumHeads();
    Shape current = {(*query)[0], getNumHeads(), (*query)[1], headSize};
    resultTypes.push_back(presentType(getPastKey(), current, elementType));
    resultTypes.push_back(presentType(getPastValue(), current, elementType));
  } else {
    resultTypes.append(3, UnrankedTensorType::get(elementType));
  }
  resultTypes.push_back(UnrankedTensorType::get(elementType));
  return success();
}

LogicalResult RotaryEmbeddingOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return sameAs(getX(), resultTypes);
}

LogicalResult MsRotaryEmbeddingOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  return sameAs(getInput(), resultTypes);
}

LogicalResult IfOp::inferShapes(SmallVectorImpl<Type> &resultTypes) {
  auto thenYield = getThenBranch().front().getTerminator();
  auto elseYield = getElseBranch().front().getTerminator();
  if (thenYield->getNumOperands() != getNumResults() ||
      elseYield->getNumOperands() != getNumResults())
    return emitOpError("branches yield a different number of values than the If has results");
  for (auto [a, b] : llvm::zip(thenYield->getOperandTypes(), elseYield->getOperandTypes())) {
    if (a == b) { resultTypes.push_back(a); continue; }
    auto ta = dyn_cast<ShapedType>(a), tb = dyn_cast<ShapedType>(b);
    if (!ta || !tb || ta.getElementType() != tb.getElementType())
      return emitOpError("branches yield values of different element types");
    if (ta.hasRank() && tb.hasRank() && ta.getRank() == tb.getRank()) {
      Shape merged;
      for (auto [da, db] : llvm::zip(ta.getShape(), tb.getShape())) merged.push_back(da == db ? da : kDynamic);
      resultTypes.push_back(RankedTensorType::get(merged, ta.getElementType()));
    } else {
      resultTypes.push_back(UnrankedTensorType::get(ta.getElementType()));
    }
  }
  return success();
}

FailureOr<bool> refineResultTypes(Operation *root) {
  bool changed = false;
  WalkResult walk = root->walk([&](ShapeInferenceOpInterface op) {
    SmallVector<Type> types;
    if (failed(op.inferShapes(types))) return WalkResult::interrupt();
    for (auto [result, type] : llvm::zip(op->getResults(), types)) {
      if (result.getType() == type) continue;
      result.setType(type);
      changed = true;
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted()) return failure();
  return changed;
}

} // namespace llmc::onnx
