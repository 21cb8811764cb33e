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
// The router and each expert's projections are MatMuls by constant weights,
// or MatMulNBits of constant codes (onnxruntime's quantizer, `llmc
// quantize`). The matcher walks back from the final Reshape through the
// accumulation, checking each link, and replaces the block with llm.linear
// (the router) and llm.moe over the experts' weights stacked [experts, out,
// in] (quantised ones still packed, under one llm.dequantize). It runs before the other raising stages, which would
// otherwise raise the experts' MatMuls to llm.linear one by one.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

#include "llvm/ADT/SmallBitVector.h"

#include <cstring>

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

/// The router or an expert's projection: a MatMul by a constant [in, out]
/// weight, or a MatMulNBits of constant codes [out][blocks][block * bits /
/// 8] with constant scales and uint8 zero points, if any, and without g_idx
/// or bias.
struct Projection {
  Operation *op = nullptr;

  explicit operator bool() const { return op; }
  onnx::MatMulNBitsOp quantized() const { return dyn_cast_or_null<onnx::MatMulNBitsOp>(op); }
  Value input() const { return op->getOperand(0); }
  int64_t inFeatures() const {
    return quantized() ? quantized().getK() : dimOf(op->getOperand(1), 0);
  }
  int64_t outFeatures() const {
    return quantized() ? quantized().getN() : dimOf(op->getOperand(1), 1);
  }
  /// What the projections stacked into one weight must share: f32, or the
  /// bits, block size and presence of zero points.
  std::string form() const {
    auto nbits = quantized();
    if (!nbits) return "f32";
    return (Twine(nbits.getBits()) + " bits in blocks of " + Twine(nbits.getBlockSize()) +
            (isNone(nbits.getZeroPoints()) ? "" : " with zero points"))
        .str();
  }
};

/// The projection that computes `value`, or a null one.
Projection projectionOf(Value value) {
  if (auto matmul = definedBy<onnx::MatMulOp>(value))
    if (isConstant(matmul.getB()) && rankOf(matmul.getB()) == 2) return {matmul};
  auto nbits = definedBy<onnx::MatMulNBitsOp>(value);
  if (!nbits || !isConstant(nbits.getB()) || !isConstant(nbits.getScales()) ||
      !isNone(nbits.getGIdx()) || !isNone(nbits.getBias()))
    return {};
  Value zeroPoints = nbits.getZeroPoints();
  if (!isNone(zeroPoints) &&
      (!isConstant(zeroPoints) ||
       !cast<ShapedType>(zeroPoints.getType()).getElementType().isUnsignedInteger(8)))
    return {};
  return {nbits};
}

/// The operand of `mul` a projection computes, and the other.
std::pair<Projection, Value> projectionOperand(onnx::MulOp mul) {
  if (Projection lhs = projectionOf(mul.getA())) return {lhs, mul.getB()};
  if (Projection rhs = projectionOf(mul.getB())) return {rhs, mul.getA()};
  return {};
}

/// What one expert's loop iteration reads and computes.
struct Expert {
  int64_t index = -1;
  Projection gate, up, down; ///< hidden -> inter, hidden -> inter, inter -> hidden
};

/// The whole block, as the walk back from its output finds it.
struct MoeBlock {
  Value input;     ///< x [batch, seq, hidden]
  Projection router;  ///< hidden -> experts
  int64_t topK = 0;
  bool normalize = false;
  /// Set where the experts are chosen by sigmoid scores (DeepSeek-V3), not
  /// by the top k of a softmax.
  std::optional<ScoredRouting> scored;
  SmallVector<Expert> experts;
};

class MoeMatcher {
public:
  explicit MoeMatcher(onnx::ReshapeOp output) : output(output) {}

  /// Fills `block`, or fails with the reason in `why`.
  LogicalResult match(MoeBlock &block, std::string &why);

private:
  LogicalResult matchRouting(onnx::TopKOp topk, MoeBlock &block, std::string &why);
  LogicalResult matchExpert(onnx::ScatterElementsOp scatter, MoeBlock &block, Expert &expert,
                            std::string &why);

  onnx::ReshapeOp output;
  Value flatInput;        ///< xf: [tokens, hidden]
  onnx::TopKOp topk;      ///< the one routing TopK every expert reads
  Value routingWeights;   ///< w after the optional normalisation, [tokens, k]
};

