//===- LlmOps.cpp - verifiers of the llm dialect's ops --------------------===//
//
// The verifiers hold each op to the layout contract in LlmOps.td where the
// shapes are known; unknown (dynamic or unranked) dims are never an error.
//
//===----------------------------------------------------------------------===//
#include "dialects/llm/LlmDialect.h"
#include "llmc/Support/TensorShape.h"

#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <cmath>

using namespace mlir;

namespace llmc::llm {

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

Operation *LlmDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                           Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type) return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

namespace {
/// Whether two dims can be equal (either unknown, or the same).
bool compatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Checks that a ranked `value` has rank `rank`.
LogicalResult expectRank(Operation *op, Value value, int64_t rank, StringRef what) {
  int64_t actual = rankOf(value);
  if (actual >= 0 && actual != rank)
    return op->emitOpError() << what << " must be rank " << rank << ", not " << actual;
  return success();
}

/// Checks that a rotary input is [batch, heads, seq, head_dim] with positions
/// [batch, seq], or ragged: [tokens, heads, head_dim] with positions [tokens].
LogicalResult verifyRotaryLayout(Operation *op, Value input, Value positions) {
  int64_t rank = rankOf(input), positionsRank = rankOf(positions);
  if (rank >= 0 && rank != 3 && rank != 4)
    return op->emitOpError("the input must be [batch, heads, seq, head_dim] or ragged");
  if (rank >= 0 && positionsRank >= 0 && positionsRank != rank - 2)
    return op->emitOpError("positions must be [batch, seq] or, ragged, [tokens]");
  return success();
}

/// Checks a [max_positions, rotary_dim/2] table (or [rotary_dim/2] frequencies)
/// against the head size of the rotated input.
LogicalResult verifyRotaryWidth(Operation *op, Value input, int64_t halfWidth) {
  int64_t headDim = dimOf(input, -1);
  if (!ShapedType::isDynamic(halfWidth) && !ShapedType::isDynamic(headDim) &&
      2 * halfWidth > headDim)
    return op->emitOpError() << "rotates " << 2 * halfWidth << " features of a head of "
                             << headDim;
  return success();
}

/// A norm's weight: [n], n dividing the input's last dim into the groups
/// normalised on their own (one, or one per head), or [groups, n], a row for
/// each of the groups that make the last dim.
LogicalResult verifyNormWeight(Operation *op, Value weight, Value input) {
  int64_t rank = rankOf(weight), features = dimOf(input, -1);
  if (rank >= 0 && rank != 1 && rank != 2)
    return op->emitOpError("the weight must be [n] or [groups, n], not rank ") << rank;
  int64_t group = dimOf(weight, -1);
  if (!ShapedType::isDynamic(group) && !ShapedType::isDynamic(features) &&
      (group == 0 || features % group != 0))
    return op->emitOpError("weight length does not divide the normalised dim into groups");
  if (rank == 2 && !ShapedType::isDynamic(group) && !ShapedType::isDynamic(features) &&
      !compatible(dimOf(weight, 0), features / group))
    return op->emitOpError("a [groups, n] weight must have a row for each of the ")
           << features / group << " groups of the normalised dim";
  return success();
}
} // namespace

LogicalResult EmbeddingOp::verify() {
  if (failed(expectRank(*this, getTable(), 2, "the table"))) return failure();
  int64_t hidden = dimOf(getTable(), getTransposeTable() ? 0 : 1);
  if (!compatible(hidden, dimOf(getOutput(), -1)))
    return emitOpError("output width differs from the table's hidden size");
  return success();
}

LogicalResult RmsNormOp::verify() { return verifyNormWeight(*this, getWeight(), getInput()); }

LogicalResult LayerNormOp::verify() {
  if (failed(verifyNormWeight(*this, getWeight(), getInput()))) return failure();
  auto weight = dyn_cast<RankedTensorType>(getWeight().getType());
  auto bias = getBias() ? dyn_cast<RankedTensorType>(getBias().getType()) : nullptr;
  if (weight && bias && bias.getShape() != weight.getShape())
    return emitOpError("the bias must have the weight's shape");
  return success();
}

