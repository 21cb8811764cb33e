//===- RaiseElementwise.cpp - activations without a name ------------------===//
//
// The last raising stage: elementwise onnx ops on activations that no
// pattern named (QuickGELU's x * sigmoid(1.702 x), squared ReLU, a scaled
// residual, a clamp) become llm.elementwise ops holding the op's scalar arithmetic,
// so that the model still compiles and llm-fuse-elementwise can fuse the
// chain. Only activation-shaped ops are taken: [batch, seq, features]
// floats whose other operands are of that type, per-feature constants or
// scalar constants, or one value per token ([batch, seq, 1]). Mask and shape
// arithmetic is left to the patterns that understand it.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace llmc::raising {
namespace {

/// The scalar arithmetic of a supported onnx op on `x` (and `y`), or null.
Value buildScalar(OpBuilder &b, Location loc, Operation *op, ValueRange s) {
  auto constant = [&](double value) {
    return arith::ConstantOp::create(b, loc, FloatAttr::get(s[0].getType(), value));
  };
  auto sigmoid = [&](Value x) {
    Value one = constant(1.0);
    Value exp = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, exp));
  };
  return TypeSwitch<Operation *, Value>(op)
      .Case([&](onnx::NegOp) { return arith::NegFOp::create(b, loc, s[0]); })
      .Case([&](onnx::SqrtOp) { return math::SqrtOp::create(b, loc, s[0]); })
      .Case([&](onnx::ReciprocalOp) { return arith::DivFOp::create(b, loc, constant(1.0), s[0]); })
      .Case([&](onnx::ExpOp) { return math::ExpOp::create(b, loc, s[0]); })
      .Case([&](onnx::LogOp) { return math::LogOp::create(b, loc, s[0]); })
      .Case([&](onnx::AbsOp) { return math::AbsFOp::create(b, loc, s[0]); })
      .Case([&](onnx::SigmoidOp) { return sigmoid(s[0]); })
      .Case([&](onnx::TanhOp) { return math::TanhOp::create(b, loc, s[0]); })
      .Case([&](onnx::ErfOp) { return math::ErfOp::create(b, loc, s[0]); })
      .Case([&](onnx::ReluOp) { return arith::MaximumFOp::create(b, loc, s[0], constant(0.0)); })
      .Case([&](onnx::SoftplusOp) {
        return math::LogOp::create(
            b, loc, arith::AddFOp::create(b, loc, math::ExpOp::create(b, loc, s[0]), constant(1.0)));
      })
      .Case([&](onnx::AddOp) { return arith::AddFOp::create(b, loc, s[0], s[1]); })
      .Case([&](onnx::SubOp) { return arith::SubFOp::create(b, loc, s[0], s[1]); })
      .Case([&](onnx::MulOp) { return arith::MulFOp::create(b, loc, s[0], s[1]); })
      .Case([&](onnx::DivOp) { return arith::DivFOp::create(b, loc, s[0], s[1]); })
      .Case([&](onnx::PowOp) { return math::PowFOp::create(b, loc, s[0], s[1]); })
      .Case([&](onnx::ClipOp) {
        Value x = s[0];
        if (s[1]) x = arith::MaximumFOp::create(b, loc, x, s[1]);
        if (s[2]) x = arith::MinimumFOp::create(b, loc, x, s[2]);
        return x;
      })
      .Default([](Operation *) { return Value(); });
}

/// Whether `op` is an onnx op buildScalar knows.
bool isSupported(Operation *op) {
  return isa<onnx::NegOp, onnx::SqrtOp, onnx::ReciprocalOp, onnx::ExpOp, onnx::LogOp, onnx::AbsOp,
             onnx::SigmoidOp, onnx::TanhOp, onnx::ErfOp, onnx::ReluOp, onnx::SoftplusOp,
             onnx::AddOp, onnx::SubOp, onnx::MulOp, onnx::DivOp, onnx::PowOp, onnx::ClipOp>(op);
}

/// The splat value of a constant operand of any shape, if it is one, as an
/// f32. An integer splat is taken too: Pow's exponent may be an integer
/// tensor (the genai builder's relu(x)^2 raises to an int32 2).
std::optional<APFloat> splatOf(Value value) {
  auto constant = definedBy<onnx::ConstantOp>(value);
  auto attr = constant ? dyn_cast<ElementsAttr>(constant.getValue()) : nullptr;
  if (!attr || !attr.isSplat()) return std::nullopt;
  if (isa<IntegerType>(attr.getElementType())) {
    APInt integer = attr.getSplatValue<APInt>();
    APFloat converted(APFloat::IEEEsingle());
    converted.convertFromAPInt(integer, !attr.getElementType().isUnsignedInteger(),
                               APFloat::rmNearestTiesToEven);
    return converted;
  }
  if (!isa<FloatType>(attr.getElementType())) return std::nullopt;
  APFloat splat = attr.getSplatValue<APFloat>();
  bool losesInfo;
  splat.convert(APFloat::IEEEsingle(), APFloat::rmNearestTiesToEven, &losesInfo);
  return splat;
}

