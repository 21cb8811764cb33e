//===- RaiseDenseMixtureOfExperts.cpp - gpt-oss's dense MoE to llm.moe ----===//
//
// optimum exports gpt-oss's experts dense (its model patcher): every expert
// computes every token over weights stacked by expert, and a routing matrix
// that is zero outside each token's top k weighs the results:
//
//   xf     = Reshape(x, [-1, hidden])
//   logits = Gemm(xf, router, bias)                            [tokens, experts]
//   v, ids = TopK(logits, k)
//   scores = ScatterElements(zeros, ids, Softmax(v), axis 1)   [tokens, experts]
//   rows   = Reshape(Tile(xf, [experts, 1]), [experts, tokens, hidden])
//   gu     = MatMul(rows, gate_up) + gate_up_bias              [experts, tokens, 2 inter]
//   g, u   = Slice(gu, 0::2), Slice(gu, 1::2)                  (interleaved columns)
//   h      = (Clip(u, -L, L) + 1) * (g' * Sigmoid(g' * alpha)),  g' = Clip(g, max L)
//   y      = MatMul(h, down) + down_bias                       [experts, tokens, hidden]
//   out    = ReduceSum(Reshape(y, [experts, b, s, hidden])
//                      * Unsqueeze(Reshape(Transpose(scores), [experts, b, s]), 3), axis 0)
//
// A token's other experts get weight 0, so computing only its top k gives the
// same sum: the block becomes llm.linear (the router, with its bias) and
// llm.moe with normalize_top_k (a softmax over the top k logits is the
// renormalised softmax), its weights split by column and transposed to
// [experts, out, in], its biases [experts, out]. Without the clips an expert
// is silu(g) * u.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

using namespace mlir;

namespace llmc::raising {
namespace {

/// MatMul(rows, weight [experts, in, out]) [+ bias [experts, 1, out]], the
/// weight and bias constants.
struct StackedProjection {
  onnx::MatMulOp matmul;
  Value bias;

  Value rows() const { return matmul->getOperand(0); }
  Value weight() const { return matmul->getOperand(1); }
  int64_t experts() const { return dimOf(weight(), 0); }
  int64_t in() const { return dimOf(weight(), 1); }
  int64_t out() const { return dimOf(weight(), 2); }
};

/// The stacked projection that computes `value`, if one does.
std::optional<StackedProjection> stackedProjectionOf(Value value) {
  StackedProjection projection;
  if (auto add = definedBy<onnx::AddOp>(value)) {
    auto [matmul, bias] = operandDefinedBy<onnx::MatMulOp>(add);
    if (!matmul || !isConstant(bias)) return std::nullopt;
    projection = {matmul, bias};
  } else if (auto matmul = definedBy<onnx::MatMulOp>(value)) {
    projection.matmul = matmul;
  } else {
    return std::nullopt;
  }
  Value weight = projection.weight();
  if (!isConstant(weight) || rankOf(weight) != 3 || rankOf(projection.matmul) != 3 ||
      ShapedType::isDynamic(projection.in()) || ShapedType::isDynamic(projection.out()))
    return std::nullopt;
  Value bias = projection.bias;
  if (bias && (rankOf(bias) != 3 || dimOf(bias, 0) != projection.experts() ||
               dimOf(bias, 1) != 1 || dimOf(bias, 2) != projection.out()))
    return std::nullopt;
  return projection;
}

/// What the walk back from the block's ReduceSum finds.
struct DenseMoe {
  Value input;                      ///< x [batch, seq, hidden]
  RouterProjection router;
  int64_t topK = 0;
  StackedProjection gateUp, down;
  Columns gate, up;                 ///< of gate_up's outputs
  std::optional<float> limit, alpha; ///< gpt-oss's clamped swiglu
};

class DenseMoeMatcher {
public:
  explicit DenseMoeMatcher(onnx::ReduceSumOp output) : output(output) {}

  /// Fills `block`, or fails with the reason in `why`.
  LogicalResult match(DenseMoe &block, std::string &why);
  /// Whether the sum was found to be weighted by a router's top-k scores:
  /// a mixture of experts, whose failure to match is worth explaining.
  bool routed() const { return static_cast<bool>(flatInput); }

private:
  LogicalResult matchRouting(Value scores, DenseMoe &block, std::string &why);
  LogicalResult matchActivation(Value hidden, DenseMoe &block, std::string &why);

