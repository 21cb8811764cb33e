//===- RaiseFusedMixtureOfExperts.cpp - onnxruntime's MoE ops to llm.moe --===//
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
// and at int4 as QMoE, the same op over block-quantized weights: fc1's and
// fc2's unsigned codes [experts, out, in / pack] with scales per block of
// block_size inputs (or per row), the codes it requantized from the
// checkpoint's MXFP4.
//
// Their weights already are llm.moe's [experts, out, in]; fc1's rows hold the
// gate's and the up's outputs interleaved (swiglu_fusion 1), which raising
// splits (QMoE's rows stay packed, under llm.dequantize in MatMulNBits'
// layout). llm.moe computes swiglu as silu(g) * u (alpha 1, beta 0, no limit)
// or gpt-oss's clamped form (a limit, beta 1). Every other activation, the
// other fusions (which onnxruntime's CPU kernel refuses, so that no
// reference computes them), the sparse mixer and QMoE's other encodings
// (FP4, zero points, CUTLASS-prepacked codes, mixed widths) are refused by
// name.
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

/// What of an MoE or QMoE op's routing and activation llm.moe does not
/// compute, named; nullopt when nothing.
template <typename FusedMoeOp>
std::optional<std::string> activationFeatureOf(FusedMoeOp op) {
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

/// Whether a QMoE's codes fit only CUTLASS's layout, fc1 [experts, hidden, 2
/// inter / pack] and fc2 [experts, inter, hidden / pack], which the builder's
/// CUDA exports write without weights_prepacked; its raw layout is fc1
/// [experts, 2 inter, hidden / pack] and fc2 [experts, hidden, inter / pack].
bool hasCutlassLayout(onnx::QMoEOp op) {
  Value fc1 = op.getFc1ExpertsWeights(), fc2 = op.getFc2ExpertsWeights();
  int64_t hidden = dimOf(op.getInput(), -1), bits = op.getExpertWeightBits();
  if (rankOf(fc1) != 3 || rankOf(fc2) != 3 || ShapedType::isDynamic(hidden) ||
      (bits != 4 && bits != 8))
    return false;
  int64_t pack = 8 / bits;
  bool raw = dimOf(fc1, 2) * pack == hidden && dimOf(fc2, 1) == hidden &&
             2 * dimOf(fc2, 2) * pack == dimOf(fc1, 1);
  bool cutlass = dimOf(fc1, 1) == hidden && dimOf(fc2, 2) * pack == hidden &&
                 dimOf(fc1, 2) * pack == 2 * dimOf(fc2, 1);
  return cutlass && !raw;
}

/// What of a QMoE's encoding of its weights llm.dequantize does not hold,
/// named; nullopt when nothing.
std::optional<std::string> encodingFeatureOf(onnx::QMoEOp op) {
  if (op.getQuantType() != "int")
    return llvm::formatv("a QMoE of quant_type '{0}' (llm.moe's quantized experts are integer "
                         "codes)",
                         op.getQuantType())
        .str();
  int64_t bits = op.getExpertWeightBits();
  if (bits != 4 && bits != 8)
    return llvm::formatv("a QMoE of {0}-bit expert weights (4 or 8 are)", bits).str();
  for (std::optional<int64_t> width :
       {op.getFc1ExpertWeightBits(), op.getFc2ExpertWeightBits(), op.getFc3ExpertWeightBits()})
    if (width && *width != bits) return std::string("a QMoE with experts of mixed widths");
  if (op.getWeightsPrepacked().value_or(0) != 0)
    return std::string("a QMoE's CUTLASS-prepacked expert weights (weights_prepacked ") +
           std::to_string(*op.getWeightsPrepacked()) + ")";
  if (op.getBlockSize() < 0) return std::string("a QMoE of negative block_size");
  if (hasCutlassLayout(op))
    return std::string("a QMoE's expert weights in CUTLASS's prepacked layout [experts, in, "
                       "out / pack] (a CUDA export's)");
  if (!isNone(op.getFc1ZeroPoints()) || !isNone(op.getFc2ZeroPoints()) ||
      !isNone(op.getFc3ZeroPoints()))
    return std::string("a QMoE's zero points");
  if (!isNone(op.getRouterWeights()))
    return std::string("a QMoE's router_weights (experts weighted apart from their choice)");
  return std::nullopt;
}

/// `loc` with `suffix` appended to its name (the name weights.bin keeps).
Location withNameSuffix(OpBuilder &builder, Location loc, StringRef suffix) {
  auto named = dyn_cast<NameLoc>(loc);
  if (!named || suffix.empty()) return loc;
  return NameLoc::get(builder.getStringAttr(named.getName().getValue() + suffix),
                      named.getChildLoc());
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
    return createF32Constant(rewriter, withNameSuffix(rewriter, source.getLoc(), name), shape,
                             picked);
  };
  return std::pair(half(0, ".gate"), half(1, ".up"));
}