/// The TopK ops the block's output is computed from short of the products
/// (the router's, the experts'), which every earlier layer is behind; at most
/// `limit` values visited.
llvm::SmallSetVector<Operation *, 2> routingTopKs(Value output, size_t limit = 4096) {
  llvm::SmallSetVector<Operation *, 2> found;
  forEachOpInCone(
      output,
      [&](Operation *op) {
        if (isa<onnx::MatMulOp, onnx::MatMulNBitsOp, onnx::GemmOp>(op)) return false;
        if (isa<onnx::TopKOp>(op)) found.insert(op);
        return true;
      },
      limit);
  return found;
}

LogicalResult MoeMatcher::match(MoeBlock &block, std::string &why) {
  // The accumulation: Add(Add(...Add(zeros, scatter_0)..., scatter_{E-2}), scatter_{E-1}).
  SmallVector<onnx::ScatterElementsOp> scatters;
  Value acc = skipCasts(output.getData());
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
  // Fewer: an export traced with sample inputs that reached only some experts, which left
  // the others out (optimum's DeepSeek-V3, whose loop skips the experts without tokens).
  if (block.router.outFeatures() != count)
    return fail(why, "the router has " + Twine(block.router.outFeatures()) +
                         " experts, the block computes " + Twine(count) +
                         " (an export traced with inputs that reached only those leaves the "
                         "others out)");
  llvm::SmallBitVector seen(count);
  for (const Expert &expert : block.experts) {
    if (expert.index < 0 || expert.index >= count || seen.test(expert.index))
      return fail(why, "expert " + Twine(expert.index) + " is missing or repeated");
    seen.set(expert.index);
  }
  llvm::sort(block.experts, [](const Expert &a, const Expert &b) { return a.index < b.index; });
  // The experts' weights of each projection are stacked into one.
  const Expert &first = block.experts.front();
  for (const Expert &expert : block.experts)
    for (auto [projection, like, name] :
         {std::tuple(expert.gate, first.gate, "gate"), std::tuple(expert.up, first.up, "up"),
          std::tuple(expert.down, first.down, "down")})
      if (projection.form() != like.form())
        return fail(why, Twine("the experts' ") + name + " projections are not all in one form (" +
                             like.form() + ", " + projection.form() + ")");
  // Every TopK the block reads is the routing's: the experts', and the
  // groups' two (their best two choices, the kept groups) when grouped.
  size_t routingTopKCount = block.scored && block.scored->groups ? 3 : 1;
  if (routingTopKs(output.getData()).size() != routingTopKCount)
    return fail(why, "it routes by more TopKs than its routing accounts for");

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

  Value logits;
  auto softmax = definedBy<onnx::SoftmaxOp>(skipCasts(topk.getX()));
  if (softmax) {
    if (!isSingleAxisValue(softmax.getAxis(), rank))
      return fail(why, "the routing TopK does not read a softmax over the experts");
    logits = softmax.getInput();
  } else {
    auto scored = matchScoredRouting(topk, why);
    if (failed(scored)) return failure();
    block.scored = *scored;
    logits = scored->logits;
  }
  Projection router = projectionOf(logits);
  if (!router)
    return fail(why, "the router is not a MatMul by a constant weight, or a MatMulNBits of "
                     "constant codes without g_idx or bias");
  auto reshape = definedBy<onnx::ReshapeOp>(skipCasts(router.input()));
  if (!reshape || rankOf(reshape.getData()) != 3 || rankOf(reshape) != 2 ||
      dimOf(reshape.getData(), 2) != dimOf(reshape, 1))
    return fail(why, "the router does not read the [batch, seq, hidden] input as rows");
  flatInput = reshape;
  block.input = reshape.getData();
  block.router = router;

  if (block.scored) {
    routingWeights = block.scored->weights;
    block.normalize = block.scored->normalize;
    return success();
  }
  // w, or w / sum(w) (norm_topk_prob).
  std::optional<WeightNormalization> normalized = normalizedWeights(topk.getValues());
  block.normalize = normalized && normalized->bySumAlone();
  routingWeights = block.normalize ? normalized->division.getResult() : topk.getValues();
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

  // tokens and slots: Squeeze(Split(Transpose(NonZero(Cast(Gather(mask, e)))), axis 1)),
  // the rows of NonZero of the expert's [slots, tokens] mask (Qwen3-MoE's) or of its
  // [tokens, slots] mask (DeepSeek-V3's).
  auto squeezeTokens = definedBy<onnx::SqueezeOp>(tokens);
  auto split = squeezeTokens ? definedBy<onnx::SplitOp>(squeezeTokens.getData()) : onnx::SplitOp();
  if (!split || split->getNumResults() != 2 || split.getAxis() != 1)
    return fail(why, "an expert's tokens are not a row of a NonZero");
  unsigned tokensAt = squeezeTokens.getData() == split->getResult(1) ? 1 : 0;
  auto rows = definedBy<onnx::TransposeOp>(split.getInput());
  auto nonzero = rows && hasPerm(rows, {1, 0}) ? definedBy<onnx::NonZeroOp>(rows.getData())
                                               : onnx::NonZeroOp();
  auto pick = nonzero ? definedBy<onnx::GatherOp>(skipCasts(nonzero.getX())) : onnx::GatherOp();
  auto index = pick ? onnx::getConstantInts(pick.getIndices()) : std::nullopt;
  if (!pick || pick.getAxis() != 0 || !index || index->size() != 1)
    return fail(why, "an expert's tokens are not NonZero of its row of the routing mask");
  expert.index = (*index)[0];
  auto mask = definedBy<onnx::TransposeOp>(pick.getData());
  SmallVector<int64_t, 3> maskPerm{2, 1, 0};
  if (tokensAt == 0) maskPerm = {2, 0, 1};
  auto onehot = mask && hasPerm(mask, maskPerm) ? definedBy<onnx::OneHotOp>(mask.getData())
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
  if (!depth || depth->size() != 1 || (*depth)[0] != block.router.outFeatures())
    return fail(why, "the routing mask's depth is not the router's expert count");
  Value slots = Value();
  for (Operation *user : split->getResult(1 - tokensAt).getUsers())
    if (auto squeeze = dyn_cast<onnx::SqueezeOp>(user)) slots = squeeze;

  // y_e = MLP(rows) * weight[tok * k + slot].
  auto weighted = definedBy<onnx::MulOp>(skipViews(scatter.getUpdates()));
  if (!weighted) return fail(why, "an expert's output is not scaled by its routing weight");
  auto [down, scale] = projectionOperand(weighted);
  if (!down)
    return fail(why, "an expert does not end in a MatMul by a constant weight, or a MatMulNBits "
                     "of constant codes without g_idx or bias");
  // Flatten(Unsqueeze(w, 2), axis 2)[tok * k + slot], or Flatten(w, axis 2)[...] made a
  // column: [tokens * k, 1] either way.
  if (auto column = definedBy<onnx::UnsqueezeOp>(scale);
      column && isSingleAxis(column.getAxes(), -1, rankOf(column)))
    scale = column.getData();
  auto pickWeight = definedBy<onnx::GatherOp>(skipViews(scale));
  auto flat = pickWeight ? definedBy<onnx::FlattenOp>(pickWeight.getData()) : onnx::FlattenOp();
  Value flattened = flat ? flat.getInput() : Value();
  if (auto column = definedBy<onnx::UnsqueezeOp>(flattened);
      column && isSingleAxis(column.getAxes(), 2, 3))
    flattened = column.getData();
  if (!pickWeight || pickWeight.getAxis() != 0 || flattened != routingWeights ||
      rankOf(routingWeights) != 2 || flat.getAxis() != 2)
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
  auto product = definedBy<onnx::MulOp>(down.input());
  if (!product) return fail(why, "an expert is not a gated MLP");
  Projection gate, up;
  for (auto [activated, other] : {std::pair(product.getA(), product.getB()),
                                  std::pair(product.getB(), product.getA())}) {
    auto silu = definedBy<onnx::MulOp>(activated);
    auto [sigmoid, base] = silu ? operandDefinedBy<onnx::SigmoidOp>(silu)
                                : std::pair<onnx::SigmoidOp, Value>();
    if (!sigmoid || sigmoid.getX() != base) continue;
    gate = projectionOf(base);
    up = projectionOf(other);
    break;
  }
  if (!gate || !up)
    return fail(why, "an expert is not silu(gate(x)) * up(x) of two projections: only "
                     "silu-gated experts are raised");
  if (gate.input() != up.input())
    return fail(why, "an expert's gate and up projections do not share its rows");
  // Gather(Unsqueeze(xf, 0), tok, axis 1) (Qwen3-MoE), or Gather(xf, tok, axis 0) of x's
  // rows reshaped apart from the router's (DeepSeek-V3).
  auto gather = definedBy<onnx::GatherOp>(skipViews(gate.input()));
  auto batch = gather ? definedBy<onnx::UnsqueezeOp>(gather.getData()) : onnx::UnsqueezeOp();
  auto inputRows = gather ? definedBy<onnx::ReshapeOp>(gather.getData()) : onnx::ReshapeOp();
  bool readsRows =
      gather && gather.getIndices() == tokens &&
      ((gather.getAxis() == 1 && batch && batch.getData() == flatInput &&
        isSingleAxis(batch.getAxes(), 0, 3)) ||
       (gather.getAxis() == 0 && inputRows && inputRows.getData() == block.input &&
        rankOf(inputRows) == 2 && dimOf(inputRows, 1) == dimOf(flatInput, 1)));
  if (!readsRows) return fail(why, "an expert does not read the rows of its own tokens");

  int64_t hidden = dimOf(flatInput, 1), inter = gate.outFeatures();
  for (auto [projection, in, out] : {std::tuple(gate, hidden, inter), std::tuple(up, hidden, inter),
                                     std::tuple(down, inter, hidden)})
    if (projection.inFeatures() != in || projection.outFeatures() != out ||
        ShapedType::isDynamic(in) || ShapedType::isDynamic(out))
      return fail(why, "an expert's projections are not hidden -> inter -> hidden");
  expert.gate = gate;
  expert.up = up;
  expert.down = down;
  return success();
}

