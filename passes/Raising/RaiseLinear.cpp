//===- RaiseLinear.cpp - embedding, linear layers, activations, residuals -===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

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
    auto offsetAdd = definedBy<onnx::AddOp>(indices);
    auto offset = offsetAdd ? onnx::getConstantInts(offsetAdd.getB()) : std::nullopt;
    if (offset && offset->size() == 1 && (*offset)[0] > 0 && !transposed &&
        (*offset)[0] < dimOf(table, 0) && rankOf(offsetAdd.getB()) <= 1) {
      auto rows = readConstantFloats(table);
      if (!rows) return rewriter.notifyMatchFailure(op, "an offset table is not f32");
      int64_t skipped = (*offset)[0], width = dimOf(table, 1);
      table = createF32Constant(rewriter, op.getLoc(), {dimOf(table, 0) - skipped, width},
                                ArrayRef<float>(*rows).drop_front(skipped * width));
      indices = offsetAdd.getA();
    }
    auto embedding = llm::EmbeddingOp::create(rewriter, op.getLoc(), op.getType(), table,
                                              indices);
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

/// Whether the [first, last) ranges keying `parts` (in order of their
/// starts) take each of [0, width) once.
template <typename T>
bool takeEachOnce(const std::map<std::pair<int64_t, int64_t>, T> &parts, int64_t width) {
  int64_t next = 0;
  for (auto &[range, unused] : parts) {
    if (range.first != next || range.second <= next) return false;
    next = range.second;
  }
  return next == width;
}

/// The column ranges of the last axis that `slices` take, if together they
/// take each of its `width` columns once, in order of their starts; each
/// range with the slices that take it (identical slices share one range).
std::optional<std::map<std::pair<int64_t, int64_t>, SmallVector<onnx::SliceOp>>>
partitionOfColumns(ArrayRef<onnx::SliceOp> slices, int64_t width) {
  std::map<std::pair<int64_t, int64_t>, SmallVector<onnx::SliceOp>> parts;
  for (onnx::SliceOp slice : slices) {
    auto columns = lastAxisColumns(slice);
    if (!columns) return std::nullopt;
    parts[*columns].push_back(slice);
  }
  if (!takeEachOnce(parts, width)) return std::nullopt;
  return parts;
}

/// Slices of a linear's [batch, seq, features] result that together take
/// each column once -> llm.split: the parts of a packed projection (Phi-3's
/// qkv_proj and gate_up_proj). A glue pattern, so that the halves
/// rotate_half slices are already raised into rope.
struct RaisePackedProjectionSplit : OpRewritePattern<onnx::SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::SliceOp op, PatternRewriter &rewriter) const override {
    Value packed = op.getData();
    if (!definedBy<llm::LinearOp>(packed) || rankOf(packed) != 3)
      return rewriter.notifyMatchFailure(op, "does not slice a [batch, seq, features] linear");
    SmallVector<onnx::SliceOp> slices;
    for (Operation *user : packed.getUsers()) {
      auto slice = dyn_cast<onnx::SliceOp>(user);
      if (!slice || slice.getData() != packed)
        return rewriter.notifyMatchFailure(op, "the linear has a user that is not a slice");
      slices.push_back(slice);
    }
    auto parts = partitionOfColumns(slices, dimOf(packed, -1));
    if (!parts) return rewriter.notifyMatchFailure(op, "the slices do not take each column once");
    SmallVector<int64_t> sizes;
    SmallVector<Type> types;
    for (auto &[columns, entry] : *parts) {
      sizes.push_back(columns.second - columns.first);
      types.push_back(entry.front().getType());
    }
    rewriter.setInsertionPointAfterValue(packed);
    auto split = llm::SplitOp::create(rewriter, op.getLoc(), types, packed,
                                      rewriter.getDenseI64ArrayAttr(sizes));
    for (auto [part, entry] : llvm::zip(split.getResults(), *parts))
      for (onnx::SliceOp slice : entry.second) rewriter.replaceOp(slice, part);
    return success();
  }
};