/// The router's logits as llm.moe takes them: rows like the input's. A 3-D
/// input's are the [batch, seq, experts] product the Reshape to [tokens,
/// experts] flattens.
template <typename FusedMoeOp>
Value routerLogitsFor(FusedMoeOp op) {
  Value logits = op.getRouterProbs(), input = op.getInput();
  if (rankOf(input) == 2 && rankOf(logits) == 2) return logits;
  auto flatten = definedBy<onnx::ReshapeOp>(logits);
  if (rankOf(input) != 3 || !flatten || rankOf(flatten.getData()) != 3 ||
      !sameDim(flatten.getData(), 0, input, 0) || !sameDim(flatten.getData(), 1, input, 1))
    return {};
  return flatten.getData();
}

/// The sizes of a fused MoE's experts.
struct ExpertSizes {
  int64_t experts, inter, hidden;
};

/// What MoE and QMoE share, checked for experts of `sizes`: the activation,
/// the router's logits (returned), no fc3, the biases [experts, out]
/// constants, k in [1, experts].
template <typename FusedMoeOp>
FailureOr<Value> matchFusedRouting(FusedMoeOp op, ExpertSizes sizes, PatternRewriter &rewriter) {
  if (auto feature = activationFeatureOf(op))
    return rewriter.notifyMatchFailure(op, "uses " + *feature);
  Value logits = routerLogitsFor(op);
  if (!logits) return rewriter.notifyMatchFailure(op, "the router logits are not the input's rows");
  if (ShapedType::isDynamic(sizes.experts) || ShapedType::isDynamic(sizes.hidden) ||
      dimOf(op.getInput(), -1) != sizes.hidden || dimOf(logits, -1) != sizes.experts)
    return rewriter.notifyMatchFailure(
        op, "the experts are not over the input's hidden size and the router's experts");
  if (!isNone(op.getFc3ExpertsWeights()) || !isNone(op.getFc3ExpertsBias()))
    return rewriter.notifyMatchFailure(op, "has fc3 beside a fused fc1");
  auto isBias = [&](Value bias, int64_t out) {
    return isNone(bias) || (isConstant(bias) && rankOf(bias) == 2 &&
                            dimOf(bias, 0) == sizes.experts && dimOf(bias, 1) == out);
  };
  if (!isBias(op.getFc1ExpertsBias(), 2 * sizes.inter) ||
      !isBias(op.getFc2ExpertsBias(), sizes.hidden))
    return rewriter.notifyMatchFailure(op, "the biases are not constants [experts, out]");
  if (op.getK() < 1 || op.getK() > sizes.experts)
    return rewriter.notifyMatchFailure(op, "k is not in [1, experts]");
  return logits;
}

/// Replaces `op` by llm.moe over the gate's, the up's and the down's weights
/// [experts, out, in]; fc1's bias is split as fc1's rows were.
template <typename FusedMoeOp>
LogicalResult replaceByMoe(FusedMoeOp op, Value logits, Value gate, Value up, Value down,
                           PatternRewriter &rewriter) {
  Value gateBias, upBias;
  if (Value fc1Bias = optionalOperand(op.getFc1ExpertsBias())) {
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
  rewriter.replaceOpWithNewOp<llm::MoeOp>(
      op, op.getType(), op.getInput(), logits, gate, up, down, gateBias, upBias,
      optionalOperand(op.getFc2ExpertsBias()), op.getK(), op.getNormalizeRoutingWeights() != 0,
      limit, alpha);
  return success();
}

struct RaiseMoE : OpRewritePattern<onnx::MoEOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MoEOp op, PatternRewriter &rewriter) const override {
    Value fc1 = op.getFc1ExpertsWeights(), fc2 = op.getFc2ExpertsWeights();
    if (!isConstant(fc1) || !isConstant(fc2))
      return rewriter.notifyMatchFailure(op, "the experts' weights are not constants");
    if (rankOf(fc1) != 3 || rankOf(fc2) != 3 || dimOf(fc1, 1) % 2 != 0)
      return rewriter.notifyMatchFailure(op, "fc1 is not [experts, 2 inter, hidden]");
    ExpertSizes sizes{dimOf(fc1, 0), dimOf(fc1, 1) / 2, dimOf(fc1, 2)};
    if (dimOf(fc2, 0) != sizes.experts || dimOf(fc2, 1) != sizes.hidden ||
        dimOf(fc2, 2) != sizes.inter)
      return rewriter.notifyMatchFailure(op, "fc2 is not [experts, hidden, inter]");
    auto logits = matchFusedRouting(op, sizes, rewriter);
    if (failed(logits)) return failure();
    auto gateUp = interleavedHalves(rewriter, fc1);
    if (failed(gateUp))
      return rewriter.notifyMatchFailure(op, "fc1 is not an f32 constant of its shape");
    return replaceByMoe(op, *logits, gateUp->first, gateUp->second, fc2, rewriter);
  }
};

/// A QMoE expert weight read from its constants: codes [experts, rows,
/// in * bits / 8] and scales [experts, rows, blocks] (a scale per row is
/// one block of `in`).
struct QuantizedExperts {
  std::vector<uint8_t> codes;
  std::vector<float> scales;
  int64_t experts, rows, in, bits, blockSize;
  Location loc;

  int64_t blocks() const { return llvm::divideCeil(in, blockSize); }

