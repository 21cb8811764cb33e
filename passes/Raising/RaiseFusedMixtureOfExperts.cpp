//===- RaiseFusedMixtureOfExperts.cpp - onnxruntime's MoE op to llm.moe ---===//
//
// onnxruntime-genai's model builder writes gpt-oss's experts as one
// com.microsoft MoE per layer:
//
//   logits = Reshape(MatMul(x, router) + router_bias, [-1, experts])
//   y      = MoE(x, logits, fc1 [experts, 2 inter, hidden], fc1_bias,
//                fc2 [experts, hidden, inter], fc2_bias)
//            {activation_type swiglu, swiglu_fusion 1, k, normalize_routing_weights,
//             activation_alpha, activation_beta, swiglu_limit}
//
// Its weights already are llm.moe's [experts, out, in]; fc1's rows hold the
// gate's and the up's outputs interleaved (swiglu_fusion 1), which raising
// splits. llm.moe computes swiglu as silu(g) * u (alpha 1, beta 0, no limit)
// or gpt-oss's clamped form (a limit, beta 1). Every other activation, the
// other fusions (which onnxruntime's CPU kernel refuses, so that no
// reference computes them) and the sparse mixer are refused by name.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "llvm/Support/FormatVariadic.h"

#include <cstdio>

using namespace mlir;

namespace llmc::raising {
namespace {

/// `value` as C's %g writes it: 1.702, 1, 7.
std::string shortest(float value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", static_cast<double>(value));
  return text;
}

/// What of an MoE op llm.moe does not compute, named; nullopt when nothing.
std::optional<std::string> featureOf(onnx::MoEOp op) {
  if (op.getActivationType() != "swiglu")
    return llvm::formatv("an MoE activation_type '{0}' (llm.moe computes swiglu experts)",
                         op.getActivationType())
        .str();
  if (op.getSwigluFusion() != 1)
    return llvm::formatv("an MoE with swiglu_fusion {0} (the gate and up rows not interleaved)",
                         op.getSwigluFusion())
        .str();
  if (op.getUseSparseMixer() != 0) return std::string("an MoE's sparse mixer");
  float alpha = op.getActivationAlpha().convertToFloat();
  float beta = op.getActivationBeta().convertToFloat();
  auto limit = op.getSwigluLimit();
  bool plain = !limit && alpha == 1.0f && beta == 0.0f;
  bool clamped = limit && limit->convertToFloat() > 0.0f && beta == 1.0f;
  if (!plain && !clamped)
    return llvm::formatv("an MoE swiglu with activation_alpha {0}, activation_beta {1} and "
                         "{2} (llm.moe computes silu(g) * u, or gpt-oss's clamped form: a "
                         "positive limit and beta 1)",
                         shortest(alpha), shortest(beta),
                         limit ? "swiglu_limit " + shortest(limit->convertToFloat())
                               : std::string("no swiglu_limit"))
        .str();
  return std::nullopt;
}

/// The even and the odd rows of a constant [experts, 2 n, in] weight (or of
/// a constant [experts, 2 n] bias, `in` 1): the gate's and the up's of
/// interleaved rows, as f32 constants named after `source` (".gate", ".up").
/// The constant is read once.
FailureOr<std::pair<Value, Value>> interleavedHalves(PatternRewriter &rewriter, Value source) {
  auto data = readConstantFloats(source);
  auto type = cast<RankedTensorType>(source.getType());
  int64_t experts = type.getDimSize(0), rows = type.getDimSize(1);
  int64_t in = type.getRank() == 3 ? type.getDimSize(2) : 1;
  if (!data || static_cast<int64_t>(data->size()) != experts * rows * in) return failure();
  SmallVector<int64_t> shape{experts, rows / 2};
  if (type.getRank() == 3) shape.push_back(in);
  auto half = [&](int64_t first, StringRef name) {
    std::vector<float> picked;
    picked.reserve(experts * rows / 2 * in);
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t row = first; row < rows; row += 2)
        for (int64_t i = 0; i < in; ++i) picked.push_back((*data)[(e * rows + row) * in + i]);
    Location loc = source.getLoc();
    if (auto named = dyn_cast<NameLoc>(loc))
      loc = NameLoc::get(rewriter.getStringAttr(named.getName().getValue() + "." + name),
                         named.getChildLoc());
    return createF32Constant(rewriter, loc, shape, picked);
  };
  return std::pair(half(0, "gate"), half(1, "up"));
}

/// The router's logits as llm.moe takes them: rows like the input's. A 3-D
/// input's are the [batch, seq, experts] product the Reshape to [tokens,
/// experts] flattens.
Value routerLogitsFor(onnx::MoEOp op) {
  Value logits = op.getRouterProbs(), input = op.getInput();
  if (rankOf(input) == 2 && rankOf(logits) == 2) return logits;
  auto flatten = definedBy<onnx::ReshapeOp>(logits);
  if (rankOf(input) != 3 || !flatten || rankOf(flatten.getData()) != 3 ||
      !sameDim(flatten.getData(), 0, input, 0) || !sameDim(flatten.getData(), 1, input, 1))
    return {};
  return flatten.getData();
}

struct RaiseMoE : OpRewritePattern<onnx::MoEOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MoEOp op, PatternRewriter &rewriter) const override {
    if (auto feature = featureOf(op)) return rewriter.notifyMatchFailure(op, "uses " + *feature);
    Value logits = routerLogitsFor(op);
    if (!logits)
      return rewriter.notifyMatchFailure(op, "the router logits are not the input's rows");
    Value fc1 = op.getFc1ExpertsWeights(), fc2 = op.getFc2ExpertsWeights();
    Value fc1Bias = optionalOperand(op.getFc1ExpertsBias());
    Value fc2Bias = optionalOperand(op.getFc2ExpertsBias());
    if (!isNone(op.getFc3ExpertsWeights()) || !isNone(op.getFc3ExpertsBias()))
      return rewriter.notifyMatchFailure(op, "has fc3 beside a fused fc1");
    if (!isConstant(fc1) || !isConstant(fc2) || (fc1Bias && !isConstant(fc1Bias)) ||
        (fc2Bias && !isConstant(fc2Bias)))
      return rewriter.notifyMatchFailure(op, "the experts' weights are not constants");
    if (rankOf(fc1) != 3 || rankOf(fc2) != 3 || dimOf(fc1, 1) % 2 != 0)
      return rewriter.notifyMatchFailure(op, "fc1 is not [experts, 2 inter, hidden]");
    int64_t experts = dimOf(fc1, 0), inter = dimOf(fc1, 1) / 2, hidden = dimOf(fc1, 2);
    if (ShapedType::isDynamic(experts) || ShapedType::isDynamic(hidden) ||
        dimOf(fc2, 0) != experts || dimOf(fc2, 1) != hidden || dimOf(fc2, 2) != inter ||
        dimOf(op.getInput(), -1) != hidden || dimOf(logits, -1) != experts)
      return rewriter.notifyMatchFailure(
          op, "the weights are not fc1 [experts, 2 inter, hidden] and fc2 [experts, hidden, "
              "inter] over the input's hidden size and the router's experts");
    if ((fc1Bias && (rankOf(fc1Bias) != 2 || dimOf(fc1Bias, 0) != experts ||
                     dimOf(fc1Bias, 1) != 2 * inter)) ||
        (fc2Bias && (rankOf(fc2Bias) != 2 || dimOf(fc2Bias, 0) != experts ||
                     dimOf(fc2Bias, 1) != hidden)))
      return rewriter.notifyMatchFailure(op, "the biases are not [experts, out]");
    if (op.getK() < 1 || op.getK() > experts)
      return rewriter.notifyMatchFailure(op, "k is not in [1, experts]");