/// The weight of x * W (+ bias) fits the input and the result, and the bias the result.
static LogicalResult verifyProjection(Operation *op, Value input, Value weight, bool transposed,
                                      Value bias, Value output) {
  if (failed(expectRank(op, weight, 2, "the weight"))) return failure();
  int64_t in = dimOf(weight, transposed ? 1 : 0), out = dimOf(weight, transposed ? 0 : 1);
  if (!compatible(in, dimOf(input, -1)))
    return op->emitOpError("weight's input dim differs from the input's last dim");
  if (!compatible(out, dimOf(output, -1)))
    return op->emitOpError("weight's output dim differs from the result's last dim");
  if (bias && (failed(expectRank(op, bias, 1, "the bias")) || !compatible(dimOf(bias, 0), out)))
    return op->emitOpError("bias must be [") << out << "]";
  return success();
}

LogicalResult LinearOp::verify() {
  return verifyProjection(*this, getInput(), getWeight(), getTransposeWeight(), getBias(),
                          getOutput());
}

LogicalResult LoraOp::verify() {
  if (getBase().getType() != getOutput().getType())
    return emitOpError("the output must have the base product's type");
  if (!compatible(dimOf(getInput(), 0), dimOf(getBase(), 0)))
    return emitOpError("the input and the base product must have the same rows");
  if (getSiteAttr().getInt() < 0) return emitOpError("the site must not be negative");
  return success();
}

LogicalResult MoeOp::verify() {
  for (auto [weight, what] : {std::pair(getGateWeight(), "the gate weight"),
                              std::pair(getUpWeight(), "the up weight"),
                              std::pair(getDownWeight(), "the down weight")})
    if (failed(expectRank(*this, weight, 3, what))) return failure();
  auto gateType = dyn_cast<RankedTensorType>(getGateWeight().getType());
  if (!gateType) return success();
  ArrayRef<int64_t> gate = gateType.getShape();
  for (auto [dim, size] : llvm::enumerate(gate))
    if (!compatible(dimOf(getUpWeight(), dim), size))
      return emitOpError("the gate and up weights must both be [experts, intermediate, hidden]");
  SmallVector<int64_t> down{gate[0], gate[2], gate[1]};
  for (auto [dim, size] : llvm::enumerate(down))
    if (!compatible(dimOf(getDownWeight(), dim), size))
      return emitOpError("the down weight must be [experts, hidden, intermediate]");
  int64_t experts = gate[0], hidden = gate[2];
  if (!compatible(dimOf(getInput(), -1), hidden) || !compatible(dimOf(getOutput(), -1), hidden))
    return emitOpError("the input and output rows must be the experts' hidden size ") << hidden;
  if (!compatible(dimOf(getRouterLogits(), -1), experts))
    return emitOpError("the router logits must have one column per expert (") << experts << ")";
  int64_t topK = getTopK();
  if (topK < 1 || (!ShapedType::isDynamic(experts) && topK > experts))
    return emitOpError("top_k ") << topK << " must be in [1, " << experts << "]";
  int64_t inter = gate[1];
  for (auto [bias, out, what] : {std::tuple(getGateBias(), inter, "the gate bias"),
                                 std::tuple(getUpBias(), inter, "the up bias"),
                                 std::tuple(getDownBias(), hidden, "the down bias")}) {
    if (!bias) continue;
    if (failed(expectRank(*this, bias, 2, what))) return failure();
    if (!compatible(dimOf(bias, 0), experts) || !compatible(dimOf(bias, 1), out))
      return emitOpError(what) << " must be [experts, " << out << "]";
  }
  if (static_cast<bool>(getSwigluLimit()) != static_cast<bool>(getSwigluAlpha()))
    return emitOpError("swiglu_limit and swiglu_alpha come together (gpt-oss's clamped swiglu)");
  if (auto limit = getSwigluLimit(); limit && !(limit->convertToFloat() > 0.0f))
    return emitOpError("swiglu_limit must be positive");
  return verifyRouting(experts, topK);
}

