//===- RaiseFusedAttention.cpp - Attention, GroupQueryAttention, MHA ------===//
//
// The fused attention ops of opset 23 and com.microsoft take 3-D [b, s,
// heads*d] or 4-D [b, heads, s, d] inputs and their own KV cache. Each
// becomes the llm ops the decomposed form raises to: split_heads, rope,
// kv_concat, attention, merge_heads.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "llvm/ADT/TypeSwitch.h"

#include <sstream>

using namespace mlir;

namespace llmc::raising {
namespace {

/// The [b, heads, s, d] form of a 3-D [b, s, heads*d] or already 4-D input.
Value toHeads(PatternRewriter &rewriter, Location loc, Value x, int64_t heads) {
  if (rankOf(x) == 4) return x;
  // Keys that were merged from heads only to be handed over (the genai builder's
  // repeat_kv before MultiHeadAttention) are taken as they were.
  if (auto merged = x.getDefiningOp<llm::MergeHeadsOp>())
    if (dimOf(merged.getInput(), 1) == heads) return merged.getInput();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t hidden = type.getDimSize(2);
  auto headsType = RankedTensorType::get(
      {type.getDimSize(0), heads, type.getDimSize(1),
       ShapedType::isDynamic(hidden) ? ShapedType::kDynamic : hidden / heads},
      type.getElementType());
  return llm::SplitHeadsOp::create(rewriter, loc, headsType, x, rewriter.getI64IntegerAttr(heads));
}

/// The type of an attention output in heads layout, from q's heads and v's head size.
Type headsOutputType(Value q, Value v) {
  auto qType = cast<RankedTensorType>(q.getType());
  return RankedTensorType::get({qType.getDimSize(0), qType.getDimSize(1), qType.getDimSize(2),
                                dimOf(v, 3)},
                               qType.getElementType());
}

bool isValidHeadCount(Value x, int64_t heads) {
  int64_t rank = rankOf(x);
  if (rank == 4) return true;
  int64_t hidden = dimOf(x, 2);
  return rank == 3 && heads > 0 && !ShapedType::isDynamic(hidden) && hidden % heads == 0;
}

/// What a fused attention op computes, in llm terms.
struct AttentionParts {
  Value originalQuery;      ///< the query as the op takes it, 3-D or 4-D
  Value q, k, v;            ///< in heads layout, k and v the new tokens only
  Value pastKey, pastValue; ///< none without a cache
  MaskInfo mask;            ///< the raw [batch, total] mask (or none), causal, window
  std::optional<float> scale;
  std::optional<double> softcap = std::nullopt;
  std::vector<float> sinks = {}; ///< a logit per query head, or none
};

/// Replaces a fused attention op, whose results are (output, present_key,
/// present_value, qk output), by kv_concat + attention (+ merge_heads for a
/// 3-D query). Callers have checked that the qk output is unused.
void replaceWithAttention(PatternRewriter &rewriter, Operation *op, const AttentionParts &parts) {
  Location loc = op->getLoc();
  auto appendToCache = [&](Value past, Value current, Type presentType) -> Value {
    if (isNone(past)) return current;
    return llm::KvConcatOp::create(rewriter, loc, presentType, past, current);
  };
  Value keys = appendToCache(parts.pastKey, parts.k, op->getResult(1).getType());
  Value values = appendToCache(parts.pastValue, parts.v, op->getResult(2).getType());
  float factor = parts.scale.value_or(1.0f / std::sqrt(float(dimOf(parts.q, 3))));
  Value out = createAttention(rewriter, loc, headsOutputType(parts.q, values), parts.q, keys,
                              values, parts.mask, factor, parts.softcap, parts.sinks);
  if (rankOf(parts.originalQuery) != 4)
    out = llm::MergeHeadsOp::create(rewriter, loc, op->getResult(0).getType(), out);
  rewriter.replaceOp(op, {out, keys, values, out});
}

/// com.microsoft ops write scale 0 for "1/sqrt(head_size)".
std::optional<float> nonZeroScale(APFloat scale) {
  if (scale.isZero()) return std::nullopt;
  return scale.convertToFloat();
}

std::string softcapping(float softcap) {
  std::ostringstream text;
  text << "attention logit softcapping (softcap " << softcap << ")";
  return text.str();
}

/// The model features a fused attention op asks for that llmc does not
/// compute, by name, in the words the compile error uses.
std::optional<std::string> featureOf(onnx::AttentionOp op) {
  if (float softcap = op.getSoftcap().convertToFloat(); softcap != 0.0f)
    return softcapping(softcap);
  if (op.getLeftWindowSize() != -1 || op.getRightWindowSize() != -1)
    return std::string("sliding-window attention");
  if (!isNone(op.getNonpadKvSeqlen())) return std::string("nonpad_kv_seqlen");
  if (!op.getQkMatmulOutput().use_empty()) return std::string("the attention scores as an output");
  return std::nullopt;
}
std::optional<std::string> featureOf(onnx::GroupQueryAttentionOp op) {
  if (int64_t window = op.getLocalWindowSize(); window == 0 || window < -1)
    return "a local window of " + std::to_string(window) + " tokens";
  if (op.getSoftcap().isNegative()) return softcapping(op.getSoftcap().convertToFloat());
  Value headSink = op.getHeadSink();
  if (!isNone(headSink) && (rankOf(headSink) != 1 || dimOf(headSink, 0) != op.getNumHeads() ||
                            !readConstantFloats(skipCasts(headSink))))
    return std::string("a head_sink (attention sinks) that is not a constant f32 per query head");
  if (!isNone(op.getAttentionBias())) return std::string("an additive attention bias");
  if (!op.getOutputQk().use_empty()) return std::string("the attention scores as an output");
  return std::nullopt;
}
std::optional<std::string> featureOf(onnx::MultiHeadAttentionOp op) {
  if (!isNone(op.getBias())) return std::string("a packed Q/K/V bias");
  if (!isNone(op.getPastSequenceLength()) || !isNone(op.getCacheIndirection()))
    return std::string("a shared KV buffer (past_sequence_length, cache_indirection)");
  if (!op.getQk().use_empty()) return std::string("the attention scores as an output");
  return std::nullopt;
}

/// Opset 23/24 Attention.
struct RaiseAttentionOp : OpRewritePattern<onnx::AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::AttentionOp op, PatternRewriter &rewriter) const override {
    if (auto feature = featureOf(op))
      return rewriter.notifyMatchFailure(op, "uses " + *feature);
    int64_t qHeads = op.getQNumHeads().value_or(0), kvHeads = op.getKvNumHeads().value_or(0);
    if (!isValidHeadCount(op.getQ(), qHeads) || !isValidHeadCount(op.getK(), kvHeads) ||
        !isValidHeadCount(op.getV(), kvHeads))
      return rewriter.notifyMatchFailure(op, "3-D inputs without valid head counts");
    MaskInfo mask;
    if (!isNone(op.getAttnMask())) {
      std::string why;
      FailureOr<MaskInfo> proven = provenMask(op, why);
      if (failed(proven)) return rewriter.notifyMatchFailure(op, "attn_mask: " + why);
      mask = *proven;
    }
    Location loc = op.getLoc();
    Value q = toHeads(rewriter, loc, op.getQ(), qHeads);
    Value k = toHeads(rewriter, loc, op.getK(), kvHeads);
    Value v = toHeads(rewriter, loc, op.getV(), kvHeads);
    std::optional<float> scale;
    if (auto attr = op.getScale()) scale = attr->convertToFloat();
    mask.causal = mask.causal || op.getIsCausal();
    replaceWithAttention(rewriter, op,
                         {op.getQ(), q, k, v, op.getPastKey(), op.getPastValue(), mask, scale});
    return success();
  }
};

