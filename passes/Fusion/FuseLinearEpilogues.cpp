//===- FuseLinearEpilogues.cpp - named epilogues of GEMMs -----------------===//
//
// What follows a GEMM elementwise (bias, activation, the gated product of
// SwiGLU, a residual add) costs a write and a read of the whole product
// when it runs as its own kernel. In the GEMM's epilogue it is applied to
// each accumulator while it is still in a register.
//
//===----------------------------------------------------------------------===//
#include "passes/Fusion/FusionUtils.h"

#include "llmc/Support/MatchFailureListener.h"

#define DEBUG_TYPE "llm-fuse-linear-epilogues"

namespace llmc {
#define GEN_PASS_DEF_LLMFUSELINEAREPILOGUESPASS
#include "passes/Fusion/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// The GEMM (llm.linear or llm.fused_linear) that defines `value`, or null.
Operation *gemmOf(Value value) {
  Operation *def = value.getDefiningOp();
  return isa_and_nonnull<llm::LinearOp, llm::FusedLinearOp>(def) ? def : nullptr;
}

/// silu(gemm), gelu(gemm) -> gemm with the activation in its epilogue.
template <typename ActivationOp>
struct FuseActivation : OpRewritePattern<ActivationOp> {
  using OpRewritePattern<ActivationOp>::OpRewritePattern;

  LogicalResult matchAndRewrite(ActivationOp activation, PatternRewriter &rewriter) const override {
    Operation *gemm = gemmOf(activation.getInput());
    if (!gemm) return rewriter.notifyMatchFailure(activation, "its input is not a GEMM's result");
    return fusion::absorbIntoEpilogue(rewriter, gemm, activation);
  }
};

/// add(gemm, residual) -> gemm with the residual read in its epilogue.
struct FuseResidualAdd : OpRewritePattern<llm::AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(llm::AddOp add, PatternRewriter &rewriter) const override {
    for (Value side : {add.getRhs(), add.getLhs()})
      if (Operation *gemm = gemmOf(side))
        if (fusion::onlyUsedBy(side, add) && side.getType() == add.getType())
          return fusion::absorbIntoEpilogue(rewriter, gemm, add);
    return rewriter.notifyMatchFailure(add, "neither side is a GEMM result used only here");
  }
};

/// The [gate | up] halves of one product, if `gate` and `up` are results 0
/// and 1 of a two-way split of a linear used only by the split.
llm::LinearOp gatedProductOf(Value gate, Value up) {
  auto split = gate.getDefiningOp<llm::SplitOp>();
  if (!split || up.getDefiningOp() != split || split.getNumResults() != 2 ||
      cast<OpResult>(gate).getResultNumber() != 0 || cast<OpResult>(up).getResultNumber() != 1 ||
      split.getSizes()[0] != split.getSizes()[1])
    return nullptr;
  auto linear = split.getInput().getDefiningOp<llm::LinearOp>();
  return linear && fusion::onlyUsedBy(linear, split) ? linear : nullptr;
}

