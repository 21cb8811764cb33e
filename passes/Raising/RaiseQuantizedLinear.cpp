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

/// MatMulNBits: a linear layer over a block-quantised [N, K] weight.
struct RaiseMatMulNBits : OpRewritePattern<onnx::MatMulNBitsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MatMulNBitsOp op, PatternRewriter &rewriter) const override {
    if (!isNone(op.getGIdx())) return rewriter.notifyMatchFailure(op, "uses g_idx (act-order)");
    Type element = cast<ShapedType>(op.getA().getType()).getElementType();
    auto weightType = RankedTensorType::get({op.getN(), op.getK()}, element);
    Value weight = llm::DequantizeOp::create(rewriter, op.getLoc(), weightType, op.getB(),
                                             op.getScales(), optionalOperand(op.getZeroPoints()),
                                             op.getBitsAttr(),
                                             op.getBlockSizeAttr());
    auto linear = llm::LinearOp::create(rewriter, op.getLoc(), op.getType(), op.getA(), weight,
                                        optionalOperand(op.getBias()));
    linear.setTransposeWeight(true);
    rewriter.replaceOp(op, linear);
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

/// An onnx.constant of uint8 bytes.
Value createBytesConstant(OpBuilder &builder, Location loc, ArrayRef<int64_t> shape,
                          ArrayRef<uint8_t> bytes) {
  auto type = RankedTensorType::get(shape, builder.getIntegerType(8, /*isSigned=*/false));
  auto &manager = DenseResourceElementsHandle::getManagerInterface(builder.getContext());
  auto blob = HeapAsmResourceBlob::allocateAndCopyInferAlign(bytes);
  auto value = DenseResourceElementsAttr::get(type, manager.insert("repacked", std::move(blob)));
  return onnx::ConstantOp::create(builder, loc, type, value);
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

void populateQuantizedLinearPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseQuantizedEmbedding, RaiseMatMulNBits, RaiseBlockDequantizedMatMul>(
      patterns.getContext());
}

} // namespace llmc::raising
