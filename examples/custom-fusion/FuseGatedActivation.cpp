//===- FuseGatedActivation.cpp - act(gate) * up into the GEMM epilogue ----===//
//
// An out-of-tree llmc fusion pass, written as llmc's own passes are: a
// rewrite pattern that explains each failed match, driven greedily over a
// function of the ragged, paged step. See Passes.td for what it does and
// docs/writing-a-fusion-pass.md for the walkthrough.
//
//===----------------------------------------------------------------------===//
#include "Passes.h"

#include "llmc/Support/MatchFailureListener.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

// `llmc compile -debug-only=llmc-example-fuse-gated-activation` (or llmc-opt)
// prints why each candidate did not match: llmc's -debug-only, which works
// in llmc's release builds (LLVM_DEBUG does not: Debian's LLVM has no
// assertions).
#define DEBUG_TYPE "llmc-example-fuse-gated-activation"

namespace llmc_example {
#define GEN_PASS_DEF_FUSEGATEDACTIVATIONPASS
#include "Passes.h.inc"
} // namespace llmc_example

using namespace mlir;
namespace llm = llmc::llm;

namespace llmc_example {
namespace {

/// Whether `value` has users and `op` is all of them.
bool onlyUsedBy(Value value, Operation *op) {
  return !value.use_empty() &&
         llvm::all_of(value.getUsers(), [&](Operation *user) { return user == op; });
}

/// Whether a fused_linear's epilogue yields its accumulator unchanged.
bool isIdentityEpilogue(llm::FusedLinearOp op) {
  Block &body = op.getEpilogue().front();
  auto yield = dyn_cast<llm::YieldOp>(body.getTerminator());
  return body.getNumArguments() == 1 && yield && yield.getValue() == body.getArgument(0);
}

/// The operands of the GEMM that computes `product`: an llm.linear, or an
/// llm.fused_linear that is nothing more (not gated, no extras, an identity
/// epilogue, as llm-fuse-linear-epilogues leaves a linear with a bias).
struct Gemm {
  Value input, weight, bias;
  bool transposeWeight = false;
};
FailureOr<Gemm> plainGemm(Value product) {
  if (auto linear = product.getDefiningOp<llm::LinearOp>())
    return Gemm{linear.getInput(), linear.getWeight(), linear.getBias(),
                linear.getTransposeWeight()};
  auto fused = product.getDefiningOp<llm::FusedLinearOp>();
  if (fused && !fused.getGated() && fused.getExtras().empty() && isIdentityEpilogue(fused))
    return Gemm{fused.getInput(), fused.getWeight(), fused.getBias(),
                fused.getTransposeWeight()};
  return failure();
}

/// elementwise(split(gemm(x)) #0, #1) -> fused_linear(x) {gated} with the
/// elementwise body as its epilogue:
///
///   %p = llm.linear %x, %W, %b
///   %g, %u = llm.split %p {sizes = [m, m]}
///   %y = llm.elementwise %g, %u { ^bb0(%gs, %us): ...; llm.yield %r }
/// becomes
///   %y = llm.fused_linear %x, %W, %b {gated} { ^bb0(%gs, %us): ...; llm.yield %r }
struct FuseGatedElementwise : OpRewritePattern<llm::ElementwiseOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(llm::ElementwiseOp op, PatternRewriter &rewriter) const override {
    if (op.getInputs().size() != 2)
      return rewriter.notifyMatchFailure(op, "does not have exactly two inputs");
    auto split = op.getInputs()[0].getDefiningOp<llm::SplitOp>();
    if (!split || op.getInputs()[1].getDefiningOp<llm::SplitOp>() != split)
      return rewriter.notifyMatchFailure(op, "the inputs are not results of one llm.split");
    if (split.getNumResults() != 2 || split.getSizes()[0] != split.getSizes()[1])
      return rewriter.notifyMatchFailure(op, "the split is not into two equal halves");
    if (op.getInputs()[0] == op.getInputs()[1])
      return rewriter.notifyMatchFailure(op, "reads one half twice");
    for (Value half : split.getResults())
      if (!onlyUsedBy(half, op))
        return rewriter.notifyMatchFailure(op, "a half of the split has other users");
    Type resultType = op.getResult().getType();
    for (Value half : split.getResults())
      if (half.getType() != resultType)
        return rewriter.notifyMatchFailure(
            op, "a half's type differs from the result's (broadcast or element type change)");

    Value product = split.getInput();
    FailureOr<Gemm> gemm = plainGemm(product);
    if (failed(gemm))
      return rewriter.notifyMatchFailure(
          op, "the split's input is not an llm.linear (or an identity llm.fused_linear)");
    if (!onlyUsedBy(product, split))
      return rewriter.notifyMatchFailure(op, "the GEMM's result has users besides the split");

    // The gated GEMM: columns [0, m) of the product are the gate, [m, 2m)
    // the up projection, and the epilogue receives (gate acc, up acc).
    auto fused = llm::FusedLinearOp::create(rewriter, op.getLoc(), resultType, gemm->input,
                                            gemm->weight, gemm->bias, /*extras=*/ValueRange(),
                                            gemm->transposeWeight, /*gated=*/true);
    Type scalar = getElementTypeOrSelf(resultType);
    Block *epilogue = rewriter.createBlock(&fused.getEpilogue(), {}, {scalar, scalar},
                                           {op.getLoc(), op.getLoc()});
    // The body's argument i is the scalar of input i, which is split result
    // 0 (gate) or 1 (up): its accumulator.
    Block &body = op.getBody().front();
    IRMapping mapping;
    for (auto [argument, input] : llvm::zip(body.getArguments(), op.getInputs()))
      mapping.map(argument, epilogue->getArgument(cast<OpResult>(input).getResultNumber()));
    for (Operation &inner : body) rewriter.clone(inner, mapping);

    rewriter.replaceOp(op, fused.getResult());
    rewriter.eraseOp(split);
    rewriter.eraseOp(product.getDefiningOp());
    return success();
  }
};

struct FuseGatedActivationPass
    : impl::FuseGatedActivationPassBase<FuseGatedActivationPass> {
  using FuseGatedActivationPassBase::FuseGatedActivationPassBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseGatedElementwise>(&getContext());
    if (failed(llmc::applyPatternsExplained(getOperation(), std::move(patterns), DEBUG_TYPE)))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc_example