/// The [first, last) heads a user of [b, s, heads, D] takes along the heads
/// axis: a Slice of that axis alone with constant bounds and step 1, or a
/// Gather of one head by a 1-element constant index (the axis kept).
std::optional<std::pair<int64_t, int64_t>> headRange(Operation *user, int64_t heads) {
  if (auto slice = dyn_cast<onnx::SliceOp>(user)) {
    auto starts = onnx::getConstantInts(slice.getStarts());
    auto ends = onnx::getConstantInts(slice.getEnds());
    bool unitSteps = isNone(slice.getSteps()) ||
                     onnx::getConstantInts(slice.getSteps()) == SmallVector<int64_t>{1};
    if (!starts || !ends || !unitSteps || starts->size() != 1 || ends->size() != 1 ||
        isNone(slice.getAxes()) || !isSingleAxis(slice.getAxes(), 2, 4))
      return std::nullopt;
    auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + heads : i, 0, heads); };
    return std::pair(clamp((*starts)[0]), clamp((*ends)[0]));
  }
  if (auto gather = dyn_cast<onnx::GatherOp>(user)) {
    auto index = onnx::getConstantInts(gather.getIndices());
    if (!index || index->size() != 1 || rankOf(gather.getIndices()) != 1 ||
        (gather.getAxis() != 2 && gather.getAxis() != -2))
      return std::nullopt;
    int64_t head = (*index)[0] < 0 ? (*index)[0] + heads : (*index)[0];
    if (head < 0 || head >= heads) return std::nullopt;
    return std::pair(head, head + 1);
  }
  return std::nullopt;
}

/// A linear's result viewed as [b, s, heads, D] whose users each take a run
/// of heads (Falcon's fused query_key_value: the query heads, then one key
/// and one value head, sliced and gathered) -> llm.split of the linear's
/// columns, each part viewed as its own heads: the packed projection form.
struct RaiseHeadGroupSelection : OpRewritePattern<onnx::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ReshapeOp op, PatternRewriter &rewriter) const override {
    Value packed = op.getData();
    if (!definedBy<llm::LinearOp>(packed) || rankOf(packed) != 3 || rankOf(op) != 4)
      return rewriter.notifyMatchFailure(op, "does not view a linear as heads");
    int64_t heads = dimOf(op, 2), head = dimOf(op, 3);
    if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(head) ||
        heads * head != dimOf(packed, 2) || !sameDim(op, 0, packed, 0) ||
        !sameDim(op, 1, packed, 1))
      return rewriter.notifyMatchFailure(op, "not [b, s, heads * D] -> [b, s, heads, D]");
    std::map<std::pair<int64_t, int64_t>, SmallVector<Operation *>> parts;
    for (Operation *user : op->getUsers()) {
      auto range = headRange(user, heads);
      if (!range) return rewriter.notifyMatchFailure(op, "a user does not take a run of heads");
      parts[*range].push_back(user);
    }
    if (parts.size() < 2 || !takeEachOnce(parts, heads))
      return rewriter.notifyMatchFailure(op, "the runs do not take each head once");
    auto packedType = cast<RankedTensorType>(packed.getType());
    SmallVector<int64_t> sizes;
    SmallVector<Type> types;
    for (auto &[range, unused] : parts) {
      sizes.push_back((range.second - range.first) * head);
      types.push_back(packedType.clone({packedType.getDimSize(0), packedType.getDimSize(1),
                                        sizes.back()}));
    }
    rewriter.setInsertionPointAfterValue(packed);
    auto split = llm::SplitOp::create(rewriter, op.getLoc(), types, packed,
                                      rewriter.getDenseI64ArrayAttr(sizes));
    auto shapeType = RankedTensorType::get({4}, rewriter.getI64Type());
    for (auto [part, entry] : llvm::zip(split.getResults(), parts)) {
      int64_t count = entry.first.second - entry.first.first;
      Value shape = onnx::ConstantOp::create(
          rewriter, op.getLoc(), shapeType,
          DenseIntElementsAttr::get(shapeType, ArrayRef<int64_t>{0, 0, count, head}));
      Type viewType = entry.second.front()->getResult(0).getType();
      Value view = onnx::ReshapeOp::create(rewriter, op.getLoc(), viewType, part, shape);
      for (Operation *user : entry.second) rewriter.replaceOp(user, view);
    }
    return success();
  }
};

