//===- RaiseUtils.cpp - matching helpers of raise-onnx-to-llm -------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"
#include "llmc/Support/ElementsData.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace llmc::raising {

Value skipCasts(Value value) {
  while (auto cast = definedBy<onnx::CastOp>(value)) value = cast.getInput();
  return value;
}

bool isNone(Value value) { return !value || isa<NoneType>(value.getType()); }

Value optionalOperand(Value value) { return isNone(value) ? Value() : value; }

bool isConstant(Value value) { return definedBy<onnx::ConstantOp>(value) != nullptr; }

std::optional<double> constantScalar(Value value) {
  return onnx::getConstantSplatFloat(skipCasts(value));
}

bool isConstantScalar(Value value, double expected) {
  std::optional<double> actual = constantScalar(value);
  return actual && std::abs(*actual - expected) <= 1e-6 * std::max(1.0, std::abs(expected));
}

bool isSingleAxis(Value axes, int64_t axis, int64_t rank) {
  auto values = onnx::getConstantInts(axes);
  if (!values || values->size() != 1) return false;
  auto a = onnx::normalizeAxis((*values)[0], rank);
  auto b = onnx::normalizeAxis(axis, rank);
  return a && b && *a == *b;
}

bool isFilledWith(Value value, double expected) {
  if (auto expand = definedBy<onnx::ExpandOp>(value))
    return isConstantScalar(expand.getInput(), expected);
  auto fill = definedBy<onnx::ConstantOfShapeOp>(value);
  if (!fill) return false;
  if (!fill.getValue()) return expected == 0.0;
  auto dense = dyn_cast<DenseElementsAttr>(*fill.getValue());
  return dense && isa<FloatType>(dense.getElementType()) &&
         llvm::all_of(dense.getValues<APFloat>(),
                      [&](const APFloat &v) { return v.convertToDouble() == expected; });
}

bool isZeroFill(Value value) { return isFilledWith(value, 0.0); }

std::optional<int64_t> lastAxisHalf(Value value, Value &input) {
  auto split = definedBy<onnx::SplitOp>(value);
  if (!split || split->getNumResults() != 2 || !isNone(split.getSplit()) ||
      !isSingleAxisValue(split.getAxis(), rankOf(split.getInput())))
    return std::nullopt;
  int64_t width = dimOf(split.getInput(), -1);
  if (ShapedType::isDynamic(width) || width % 2) return std::nullopt;
  input = split.getInput();
  return cast<OpResult>(value).getResultNumber();
}

std::optional<std::vector<float>> readConstantFloats(Value value) {
  auto constant = definedBy<onnx::ConstantOp>(value);
  if (!constant || !constant.getValue().getElementType().isF32()) return std::nullopt;
  Attribute attr = constant.getValue();
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    auto values = dense.getValues<float>();
    return std::vector<float>(values.begin(), values.end());
  }
  if (auto resource = dyn_cast<DenseF32ResourceElementsAttr>(attr)) {
    auto data = resource.tryGetAsArrayRef();
    if (!data) return std::nullopt;
    return std::vector<float>(data->begin(), data->end());
  }
  return std::nullopt;
}

Value createF32Constant(OpBuilder &builder, Location loc, ArrayRef<int64_t> shape,
                        ArrayRef<float> data) {
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  ElementsAttr value;
  if (data.size() <= 1024) {
    value = DenseElementsAttr::get(type, data);
  } else {
    auto &manager = DenseResourceElementsHandle::getManagerInterface(builder.getContext());
    auto blob = HeapAsmResourceBlob::allocateAndCopyInferAlign(data);
    value = DenseResourceElementsAttr::get(type, manager.insert("raised", std::move(blob)));
  }
  return onnx::ConstantOp::create(builder, loc, type, value);
}

Value createStackedDequantize(OpBuilder &builder, Location loc, int64_t experts, int64_t rows,
                              int64_t in, int64_t bits, int64_t blockSize,
                              ArrayRef<uint8_t> codes, ArrayRef<float> scales,
                              ArrayRef<uint8_t> zeroPoints) {
  int64_t blocks = llvm::divideCeil(in, blockSize);
  Value codeValue =
      createBytesConstant(builder, loc, {experts, rows, blocks, blockSize * bits / 8}, codes);
  Value scaleValue = createF32Constant(builder, loc, {experts, rows, blocks}, scales);
  Value zeroValue;
  if (!zeroPoints.empty())
    zeroValue = createBytesConstant(
        builder, loc, {experts, rows, llvm::divideCeil(blocks * bits, 8)}, zeroPoints);
  auto type = RankedTensorType::get({experts, rows, in}, builder.getF32Type());
  return llm::DequantizeOp::create(builder, loc, type, codeValue, scaleValue, zeroValue,
                                   builder.getI64IntegerAttr(bits),
                                   builder.getI64IntegerAttr(blockSize));
}