  onnx::ReduceSumOp output;
  Value flatInput; ///< xf: [tokens, hidden]
};

LogicalResult DenseMoeMatcher::match(DenseMoe &block, std::string &why) {
  if (output.getKeepdims() != 0 || !isSingleAxis(output.getAxes(), 0, 4))
    return fail(why, "the experts' outputs are not summed over the expert axis");
  auto weighted = definedBy<onnx::MulOp>(output.getData());
  if (!weighted) return fail(why, "the summed outputs are not weighted by the routing");
  // y [experts, b, s, hidden] * routing [experts, b, s, 1].
  Value outputs = weighted.getA(), routing = weighted.getB();
  if (!definedBy<onnx::UnsqueezeOp>(routing)) std::swap(outputs, routing);
  auto column = definedBy<onnx::UnsqueezeOp>(routing);
  auto perExpert = column ? definedBy<onnx::ReshapeOp>(column.getData()) : onnx::ReshapeOp();
  auto transpose = perExpert ? definedBy<onnx::TransposeOp>(perExpert.getData())
                             : onnx::TransposeOp();
  if (!column || !isSingleAxis(column.getAxes(), 3, 4) || !hasPerm(transpose, {1, 0}))
    return fail(why, "the routing weights are not the scores transposed to [experts, tokens]");
  if (failed(matchRouting(transpose.getData(), block, why))) {
    flatInput = Value();
    return failure();
  }

  auto expertOutputs = definedBy<onnx::ReshapeOp>(outputs);
  auto down = expertOutputs ? stackedProjectionOf(expertOutputs.getData()) : std::nullopt;
  if (!down)
    return fail(why, "the experts' outputs are not a MatMul by stacked constant weights");
  block.down = *down;
  if (failed(matchActivation(down->rows(), block, why))) return failure();

  int64_t experts = block.gateUp.experts(), hidden = dimOf(block.input, 2);
  // Every expert reads every token: Reshape(Tile(xf, [experts, 1]), [experts,
  // tokens, hidden]), through Expands by ones (which keep xf's shape).
  auto reshapedRows = definedBy<onnx::ReshapeOp>(block.gateUp.rows());
  auto tile = reshapedRows ? definedBy<onnx::TileOp>(reshapedRows.getData()) : onnx::TileOp();
  auto repeats = tile ? onnx::evaluateShapeTensor(tile.getRepeats()) : std::nullopt;
  if (!tile || !repeats || *repeats != SmallVector<int64_t>{experts, 1} ||
      dimOf(reshapedRows, 0) != experts || dimOf(reshapedRows, 2) != hidden)
    return fail(why, "the experts' rows are not the input rows repeated once per expert");
  Value rows = tile.getInput();
  while (auto expand = definedBy<onnx::ExpandOp>(rows)) {
    auto shape = onnx::evaluateShapeTensor(expand.getShape());
    if (!shape || shape->size() > 2 || llvm::any_of(*shape, [](int64_t d) { return d != 1; }))
      break;
    rows = expand.getInput();
  }
  if (rows != flatInput) return fail(why, "the experts do not read the router's input rows");

  int64_t inter = block.gate.count;
  if (block.router.experts() != experts || block.down.experts() != experts)
    return fail(why, "the router and the experts' weights differ in expert count");
  if (block.gateUp.in() != hidden || block.down.in() != inter || block.down.out() != hidden ||
      block.up.count != inter)
    return fail(why, "the experts' projections are not hidden -> inter -> hidden");
  if (block.topK > experts) return fail(why, "TopK picks more experts than there are");
  // The export reshapes y to [experts, batch, -1, hidden]: the output's
  // dims are the input's where both are known.
  auto differ = [&](int64_t dim) {
    int64_t a = dimOf(output, dim), b = dimOf(block.input, dim);
    return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
  };
  if (rankOf(output) != 3 || differ(0) || differ(1) || dimOf(output, 2) != hidden)
    return fail(why, "the output does not have the input's [batch, seq, hidden] shape");
  return success();
}

LogicalResult DenseMoeMatcher::matchRouting(Value scores, DenseMoe &block, std::string &why) {
  auto scatter = definedBy<onnx::ScatterElementsOp>(scores);
  if (!scatter || scatter.getAxis() != 1 || scatter.getReduction() != "none" ||
      !isZeroFill(scatter.getData()))
    return fail(why, "the routing scores are not a scatter of weights into zeros by expert");
  auto softmax = definedBy<onnx::SoftmaxOp>(skipCasts(scatter.getUpdates()));
  auto topk = softmax ? definedBy<onnx::TopKOp>(softmax.getInput()) : onnx::TopKOp();
  if (!topk || softmax.getInput() != topk.getValues() ||
      scatter.getIndices() != topk.getIndices() || !isSingleAxisValue(softmax.getAxis(), 2))
    return fail(why, "the routing weights are not a softmax of TopK's logits at its experts");
  auto k = onnx::getConstantInts(topk.getK());
  if (rankOf(topk.getX()) != 2 || !isSingleAxisValue(topk.getAxis(), 2) ||
      topk.getLargest() != 1 || !k || k->size() != 1 || (*k)[0] < 1)
    return fail(why, "TopK does not take a constant k largest along the experts");
  block.topK = (*k)[0];

  FailureOr<RouterProjection> router = matchRouterProjection(topk.getX(), why);
  if (failed(router)) return failure();
  block.router = *router;
  flatInput = router->flatInput;
  block.input = router->input;
  return success();
}

LogicalResult DenseMoeMatcher::matchActivation(Value hidden, DenseMoe &block, std::string &why) {
  FailureOr<ExpertActivation> activation = matchExpertActivation(hidden, why);
  if (failed(activation)) return failure();
  auto gateUp = stackedProjectionOf(activation->projection);
  if (!gateUp) return fail(why, "the gate and up projection is not a MatMul by stacked weights");
  block.gateUp = *gateUp;
  block.gate = activation->gate;
  block.up = activation->up;
  block.limit = activation->limit;
  block.alpha = activation->alpha;
  return success();
}

/// The location of a stacked weight: the expert MatMul's name up to
/// "experts/", then `name` ("/model/layers.0/mlp/experts/gate_proj"), which
/// names it in weights.bin.
Location denseWeightLocation(onnx::MatMulOp matmul, const Twine &name) {
  auto loc = dyn_cast<NameLoc>(matmul->getLoc());
  size_t at = loc ? loc.getName().getValue().find("experts/") : StringRef::npos;
  if (at == StringRef::npos) return matmul->getLoc();
  std::string stacked = (loc.getName().getValue().take_front(at + 8) + name).str();
  return NameLoc::get(StringAttr::get(matmul->getContext(), stacked), loc.getChildLoc());
}

/// A stacked projection's weight and bias (empty without one) as f32, read
/// once for every split of its columns.
struct ProjectionData {
  std::vector<float> weight, bias;
};

/// `projection`'s constants, if they are f32 of the sizes its MatMul names.
std::optional<ProjectionData> readProjection(const StackedProjection &projection) {
  int64_t experts = projection.experts(), out = projection.out();
  auto weight = readConstantFloats(projection.weight());
  if (!weight || static_cast<int64_t>(weight->size()) != experts * projection.in() * out)
    return std::nullopt;
  ProjectionData data{std::move(*weight), {}};
  if (!projection.bias) return data;
  auto bias = readConstantFloats(projection.bias);
  if (!bias || static_cast<int64_t>(bias->size()) != experts * out) return std::nullopt;
  data.bias = std::move(*bias);
  return data;
}

/// `columns` of a stacked [experts, in, out] weight (`data`), transposed to
/// [experts, columns, in]; with a bias [experts, 1, out], its [experts,
/// columns] in `bias`. Both are named after `name` (gate_proj, ...).
void splitColumns(OpBuilder &builder, const StackedProjection &projection,
                  const ProjectionData &data, StringRef name, const Columns &columns,
                  Value &weight, Value &bias) {
  int64_t experts = projection.experts(), in = projection.in(), out = projection.out();
  weight = createF32Constant(builder, denseWeightLocation(projection.matmul, name),
                             {experts, columns.count, in},
                             transposedExpertColumns(data.weight, experts, in, out, columns));
  if (!projection.bias) return;
  bias = createF32Constant(builder, denseWeightLocation(projection.matmul, name + ".bias"),
                           {experts, columns.count},
                           expertBiasColumns(data.bias, experts, out, columns));
}

LogicalResult replaceDenseBlock(IRRewriter &rewriter, onnx::ReduceSumOp output,
                                const DenseMoe &block, std::string &why) {
  rewriter.setInsertionPoint(output);
  auto gateUpData = readProjection(block.gateUp);
  auto downData = readProjection(block.down);
  if (!gateUpData || !downData) {
    why = "the experts' weights are not f32 constants of the sizes their MatMuls name";
    return failure();
  }
  Value gate, gateBias, up, upBias, down, downBias;
  splitColumns(rewriter, block.gateUp, *gateUpData, "gate_proj", block.gate, gate, gateBias);
  splitColumns(rewriter, block.gateUp, *gateUpData, "up_proj", block.up, up, upBias);
  splitColumns(rewriter, block.down, *downData, "down_proj", Columns{0, 1, block.down.out()},
               down, downBias);
  Location loc = output.getLoc();
  Value logits = block.router.create(rewriter, loc);
  FloatAttr limit, alpha;
  if (block.limit) {
    limit = rewriter.getF32FloatAttr(*block.limit);
    alpha = rewriter.getF32FloatAttr(*block.alpha);
  }
  Value moe = llm::MoeOp::create(rewriter, loc, block.input.getType(), block.input, logits, gate,
                                 up, down, gateBias, upBias, downBias, block.topK,
                                 /*normalize_top_k=*/true, limit, alpha);
  rewriter.replaceOp(output, moe);
  return success();
}

} // namespace

void raiseDenseMixturesOfExperts(func::FuncOp func) {
  SmallVector<onnx::ReduceSumOp> outputs;
  func.walk([&](onnx::ReduceSumOp sum) {
    auto mul = definedBy<onnx::MulOp>(sum.getData());
    if (mul && rankOf(mul) == 4) outputs.push_back(sum);
  });
  IRRewriter rewriter(func.getContext());
  for (onnx::ReduceSumOp output : outputs) {
    DenseMoe block;
    std::string why;
    DenseMoeMatcher matcher(output);
    if (succeeded(matcher.match(block, why)) &&
        succeeded(replaceDenseBlock(rewriter, output, block, why)))
      continue;
    if (matcher.routed()) output->setAttr(kMoeUnmatchedAttr, rewriter.getStringAttr(why));
  }
}

} // namespace llmc::raising