LogicalResult MoeOp::verifyRouting(int64_t experts, int64_t topK) {
  if (Value bias = getSelectionBias()) {
    if (failed(expectRank(*this, bias, 1, "the selection bias"))) return failure();
    if (!compatible(dimOf(bias, 0), experts))
      return emitOpError("the selection bias must be [experts]");
  }
  if (static_cast<bool>(getExpertGroups()) != static_cast<bool>(getTopKGroups()))
    return emitOpError("expert_groups and top_k_groups come together (DeepSeek-V3's n_group and "
                       "topk_group)");
  if (getExcludeHiddenGroups() && !getExpertGroups())
    return emitOpError("exclude_hidden_groups needs expert_groups");
  if (getSparseMixerThreshold() && (topK != 2 || hasScoredRouting() || getNormalizeTopK()))
    return emitOpError("sparse_mixer_threshold (PhiMoE's sparsemixer) chooses 2 experts by their "
                       "logits alone, unnormalised");
  if (auto epsilon = getNormalizeEpsilon()) {
    if (!getNormalizeTopK()) return emitOpError("normalize_epsilon needs normalize_top_k");
    if (!(epsilon->convertToFloat() >= 0.0f))
      return emitOpError("normalize_epsilon must not be negative");
  }
  if (auto minimum = getNormalizeMin()) {
    if (!getNormalizeTopK()) return emitOpError("normalize_min needs normalize_top_k");
    if (!(minimum->convertToFloat() >= 0.0f))
      return emitOpError("normalize_min must not be negative");
  }
  if (!getExpertGroups()) return success();
  int64_t groups = *getExpertGroups(), kept = *getTopKGroups();
  if (groups < 1 || kept < 1 || kept > groups)
    return emitOpError("top_k_groups ")
           << kept << " must be in [1, expert_groups " << groups << "]";
  if (ShapedType::isDynamic(experts)) return success();
  if (experts % groups || experts / groups < 2)
    return emitOpError("expert_groups ")
           << groups << " must split the " << experts
           << " experts into groups of at least 2 (a group scores its two best experts)";
  if (topK > kept * (experts / groups))
    return emitOpError("top_k ") << topK << " is more than the " << kept * (experts / groups)
                                 << " experts of the top_k_groups groups";
  return success();
}

LogicalResult SplitHeadsOp::verify() {
  int64_t inRank = rankOf(getInput()), outRank = rankOf(getOutput());
  if (inRank >= 0 && inRank != 2 && inRank != 3)
    return emitOpError("the input must be [batch, seq, hidden] or [tokens, hidden]");
  if (inRank >= 0 && outRank >= 0 && outRank != inRank + 1)
    return emitOpError("the result must have one dim more than the input");
  int64_t heads = getNumHeads();
  if (heads <= 0) return emitOpError("num_heads must be positive");
  if (!compatible(dimOf(getOutput(), 1), heads)) return emitOpError("result has other head count");
  int64_t hidden = dimOf(getInput(), -1), head = dimOf(getOutput(), -1);
  if (!ShapedType::isDynamic(hidden) && !ShapedType::isDynamic(head) && hidden != heads * head)
    return emitOpError("hidden size ") << hidden << " is not " << heads << " heads of " << head;
  return success();
}

OpFoldResult SplitHeadsOp::fold(FoldAdaptor) {
  // split_heads(merge_heads(x)) is x: exports that rotate [batch, seq, hidden]
  // tensors (3-D RotaryEmbedding) merge heads only to split them again.
  auto merge = getInput().getDefiningOp<MergeHeadsOp>();
  if (merge && merge.getInput().getType() == getType()) return merge.getInput();
  return {};
}

LogicalResult MergeHeadsOp::verify() {
  int64_t inRank = rankOf(getInput()), outRank = rankOf(getOutput());
  if (inRank >= 0 && inRank != 3 && inRank != 4)
    return emitOpError("the input must be [batch, heads, seq, head_dim] or [tokens, heads, head_dim]");
  if (inRank >= 0 && outRank >= 0 && outRank != inRank - 1)
    return emitOpError("the result must have one dim less than the input");
  int64_t heads = dimOf(getInput(), 1), head = dimOf(getInput(), -1), hidden = dimOf(getOutput(), -1);
  if (!ShapedType::isDynamic(heads) && !ShapedType::isDynamic(head) &&
      !compatible(hidden, heads * head))
    return emitOpError("result width is not heads * head_dim");
  return success();
}

