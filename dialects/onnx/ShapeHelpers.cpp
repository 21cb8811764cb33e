//===- ShapeHelpers.cpp - constants and shapes in the onnx dialect --------===//
#include "dialects/onnx/ShapeHelpers.h"

#include "dialects/onnx/OnnxDialect.h"
#include "llmc/Support/TensorShape.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace llmc::onnx {

namespace {
// ONNX TensorProto.DataType values.
enum OnnxDataType : int64_t {
  kFloat = 1, kUint8 = 2, kInt8 = 3, kUint16 = 4, kInt16 = 5, kInt32 = 6,
  kInt64 = 7, kBool = 9, kFloat16 = 10, kDouble = 11, kUint32 = 12,
  kUint64 = 13, kBFloat16 = 16, kUint4 = 21, kInt4 = 22,
};
} // namespace

Type elementTypeForOnnxDataType(MLIRContext *context, int64_t dataType) {
  Builder b(context);
  auto unsignedInt = [&](unsigned width) {
    return IntegerType::get(context, width, IntegerType::Unsigned);
  };
  switch (dataType) {
  case kFloat: return b.getF32Type();
  case kFloat16: return b.getF16Type();
  case kBFloat16: return b.getBF16Type();
  case kDouble: return b.getF64Type();
  case kBool: return b.getI1Type();
  case kInt4: return b.getIntegerType(4);
  case kInt8: return b.getI8Type();
  case kInt16: return b.getI16Type();
  case kInt32: return b.getI32Type();
  case kInt64: return b.getI64Type();
  case kUint4: return unsignedInt(4);
  case kUint8: return unsignedInt(8);
  case kUint16: return unsignedInt(16);
  case kUint32: return unsignedInt(32);
  case kUint64: return unsignedInt(64);
  default: return nullptr;
  }
}

int64_t onnxDataTypeForElementType(Type type) {
  if (type.isF32()) return kFloat;
  if (type.isF16()) return kFloat16;
  if (type.isBF16()) return kBFloat16;
  if (type.isF64()) return kDouble;
  auto intType = dyn_cast<IntegerType>(type);
  if (!intType) return 0;
  bool isUnsigned = intType.isUnsigned();
  switch (intType.getWidth()) {
  case 1: return kBool;
  case 4: return isUnsigned ? kUint4 : kInt4;
  case 8: return isUnsigned ? kUint8 : kInt8;
  case 16: return isUnsigned ? kUint16 : kInt16;
  case 32: return isUnsigned ? kUint32 : kInt32;
  case 64: return isUnsigned ? kUint64 : kInt64;
  default: return 0;
  }
}

StringRef inputName(BlockArgument arg) {
  auto function = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!function || arg.getOwner() != &function.getBody().front()) return {};
  auto name = function.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "onnx.name");
  return name ? name.getValue() : StringRef();
}

DenseElementsAttr getConstantAttr(Value value) {
  if (!value) return nullptr;
  DenseElementsAttr attr;
  if (matchPattern(value, m_Constant(&attr))) return attr;
  return nullptr;
}

std::optional<SmallVector<int64_t>> getConstantInts(Value value) {
  DenseElementsAttr attr = getConstantAttr(value);
  if (!attr || !isa<IntegerType>(attr.getElementType())) return std::nullopt;
  SmallVector<int64_t> values;
  for (const APInt &v : attr.getValues<APInt>())
    values.push_back(attr.getElementType().isUnsignedInteger() ? int64_t(v.getZExtValue())
                                                               : v.getSExtValue());
  return values;
}

