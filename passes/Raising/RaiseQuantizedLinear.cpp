//===- RaiseQuantizedLinear.cpp - block-quantised linears and embeddings --===//
//
// The forms exporters write block-quantised weights in, each raised to an
// llm.linear or llm.embedding over an llm.dequantize of the packed constants
// in MatMulNBits' layout (dialects/llm/LlmOps.td), so that fusion and the
// targets see one form: com.microsoft MatMulNBits and GatherBlockQuantized
// as they are, and a MatMul by a blocked DequantizeLinear (opset 21, the QDQ
// form of onnxruntime's quantizer) repacked here.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"
#include "llmc/Support/ElementsData.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cstring>
#include <numeric>

using namespace mlir;

namespace llmc::raising {
namespace {

/// GatherBlockQuantized: an embedding over a block-quantised table.
struct RaiseQuantizedEmbedding : OpRewritePattern<onnx::GatherBlockQuantizedOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::GatherBlockQuantizedOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getGatherAxis() != 0 || op.getQuantizeAxis() != 1 || rankOf(op.getData()) != 2)
      return rewriter.notifyMatchFailure(op, "not a row gather of a 2-D table quantised along rows");
    auto resultType = dyn_cast<RankedTensorType>(op.getType());
    if (!resultType) return rewriter.notifyMatchFailure(op, "result shape unknown");
    auto tableType = RankedTensorType::get({dimOf(op.getData(), 0), resultType.getShape().back()},
                                           resultType.getElementType());
    Value table = llm::DequantizeOp::create(rewriter, op.getLoc(), tableType, op.getData(),
                                            op.getScales(), optionalOperand(op.getZeroPoints()),
                                            op.getBitsAttr(), op.getBlockSizeAttr());
    rewriter.replaceOpWithNewOp<llm::EmbeddingOp>(op, op.getType(), table, op.getIndices());
    return success();
  }
};

/// The integers of a constant of 4- or 8-bit integers, sign-extended when the
/// type is signless (ONNX's INT4/INT8) and zero-extended when unsigned; a
/// resource blob holds 4-bit values two a byte, low first.
std::optional<std::vector<int32_t>> readConstantCodes(Value value) {
  auto constant = definedBy<onnx::ConstantOp>(value);
  auto type = constant ? dyn_cast<IntegerType>(constant.getValue().getElementType()) : nullptr;
  if (!type || (type.getWidth() != 4 && type.getWidth() != 8)) return std::nullopt;
  bool isSigned = !type.isUnsigned();
  std::vector<int32_t> codes;
  Attribute attr = constant.getValue();
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    for (const APInt &code : dense.getValues<APInt>())
      codes.push_back(isSigned ? code.getSExtValue() : code.getZExtValue());
    return codes;
  }
  FailureOr<ArrayRef<char>> bytes = resourceBytes(cast<ElementsAttr>(attr));
  int64_t count = cast<ShapedType>(cast<TypedAttr>(attr).getType()).getNumElements();
  if (failed(bytes) || static_cast<int64_t>(bytes->size()) * 8 < count * type.getWidth())
    return std::nullopt;
  for (int64_t i = 0; i < count; ++i) {
    auto byte = static_cast<uint8_t>((*bytes)[i * type.getWidth() / 8]);
    int32_t code = type.getWidth() == 8 ? byte : (i % 2 ? byte >> 4 : byte & 0xF);
    int32_t half = 1 << (type.getWidth() - 1);
    codes.push_back(isSigned && code >= half ? code - 2 * half : code);
  }
  return codes;
}

/// Packs codes [rows][count] `bits` wide, low first, each row padded to
/// `rowBytes` bytes.
std::vector<uint8_t> packRows(ArrayRef<int32_t> codes, int64_t rows, int64_t count, int64_t bits,
                              int64_t rowBytes) {
  std::vector<uint8_t> packed(rows * rowBytes, 0);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t i = 0; i < count; ++i) {
      auto code = static_cast<uint8_t>(codes[row * count + i]);
      packed[row * rowBytes + i * bits / 8] |= bits == 8 ? code : code << (i % 2 * 4);
    }
  return packed;
}

/// The int32 values of a constant (MatMulNBits' g_idx), dense or a blob.
std::optional<std::vector<int32_t>> readConstantInt32s(Value value) {
  auto constant = definedBy<onnx::ConstantOp>(value);
  if (!constant || !constant.getValue().getElementType().isInteger(32)) return std::nullopt;
  if (auto ints = onnx::getConstantInts(value))
    return std::vector<int32_t>(ints->begin(), ints->end());
  FailureOr<ArrayRef<char>> bytes = resourceBytes(cast<ElementsAttr>(constant.getValue()));
  if (failed(bytes) || bytes->size() % 4) return std::nullopt;
  std::vector<int32_t> values(bytes->size() / 4);
  std::memcpy(values.data(), bytes->data(), bytes->size());
  return values;
}