LogicalResult ConcatHeadsOp::verify() {
  int64_t rank = rankOf(getOutput());
  if (rank >= 0 && rank != 3 && rank != 4)
    return emitOpError("the result must be [batch, heads, seq, head_dim] or [tokens, heads, "
                       "head_dim]");
  if (rankOf(getLhs()) != rank || rankOf(getRhs()) != rank)
    return emitOpError("the operands must have the result's rank");
  int64_t heads = dimOf(getOutput(), 1), rhsHeads = dimOf(getRhs(), 1);
  if (!compatible(dimOf(getLhs(), 1), heads) ||
      (!compatible(rhsHeads, heads) && rhsHeads != 1))
    return emitOpError("the lhs must have the result's heads, the rhs those or one");
  int64_t lhsWidth = dimOf(getLhs(), -1), rhsWidth = dimOf(getRhs(), -1);
  if (!ShapedType::isDynamic(lhsWidth) && !ShapedType::isDynamic(rhsWidth) &&
      !compatible(dimOf(getOutput(), -1), lhsWidth + rhsWidth))
    return emitOpError("the result's head_dim must be the operands' summed");
  return success();
}

LogicalResult HeadLinearOp::verify() {
  int64_t rank = rankOf(getOutput());
  if (rank >= 0 && rank != 3 && rank != 4)
    return emitOpError("the result must be [batch, heads, seq, out] or [tokens, heads, out]");
  if (rankOf(getInput()) != rank)
    return emitOpError("the input must have the result's rank");
  if (failed(expectRank(*this, getWeight(), 3, "the weight"))) return failure();
  int64_t heads = dimOf(getWeight(), 0);
  if (!compatible(dimOf(getInput(), 1), heads) || !compatible(dimOf(getOutput(), 1), heads))
    return emitOpError("the input and result must have the weight's ") << heads << " heads";
  if (!compatible(dimOf(getInput(), -1), dimOf(getWeight(), 1)) ||
      !compatible(dimOf(getOutput(), -1), dimOf(getWeight(), 2)))
    return emitOpError("the weight must be [heads, input features, result features]");
  return success();
}

LogicalResult SplitQkvOp::verify() {
  int64_t heads = getNumHeads(), kvHeads = getNumKvHeads();
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads)
    return emitOpError("num_heads must be a positive multiple of num_kv_heads");
  int64_t q = dimOf(getQuery(), -1), k = dimOf(getKey(), -1), v = dimOf(getValue(), -1);
  int64_t packed = dimOf(getInput(), -1);
  if (!ShapedType::isDynamic(q) && !ShapedType::isDynamic(k) && !ShapedType::isDynamic(v) &&
      (!compatible(packed, q + k + v) || k != v || q * kvHeads != k * heads))
    return emitOpError("q/k/v widths do not split the packed projection by the head counts");
  return success();
}

LogicalResult RopeOp::verify() {
  if (failed(verifyRotaryLayout(*this, getInput(), getPositions())) ||
      failed(expectRank(*this, getInvFreq(), 1, "inv_freq")))
    return failure();
  if (auto scale = getScale(); scale && !(scale->convertToFloat() > 0.0f &&
                                          std::isfinite(scale->convertToFloat())))
    return emitOpError("scale must be positive and finite");
  return verifyRotaryWidth(*this, getInput(), dimOf(getInvFreq(), 0));
}

LogicalResult RopeCachedOp::verify() {
  if (failed(verifyRotaryLayout(*this, getInput(), getPositions())) ||
      failed(expectRank(*this, getCosCache(), 2, "the cos cache")) ||
      failed(expectRank(*this, getSinCache(), 2, "the sin cache")))
    return failure();
  if (getCosCache().getType() != getSinCache().getType())
    return emitOpError("cos and sin caches differ in type");
  return verifyRotaryWidth(*this, getInput(), dimOf(getCosCache(), 1));
}

LogicalResult KvConcatOp::verify() {
  for (Value value : {getPast(), getCurrent(), getPresent()})
    if (failed(expectRank(*this, value, 4, "a cache tensor"))) return failure();
  for (int64_t dim : {0, 1, 3})
    if (!compatible(dimOf(getPast(), dim), dimOf(getCurrent(), dim)))
      return emitOpError("past and current differ in dim ") << dim;
  return success();
}

LogicalResult RepeatKvOp::verify() {
  if (getRepeats() <= 0) return emitOpError("repeats must be positive");
  int64_t heads = dimOf(getInput(), 1);
  if (!ShapedType::isDynamic(heads) && !compatible(dimOf(getOutput(), 1), heads * getRepeats()))
    return emitOpError("result heads are not input heads * repeats");
  return success();
}

