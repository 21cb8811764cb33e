//===- RaiseLinear.cpp - embedding, linear layers, activations, residuals -===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace llmc::raising {
namespace {

/// Gather of rows of a constant float table by token ids.
struct RaiseEmbedding : OpRewritePattern<onnx::GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::GatherOp op, PatternRewriter &rewriter) const override {
    Value table = op.getData();
    // Tied models may gather from the transposed [hidden, vocab] LM head.
    auto transpose = definedBy<onnx::TransposeOp>(table);
    bool transposed = isMatrixTranspose(transpose);
    if (transposed) table = transpose.getData();
    if (!isConstant(table) || rankOf(table) != 2 ||
        !isa<FloatType>(cast<ShapedType>(table.getType()).getElementType()))
      return rewriter.notifyMatchFailure(op, "data is not a constant 2-D float table");
    if (op.getAxis() != 0) return rewriter.notifyMatchFailure(op, "does not gather rows");
    Value indices = op.getIndices();
    // Rows gathered at an offset (OPT's learned positions, position_ids + 2): the
    // table from that row on, gathered at the indices themselves.
    auto [unshifted, skipped] = peelRowOffset(indices, table);
    if (skipped && !transposed) {
      auto rows = readConstantFloats(table);
      if (!rows) return rewriter.notifyMatchFailure(op, "an offset table is not f32");
      int64_t width = dimOf(table, 1);
      table = createF32Constant(rewriter, op.getLoc(), {dimOf(table, 0) - skipped, width},
                                ArrayRef<float>(*rows).drop_front(skipped * width));
      indices = unshifted;
    }
    Type type = op.getType();
    if (op->hasAttr(kTokenPositionsAttr)) {
      // Positions the export computes (proven): the tokens' positions, as
      // llm.position_ids gives them, for every sequence of the batch.
      BlockArgument mask = findArgumentByName(op, "attention_mask");
      BlockArgument ids = findArgumentByName(op, "input_ids");
      if (!mask || !ids)
        return rewriter.notifyMatchFailure(op, "computed positions without attention_mask "
                                               "and input_ids inputs");
      indices = llm::PositionIdsOp::create(
          rewriter, op.getLoc(),
          RankedTensorType::get({dimOf(ids, 0), dimOf(ids, 1)}, rewriter.getI64Type()), mask,
          ids);
      type = RankedTensorType::get({dimOf(ids, 0), dimOf(ids, 1), dimOf(table, 1)},
                                   getElementTypeOrSelf(op.getType()));
    }
    auto embedding = llm::EmbeddingOp::create(rewriter, op.getLoc(), type, table, indices);
    if (transposed) embedding.setTransposeTable(true);
    rewriter.replaceOp(op, embedding);
    return success();
  }
};

/// MatMul by a constant weight [in, out], or by Transpose of one [out, in].
struct RaiseLinear : OpRewritePattern<onnx::MatMulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MatMulOp op, PatternRewriter &rewriter) const override {
    Value weight = op.getB();
    bool transposed = false;
    if (auto transpose = definedBy<onnx::TransposeOp>(weight)) {
      if (!isMatrixTranspose(transpose))
        return rewriter.notifyMatchFailure(op, "weight transpose is not a 2-D swap");
      weight = transpose.getData();
      transposed = true;
    }
    if (!isConstant(weight) || rankOf(weight) != 2)
      return rewriter.notifyMatchFailure(op, "B is not a constant 2-D weight");
    if (rankOf(op.getA()) < 2) return rewriter.notifyMatchFailure(op, "A is a vector");
    auto linear = llm::LinearOp::create(rewriter, op.getLoc(), op.getType(), op.getA(), weight,
                                        /*bias=*/Value());
    if (transposed) linear.setTransposeWeight(true);
    rewriter.replaceOp(op, linear);
    return success();
  }
};

/// x * Sigmoid(x) -> silu(x).
struct RaiseSilu : OpRewritePattern<onnx::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MulOp op, PatternRewriter &rewriter) const override {
    for (auto [x, gate] : {std::pair(op.getA(), op.getB()), std::pair(op.getB(), op.getA())}) {
      auto sigmoid = definedBy<onnx::SigmoidOp>(gate);
      if (sigmoid && sigmoid.getX() == x) {
        rewriter.replaceOpWithNewOp<llm::SiluOp>(op, op.getType(), x);
        return success();
      }
    }
    return rewriter.notifyMatchFailure(op, "not x * sigmoid(x)");
  }
};

struct RaiseGelu : OpRewritePattern<onnx::GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::GeluOp op, PatternRewriter &rewriter) const override {
    auto gelu = llm::GeluOp::create(rewriter, op.getLoc(), op.getType(), op.getX());
    if (op.getApproximate() == "tanh") gelu.setTanhApproximation(true);
    else if (op.getApproximate() != "none")
      return rewriter.notifyMatchFailure(op, "unknown approximation");
    rewriter.replaceOp(op, gelu);
    return success();
  }
};

/// The value `product` multiplies by the constant `factor` (either operand order).
Value factorOf(Value product, double factor) {
  auto mul = definedBy<onnx::MulOp>(product);
  if (!mul) return nullptr;
  if (isConstantScalar(mul.getB(), factor)) return mul.getA();
  if (isConstantScalar(mul.getA(), factor)) return mul.getB();
  return nullptr;
}