std::optional<std::vector<uint8_t>> readConstantBytes(Value value) {
  auto constant = definedBy<onnx::ConstantOp>(value);
  if (!constant) return std::nullopt;
  std::vector<char> storage;
  auto bytes = elementsBytes(constant.getValue(), storage);
  if (failed(bytes)) return std::nullopt;
  return std::vector<uint8_t>(bytes->begin(), bytes->end());
}

Value createBytesConstant(OpBuilder &builder, Location loc, ArrayRef<int64_t> shape,
                          ArrayRef<uint8_t> bytes) {
  auto type = RankedTensorType::get(shape, builder.getIntegerType(8, /*isSigned=*/false));
  auto &manager = DenseResourceElementsHandle::getManagerInterface(builder.getContext());
  auto blob = HeapAsmResourceBlob::allocateAndCopyInferAlign(bytes);
  auto value = DenseResourceElementsAttr::get(type, manager.insert("repacked", std::move(blob)));
  return onnx::ConstantOp::create(builder, loc, type, value);
}

bool hasPerm(onnx::TransposeOp op, ArrayRef<int64_t> perm) {
  return op && op.getPerm() && *op.getPerm() == perm;
}

Value skipNaNGuard(Value probs) {
  auto where = definedBy<onnx::WhereOp>(probs);
  auto isNaN = where ? definedBy<onnx::IsNaNOp>(where.getCondition()) : onnx::IsNaNOp();
  if (!isNaN || isNaN.getX() != where.getY() || !isConstantScalar(where.getX(), 0.0)) return probs;
  return where.getY();
}

bool isMatrixTranspose(onnx::TransposeOp op) {
  if (!op || rankOf(op.getData()) != 2) return false;
  return !op.getPerm() || *op.getPerm() == ArrayRef<int64_t>{1, 0};
}

std::optional<LastAxisSlice> lastAxisSlice(onnx::SliceOp slice) {
  if (!slice) return std::nullopt;
  int64_t rank = rankOf(slice.getData());
  if (rank < 1) return std::nullopt;
  auto starts = onnx::getConstantInts(slice.getStarts());
  auto ends = onnx::getConstantInts(slice.getEnds());
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
  if (isNone(slice.getAxes()) ? rank != 1 : !isSingleAxis(slice.getAxes(), -1, rank))
    return std::nullopt;
  LastAxisSlice taken{(*starts)[0], (*ends)[0], 1};
  if (!isNone(slice.getSteps())) {
    auto steps = onnx::getConstantInts(slice.getSteps());
    if (!steps || steps->size() != 1) return std::nullopt;
    taken.step = (*steps)[0];
  }
  return taken;
}

std::optional<std::pair<int64_t, int64_t>> lastAxisColumns(onnx::SliceOp slice) {
  auto taken = lastAxisSlice(slice);
  if (!taken || taken->step != 1 || ShapedType::isDynamic(dimOf(slice.getData(), -1)))
    return std::nullopt;
  int64_t dim = dimOf(slice.getData(), -1);
  auto clamp = [&](int64_t index) {
    return std::clamp<int64_t>(index < 0 ? index + dim : index, 0, dim);
  };
  int64_t start = clamp(taken->start);
  return std::pair(start, std::max(start, clamp(taken->end)));
}

/// onnx::canonicalDim, also followed back through the llm ops that compute
/// token by token: the batch and sequence dims of a [batch, seq, features]
/// result (Llm_TokenWise) or a [batch, heads, seq, head_dim] one
/// (Llm_TokenWiseHeads, attention) are those of the activation they read
/// (the first operand; an embedding's ids), in either layout.
static std::pair<Value, int64_t> tokenDim(Value value, int64_t index) {
  while (true) {
    std::tie(value, index) = onnx::canonicalDim(value, index);
    Operation *op = value.getDefiningOp();
    if (!op || op->getNumOperands() == 0) return {value, index};
    bool tokens = op->hasTrait<llm::OpTrait::TokenWise>() && rankOf(value) == 3;
    bool heads = (op->hasTrait<llm::OpTrait::TokenWiseHeads>() || isa<llm::AttentionOp>(op)) &&
                 rankOf(value) == 4;
    bool batch = index == 0, sequence = index == (tokens ? 1 : 2);
    if ((!tokens && !heads) || (!batch && !sequence)) return {value, index};
    Value source = isa<llm::EmbeddingOp>(op) ? op->getOperand(1) : op->getOperand(0);
    int64_t rank = rankOf(source);
    if (rank < 2 || rank > 4 || isConstant(source)) return {value, index};
    // [batch, seq] ids, [batch, seq, features] or [batch, heads, seq, head_dim].
    value = source, index = batch ? 0 : rank == 4 ? 2 : 1;
  }
}

