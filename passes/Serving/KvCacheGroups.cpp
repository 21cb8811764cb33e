//===- KvCacheGroups.cpp - KV blocks owned apart by window ----------------===//
//
// A sequence of a model that alternates local (sliding-window) and global
// layers needs every block for its global layers but only its window's for
// the local ones. With one block table for all layers nothing can be given
// back; with one table per group of layers of one window, the local groups'
// tables give their old blocks back. The pool stays one pool of blocks of
// equal size (S layers' rows), so any group can take any free block: the
// layout of vLLM's hybrid KV cache allocator.
//
//===----------------------------------------------------------------------===//
#include "passes/Serving/Passes.h"
#include "passes/Serving/StepFunction.h"
#include "llmc/Artifact/StepInfo.h"

#include "llmc/Support/Debug.h"

#include "llvm/Support/Debug.h"

#include <map>

#define DEBUG_TYPE "llm-kv-cache-groups"

namespace llmc {
#define GEN_PASS_DEF_LLMKVCACHEGROUPSPASS
#include "passes/Serving/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// The ops that touch one layer's rows of the pool, and that layer's window.
struct LayerOps {
  SmallVector<Operation *> ops;
  /// 0 for none; set by the layer's llm.paged_attention.
  std::optional<int64_t> window;
};

/// The model layer an op of the pool names, and its kv_group if it has one.
std::pair<int64_t, std::optional<int64_t>> layerOf(Operation *op) {
  if (auto write = dyn_cast<llm::PagedKvWriteOp>(op)) return {write.getLayer(), write.getKvGroup()};
  if (auto fused = dyn_cast<llm::RopePagedKvWriteOp>(op)) return {fused.getLayer(), fused.getKvGroup()};
  auto attention = cast<llm::PagedAttentionOp>(op);
  return {attention.getLayer(), attention.getKvGroup()};
}

struct LlmKvCacheGroupsPass : impl::LlmKvCacheGroupsPassBase<LlmKvCacheGroupsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    BlockArgument pool = abi::findInput(func, abi::kKvPool);
    if (!pool) return;
    std::map<int64_t, LayerOps> layers;
    WalkResult walk = func.walk([&](Operation *op) {
      if (!isa<llm::PagedKvWriteOp, llm::RopePagedKvWriteOp, llm::PagedAttentionOp>(op))
        return WalkResult::advance();
      auto [layer, group] = layerOf(op);
      if (group) {
        op->emitOpError("is in KV cache group ") << *group << " already";
        return WalkResult::interrupt();
      }
      LayerOps &entry = layers[layer];
      entry.ops.push_back(op);
      if (auto attention = dyn_cast<llm::PagedAttentionOp>(op)) {
        int64_t window = attention.getSlidingWindow().value_or(0);
        if (entry.window && *entry.window != window) {
          op->emitOpError("attends over layer ")
              << layer << " with a window of " << window << " keys where another op of the "
              << "layer has " << *entry.window << ": one block table cannot serve both";
          return WalkResult::interrupt();
        }
        entry.window = window;
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted()) return signalPassFailure();

    // The layers of each window, in layer order (std::map keeps both sorted).
    std::map<int64_t, SmallVector<int64_t>> layersByWindow;
    for (auto &[layer, entry] : layers) {
      if (!entry.window) {
        entry.ops.front()->emitOpError("writes layer ")
            << layer << " of the KV pool, which no llm.paged_attention reads";
        return signalPassFailure();
      }
      layersByWindow[*entry.window].push_back(layer);
    }
    if (layersByWindow.size() < 2) {
      LLMC_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << func.getSymName()
                              << ": every layer has the same window: one group\n");
      return;
    }
    size_t slots = SIZE_MAX;
    for (const auto &entry : layersByWindow) slots = std::min(slots, entry.second.size());

    MLIRContext *context = func.getContext();
    Builder b(context);
    SmallVector<Attribute> groups;
    for (const auto &[window, windowLayers] : layersByWindow)
      for (size_t first = 0; first < windowLayers.size(); first += slots) {
        auto members = ArrayRef<int64_t>(windowLayers).slice(
            first, std::min(slots, windowLayers.size() - first));
        int64_t group = static_cast<int64_t>(groups.size());
        for (auto [slot, layer] : llvm::enumerate(members))
          for (Operation *op : layers[layer].ops) {
            op->setAttr("layer", b.getI64IntegerAttr(static_cast<int64_t>(slot)));
            op->setAttr("kv_group", b.getI64IntegerAttr(group));
          }
        groups.push_back(b.getDictionaryAttr(
            {b.getNamedAttr("window", b.getI64IntegerAttr(window)),
             b.getNamedAttr("layers", b.getDenseI64ArrayAttr(members))}));
        LLMC_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << func.getSymName() << ": group "
                                << group << ": window " << window << ", " << members.size()
                                << " layers\n");
      }

    // The pool holds S layers' rows a block; the writes thread it through.
    auto poolType = cast<RankedTensorType>(pool.getType());
    SmallVector<int64_t> shape(poolType.getShape());
    shape[0] = static_cast<int64_t>(slots);
    auto groupedType = RankedTensorType::get(shape, poolType.getElementType());
    pool.setType(groupedType);
    for (auto &[layer, entry] : layers)
      for (Operation *op : entry.ops)
        for (OpResult result : op->getResults())
          if (result.getType() == poolType) result.setType(groupedType);
    func.setType(FunctionType::get(context, func.getBody().getArgumentTypes(),
                                   func.getResultTypes()));
    func->setAttr(kKvGroupsAttr, b.getArrayAttr(groups));
  }
};

} // namespace
} // namespace llmc