std::optional<double> getConstantSplatFloat(Value value) {
  DenseElementsAttr attr = getConstantAttr(value);
  if (!attr || !attr.isSplat()) {
    // A non-splat attribute whose elements are all equal still counts.
    if (!attr || attr.getNumElements() == 0) return std::nullopt;
  }
  if (isa<FloatType>(attr.getElementType())) {
    auto values = attr.getValues<APFloat>();
    double first = (*values.begin()).convertToDouble();
    for (const APFloat &v : values)
      if (v.convertToDouble() != first) return std::nullopt;
    return first;
  }
  if (auto ints = getConstantInts(value)) {
    for (int64_t v : *ints)
      if (v != ints->front()) return std::nullopt;
    return double(ints->front());
  }
  return std::nullopt;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

TensorType makeTensorType(std::optional<ArrayRef<int64_t>> shape, Type elementType) {
  if (!shape) return UnrankedTensorType::get(elementType);
  return RankedTensorType::get(*shape, elementType);
}

namespace {
/// Dims of `value`'s type as a shape vector, when it is ranked.
std::optional<SmallVector<int64_t>> rankedShape(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type) return std::nullopt;
  return SmallVector<int64_t>(type.getShape());
}

/// A dim of a model input with the same ONNX dim_param name as an earlier
/// input's is that input's dim: exporters name the dims they share
/// (torch.onnx's `s44` on input_ids and position_ids, genai's `batch_size`).
/// Other dims are themselves.
std::pair<Value, int64_t> namedInputDim(Value value, int64_t index) {
  auto arg = dyn_cast<BlockArgument>(value);
  auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
  if (!func) return {value, index};
  auto paramsOf = [&](unsigned argNumber) {
    return func.getArgAttrOfType<ArrayAttr>(argNumber, "onnx.dim_params");
  };
  ArrayAttr params = paramsOf(arg.getArgNumber());
  if (!params || index >= int64_t(params.size())) return {value, index};
  auto name = dyn_cast<StringAttr>(params[index]);
  if (!name || name.empty()) return {value, index};
  for (BlockArgument other : func.getArguments().take_front(arg.getArgNumber() + 1)) {
    ArrayAttr otherParams = paramsOf(other.getArgNumber());
    for (auto [dim, otherName] : llvm::enumerate(otherParams ? otherParams.getValue()
                                                            : ArrayRef<Attribute>()))
      if (otherName == name) return {other, int64_t(dim)};
  }
  return {value, index};
}
} // namespace

namespace {
/// canonicalDim and evaluateShapeEntries call each other: a Reshape's dims are
/// read off its target shape, which exports compute from Shapes of earlier
/// activations, whose dims lead back through earlier Reshapes. Unmemoised, a
/// chain of them is walked again on every path through it (optimum's 2-layer
/// GPT-2 took 53 s to raise). Answers are kept for the outermost call only:
/// the IR does not change during one.
struct CanonicalDims {
  DenseMap<std::pair<Value, int64_t>, std::pair<Value, int64_t>> known;
  int depth = 0;
};
thread_local CanonicalDims canonicalDims;

std::pair<Value, int64_t> walkToCanonicalDim(Value value, int64_t index);
} // namespace

std::pair<Value, int64_t> canonicalDim(Value value, int64_t index) {
  auto key = std::make_pair(value, index);
  if (auto found = canonicalDims.known.find(key); found != canonicalDims.known.end())
    return found->second;
  ++canonicalDims.depth;
  std::pair<Value, int64_t> dim = walkToCanonicalDim(value, index);
  if (--canonicalDims.depth == 0) canonicalDims.known.clear();
  else canonicalDims.known[key] = dim;
  return dim;
}