/// swiglu(gate, up) of the two halves of a [gate | up] linear (what
/// llm-fuse-horizontal-linears makes of the gate and up projections), or of
/// two linears of one input with constant weights -> one gated GEMM.
struct FuseSwiglu : OpRewritePattern<llm::SwigluOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(llm::SwigluOp swiglu, PatternRewriter &rewriter) const override {
    Value gate = swiglu.getGate(), up = swiglu.getUp();
    if (gate.getType() != swiglu.getType() || up.getType() != swiglu.getType())
      return rewriter.notifyMatchFailure(swiglu, "gate and up are not shaped as the result");
    if (!fusion::onlyUsedBy(gate, swiglu) || !fusion::onlyUsedBy(up, swiglu))
      return rewriter.notifyMatchFailure(swiglu, "gate or up has other users");
    Value input, weight, bias;
    bool transposed;
    SmallVector<Operation *> replaced;
    if (llm::LinearOp product = gatedProductOf(gate, up)) {
      input = product.getInput(), weight = product.getWeight(), bias = product.getBias();
      transposed = product.getTransposeWeight();
      replaced = {gate.getDefiningOp(), product};
    } else {
      auto gateLinear = gate.getDefiningOp<llm::LinearOp>();
      auto upLinear = up.getDefiningOp<llm::LinearOp>();
      if (!gateLinear || !upLinear)
        return rewriter.notifyMatchFailure(swiglu, "gate and up are not the halves of one linear "
                                                   "nor two linears");
      ElementsAttr gateWeight = fusion::constantOf(gateLinear.getWeight());
      ElementsAttr upWeight = fusion::constantOf(upLinear.getWeight());
      bool gateBias = static_cast<bool>(gateLinear.getBias());
      bool upBias = static_cast<bool>(upLinear.getBias());
      if (gateLinear.getInput() != upLinear.getInput() || !gateWeight || !upWeight ||
          gateWeight.getType() != upWeight.getType() || gateBias || upBias ||
          gateLinear.getTransposeWeight() != upLinear.getTransposeWeight())
        return rewriter.notifyMatchFailure(swiglu, "gate and up linears differ in input, weight "
                                                   "type or layout, or have biases");
      transposed = gateLinear.getTransposeWeight();
      rewriter.setInsertionPoint(swiglu);
      auto joined = fusion::concatConstants(rewriter, swiglu.getLoc(), {gateWeight, upWeight},
                                            transposed ? 0 : 1);
      if (failed(joined)) return rewriter.notifyMatchFailure(swiglu, "a weight cannot be read");
      input = gateLinear.getInput(), weight = *joined, bias = gateLinear.getBias();
      replaced = {gateLinear, upLinear};
    }
    if (failed(fusion::defineBefore({input, weight, bias}, swiglu)))
      return rewriter.notifyMatchFailure(swiglu, "the GEMM's operands are defined after it");
    rewriter.setInsertionPoint(swiglu);
    auto fused = fusion::createFusedLinear(
        rewriter, swiglu.getLoc(), swiglu.getType(), input, weight, bias, {}, transposed,
        /*gated=*/true, [&](OpBuilder &b, Location loc, ValueRange accs) {
          return swiglu.buildScalar(b, loc, accs);
        });
    rewriter.replaceOp(swiglu, fused.getResult());
    for (Operation *op : replaced) rewriter.eraseOp(op);
    return success();
  }
};

/// A linear with a bias -> a fused_linear that adds it in the epilogue
/// instead of in a pass of its own.
struct FuseBias : OpRewritePattern<llm::LinearOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(llm::LinearOp linear, PatternRewriter &rewriter) const override {
    if (!linear.getBias())
      return rewriter.notifyMatchFailure(linear, "has no bias");
    auto fused = fusion::createFusedLinear(
        rewriter, linear.getLoc(), linear.getType(), linear.getInput(), linear.getWeight(),
        linear.getBias(), {}, linear.getTransposeWeight(), /*gated=*/false,
        [](OpBuilder &, Location, ValueRange accs) { return accs.front(); });
    rewriter.replaceOp(linear, fused.getResult());
    return success();
  }
};

struct LlmFuseLinearEpiloguesPass
    : impl::LlmFuseLinearEpiloguesPassBase<LlmFuseLinearEpiloguesPass> {
  using LlmFuseLinearEpiloguesPassBase::LlmFuseLinearEpiloguesPassBase;

  void runOnOperation() override {
    // Epilogues first; then the bias of linears nothing else fused with.
    // (Done the other way round, a linear whose halves feed swiglu would
    // become a fused_linear before the gated pattern saw it.)
    RewritePatternSet epilogues(&getContext());
    epilogues.add<FuseActivation<llm::SiluOp>, FuseActivation<llm::GeluOp>, FuseResidualAdd>(
        &getContext());
    if (gated) epilogues.add<FuseSwiglu>(&getContext());
    RewritePatternSet biases(&getContext());
    biases.add<FuseBias>(&getContext());
    if (failed(applyPatternsExplained(getOperation(), std::move(epilogues), DEBUG_TYPE)) ||
        failed(applyPatternsExplained(getOperation(), std::move(biases), DEBUG_TYPE)))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
