//===- AbsorbLatentAttention.cpp - attend over MLA's latent, cache it -----===//
//
// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2) compresses a token
// into a latent c (kv_lora_rank features) and one rotary key shared by the
// heads; exports expand c into each head's key and value (kv_b_proj) and
// cache those. Head h's score q_h . [c W_k,h ; k_rope] equals
// [q_h W_k,h^T ; q_rope,h] . [c ; k_rope], and its output sum_t p_t c_t W_v,h
// equals (sum_t p_t c_t) W_v,h, so attention can read the latent and the
// rotary key as one KV head: the cache holds kv_lora_rank + rope features a
// token instead of heads * (key + value) features (DeepSeek-V3: 576 against
// 40,960; the pool pads each value row to the keys' width), while the
// up-projections move to the query and the output.
//
//===----------------------------------------------------------------------===//
#include "passes/Serving/Passes.h"

#include "dialects/llm/BlockQuantized.h"
#include "llmc/Support/MatchFailureListener.h"
#include "llmc/Support/TensorShape.h"

#include "mlir/IR/PatternMatch.h"

#define DEBUG_TYPE "llm-absorb-latent-attention"

namespace llmc {
#define GEN_PASS_DEF_LLMABSORBLATENTATTENTIONPASS
#include "passes/Serving/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// Columns [offset, offset + width) of an llm.linear's output.
struct ProjectedColumns {
  llm::LinearOp linear;
  int64_t offset = 0, width = 0;
};

/// The columns `value` holds: a linear's output, or one part of an
/// llm.split of it.
FailureOr<ProjectedColumns> projectedColumns(Value value) {
  if (auto linear = value.getDefiningOp<llm::LinearOp>())
    return ProjectedColumns{linear, 0, dimOf(value, -1)};
  auto split = value.getDefiningOp<llm::SplitOp>();
  auto linear = split ? split.getInput().getDefiningOp<llm::LinearOp>() : nullptr;
  if (!linear) return failure();
  ArrayRef<int64_t> sizes = split.getSizes();
  unsigned part = cast<OpResult>(value).getResultNumber();
  int64_t offset = 0;
  for (int64_t size : sizes.take_front(part)) offset += size;
  return ProjectedColumns{linear, offset, sizes[part]};
}

/// The llm.head_linear weight of `columns` of a linear from the latent,
/// `heads` runs of `width` columns: [heads, latent, width] (each head's
/// columns as they are: the value's up-projection) or, `transposed`,
/// [heads, width, latent] (the key's up-projection, which the query goes
/// through backwards). Fails unless the weight is an f32 constant or
/// dequantizes constants.
FailureOr<std::vector<float>> upProjections(ProjectedColumns columns, int64_t heads,
                                            int64_t width, bool transposed) {
  std::vector<char> storage;
  auto weight = llm::weightFloats(columns.linear.getWeight(), storage);
  if (!weight) return failure();
  int64_t out = dimOf(columns.linear.getOutput(), -1);
  int64_t latent = int64_t(weight->size()) / out;
  bool outIn = columns.linear.getTransposeWeight();
  std::vector<float> result(heads * width * latent);
  for (int64_t head = 0; head < heads; ++head)
    for (int64_t j = 0; j < latent; ++j)
      for (int64_t i = 0; i < width; ++i) {
        int64_t column = columns.offset + head * width + i;
        float w = outIn ? (*weight)[column * latent + j] : (*weight)[j * out + column];
        int64_t at = transposed ? (head * width + i) * latent + j : (head * latent + j) * width + i;
        result[at] = w;
      }
  return result;
}

/// `type` ([batch, heads, seq, d]) with `heads` heads of `width` features.
RankedTensorType withHeads(Type type, int64_t heads, int64_t width) {
  auto ranked = cast<RankedTensorType>(type);
  SmallVector<int64_t> shape(ranked.getShape());
  shape[1] = heads;
  shape.back() = width;
  return RankedTensorType::get(shape, ranked.getElementType());
}

/// The keys or values of the new tokens `cached` holds, and the cache they
/// join: kv_concat(past input, new), or `cached` itself without a cache.
struct CachedTokens {
  Value current;
  llm::KvConcatOp concat; // null without a cache
};

/// `cached` as CachedTokens when only `attention` and the function's return
/// (the present output) read it.
FailureOr<CachedTokens> cachedTokens(Value cached, llm::AttentionOp attention) {
  auto concat = cached.getDefiningOp<llm::KvConcatOp>();
  if (!concat) return CachedTokens{cached, nullptr};
  if (!isa<BlockArgument>(concat.getPast())) return failure();
  for (Operation *user : concat->getUsers())
    if (user != attention.getOperation() && !isa<func::ReturnOp>(user)) return failure();
  return CachedTokens{concat.getCurrent(), concat};
}

/// attention(concat_heads(q_nope, q_rope), concat_heads(split_heads(c W_k),
/// k_rope), split_heads(c W_v)) over the expanded cache becomes attention of
/// concat_heads(head_linear(q_nope, W_k^T), q_rope) over a cache of one KV
/// head, concat_heads(c, k_rope), with c itself as the values, followed by
/// head_linear(output, W_v). The past inputs and present outputs take the
/// latent's shapes.
struct AttendOverLatent : OpRewritePattern<llm::AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(llm::AttentionOp attention,
                                PatternRewriter &rewriter) const override {
    if (dimOf(attention.getKey(), 1) == 1)
      return rewriter.notifyMatchFailure(attention, "attention reads one KV head already");
    auto query = attention.getQuery().getDefiningOp<llm::ConcatHeadsOp>();
    if (!query)
      return rewriter.notifyMatchFailure(attention, "the query is not a llm.concat_heads");
    auto keys = cachedTokens(attention.getKey(), attention);
    auto values = cachedTokens(attention.getValue(), attention);
    if (failed(keys) || failed(values))
      return rewriter.notifyMatchFailure(
          attention, "the cache is not a past input joined by kv_concat that only attention and "
                     "the present output read");
    if (!keys->concat != !values->concat)
      return rewriter.notifyMatchFailure(attention, "only one of K and V is cached");
    auto key = keys->current.getDefiningOp<llm::ConcatHeadsOp>();
    if (!key) return rewriter.notifyMatchFailure(attention, "the new keys are not concat_heads");
    int64_t heads = dimOf(query.getOutput(), 1);
    if (dimOf(key.getRhs(), 1) != 1 || dimOf(key.getLhs(), 1) != heads)
      return rewriter.notifyMatchFailure(
          attention, "the keys are not each query head's features and one shared rotary head");
    if (dimOf(values->current, 1) != heads)
      return rewriter.notifyMatchFailure(attention, "the values have fewer heads than the query");
    auto keyHeads = key.getLhs().getDefiningOp<llm::SplitHeadsOp>();
    auto valueHeads = values->current.getDefiningOp<llm::SplitHeadsOp>();
    if (!keyHeads || !valueHeads)
      return rewriter.notifyMatchFailure(attention, "the keys' or values' heads are not a view");
    auto keyColumns = projectedColumns(keyHeads.getInput());
    auto valueColumns = projectedColumns(valueHeads.getInput());
    if (failed(keyColumns) || failed(valueColumns))
      return rewriter.notifyMatchFailure(attention,
                                         "the keys or values are not columns of a linear");
    Value latent = keyColumns->linear.getInput();
    if (valueColumns->linear.getInput() != latent)
      return rewriter.notifyMatchFailure(attention, "the keys and values expand different inputs");
    if (keyColumns->linear.getBias() || valueColumns->linear.getBias())
      return rewriter.notifyMatchFailure(attention, "an up-projection has a bias");
    int64_t keyWidth = dimOf(keyHeads.getOutput(), -1);
    int64_t valueWidth = dimOf(valueHeads.getOutput(), -1);
    int64_t rotary = dimOf(key.getRhs(), -1), rank = dimOf(latent, -1);
    if (dimOf(query.getLhs(), -1) != keyWidth || dimOf(query.getRhs(), 1) != heads)
      return rewriter.notifyMatchFailure(
          attention, "the query's features do not pair with the keys' features by head");
    if (rank + rotary >= heads * (keyWidth + rotary + valueWidth))
      return rewriter.notifyMatchFailure(attention, "the latent is no smaller than the heads");
    auto keyUp = upProjections(*keyColumns, heads, keyWidth, /*transposed=*/true);
    auto valueUp = upProjections(*valueColumns, heads, valueWidth, /*transposed=*/false);
    if (failed(keyUp) || failed(valueUp))
      return rewriter.notifyMatchFailure(
          attention, "an up-projection's weight is neither an f32 constant nor dequantized ones");

    Location loc = attention.getLoc();
    rewriter.setInsertionPoint(attention);
    // The latent as one head, [batch, 1, seq, rank]: the values, and with
    // the rotary key the keys, of one KV head.
    auto latentType = withHeads(keyHeads.getOutput().getType(), 1, rank);
    Value latentHead = llm::SplitHeadsOp::create(rewriter, loc, latentType, latent,
                                                 rewriter.getI64IntegerAttr(1));
    Value newKeys = llm::ConcatHeadsOp::create(
        rewriter, loc, withHeads(key.getType(), 1, rank + rotary), latentHead, key.getRhs());
    Value cachedKeys = cache(rewriter, keys->concat, newKeys);
    Value cachedValues = cache(rewriter, values->concat, latentHead);

    Value keyWeight =
        llm::createWeightConstant(rewriter, loc, {heads, keyWidth, rank}, *keyUp, "absorbed");
    Value absorbed = llm::HeadLinearOp::create(
        rewriter, loc, withHeads(query.getLhs().getType(), heads, rank), query.getLhs(), keyWeight);
    Value latentQuery =
        llm::ConcatHeadsOp::create(rewriter, loc, withHeads(query.getType(), heads, rank + rotary),
                                   absorbed, query.getRhs());
    auto latentAttention = cast<llm::AttentionOp>(rewriter.clone(*attention));
    rewriter.modifyOpInPlace(latentAttention, [&] {
      latentAttention.getQueryMutable().assign(latentQuery);
      latentAttention.getKeyMutable().assign(cachedKeys);
      latentAttention.getValueMutable().assign(cachedValues);
      latentAttention.getOutput().setType(withHeads(attention.getType(), heads, rank));
    });
    Value valueWeight =
        llm::createWeightConstant(rewriter, loc, {heads, rank, valueWidth}, *valueUp, "absorbed");
    rewriter.replaceOpWithNewOp<llm::HeadLinearOp>(attention, attention.getType(),
                                                   latentAttention.getOutput(), valueWeight);
    for (llm::KvConcatOp old : {keys->concat, values->concat})
      if (old) rewriter.eraseOp(old);
    return success();
  }