namespace {
std::pair<Value, int64_t> walkToCanonicalDim(Value value, int64_t index) {
  while (Operation *op = value.getDefiningOp()) {
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || index >= type.getRank() || !type.isDynamicDim(index)) break;
    int64_t rank = type.getRank();
    // The operand and dim that `index` of the result is, if one is known.
    Value from;
    int64_t at = index;
    auto dynamicIn = [&](Value operand, int64_t dim) {
      auto t = dyn_cast<RankedTensorType>(operand.getType());
      return t && dim >= 0 && dim < t.getRank() && t.isDynamicDim(dim);
    };
    if (isa<CastOp, NegOp, SqrtOp, ReciprocalOp, ExpOp, SigmoidOp, TanhOp, ErfOp, ReluOp,
            SoftmaxOp, IdentityOp, GeluOp, IsNaNOp, NotOp, ReduceMeanOp, ReduceSumOp, ReduceMaxOp,
            ReduceL2Op, PowOp, ClipOp,
            LayerNormalizationOp, RMSNormalizationOp, SimplifiedLayerNormalizationOp,
            RotaryEmbeddingOp>(op)) {
      if (dynamicIn(op->getOperand(0), index) && rankOf(op->getOperand(0)) == rank)
        from = op->getOperand(0);
    } else if (isa<AddOp, SubOp, MulOp, DivOp, WhereOp>(op)) {
      // A broadcast dim that is unknown on several operands is theirs alike. Where's
      // values go before its condition: the data, not a mask, carries the dims on.
      SmallVector<Value> operands(op->getOperands());
      if (isa<WhereOp>(op)) std::rotate(operands.begin(), operands.begin() + 1, operands.end());
      for (Value operand : operands) {
        int64_t dim = index - (rank - rankOf(operand));
        if (dynamicIn(operand, dim)) { from = operand, at = dim; break; }
      }
    } else if (auto matmul = dyn_cast<MatMulOp>(op)) {
      Value side = index == rank - 1 ? matmul.getB() : matmul.getA();
      int64_t dim = index - (rank - rankOf(side));
      if (dynamicIn(side, dim)) from = side, at = dim;
    } else if (auto matmul = dyn_cast<MatMulNBitsOp>(op)) {
      if (index < rank - 1 && rankOf(matmul.getA()) == rank) from = matmul.getA();
    } else if (auto gather = dyn_cast<GatherBlockQuantizedOp>(op)) {
      // A row gather: [indices..., features].
      if (gather.getGatherAxis() == 0 && index < rankOf(gather.getIndices()))
        from = gather.getIndices();
    } else if (auto attention = dyn_cast<AttentionOp>(op)) {
      // Y of 4-D attention is [batch, heads, queries, head_size]: Q's batch and queries.
      if (value == attention->getResult(0) && rank == 4 && (index == 0 || index == 2))
        from = attention.getQ();
    } else if (auto gather = dyn_cast<GatherOp>(op)) {
      int64_t dataRank = rankOf(gather.getData()), indicesRank = rankOf(gather.getIndices());
      auto axis = normalizeAxis(gather.getAxis(), dataRank);
      if (axis && dataRank >= 0 && indicesRank >= 0) {
        if (index < *axis) from = gather.getData();
        else if (index < *axis + indicesRank) from = gather.getIndices(), at = index - *axis;
        else from = gather.getData(), at = index - indicesRank + 1;
      }
    } else if (auto gather = dyn_cast<GatherNDOp>(op)) {
      // [indices' leading dims..., data's dims after the batch dims and the tuple's].
      int64_t indicesRank = rankOf(gather.getIndices());
      int64_t tuple = indicesRank > 0 ? dimOf(gather.getIndices(), -1) : ShapedType::kDynamic;
      if (!ShapedType::isDynamic(tuple)) {
        if (index < indicesRank - 1) from = gather.getIndices();
        else
          from = gather.getData(), at = index - (indicesRank - 1) + gather.getBatchDims() + tuple;
      }
    } else if (auto tile = dyn_cast<TileOp>(op)) {
      // A dim repeated once is the input's.
      auto repeats = evaluateShapeEntries(tile.getRepeats());
      if (repeats && int64_t(repeats->size()) == rank && (*repeats)[index].value == 1)
        from = tile.getInput();
    } else if (auto unsqueeze = dyn_cast<UnsqueezeOp>(op)) {
      // The result's dims but the inserted ones are the input's, in order.
      auto axes = getConstantInts(unsqueeze.getAxes());
      if (axes) {
        SmallVector<int64_t> inserted;
        for (int64_t axis : *axes)
          if (auto normalized = normalizeAxis(axis, rank)) inserted.push_back(*normalized);
        if (inserted.size() == axes->size() && !llvm::is_contained(inserted, index)) {
          from = unsqueeze.getData();
          at = index - llvm::count_if(inserted, [&](int64_t a) { return a < index; });
        }
      }
    } else if (auto transpose = dyn_cast<TransposeOp>(op)) {
      if (auto perm = transpose.getPerm()) from = transpose.getData(), at = (*perm)[index];
      else from = transpose.getData(), at = rank - 1 - index;
    } else if (auto concat = dyn_cast<ConcatOp>(op)) {
      auto axis = normalizeAxis(concat.getAxis(), rank);
      if (axis && *axis != index) from = concat.getInputs().front();
    } else if (auto split = dyn_cast<SplitOp>(op)) {
      auto axis = normalizeAxis(split.getAxis(), rank);
      if (axis && *axis != index) from = split.getInput();
    } else if (auto slice = dyn_cast<SliceOp>(op)) {
      auto axes = getConstantInts(slice.getAxes());
      if (axes && llvm::none_of(*axes, [&](int64_t a) { return normalizeAxis(a, rank) == index; }))
        from = slice.getData();
    } else if (auto reshape = dyn_cast<ReshapeOp>(op)) {
      // A target entry that copies (0) or reads (Shape) a dim is that dim.
      auto entries = evaluateShapeEntries(reshape.getShape());
      if (entries && int64_t(entries->size()) == rank) {
        const ShapeEntry &entry = (*entries)[index];
        if (entry.value == 0 && !reshape.getAllowzero()) from = reshape.getData();
        else if (entry.dim.first) return entry.dim;
        else if (entry.value == -1) {
          auto inferred = inferReshapeDim(reshape.getData(), *entries, index,
                                          reshape.getAllowzero());
          if (inferred && inferred->dim.first) return inferred->dim;
        }
      }
    }
    if (!from || !dynamicIn(from, at)) break;
    value = from, index = at;
  }
  return namedInputDim(value, index);
}
} // namespace

