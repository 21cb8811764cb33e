//===- GqaRewrite.cpp - attention over KV heads, not their copies ---------===//
//
// llm.attention is grouped-query: query head h reads KV head
// h / (heads / kv_heads). Exports widen K and V with repeat_kv to the query's
// head count first; feeding attention the unrepeated tensors drops that copy
// (and, after paging, lets the cache hold kv_heads heads instead of heads).
//
//===----------------------------------------------------------------------===//
#include "passes/Serving/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "llmc/Support/MatchFailureListener.h"

#define DEBUG_TYPE "llm-gqa-rewrite"

namespace llmc {
#define GEN_PASS_DEF_LLMGQAREWRITEPASS
#include "passes/Serving/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// attention(q, repeat_kv(k, r), repeat_kv(v, r)) -> attention(q, k, v).
struct AttendOverKvHeads : OpRewritePattern<llm::AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(llm::AttentionOp attention,
                                PatternRewriter &rewriter) const override {
    auto key = attention.getKey().getDefiningOp<llm::RepeatKvOp>();
    auto value = attention.getValue().getDefiningOp<llm::RepeatKvOp>();
    if (!key && !value)
      return rewriter.notifyMatchFailure(attention, "K and V are not widened by repeat_kv");
    if (!key || !value)
      return rewriter.notifyMatchFailure(attention, "only one of K and V is widened by repeat_kv");
    if (key.getRepeats() != value.getRepeats())
      return rewriter.notifyMatchFailure(attention, "K and V are repeated a different number of times");
    rewriter.modifyOpInPlace(attention, [&] {
      attention.getKeyMutable().assign(key.getInput());
      attention.getValueMutable().assign(value.getInput());
    });
    return success();
  }
};

struct LlmGqaRewritePass : impl::LlmGqaRewritePassBase<LlmGqaRewritePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AttendOverKvHeads>(&getContext());
    // The greedy driver erases the repeat_kv ops once nothing reads them.
    if (failed(applyPatternsExplained(getOperation(), std::move(patterns), DEBUG_TYPE)))
      return signalPassFailure();
  }
};

} // namespace
} // namespace llmc
