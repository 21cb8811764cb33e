//===- RaiseGroupedMixtureOfExperts.cpp - transformers' grouped MoE -------===//
//
// transformers 5 runs a sparse MoE block's experts grouped
// (grouped_mm_experts_forward): the (token, slot) pairs are sorted by expert,
// each expert's run of rows is multiplied by its weight, and the results are
// put back in pair order and summed over each token's slots. torch.onnx's
// dynamo exporter traces it with the loop over the experts unrolled:
//
//   xf       = Reshape(x, [-1, hidden])
//   w, ids   = TopK(Softmax(router(xf)), k);  w = w / ReduceSum(w)   (norm_topk_prob)
//              or v, ids = TopK(router(xf), k);  w = Softmax(v)       (gpt-oss)
//              or PhiMoE's sparsemixer (RaiseSparseMixerRouting.cpp)
//   sorted, perm = TopK(Reshape(ids, [-1]), n, largest=0)            (torch.sort)
//   rows     = GatherND(xf, Unsqueeze(perm // k))                     [n, hidden]
//   ends     = Split(CumSum(ScatterElements(zeros, bin(sorted), 1, add)))   (histc)
//   run_e    = Range(ends[e - 1], ends[e])                            (ends[-1] = 0)
//   gu       = Concat_e(MatMul(Gather(rows, run_e), Squeeze(Split(gate_up)[e])))
//              [+ GatherND(gate_up_bias, Unsqueeze(sorted))]       (gpt-oss's biases)
//   g, u     = Split(gu, 2, axis 1);  h = silu(g) * u
//              (gpt-oss: g, u the even and odd columns, clamped, as llm.moe's swiglu_limit)
//   y        = (Concat_e(MatMul(Gather(h, run_e), Squeeze(Split(down)[e])))
//              [+ GatherND(down_bias, Unsqueeze(sorted))])
//              * Unsqueeze(GatherND(Reshape(w, [-1]), Unsqueeze(perm)))
//   inverse  = ScatterND(_, Unsqueeze(perm), Range(0, n))
//   out      = ReduceSum(Reshape(GatherND(y, Unsqueeze(inverse)), [tokens, k, hidden]),
//                        axis 1)                                     [tokens, hidden]
//
// Sorting the pairs changes no sum: the block is llm.linear (the router) and
// llm.moe, gate_up [experts, hidden, 2 inter] split into its gate and up
// columns and every weight transposed to [experts, out, in], the biases
// split the same. The sum of the slots becomes llm.moe's rows flattened as
// the sum was: what reads them on the tokens' rows (a shared expert added
// before the Reshape back to x's shape, ERNIE 4.5's) is raised with them by
// the flattened-token patterns.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

using namespace mlir;

