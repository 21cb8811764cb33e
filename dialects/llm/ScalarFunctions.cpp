//===- ScalarFunctions.cpp - the arithmetic of elementwise llm ops --------===//
//
// One definition per activation of what it computes on one element, used by
// the CPU kernels of unfused ops and by the bodies fusion builds alike: a
// fused kernel then rounds exactly as the unfused ones did. No fast-math
// flags: LLVM may not contract a multiply and an add into an FMA in one
// kernel and not in another.
//
//===----------------------------------------------------------------------===//
#include "dialects/llm/LlmDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace llmc::llm {

namespace {
Value constantLike(OpBuilder &b, Location loc, Value like, double value) {
  return arith::ConstantOp::create(b, loc, FloatAttr::get(like.getType(), value));
}

/// x / (1 + exp(-x))
Value silu(OpBuilder &b, Location loc, Value x) {
  Value negated = arith::NegFOp::create(b, loc, x);
  Value denominator =
      arith::AddFOp::create(b, loc, constantLike(b, loc, x, 1.0), math::ExpOp::create(b, loc, negated));
  return arith::DivFOp::create(b, loc, x, denominator);
}
} // namespace

Value SiluOp::buildScalar(OpBuilder &b, Location loc, ValueRange scalars) {
  return silu(b, loc, scalars[0]);
}

Value GeluOp::buildScalar(OpBuilder &b, Location loc, ValueRange scalars) {
  Value x = scalars[0];
  auto constant = [&](double value) { return constantLike(b, loc, x, value); };
  Value half = arith::MulFOp::create(b, loc, constant(0.5), x);
  Value inner;
  if (getTanhApproximation()) {
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    Value cube = arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, x, x), x);
    Value cubic = arith::AddFOp::create(b, loc, x,
                                        arith::MulFOp::create(b, loc, constant(0.044715), cube));
    inner = math::TanhOp::create(
        b, loc, arith::MulFOp::create(b, loc, constant(0.7978845608028654), cubic));
  } else {
    // 0.5 x (1 + erf(x / sqrt(2)))
    inner = math::ErfOp::create(b, loc,
                                arith::MulFOp::create(b, loc, x, constant(0.7071067811865476)));
  }
  return arith::MulFOp::create(b, loc, half, arith::AddFOp::create(b, loc, constant(1.0), inner));
}

Value SwigluOp::buildScalar(OpBuilder &b, Location loc, ValueRange scalars) {
  return arith::MulFOp::create(b, loc, silu(b, loc, scalars[0]), scalars[1]);
}

Value AddOp::buildScalar(OpBuilder &b, Location loc, ValueRange scalars) {
  return arith::AddFOp::create(b, loc, scalars[0], scalars[1]);
}

Value MulOp::buildScalar(OpBuilder &b, Location loc, ValueRange scalars) {
  return arith::MulFOp::create(b, loc, scalars[0], scalars[1]);
}

Value CastOp::buildScalar(OpBuilder &b, Location loc, ValueRange scalars) {
  Value x = scalars[0];
  Type to = getElementTypeOrSelf(getType());
  if (x.getType() == to) return x;
  auto from = dyn_cast<FloatType>(x.getType());
  auto target = dyn_cast<FloatType>(to);
  if (!from || !target) return nullptr; // integer casts of activations do not occur
  if (from.getWidth() < target.getWidth()) return arith::ExtFOp::create(b, loc, to, x);
  return arith::TruncFOp::create(b, loc, to, x);
}

Value inlineScalarBody(OpBuilder &b, Region &body, ValueRange scalars) {
  Block &block = body.front();
  IRMapping mapping;
  mapping.map(block.getArguments(), scalars);
  for (Operation &op : block.without_terminator()) b.clone(op, mapping);
  return mapping.lookupOrDefault(cast<YieldOp>(block.getTerminator()).getValue());
}

Value ElementwiseOp::buildScalar(OpBuilder &b, Location, ValueRange scalars) {
  return inlineScalarBody(b, getBody(), scalars);
}

} // namespace llmc::llm