/// Split(Unsqueeze(linear[b, s, F], axis 1), last axis) -> llm.split of the
/// linear: each part [b, 1, s, n] is one head (GPT-BigCode's multi-query
/// c_attn, whose key and value are one head each; its query is viewed as
/// heads after, ReshapeOfOneHead).
struct RaiseUnsqueezedProjectionSplit : OpRewritePattern<onnx::SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::SplitOp op, PatternRewriter &rewriter) const override {
    auto unsqueeze = definedBy<onnx::UnsqueezeOp>(op.getInput());
    Value packed = unsqueeze ? unsqueeze.getData() : Value();
    if (!definedBy<llm::LinearOp>(packed) || rankOf(packed) != 3 ||
        !isSingleAxis(unsqueeze.getAxes(), 1, 4) || !isSingleAxisValue(op.getAxis(), 4))
      return rewriter.notifyMatchFailure(op, "does not split a linear unsqueezed at axis 1");
    SmallVector<int64_t> sizes;
    SmallVector<Type> types;
    auto packedType = cast<RankedTensorType>(packed.getType());
    for (Value part : op.getOutputs()) {
      if (ShapedType::isDynamic(dimOf(part, 3)))
        return rewriter.notifyMatchFailure(op, "a part's width is unknown");
      sizes.push_back(dimOf(part, 3));
      types.push_back(packedType.clone({packedType.getDimSize(0), packedType.getDimSize(1),
                                        sizes.back()}));
    }
    auto split = llm::SplitOp::create(rewriter, op.getLoc(), types, packed,
                                      rewriter.getDenseI64ArrayAttr(sizes));
    SmallVector<Value> oneHeads;
    for (auto [part, output] : llvm::zip(split.getResults(), op.getOutputs()))
      oneHeads.push_back(llm::SplitHeadsOp::create(rewriter, op.getLoc(), output.getType(), part,
                                                   rewriter.getI64IntegerAttr(1)));
    rewriter.replaceOp(op, oneHeads);
    return success();
  }
};

/// Split of a linear's [batch, seq, features] result along the features ->
/// llm.split (GPT-2's c_attn into q, k and v).
struct RaiseProjectionSplit : OpRewritePattern<onnx::SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::SplitOp op, PatternRewriter &rewriter) const override {
    Value packed = op.getInput();
    if (!definedBy<llm::LinearOp>(packed) || rankOf(packed) != 3 ||
        !isSingleAxisValue(op.getAxis(), 3))
      return rewriter.notifyMatchFailure(op, "does not split a linear's features");
    SmallVector<int64_t> sizes;
    for (Value part : op.getOutputs()) {
      if (rankOf(part) != 3 || ShapedType::isDynamic(dimOf(part, 2)))
        return rewriter.notifyMatchFailure(op, "a part's width is unknown");
      sizes.push_back(dimOf(part, 2));
    }
    rewriter.replaceOpWithNewOp<llm::SplitOp>(op, op->getResultTypes(), packed,
                                              rewriter.getDenseI64ArrayAttr(sizes));
    return success();
  }
};

/// Slices of each head of a projection laid out head by head, [heads, parts,
/// head_dim] (GPT-NeoX's query_key_value: each head's q, k and v side by
/// side) -> one linear whose columns are reordered part by part, split into
/// the parts, then into heads: what a projection laid out [parts, heads,
/// head_dim] gives. The reorder is of the constant weight and bias, once, at
/// compile time. The root is the split_heads, so that the pattern runs again
/// once the bias add is folded into the linear.
struct RaiseHeadInterleavedProjection : OpRewritePattern<llm::SplitHeadsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(llm::SplitHeadsOp op, PatternRewriter &rewriter) const override {
    auto linear = definedBy<llm::LinearOp>(op.getInput());
    if (!linear || !linear->hasOneUse() || rankOf(linear) != 3)
      return rewriter.notifyMatchFailure(op, "does not split a linear used once");
    int64_t heads = op.getNumHeads(), headWidth = dimOf(op.getOutput(), -1);
    // Each part's columns of a head, and the values that take them: Slices
    // (optimum), or the outputs of one Split (torch.onnx's dynamo exporter).
    std::map<std::pair<int64_t, int64_t>, SmallVector<Value>> parts;
    auto split = op->hasOneUse() ? dyn_cast<onnx::SplitOp>(*op->user_begin()) : nullptr;
    if (split && isSingleAxisValue(split.getAxis(), 4)) {
      int64_t next = 0;
      for (Value output : split.getOutputs()) {
        int64_t width = dimOf(output, -1);
        if (ShapedType::isDynamic(width))
          return rewriter.notifyMatchFailure(op, "a part of the split has an unknown width");
        parts[{next, next + width}].push_back(output);
        next += width;
      }
    } else {
      SmallVector<onnx::SliceOp> slices;
      for (Operation *user : op->getUsers()) {
        auto slice = dyn_cast<onnx::SliceOp>(user);
        if (!slice || slice.getData() != op.getOutput())
          return rewriter.notifyMatchFailure(op, "a user of the heads is neither a slice of "
                                                 "them nor their one split");
        slices.push_back(slice);
      }
      auto columns = partitionOfColumns(slices, headWidth);
      if (!columns) return rewriter.notifyMatchFailure(op, "the slices do not part each head");
      for (auto &[range, taking] : *columns)
        for (onnx::SliceOp slice : taking) parts[range].push_back(slice.getResult());
    }
    if (parts.size() < 2 || parts.rbegin()->first.second != headWidth)
      return rewriter.notifyMatchFailure(op, "the parts do not take each head's columns");
    auto weight = readConstantFloats(linear.getWeight());
    std::optional<std::vector<float>> bias;
    if (!isNone(linear.getBias()) && !(bias = readConstantFloats(linear.getBias())))
      return rewriter.notifyMatchFailure(op, "the bias is not an f32 constant");
    if (!weight) return rewriter.notifyMatchFailure(op, "the weight is not an f32 constant");