namespace {
/// Dim `index` of `value` as a dim times a constant: the Reshape entry that
/// made it, when that is a dim times a constant (batch * heads), else its
/// canonical dim times 1.
std::pair<std::pair<Value, int64_t>, int64_t> factoredDim(Value value, int64_t index) {
  std::pair<Value, int64_t> dim = canonicalDim(value, index);
  if (auto reshape = dim.first ? dim.first.getDefiningOp<ReshapeOp>() : ReshapeOp()) {
    auto entries = evaluateShapeEntries(reshape.getShape());
    if (entries && dim.second < int64_t(entries->size())) {
      const ShapeEntry &entry = (*entries)[dim.second];
      if (ShapedType::isDynamic(entry.value) && entry.scaledDim.first)
        return {entry.scaledDim, entry.factor};
    }
  }
  return {dim, 1};
}
} // namespace

std::optional<InferredReshapeDim> inferReshapeDim(Value data, ArrayRef<ShapeEntry> target,
                                                  int64_t inferred, bool allowzero) {
  auto type = dyn_cast<RankedTensorType>(data.getType());
  if (!type) return std::nullopt;
  SmallVector<std::pair<Value, int64_t>> unmatched;
  int64_t total = 1, known = 1;
  for (auto [i, dim] : llvm::enumerate(type.getShape())) {
    if (!ShapedType::isDynamic(dim)) {
      total *= dim;
      continue;
    }
    // [batch * heads, s, d] viewed as [batch, heads, s, -1]: batch is unmatched, heads known.
    auto [symbol, factor] = factoredDim(data, i);
    unmatched.push_back(symbol);
    total *= factor;
  }
  for (auto [i, entry] : llvm::enumerate(target)) {
    if (int64_t(i) == inferred) continue;
    int64_t dim = entry.value;
    bool copied = dim == 0 && !allowzero;
    if (copied) dim = int64_t(i) < type.getRank() ? type.getDimSize(i) : ShapedType::kDynamic;
    if (!ShapedType::isDynamic(dim)) {
      known *= dim;
      continue;
    }
    // A 0 entry copied an unknown input dim: the same dim on both sides. An
    // entry of a dim times a constant takes the dim and the constant.
    std::pair<Value, int64_t> symbol = copied ? canonicalDim(data, i) : entry.dim;
    if (!copied && !symbol.first && entry.scaledDim.first) {
      symbol = entry.scaledDim;
      known *= entry.factor;
    }
    auto match = llvm::find(unmatched, symbol);
    if (!symbol.first || match == unmatched.end()) return std::nullopt;
    unmatched.erase(match);
  }
  if (known == 0 || total % known != 0) return std::nullopt;
  if (unmatched.empty()) return InferredReshapeDim{total / known, {}};
  if (unmatched.size() == 1 && total == known)
    return InferredReshapeDim{ShapedType::kDynamic, unmatched.front()};
  return std::nullopt;
}

