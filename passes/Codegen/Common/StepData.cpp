//===- StepData.cpp - what target lowerings read off the planned step -----===//
#include "passes/Codegen/Common/StepData.h"
#include "dialects/llm/BlockQuantized.h"

#include "passes/Serving/StepFunction.h"
#include "llmc/Support/ElementsData.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <vector>

using namespace mlir;

namespace llmc::codegen {

FailureOr<ElementsAttr> weightConstant(Value value, StringRef target) {
  Operation *def = value.getDefiningOp();
  FailureOr<ElementsAttr> values = llm::weightValues(value);
  if (failed(values)) return failure();
  ElementsAttr data = *values;
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

FailureOr<ElementsAttr> transposedWeightConstant(Value value, StringRef target) {
  auto data = weightConstant(value, target);
  if (failed(data)) return failure();
  auto type = cast<ShapedType>(data->getType());
  std::vector<char> storage;
  auto bytes = elementsBytes(*data, storage);
  if (failed(bytes) || type.getRank() != 2)
    return value.getDefiningOp()->emitOpError("is a matmul weight without 2-D data"), failure();
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  const auto *source = reinterpret_cast<const float *>(bytes->data());
  std::vector<float> transposed(rows * cols);
  // In tiles, so that neither side strides through memory a float at a time:
  // a billion-parameter model's weights go through here.
  constexpr int64_t kTile = 32;
  for (int64_t row0 = 0; row0 < rows; row0 += kTile)
    for (int64_t col0 = 0; col0 < cols; col0 += kTile)
      for (int64_t row = row0; row < std::min(rows, row0 + kTile); ++row)
        for (int64_t col = col0; col < std::min(cols, col0 + kTile); ++col)
          transposed[col * rows + row] = source[row * cols + col];
  auto transposedType = RankedTensorType::get({cols, rows}, type.getElementType());
  return cast<ElementsAttr>(DenseResourceElementsAttr::get(
      transposedType, "transposed",
      HeapAsmResourceBlob::allocateAndCopyInferAlign(ArrayRef<float>(transposed))));
}

StringRef stepOutput(func::FuncOp model) {
  auto output = model->getAttrOfType<StringAttr>(kStepOutputAttr);
  return output ? output.getValue() : StringRef(kLogitsOutput);
}

bool hiddenStatesStep(func::FuncOp model) { return stepOutput(model) == kHiddenStatesOutput; }

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
    return model.emitError("is not a ragged step: no [layers, blocks, rows, kv_heads, block_size, "
                           "head_dim] kv_pool input or [rows, vocab] logits result"),
           failure();
  info.numLayers = poolType.getDimSize(0);
  // Grouped by window, the pool holds one group's layers a block.
  if (auto groups = model->getAttrOfType<ArrayAttr>(kKvGroupsAttr)) {
    info.numLayers = 0;
    for (auto group : groups.getAsRange<DictionaryAttr>())
      info.numLayers += group.getAs<DenseI64ArrayAttr>("layers").size();
  }
  info.numKvHeads = poolType.getDimSize(3);
  info.blockSize = poolType.getDimSize(4);
  info.kvRows = poolType.getDimSize(2);
  info.headDim = llm::cachedHeadDim(poolType);
  info.vocabSize = logits.getDimSize(1);
  info.hiddenSize = abi::hiddenSize(model);
  // A step of hidden states has no LM head, nor a classifier's: the token
  // table gives the vocabulary.
  bool hiddenStates = hiddenStatesStep(model);
  bool classLogits = stepOutput(model) == kClassLogitsOutput;
  if (classLogits) info.numLabels = logits.getDimSize(1);
  BlockArgument tokens = abi::findInput(model, abi::kTokens);
  model.walk([&](llm::EmbeddingOp embedding) {
    if ((hiddenStates || classLogits) && embedding.getIds() == tokens)
      info.vocabSize = cast<ShapedType>(embedding.getTable().getType())
                           .getDimSize(embedding.getTransposeTable() ? 1 : 0);
  });
  if (hiddenStates && logits.getDimSize(1) != info.hiddenSize)
    return model.emitError("returns hidden states of ")
           << logits.getDimSize(1) << " features, not the model's " << info.hiddenSize,
           failure();
  // A block out of the widest window is out of every layer's: the runtime
  // gives it back. One layer without a window keeps every block.
  bool everyLayerWindowed = true;
  model.walk([&](llm::PagedAttentionOp attention) {
    info.numHeads = cast<ShapedType>(attention.getType()).getDimSize(1);
    std::optional<int64_t> window = attention.getSlidingWindow();
    everyLayerWindowed &= window.has_value();
    info.attentionWindow = std::max(info.attentionWindow, window.value_or(0));
  });
  if (!everyLayerWindowed) info.attentionWindow = 0;
  if (!info.hiddenSize || !info.numHeads)
    return model.emitError("has no ") << (info.hiddenSize ? "llm.paged_attention" : "llm.embedding")
                                      << ": the manifest needs the model's "
                                      << (info.hiddenSize ? "query heads" : "hidden size"),
           failure();
  // Cached rotary tables, learned position embeddings and what raising chose
  // up to a length bound the positions a step may carry.
  auto boundBy = [&](int64_t rows) {
    info.maxPositions = info.maxPositions ? std::min(info.maxPositions, rows) : rows;
  };
  auto bound = [&](Value table, int64_t dim) {
    boundBy(cast<ShapedType>(table.getType()).getDimSize(dim));
  };
  if (auto served = model->getAttrOfType<IntegerAttr>(kMaxPositionsAttr)) boundBy(served.getInt());
  BlockArgument positions = abi::findInput(model, abi::kPositions);
  model.walk([&](Operation *op) {
    if (auto rope = dyn_cast<llm::RopeCachedOp>(op)) bound(rope.getCosCache(), 0);
    if (auto fused = dyn_cast<llm::RopePagedKvWriteOp>(op); fused && fused.getCosCache())
      bound(fused.getCosCache(), 0);
    if (auto embedding = dyn_cast<llm::EmbeddingOp>(op); embedding && positions &&
                                                         embedding.getIds() == positions)
      bound(embedding.getTable(), embedding.getTransposeTable() ? 1 : 0);
  });
  return info;
}

} // namespace llmc::codegen