/// com.microsoft GroupQueryAttention, with its optional rotary embedding.
struct RaiseGroupQueryAttention : OpRewritePattern<onnx::GroupQueryAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::GroupQueryAttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (auto feature = featureOf(op))
      return rewriter.notifyMatchFailure(op, "uses " + *feature);
    int64_t heads = op.getNumHeads(), kvHeads = op.getKvNumHeads();
    Value query = op.getQuery(), key = op.getKey(), value = op.getValue();
    bool packed = isNone(key) && isNone(value);
    if (packed != (isNone(key) || isNone(value)))
      return rewriter.notifyMatchFailure(op, "only one of key and value is given");
    if (!isValidHeadCount(query, packed ? heads + 2 * kvHeads : heads) ||
        (!packed && !isValidHeadCount(key, kvHeads)) || rankOf(query) != 3)
      return rewriter.notifyMatchFailure(op, "inputs are not 3-D multiples of the head counts");
    // The padding mask is the attention_mask that seqlens_k is computed from.
    BlockArgument attentionMask = findArgumentInSlice(op.getSeqlensK(), "attention_mask");
    if (!attentionMask)
      return rewriter.notifyMatchFailure(op, "seqlens_k is not derived from attention_mask");

    Location loc = op.getLoc();
    if (packed) {
      auto type = cast<RankedTensorType>(query.getType());
      int64_t head = type.getDimSize(2) / (heads + 2 * kvHeads);
      auto part = [&](int64_t n) {
        return RankedTensorType::get({type.getDimSize(0), type.getDimSize(1), n * head},
                                     type.getElementType());
      };
      auto split = llm::SplitQkvOp::create(rewriter, loc, part(heads), part(kvHeads),
                                           part(kvHeads), query,
                                           rewriter.getI64IntegerAttr(heads),
                                           rewriter.getI64IntegerAttr(kvHeads));
      query = split.getQuery(), key = split.getKey(), value = split.getValue();
    }
    Value q = toHeads(rewriter, loc, query, heads);
    Value k = toHeads(rewriter, loc, key, kvHeads);
    Value v = toHeads(rewriter, loc, value, kvHeads);
    if (op.getDoRotary()) {
      if (isNone(op.getCosCache()) || isNone(op.getSinCache()))
        return rewriter.notifyMatchFailure(op, "do_rotary without cos/sin caches");
      Value positions = op.getPositionIds();
      if (isNone(positions)) {
        // GQA derives positions from the mask: past length + index.
        auto type = RankedTensorType::get({dimOf(op.getQuery(), 0), dimOf(op.getQuery(), 1)},
                                          rewriter.getI64Type());
        positions = llm::PositionIdsOp::create(rewriter, loc, type, attentionMask, op.getQuery());
      }
      q = createRopeForHeads(rewriter, loc, q, positions, op.getCosCache(), op.getSinCache(),
                             op.getRotaryInterleaved());
      k = createRopeForHeads(rewriter, loc, k, positions, op.getCosCache(), op.getSinCache(),
                             op.getRotaryInterleaved());
    }
    MaskInfo mask;
    mask.attentionMask = attentionMask;
    mask.causal = true;
    // local_window_size L lets the query at position p see the L keys p - L + 1
    // .. p (onnxruntime 1.31; earlier releases saw L + 1). The paged cache holds
    // every key, so a sliding_window_cache (the past kept as a ring of the last
    // L keys) changes only storage.
    if (int64_t window = op.getLocalWindowSize(); window > 0) mask.slidingWindow = window;
    std::optional<double> softcap;
    if (!op.getSoftcap().isZero()) softcap = op.getSoftcap().convertToDouble();
    // Attention sinks: head_sink's logit per head, or with smooth_softmax
    // alone a logit of 0 (one more e^0 in every softmax's sum).
    std::vector<float> sinks;
    if (!isNone(op.getHeadSink()))
      sinks = *readConstantFloats(skipCasts(op.getHeadSink()));
    else if (op.getSmoothSoftmax())
      sinks.assign(heads, 0.0f);
    replaceWithAttention(rewriter, op,
                         {query, q, k, v, op.getPastKey(), op.getPastValue(), mask,
                          nonZeroScale(op.getScale()), softcap, std::move(sinks)});
    return success();
  }
};

