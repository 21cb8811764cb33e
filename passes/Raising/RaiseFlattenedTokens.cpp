//===- RaiseFlattenedTokens.cpp - layers computed on flattened tokens -----===//
//
// Some exports flatten [batch, seq, features] activations to [batch*seq,
// features] for a stretch of layers and restore the two dims after it:
// GPT-2's Conv1D layers (torch exports addmm as Gemm between two Reshapes),
// OPT's whole feed-forward block (LayerNorm, fc1, ReLU, fc2 and the residual
// add on the flattened tokens). The llm ops compute token by token on
// [batch, seq, features], so the flattening is moved down past each layer
// that reads it, one layer at a time, until it meets the Reshape that
// restores the dims, and both go.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

using namespace mlir;

namespace llmc::raising {
namespace {

/// The [b, s, n] value whose tokens `flat` = Reshape(x[b, s, n] -> [-1, n])
/// flattens, or null.
Value flattenedTokens(Value flat) {
  auto reshape = definedBy<onnx::ReshapeOp>(flat);
  if (!reshape || rankOf(flat) != 2 || ShapedType::isDynamic(dimOf(flat, 1))) return {};
  Value x = reshape.getData();
  if (rankOf(x) != 3 || dimOf(x, 2) != dimOf(flat, 1)) return {};
  return x;
}

/// Whether `op` computes each token's row from that row alone, so that it
/// may run on [b, s, f] instead of [b*s, f]: a Gemm by a constant weight
/// (x * W + bias), an activation, an add or a product (a gated MLP's), or an
/// llm op that computes token by token.
bool isTokenWise(Operation *op) {
  if (auto gemm = dyn_cast<onnx::GemmOp>(op))
    return !gemm.getTransA() && gemm.getAlpha().convertToFloat() == 1.0f &&
           gemm.getBeta().convertToFloat() == 1.0f && isConstant(gemm.getB()) &&
           rankOf(gemm.getB()) == 2 &&
           (isNone(gemm.getC()) || (isConstant(gemm.getC()) && rankOf(gemm.getC()) == 1));
  return isa<onnx::ReluOp, onnx::GeluOp, onnx::TanhOp, onnx::SigmoidOp, onnx::ErfOp,
             onnx::AddOp, onnx::MulOp>(op) ||
         op->hasTrait<llm::OpTrait::TokenWise>();
}

/// A token-wise layer that reads flattened tokens -> the layer on [b, s, f],
/// its results flattened again for their users. Every operand must be
/// flattened tokens of one batch and sequence, or a constant: an llm op's
/// weight, or what an onnx op broadcasts over the tokens alike (a scalar or
/// one value per feature; a constant [tokens, f] would not broadcast the
/// same over [b, s, f]).
struct UnflattenTokenWiseLayer : RewritePattern {
  UnflattenTokenWiseLayer(MLIRContext *context)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, context) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!isTokenWise(op)) return failure();
    SmallVector<Value> operands;
    Value first;
    for (Value operand : op->getOperands()) {
      Value tokens = flattenedTokens(operand);
      bool weight = isConstant(operand) || definedBy<llm::ConstantOp>(operand);
      if (!tokens && !isNone(operand) &&
          (!weight || (isa<onnx::OnnxDialect>(op->getDialect()) && !isa<onnx::GemmOp>(op) &&
                       rankOf(operand) > 1)))
        return rewriter.notifyMatchFailure(op, "an operand is neither flattened tokens nor a "
                                               "constant that broadcasts over them");
      if (tokens && !first) first = tokens;
      if (tokens && (!sameDim(tokens, 0, first, 0) || !sameDim(tokens, 1, first, 1)))
        return rewriter.notifyMatchFailure(op, "operands flatten different tokens");
      operands.push_back(tokens ? tokens : operand);
    }
    if (!first) return rewriter.notifyMatchFailure(op, "reads no flattened tokens");
    if (isa<onnx::GemmOp>(op) && !flattenedTokens(op->getOperand(0)))
      return rewriter.notifyMatchFailure(op, "the Gemm's weight side is flattened tokens");
    for (Value result : op->getResults())
      if (rankOf(result) != 2 || ShapedType::isDynamic(dimOf(result, 1)))
        return rewriter.notifyMatchFailure(op, "a result is not [tokens, features]");