    // order[i]: the old output feature that becomes feature i.
    SmallVector<int64_t> order;
    for (auto &[columns, unused] : parts)
      for (int64_t head = 0; head < heads; ++head)
        for (int64_t column = columns.first; column < columns.second; ++column)
          order.push_back(head * headWidth + column);
    bool transposed = linear.getTransposeWeight();
    int64_t out = int64_t(order.size()), in = int64_t(weight->size()) / out;
    std::vector<float> reordered(weight->size());
    for (int64_t i = 0; i < in; ++i)
      for (int64_t j = 0; j < out; ++j) {
        // [in, out], or [out, in] when transposed.
        auto at = [&](int64_t feature) { return transposed ? feature * in + i : i * out + feature; };
        reordered[at(j)] = (*weight)[at(order[j])];
      }
    Location loc = linear.getLoc();
    auto weightShape = cast<ShapedType>(linear.getWeight().getType()).getShape();
    Value newWeight = createF32Constant(rewriter, loc, weightShape, reordered);
    Value newBias;
    if (bias) {
      std::vector<float> reorderedBias(order.size());
      for (auto [i, feature] : llvm::enumerate(order)) reorderedBias[i] = (*bias)[feature];
      newBias = createF32Constant(rewriter, loc, {out}, reorderedBias);
    }
    rewriter.setInsertionPoint(linear);
    auto projection = llm::LinearOp::create(rewriter, loc, linear.getType(), linear.getInput(),
                                            newWeight, newBias, linear.getTransposeWeightAttr());
    auto linearType = cast<RankedTensorType>(linear.getType());
    SmallVector<int64_t> sizes;
    SmallVector<Type> types;
    for (auto &[columns, unused] : parts) {
      sizes.push_back(heads * (columns.second - columns.first));
      SmallVector<int64_t> shape(linearType.getShape());
      shape.back() = sizes.back();
      types.push_back(linearType.clone(shape));
    }
    auto columnSplit = llm::SplitOp::create(rewriter, loc, types, projection,
                                            rewriter.getDenseI64ArrayAttr(sizes));
    for (auto [part, entry] : llvm::zip(columnSplit.getResults(), parts)) {
      Value partHeads = llm::SplitHeadsOp::create(rewriter, op.getLoc(),
                                                  entry.second.front().getType(), part,
                                                  op.getNumHeadsAttr());
      for (Value taken : entry.second) rewriter.replaceAllUsesWith(taken, partHeads);
    }
    for (Operation *user : llvm::make_early_inc_range(op->getUsers())) rewriter.eraseOp(user);
    rewriter.eraseOp(op);
    rewriter.eraseOp(linear);
    return success();
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
  patterns.add<FoldBiasAdd<llm::LinearOp>, RaiseLogitsHead, RaiseSwiglu, RaiseResidualAdd,
               RaisePackedProjectionSplit, RaiseProjectionSplit,
               RaiseHeadInterleavedProjection, RaiseHeadGroupSelection,
               RaiseUnsqueezedProjectionSplit>(patterns.getContext());
}

} // namespace llmc::raising