/// com.microsoft MultiHeadAttention with separate Q, K, V. Its mask is a
/// key_padding_mask, unidirectional, or an attention_bias proven on probes (the
/// genai builder's fp16 CPU export, whose keys and values already hold the past).
struct RaiseMultiHeadAttention : OpRewritePattern<onnx::MultiHeadAttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::MultiHeadAttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (auto feature = featureOf(op))
      return rewriter.notifyMatchFailure(op, "uses " + *feature);
    if (isNone(op.getKey()) || isNone(op.getValue()) || rankOf(op.getQuery()) != 3 ||
        rankOf(op.getKey()) != 3)
      return rewriter.notifyMatchFailure(op, "not separate 3-D query, key and value");
    int64_t heads = op.getNumHeads();
    if (!isValidHeadCount(op.getQuery(), heads) || !isValidHeadCount(op.getKey(), heads))
      return rewriter.notifyMatchFailure(op, "hidden size is not a multiple of num_heads");
    MaskInfo mask;
    mask.attentionMask = optionalOperand(op.getKeyPaddingMask());
    if (mask.attentionMask && rankOf(mask.attentionMask) != 2)
      return rewriter.notifyMatchFailure(op, "key_padding_mask is not [batch, total]");
    if (!isNone(op.getAttentionBias())) {
      std::string why;
      FailureOr<MaskInfo> proven = provenMask(op, why);
      if (failed(proven)) return rewriter.notifyMatchFailure(op, "attention_bias: " + why);
      if (mask.attentionMask && proven->attentionMask)
        return rewriter.notifyMatchFailure(op, "both key_padding_mask and a padding bias");
      Value keyPadding = mask.attentionMask;
      mask = *proven;
      if (keyPadding) mask.attentionMask = keyPadding;
    }
    mask.causal = mask.causal || op.getUnidirectional() != 0;
    Location loc = op.getLoc();
    Value q = toHeads(rewriter, loc, op.getQuery(), heads);
    Value k = toHeads(rewriter, loc, op.getKey(), heads);
    Value v = toHeads(rewriter, loc, op.getValue(), heads);
    replaceWithAttention(rewriter, op,
                         {op.getQuery(), q, k, v, op.getPastKey(), op.getPastValue(), mask,
                          nonZeroScale(op.getScale())});
    return success();
  }
};

} // namespace

std::optional<std::string> unsupportedAttentionFeature(Operation *op) {
  return TypeSwitch<Operation *, std::optional<std::string>>(op)
      .Case<onnx::AttentionOp, onnx::GroupQueryAttentionOp, onnx::MultiHeadAttentionOp>(
          [](auto attention) { return featureOf(attention); })
      .Default([](Operation *) { return std::nullopt; });
}

void populateFusedAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseAttentionOp, RaiseGroupQueryAttention, RaiseMultiHeadAttention>(
      patterns.getContext());
}

} // namespace llmc::raising
