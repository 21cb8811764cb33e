//===- FuseElementwise.cpp - generic fusion of elementwise chains ---------===//
//
// A model with an activation no pattern names (QuickGELU, squared ReLU, a
// scaled residual) is raised to chains of llm.elementwise ops. Without
// fusion each link writes and reads the whole activation; here producers
// are inlined into their consumers' scalar bodies, and a chain that starts
// at a GEMM becomes its epilogue, whatever the arithmetic.
//
//===----------------------------------------------------------------------===//
#include "passes/Fusion/FusionUtils.h"

#include "llmc/Support/MatchFailureListener.h"

#define DEBUG_TYPE "llm-fuse-elementwise"

namespace llmc {
#define GEN_PASS_DEF_LLMFUSEELEMENTWISEPASS
#include "passes/Fusion/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// consumer(producer(a, b), c) -> elementwise(a, b, c) with the producer's
/// scalar function inlined into the consumer's.
struct InlineElementwiseProducer
    : OpInterfaceRewritePattern<llm::ScalarFunctionOpInterface> {
  InlineElementwiseProducer(MLIRContext *context, bool recompute)
      : OpInterfaceRewritePattern(context), recompute(recompute) {}

  LogicalResult matchAndRewrite(llm::ScalarFunctionOpInterface consumer,
                                PatternRewriter &rewriter) const override {
    Operation *op = consumer.getOperation();
    llm::ScalarFunctionOpInterface producer;
    for (Value operand : op->getOperands()) {
      auto candidate = operand.getDefiningOp<llm::ScalarFunctionOpInterface>();
      if (!candidate || candidate->getNumResults() != 1) continue;
      if (!recompute && !fusion::onlyUsedBy(operand, op)) continue;
      producer = candidate;
      break;
    }
    if (!producer)
      return rewriter.notifyMatchFailure(op, recompute ? "no operand is made by an elementwise op"
                                                       : "no operand is made by an elementwise op "
                                                         "used only here");
    Value produced = producer->getResult(0);
    SmallVector<Value> inputs;
    auto addInput = [&](Value value) {
      if (!llvm::is_contained(inputs, value)) inputs.push_back(value);
    };
    for (Value operand : op->getOperands())
      if (operand != produced) addInput(operand);
    for (Value operand : producer->getOperands()) addInput(operand);
    if (failed(fusion::defineBefore(inputs, op)))
      return rewriter.notifyMatchFailure(op, "an input of the producer is defined after the consumer");

    rewriter.setInsertionPoint(op);
    auto fused = fusion::createElementwise(
        rewriter, op->getLoc(), op->getResult(0).getType(), inputs,
        [&](OpBuilder &b, Location loc, ValueRange scalars) {
          auto scalarOf = [&](Value value) {
            return scalars[llvm::find(inputs, value) - inputs.begin()];
          };
          SmallVector<Value> producerScalars =
              llvm::map_to_vector(producer->getOperands(), scalarOf);
          Value inner = producer.buildScalar(b, loc, producerScalars);
          SmallVector<Value> consumerScalars;
          for (Value operand : op->getOperands())
            consumerScalars.push_back(operand == produced ? inner : scalarOf(operand));
          return consumer.buildScalar(b, loc, consumerScalars);
        });
    rewriter.replaceOp(op, fused.getResult());
    if (produced.use_empty()) rewriter.eraseOp(producer);
    return success();
  }

  bool recompute;
};

/// elementwise(gemm, ...) -> the GEMM with the elementwise op as (more of)
/// its epilogue.
struct FuseIntoGemmEpilogue : OpInterfaceRewritePattern<llm::ScalarFunctionOpInterface> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;

  LogicalResult matchAndRewrite(llm::ScalarFunctionOpInterface consumer,
                                PatternRewriter &rewriter) const override {
    Operation *op = consumer.getOperation();
    for (Value operand : op->getOperands()) {
      Operation *gemm = operand.getDefiningOp();
      if (isa_and_nonnull<llm::LinearOp, llm::FusedLinearOp>(gemm) &&
          fusion::onlyUsedBy(operand, op) && operand.getType() == op->getResult(0).getType())
        return fusion::absorbIntoEpilogue(rewriter, gemm, consumer);
    }
    return rewriter.notifyMatchFailure(op, "no operand is a GEMM result used only here");
  }
};

struct LlmFuseElementwisePass : impl::LlmFuseElementwisePassBase<LlmFuseElementwisePass> {
  using LlmFuseElementwisePassBase::LlmFuseElementwisePassBase;

  void runOnOperation() override {
    // Chains first, so that a whole chain, not its first link, lands in the
    // GEMM's epilogue.
    RewritePatternSet chains(&getContext());
    chains.add<InlineElementwiseProducer>(&getContext(), recompute);
    RewritePatternSet epilogues(&getContext());
    epilogues.add<FuseIntoGemmEpilogue>(&getContext());
    if (failed(applyPatternsExplained(getOperation(), std::move(chains), DEBUG_TYPE)) ||
        failed(applyPatternsExplained(getOperation(), std::move(epilogues), DEBUG_TYPE)))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
