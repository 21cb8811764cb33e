//===- FuseAddNorm.cpp - residual add + norm in one kernel ----------------===//
//
// Every decoder layer adds a block's output to the residual stream and
// normalises the sum. Fused, the stream is read once per row and the sum is
// written once, instead of written, read back, and read again by the norm.
//
//===----------------------------------------------------------------------===//
#include "passes/Fusion/FusionUtils.h"

#include "llmc/Support/MatchFailureListener.h"

#define DEBUG_TYPE "llm-fuse-add-norm"

namespace llmc {
#define GEN_PASS_DEF_LLMFUSEADDNORMPASS
#include "passes/Fusion/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// norm(add(a, b)) -> add_norm(a, b), whose sum replaces the add for its
/// other users. The fused op sits where the add was, so it dominates them.
template <typename NormOp, typename AddNormOp>
struct FuseAddIntoNorm : OpRewritePattern<NormOp> {
  using OpRewritePattern<NormOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(NormOp norm, PatternRewriter &rewriter) const override {
    auto add = norm.getInput().template getDefiningOp<llm::AddOp>();
    if (!add) return rewriter.notifyMatchFailure(norm, "its input is not an llm.add");
    if (add.getLhs().getType() != add.getType() || add.getRhs().getType() != add.getType())
      return rewriter.notifyMatchFailure(norm, "the add broadcasts an operand");
    SmallVector<Value> normOperands(norm->getOperands().drop_front());
    if (failed(fusion::defineBefore(normOperands, add)))
      return rewriter.notifyMatchFailure(norm, "its weight is computed after the add");

    rewriter.setInsertionPoint(add);
    SmallVector<Value> operands{add.getLhs(), add.getRhs()};
    llvm::append_range(operands, normOperands);
    auto fused = AddNormOp::create(rewriter, norm.getLoc(),
                                            TypeRange{add.getType(), norm.getType()}, operands,
                                            norm->getAttrs());
    rewriter.replaceOp(norm, fused->getResult(1));
    rewriter.replaceOp(add, fused->getResult(0));
    return success();
  }
};

struct LlmFuseAddNormPass : impl::LlmFuseAddNormPassBase<LlmFuseAddNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAddIntoNorm<llm::RmsNormOp, llm::AddRmsNormOp>,
                 FuseAddIntoNorm<llm::LayerNormOp, llm::AddLayerNormOp>>(&getContext());
    if (failed(applyPatternsExplained(getOperation(), std::move(patterns), DEBUG_TYPE)))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