/// The order that sorts the input features by quantisation group, when
/// g_idx (act-order) scatters the groups: feature order[i] goes to column i,
/// so that each block of `block` columns is one group. Empty when g_idx is
/// the plain order (k / block); failure when it is not a constant whose
/// groups hold `block` features each (the last one the rest).
FailureOr<std::vector<int32_t>> groupOrder(Value gIdx, int64_t k, int64_t block) {
  auto groups = readConstantInt32s(gIdx);
  if (!groups || static_cast<int64_t>(groups->size()) != k) return failure();
  int64_t blocks = llvm::divideCeil(k, block);
  std::vector<int64_t> sizes(blocks, 0);
  bool plain = true;
  for (int64_t i = 0; i < k; ++i) {
    int32_t group = (*groups)[i];
    if (group < 0 || group >= blocks) return failure();
    ++sizes[group];
    plain &= group == i / block;
  }
  for (int64_t b = 0; b < blocks; ++b)
    if (sizes[b] != std::min(block, k - b * block)) return failure();
  if (plain) return std::vector<int32_t>();
  std::vector<int32_t> order(k);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return (*groups)[a] < (*groups)[b]; });
  return order;
}

/// MatMulNBits' packed codes [N][blocks][block * bits / 8] with the columns
/// of each row in `order` (column i takes column order[i]'s code).
std::optional<std::vector<uint8_t>> reorderCodeColumns(Value codes, int64_t n, int64_t k,
                                                       int64_t blocks, int64_t block,
                                                       int64_t bits, ArrayRef<int32_t> order) {
  auto constant = definedBy<onnx::ConstantOp>(codes);
  if (!constant) return std::nullopt;
  std::vector<char> storage;
  auto bytes = elementsBytes(constant.getValue(), storage);
  int64_t rowBytes = blocks * block * bits / 8;
  if (failed(bytes) || static_cast<int64_t>(bytes->size()) != n * rowBytes) return std::nullopt;
  auto codeAt = [&](int64_t row, int64_t column) -> int32_t {
    auto byte = static_cast<uint8_t>((*bytes)[row * rowBytes + column * bits / 8]);
    return bits == 8 ? byte : (column % 2 ? byte >> 4 : byte & 0xF);
  };
  std::vector<int32_t> reordered(n * blocks * block, 0);
  for (int64_t row = 0; row < n; ++row)
    for (int64_t column = 0; column < k; ++column)
      reordered[row * blocks * block + column] = codeAt(row, order[column]);
  return packRows(reordered, n, blocks * block, bits, rowBytes);
}

/// What of a MatMulNBits' g_idx llmc does not compute, named; nullopt when
/// it has none or a usable one.
std::optional<std::string> featureOf(onnx::MatMulNBitsOp op) {
  if (isNone(op.getGIdx())) return std::nullopt;
  auto order = groupOrder(op.getGIdx(), op.getK(), op.getBlockSize());
  if (failed(order))
    return std::string("a g_idx that is not a constant grouping block_size input features per "
                       "scale");
  Value zeroPoints = optionalOperand(op.getZeroPoints());
  if (!order->empty() && zeroPoints &&
      cast<ShapedType>(zeroPoints.getType()).getElementType().isInteger(8))
    return std::string("act-order (g_idx) with packed uint8 zero points (onnxruntime ignores "
                       "them with g_idx, using 2^(bits-1): the file means two things)");
  return std::nullopt;
}

/// MatMulNBits: a linear layer over a block-quantised [N, K] weight. With
/// act-order (a g_idx that scatters the groups) the weight's columns are
/// sorted by group and the input reordered to match (llm.permute_features).
struct RaiseMatMulNBits : OpRewritePattern<onnx::MatMulNBitsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MatMulNBitsOp op, PatternRewriter &rewriter) const override {
    if (auto feature = featureOf(op)) return rewriter.notifyMatchFailure(op, *feature);
    Type element = cast<ShapedType>(op.getA().getType()).getElementType();
    int64_t n = op.getN(), k = op.getK(), block = op.getBlockSize(), bits = op.getBits();
    Location loc = op.getLoc();
    Value input = op.getA(), codes = op.getB();
    std::vector<int32_t> order;
    if (!isNone(op.getGIdx())) order = *groupOrder(op.getGIdx(), k, block);
    if (!order.empty()) {
      int64_t blocks = llvm::divideCeil(k, block);
      auto packed = reorderCodeColumns(codes, n, k, blocks, block, bits, order);
      if (!packed) return rewriter.notifyMatchFailure(op, "B is not a constant of packed codes");
      codes = createBytesConstant(rewriter, loc, {n, blocks, block * bits / 8}, *packed);
      auto indexType = RankedTensorType::get({k}, rewriter.getI32Type());
      Value indices = onnx::ConstantOp::create(
          rewriter, loc, indexType, DenseElementsAttr::get(indexType, ArrayRef<int32_t>(order)));
      input = llm::PermuteFeaturesOp::create(rewriter, loc, input.getType(), input, indices);
    }
    auto weightType = RankedTensorType::get({n, k}, element);
    Value weight = llm::DequantizeOp::create(rewriter, loc, weightType, codes, op.getScales(),
                                             optionalOperand(op.getZeroPoints()),
                                             op.getBitsAttr(), op.getBlockSizeAttr());
    auto linear = llm::LinearOp::create(rewriter, loc, op.getType(), input, weight,
                                        optionalOperand(op.getBias()));
    linear.setTransposeWeight(true);
    rewriter.replaceOp(op, linear);
    return success();
  }
};

