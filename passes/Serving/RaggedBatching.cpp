//===- RaggedBatching.cpp - [batch, seq] -> [tokens] ----------------------===//
//
// A padded [batch, seq] step wastes the work of every pad token and cannot mix
// a 500-token prefill chunk with decode tokens of other sequences. Every op of
// the paged model except attention treats tokens independently, so the batch
// and sequence dims can become one [tokens] dim; attention finds each
// sequence's rows through cu_seqlens_q.
//
//===----------------------------------------------------------------------===//
#include "passes/Serving/Passes.h"
#include "passes/Serving/StepFunction.h"

#include "llmc/Artifact/StepInfo.h"
#include "llmc/Support/TensorShape.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/BitVector.h"

#define DEBUG_TYPE "llm-ragged-batching"

namespace llmc {
#define GEN_PASS_DEF_LLMRAGGEDBATCHINGPASS
#include "passes/Serving/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

constexpr int64_t kDynamic = ShapedType::kDynamic;

/// `type` with its leading [batch] dim and its [seq] dim `seqDim` merged into
/// one leading [tokens] dim.
RankedTensorType ragged(Type type, int64_t seqDim) {
  auto tensor = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape{kDynamic};
  for (int64_t dim = 1; dim < tensor.getRank(); ++dim)
    if (dim != seqDim) shape.push_back(tensor.getDimSize(dim));
  return RankedTensorType::get(shape, tensor.getElementType());
}

/// The ragged type of a token-wise op's result: [batch, seq, features]
/// activations lose their seq dim (1), [batch, heads, seq, head_dim] heads
/// theirs (2). Null for ops that are not token-wise.
Type raggedResultType(Operation *op, Type type) {
  if (!isa<RankedTensorType>(type)) return nullptr;
  int64_t rank = cast<RankedTensorType>(type).getRank();
  if (op->hasTrait<llm::OpTrait::TokenWise>()) return rank == 3 ? ragged(type, 1) : nullptr;
  if (op->hasTrait<llm::OpTrait::TokenWiseHeads>()) return rank == 4 ? ragged(type, 2) : nullptr;
  // The pool and dequantised weights have no token dims.
  if (isa<llm::PagedKvWriteOp, llm::DequantizeOp>(op)) return type;
  return nullptr;
}

struct LlmRaggedBatchingPass : impl::LlmRaggedBatchingPassBase<LlmRaggedBatchingPass> {
  void runOnOperation() override {
    if (failed(makeRagged(getOperation()))) signalPassFailure();
  }

  LogicalResult makeRagged(func::FuncOp func) {
    BlockArgument tokens = abi::findInput(func, abi::kTokens);
    BlockArgument positions = abi::findInput(func, abi::kPositions);
    BlockArgument slotMapping = abi::findInput(func, abi::kSlotMapping);
    BlockArgument contextLens = abi::findInput(func, abi::kContextLens);
    BlockArgument blockTables = abi::findInput(func, abi::kBlockTables);
    BlockArgument pool = abi::findInput(func, abi::kKvPool);
    if (!tokens || !positions || !slotMapping || !contextLens || !blockTables || !pool ||
        abi::findInput(func, abi::kCuSeqlensQ))
      return func.emitError("expects the paged [batch, seq] step that llm-kv-cache-paging makes");

    MLIRContext *context = func.getContext();
    auto i32 = IntegerType::get(context, 32);
    auto perToken = RankedTensorType::get({kDynamic}, i32);
    auto perSequence = RankedTensorType::get({kDynamic}, i32);

    // The step ABI's order: tokens, positions, cu_seqlens_q, context_lens,
    // block_tables, slot_mapping, logits_indices, kv_pool.
    unsigned pagedInputs = func.getNumArguments();
    Value newTokens = abi::addInput(func, abi::kTokens, perToken);
    Value newPositions = abi::addInput(func, abi::kPositions, perToken);
    Value cuSeqlens = abi::addInput(func, abi::kCuSeqlensQ, perSequence);
    Value newContextLens = abi::addInput(func, abi::kContextLens, perSequence);
    Value newBlockTables = abi::addInput(func, abi::kBlockTables, blockTables.getType());
    Value newSlotMapping = abi::addInput(func, abi::kSlotMapping, perToken);
    Value logitsIndices = abi::addInput(func, abi::kLogitsIndices, perSequence);
    Value newPool = abi::addInput(func, abi::kKvPool, pool.getType());
    tokens.replaceAllUsesWith(newTokens);
    positions.replaceAllUsesWith(newPositions);
    slotMapping.replaceAllUsesWith(newSlotMapping);
    contextLens.replaceAllUsesWith(newContextLens);
    blockTables.replaceAllUsesWith(newBlockTables);
    pool.replaceAllUsesWith(newPool);

    OpBuilder builder(context);
    Value logits;
    WalkResult walk = func.walk([&](Operation *op) {
      // Only the step's own ops have [batch, seq] results; the scalar bodies
      // of elementwise ops have none.
      if (op->getParentOp() != func.getOperation() ||
          isa<llm::ConstantOp, func::ReturnOp>(op))
        return WalkResult::advance();
      if (auto head = dyn_cast<llm::LogitsOp>(op)) {
        // Only the rows the step asks for reach the vocabulary projection.
        builder.setInsertionPoint(head);
        auto hidden = cast<RankedTensorType>(head.getInput().getType());
        auto rowsType = RankedTensorType::get({kDynamic, hidden.getDimSize(hidden.getRank() - 1)},
                                              hidden.getElementType());
        Value rows = llm::GatherRowsOp::create(builder, head.getLoc(), rowsType, head.getInput(),
                                               logitsIndices);
        head.getInputMutable().assign(rows);
        head.getResult().setType(ragged(head.getType(), 1));
        logits = head.getResult();
        return WalkResult::advance();
      }
      for (OpResult result : op->getResults()) {
        Type type = raggedResultType(op, result.getType());
        if (!type) {
          op->emitOpError("is not token-wise: llm-ragged-batching cannot flatten its [batch, seq] "
                          "dims into [tokens]");
          return WalkResult::interrupt();
        }
        result.setType(type);
      }
      if (auto attention = dyn_cast<llm::PagedAttentionOp>(op))
        attention.getCuSeqlensQMutable().assign(cuSeqlens);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted()) return failure();
    auto output = func->getAttrOfType<StringAttr>(kStepOutputAttr);
    if (!logits && output && output.getValue() == kHiddenStatesOutput) {
      // A model without its head returns the final hidden states of the
      // rows the step asks for.
      auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
      Value hidden = ret.getOperand(0);
      auto hiddenType = cast<RankedTensorType>(hidden.getType());
      builder.setInsertionPoint(ret);
      logits = llm::GatherRowsOp::create(builder, ret.getLoc(), hiddenType, hidden, logitsIndices);
      ret->setOperand(0, logits);
    }
    if (!logits) return func.emitError("has no llm.logits head to gather rows for");

    llvm::BitVector erase(func.getNumArguments());
    erase.set(0, pagedInputs);
    if (failed(func.eraseArguments(erase))) return failure();
    func.setFunctionType(FunctionType::get(context, func.getArgumentTypes(), {logits.getType()}));
    // Verify the rewritten body here, so a bad combination names its op.
    return verify(func);
  }
};

} // namespace
} // namespace llmc