    auto gateUp = interleavedHalves(rewriter, fc1);
    if (failed(gateUp))
      return rewriter.notifyMatchFailure(op, "fc1 is not an f32 constant of its shape");
    Value gateBias, upBias;
    if (fc1Bias) {
      auto biases = interleavedHalves(rewriter, fc1Bias);
      if (failed(biases))
        return rewriter.notifyMatchFailure(op, "fc1's bias is not an f32 constant of its shape");
      std::tie(gateBias, upBias) = *biases;
    }
    FloatAttr limit, alpha;
    if (auto clampedAt = op.getSwigluLimit()) {
      limit = rewriter.getF32FloatAttr(clampedAt->convertToFloat());
      alpha = rewriter.getF32FloatAttr(op.getActivationAlpha().convertToFloat());
    }
    auto [gate, up] = *gateUp;
    rewriter.replaceOpWithNewOp<llm::MoeOp>(op, op.getType(), op.getInput(), logits, gate, up,
                                            fc2, gateBias, upBias, fc2Bias, op.getK(),
                                            op.getNormalizeRoutingWeights() != 0, limit, alpha);
    return success();
  }
};

} // namespace

std::optional<std::string> unsupportedMixtureOfExpertsFeature(Operation *op) {
  auto moe = dyn_cast<onnx::MoEOp>(op);
  return moe ? featureOf(moe) : std::nullopt;
}

void populateFusedMixtureOfExpertsPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseMoE>(patterns.getContext());
}

} // namespace llmc::raising