/// MatMul weights [in, out], each transposed to [out, in] and stacked.
FailureOr<Value> stackF32(OpBuilder &builder, Location loc, ArrayRef<Projection> projections) {
  int64_t in = projections.front().inFeatures(), out = projections.front().outFeatures();
  std::vector<float> stacked;
  stacked.reserve(projections.size() * in * out);
  for (const Projection &projection : projections) {
    auto data = readConstantFloats(projection.op->getOperand(1));
    if (!data) return failure();
    for (int64_t o = 0; o < out; ++o)
      for (int64_t i = 0; i < in; ++i) stacked.push_back((*data)[i * out + o]);
  }
  int64_t count = static_cast<int64_t>(projections.size());
  return createF32Constant(builder, loc, {count, out, in}, stacked);
}

/// MatMulNBits' codes [out][blocks][bytes], scales [out][blocks] and zero
/// points [out][blocks, packed to whole bytes] stacked by expert under one
/// llm.dequantize [experts, out, in]: the codes stay as the export packed them.
FailureOr<Value> stackQuantized(OpBuilder &builder, Location loc,
                                ArrayRef<Projection> projections) {
  onnx::MatMulNBitsOp first = projections.front().quantized();
  int64_t in = first.getK(), out = first.getN(), bits = first.getBits();
  int64_t blockSize = first.getBlockSize(), blocks = llvm::divideCeil(in, blockSize);
  int64_t codeBytes = blockSize * bits / 8, zeroBytes = llvm::divideCeil(blocks * bits, 8);
  bool hasZeroPoints = !isNone(first.getZeroPoints());
  std::vector<uint8_t> codes, zeroPoints;
  std::vector<float> scales;
  for (const Projection &projection : projections) {
    onnx::MatMulNBitsOp nbits = projection.quantized();
    auto expertCodes = readConstantBytes(nbits.getB());
    auto expertScales = readConstantFloats(nbits.getScales());
    if (!expertCodes || !expertScales ||
        static_cast<int64_t>(expertCodes->size()) != out * blocks * codeBytes ||
        static_cast<int64_t>(expertScales->size()) != out * blocks)
      return failure();
    llvm::append_range(codes, *expertCodes);
    llvm::append_range(scales, *expertScales);
    if (!hasZeroPoints) continue;
    auto expertZeros = readConstantBytes(nbits.getZeroPoints());
    if (!expertZeros || static_cast<int64_t>(expertZeros->size()) != out * zeroBytes)
      return failure();
    llvm::append_range(zeroPoints, *expertZeros);
  }
  return createStackedDequantize(builder, loc, static_cast<int64_t>(projections.size()), out,
                                 in, bits, blockSize, codes, scales, zeroPoints);
}

