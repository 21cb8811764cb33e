//===- BlockQuantized.cpp - packed weights read at compile time -----------===//
#include "dialects/llm/BlockQuantized.h"

#include "llmc/Support/ElementsData.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace llmc::llm {

/// The packed bytes of a code operand: a uint8 container's as they are, a
/// uint4 or int4 tensor's two codes a byte, low first (a dense attribute
/// holds them one a byte, a resource blob packed). Fails for other types.
static FailureOr<ArrayRef<char>> codeBytes(ElementsAttr attr, std::vector<char> &storage) {
  Type element = attr.getElementType();
  if (element.isUnsignedInteger(8)) return elementsBytes(attr, storage);
  if (!element.isInteger(4)) return failure();
  if (isa<DenseResourceElementsAttr>(attr)) return resourceBytes(attr);
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense) return failure();
  storage.assign((dense.getNumElements() + 1) / 2, 0);
  int64_t index = 0;
  for (const APInt &code : dense.getValues<APInt>()) {
    storage[index / 2] |= static_cast<char>((code.getZExtValue() & 0xF) << (index % 2 * 4));
    ++index;
  }
  return ArrayRef<char>(storage);
}

FailureOr<BlockQuantized> BlockQuantized::read(llm::DequantizeOp op) {
  auto constantOf = [](Value value) -> ElementsAttr {
    auto constant = value ? value.getDefiningOp<llm::ConstantOp>() : nullptr;
    return constant ? dyn_cast<ElementsAttr>(constant.getValue()) : nullptr;
  };
  ElementsAttr data = constantOf(op.getData()), scales = constantOf(op.getScales());
  ElementsAttr zeroPoints = constantOf(op.getZeroPoints());
  BlockQuantized view;
  view.zeroPointsPresent = static_cast<bool>(op.getZeroPoints());
  auto resultType = dyn_cast<RankedTensorType>(op.getType());
  if (!data || !scales || (view.zeroPointsPresent && !zeroPoints) || !resultType ||
      !resultType.hasStaticShape() || resultType.getRank() < 2)
    return op.emitOpError("is only lowered for constant operands and a static result of 2 or "
                          "more dims"),
           failure();
  if (!scales.getElementType().isF32())
    return op.emitOpError("has non-f32 scales; only f32 models are lowered"), failure();
  view.bits = op.getBits();
  view.blockSize = op.getBlockSize();
  if ((view.bits != 4 && view.bits != 8) || view.blockSize <= 0)
    return op.emitOpError("is only lowered for 4- and 8-bit blocks"), failure();
  view.signedCodes = data.getElementType().isSignlessInteger(4);
  // Stacked matrices [..., rows, cols] are one matrix of all their rows.
  view.cols = resultType.getShape().back();
  view.rows = resultType.getNumElements() / view.cols;
  view.floatZeroPoints = view.zeroPointsPresent && zeroPoints.getElementType().isF32();

  view.storage = std::make_shared<std::vector<std::vector<char>>>(3);
  auto &stored = *view.storage;
  auto dataBytes = codeBytes(data, stored[0]);
  auto scaleBytes = elementsBytes(scales, stored[1]);
  FailureOr<ArrayRef<char>> zeroBytes = ArrayRef<char>();
  if (view.zeroPointsPresent)
    zeroBytes = view.floatZeroPoints ? elementsBytes(zeroPoints, stored[2])
                                     : codeBytes(zeroPoints, stored[2]);
  if (failed(dataBytes) || failed(scaleBytes) || failed(zeroBytes))
    return op.emitOpError("has a constant operand without readable data"), failure();
  view.scales = *scaleBytes;

  // A uint8 container pads each row to whole blocks (codes) and whole bytes
  // (zero points); a uint4 tensor packs its rows back to back.
  int64_t blocks = view.blocks();
  bool container = data.getElementType().isUnsignedInteger(8);
  view.codes = {*dataBytes, container ? blocks * view.blockSize : view.cols};
  int64_t zeroStride = blocks;
  if (!view.floatZeroPoints && zeroPoints && zeroPoints.getElementType().isUnsignedInteger(8))
    zeroStride = (blocks * view.bits + 7) / 8 * 8 / view.bits;
  view.zeroPoints = {*zeroBytes, zeroStride};

  auto size = [](ArrayRef<char> bytes) { return static_cast<int64_t>(bytes.size()); };
  auto codeBytesFor = [&](int64_t codes) { return (codes * view.bits + 7) / 8; };
  if (size(view.codes.bytes) < codeBytesFor(view.rows * view.codes.rowStride) ||
      size(view.scales) < view.rows * blocks * 4 ||
      (view.zeroPointsPresent &&
       size(view.zeroPoints.bytes) < (view.floatZeroPoints ? view.rows * blocks * 4
                                                           : codeBytesFor(view.rows * zeroStride))))
    return op.emitOpError("has operands too small for its ") << view.rows << "x" << view.cols
                                                              << " result",
           failure();
  return view;
}