/// One finite value per query head in `values` (`what`), when given.
static LogicalResult verifyPerHead(Operation *op, std::optional<ArrayRef<float>> values,
                                   int64_t heads, StringRef what) {
  if (!values) return success();
  if (!compatible(heads, static_cast<int64_t>(values->size())))
    return op->emitOpError("has ") << values->size() << " " << what << " for " << heads
                                   << " query heads";
  if (llvm::any_of(*values, [](float value) { return !std::isfinite(value); }))
    return op->emitOpError(what) << " must be finite";
  return success();
}

/// A sliding window of at least one key, a positive softcap, and one finite
/// sink logit and ALiBi slope per query head, when given.
template <typename AttentionOpTy>
static LogicalResult verifyScoreOptions(AttentionOpTy op, int64_t heads) {
  if (auto window = op.getSlidingWindow(); window && *window <= 0)
    return op.emitOpError("sliding_window must be positive");
  if (auto softcap = op.getSoftcap(); softcap && !(softcap->convertToFloat() > 0.0f))
    return op.emitOpError("softcap must be positive");
  if (failed(verifyPerHead(op, op.getSinks(), heads, "sinks")) ||
      failed(verifyPerHead(op, op.getAlibiSlopes(), heads, "alibi_slopes")))
    return failure();
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyScoreOptions(*this, dimOf(getQuery(), 1)))) return failure();
  for (Value value : {getQuery(), getKey(), getValue(), getOutput()})
    if (failed(expectRank(*this, value, 4, "q, k, v and the result"))) return failure();
  int64_t heads = dimOf(getQuery(), 1), kvHeads = dimOf(getKey(), 1);
  if (!compatible(kvHeads, dimOf(getValue(), 1)))
    return emitOpError("key and value differ in head count");
  if (!ShapedType::isDynamic(heads) && !ShapedType::isDynamic(kvHeads) &&
      (kvHeads == 0 || heads % kvHeads))
    return emitOpError("query heads (") << heads << ") are not a multiple of KV heads ("
                                        << kvHeads << ")";
  if (!compatible(dimOf(getQuery(), 3), dimOf(getKey(), 3)))
    return emitOpError("query and key head sizes differ");
  if (!compatible(dimOf(getKey(), 2), dimOf(getValue(), 2)))
    return emitOpError("key and value lengths differ");
  return success();
}

namespace {
/// Checks a [layers, num_blocks, 2 or 1, kv_heads, block_size, head_dim] pool
/// (f32, bf16 or f16; or i8 with the scale after each row), that `layer`
/// indexes it and that a KV cache group, if any, is one.
LogicalResult verifyPool(Operation *op, Value pool, int64_t layer,
                         std::optional<int64_t> kvGroup) {
  if (kvGroup && *kvGroup < 0)
    return op->emitOpError("kv_group ") << *kvGroup << " is negative";
  if (failed(expectRank(op, pool, 6, "the KV pool"))) return failure();
  if (rankOf(pool) == 6 && dimOf(pool, 2) != 2 && dimOf(pool, 2) != 1)
    return op->emitOpError("the KV pool's third dim must be 2 (keys, values) or 1 (keys whose "
                           "first features are the values)");
  auto type = cast<ShapedType>(pool.getType());
  Type element = type.getElementType();
  if (!isa<FloatType>(element) && !llm::isInt8KvPool(type))
    return op->emitOpError("the KV pool holds ") << element << "; it must be a float or i8 (int8 codes)";
  int64_t row = dimOf(pool, 5);
  if (llm::isInt8KvPool(type) && !ShapedType::isDynamic(row) && row <= llm::kInt8KvScaleBytes)
    return op->emitOpError("an int8 KV pool's rows must hold head_dim codes and a ")
           << llm::kInt8KvScaleBytes << "-byte scale";
  int64_t layers = dimOf(pool, 0);
  if (layer < 0 || (!ShapedType::isDynamic(layers) && layer >= layers))
    return op->emitOpError("layer ") << layer << " is not in the pool's " << layers << " layers";
  return success();
}
/// Whether `pool` is ranked and caches one row per token (llm::valuesInKeys).
bool poolValuesInKeys(Value pool) {
  return rankOf(pool) == 6 && llm::valuesInKeys(cast<ShapedType>(pool.getType()));
}
/// The head_dim of the rows `pool` caches (dynamic when its rank is).
int64_t cachedHeadDim(Value pool) {
  auto type = dyn_cast<ShapedType>(pool.getType());
  if (!type || !type.hasRank() || type.getRank() != 6) return ShapedType::kDynamic;
  return llm::cachedHeadDim(type);
}
} // namespace