std::optional<SmallVector<ShapeEntry>> evaluateShapeEntries(Value value) {
  auto known = [](ArrayRef<int64_t> values) {
    SmallVector<ShapeEntry> entries;
    for (int64_t v : values) entries.push_back({v, v >= 0});
    return entries;
  };
  if (auto ints = getConstantInts(value)) return known(*ints);
  Operation *op = value.getDefiningOp();
  if (!op) return std::nullopt;

  if (auto shapeOp = dyn_cast<ShapeOp>(op)) {
    auto dims = rankedShape(shapeOp.getData());
    if (!dims) return std::nullopt;
    int64_t rank = dims->size();
    int64_t start = std::clamp<int64_t>(shapeOp.getStart() < 0 ? shapeOp.getStart() + rank
                                                               : shapeOp.getStart(), 0, rank);
    int64_t end = rank;
    if (auto e = shapeOp.getEnd()) end = std::clamp<int64_t>(*e < 0 ? *e + rank : *e, 0, rank);
    SmallVector<ShapeEntry> entries;
    for (int64_t i = start; i < end; ++i) {
      ShapeEntry entry{(*dims)[i], /*nonNegative=*/true};
      if (ShapedType::isDynamic(entry.value)) entry.dim = canonicalDim(shapeOp.getData(), i);
      entries.push_back(entry);
    }
    return entries;
  }
  if (auto gather = dyn_cast<GatherOp>(op)) {
    auto data = evaluateShapeEntries(gather.getData());
    auto indices = getConstantInts(gather.getIndices());
    if (!data || !indices) return std::nullopt;
    SmallVector<ShapeEntry> result;
    for (int64_t index : *indices) {
      auto i = normalizeAxis(index, data->size());
      if (!i) return std::nullopt;
      result.push_back((*data)[*i]);
    }
    return result;
  }
  if (auto concat = dyn_cast<ConcatOp>(op)) {
    SmallVector<ShapeEntry> result;
    for (Value input : concat.getInputs()) {
      auto part = evaluateShapeEntries(input);
      if (!part) return std::nullopt;
      result.append(*part);
    }
    return result;
  }
  if (isa<UnsqueezeOp, SqueezeOp, CastOp, IdentityOp>(op))
    return evaluateShapeEntries(op->getOperand(0));
  // A scalar or vector reshaped to a vector keeps its entries in order (the dynamo
  // exporter's Reshape(batch * heads, [-1])).
  if (auto reshape = dyn_cast<ReshapeOp>(op); reshape && rankOf(value) == 1 &&
                                              rankOf(reshape.getData()) <= 1)
    return evaluateShapeEntries(reshape.getData());
  if (auto where = dyn_cast<WhereOp>(op)) {
    // A constant condition picks each entry (torch's expand: Where(Equal(shape, -1), 1, shape)).
    DenseElementsAttr condition = getConstantAttr(where.getCondition());
    auto x = evaluateShapeEntries(where.getX()), y = evaluateShapeEntries(where.getY());
    if (!condition || !x || !y) return std::nullopt;
    SmallVector<bool> picks(condition.getValues<bool>());
    size_t size = std::max({picks.size(), x->size(), y->size()});
    auto at = [&](auto &entries, size_t i) -> decltype(&entries[0]) {
      if (entries.size() == size) return &entries[i];
      return entries.size() == 1 ? &entries[0] : nullptr;
    };
    SmallVector<ShapeEntry> result;
    for (size_t i = 0; i < size; ++i) {
      const bool *pick = at(picks, i);
      const ShapeEntry *fromX = at(*x, i), *fromY = at(*y, i);
      if (!pick || !fromX || !fromY) return std::nullopt;
      result.push_back(*pick ? *fromX : *fromY);
    }
    return result;
  }
  if (isa<AddOp, MulOp>(op) && isa<IntegerType>(getElementTypeOrSelf(value.getType()))) {
    // Sums and products of dims (past + new tokens): entry by entry, a scalar broadcast.
    auto lhs = evaluateShapeEntries(op->getOperand(0));
    auto rhs = evaluateShapeEntries(op->getOperand(1));
    if (!lhs || !rhs || (lhs->size() != rhs->size() && lhs->size() != 1 && rhs->size() != 1))
      return std::nullopt;
    bool add = isa<AddOp>(op);
    SmallVector<ShapeEntry> result;
    for (size_t i = 0, e = std::max(lhs->size(), rhs->size()); i < e; ++i) {
      const ShapeEntry &a = (*lhs)[lhs->size() == 1 ? 0 : i];
      const ShapeEntry &b = (*rhs)[rhs->size() == 1 ? 0 : i];
      ShapeEntry entry{ShapedType::kDynamic, a.nonNegative && b.nonNegative};
      if (!ShapedType::isDynamic(a.value) && !ShapedType::isDynamic(b.value))
        entry.value = add ? a.value + b.value : a.value * b.value;
      // An unknown dim (or such a product) times a positive constant.
      for (auto [scaled, by] : {std::pair(&a, &b), std::pair(&b, &a)}) {
        if (add || !ShapedType::isDynamic(entry.value) || ShapedType::isDynamic(by->value) ||
            by->value <= 0)
          continue;
        if (scaled->dim.first) entry.scaledDim = scaled->dim, entry.factor = by->value;
        else if (scaled->scaledDim.first)
          entry.scaledDim = scaled->scaledDim, entry.factor = scaled->factor * by->value;
      }
      result.push_back(entry);
    }
    return result;
  }
  if (auto slice = dyn_cast<SliceOp>(op)) {
    auto data = evaluateShapeEntries(slice.getData());
    auto starts = getConstantInts(slice.getStarts());
    auto ends = getConstantInts(slice.getEnds());
    if (!data || !starts || !ends || starts->size() != 1 || ends->size() != 1)
      return std::nullopt;
    if (!isa<NoneType>(slice.getSteps().getType())) {
      auto steps = getConstantInts(slice.getSteps());
      if (!steps || *steps != SmallVector<int64_t>{1}) return std::nullopt;
    }
    int64_t size = data->size();
    auto clampIndex = [&](int64_t i) {
      return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size);
    };
    int64_t start = clampIndex((*starts)[0]), end = clampIndex((*ends)[0]);
    if (end <= start) return SmallVector<ShapeEntry>{};
    return SmallVector<ShapeEntry>(data->begin() + start, data->begin() + end);
  }
  // A 1-D value of statically known length whose entries are unknown.
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (type && type.getRank() == 1 && !type.isDynamicDim(0))
    return SmallVector<ShapeEntry>(type.getDimSize(0), ShapeEntry());
  if (type && type.getRank() == 0) return SmallVector<ShapeEntry>{ShapeEntry()};
  return std::nullopt;
}

std::optional<SmallVector<int64_t>> evaluateShapeTensor(Value value) {
  auto entries = evaluateShapeEntries(value);
  if (!entries) return std::nullopt;
  SmallVector<int64_t> values;
  for (const ShapeEntry &entry : *entries) values.push_back(entry.value);
  return values;
}

FailureOr<SmallVector<int64_t>> broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes) {
  size_t rank = 0;
  for (ArrayRef<int64_t> shape : shapes) rank = std::max(rank, shape.size());
  SmallVector<int64_t> result(rank, 1);
  for (ArrayRef<int64_t> shape : shapes) {
    size_t offset = rank - shape.size();
    for (auto [i, dim] : llvm::enumerate(shape)) {
      int64_t &out = result[offset + i];
      if (dim == 1) continue;
      if (out == 1) { out = dim; continue; }
      if (ShapedType::isDynamic(dim)) continue;
      if (ShapedType::isDynamic(out)) { out = dim; continue; }
      if (out != dim) return failure();
    }
  }
  return result;
}

} // namespace llmc::onnx