  /// Rows first, first + step, ... of each expert as llm.dequantize
  /// [experts, rows / step, in], its codes in MatMulNBits' layout [experts,
  /// rows / step, blocks, blockSize * bits / 8] (a partial last block padded
  /// with zeros), named after the weight with `suffix`.
  Value rowsOf(OpBuilder &builder, int64_t first, int64_t step, StringRef suffix) const {
    int64_t picked = rows / step, rowBytes = in * bits / 8;
    int64_t blockBytes = blockSize * bits / 8, paddedBytes = blocks() * blockBytes;
    std::vector<uint8_t> pickedCodes(experts * picked * paddedBytes, 0);
    std::vector<float> pickedScales;
    pickedScales.reserve(experts * picked * blocks());
    for (int64_t e = 0; e < experts; ++e)
      for (int64_t i = 0; i < picked; ++i) {
        int64_t row = e * rows + first + i * step;
        std::copy_n(codes.begin() + row * rowBytes, rowBytes,
                    pickedCodes.begin() + (e * picked + i) * paddedBytes);
        pickedScales.insert(pickedScales.end(), scales.begin() + row * blocks(),
                            scales.begin() + (row + 1) * blocks());
      }
    return createStackedDequantize(builder, withNameSuffix(builder, loc, suffix), experts, picked,
                                   in, bits, blockSize, pickedCodes, pickedScales);
  }
};

/// QMoE's `codes` and `scales` of an expert weight [experts, rows, in], read
/// once; failure when they are not constants of those shapes.
FailureOr<QuantizedExperts> readQuantizedExperts(onnx::QMoEOp op, Value codes, Value scales,
                                                 int64_t experts, int64_t rows, int64_t in) {
  int64_t bits = op.getExpertWeightBits();
  int64_t blockSize = op.getBlockSize() > 0 ? op.getBlockSize() : in;
  int64_t blocks = llvm::divideCeil(in, blockSize);
  auto codeBytes = readConstantBytes(codes);
  auto scaleValues = readConstantFloats(scales);
  bool perRow = op.getBlockSize() == 0;
  if (!codeBytes || !scaleValues || in * bits % 8 != 0 || rankOf(codes) != 3 ||
      dimOf(codes, 0) != experts || dimOf(codes, 1) != rows ||
      dimOf(codes, 2) != in * bits / 8 || rankOf(scales) != (perRow ? 2 : 3) ||
      static_cast<int64_t>(codeBytes->size()) != experts * rows * in * bits / 8 ||
      static_cast<int64_t>(scaleValues->size()) != experts * rows * blocks)
    return failure();
  return QuantizedExperts{std::move(*codeBytes), std::move(*scaleValues), experts, rows, in, bits,
                          blockSize, codes.getLoc()};
}

struct RaiseQMoE : OpRewritePattern<onnx::QMoEOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::QMoEOp op, PatternRewriter &rewriter) const override {
    if (auto feature = encodingFeatureOf(op))
      return rewriter.notifyMatchFailure(op, "uses " + *feature);
    Value fc1 = op.getFc1ExpertsWeights(), fc2 = op.getFc2ExpertsWeights();
    if (rankOf(fc1) != 3 || rankOf(fc2) != 3 || dimOf(fc1, 1) % 2 != 0)
      return rewriter.notifyMatchFailure(op, "fc1 is not [experts, 2 inter, hidden / pack]");
    ExpertSizes sizes{dimOf(fc1, 0), dimOf(fc1, 1) / 2, dimOf(op.getInput(), -1)};
    auto logits = matchFusedRouting(op, sizes, rewriter);
    if (failed(logits)) return failure();
    auto gateUp = readQuantizedExperts(op, fc1, op.getFc1Scales(), sizes.experts,
                                       2 * sizes.inter, sizes.hidden);
    auto down = readQuantizedExperts(op, fc2, op.getFc2Scales(), sizes.experts, sizes.hidden,
                                     sizes.inter);
    if (failed(gateUp) || failed(down))
      return rewriter.notifyMatchFailure(
          op, "the experts' codes and scales are not constants fc1 [experts, 2 inter, hidden / "
              "pack] and fc2 [experts, hidden, inter / pack], scaled per block or per row");
    Value gate = gateUp->rowsOf(rewriter, 0, 2, ".gate");
    Value up = gateUp->rowsOf(rewriter, 1, 2, ".up");
    return replaceByMoe(op, *logits, gate, up, down->rowsOf(rewriter, 0, 1, ""), rewriter);
  }
};

} // namespace

std::optional<std::string> unsupportedMixtureOfExpertsFeature(Operation *op) {
  if (auto moe = dyn_cast<onnx::MoEOp>(op)) return activationFeatureOf(moe);
  auto qmoe = dyn_cast<onnx::QMoEOp>(op);
  if (!qmoe) return std::nullopt;
  if (auto feature = encodingFeatureOf(qmoe)) return feature;
  return activationFeatureOf(qmoe);
}

void populateFusedMixtureOfExpertsPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseMoE, RaiseQMoE>(patterns.getContext());
}

} // namespace llmc::raising