bool sameDim(Value a, int64_t i, Value b, int64_t j) {
  while (a != b || i != j) {
    int64_t x = dimOf(a, i), y = dimOf(b, j);
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y)) return x == y;
    if (auto norm = definedBy<llm::RmsNormOp>(a)) {
      a = norm.getInput();
    } else if (auto reshape = definedBy<onnx::ReshapeOp>(a)) {
      auto target = onnx::getConstantInts(reshape.getShape());
      if (!target || int64_t(target->size()) <= i || (*target)[i] != 0 ||
          reshape.getAllowzero() || rankOf(reshape.getData()) <= i)
        break;
      a = reshape.getData();
    } else {
      break;
    }
  }
  return (a == b && i == j) || tokenDim(a, i) == tokenDim(b, j);
}

BlockArgument findArgumentByName(Operation *op, StringRef name) {
  auto func = op->getParentOfType<func::FuncOp>();
  if (!func) return nullptr;
  for (BlockArgument arg : func.getArguments())
    if (onnx::inputName(arg) == name) return arg;
  return nullptr;
}

void forEachOpInCone(Value value, function_ref<bool(Operation *)> visit, size_t limit) {
  llvm::SetVector<Value> cone;
  cone.insert(value);
  for (size_t i = 0; i < cone.size() && i < limit; ++i) {
    Operation *op = cone[i].getDefiningOp();
    if (op && visit(op))
      for (Value operand : op->getOperands()) cone.insert(operand);
  }
}

BlockArgument findArgumentInSlice(Value value, StringRef name) {
  llvm::SetVector<Value> worklist;
  worklist.insert(value);
  for (size_t i = 0; i < worklist.size(); ++i) {
    Value current = worklist[i];
    if (auto arg = dyn_cast<BlockArgument>(current)) {
      if (onnx::inputName(arg) == name) return arg;
      continue;
    }
    if (Operation *op = current.getDefiningOp())
      for (Value operand : op->getOperands()) worklist.insert(operand);
  }
  return nullptr;
}

Location fusedLocOf(ArrayRef<Operation *> ops) {
  SmallVector<Location> locs;
  for (Operation *op : ops)
    if (op) locs.push_back(op->getLoc());
  return FusedLoc::get(ops.front()->getContext(), locs);
}

llm::AttentionOp createAttention(OpBuilder &builder, Location loc, Type type, Value q, Value k,
                                 Value v, const MaskInfo &mask, float scale,
                                 std::optional<double> softcap, ArrayRef<float> sinks) {
  IntegerAttr window;
  if (mask.slidingWindow) window = builder.getI64IntegerAttr(*mask.slidingWindow);
  FloatAttr cap;
  if (softcap) cap = builder.getF32FloatAttr(*softcap);
  DenseF32ArrayAttr sinkLogits;
  if (!sinks.empty()) sinkLogits = builder.getDenseF32ArrayAttr(sinks);
  DenseF32ArrayAttr slopes;
  if (!mask.alibiSlopes.empty()) {
    // A mask without a heads dim adds the same bias to every head.
    SmallVector<float> perHead(mask.alibiSlopes.begin(), mask.alibiSlopes.end());
    int64_t heads = dimOf(q, 1);
    if (perHead.size() == 1 && !ShapedType::isDynamic(heads)) perHead.assign(heads, perHead[0]);
    slopes = builder.getDenseF32ArrayAttr(perHead);
  }
  return llm::AttentionOp::create(builder, loc, type, q, k, v, optionalOperand(mask.attentionMask),
                                  builder.getF32FloatAttr(scale),
                                  mask.causal ? builder.getUnitAttr() : UnitAttr(), window, cap,
                                  sinkLogits, slopes);
}

bool onlyReadBy(Value value, Operation *reader) {
  return llvm::all_of(value.getUsers(), [&](Operation *user) {
    return user == reader || isa<onnx::ShapeOp>(user);
  });
}