/// MatMul(A, DequantizeLinear(codes [K, N], scales [K/block, N], zero points))
/// with blocks along K: an llm.linear over the weight transposed to [N, K]
/// in MatMulNBits' layout. Signed codes are stored biased by 2^(bits-1), as
/// are their zero points (absent: 0, which biased is the layout's default);
/// unsigned codes without zero points get explicit zeros (DequantizeLinear's
/// default is 0, the layout's 2^(bits-1)).
struct RaiseBlockDequantizedMatMul : OpRewritePattern<onnx::MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MatMulOp op, PatternRewriter &rewriter) const override {
    auto dequantize = definedBy<onnx::DequantizeLinearOp>(op.getB());
    if (!dequantize) return rewriter.notifyMatchFailure(op, "B is not a DequantizeLinear");
    int64_t block = dequantize.getBlockSize();
    auto codeType = dyn_cast<RankedTensorType>(dequantize.getX().getType());
    if (block <= 0)
      return rewriter.notifyMatchFailure(op, "B is dequantized per tensor or per axis, not by blocks");
    if (!codeType || codeType.getRank() != 2 || !codeType.hasStaticShape() ||
        onnx::normalizeAxis(dequantize.getAxis(), 2) != 0)
      return rewriter.notifyMatchFailure(op, "B is not a static [K, N] weight blocked along K");
    auto resultType = dyn_cast<RankedTensorType>(op.getType());
    if (!resultType || !resultType.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "the product is not f32");
    auto codes = readConstantCodes(dequantize.getX());
    auto scales = readConstantFloats(dequantize.getXScale());
    std::optional<std::vector<int32_t>> zeroPoints;
    Value zeroPointOperand = optionalOperand(dequantize.getXZeroPoint());
    if (zeroPointOperand) zeroPoints = readConstantCodes(zeroPointOperand);
    if (!codes || !scales || (zeroPointOperand && !zeroPoints))
      return rewriter.notifyMatchFailure(
          op, "B's codes, scales or zero points are not constants of 4- or 8-bit integers and f32");
    int64_t k = codeType.getDimSize(0), n = codeType.getDimSize(1);
    int64_t blocks = llvm::divideCeil(k, block);
    if (static_cast<int64_t>(scales->size()) != blocks * n ||
        (zeroPoints && static_cast<int64_t>(zeroPoints->size()) != blocks * n))
      return rewriter.notifyMatchFailure(op, "B's scales are not [ceil(K / block), N]");
    int64_t bits = codeType.getElementTypeBitWidth();
    int32_t bias = codeType.getElementType().isUnsignedInteger() ? 0 : 1 << (bits - 1);

    // Transposed: row n holds column n's codes along K, padded to whole blocks.
    std::vector<int32_t> rows(n * blocks * block, 0);
    std::vector<float> rowScales(n * blocks);
    std::vector<int32_t> rowZeros(n * blocks);
    for (int64_t col = 0; col < n; ++col) {
      for (int64_t i = 0; i < k; ++i) rows[col * blocks * block + i] = (*codes)[i * n + col] + bias;
      for (int64_t b = 0; b < blocks; ++b) {
        rowScales[col * blocks + b] = (*scales)[b * n + col];
        rowZeros[col * blocks + b] = (zeroPoints ? (*zeroPoints)[b * n + col] : 0) + bias;
      }
    }
    Location loc = op.getLoc();
    Value data = createBytesConstant(
        rewriter, loc, {n, blocks, block * bits / 8},
        packRows(rows, n, blocks * block, bits, blocks * block * bits / 8));
    Value scaleConstant = createF32Constant(rewriter, loc, {n, blocks}, rowScales);
    Value zeroConstant;
    if (zeroPoints || !bias) {
      int64_t zeroRowBytes = llvm::divideCeil(blocks * bits, 8);
      zeroConstant = createBytesConstant(rewriter, loc, {n, zeroRowBytes},
                                         packRows(rowZeros, n, blocks, bits, zeroRowBytes));
    }
    auto weightType = RankedTensorType::get({n, k}, rewriter.getF32Type());
    Value weight = llm::DequantizeOp::create(rewriter, loc, weightType, data, scaleConstant,
                                             zeroConstant, rewriter.getI64IntegerAttr(bits),
                                             rewriter.getI64IntegerAttr(block));
    auto linear = llm::LinearOp::create(rewriter, loc, resultType, op.getA(), weight, Value());
    linear.setTransposeWeight(true);
    rewriter.replaceOp(op, linear);
    return success();
  }
};

} // namespace

std::optional<std::string> unsupportedQuantizationFeature(Operation *op) {
  if (auto matmul = dyn_cast<onnx::MatMulNBitsOp>(op)) return featureOf(matmul);
  return std::nullopt;
}

void populateQuantizedLinearPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseQuantizedEmbedding, RaiseMatMulNBits, RaiseBlockDequantizedMatMul>(
      patterns.getContext());
}

} // namespace llmc::raising
