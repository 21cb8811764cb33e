//===- FusionUtils.cpp - building blocks of the llm-fuse-* passes ---------===//
#include "passes/Fusion/FusionUtils.h"

#include "llmc/Support/ElementsData.h"
#include "llmc/Support/TensorShape.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace llmc::fusion {

ElementsAttr constantOf(Value value) {
  auto constant = value ? value.getDefiningOp<llm::ConstantOp>() : nullptr;
  return constant ? dyn_cast<ElementsAttr>(constant.getValue()) : nullptr;
}

void eraseIfUnused(RewriterBase &rewriter, Value value) {
  if (value && value.use_empty() && value.getDefiningOp<llm::ConstantOp>())
    rewriter.eraseOp(value.getDefiningOp());
}

FailureOr<Value> concatConstants(RewriterBase &rewriter, Location loc, ArrayRef<ElementsAttr> parts,
                                 int64_t dim) {
  auto first = cast<ShapedType>(parts.front().getType());
  int64_t elementBytes = first.getElementTypeBitWidth() / 8;
  if (elementBytes == 0) return failure();
  // Rows are the dims before `dim`; each part contributes a contiguous chunk
  // of every row.
  int64_t outerRows = 1;
  for (int64_t d = 0; d < dim; ++d) outerRows *= first.getDimSize(d);
  SmallVector<std::vector<char>> storage(parts.size());
  SmallVector<ArrayRef<char>> bytes;
  SmallVector<int64_t> chunkBytes;
  int64_t joined = 0;
  size_t totalBytes = 0;
  for (auto [index, part] : llvm::enumerate(parts)) {
    auto data = elementsBytes(part, storage[index]);
    if (failed(data)) return failure();
    bytes.push_back(*data);
    totalBytes += data->size();
    chunkBytes.push_back(static_cast<int64_t>(data->size()) / outerRows);
    joined += cast<ShapedType>(part.getType()).getDimSize(dim);
  }
  std::vector<char> result;
  result.reserve(totalBytes);
  for (int64_t row = 0; row < outerRows; ++row)
    for (auto [data, chunk] : llvm::zip(bytes, chunkBytes))
      llvm::append_range(result, data.slice(row * chunk, chunk));
  SmallVector<int64_t> shape(first.getShape());
  shape[dim] = joined;
  auto type = RankedTensorType::get(shape, first.getElementType());
  auto attr = DenseResourceElementsAttr::get(
      type, "fused",
      HeapAsmResourceBlob::allocateAndCopyWithAlign(ArrayRef<char>(result), elementBytes));
  return llm::ConstantOp::create(rewriter, loc, type, cast<ElementsAttr>(attr)).getResult();
}

namespace {
/// Fills `region` with one block of scalar arguments and a yield of `body`.
void buildScalarRegion(RewriterBase &rewriter, Location loc, Region &region, TypeRange scalars,
                       ScalarBuilder body) {
  OpBuilder::InsertionGuard guard(rewriter);
  SmallVector<Location> locations(scalars.size(), loc);
  Block *block = rewriter.createBlock(&region, {}, scalars, locations);
  Value result = body(rewriter, loc, block->getArguments());
  llm::YieldOp::create(rewriter, loc, result);
}

SmallVector<Type> elementTypes(ValueRange values) {
  SmallVector<Type> types;
  for (Value value : values) types.push_back(getElementTypeOrSelf(value.getType()));
  return types;
}

/// The splat value of a constant operand, as a scalar constant, or null.
Value inlinedSplat(OpBuilder &b, Location loc, Value operand) {
  ElementsAttr attr = constantOf(operand);
  if (!attr || !attr.isSplat() || !isa<FloatType>(attr.getElementType())) return nullptr;
  auto value = attr.getSplatValue<APFloat>();
  return arith::ConstantOp::create(b, loc, FloatAttr::get(attr.getElementType(), value));
}
} // namespace

llm::ElementwiseOp createElementwise(RewriterBase &rewriter, Location loc, Type resultType,
                                     ValueRange inputs, ScalarBuilder body) {
  auto op = llm::ElementwiseOp::create(rewriter, loc, resultType, inputs);
  buildScalarRegion(rewriter, loc, op.getBody(), elementTypes(inputs), body);
  return op;
}

llm::FusedLinearOp createFusedLinear(RewriterBase &rewriter, Location loc, Type resultType,
                                     Value input, Value weight, Value bias, ValueRange extras,
                                     bool transposeWeight, bool gated, ScalarBuilder epilogue) {
  auto op = llm::FusedLinearOp::create(rewriter, loc, resultType, input, weight, bias, extras,
                                       transposeWeight, gated);
  SmallVector<Type> scalars(gated ? 2 : 1, getElementTypeOrSelf(resultType));
  llvm::append_range(scalars, elementTypes(extras));
  buildScalarRegion(rewriter, loc, op.getEpilogue(), scalars, epilogue);
  return op;
}

