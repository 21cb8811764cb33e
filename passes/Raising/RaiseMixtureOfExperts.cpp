//===- RaiseMixtureOfExperts.cpp - a sparse MoE block to llm.moe ----------===//
//
// optimum exports Qwen3-MoE's sparse block with a loop over every expert
// unrolled (its model patcher), each expert taking its tokens out of a
// one-hot routing mask with NonZero and adding its weighted output back with
// ScatterElements into zeros:
//
//   xf      = Reshape(x, [-1, hidden])
//   p       = Softmax(MatMul(xf, router))             [tokens, experts]
//   w, ids  = TopK(p, k);  w = w / ReduceSum(w, -1)   (norm_topk_prob)
//   mask    = Transpose(OneHot(ids, experts), [2, 1, 0])
//   for e:  slot, tok = rows of NonZero(mask[e])
//           y_e = down_e(silu(gate_e(xf[tok])) * up_e(xf[tok]))
//                 * Flatten(w)[tok * k + slot]
//           acc = acc + ScatterElements(zeros, tok, y_e)
//   out     = Reshape(acc, shape of x)
//
// The matcher walks back from the final Reshape through the accumulation,
// checking each link, and replaces the block with llm.linear (the router)
// and llm.moe. It runs before the other raising stages, which would
// otherwise raise the experts' MatMuls to llm.linear one by one.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

#include "llvm/ADT/SmallBitVector.h"

using namespace mlir;

namespace llmc::raising {
namespace {

/// `value` without Reshape, Expand, Flatten and Cast ops before it: the
/// views the export puts around the per-token routing weights and updates.
Value skipViews(Value value) {
  while (true) {
    Operation *op = value.getDefiningOp();
    if (isa_and_nonnull<onnx::ReshapeOp, onnx::ExpandOp, onnx::CastOp>(op))
      value = op->getOperand(0);
    else
      return value;
  }
}

/// Whether `value` is ConstantOfShape of a float zero (its default fill).
bool isZeroFill(Value value) {
  auto fill = definedBy<onnx::ConstantOfShapeOp>(value);
  if (!fill) return false;
  if (!fill.getValue()) return true;
  auto dense = dyn_cast<DenseElementsAttr>(*fill.getValue());
  return dense && isa<FloatType>(dense.getElementType()) &&
         llvm::all_of(dense.getValues<APFloat>(), [](const APFloat &v) { return v.isZero(); });
}

/// The first (or second) operand of a binary op that is defined by T, and the other.
template <typename T, typename Binary>
std::pair<T, Value> operandDefinedBy(Binary op) {
  if (auto lhs = definedBy<T>(op.getA())) return {lhs, op.getB()};
  if (auto rhs = definedBy<T>(op.getB())) return {rhs, op.getA()};
  return {};
}

/// What one expert's loop iteration reads and computes.
struct Expert {
  int64_t index = -1;
  Value gate, up, down; ///< onnx constants: [hidden, inter], [hidden, inter], [inter, hidden]
};

/// The whole block, as the walk back from its output finds it.
struct MoeBlock {
  Value input;     ///< x [batch, seq, hidden]
  Value router;    ///< [hidden, experts] constant
  int64_t topK = 0;
  bool normalize = false;
  SmallVector<Expert> experts;
};

class MoeMatcher {
public:
  explicit MoeMatcher(onnx::ReshapeOp output) : output(output) {}

  /// Fills `block`, or fails with the reason in `why`.
  LogicalResult match(MoeBlock &block, std::string &why);

private:
  LogicalResult fail(std::string &why, const Twine &reason) {
    why = reason.str();
    return failure();
  }
  LogicalResult matchRouting(onnx::TopKOp topk, MoeBlock &block, std::string &why);
  LogicalResult matchExpert(onnx::ScatterElementsOp scatter, MoeBlock &block, Expert &expert,
                            std::string &why);