int32_t BlockQuantized::PackedCodes::at(int64_t row, int64_t index, int64_t bits,
                                        bool isSigned) const {
  int64_t code = row * rowStride + index;
  auto byte = static_cast<uint8_t>(bytes[code * bits / 8]);
  int32_t value = bits == 8 ? byte : (code % 2 ? byte >> 4 : byte & 0xF);
  return isSigned && value >= (1 << (bits - 1)) ? value - (1 << bits) : value;
}

int32_t BlockQuantized::code(int64_t row, int64_t col) const {
  // Codes past a 4-bit tensor's row (its last block's padding) are never read.
  if (col >= codes.rowStride) return 0;
  return codes.at(row, col, bits, signedCodes);
}

float BlockQuantized::scale(int64_t row, int64_t block) const {
  return reinterpret_cast<const float *>(scales.data())[row * blocks() + block];
}

float BlockQuantized::zeroPoint(int64_t row, int64_t block) const {
  if (!zeroPointsPresent) return signedCodes ? 0.0f : static_cast<float>(1 << (bits - 1));
  if (floatZeroPoints)
    return reinterpret_cast<const float *>(zeroPoints.bytes.data())[row * blocks() + block];
  return static_cast<float>(zeroPoints.at(row, block, bits, signedCodes));
}

float BlockQuantized::value(int64_t row, int64_t col) const {
  int64_t block = col / blockSize;
  return (static_cast<float>(code(row, col)) - zeroPoint(row, block)) * scale(row, block);
}

FailureOr<ElementsAttr> dequantizeConstant(llm::DequantizeOp op) {
  auto view = BlockQuantized::read(op);
  if (failed(view)) return failure();
  std::vector<float> values(view->rows * view->cols);
  for (int64_t row = 0; row < view->rows; ++row)
    for (int64_t col = 0; col < view->cols; ++col) values[row * view->cols + col] = view->value(row, col);
  auto type = RankedTensorType::get(cast<ShapedType>(op.getType()).getShape(),
                                    Float32Type::get(op.getContext()));
  return cast<ElementsAttr>(DenseResourceElementsAttr::get(
      type, "dequantized", HeapAsmResourceBlob::allocateAndCopyInferAlign(ArrayRef<float>(values))));
}

FailureOr<ElementsAttr> weightValues(Value value) {
  Operation *def = value.getDefiningOp();
  if (auto constant = dyn_cast_or_null<ConstantOp>(def))
    return ElementsAttr(dyn_cast<ElementsAttr>(constant.getValue()));
  if (auto dequantize = dyn_cast_or_null<DequantizeOp>(def)) return dequantizeConstant(dequantize);
  return ElementsAttr();
}

std::optional<ArrayRef<float>> weightFloats(Value value, std::vector<char> &storage) {
  FailureOr<ElementsAttr> values;
  {
    // A weight this cannot read is the caller's to refuse, with its own words.
    ScopedDiagnosticHandler quiet(value.getContext(), [](Diagnostic &) { return success(); });
    values = weightValues(value);
  }
  ElementsAttr attr = succeeded(values) ? *values : nullptr;
  if (!attr || !attr.getElementType().isF32()) return std::nullopt;
  auto bytes = elementsBytes(attr, storage);
  if (failed(bytes)) return std::nullopt;
  return ArrayRef<float>(reinterpret_cast<const float *>(bytes->data()),
                         bytes->size() / sizeof(float));
}

Value createWeightConstant(OpBuilder &builder, Location loc, ArrayRef<int64_t> shape,
                           ArrayRef<float> data, StringRef blobName) {
  auto type = RankedTensorType::get(shape, builder.getF32Type());
  ElementsAttr attr;
  if (data.size() <= 1024)
    attr = DenseElementsAttr::get(type, data);
  else
    attr = DenseResourceElementsAttr::get(type, blobName,
                                          HeapAsmResourceBlob::allocateAndCopyInferAlign(data));
  return ConstantOp::create(builder, loc, type, attr);
}

} // namespace llmc::llm