namespace llmc::raising {
namespace {

/// `value` without the Reshapes before it.
Value skipReshapes(Value value) {
  while (auto reshape = definedBy<onnx::ReshapeOp>(value)) value = reshape.getData();
  return value;
}

/// The data of Unsqueeze(data, [-1]) of a rank-1 `data`, else null: the
/// index column GatherND and ScatterND read.
Value indexColumn(Value value) {
  auto unsqueeze = definedBy<onnx::UnsqueezeOp>(value);
  if (!unsqueeze || rankOf(unsqueeze.getData()) != 1 || !isSingleAxis(unsqueeze.getAxes(), 1, 2))
    return nullptr;
  return unsqueeze.getData();
}

/// Whether `value` is GatherND(data, Unsqueeze(index)), rows of `data` at
/// `index`; sets `data` and `index`.
bool gathersRows(Value value, Value &data, Value &index) {
  auto gather = definedBy<onnx::GatherNDOp>(value);
  if (!gather || gather.getBatchDims() != 0) return false;
  data = gather.getData();
  index = indexColumn(gather.getIndices());
  return static_cast<bool>(index);
}

/// Whether `range` is Range(start, limit, 1).
bool isUnitRange(onnx::RangeOp range) { return range && isConstantScalar(range.getDelta(), 1.0); }

/// Whether `value` is a constant of booleans, all true.
bool isConstantTrue(Value value) {
  DenseElementsAttr attr = onnx::getConstantAttr(value);
  return attr && attr.getElementType().isInteger(1) && attr.getNumElements() > 0 &&
         llvm::all_of(attr.getValues<bool>(), [](bool b) { return b; });
}

/// perm // k as torch writes floor division of integers: Div(perm, k), or
/// Div(perm, k) - Cast(And(Less(perm, 0) [== true], ...)), the correction
/// for negative quotients, which TopK's indices never are.
bool isFloorDivision(Value value, Value perm, int64_t k) {
  auto isQuotient = [&](Value v) {
    auto div = definedBy<onnx::DivOp>(v);
    return div && div.getA() == perm && isConstantScalar(div.getB(), static_cast<double>(k));
  };
  if (isQuotient(value)) return true;
  auto sub = definedBy<onnx::SubOp>(value);
  if (!sub || !isQuotient(sub.getA())) return false;
  auto both = definedBy<onnx::AndOp>(skipCasts(sub.getB()));
  if (!both) return false;
  for (Value operand : {both.getA(), both.getB()}) {
    Value negative = operand;
    if (auto equal = definedBy<onnx::EqualOp>(operand)) {
      auto [less, truth] = operandDefinedBy<onnx::LessOp>(equal);
      if (!less || !isConstantTrue(truth)) continue;
      negative = less;
    }
    auto less = definedBy<onnx::LessOp>(negative);
    if (less && less.getA() == perm && isConstantScalar(less.getB(), 0.0)) return true;
  }
  return false;
}

/// The bin the histogram's index chain puts an expert id `expert` in: the
/// chain from `sortedIds` through Casts, Clips and arithmetic by constant
/// scalars (histc's (id - min) * bins / (max - min), clamped), evaluated;
/// nullopt for any other op.
std::optional<double> binOf(Value index, Value sortedIds, double expert) {
  if (index == sortedIds) return expert;
  Operation *op = index.getDefiningOp();
  if (!op || op->getNumOperands() == 0) return std::nullopt;
  std::optional<double> x = binOf(op->getOperand(0), sortedIds, expert);
  if (!x) return std::nullopt;
  if (isa<onnx::CastOp, onnx::ReshapeOp>(op)) {
    bool integer = isa<IntegerType>(cast<ShapedType>(index.getType()).getElementType());
    return integer ? std::trunc(*x) : *x;
  }
  if (auto clip = dyn_cast<onnx::ClipOp>(op)) {
    std::optional<double> low = isNone(clip.getMin()) ? -INFINITY : constantScalar(clip.getMin());
    std::optional<double> high = isNone(clip.getMax()) ? INFINITY : constantScalar(clip.getMax());
    if (!low || !high) return std::nullopt;
    return std::min(std::max(*x, *low), *high);
  }
  std::optional<double> c = op->getNumOperands() == 2 ? constantScalar(op->getOperand(1))
                                                      : std::nullopt;
  if (!c) return std::nullopt;
  if (isa<onnx::DivOp>(op) && *c != 0.0) return *x / *c;
  if (isa<onnx::MulOp>(op)) return *x * *c;
  if (isa<onnx::SubOp>(op)) return *x - *c;
  if (isa<onnx::AddOp>(op)) return *x + *c;
  return std::nullopt;
}

/// The softmax over the experts of `topk`'s values, or null.
onnx::SoftmaxOp softmaxOfTopK(onnx::TopKOp topk) {
  for (Operation *user : topk.getValues().getUsers())
    if (auto softmax = dyn_cast<onnx::SoftmaxOp>(user))
      if (isSingleAxisValue(softmax.getAxis(), rankOf(softmax))) return softmax;
  return {};
}

/// Expert e's weight as a run reads it: Squeeze(Split(weights [experts, in,
/// out], axis 0)[e], axis 0).
struct ExpertSlice {
  Value weights;
  int64_t expert = -1;
};

std::optional<ExpertSlice> expertSliceOf(Value value) {
  auto squeeze = definedBy<onnx::SqueezeOp>(value);
  auto split = squeeze ? definedBy<onnx::SplitOp>(squeeze.getData()) : onnx::SplitOp();
  if (!split || split.getAxis() != 0 || !isNone(split.getSplit()) ||
      !isSingleAxis(squeeze.getAxes(), 0, 3) || !isConstant(split.getInput()) ||
      rankOf(split.getInput()) != 3 ||
      static_cast<int64_t>(split->getNumResults()) != dimOf(split.getInput(), 0))
    return std::nullopt;
  return ExpertSlice{split.getInput(),
                     cast<OpResult>(squeeze.getData()).getResultNumber()};
}

/// What the walk back from the block's output finds.
struct GroupedMoe {
  Value input;                    ///< x [batch, seq, hidden]
  RouterProjection router;
  int64_t topK = 0;
  bool normalize = false;
  std::optional<ScoredRouting> scored;
  std::optional<float> sparseMixer; ///< PhiMoE's sparsemixer threshold
  Value gateUp, down;             ///< [experts, hidden, 2 inter], [experts, inter, hidden]
  Value gateUpBias, downBias;     ///< [experts, 2 inter], [experts, hidden]; null: none
  Columns gate, up;               ///< of gate_up's outputs
  std::optional<float> limit, alpha; ///< gpt-oss's clamped swiglu
};

class GroupedMoeMatcher {
public:
  explicit GroupedMoeMatcher(onnx::ReduceSumOp output) : output(output) {}

