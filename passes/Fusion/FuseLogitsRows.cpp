//===- FuseLogitsRows.cpp - row-wise ops only on the rows with logits -----===//
//
// A prefill of T tokens needs logits for one row per sequence. Every op
// between the last attention and the logits head computes a row from that
// row alone, so gathering the rows first does 1/T of the work and gives the
// same values.
//
//===----------------------------------------------------------------------===//
#include "passes/Fusion/FusionUtils.h"

#include "llmc/Support/MatchFailureListener.h"

#include "mlir/IR/IRMapping.h"

#define DEBUG_TYPE "llm-fuse-logits-rows"

namespace llmc {
#define GEN_PASS_DEF_LLMFUSELOGITSROWSPASS
#include "passes/Fusion/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// Whether a gather may move above `op`: a row-wise op with one result.
bool isRowWise(Operation *op) {
  return op->hasTrait<llm::OpTrait::RowWise>() && op->getNumResults() == 1;
}

/// Whether `value` has one row per token (a leading dynamic dim); weights,
/// per-column vectors and scalars have static shapes.
bool isPerRow(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.getRank() >= 1 && type.isDynamicDim(0);
}

/// gather_rows(f(x, w)) -> f(gather_rows(x), w) for a row-wise f whose
/// result only the gather reads.
struct GatherBeforeRowWiseOp : OpRewritePattern<llm::GatherRowsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(llm::GatherRowsOp gather, PatternRewriter &rewriter) const override {
    Operation *producer = gather.getInput().getDefiningOp();
    if (!producer || !isRowWise(producer))
      return rewriter.notifyMatchFailure(gather, "its input is not made by a row-wise op");
    // Every user must gather the same rows (a value read twice by a chain
    // that was gathered op by op): one op on the rows then serves them all.
    SmallVector<llm::GatherRowsOp> gathers;
    for (Operation *user : gather.getInput().getUsers()) {
      auto other = dyn_cast<llm::GatherRowsOp>(user);
      if (!other || other.getIndices() != gather.getIndices())
        return rewriter.notifyMatchFailure(gather, "the rows it gathers from have other users");
      if (!llvm::is_contained(gathers, other)) gathers.push_back(other);
    }
    if (rankOf(gather.getInput()) != 2)
      return rewriter.notifyMatchFailure(gather, "gathers from a tensor that is not [tokens, features]");

    rewriter.setInsertionPoint(producer);
    IRMapping mapping;
    for (Value operand : producer->getOperands()) {
      if (!isPerRow(operand) || mapping.contains(operand)) continue;
      auto rows = cast<RankedTensorType>(operand.getType());
      Value gathered = llm::GatherRowsOp::create(rewriter, gather.getLoc(), rows, operand,
                                                 gather.getIndices());
      mapping.map(operand, gathered);
    }
    if (failed(fusion::defineBefore(gather.getIndices(), producer)))
      return rewriter.notifyMatchFailure(gather, "the indices are defined after the row-wise op");
    Operation *onRows = rewriter.clone(*producer, mapping);
    for (llm::GatherRowsOp each : gathers) rewriter.replaceOp(each, onRows->getResults());
    rewriter.eraseOp(producer);
    return success();
  }
};

struct LlmFuseLogitsRowsPass : impl::LlmFuseLogitsRowsPassBase<LlmFuseLogitsRowsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<GatherBeforeRowWiseOp>(&getContext());
    if (failed(applyPatternsExplained(getOperation(), std::move(patterns), DEBUG_TYPE)))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