/// Whether `inner` is erf(x / sqrt(2)) (exact GELU), or tanh(sqrt(2/pi) *
/// (x + 0.044715 x^3)) (the tanh approximation); nullopt if neither.
std::optional<bool> geluFlavourIsTanh(Value inner, Value x) {
  if (auto erf = definedBy<onnx::ErfOp>(inner)) {
    auto div = definedBy<onnx::DivOp>(erf.getX());
    if (div && div.getA() == x && isConstantScalar(div.getB(), std::sqrt(2.0))) return false;
    if (factorOf(erf.getX(), 1.0 / std::sqrt(2.0)) == x) return false;
    return std::nullopt;
  }
  auto tanh = definedBy<onnx::TanhOp>(inner);
  Value sum = tanh ? factorOf(tanh.getX(), std::sqrt(2.0 / M_PI)) : Value();
  auto add = definedBy<onnx::AddOp>(sum);
  if (!add) return std::nullopt;
  for (auto [linear, cubic] : {std::pair(add.getA(), add.getB()), std::pair(add.getB(), add.getA())}) {
    auto pow = definedBy<onnx::PowOp>(factorOf(cubic, 0.044715));
    if (linear == x && pow && pow.getA() == x && isConstantScalar(pow.getB(), 3.0)) return true;
  }
  return std::nullopt;
}

/// GELU as torch.onnx decomposes it before opset 20:
///   (x * 0.5) * (1 + erf(x / sqrt(2)))                          exact
///   (x * 0.5) * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))   tanh approximation
struct RaiseDecomposedGelu : OpRewritePattern<onnx::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MulOp op, PatternRewriter &rewriter) const override {
    for (auto [half, onePlus] : {std::pair(op.getA(), op.getB()), std::pair(op.getB(), op.getA())}) {
      Value x = factorOf(half, 0.5);
      auto add = definedBy<onnx::AddOp>(onePlus);
      if (!x || !add) continue;
      Value inner = isConstantScalar(add.getB(), 1.0)   ? add.getA()
                    : isConstantScalar(add.getA(), 1.0) ? add.getB()
                                                        : Value();
      std::optional<bool> tanh = inner ? geluFlavourIsTanh(inner, x) : std::nullopt;
      if (!tanh) continue;
      auto gelu = llm::GeluOp::create(rewriter, op.getLoc(), op.getType(), x);
      if (*tanh) gelu.setTanhApproximation(true);
      rewriter.replaceOp(op, gelu);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "not (x * 0.5) * (1 + erf(...) or tanh(...)) of GELU");
  }
};

//===----------------------------------------------------------------------===//
// Glue
//===----------------------------------------------------------------------===//

/// Whether `value` is the graph output `logits`, or reaches it alone through
/// ops that map each logit with scalar constants (Granite's division by
/// logits_scaling, Gemma-2's softcap), which fold into the head's epilogue.
bool reachesLogitsOutput(Value value) {
  while (value.hasOneUse()) {
    OpOperand &use = *value.use_begin();
    Operation *user = use.getOwner();
    if (auto ret = dyn_cast<func::ReturnOp>(user)) {
      auto func = cast<func::FuncOp>(ret->getParentOp());
      auto name = func.getResultAttrOfType<StringAttr>(use.getOperandNumber(), "onnx.name");
      return name && name.getValue() == "logits";
    }
    if (user->getNumResults() != 1 || user->getResult(0).getType() != value.getType() ||
        !llvm::all_of(user->getOperands(), [&](Value operand) {
          return operand == value || constantScalar(operand).has_value();
        }))
      return false;
    value = user->getResult(0);
  }
  return false;
}

/// The linear whose result is the graph output `logits` is the LM head.
struct RaiseLogitsHead : OpRewritePattern<llm::LinearOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(llm::LinearOp op, PatternRewriter &rewriter) const override {
    if (!reachesLogitsOutput(op.getResult()))
      return rewriter.notifyMatchFailure(op, "does not produce the graph output 'logits'");
    rewriter.replaceOpWithNewOp<llm::LogitsOp>(op, op.getType(), op.getInput(), op.getWeight(),
                                               op.getBias(), op.getTransposeWeightAttr());
    return success();
  }
};

/// silu(gate) * up -> swiglu(gate, up).
struct RaiseSwiglu : OpRewritePattern<onnx::MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MulOp op, PatternRewriter &rewriter) const override {
    for (auto [gate, up] : {std::pair(op.getA(), op.getB()), std::pair(op.getB(), op.getA())}) {
      auto silu = definedBy<llm::SiluOp>(gate);
      if (!silu || gate.getType() != up.getType()) continue;
      rewriter.replaceOpWithNewOp<llm::SwigluOp>(op, op.getType(), silu.getInput(), up);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "not silu(gate) * up of one shape");
  }
};

/// An add of two activations of one type (residual connections).
struct RaiseResidualAdd : OpRewritePattern<onnx::AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::AddOp op, PatternRewriter &rewriter) const override {
    if (isConstant(op.getA()) || isConstant(op.getB()))
      return rewriter.notifyMatchFailure(op, "adds a constant");
    if (op.getA().getType() != op.getB().getType() || op.getA().getType() != op.getType() ||
        !isa<FloatType>(cast<ShapedType>(op.getType()).getElementType()))
      return rewriter.notifyMatchFailure(op, "operands are not two float tensors of one type");
    rewriter.replaceOpWithNewOp<llm::AddOp>(op, op.getType(), op.getA(), op.getB());
    return success();
  }
};

} // namespace

void populateLinearPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseEmbedding, RaiseLinear, RaiseSilu, RaiseGelu, RaiseDecomposedGelu>(
      patterns.getContext());
  populateQuantizedLinearPatterns(patterns);
}

void populateLinearGluePatterns(RewritePatternSet &patterns) {
  patterns.add<FoldBiasAdd<llm::LinearOp>, RaiseLogitsHead, RaiseSwiglu, RaiseResidualAdd>(
      patterns.getContext());
  populateProjectionSplitPatterns(patterns);
}

} // namespace llmc::raising