/// Whether `operand` holds one value per token of the [batch, seq, features]
/// activation type `type`: [batch, seq, 1] (Qwen2-MoE's sigmoid gate scaling
/// the shared expert's rows).
bool isPerToken(Value operand, RankedTensorType type) {
  auto operandType = dyn_cast<RankedTensorType>(operand.getType());
  return operandType && operandType.getElementType() == type.getElementType() &&
         operandType.getShape() == ArrayRef<int64_t>{type.getDimSize(0), type.getDimSize(1), 1};
}

struct RaiseElementwiseOp : RewritePattern {
  RaiseElementwiseOp(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isSupported(op)) return failure();
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!type || type.getRank() != 3 || !type.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "its result is not an f32 [batch, seq, features] activation");
    SmallVector<Value> inputs;
    SmallVector<std::optional<APFloat>> splats;
    bool readsActivation = false;
    for (Value operand : op->getOperands()) {
      if (isa<NoneType>(operand.getType())) { // Clip's omitted bound
        splats.push_back(std::nullopt);
        continue;
      }
      std::optional<APFloat> splat = splatOf(operand);
      splats.push_back(splat);
      if (splat) continue;
      bool perFeature = isConstant(operand) && rankOf(operand) == 1 &&
                        dimOf(operand, 0) == type.getDimSize(2);
      if (operand.getType() != type && !perFeature && !isPerToken(operand, type))
        return rewriter.notifyMatchFailure(op, "an operand is neither the result's type, one "
                                               "value per token, a per-feature constant nor a "
                                               "scalar constant");
      readsActivation |= operand.getType() == type;
      if (!llvm::is_contained(inputs, operand)) inputs.push_back(operand);
    }
    if (!readsActivation) return rewriter.notifyMatchFailure(op, "reads no activation");

    auto raised = llm::ElementwiseOp::create(rewriter, op->getLoc(), type, inputs);
    {
      OpBuilder::InsertionGuard guard(rewriter);
      SmallVector<Type> scalarTypes(inputs.size(), type.getElementType());
      SmallVector<Location> locations(inputs.size(), op->getLoc());
      Block *body = rewriter.createBlock(&raised.getBody(), {}, scalarTypes, locations);
      SmallVector<Value> scalars;
      for (auto [operand, splat] : llvm::zip(op->getOperands(), splats)) {
        if (isa<NoneType>(operand.getType()))
          scalars.push_back(Value());
        else if (splat)
          scalars.push_back(arith::ConstantOp::create(
              rewriter, op->getLoc(), FloatAttr::get(type.getElementType(), *splat)));
        else
          scalars.push_back(body->getArgument(llvm::find(inputs, operand) - inputs.begin()));
      }
      llm::YieldOp::create(rewriter, op->getLoc(), buildScalar(rewriter, op->getLoc(), op, scalars));
    }
    rewriter.replaceOp(op, raised.getResult());
    return success();
  }
};

/// An elementwise op on the logits head's output alone becomes the head's
/// epilogue (composed after the one it has): the step returns the head.
struct FoldIntoLogitsEpilogue : OpRewritePattern<llm::ElementwiseOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(llm::ElementwiseOp op, PatternRewriter &rewriter) const override {
    auto head = op.getInputs().size() == 1 ? op.getInputs()[0].getDefiningOp<llm::LogitsOp>()
                                           : nullptr;
    if (!head || !head->hasOneUse() || head.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "does not map the logits head's output alone");
    Location loc = op.getLoc();
    auto logits = llm::LogitsOp::create(rewriter, loc, head.getType(), head.getInput(),
                                        head.getWeight(), head.getBias(),
                                        head.getTransposeWeightAttr());
    Type element = getElementTypeOrSelf(head.getType());
    Block *block = rewriter.createBlock(&logits.getEpilogue(), {}, {element}, {loc});
    Value logit = block->getArgument(0);
    if (!head.getEpilogue().empty())
      logit = llm::inlineScalarBody(rewriter, head.getEpilogue(), logit);
    logit = llm::inlineScalarBody(rewriter, op.getBody(), logit);
    llm::YieldOp::create(rewriter, loc, logit);
    rewriter.replaceOp(op, logits.getResult());
    rewriter.eraseOp(head);
    return success();
  }
};

} // namespace

void populateElementwisePatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseElementwiseOp, FoldIntoLogitsEpilogue>(patterns.getContext());
}

} // namespace llmc::raising
