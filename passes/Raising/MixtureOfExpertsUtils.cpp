//===- MixtureOfExpertsUtils.cpp - what the MoE matchers share ------------===//
//
// The exports' mixture-of-experts blocks differ in how they run the experts
// (a loop over them, every expert on every token, the pairs sorted by
// expert) but share their router, a projection of the token rows, and their
// stacked [experts, in, out] weights, which llm.moe holds transposed.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include <algorithm>

using namespace mlir;

namespace llmc::raising {

int64_t RouterProjection::experts() const { return dimOf(weight, transposed ? 0 : 1); }

Value RouterProjection::create(OpBuilder &builder, Location loc) const {
  auto inputType = cast<RankedTensorType>(input.getType());
  auto type = RankedTensorType::get({inputType.getDimSize(0), inputType.getDimSize(1), experts()},
                                    inputType.getElementType());
  return llm::LinearOp::create(builder, loc, type, input, weight, bias, transposed);
}

FailureOr<RouterProjection> matchRouterProjection(Value logits, std::string &why) {
  RouterProjection router;
  if (auto gemm = definedBy<onnx::GemmOp>(logits)) {
    if (gemm.getTransA() != 0 || gemm.getAlpha().convertToFloat() != 1.0f ||
        !isConstant(gemm.getB()) ||
        (!isNone(gemm.getC()) && (gemm.getBeta().convertToFloat() != 1.0f ||
                                  !isConstant(gemm.getC()) || rankOf(gemm.getC()) != 1)))
      return fail(why, "the router is not a Gemm of the rows by constant weights");
    router.flatInput = gemm.getA();
    router.weight = gemm.getB();
    router.transposed = gemm.getTransB() != 0;
    router.bias = optionalOperand(gemm.getC());
  } else {
    Value product = logits;
    if (auto add = definedBy<onnx::AddOp>(logits)) {
      auto [matmul, bias] = operandDefinedBy<onnx::MatMulOp>(add);
      if (!matmul || !isConstant(bias) || rankOf(bias) != 1)
        return fail(why, "the router's bias is not a constant");
      router.bias = bias;
      product = matmul;
    }
    auto matmul = definedBy<onnx::MatMulOp>(product);
    if (!matmul || !isConstant(matmul.getB()))
      return fail(why, "the router is not a Gemm or MatMul by constant weights");
    router.flatInput = matmul.getA();
    router.weight = matmul.getB();
  }
  auto reshape = definedBy<onnx::ReshapeOp>(router.flatInput);
  if (!reshape || rankOf(reshape.getData()) != 3 || rankOf(reshape) != 2 ||
      rankOf(router.weight) != 2 || dimOf(reshape.getData(), 2) != dimOf(reshape, 1))
    return fail(why, "the router does not read the [batch, seq, hidden] input as rows");
  router.input = reshape.getData();
  if (router.bias && dimOf(router.bias, 0) != router.experts())
    return fail(why, "the router's bias is not one value per expert");
  return router;
}

namespace {

/// The columns a Slice of the last axis of a tensor `width` wide takes.
std::optional<Columns> sliceColumns(onnx::SliceOp slice, int64_t width) {
  auto taken = slice ? lastAxisSlice(slice) : std::nullopt;
  if (!taken || taken->step < 1) return std::nullopt;
  auto clamp = [&](int64_t index) {
    return std::clamp<int64_t>(index < 0 ? index + width : index, 0, width);
  };
  Columns columns{clamp(taken->start), taken->step, 0};
  int64_t end = clamp(taken->end);
  columns.count = end > columns.start ? llvm::divideCeil(end - columns.start, columns.step) : 0;
  return columns;
}

/// The columns `part` takes of the last axis of a projection: a Slice of
/// it, or one of the two halves of a Split of it. Sets `projection`.
std::optional<Columns> projectionColumns(Value part, Value &projection) {
  if (auto slice = definedBy<onnx::SliceOp>(part)) {
    projection = slice.getData();
    int64_t width = dimOf(projection, -1);
    return ShapedType::isDynamic(width) ? std::nullopt : sliceColumns(slice, width);
  }
  std::optional<int64_t> which = lastAxisHalf(part, projection);
  if (!which) return std::nullopt;
  int64_t half = dimOf(projection, -1) / 2;
  return Columns{*which * half, 1, half};
}

} // namespace

FailureOr<ExpertActivation> matchExpertActivation(Value hidden, std::string &why) {
  // (up [+ 1]) * (g * Sigmoid(g [* alpha])), g and up columns of one projection.
  auto product = definedBy<onnx::MulOp>(hidden);
  if (!product) return fail(why, "an expert is not a gated MLP");
  onnx::MulOp glu;
  Value upSide;
  for (auto [a, b] : {std::pair(product.getA(), product.getB()),
                      std::pair(product.getB(), product.getA())}) {
    auto mul = definedBy<onnx::MulOp>(a);
    if (mul && operandDefinedBy<onnx::SigmoidOp>(mul).first) {
      glu = mul;
      upSide = b;
      break;
    }
  }
  if (!glu) return fail(why, "an expert's activation is not g * sigmoid(g)");
  auto [sigmoid, gate] = operandDefinedBy<onnx::SigmoidOp>(glu);
  Value sigmoidInput = sigmoid.getX();
  double alpha = 1.0;
  if (auto scaled = definedBy<onnx::MulOp>(sigmoidInput)) {
    auto [constant, base] = std::pair(scaled.getB(), scaled.getA());
    if (!constantScalar(constant)) std::swap(constant, base);
    if (!constantScalar(constant)) return fail(why, "the sigmoid's scale is not a constant");
    alpha = *constantScalar(constant);
    sigmoidInput = base;
  }
  if (sigmoidInput != gate) return fail(why, "an expert's sigmoid does not read its gate");

  ExpertActivation activation;
  // gpt-oss: g = Clip(g, max L), up = Clip(up, -L, L) + 1.
  if (auto gateClip = definedBy<onnx::ClipOp>(gate)) {
    auto limit = constantScalar(gateClip.getMax());
    auto plusOne = definedBy<onnx::AddOp>(upSide);
    auto [upClip, one] = plusOne ? operandDefinedBy<onnx::ClipOp>(plusOne)
                                 : std::pair<onnx::ClipOp, Value>();
    if (!isNone(gateClip.getMin()) || !limit || *limit <= 0 || !upClip ||
        !isConstantScalar(one, 1.0) || !isConstantScalar(upClip.getMin(), -*limit) ||
        !isConstantScalar(upClip.getMax(), *limit))
      return fail(why, "an expert's clamps are not gpt-oss's: min(g, L) and clamp(up, -L, L) + 1");
    activation.limit = static_cast<float>(*limit);
    activation.alpha = static_cast<float>(alpha);
    gate = gateClip.getInput();
    upSide = upClip.getInput();
  } else if (alpha != 1.0) {
    return fail(why, "an expert's sigmoid is scaled without gpt-oss's clamps");
  }

  Value upProjection;
  auto gateColumns = projectionColumns(gate, activation.projection);
  auto upColumns = projectionColumns(upSide, upProjection);
  if (!gateColumns || !upColumns || activation.projection != upProjection)
    return fail(why, "an expert's gate and up are not columns of one projection");
  if (gateColumns->count != upColumns->count ||
      2 * gateColumns->count != dimOf(activation.projection, -1))
    return fail(why, "the gate and up columns do not split the projection's outputs in two");
  activation.gate = *gateColumns;
  activation.up = *upColumns;
  return activation;
}

std::vector<float> transposedExpertColumns(ArrayRef<float> weights, int64_t experts, int64_t in,
                                           int64_t out, const Columns &columns) {
  std::vector<float> split;
  split.reserve(experts * columns.count * in);
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t c = 0; c < columns.count; ++c)
      for (int64_t i = 0; i < in; ++i) split.push_back(weights[(e * in + i) * out + columns.at(c)]);
  return split;
}

std::vector<float> expertBiasColumns(ArrayRef<float> bias, int64_t experts, int64_t out,
                                     const Columns &columns) {
  std::vector<float> split;
  split.reserve(experts * columns.count);
  for (int64_t e = 0; e < experts; ++e)
    for (int64_t c = 0; c < columns.count; ++c) split.push_back(bias[e * out + columns.at(c)]);
  return split;
}

} // namespace llmc::raising