/// Where the stacked weight of `first`'s projection across the experts
/// comes from: its name with the expert's index dropped
/// ("/model/layers.0/mlp/experts.0/gate_proj/MatMul" ->
/// ".../mlp/experts/gate_proj/MatMul"), which names it in weights.bin.
Location stackedLocation(const Projection &first) {
  auto name = dyn_cast<NameLoc>(first.op->getLoc());
  if (!name) return first.op->getLoc();
  std::string stacked = name.getName().str();
  size_t at = stacked.find("experts.0/");
  if (at != std::string::npos) stacked.erase(at + strlen("experts"), strlen(".0"));
  return NameLoc::get(StringAttr::get(first.op->getContext(), stacked), name.getChildLoc());
}

/// The experts' projections (in expert order) as one weight [experts, out, in].
FailureOr<Value> stackProjections(OpBuilder &builder, ArrayRef<Projection> projections) {
  Location loc = stackedLocation(projections.front());
  if (projections.front().quantized()) return stackQuantized(builder, loc, projections);
  return stackF32(builder, loc, projections);
}

/// The router's logits [batch, seq, experts] of `input` as an llm.linear.
Value createRouter(OpBuilder &builder, Location loc, Value input, const Projection &router) {
  auto inputType = cast<RankedTensorType>(input.getType());
  int64_t experts = router.outFeatures();
  auto logitsType = RankedTensorType::get(
      {inputType.getDimSize(0), inputType.getDimSize(1), experts}, inputType.getElementType());
  onnx::MatMulNBitsOp nbits = router.quantized();
  if (!nbits)
    return llm::LinearOp::create(builder, loc, logitsType, input, router.op->getOperand(1),
                                 /*bias=*/Value(), /*transpose_weight=*/false);
  auto weightType = RankedTensorType::get({experts, nbits.getK()}, inputType.getElementType());
  Value weight = llm::DequantizeOp::create(builder, loc, weightType, nbits.getB(),
                                           nbits.getScales(),
                                           optionalOperand(nbits.getZeroPoints()),
                                           nbits.getBitsAttr(), nbits.getBlockSizeAttr());
  return llm::LinearOp::create(builder, loc, logitsType, input, weight, /*bias=*/Value(),
                               /*transpose_weight=*/true);
}

