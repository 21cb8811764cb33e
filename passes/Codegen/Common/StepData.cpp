//===- StepData.cpp - what target lowerings read off the planned step -----===//
#include "passes/Codegen/Common/StepData.h"

#include "passes/Serving/StepFunction.h"
#include "llmc/Support/ElementsData.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace llmc::codegen {

/// Unpacks an llm.dequantize of constants into f32 [rows, cols] at compile
/// time: value = (q - zero_point) * scale, per block of `block_size` along a
/// row, q packed low bits first.
FailureOr<ElementsAttr> dequantizeConstant(llm::DequantizeOp op) {
  auto constantOf = [](Value value) -> ElementsAttr {
    auto constant = value ? value.getDefiningOp<llm::ConstantOp>() : nullptr;
    return constant ? dyn_cast<ElementsAttr>(constant.getValue()) : nullptr;
  };
  ElementsAttr data = constantOf(op.getData()), scales = constantOf(op.getScales());
  ElementsAttr zeroPoints = constantOf(op.getZeroPoints());
  bool hasZeroPoints = static_cast<bool>(op.getZeroPoints());
  auto resultType = dyn_cast<RankedTensorType>(op.getType());
  if (!data || !scales || (hasZeroPoints && !zeroPoints) || !resultType ||
      !resultType.hasStaticShape() || resultType.getRank() != 2)
    return op.emitOpError("is only lowered for constant operands and a static 2-D result"),
           failure();
  if (!scales.getElementType().isF32())
    return op.emitOpError("has non-f32 scales; only f32 models are lowered"), failure();
  int64_t bits = op.getBits(), blockSize = op.getBlockSize();
  if ((bits != 4 && bits != 8) || blockSize <= 0)
    return op.emitOpError("is only lowered for 4- and 8-bit blocks"), failure();

  std::vector<char> dataStorage, scaleStorage, zeroStorage;
  auto dataBytes = elementsBytes(data, dataStorage);
  auto scaleBytes = elementsBytes(scales, scaleStorage);
  FailureOr<ArrayRef<char>> zeroBytes = ArrayRef<char>();
  if (hasZeroPoints) zeroBytes = elementsBytes(zeroPoints, zeroStorage);
  if (failed(dataBytes) || failed(scaleBytes) || failed(zeroBytes))
    return op.emitOpError("has a constant operand without readable data"), failure();

  int64_t rows = resultType.getDimSize(0), cols = resultType.getDimSize(1);
  int64_t blocks = llvm::divideCeil(cols, blockSize);
  int64_t rowBytes = blocks * blockSize * bits / 8;
  bool floatZeroPoints = hasZeroPoints && zeroPoints.getElementType().isF32();
  // Packed zero points hold one value per block, `bits` wide, rows padded to bytes.
  int64_t zeroRowBytes = llvm::divideCeil(blocks * bits, 8);
  if (static_cast<int64_t>(dataBytes->size()) < rows * rowBytes ||
      static_cast<int64_t>(scaleBytes->size()) < rows * blocks * 4 ||
      (hasZeroPoints && static_cast<int64_t>(zeroBytes->size()) <
                            rows * (floatZeroPoints ? blocks * 4 : zeroRowBytes)))
    return op.emitOpError("has operands too small for its ") << rows << "x" << cols << " result",
           failure();

  auto packed = [&](ArrayRef<char> bytes, int64_t base, int64_t index) -> int64_t {
    auto byte = static_cast<uint8_t>(bytes[base + index * bits / 8]);
    return bits == 8 ? byte : (index % 2 ? byte >> 4 : byte & 0xF);
  };
  const auto *scaleValues = reinterpret_cast<const float *>(scaleBytes->data());
  const auto *zeroFloats = reinterpret_cast<const float *>(zeroBytes->data());
  std::vector<float> values(rows * cols);
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t col = 0; col < cols; ++col) {
      int64_t block = col / blockSize;
      float scale = scaleValues[row * blocks + block];
      float zero = static_cast<float>(1 << (bits - 1));
      if (floatZeroPoints) zero = zeroFloats[row * blocks + block];
      else if (hasZeroPoints) zero = static_cast<float>(packed(*zeroBytes, row * zeroRowBytes, block));
      float q = static_cast<float>(packed(*dataBytes, row * rowBytes, col));
      values[row * cols + col] = (q - zero) * scale;
    }
  auto type = RankedTensorType::get({rows, cols}, Float32Type::get(op.getContext()));
  return cast<ElementsAttr>(DenseResourceElementsAttr::get(
      type, "dequantized", HeapAsmResourceBlob::allocateAndCopyInferAlign(ArrayRef<float>(values))));
}