  /// `current` joined to its cache (the past input retyped to its shape),
  /// replacing `old` as the present output; `current` itself without one.
  static Value cache(PatternRewriter &rewriter, llm::KvConcatOp old, Value current) {
    if (!old) return current;
    auto currentType = cast<RankedTensorType>(current.getType());
    auto past = cast<BlockArgument>(old.getPast());
    past.setType(withHeads(past.getType(), 1, currentType.getShape().back()));
    Value present = llm::KvConcatOp::create(
        rewriter, old.getLoc(), withHeads(old.getType(), 1, currentType.getShape().back()), past,
        current);
    rewriter.replaceUsesWithIf(old.getPresent(), present,
                               [](OpOperand &use) { return isa<func::ReturnOp>(use.getOwner()); });
    return present;
  }
};

struct LlmAbsorbLatentAttentionPass
    : impl::LlmAbsorbLatentAttentionPassBase<LlmAbsorbLatentAttentionPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    RewritePatternSet patterns(&getContext());
    patterns.add<AttendOverLatent>(&getContext());
    if (failed(applyPatternsExplained(func, std::move(patterns), DEBUG_TYPE)))
      return signalPassFailure();
    // The past inputs and present outputs of absorbed layers changed shape.
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    func.setType(FunctionType::get(&getContext(), func.getBody().getArgumentTypes(),
                                   ret.getOperandTypes()));
  }
};

} // namespace
} // namespace llmc
