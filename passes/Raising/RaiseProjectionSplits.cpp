//===- RaiseProjectionSplits.cpp - packed projections split into parts ----===//
//
// One linear computing several projections at once (q, k and v; gate and
// up), its result taken apart by Slices, Splits or views of heads, in the
// layouts exporters write: the parts side by side, head by head (GPT-NeoX,
// BLOOM),
// in groups of heads (CodeGen), or as runs of heads (Falcon). Each becomes
// llm.split of the linear's columns, reordered at compile time where the
// parts interleave, so that each part is a projection of its own.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

#include <map>

using namespace mlir;

namespace llmc::raising {
namespace {

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

/// llm.split of a [batch, seq, features] projection into parts `widths` wide.
llm::SplitOp splitColumns(OpBuilder &builder, Location loc, Value packed,
                          ArrayRef<int64_t> widths) {
  auto type = cast<RankedTensorType>(packed.getType());
  SmallVector<Type> types;
  for (int64_t width : widths)
    types.push_back(type.clone({type.getDimSize(0), type.getDimSize(1), width}));
  return llm::SplitOp::create(builder, loc, types, packed, builder.getDenseI64ArrayAttr(widths));
}

/// `part` [batch, seq, groups * width] viewed as `type` [batch, seq, groups,
/// width]: a Reshape by [0, 0, groups, width].
Value viewAsGroups(OpBuilder &builder, Location loc, Type type, Value part, int64_t groups,
                   int64_t width) {
  auto shapeType = RankedTensorType::get({4}, builder.getI64Type());
  Value shape = onnx::ConstantOp::create(
      builder, loc, shapeType,
      DenseIntElementsAttr::get(shapeType, ArrayRef<int64_t>{0, 0, groups, width}));
  return onnx::ReshapeOp::create(builder, loc, type, part, shape);
}

/// `linear`, whose output features are `groups` groups of `groupWidth` with
/// each part's [first, last) columns in every group, as a linear computing
/// them part by part: each part's columns of every group together. The
/// constant weight and bias are reordered once, at compile time. Null when
/// either is not an f32 constant.
llm::LinearOp reorderPartByPart(OpBuilder &builder, llm::LinearOp linear,
                                ArrayRef<std::pair<int64_t, int64_t>> parts, int64_t groups,
                                int64_t groupWidth) {
  SmallVector<int64_t> order;
  for (auto [first, last] : parts)
    for (int64_t group = 0; group < groups; ++group)
      for (int64_t column = first; column < last; ++column)
        order.push_back(group * groupWidth + column);
  return reorderColumns(builder, linear, order);
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
    SmallVector<int64_t> sizes;
    for (auto &[range, unused] : parts) sizes.push_back((range.second - range.first) * head);
    rewriter.setInsertionPointAfterValue(packed);
    auto split = splitColumns(rewriter, op.getLoc(), packed, sizes);
    for (auto [part, entry] : llvm::zip(split.getResults(), parts)) {
      Type viewType = entry.second.front()->getResult(0).getType();
      Value view = viewAsGroups(rewriter, op.getLoc(), viewType, part,
                                entry.first.second - entry.first.first, head);
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
    for (Value part : op.getOutputs()) {
      if (ShapedType::isDynamic(dimOf(part, 3)))
        return rewriter.notifyMatchFailure(op, "a part's width is unknown");
      sizes.push_back(dimOf(part, 3));
    }
    auto split = splitColumns(rewriter, op.getLoc(), packed, sizes);
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
    SmallVector<std::pair<int64_t, int64_t>> ranges;
    SmallVector<int64_t> sizes;
    for (auto &[columns, unused] : parts) {
      ranges.push_back(columns);
      sizes.push_back(heads * (columns.second - columns.first));
    }
    llm::LinearOp projection = reorderPartByPart(rewriter, linear, ranges, heads, headWidth);
    if (!projection)
      return rewriter.notifyMatchFailure(op, "the weight or bias is not an f32 constant");
    auto columnSplit = splitColumns(rewriter, linear.getLoc(), projection, sizes);
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

/// Gathers of one part each along axis 3 of a projection viewed as [b, s,
/// heads, parts, head_dim] (BLOOM's query_key_value: each head's q, k and v
/// side by side), each transposed to [b, heads, s, head_dim] -> slices of one
/// transposed view [b, heads, s, parts * head_dim]: GPT-NeoX's form, which
/// RaiseHeadInterleavedProjection splits once the view is split_heads.
struct RaiseHeadPartGathers : OpRewritePattern<onnx::ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::ReshapeOp op, PatternRewriter &rewriter) const override {
    Value x = op.getData();
    int64_t heads = dimOf(op, 2), parts = dimOf(op, 3), width = dimOf(op, 4);
    if (rankOf(x) != 3 || rankOf(op) != 5 || ShapedType::isDynamic(heads) ||
        ShapedType::isDynamic(parts) || ShapedType::isDynamic(width))
      return rewriter.notifyMatchFailure(op, "not [b, s, F] -> [b, s, heads, parts, D]");
    if (!sameDim(op, 0, x, 0) || !sameDim(op, 1, x, 1))
      return rewriter.notifyMatchFailure(op, "the view changes the batch or sequence dims");
    // Each user gathers part p, and only transposes [0, 2, 1, 3] read it.
    SmallVector<std::pair<onnx::TransposeOp, int64_t>> taken;
    for (Operation *user : op->getUsers()) {
      auto gather = dyn_cast<onnx::GatherOp>(user);
      auto index = gather ? onnx::getConstantInts(gather.getIndices()) : std::nullopt;
      if (!gather || gather.getData() != op.getResult() || (gather.getAxis() != 3 &&
          gather.getAxis() != -2) || rankOf(gather.getIndices()) != 0 || !index ||
          (*index)[0] < 0 || (*index)[0] >= parts)
        return rewriter.notifyMatchFailure(op, "a user is not a Gather of one part on axis 3");
      for (Operation *reader : gather->getUsers()) {
        auto transpose = dyn_cast<onnx::TransposeOp>(reader);
        if (!transpose || !hasPerm(transpose, {0, 2, 1, 3}))
          return rewriter.notifyMatchFailure(op, "a part is read by other than Transpose "
                                                 "[0, 2, 1, 3]");
        taken.push_back({transpose, (*index)[0]});
      }
    }
    if (taken.empty()) return rewriter.notifyMatchFailure(op, "no part is taken");
    Location loc = op.getLoc();
    auto viewType = cast<RankedTensorType>(op.getType());
    int64_t packed = parts * width;
    Value view = viewAsGroups(rewriter, loc,
                              viewType.clone({viewType.getDimSize(0), viewType.getDimSize(1),
                                              heads, packed}),
                              x, heads, packed);
    Value headsFirst = onnx::TransposeOp::create(
        rewriter, loc,
        viewType.clone({viewType.getDimSize(0), heads, viewType.getDimSize(1), packed}), view,
        rewriter.getDenseI64ArrayAttr({0, 2, 1, 3}));
    auto i64s = [&](int64_t value) -> Value {
      auto type = RankedTensorType::get({1}, rewriter.getI64Type());
      return onnx::ConstantOp::create(rewriter, loc, type,
                                      DenseIntElementsAttr::get(type, ArrayRef<int64_t>{value}));
    };
    Value unitSteps = onnx::NoneOp::create(rewriter, loc, rewriter.getNoneType());
    for (auto [transpose, part] : taken)
      rewriter.replaceOpWithNewOp<onnx::SliceOp>(transpose, transpose.getType(), headsFirst,
                                                 i64s(part * width), i64s((part + 1) * width),
                                                 i64s(3), unitSteps);
    for (Operation *gather : llvm::make_early_inc_range(op->getUsers())) rewriter.eraseOp(gather);
    rewriter.eraseOp(op);
    return success();
  }
};

/// Split(Reshape(linear[b, s, F] -> [b, s, G, F / G]), last axis): each of G
/// groups of the features holds every part's columns side by side (CodeGen's
/// qkv_proj: 4 groups of heads, each with its q, v and k) -> one linear
/// whose columns are reordered part by part, split into the parts, each viewed
/// as [b, s, G, width]: what the Split gave.
struct RaiseGroupInterleavedProjection : OpRewritePattern<onnx::SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::SplitOp op, PatternRewriter &rewriter) const override {
    auto view = definedBy<onnx::ReshapeOp>(op.getInput());
    auto linear = view ? definedBy<llm::LinearOp>(view.getData()) : llm::LinearOp();
    // Besides the view, the linear may only have its shape read (for the view's target).
    if (!linear || !view->hasOneUse() || !onlyReadBy(linear, view) || rankOf(linear) != 3 ||
        rankOf(view) != 4 || !isSingleAxisValue(op.getAxis(), 4))
      return rewriter.notifyMatchFailure(op, "does not split a linear only viewed as "
                                             "[b, s, groups, width], along the width");
    int64_t groups = dimOf(view, 2), groupWidth = dimOf(view, 3);
    if (ShapedType::isDynamic(groups) || ShapedType::isDynamic(groupWidth) ||
        groups * groupWidth != dimOf(linear, 2) || !sameDim(view, 0, linear, 0) ||
        !sameDim(view, 1, linear, 1))
      return rewriter.notifyMatchFailure(op, "the view is not of the features into groups");
    SmallVector<std::pair<int64_t, int64_t>> ranges;
    SmallVector<int64_t> sizes;
    for (Value part : op.getOutputs()) {
      int64_t width = dimOf(part, 3), first = ranges.empty() ? 0 : ranges.back().second;
      if (ShapedType::isDynamic(width))
        return rewriter.notifyMatchFailure(op, "a part's width is unknown");
      ranges.push_back({first, first + width});
      sizes.push_back(groups * width);
    }
    llm::LinearOp projection = reorderPartByPart(rewriter, linear, ranges, groups, groupWidth);
    if (!projection)
      return rewriter.notifyMatchFailure(op, "the weight or bias is not an f32 constant");
    auto split = splitColumns(rewriter, op.getLoc(), projection, sizes);
    SmallVector<Value> views;
    for (auto [part, output, range] : llvm::zip(split.getResults(), op.getOutputs(), ranges))
      views.push_back(viewAsGroups(rewriter, op.getLoc(), output.getType(), part, groups,
                                   range.second - range.first));
    rewriter.replaceOp(op, views);
    rewriter.eraseOp(view);
    rewriter.replaceOp(linear, projection);
    return success();
  }
};

} // namespace

void populateProjectionSplitPatterns(RewritePatternSet &patterns) {
  patterns.add<RaisePackedProjectionSplit, RaiseProjectionSplit, RaiseHeadInterleavedProjection,
               RaiseHeadPartGathers, RaiseGroupInterleavedProjection, RaiseHeadGroupSelection,
               RaiseUnsqueezedProjectionSplit>(patterns.getContext());
}

} // namespace llmc::raising
