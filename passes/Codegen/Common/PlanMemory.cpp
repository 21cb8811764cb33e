//===- PlanMemory.cpp - one workspace for the step's activations ----------===//
//
// The runtime hands each step one scratch buffer. Its size is fixed at
// compile time for the largest step (max_num_batched_tokens), so buffers
// whose lives do not overlap must share memory: a 30-layer model then needs
// the activations of about one layer, not of thirty.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/Common/Passes.h"
#include "passes/Codegen/Common/StepData.h"
#include "passes/Serving/StepFunction.h"

#include "llmc/Support/Debug.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "llm-plan-memory"

namespace llmc {
#define GEN_PASS_DEF_LLMPLANMEMORYPASS
#include "passes/Codegen/Common/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

constexpr int64_t kAlignment = 64;

/// A buffer and the op indices between which it is live.
struct Buffer {
  Value root;
  int64_t bytes = 0;
  int64_t firstUse = 0, lastUse = 0;
  int64_t offset = -1;
};

/// Whether `op`'s results share its input's memory.
bool isView(Operation *op) { return op->hasTrait<llm::OpTrait::View>(); }

/// Whether `result` is the KV pool a fused write updates in place.
bool isUpdatedPool(Value result) {
  auto write = result.getDefiningOp<llm::RopePagedKvWriteOp>();
  return write && result == write.getUpdatedPool();
}

/// Whether `op`'s results need no workspace: weights, the pool (written in
/// place) and the logits (written to the step's output).
bool needsNoBuffer(Operation *op) {
  return isa<llm::ConstantOp, llm::DequantizeOp, llm::PagedKvWriteOp,
             llm::LogitsOp, func::ReturnOp>(op);
}

struct LlmPlanMemoryPass : impl::LlmPlanMemoryPassBase<LlmPlanMemoryPass> {
  using LlmPlanMemoryPassBase::LlmPlanMemoryPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (maxNumBatchedTokens <= 0 || maxNumSeqs <= 0) {
      func.emitError("max-num-batched-tokens and max-num-seqs must be positive");
      return signalPassFailure();
    }
    perSequence = abi::perSequenceValues(func);
    SmallVector<Buffer> buffers;
    DenseMap<Value, unsigned> bufferOf;
    DenseMap<Operation *, int64_t> order;
    int64_t index = 0;
    for (Operation &op : func.getBody().front()) {
      order[&op] = index++;
      if (needsNoBuffer(&op)) continue;
      if (isView(&op)) {
        // A copy of the index: inserting the results may grow the map.
        auto source = bufferOf.find(op.getOperand(0));
        if (source == bufferOf.end()) continue;
        unsigned buffer = source->second;
        for (Value result : op.getResults()) bufferOf[result] = buffer;
        continue;
      }
      for (Value result : op.getResults()) {
        if (isUpdatedPool(result)) continue;
        auto bytes = sizeOf(result);
        if (failed(bytes)) return signalPassFailure();
        bufferOf[result] = buffers.size();
        buffers.push_back({result, *bytes, order[&op], order[&op]});
      }
    }
    // A buffer lives until the last use of any value that is (a view of) it;
    // a use inside a nested region counts at its top-level op.
    Block &body = func.getBody().front();
    for (auto [value, buffer] : bufferOf)
      for (Operation *user : value.getUsers())
        if (Operation *top = body.findAncestorOpInBlock(*user))
          buffers[buffer].lastUse = std::max(buffers[buffer].lastUse, order.lookup(top));

    int64_t workspaceBytes = assignOffsets(buffers);
    annotate(func, buffers, bufferOf);
    Builder builder(func.getContext());
    func->setAttr("llmc.workspace_bytes", builder.getI64IntegerAttr(workspaceBytes));
    func->setAttr("llmc.max_num_batched_tokens", builder.getI64IntegerAttr(maxNumBatchedTokens));
    func->setAttr("llmc.max_num_seqs", builder.getI64IntegerAttr(maxNumSeqs));
    LLMC_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << buffers.size() << " buffers in "
                            << workspaceBytes << " bytes\n");
  }

  /// Bytes of `value` in the largest step: its leading dynamic dim is
  /// max_num_seqs rows for (values computed from) gathered rows,
  /// max_num_batched_tokens otherwise.
  FailureOr<int64_t> sizeOf(Value value) {
    Operation *op = value.getDefiningOp();
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || !type.getElementType().isIntOrFloat())
      return op->emitOpError("result has no ranked tensor type to plan memory for"), failure();
    int64_t rows = perSequence.contains(value) ? maxNumSeqs : maxNumBatchedTokens;
    int64_t elements = 1;
    for (auto [dim, size] : llvm::enumerate(type.getShape())) {
      if (ShapedType::isDynamic(size) && dim != 0)
        return op->emitOpError("has a dynamic dim other than the leading [tokens] one"), failure();
      elements *= ShapedType::isDynamic(size) ? rows : size;
    }
    return llvm::alignTo(elements * (type.getElementTypeBitWidth() / 8), kAlignment);
  }

  DenseSet<Value> perSequence;

  /// First fit in order of definition: each buffer takes the lowest offset
  /// where it overlaps no buffer still live. Returns the workspace size.
  static int64_t assignOffsets(MutableArrayRef<Buffer> buffers) {
    int64_t total = 0;
    SmallVector<Buffer *> live;
    for (Buffer &buffer : buffers) {
      llvm::erase_if(live, [&](Buffer *other) { return other->lastUse < buffer.firstUse; });
      llvm::sort(live, [](Buffer *a, Buffer *b) { return a->offset < b->offset; });
      int64_t offset = 0;
      for (Buffer *other : live) {
        if (offset + buffer.bytes <= other->offset) break;
        offset = std::max(offset, other->offset + other->bytes);
      }
      buffer.offset = offset;
      total = std::max(total, offset + buffer.bytes);
      live.push_back(&buffer);
    }
    return total;
  }

  static void annotate(func::FuncOp func, ArrayRef<Buffer> buffers,
                       const DenseMap<Value, unsigned> &bufferOf) {
    Builder builder(func.getContext());
    for (Operation &op : func.getBody().front()) {
      if (needsNoBuffer(&op) || isView(&op)) continue;
      SmallVector<int64_t> offsets;
      for (Value result : op.getResults()) {
        auto it = bufferOf.find(result);
        offsets.push_back(it == bufferOf.end() ? -1 : buffers[it->second].offset);
      }
      op.setAttr(codegen::kWorkspaceOffsetsAttr, builder.getDenseI64ArrayAttr(offsets));
    }
  }
};

} // namespace
} // namespace llmc