LogicalResult replaceBlock(IRRewriter &rewriter, onnx::ReshapeOp output, const MoeBlock &block,
                           std::string &why) {
  Location loc = output.getLoc();
  rewriter.setInsertionPoint(output);
  SmallVector<Projection> gates, ups, downs;
  for (const Expert &expert : block.experts) {
    gates.push_back(expert.gate);
    ups.push_back(expert.up);
    downs.push_back(expert.down);
  }
  auto gate = stackProjections(rewriter, gates);
  auto up = stackProjections(rewriter, ups);
  auto down = stackProjections(rewriter, downs);
  if (failed(gate) || failed(up) || failed(down)) {
    why = "the experts' weights are not constants of the sizes their projections name";
    return failure();
  }
  Value logits = createRouter(rewriter, loc, block.input, block.router);
  FailureOr<Value> selectionBias =
      block.scored ? createSelectionBias(rewriter, *block.scored) : FailureOr<Value>(Value());
  if (failed(selectionBias)) {
    why = "the selection bias is not an f32 constant";
    return failure();
  }
  auto moe = llm::MoeOp::create(rewriter, loc, block.input.getType(), block.input, logits, *gate,
                                *up, *down, /*gate_bias=*/Value(), /*up_bias=*/Value(),
                                /*down_bias=*/Value(), block.topK, block.normalize,
                                /*swiglu_limit=*/FloatAttr(), /*swiglu_alpha=*/FloatAttr());
  if (block.scored) setScoredRouting(moe, *block.scored, *selectionBias);
  rewriter.replaceOp(output, moe.getResult());
  return success();
}

} // namespace

void raiseMixturesOfExperts(func::FuncOp func) {
  SmallVector<onnx::ReshapeOp> outputs;
  func.walk([&](onnx::ReshapeOp reshape) {
    auto add = definedBy<onnx::AddOp>(skipCasts(reshape.getData()));
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