LogicalResult PermuteFeaturesOp::verify() {
  if (getOutput().getType() != getInput().getType())
    return emitOpError("the result must have the input's type");
  if (failed(expectRank(*this, getIndices(), 1, "indices"))) return failure();
  auto indices = cast<ShapedType>(getIndices().getType());
  if (!indices.getElementType().isInteger(32)) return emitOpError("indices must be i32");
  if (!compatible(dimOf(getIndices(), 0), dimOf(getInput(), -1)))
    return emitOpError("indices must hold one index per feature");
  return success();
}

/// Values (or an attention's result) beside keys (or its query): the same
/// type but for a head_dim that may be narrower (multi-head latent
/// attention's values).
static LogicalResult verifyValuesBesideKeys(Operation *op, Value keys, Value values,
                                            StringRef keysName = "keys",
                                            StringRef valuesName = "values") {
  auto keyType = dyn_cast<RankedTensorType>(keys.getType());
  auto valueType = dyn_cast<RankedTensorType>(values.getType());
  if (!keyType || !valueType) return success();
  if (keyType.getElementType() != valueType.getElementType() ||
      keyType.getShape().drop_back() != valueType.getShape().drop_back())
    return op->emitOpError() << valuesName << " must have " << keysName
                             << "' element type and dims, but for head_dim";
  int64_t keyDim = keyType.getShape().back(), valueDim = valueType.getShape().back();
  if (!ShapedType::isDynamic(keyDim) && !ShapedType::isDynamic(valueDim) && valueDim > keyDim)
    return op->emitOpError() << "the head_dim of " << valuesName << " (" << valueDim
                             << ") is wider than that of " << keysName << " (" << keyDim << ")";
  return success();
}

LogicalResult PagedKvWriteOp::verify() {
  if (failed(verifyPool(*this, getKvPool(), getLayer(), getKvGroup()))) return failure();
  if (getUpdatedPool().getType() != getKvPool().getType())
    return emitOpError("the result must have the pool's type");
  int64_t rank = rankOf(getKey());
  if (rank >= 0 && rank != 3 && rank != 4)
    return emitOpError("keys must be [batch, kv_heads, seq, head_dim] or ragged [tokens, kv_heads, head_dim]");
  bool valuesInKeys = poolValuesInKeys(getKvPool());
  if (rankOf(getKvPool()) == 6 && valuesInKeys == static_cast<bool>(getValue()))
    return emitOpError(valuesInKeys ? "writes values into a pool of one row per token, whose "
                                      "values are its keys' first features"
                                    : "takes no values for a pool of key and value rows");
  if (getValue() && failed(verifyValuesBesideKeys(*this, getKey(), getValue()))) return failure();
  int64_t slotsRank = rankOf(getSlotMapping());
  if (rank >= 0 && slotsRank >= 0 && slotsRank != rank - 2)
    return emitOpError("slot_mapping must be [batch, seq] or, ragged, [tokens]");
  if (!compatible(dimOf(getKey(), 1), dimOf(getKvPool(), 3)) ||
      !compatible(dimOf(getKey(), -1), cachedHeadDim(getKvPool())))
    return emitOpError("keys do not fit the pool's kv_heads and head_dim");
  return success();
}

LogicalResult PagedAttentionOp::verify() {
  if (failed(verifyScoreOptions(*this, dimOf(getQuery(), 1)))) return failure();
  if (failed(verifyPool(*this, getKvPool(), getLayer(), getKvGroup()))) return failure();
  int64_t rank = rankOf(getQuery());
  bool ragged = static_cast<bool>(getCuSeqlensQ());
  if (rank >= 0 && rank != (ragged ? 3 : 4))
    return emitOpError(ragged ? "a ragged query must be [tokens, heads, head_dim]"
                              : "the query must be [batch, heads, seq, head_dim]");
  if (failed(verifyValuesBesideKeys(*this, getQuery(), getOutput(), "the query", "the result")))
    return failure();
  int64_t heads = dimOf(getQuery(), 1), kvHeads = dimOf(getKvPool(), 3);
  if (!ShapedType::isDynamic(heads) && !ShapedType::isDynamic(kvHeads) &&
      (kvHeads == 0 || heads % kvHeads))
    return emitOpError("query heads (") << heads << ") are not a multiple of KV heads ("
                                        << kvHeads << ")";
  if (!compatible(dimOf(getQuery(), -1), cachedHeadDim(getKvPool())))
    return emitOpError("query and cached head sizes differ");
  if (failed(expectRank(*this, getBlockTables(), 2, "block_tables")) ||
      failed(expectRank(*this, getContextLens(), 1, "context_lens")))
    return failure();
  return success();
}