/// `dequantize`, an [out, in] weight of constants (MatMulNBits'), with its
/// rows in `order`: the rows of its codes, scales and zero points, each a
/// run of bytes, moved as they are. Null when an operand is not a constant
/// of whole bytes with a row per output feature.
static Value reorderQuantizedRows(OpBuilder &builder, llm::DequantizeOp dequantize,
                                  ArrayRef<int64_t> order) {
  Location loc = dequantize.getLoc();
  SmallVector<Value> operands;
  for (Value operand : dequantize->getOperands()) {
    auto bytes = readConstantBytes(operand);
    auto type = cast<RankedTensorType>(operand.getType());
    if (!bytes || type.getRank() < 1 || type.getDimSize(0) != int64_t(order.size()))
      return nullptr;
    size_t row = bytes->size() / order.size();
    std::vector<char> reordered(bytes->size());
    for (auto [i, source] : llvm::enumerate(order))
      std::copy_n(bytes->begin() + source * row, row, reordered.begin() + i * row);
    auto blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
        ArrayRef<char>(reordered), std::max<size_t>(1, type.getElementTypeBitWidth() / 8));
    auto value = DenseResourceElementsAttr::get(type, "repacked", std::move(blob));
    operands.push_back(onnx::ConstantOp::create(builder, loc, type, value));
  }
  Value zeroPoints = operands.size() == 3 ? operands[2] : Value();
  return llm::DequantizeOp::create(builder, loc, dequantize.getType(), operands[0], operands[1],
                                   zeroPoints, dequantize.getBitsAttr(),
                                   dequantize.getBlockSizeAttr());
}

llm::LinearOp reorderColumns(OpBuilder &builder, llm::LinearOp linear, ArrayRef<int64_t> order) {
  bool transposed = linear.getTransposeWeight();
  std::optional<std::vector<float>> bias;
  if (!isNone(linear.getBias()) && !(bias = readConstantFloats(linear.getBias()))) return nullptr;
  auto biasOf = [&](Location loc) -> Value {
    if (!bias) return Value();
    std::vector<float> reorderedBias(order.size());
    for (auto [i, feature] : llvm::enumerate(order)) reorderedBias[i] = (*bias)[feature];
    return createF32Constant(builder, loc, {int64_t(order.size())}, reorderedBias);
  };
  if (auto dequantize = definedBy<llm::DequantizeOp>(linear.getWeight())) {
    // The new dequantize is no constant that the driver would hoist.
    builder.setInsertionPoint(linear);
    Value weight = transposed ? reorderQuantizedRows(builder, dequantize, order) : Value();
    if (!weight) return nullptr;
    return llm::LinearOp::create(builder, linear.getLoc(), linear.getType(), linear.getInput(),
                                 weight, biasOf(linear.getLoc()), linear.getTransposeWeightAttr());
  }
  auto weight = readConstantFloats(linear.getWeight());
  if (!weight) return nullptr;
  int64_t out = int64_t(order.size()), in = int64_t(weight->size()) / out;
  std::vector<float> reordered(weight->size());
  for (int64_t i = 0; i < in; ++i)
    for (int64_t j = 0; j < out; ++j) {
      // [in, out], or [out, in] when transposed.
      auto at = [&](int64_t feature) { return transposed ? feature * in + i : i * out + feature; };
      reordered[at(j)] = (*weight)[at(order[j])];
    }
  Location loc = linear.getLoc();
  auto weightShape = cast<ShapedType>(linear.getWeight().getType()).getShape();
  Value newWeight = createF32Constant(builder, loc, weightShape, reordered);
  Value newBias = biasOf(loc);
  builder.setInsertionPoint(linear);
  return llm::LinearOp::create(builder, loc, linear.getType(), linear.getInput(), newWeight,
                               newBias, linear.getTransposeWeightAttr());
}

void populateStructurePatterns(RewritePatternSet &patterns) {
  populateNormPatterns(patterns);
  populateLinearPatterns(patterns);
  populateFlattenedTokenPatterns(patterns);
  populateRopePatterns(patterns);
  populateInterleavedRopePatterns(patterns);
  populateAttentionPatterns(patterns);
  populateFusedAttentionPatterns(patterns);
  populateFusedMixtureOfExpertsPatterns(patterns);
}

void populateGluePatterns(RewritePatternSet &patterns) {
  populateLinearGluePatterns(patterns);
  populateNormGluePatterns(patterns);
  populateAttentionGluePatterns(patterns);
  populateLatentAttentionPatterns(patterns);
  populateFlattenedTokenPatterns(patterns);
}

std::pair<Value, int64_t> peelRowOffset(Value ids, Value table) {
  auto add = definedBy<onnx::AddOp>(ids);
  auto offset = add ? onnx::getConstantInts(add.getB()) : std::nullopt;
  if (!offset || offset->size() != 1 || (*offset)[0] <= 0 || rankOf(add.getB()) > 1 ||
      (*offset)[0] >= dimOf(table, 0))
    return {ids, 0};
  return {add.getA(), (*offset)[0]};
}

} // namespace llmc::raising
