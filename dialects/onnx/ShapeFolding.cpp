//===- ShapeFolding.cpp - infer shapes and fold until fixed point ---------===//
#include "dialects/onnx/ShapeFolding.h"

#include "dialects/onnx/HostEvaluator.h"
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/ShapeInference.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace llmc::onnx {
namespace {

/// An op with one integer or boolean result computed from constants alone
/// (the index tensors torch's repeat_interleave builds: Range up to the
/// largest repeat, Less than the repeats, NonZero) -> its value, evaluated on
/// the host, as a constant. Small tensors only: these are indices, not weights.
struct EvaluateConstantIntegers : RewritePattern {
  explicit EvaluateConstantIntegers(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isa<OnnxDialect>(op->getDialect()) || isa<ConstantOp, NoneOp>(op) ||
        op->getNumResults() != 1 || op->getNumRegions() != 0 || op->getNumOperands() == 0)
      return rewriter.notifyMatchFailure(op, "not an onnx op of one result over operands");
    auto element = dyn_cast<IntegerType>(getElementTypeOrSelf(op->getResult(0)));
    if (!element) return rewriter.notifyMatchFailure(op, "its result is not integers");
    if (!llvm::all_of(op->getOperands(), [](Value operand) {
          return isa_and_present<ConstantOp, NoneOp>(operand.getDefiningOp());
        }))
      return rewriter.notifyMatchFailure(op, "an operand is not a constant");
    HostEvaluator evaluator({}, /*maxElements=*/4096);
    const HostTensor *value = evaluator.evaluate(op->getResult(0));
    if (!value) return rewriter.notifyMatchFailure(op, evaluator.failureReason);
    auto type = RankedTensorType::get(value->shape, element);
    SmallVector<APInt> ints;
    bool isSigned = !element.isUnsigned() && element.getWidth() > 1;
    for (double v : value->data)
      ints.push_back(APInt(element.getWidth(), int64_t(v), isSigned, /*implicitTrunc=*/true));
    rewriter.replaceOpWithNewOp<ConstantOp>(op, type, DenseElementsAttr::get(type, ints));
    return success();
  }
};

} // namespace

FailureOr<bool> inferShapesAndFold(func::FuncOp func, unsigned maxRounds,
                                   RewriterBase::Listener *listener) {
  RewritePatternSet patterns(func.getContext());
  IfOp::getCanonicalizationPatterns(patterns, func.getContext());
  patterns.add<EvaluateConstantIntegers>(func.getContext());
  FrozenRewritePatternSet frozen(std::move(patterns));
  GreedyRewriteConfig config;
  config.setListener(listener);
  for (unsigned round = 0; round < maxRounds; ++round) {
    bool folded = false;
    if (failed(applyPatternsGreedily(func, frozen, config, &folded))) return failure();
    FailureOr<bool> refined = refineResultTypes(func);
    if (failed(refined)) return failure();
    if (!folded && !*refined) return true;
  }
  return false;
}

} // namespace llmc::onnx