namespace {
/// Checks a scalar body: one argument per value in `scalars` (their element
/// types, in order) and a yield of `result`'s element type.
LogicalResult verifyScalarBody(Operation *op, Region &body, TypeRange scalars, Value result) {
  Block &block = body.front();
  if (block.getNumArguments() != scalars.size())
    return op->emitOpError("body takes ") << block.getNumArguments() << " scalars, not "
                                          << scalars.size();
  for (auto [argument, type] : llvm::zip(block.getArguments(), scalars))
    if (argument.getType() != type)
      return op->emitOpError("body argument ") << argument.getArgNumber() << " is "
                                               << argument.getType() << ", not " << type;
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield) return op->emitOpError("body must end with llm.yield");
  Type element = getElementTypeOrSelf(result.getType());
  if (yield.getValue().getType() != element)
    return op->emitOpError("body yields ") << yield.getValue().getType() << ", not " << element;
  for (Operation &inner : block.without_terminator())
    if (!isPure(&inner) || inner.getNumRegions())
      return op->emitOpError("body holds '") << inner.getName()
                                             << "', which is not a pure scalar op";
  return success();
}

/// Checks that `operand` is per-element (the shape of `result`) or per-column
/// ([columns]); an elementwise op's input may also be rank 0 or one value per
/// row (the result's shape with one column), which its kernels broadcast.
LogicalResult verifyBroadcastOperand(Operation *op, Value operand, Value result,
                                     bool isElementwiseInput, StringRef what) {
  int64_t rank = rankOf(operand), resultRank = rankOf(result);
  if (rank < 0 || resultRank < 0) return success();
  if (rank == 0 && isElementwiseInput) return success();
  if (rank == 1 && compatible(dimOf(operand, 0), dimOf(result, -1))) return success();
  if (rank == resultRank) {
    bool perRow = isElementwiseInput && dimOf(operand, -1) == 1;
    for (int64_t dim = 0; dim < rank; ++dim)
      if (!compatible(dimOf(operand, dim), dimOf(result, dim)) && !(perRow && dim == rank - 1))
        return op->emitOpError() << what << " differs from the result in dim " << dim;
    return success();
  }
  return op->emitOpError() << what << " must have the result's shape or be [columns]"
                           << (isElementwiseInput ? ", one value per row or a scalar" : "");
}

/// The element types of `values`.
SmallVector<Type> elementTypes(ValueRange values) {
  SmallVector<Type> types;
  for (Value value : values) types.push_back(getElementTypeOrSelf(value.getType()));
  return types;
}

/// Checks a fused norm's operands: same-shaped lhs, rhs and sum; a [features]
/// weight; a normed result of the sum's type.
LogicalResult verifyAddNorm(Operation *op, Value lhs, Value rhs, Value weight, Value sum,
                            Value normed) {
  if (lhs.getType() != rhs.getType() || lhs.getType() != sum.getType() ||
      sum.getType() != normed.getType())
    return op->emitOpError("lhs, rhs, sum and normed must have one type");
  return verifyNormWeight(op, weight, lhs);
}
} // namespace

LogicalResult ElementwiseOp::verify() {
  for (Value input : getInputs())
    if (failed(verifyBroadcastOperand(*this, input, getOutput(), /*isElementwiseInput=*/true,
                                      "an input")))
      return failure();
  return verifyScalarBody(*this, getBody(), elementTypes(getInputs()), getOutput());
}

int64_t FusedLinearOp::getProductColumns() {
  return dimOf(getWeight(), getTransposeWeight() ? 0 : 1);
}