  /// Fills `block`, or fails with the reason in `why`.
  LogicalResult match(GroupedMoe &block, std::string &why);
  /// Whether the pairs were found sorted by a routing's expert ids: a
  /// mixture of experts, whose failure to match is worth explaining.
  bool routed() const { return static_cast<bool>(sort); }

private:
  LogicalResult matchSort(Value perm, GroupedMoe &block, std::string &why);
  LogicalResult matchRouting(onnx::TopKOp topk, GroupedMoe &block, std::string &why);
  /// Fills the block's router from the logits the routing reads.
  LogicalResult matchRouter(Value logits, GroupedMoe &block, std::string &why);
  LogicalResult matchRuns(std::string &why);
  /// The constant [experts, in, out] weights of Concat_e(MatMul(Gather(rows,
  /// run_e), weight_e)), the runs' rows in `rows`; records the runs the first
  /// time and checks them against those after. Failure with the reason in `why`.
  FailureOr<Value> matchGroupedProduct(Value value, Value &rows, std::string &why);
  /// `value` without the bias of each sorted row's expert added to it,
  /// Add(value, GatherND(bias [experts, out], Unsqueeze(sorted ids))); that
  /// bias in `bias` (null without one).
  Value withoutSortedBias(Value value, Value &bias);

  onnx::ReduceSumOp output;         ///< the sum of each token's slots
  onnx::TopKOp sort;                ///< the pairs' sort by expert
  Value flatInput;                  ///< xf [tokens, hidden]
  Value weights;                    ///< the routing weights [tokens, k]
  int64_t experts = 0;
  SmallVector<Value> runs;          ///< run_e, the Range of expert e's sorted rows
};

LogicalResult GroupedMoeMatcher::match(GroupedMoe &block, std::string &why) {
  if (output.getKeepdims() != 0 || !isSingleAxis(output.getAxes(), 1, 3))
    return fail(why, "not a sum over each token's slots");
  auto slots = definedBy<onnx::ReshapeOp>(output.getData());
  Value weighted, inverse;
  if (!slots || rankOf(slots) != 3 || !gathersRows(slots.getData(), weighted, inverse))
    return fail(why, "the summed rows are not gathered back into pair order");
  auto scatter = definedBy<onnx::ScatterNDOp>(inverse);
  Value perm = scatter ? indexColumn(scatter.getIndices()) : Value();
  auto positions = scatter ? definedBy<onnx::RangeOp>(scatter.getUpdates()) : onnx::RangeOp();
  if (!perm || scatter.getReduction() != "none" || !isUnitRange(positions) ||
      !isConstantScalar(positions.getStart(), 0.0))
    return fail(why, "the rows are not put back by the inverse of a permutation");
  if (failed(matchSort(perm, block, why))) return failure();
  if (dimOf(slots, 1) != block.topK || dimOf(slots, 2) != dimOf(flatInput, 1))
    return fail(why, "the rows are not summed over the routing's k slots");

  // y = experts' rows * Unsqueeze(GatherND(Reshape(w, [-1]), Unsqueeze(perm))).
  auto scaled = definedBy<onnx::MulOp>(weighted);
  if (!scaled) return fail(why, "the experts' rows are not scaled by their routing weights");
  Value products = scaled.getA(), scale = scaled.getB();
  if (!definedBy<onnx::UnsqueezeOp>(scale)) std::swap(products, scale);
  Value flatWeights, weightIndex;
  auto column = definedBy<onnx::UnsqueezeOp>(scale);
  if (!column || !isSingleAxis(column.getAxes(), 1, 2) ||
      !gathersRows(column.getData(), flatWeights, weightIndex) || weightIndex != perm ||
      skipReshapes(flatWeights) != weights || rankOf(flatWeights) != 1)
    return fail(why, "the experts' rows are not scaled by the sorted routing weights");

  Value activations;
  FailureOr<Value> down =
      matchGroupedProduct(withoutSortedBias(products, block.downBias), activations, why);
  if (failed(down) || failed(matchRuns(why))) return failure();
  block.down = *down;

  FailureOr<ExpertActivation> activation = matchExpertActivation(activations, why);
  if (failed(activation)) return failure();
  block.gate = activation->gate;
  block.up = activation->up;
  block.limit = activation->limit;
  block.alpha = activation->alpha;
  Value rows;
  FailureOr<Value> gateUp = matchGroupedProduct(
      withoutSortedBias(activation->projection, block.gateUpBias), rows, why);
  if (failed(gateUp)) return failure();
  block.gateUp = *gateUp;
  Value flatRows, pairToken;
  if (!gathersRows(rows, flatRows, pairToken) || flatRows.getDefiningOp<onnx::ReshapeOp>() ==
      nullptr || skipReshapes(flatRows) != block.input ||
      !isFloorDivision(pairToken, perm, block.topK))
    return fail(why, "the sorted rows are not the input rows of each pair's token");

  int64_t hidden = dimOf(block.input, 2), inter = dimOf(block.down, 1);
  if (dimOf(block.gateUp, 1) != hidden || dimOf(block.gateUp, 2) != 2 * inter ||
      dimOf(block.down, 2) != hidden || dimOf(block.gateUp, 0) != experts ||
      dimOf(block.down, 0) != experts)
    return fail(why, "the experts' projections are not hidden -> 2 x inter, inter -> hidden");
  if ((block.gateUpBias && dimOf(block.gateUpBias, 1) != 2 * inter) ||
      (block.downBias && dimOf(block.downBias, 1) != hidden))
    return fail(why, "the experts' biases are not one per output of their projections");
  if (block.router.experts() != experts)
    return fail(why, "the router and the experts' weights differ in expert count");
  if (block.topK > experts) return fail(why, "TopK picks more experts than there are");
  if (rankOf(output) != 2 || dimOf(output, 1) != hidden)
    return fail(why, "the output is not the input's [tokens, hidden] rows");
  return success();
}

LogicalResult GroupedMoeMatcher::matchSort(Value perm, GroupedMoe &block, std::string &why) {
  auto found = definedBy<onnx::TopKOp>(perm);
  if (!found || perm != found.getIndices() || found.getLargest() != 0 ||
      rankOf(found.getX()) != 1)
    return fail(why, "the permutation is not an ascending sort of the pairs' expert ids");
  // k: the whole length, Gather(Shape(ids), 0 or -1) (as a 1-D tensor).
  auto length = definedBy<onnx::GatherOp>(skipReshapes(found.getK()));
  auto shape = length ? definedBy<onnx::ShapeOp>(length.getData()) : onnx::ShapeOp();
  auto dim = shape ? onnx::getConstantInts(length.getIndices()) : std::nullopt;
  if (!shape || shape.getData() != found.getX() || !dim || dim->size() != 1 ||
      onnx::normalizeAxis(dim->front(), 1) != 0)
    return fail(why, "the sort's TopK does not take every pair");
  sort = found;
  Value ids = skipReshapes(found.getX());
  auto routing = definedBy<onnx::TopKOp>(ids);
  if (routing && ids == routing.getIndices()) return matchRouting(routing, block, why);
  // PhiMoE's sparsemixer chooses by two ArgMaxes, concatenated.
  if (!isa_and_nonnull<onnx::ConcatOp>(ids.getDefiningOp()))
    return fail(why, "the sorted ids are not the routing TopK's experts");
  FailureOr<SparseMixerRouting> sparse = matchSparseMixerRouting(ids, why);
  if (failed(sparse)) return failure();
  block.topK = 2;
  block.sparseMixer = sparse->threshold;
  weights = sparse->weights;
  return matchRouter(sparse->logits, block, why);
}

LogicalResult GroupedMoeMatcher::matchRouting(onnx::TopKOp topk, GroupedMoe &block,
                                              std::string &why) {
  auto k = onnx::getConstantInts(topk.getK());
  if (rankOf(topk.getX()) != 2 || !isSingleAxisValue(topk.getAxis(), 2) ||
      topk.getLargest() != 1 || !k || k->size() != 1 || (*k)[0] < 1)
    return fail(why, "the routing TopK does not take a constant k largest along the experts");
  block.topK = (*k)[0];
  Value logits;
  if (auto softmax = definedBy<onnx::SoftmaxOp>(skipCasts(topk.getX()))) {
    if (!isSingleAxisValue(softmax.getAxis(), 2))
      return fail(why, "the routing TopK does not read a softmax over the experts");
    logits = softmax.getInput();
    std::optional<WeightNormalization> normalized = normalizedWeights(topk.getValues());
    block.normalize = normalized && normalized->bySumAlone();
    weights = block.normalize ? normalized->division.getResult() : topk.getValues();
  } else if (onnx::SoftmaxOp softmax = softmaxOfTopK(topk)) {
    // The softmax of the top k logits (gpt-oss's, Mixtral's): the softmax
    // over every expert's logits, renormalised over the top k.
    logits = topk.getX();
    block.normalize = true;
    weights = softmax;
  } else {
    auto scored = matchScoredRouting(topk, why);
    if (failed(scored)) return failure();
    block.scored = *scored;
    block.normalize = scored->normalize;
    logits = scored->logits;
    weights = scored->weights;
  }
  return matchRouter(logits, block, why);
}

LogicalResult GroupedMoeMatcher::matchRouter(Value logits, GroupedMoe &block, std::string &why) {
  FailureOr<RouterProjection> router = matchRouterProjection(logits, why);
  if (failed(router)) return failure();
  block.router = *router;
  flatInput = router->flatInput;
  block.input = router->input;
  experts = router->experts();
  if (ShapedType::isDynamic(experts) || experts < 1)
    return fail(why, "the router's expert count is not static");
  return success();
}

LogicalResult GroupedMoeMatcher::matchRuns(std::string &why) {
  // run_e = Range(end_{e-1}, end_e, 1), end_{-1} = 0, end_e = Squeeze(ends[e]).
  onnx::SplitOp ends;
  Value start;
  for (auto [e, run] : llvm::enumerate(runs)) {
    auto range = definedBy<onnx::RangeOp>(run);
    auto end = range ? definedBy<onnx::SqueezeOp>(range.getLimit()) : onnx::SqueezeOp();
    auto split = end ? definedBy<onnx::SplitOp>(end.getData()) : onnx::SplitOp();
    if (!isUnitRange(range) || !split || !isSingleAxis(end.getAxes(), 0, 1) ||
        (ends && split != ends) || cast<OpResult>(end.getData()).getResultNumber() != e)
      return fail(why, "expert " + Twine(e) + "'s run is not the rows up to its offset");
    bool startsRight = e == 0 ? isConstantScalar(range.getStart(), 0.0)
                              : range.getStart() == start;
    if (!startsRight) return fail(why, "expert " + Twine(e) + "'s run does not start at the "
                                       "previous expert's offset");
    ends = split;
    start = range.getLimit();
  }
  // The offsets: Split(CumSum(counts, 0)) into one per expert, through Casts.
  if (ends.getAxis() != 0 || !isNone(ends.getSplit()) ||
      static_cast<int64_t>(ends->getNumResults()) != experts)
    return fail(why, "the runs' offsets are not split one per expert");
  auto cumsum = definedBy<onnx::CumSumOp>(skipCasts(ends.getInput()));
  if (!cumsum || cumsum.getExclusive() != 0 || cumsum.getReverse() != 0 ||
      !isConstantScalar(cumsum.getAxis(), 0.0))
    return fail(why, "the runs' offsets are not a running sum of the experts' counts");
  // The counts: histc of the sorted ids, ScatterElements of ones into zeros
  // at each id's bin, which must be the id itself for every expert.
  auto counts = definedBy<onnx::ScatterElementsOp>(skipCasts(cumsum.getX()));
  Value ones = counts ? counts.getUpdates() : Value();
  if (auto expand = definedBy<onnx::ExpandOp>(ones)) ones = expand.getInput();
  if (!counts || counts.getAxis() != 0 || counts.getReduction() != "add" ||
      !isConstantScalar(counts.getData(), 0.0) || rankOf(counts) != 1 ||
      dimOf(counts, 0) != experts || !isConstantScalar(ones, 1.0))
    return fail(why, "the experts' counts are not a histogram of ones added into zeros");
  for (int64_t e = 0; e < experts; ++e) {
    std::optional<double> bin = binOf(counts.getIndices(), sort.getValues(), e);
    if (!bin || *bin != static_cast<double>(e))
      return fail(why, "the histogram does not count expert " + Twine(e) + " in bin " +
                           Twine(e));
  }
  return success();
}

Value GroupedMoeMatcher::withoutSortedBias(Value value, Value &bias) {
  bias = nullptr;
  auto add = definedBy<onnx::AddOp>(value);
  if (!add) return value;
  for (auto [products, perRow] :
       {std::pair(add.getA(), add.getB()), std::pair(add.getB(), add.getA())}) {
    Value table, ids;
    if (gathersRows(perRow, table, ids) && ids == sort.getValues() && isConstant(table) &&
        rankOf(table) == 2 && dimOf(table, 0) == experts) {
      bias = table;
      return products;
    }
  }
  return value;
}

FailureOr<Value> GroupedMoeMatcher::matchGroupedProduct(Value value, Value &rows,
                                                        std::string &why) {
  auto concat = definedBy<onnx::ConcatOp>(value);
  if (!concat || concat.getAxis() != 0 ||
      static_cast<int64_t>(concat.getInputs().size()) != experts) {
    return fail(why, "the experts' products are not one run of rows per expert, concatenated");
  }
  Value weightsOfAll;
  for (auto [e, part] : llvm::enumerate(concat.getInputs())) {
    auto matmul = definedBy<onnx::MatMulOp>(part);
    auto gather = matmul ? definedBy<onnx::GatherOp>(matmul.getA()) : onnx::GatherOp();
    auto slice = matmul ? expertSliceOf(matmul.getB()) : std::nullopt;
    if (!gather || gather.getAxis() != 0 || !slice ||
        slice->expert != static_cast<int64_t>(e)) {
      return fail(why, "expert " + Twine(e) + "'s product is not its run of rows times its weight");
    }
    if (e == 0) rows = gather.getData(), weightsOfAll = slice->weights;
    if (gather.getData() != rows || slice->weights != weightsOfAll)
      return fail(why, "the experts' runs read different rows or weights");
    if (runs.size() < static_cast<size_t>(experts)) runs.push_back(gather.getIndices());
    if (runs[e] != gather.getIndices())
      return fail(why, "the experts' projections read different runs of rows");
  }
  return weightsOfAll;
}

/// The location of `weights` named with ".part" after its name.
Location partLocation(OpBuilder &builder, Value weights, StringRef part) {
  Location loc = weights.getLoc();
  if (auto name = dyn_cast<NameLoc>(loc))
    loc = NameLoc::get(StringAttr::get(builder.getContext(), name.getName().str() + "." + part),
                       name.getChildLoc());
  return loc;
}

/// A stacked [experts, in, out] weight (or [experts, out] bias) read once
/// for every split of its columns into llm.moe's operands.
struct StackedConstant {
  Value value;
  std::vector<float> data;