    auto tokensType = [&](Value flat) {
      return RankedTensorType::get({dimOf(first, 0), dimOf(first, 1), dimOf(flat, 1)},
                                   getElementTypeOrSelf(flat));
    };
    Operation *layer;
    if (auto gemm = dyn_cast<onnx::GemmOp>(op)) {
      auto linear = llm::LinearOp::create(rewriter, op->getLoc(), tokensType(gemm.getY()),
                                          operands[0], gemm.getB(),
                                          optionalOperand(gemm.getC()));
      if (gemm.getTransB()) linear.setTransposeWeight(true);
      layer = linear;
    } else {
      layer = rewriter.clone(*op);
      layer->setOperands(operands);
      for (Value result : layer->getResults()) result.setType(tokensType(result));
    }
    SmallVector<Value> flattened;
    for (auto [result, flat] : llvm::zip(layer->getResults(), op->getResults()))
      flattened.push_back(flattenTokens(rewriter, op->getLoc(), result, flat.getType()));
    rewriter.replaceOp(op, flattened);
    return success();
  }
};

/// Reshape(Reshape(y[b, s, f] -> [-1, f]) -> [b, s, f]) -> y: the dims
/// restored; also once the two Reshapes are folded into one, y -> [b, s, f].
struct RestoreFlattenedTokens : OpRewritePattern<onnx::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ReshapeOp op, PatternRewriter &rewriter) const override {
    Value tokens = flattenedTokens(op.getData());
    if (!tokens && rankOf(op.getData()) == 3) tokens = op.getData();
    if (!tokens || tokens.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "does not reshape flattened tokens to their type");
    if (!sameDim(op, 0, tokens, 0) || !sameDim(op, 1, tokens, 1))
      return rewriter.notifyMatchFailure(op, "the target is not the tokens' [b, s]");
    rewriter.replaceOp(op, tokens);
    return success();
  }
};

/// Reshape(Transpose(heads[b, H, s, D], [0, 2, 1, 3]) -> [-1, H*D]) ->
/// Reshape(merge_heads(heads) -> [-1, H*D]): the attention's heads merged and
/// flattened at once (GPT-2's output projection), as flattened tokens.
struct FlattenMergedHeads : OpRewritePattern<onnx::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ReshapeOp op, PatternRewriter &rewriter) const override {
    auto transpose = definedBy<onnx::TransposeOp>(op.getData());
    if (!hasPerm(transpose, {0, 2, 1, 3}) || rankOf(op) != 2)
      return rewriter.notifyMatchFailure(op, "does not flatten heads transposed back");
    Value x = transpose.getData();
    int64_t heads = dimOf(x, 1), head = dimOf(x, 3);
    if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(head) ||
        dimOf(op, 1) != heads * head)
      return rewriter.notifyMatchFailure(op, "not [b, s, H, D] -> [-1, H*D]");
    auto type = RankedTensorType::get({dimOf(x, 0), dimOf(x, 2), heads * head},
                                      getElementTypeOrSelf(x));
    Value merged = llm::MergeHeadsOp::create(rewriter, transpose.getLoc(), type, x);
    rewriter.replaceOp(op, flattenTokens(rewriter, op.getLoc(), merged, op.getType()));
    return success();
  }
};

} // namespace

Value flattenTokens(OpBuilder &builder, Location loc, Value tokens, Type flatType) {
  auto shapeType = RankedTensorType::get({2}, builder.getI64Type());
  Value shape = onnx::ConstantOp::create(
      builder, loc, shapeType,
      DenseIntElementsAttr::get(shapeType, ArrayRef<int64_t>{-1, dimOf(tokens, 2)}));
  return onnx::ReshapeOp::create(builder, loc, flatType, tokens, shape);
}

void populateFlattenedTokenPatterns(RewritePatternSet &patterns) {
  patterns.add<UnflattenTokenWiseLayer, RestoreFlattenedTokens, FlattenMergedHeads>(
      patterns.getContext());
}

} // namespace llmc::raising