  onnx::ReshapeOp output;
  Value flatInput;        ///< xf: [tokens, hidden]
  onnx::TopKOp topk;      ///< the one routing TopK every expert reads
  Value routingWeights;   ///< w after the optional normalisation, [tokens, k]
};

LogicalResult MoeMatcher::match(MoeBlock &block, std::string &why) {
  // The accumulation: Add(Add(...Add(zeros, scatter_0)..., scatter_{E-2}), scatter_{E-1}).
  SmallVector<onnx::ScatterElementsOp> scatters;
  Value acc = output.getData();
  while (auto add = definedBy<onnx::AddOp>(acc)) {
    auto [scatter, rest] = operandDefinedBy<onnx::ScatterElementsOp>(add);
    if (!scatter) break;
    scatters.push_back(scatter);
    acc = rest;
  }
  if (scatters.empty()) return fail(why, "not a sum of ScatterElements");
  if (!isZeroFill(acc)) return fail(why, "the experts' outputs are not added to zeros");
  std::reverse(scatters.begin(), scatters.end());

  for (onnx::ScatterElementsOp scatter : scatters) {
    Expert expert;
    if (failed(matchExpert(scatter, block, expert, why))) return failure();
    block.experts.push_back(expert);
  }
  // Every expert exactly once, so that llm.moe's expert e is the router's column e.
  int64_t count = static_cast<int64_t>(block.experts.size());
  if (dimOf(block.router, 1) != count)
    return fail(why, "the router has " + Twine(dimOf(block.router, 1)) + " experts, the block " +
                         Twine(count));
  llvm::SmallBitVector seen(count);
  for (const Expert &expert : block.experts) {
    if (expert.index < 0 || expert.index >= count || seen.test(expert.index))
      return fail(why, "expert " + Twine(expert.index) + " is missing or repeated");
    seen.set(expert.index);
  }
  llvm::sort(block.experts, [](const Expert &a, const Expert &b) { return a.index < b.index; });

  // The output has x's shape: [batch, seq] of the input, then hidden.
  if (rankOf(output) != 3 || !sameDim(output, 0, block.input, 0) ||
      !sameDim(output, 1, block.input, 1) || dimOf(output, 2) != dimOf(block.input, 2))
    return fail(why, "the output does not have the input's [batch, seq, hidden] shape");
  return success();
}

LogicalResult MoeMatcher::matchRouting(onnx::TopKOp found, MoeBlock &block, std::string &why) {
  if (topk) {
    if (found != topk) return fail(why, "the experts read different routing TopKs");
    return success();
  }
  topk = found;
  int64_t rank = rankOf(topk.getX());
  if (rank != 2 || !isSingleAxisValue(topk.getAxis(), rank) || topk.getLargest() != 1)
    return fail(why, "TopK does not take the largest along the last axis");
  auto k = onnx::getConstantInts(topk.getK());
  if (!k || k->size() != 1 || (*k)[0] < 1) return fail(why, "TopK's k is not a constant");
  block.topK = (*k)[0];

  auto softmax = definedBy<onnx::SoftmaxOp>(skipCasts(topk.getX()));
  if (!softmax || !isSingleAxisValue(softmax.getAxis(), rank))
    return fail(why, "the routing TopK does not read a softmax over the experts");
  auto router = definedBy<onnx::MatMulOp>(softmax.getInput());
  if (!router || !isConstant(router.getB()) || rankOf(router.getB()) != 2)
    return fail(why, "the router is not a MatMul by a constant weight");
  auto reshape = definedBy<onnx::ReshapeOp>(router.getA());
  if (!reshape || rankOf(reshape.getData()) != 3 || rankOf(reshape) != 2 ||
      dimOf(reshape.getData(), 2) != dimOf(reshape, 1))
    return fail(why, "the router does not read the [batch, seq, hidden] input as rows");
  flatInput = reshape;
  block.input = reshape.getData();
  block.router = router.getB();

  // w, or w / sum(w) (norm_topk_prob).
  routingWeights = topk.getValues();
  block.normalize = false;
  for (Operation *user : topk.getValues().getUsers()) {
    auto div = dyn_cast<onnx::DivOp>(user);
    auto sum = div ? definedBy<onnx::ReduceSumOp>(div.getB()) : onnx::ReduceSumOp();
    if (div && div.getA() == topk.getValues() && sum && sum.getData() == topk.getValues() &&
        sum.getKeepdims() == 1 && isSingleAxis(sum.getAxes(), -1, rank)) {
      routingWeights = div;
      block.normalize = true;
    }
  }
  return success();
}

LogicalResult MoeMatcher::matchExpert(onnx::ScatterElementsOp scatter, MoeBlock &block,
                                      Expert &expert, std::string &why) {
  // scatter(zeros, Expand(Unsqueeze(tok, 1)), y_e) along axis 0: row i of y_e
  // goes to row tok[i]. The tokens of one expert are distinct (TopK's ids
  // are), so scattering into zeros and adding is index_add.
  if (scatter.getAxis() != 0 || scatter.getReduction() != "none" ||
      !isZeroFill(scatter.getData()))
    return fail(why, "an expert's output is not scattered by rows into zeros");
  auto unsqueezeTokens = definedBy<onnx::UnsqueezeOp>(skipViews(scatter.getIndices()));
  if (!unsqueezeTokens || !isSingleAxis(unsqueezeTokens.getAxes(), 1, 2))
    return fail(why, "an expert's scatter rows are not its token list");
  Value tokens = unsqueezeTokens.getData();

  // tokens and slots: Squeeze(Split(Transpose(NonZero(Cast(Gather(mask, e)))), axis 1)).
  auto squeezeTokens = definedBy<onnx::SqueezeOp>(tokens);
  auto split = squeezeTokens ? definedBy<onnx::SplitOp>(squeezeTokens.getData()) : onnx::SplitOp();
  if (!split || split->getNumResults() != 2 || split.getAxis() != 1 ||
      squeezeTokens.getData() != split->getResult(1))
    return fail(why, "an expert's tokens are not the second row of a NonZero");
  auto rows = definedBy<onnx::TransposeOp>(split.getInput());
  auto nonzero = rows && hasPerm(rows, {1, 0}) ? definedBy<onnx::NonZeroOp>(rows.getData())
                                               : onnx::NonZeroOp();
  auto pick = nonzero ? definedBy<onnx::GatherOp>(skipCasts(nonzero.getX())) : onnx::GatherOp();
  auto index = pick ? onnx::getConstantInts(pick.getIndices()) : std::nullopt;
  if (!pick || pick.getAxis() != 0 || !index || index->size() != 1)
    return fail(why, "an expert's tokens are not NonZero of its row of the routing mask");
  expert.index = (*index)[0];
  auto mask = definedBy<onnx::TransposeOp>(pick.getData());
  auto onehot = mask && hasPerm(mask, {2, 1, 0}) ? definedBy<onnx::OneHotOp>(mask.getData())
                                                 : onnx::OneHotOp();
  auto onOff = onehot ? onnx::getConstantInts(onehot.getValues()) : std::nullopt;
  if (!onehot || !isSingleAxisValue(onehot.getAxis(), 3) || !onOff ||
      *onOff != SmallVector<int64_t>{0, 1})
    return fail(why, "the routing mask is not a one-hot of the chosen experts");
  auto topkOp = definedBy<onnx::TopKOp>(onehot.getIndices());
  if (!topkOp || onehot.getIndices() != topkOp.getIndices())
    return fail(why, "the routing mask is not of TopK's expert ids");
  if (failed(matchRouting(topkOp, block, why))) return failure();
  auto depth = onnx::getConstantInts(onehot.getDepth());
  if (!depth || depth->size() != 1 || (*depth)[0] != dimOf(block.router, 1))
    return fail(why, "the routing mask's depth is not the router's expert count");
  Value slots = Value();
  for (Operation *user : split->getResult(0).getUsers())
    if (auto squeeze = dyn_cast<onnx::SqueezeOp>(user)) slots = squeeze;

  // y_e = MLP(rows) * weight[tok * k + slot].
  auto weighted = definedBy<onnx::MulOp>(skipViews(scatter.getUpdates()));
  if (!weighted) return fail(why, "an expert's output is not scaled by its routing weight");
  auto [down, scale] = operandDefinedBy<onnx::MatMulOp>(weighted);
  if (!down || !isConstant(down.getB()))
    return fail(why, "an expert does not end in a MatMul by a constant weight");
  auto pickWeight = definedBy<onnx::GatherOp>(skipViews(scale));
  auto flat = pickWeight ? definedBy<onnx::FlattenOp>(pickWeight.getData()) : onnx::FlattenOp();
  auto column = flat ? definedBy<onnx::UnsqueezeOp>(flat.getInput()) : onnx::UnsqueezeOp();
  if (!pickWeight || pickWeight.getAxis() != 0 || !column || column.getData() != routingWeights ||
      !isSingleAxis(column.getAxes(), 2, 3) || flat.getAxis() != 2)
    return fail(why, "an expert's scale is not a routing weight of the TopK");
  auto flatIndex = definedBy<onnx::AddOp>(pickWeight.getIndices());
  auto [tokenRow, slot] = flatIndex ? operandDefinedBy<onnx::MulOp>(flatIndex)
                                    : std::pair<onnx::MulOp, Value>();
  if (!tokenRow || slot != slots)
    return fail(why, "an expert's routing weight is not picked at tok * k + slot");
  Value tokenOperand = tokenRow.getA(), stride = tokenRow.getB();
  if (tokenOperand != tokens) std::swap(tokenOperand, stride);
  auto strideValue = onnx::evaluateShapeTensor(stride);
  if (tokenOperand != tokens || !strideValue || strideValue->size() != 1 ||
      (*strideValue)[0] != block.topK)
    return fail(why, "an expert's routing weight is not picked at tok * k + slot");

  // down(silu(gate(rows)) * up(rows)), rows = Reshape(Gather(Unsqueeze(xf, 0), tok, 1)).
  auto product = definedBy<onnx::MulOp>(down.getA());
  if (!product) return fail(why, "an expert is not a gated MLP");
  onnx::MatMulOp gate, up;
  for (auto [activated, other] : {std::pair(product.getA(), product.getB()),
                                  std::pair(product.getB(), product.getA())}) {
    auto silu = definedBy<onnx::MulOp>(activated);
    auto [sigmoid, base] = silu ? operandDefinedBy<onnx::SigmoidOp>(silu)
                                : std::pair<onnx::SigmoidOp, Value>();
    if (!sigmoid || sigmoid.getX() != base) continue;
    gate = definedBy<onnx::MatMulOp>(base);
    up = definedBy<onnx::MatMulOp>(other);
    break;
  }
  if (!gate || !up)
    return fail(why, "an expert is not silu(gate(x)) * up(x): only silu-gated experts are raised");
  if (gate.getA() != up.getA() || !isConstant(gate.getB()) || !isConstant(up.getB()))
    return fail(why, "an expert's gate and up projections do not share its rows");
  auto gather = definedBy<onnx::GatherOp>(skipViews(gate.getA()));
  auto batch = gather ? definedBy<onnx::UnsqueezeOp>(gather.getData()) : onnx::UnsqueezeOp();
  if (!gather || gather.getAxis() != 1 || gather.getIndices() != tokens || !batch ||
      batch.getData() != flatInput || !isSingleAxis(batch.getAxes(), 0, 3))
    return fail(why, "an expert does not read the rows of its own tokens");

  int64_t hidden = dimOf(flatInput, 1), inter = dimOf(gate.getB(), 1);
  for (auto [weight, rows, cols] : {std::tuple(gate.getB(), hidden, inter),
                                    std::tuple(up.getB(), hidden, inter),
                                    std::tuple(down.getB(), inter, hidden)})
    if (rankOf(weight) != 2 || dimOf(weight, 0) != rows || dimOf(weight, 1) != cols ||
        ShapedType::isDynamic(rows) || ShapedType::isDynamic(cols))
      return fail(why, "an expert's weights are not [hidden, inter] and [inter, hidden]");
  expert.gate = gate.getB();
  expert.up = up.getB();
  expert.down = down.getB();
  return success();
}

/// The experts' weights stacked [experts, inter, hidden]; `transpose` turns each
/// [hidden, inter] MatMul weight into [inter, hidden].
FailureOr<Value> stackExpertWeights(OpBuilder &builder, Location loc, ArrayRef<Value> weights,
                                    bool transpose) {
  int64_t rows = dimOf(weights.front(), 0), cols = dimOf(weights.front(), 1);
  std::vector<float> stacked;
  stacked.reserve(weights.size() * rows * cols);
  for (Value weight : weights) {
    auto data = readConstantFloats(weight);
    if (!data) return failure();
    if (!transpose) {
      llvm::append_range(stacked, *data);
      continue;
    }
    for (int64_t c = 0; c < cols; ++c)
      for (int64_t r = 0; r < rows; ++r) stacked.push_back((*data)[r * cols + c]);
  }
  int64_t experts = static_cast<int64_t>(weights.size());
  SmallVector<int64_t> shape = transpose ? SmallVector<int64_t>{experts, cols, rows}
                                         : SmallVector<int64_t>{experts, rows, cols};
  return createF32Constant(builder, loc, shape, stacked);
}

LogicalResult replaceBlock(IRRewriter &rewriter, onnx::ReshapeOp output, const MoeBlock &block,
                           std::string &why) {
  Location loc = output.getLoc();
  rewriter.setInsertionPoint(output);
  SmallVector<Value> gates, ups, downs;
  for (const Expert &expert : block.experts) {
    gates.push_back(expert.gate);
    ups.push_back(expert.up);
    downs.push_back(expert.down);
  }
  auto gate = stackExpertWeights(rewriter, loc, gates, /*transpose=*/true);
  auto up = stackExpertWeights(rewriter, loc, ups, /*transpose=*/true);
  auto down = stackExpertWeights(rewriter, loc, downs, /*transpose=*/false);
  if (failed(gate) || failed(up) || failed(down)) {
    why = "the experts' weights are not f32 constants";
    return failure();
  }
  auto inputType = cast<RankedTensorType>(block.input.getType());
  auto logitsType = RankedTensorType::get(
      {inputType.getDimSize(0), inputType.getDimSize(1), dimOf(block.router, 1)},
      inputType.getElementType());
  Value logits = llm::LinearOp::create(rewriter, loc, logitsType, block.input, block.router,
                                       /*bias=*/Value(), /*transpose_weight=*/false);
  Value moe = llm::MoeOp::create(rewriter, loc, inputType, block.input, logits, *gate, *up, *down,
                                 block.topK, block.normalize);
  rewriter.replaceOp(output, moe);
  return success();
}

} // namespace

void raiseMixturesOfExperts(func::FuncOp func) {
  SmallVector<onnx::ReshapeOp> outputs;
  func.walk([&](onnx::ReshapeOp reshape) {
    auto add = definedBy<onnx::AddOp>(reshape.getData());
    if (add && operandDefinedBy<onnx::ScatterElementsOp>(add).first) outputs.push_back(reshape);
  });
  IRRewriter rewriter(func.getContext());
  for (onnx::ReshapeOp output : outputs) {
    MoeBlock block;
    std::string why;
    if (succeeded(MoeMatcher(output).match(block, why)) &&
        succeeded(replaceBlock(rewriter, output, block, why)))
      continue;
    output->setAttr(kMoeUnmatchedAttr, rewriter.getStringAttr(why));
  }
}

} // namespace llmc::raising