LogicalResult defineBefore(ValueRange values, Operation *point) {
  for (Value value : values) {
    Operation *def = value ? value.getDefiningOp() : nullptr;
    if (!def || def->getBlock() != point->getBlock() || def->isBeforeInBlock(point)) continue;
    if (def->getNumOperands() != 0) return failure();
    def->moveBefore(point);
  }
  return success();
}

bool onlyUsedBy(Value value, Operation *op) {
  return !value.use_empty() &&
         llvm::all_of(value.getUsers(), [&](Operation *user) { return user == op; });
}

FailureOr<llm::FusedLinearOp> absorbIntoEpilogue(PatternRewriter &rewriter, Operation *gemm,
                                                 llm::ScalarFunctionOpInterface consumer) {
  Value product = gemm->getResult(0);
  Operation *op = consumer.getOperation();
  if (!onlyUsedBy(product, op))
    return rewriter.notifyMatchFailure(op, "the GEMM's result has other users");
  if (product.getType() != op->getResult(0).getType())
    return rewriter.notifyMatchFailure(op, "reads the GEMM's result broadcast, not per element");

  Value input, weight, bias;
  bool transposed = false, gated = false;
  SmallVector<Value> extras;
  Region *oldEpilogue = nullptr;
  if (auto linear = dyn_cast<llm::LinearOp>(gemm)) {
    input = linear.getInput(), weight = linear.getWeight(), bias = linear.getBias();
    transposed = linear.getTransposeWeight();
  } else {
    auto fused = cast<llm::FusedLinearOp>(gemm);
    input = fused.getInput(), weight = fused.getWeight(), bias = fused.getBias();
    transposed = fused.getTransposeWeight(), gated = fused.getGated();
    llvm::append_range(extras, fused.getExtras());
    oldEpilogue = &fused.getEpilogue();
  }
  unsigned oldExtras = extras.size();
  // The consumer's other operands: inlined splats, or new extras.
  SmallVector<int> extraOf(op->getNumOperands(), -1);
  for (OpOperand &operand : op->getOpOperands()) {
    Value value = operand.get();
    if (value == product || (constantOf(value) && constantOf(value).isSplat())) continue;
    int64_t rank = rankOf(value);
    bool perElement = value.getType() == product.getType();
    bool perColumn = rank == 1 && dimOf(value, 0) == dimOf(product, -1) &&
                     !ShapedType::isDynamic(dimOf(value, 0));
    if (!perElement && !perColumn)
      return rewriter.notifyMatchFailure(op, "has an operand that is neither per element nor per column");
    auto known = llvm::find(extras, value);
    extraOf[operand.getOperandNumber()] = known - extras.begin();
    if (known == extras.end()) extras.push_back(value);
  }
  SmallVector<Value> needed{input, weight, bias};
  llvm::append_range(needed, extras);
  if (failed(defineBefore(needed, op)))
    return rewriter.notifyMatchFailure(op, "an operand is defined after the consumer");

  unsigned accumulators = gated ? 2 : 1;
  rewriter.setInsertionPoint(op);
  auto fused = createFusedLinear(
      rewriter, op->getLoc(), op->getResult(0).getType(), input, weight, bias, extras, transposed,
      gated, [&](OpBuilder &b, Location loc, ValueRange scalars) {
        ValueRange accs = scalars.take_front(accumulators);
        ValueRange extraScalars = scalars.drop_front(accumulators);
        Value value = accs.front();
        if (oldEpilogue) {
          SmallVector<Value> oldScalars(accs);
          llvm::append_range(oldScalars, extraScalars.take_front(oldExtras));
          value = llm::inlineScalarBody(b, *oldEpilogue, oldScalars);
        }
        SmallVector<Value> operands;
        for (OpOperand &operand : op->getOpOperands()) {
          if (operand.get() == product) operands.push_back(value);
          else if (extraOf[operand.getOperandNumber()] >= 0)
            operands.push_back(extraScalars[extraOf[operand.getOperandNumber()]]);
          else operands.push_back(inlinedSplat(b, loc, operand.get()));
        }
        return consumer.buildScalar(b, loc, operands);
      });
  rewriter.replaceOp(op, fused.getResult());
  rewriter.eraseOp(gemm);
  return fused;
}

} // namespace llmc::fusion