LogicalResult FusedLinearOp::verify() {
  if (failed(expectRank(*this, getWeight(), 2, "the weight"))) return failure();
  int64_t in = dimOf(getWeight(), getTransposeWeight() ? 1 : 0), n = getProductColumns();
  if (!compatible(in, dimOf(getInput(), -1)))
    return emitOpError("weight's input dim differs from the input's last dim");
  int64_t columns = dimOf(getOutput(), -1);
  if (!ShapedType::isDynamic(n) && getGated() && n % 2)
    return emitOpError("a gated weight must have an even number of columns, not ") << n;
  if (!ShapedType::isDynamic(n) && !compatible(columns, getGated() ? n / 2 : n))
    return emitOpError("result has ") << columns << " columns; the product has " << n
                                      << (getGated() ? " (gated: twice the result's)" : "");
  if (getBias() &&
      (failed(expectRank(*this, getBias(), 1, "the bias")) ||
       !compatible(dimOf(getBias(), 0), n)))
    return emitOpError("bias must be [") << n << "]";
  for (Value extra : getExtras())
    if (failed(verifyBroadcastOperand(*this, extra, getOutput(), /*isElementwiseInput=*/false,
                                      "an extra")))
      return failure();
  SmallVector<Type> scalars(getNumAccumulators(), getElementTypeOrSelf(getOutput().getType()));
  llvm::append_range(scalars, elementTypes(getExtras()));
  return verifyScalarBody(*this, getEpilogue(), scalars, getOutput());
}

LogicalResult LogitsOp::verify() {
  if (failed(verifyProjection(*this, getInput(), getWeight(), getTransposeWeight(), getBias(),
                              getOutput())))
    return failure();
  if (getEpilogue().empty()) return success();
  Type element = getElementTypeOrSelf(getOutput().getType());
  return verifyScalarBody(*this, getEpilogue(), {element}, getOutput());
}

LogicalResult SplitOp::verify() {
  ArrayRef<int64_t> sizes = getSizes();
  if (sizes.size() != getNumResults())
    return emitOpError("has ") << getNumResults() << " results for " << sizes.size() << " sizes";
  int64_t total = 0;
  for (auto [size, result] : llvm::zip(sizes, getResults())) {
    if (size <= 0) return emitOpError("sizes must be positive");
    if (!compatible(dimOf(result, -1), size))
      return emitOpError("result ") << result.getResultNumber() << " is not " << size << " wide";
    if (rankOf(result) != rankOf(getInput()))
      return emitOpError("results must have the input's rank");
    total += size;
  }
  if (!compatible(dimOf(getInput(), -1), total))
    return emitOpError("sizes add up to ") << total << ", not the input's "
                                           << dimOf(getInput(), -1);
  return success();
}

LogicalResult AddRmsNormOp::verify() {
  return verifyAddNorm(*this, getLhs(), getRhs(), getWeight(), getSum(), getNormed());
}

LogicalResult AddLayerNormOp::verify() {
  return verifyAddNorm(*this, getLhs(), getRhs(), getWeight(), getSum(), getNormed());
}

LogicalResult RopePagedKvWriteOp::verify() {
  if (failed(verifyPool(*this, getKvPool(), getLayer(), getKvGroup()))) return failure();
  if (poolValuesInKeys(getKvPool()))
    return emitOpError("writes values into a pool of one row per token, whose values are its "
                       "keys' first features");
  if (getUpdatedPool().getType() != getKvPool().getType())
    return emitOpError("the updated pool must have the pool's type");
  if (getRotatedQuery().getType() != getQuery().getType())
    return emitOpError("the rotated query must have the query's type");
  for (Value heads : {getQuery(), getKey(), getValue()})
    if (failed(expectRank(*this, heads, 3, "q, k and v"))) return failure();
  if (getKey().getType() != getValue().getType())
    return emitOpError("keys and values differ in type");
  if (!compatible(dimOf(getKey(), 1), dimOf(getKvPool(), 3)) ||
      !compatible(dimOf(getKey(), -1), cachedHeadDim(getKvPool())) ||
      !compatible(dimOf(getQuery(), -1), dimOf(getKey(), -1)))
    return emitOpError("q and k do not fit the pool's kv_heads and head_dim");
  bool frequencies = static_cast<bool>(getInvFreq());
  bool caches = getCosCache() && getSinCache();
  if (frequencies == caches)
    return emitOpError("takes either inv_freq or both cos_cache and sin_cache");
  if (failed(expectRank(*this, getPositions(), 1, "positions")) ||
      failed(expectRank(*this, getSlotMapping(), 1, "slot_mapping")))
    return failure();
  int64_t half = frequencies ? dimOf(getInvFreq(), 0) : dimOf(getCosCache(), 1);
  return verifyRotaryWidth(*this, getQuery(), half);
}

} // namespace llmc::llm