  /// Reads `value`, a constant of f32; failure when it is not one.
  static FailureOr<StackedConstant> read(Value value) {
    auto type = cast<ShapedType>(value.getType());
    auto data = readConstantFloats(value);
    if (!data || !type.hasStaticShape() ||
        static_cast<int64_t>(data->size()) != type.getNumElements())
      return failure();
    return StackedConstant{value, std::move(*data)};
  }

  /// `columns` of each expert's weight, transposed to llm.moe's [experts,
  /// columns, in], or of each expert's bias ([experts, columns]); named
  /// after the value and `part`.
  Value columns(OpBuilder &builder, const Columns &columns, StringRef part) const {
    int64_t experts = dimOf(value, 0), out = dimOf(value, -1);
    Location loc = partLocation(builder, value, part);
    if (rankOf(value) == 2)
      return createF32Constant(builder, loc, {experts, columns.count},
                               expertBiasColumns(data, experts, out, columns));
    int64_t in = dimOf(value, 1);
    return createF32Constant(builder, loc, {experts, columns.count, in},
                             transposedExpertColumns(data, experts, in, out, columns));
  }
};

LogicalResult replaceGroupedBlock(IRRewriter &rewriter, onnx::ReduceSumOp output,
                                  const GroupedMoe &block, std::string &why) {
  rewriter.setInsertionPoint(output);
  auto gateUp = StackedConstant::read(block.gateUp);
  auto down = StackedConstant::read(block.down);
  FailureOr<StackedConstant> gateUpBias = StackedConstant(), downBias = StackedConstant();
  if (block.gateUpBias) gateUpBias = StackedConstant::read(block.gateUpBias);
  if (block.downBias) downBias = StackedConstant::read(block.downBias);
  if (failed(gateUp) || failed(down) || failed(gateUpBias) || failed(downBias)) {
    why = "the experts' weights are not f32 constants of the sizes their MatMuls name";
    return failure();
  }
  FailureOr<Value> selectionBias =
      block.scored ? createSelectionBias(rewriter, *block.scored) : FailureOr<Value>(Value());
  if (failed(selectionBias)) {
    why = "the selection bias is not an f32 constant";
    return failure();
  }
  Location loc = output.getLoc();
  Value logits = block.router.create(rewriter, loc);
  FloatAttr limit, alpha;
  if (block.limit) {
    limit = rewriter.getF32FloatAttr(*block.limit);
    alpha = rewriter.getF32FloatAttr(*block.alpha);
  }
  Columns allOfDown{0, 1, dimOf(block.down, 2)};
  auto biasColumns = [&](const StackedConstant &bias, const Columns &columns, StringRef part) {
    return bias.value ? bias.columns(rewriter, columns, part) : Value();
  };
  auto moe = llm::MoeOp::create(
      rewriter, loc, block.input.getType(), block.input, logits,
      gateUp->columns(rewriter, block.gate, "gate_proj"),
      gateUp->columns(rewriter, block.up, "up_proj"),
      down->columns(rewriter, allOfDown, "down_proj"),
      biasColumns(*gateUpBias, block.gate, "gate_proj"),
      biasColumns(*gateUpBias, block.up, "up_proj"),
      biasColumns(*downBias, allOfDown, "down_proj"), block.topK, block.normalize, limit,
      alpha);
  if (block.scored) setScoredRouting(moe, *block.scored, *selectionBias);
  if (block.sparseMixer) moe.setSparseMixerThreshold(APFloat(*block.sparseMixer));
  rewriter.replaceOp(output, flattenTokens(rewriter, loc, moe.getResult(), output.getType()));
  return success();
}

} // namespace

void raiseGroupedMixturesOfExperts(func::FuncOp func) {
  SmallVector<onnx::ReduceSumOp> outputs;
  func.walk([&](onnx::ReduceSumOp sum) {
    auto slots = definedBy<onnx::ReshapeOp>(sum.getData());
    if (slots && definedBy<onnx::GatherNDOp>(slots.getData())) outputs.push_back(sum);
  });
  IRRewriter rewriter(func.getContext());
  for (onnx::ReduceSumOp output : outputs) {
    GroupedMoe block;
    std::string why;
    GroupedMoeMatcher matcher(output);
    if (succeeded(matcher.match(block, why)) &&
        succeeded(replaceGroupedBlock(rewriter, output, block, why)))
      continue;
    if (matcher.routed()) output->setAttr(kMoeUnmatchedAttr, rewriter.getStringAttr(why));
  }
}

} // namespace llmc::raising