FailureOr<ElementsAttr> weightConstant(Value value, StringRef target) {
  Operation *def = value.getDefiningOp();
  ElementsAttr data;
  if (auto constant = dyn_cast_or_null<llm::ConstantOp>(def)) {
    data = dyn_cast<ElementsAttr>(constant.getValue());
  } else if (auto dequantize = dyn_cast_or_null<llm::DequantizeOp>(def)) {
    auto unpacked = dequantizeConstant(dequantize);
    if (failed(unpacked)) return failure();
    data = *unpacked;
  }
  if (!data) {
    if (def) return def->emitOpError("has no ") << target << " lowering", failure();
    return emitError(value.getLoc(), "the step reads an input the step ABI does not have"), failure();
  }
  auto type = cast<ShapedType>(data.getType());
  if (!type.hasStaticShape() || !type.getElementType().isF32())
    return def->emitOpError("is a weight that is not static f32; only f32 models are lowered"),
           failure();
  return data;
}

FailureOr<StepInfo> plannedStepInfo(func::FuncOp model) {
  StepInfo info;
  std::pair<StringRef, int64_t *> planned[] = {
      {"llmc.workspace_bytes", &info.workspaceBytes},
      {"llmc.max_num_batched_tokens", &info.maxNumBatchedTokens},
      {"llmc.max_num_seqs", &info.maxNumSeqs}};
  for (auto [name, field] : planned) {
    auto value = model->getAttrOfType<IntegerAttr>(name);
    if (!value) return model.emitError("has no ") << name << ": run llm-plan-memory first", failure();
    *field = value.getInt();
  }
  BlockArgument pool = abi::findInput(model, abi::kKvPool);
  auto poolType = pool ? dyn_cast<RankedTensorType>(pool.getType()) : nullptr;
  auto logits = model.getNumResults() == 1 ? dyn_cast<RankedTensorType>(model.getResultTypes()[0])
                                           : nullptr;
  if (!poolType || poolType.getRank() != 6 || !logits || logits.getRank() != 2)
    return model.emitError("is not a ragged step: no [layers, blocks, 2, kv_heads, block_size, "
                           "head_dim] kv_pool input or [rows, vocab] logits result"),
           failure();
  info.numLayers = poolType.getDimSize(0);
  info.numKvHeads = poolType.getDimSize(3);
  info.blockSize = poolType.getDimSize(4);
  info.headDim = poolType.getDimSize(5);
  info.vocabSize = logits.getDimSize(1);
  model.walk([&](llm::EmbeddingOp embedding) {
    info.hiddenSize = cast<ShapedType>(embedding.getType()).getShape().back();
  });
  model.walk([&](llm::PagedAttentionOp attention) {
    info.numHeads = cast<ShapedType>(attention.getType()).getDimSize(1);
  });
  if (!info.hiddenSize || !info.numHeads)
    return model.emitError("has no ") << (info.hiddenSize ? "llm.paged_attention" : "llm.embedding")
                                      << ": the manifest needs the model's "
                                      << (info.hiddenSize ? "query heads" : "hidden size"),
           failure();
  // Cached rotary tables and learned position embeddings bound the positions
  // a step may carry.
  auto bound = [&](Value table, int64_t dim) {
    int64_t rows = cast<ShapedType>(table.getType()).getDimSize(dim);
    info.maxPositions = info.maxPositions ? std::min(info.maxPositions, rows) : rows;
  };
  BlockArgument positions = abi::findInput(model, abi::kPositions);
  model.walk([&](Operation *op) {
    if (auto rope = dyn_cast<llm::RopeCachedOp>(op)) bound(rope.getCosCache(), 0);
    if (auto embedding = dyn_cast<llm::EmbeddingOp>(op); embedding && positions &&
                                                         embedding.getIds() == positions)
      bound(embedding.getTable(), embedding.getTransposeTable() ? 1 : 0);
  });
  return info;
}

} // namespace llmc::codegen
