//===- OnnxToLinalgAttention.cpp - Attention and RotaryEmbedding to linalg ===//
//
// Attention (opsets 23-25) becomes a handful of linalg.generics over the
// [batch, q_heads, q_seq, kv_seq] scores: QK^T as a contraction, one
// index-driven generic for the additive bias (mask, causal, sliding window,
// KV padding), softmax as max/exp/sum/divide, and P*V as a second
// contraction. The steps follow onnx/reference/ops/op_attention.py one by
// one in the input's element type, with f32 accumulators where numpy uses
// them (f16/bf16 matmuls, f16 sums), so that f16/bf16 rounding matches it.
//
// RotaryEmbedding is one generic that reads each element's rotation partner
// and its cos/sin entries with tensor.extract.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxToLinalg/OnnxToLinalg.h"

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;

namespace llmc::onnx_to_linalg {
namespace {

using utils::IteratorType;

//===----------------------------------------------------------------------===//
// Shared builders
//===----------------------------------------------------------------------===//

/// The type numpy accumulates a matmul of `type` in: f32 for f16/bf16.
Type matmulAccumulatorType(Type type) {
  return type.getIntOrFloatBitWidth() < 32 ? Float32Type::get(type.getContext()) : type;
}

/// The type numpy accumulates a sum of `type` in: f32 for f16 (its pairwise
/// sum); bf16 (ml_dtypes) and wider types add in their own type.
Type sumAccumulatorType(Type type) {
  return type.isF16() ? Float32Type::get(type.getContext()) : type;
}

/// The current iteration index of loop `dim` in a linalg.generic body.
Value linalgIndex(OpBuilder &b, Location loc, int64_t dim) {
  return linalg::IndexOp::create(b, loc, dim).getResult();
}

/// A linalg.generic writing into `init`, with one indexing map per input and
/// a last one for the output; `body` gets the input elements and the
/// output's current element.
Value buildGeneric(OpBuilder &b, Location loc, Value init, ValueRange inputs,
                   ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators,
                   function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), inputs, init, maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc, body(nested, nestedLoc, args));
      });
  return generic.getResult(0);
}

/// Elementwise conversion of a float tensor to another float element type.
Value convertElements(OpBuilder &b, Location loc, Value value, Type to) {
  return castElements(b, loc, value, cast<RankedTensorType>(value.getType()).getElementType(), to);
}

/// The sum of lhs * rhs over the last of five loops (the first four are the
/// result's dims), as numpy's matmul computes it: the products and the sum
/// in the accumulator type, rounded to `elementType` once at the end.
Value buildContraction(OpBuilder &b, Location loc, Value lhs, Value rhs, ArrayRef<AffineMap> maps,
                       ArrayRef<int64_t> resultShape, Type elementType) {
  Type accumulator = matmulAccumulatorType(elementType);
  auto sumType = RankedTensorType::get(resultShape, accumulator);
  SmallVector<IteratorType> iterators(4, IteratorType::parallel);
  iterators.push_back(IteratorType::reduction);
  Value sum = buildGeneric(
      b, loc, filledTensor(b, loc, sumType, scalarConstant(b, loc, accumulator, 0)), {lhs, rhs},
      maps, iterators, [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
        Value lhsElement = castScalar(nb, nl, args[0], elementType, accumulator);
        Value rhsElement = castScalar(nb, nl, args[1], elementType, accumulator);
        Value product = arith::MulFOp::create(nb, nl, lhsElement, rhsElement);
        return arith::AddFOp::create(nb, nl, args[2], product);
      });
  return convertElements(b, loc, sum, elementType);
}

/// A reduction over the last dim that keeps it with size 1, so that the
/// result broadcasts against its input in buildElementwise.
Value reduceLastDim(OpBuilder &b, Location loc, Value input, Value init,
                    function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  auto type = cast<RankedTensorType>(input.getType());
  Value reduced = buildReduction(b, loc, input, {type.getRank() - 1}, init, combine);
  SmallVector<int64_t> keptShape(type.getShape());
  keptShape.back() = 1;
  return reshapeTo(b, loc, reduced, keptShape);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

/// [batch, seq, heads * size] -> [batch, heads, seq, size].
Value splitHeads(OpBuilder &b, Location loc, Value value, int64_t heads) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t batch = type.getDimSize(0), length = type.getDimSize(1);
  int64_t size = type.getDimSize(2) / heads;
  Value grouped = reshapeTo(b, loc, value, {batch, length, heads, size});
  Value init = emptyTensor(b, loc, type.clone({batch, heads, length, size}));
  return linalg::TransposeOp::create(b, loc, grouped, init, ArrayRef<int64_t>{0, 2, 1, 3})
      .getResult()[0];
}

/// [batch, heads, seq, size] -> [batch, seq, heads * size].
Value mergeHeads(OpBuilder &b, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  int64_t batch = type.getDimSize(0), heads = type.getDimSize(1);
  int64_t length = type.getDimSize(2), size = type.getDimSize(3);
  Value init = emptyTensor(b, loc, type.clone({batch, length, heads, size}));
  Value transposed =
      linalg::TransposeOp::create(b, loc, value, init, ArrayRef<int64_t>{0, 2, 1, 3})
          .getResult()[0];
  return reshapeTo(b, loc, transposed, {batch, length, heads * size});
}

/// `past` followed by `current` along the sequence dim of [batch, heads,
/// seq, size] tensors: the present KV cache. One generic reads either input
/// (tensor.insert_slice into a strided window would bufferize to a
/// memref.copy that needs the MLIR runtime's memrefCopy).
Value concatSequence(OpBuilder &b, Location loc, Value past, Value current) {
  auto currentType = cast<RankedTensorType>(current.getType());
  int64_t pastLength = cast<RankedTensorType>(past.getType()).getDimSize(2);
  SmallVector<int64_t> shape(currentType.getShape());
  shape[2] += pastLength;
  return buildElementwise(
      b, loc, currentType.clone(shape), {}, [&](OpBuilder &nb, Location nl, ValueRange) -> Value {
        SmallVector<Value> at;
        for (int64_t dim = 0; dim < 4; ++dim) at.push_back(linalgIndex(nb, nl, dim));
        Value pastEnd = scalarConstant(nb, nl, nb.getIndexType(), double(pastLength));
        Value inPast = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, at[2], pastEnd);
        auto ifOp = scf::IfOp::create(
            nb, nl, inPast,
            [&](OpBuilder &tb, Location tl) {
              Value element = tensor::ExtractOp::create(tb, tl, past, at);
              scf::YieldOp::create(tb, tl, element);
            },
            [&](OpBuilder &eb, Location el) {
              SmallVector<Value> currentAt(at);
              currentAt[2] = arith::SubIOp::create(eb, el, at[2], pastEnd);
              Value element = tensor::ExtractOp::create(eb, el, current, currentAt);
              scf::YieldOp::create(eb, el, element);
            });
        return ifOp.getResult(0);
      });
}

/// The parts of an Attention's additive bias, which is -inf where a query
/// may not attend a key and 0 (or the float mask's value) elsewhere.
struct BiasSources {
  Value mask;     // attn_mask, bool (false: masked out) or float (added); or null
  Type maskType;  // its onnx element type
  bool causal;
  int64_t leftWindow, rightWindow; // sliding-window bounds, -1 when unbounded
  int64_t pastLength;
  Value validKeys; // nonpad_kv_seqlen, [batch]; or null
};

/// attn_mask's bias at the current (batch, head, query, `key`) of a generic
/// over [batch, q_heads, q_seq, kv_seq]. The mask broadcasts numpy-style,
/// except that a last dim shorter than kv_seq is padded with masked-out keys.
Value maskBias(OpBuilder &b, Location loc, const BiasSources &sources, Value key,
               Type elementType, int64_t kvLength) {
  auto maskType = cast<RankedTensorType>(sources.mask.getType());
  int64_t rank = maskType.getRank(), maskLength = maskType.getShape().back();
  bool padded = maskLength < kvLength;
  auto index = [&](int64_t value) {
    return scalarConstant(b, loc, b.getIndexType(), double(value));
  };
  SmallVector<Value> indices;
  for (int64_t dim = 0; dim < rank - 1; ++dim)
    indices.push_back(maskType.getDimSize(dim) == 1 ? index(0)
                                                    : linalgIndex(b, loc, 4 - rank + dim));
  // A padding key reads the mask's last key, and is masked out below.
  indices.push_back(
      padded ? Value(arith::MinSIOp::create(b, loc, key, index(maskLength - 1))) : key);
  Value element = tensor::ExtractOp::create(b, loc, sources.mask, indices);
  Value zero = scalarConstant(b, loc, elementType, 0);
  Value masked = scalarConstant(b, loc, elementType, -INFINITY);
  Value bias = isBool(sources.maskType)
                   ? arith::SelectOp::create(b, loc, element, zero, masked).getResult()
                   : castScalar(b, loc, element, sources.maskType, elementType);
  if (!padded) return bias;
  Value inMask = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, key, index(maskLength));
  return arith::SelectOp::create(b, loc, inMask, bias, masked);
}

/// The additive bias, [batch, q_heads, q_seq, kv_seq], summed in the
/// reference's order: mask, causal, sliding window, KV padding. Causal and
/// window positions are aligned bottom-right: query i sits at key position
/// i + past_length, or i + nonpad_kv_seqlen[b] - q_seq with nonpad_kv_seqlen.
Value buildBias(OpBuilder &b, Location loc, RankedTensorType biasType,
                const BiasSources &sources) {
  Type elementType = biasType.getElementType();
  int64_t qLength = biasType.getDimSize(2), kvLength = biasType.getDimSize(3);
  bool window = sources.leftWindow >= 0 || sources.rightWindow >= 0;
  if (!sources.mask && !sources.causal && !window && !sources.validKeys)
    return filledTensor(b, loc, biasType, scalarConstant(b, loc, elementType, 0));
  return buildElementwise(b, loc, biasType, {}, [&](OpBuilder &nb, Location nl, ValueRange) {
    Type indexType = nb.getIndexType();
    Value query = linalgIndex(nb, nl, 2), key = linalgIndex(nb, nl, 3);
    Value zero = scalarConstant(nb, nl, elementType, 0);
    Value masked = scalarConstant(nb, nl, elementType, -INFINITY);
    // Adds 0 where allowed and -inf elsewhere: adding rather than selecting
    // keeps a NaN or +inf of the mask as the reference has it.
    auto restrict = [&](Value bias, Value allowed) -> Value {
      return arith::AddFOp::create(nb, nl, bias,
                                   arith::SelectOp::create(nb, nl, allowed, zero, masked));
    };
    auto compare = [&](arith::CmpIPredicate predicate, Value lhs, Value rhs) -> Value {
      return arith::CmpIOp::create(nb, nl, predicate, lhs, rhs);
    };

    Value bias = sources.mask ? maskBias(nb, nl, sources, key, elementType, kvLength) : zero;
    Value validKeys;
    if (sources.validKeys) {
      Value length =
          tensor::ExtractOp::create(nb, nl, sources.validKeys, linalgIndex(nb, nl, 0));
      validKeys = arith::IndexCastOp::create(nb, nl, indexType, length);
    }
    if (sources.causal || window) {
      Value offset = validKeys
                         ? arith::SubIOp::create(nb, nl, validKeys,
                                                 scalarConstant(nb, nl, indexType, double(qLength)))
                               .getResult()
                         : scalarConstant(nb, nl, indexType, double(sources.pastLength));
      Value position = arith::AddIOp::create(nb, nl, query, offset);
      if (sources.causal) bias = restrict(bias, compare(arith::CmpIPredicate::sle, key, position));
      if (window) {
        // Keys from position - left to position + right.
        Value allowed = scalarConstant(nb, nl, nb.getI1Type(), 1);
        if (sources.leftWindow >= 0) {
          Value first = arith::SubIOp::create(
              nb, nl, position, scalarConstant(nb, nl, indexType, double(sources.leftWindow)));
          allowed = arith::AndIOp::create(nb, nl, allowed,
                                          compare(arith::CmpIPredicate::sge, key, first));
        }
        if (sources.rightWindow >= 0) {
          Value last = arith::AddIOp::create(
              nb, nl, position, scalarConstant(nb, nl, indexType, double(sources.rightWindow)));
          allowed = arith::AndIOp::create(nb, nl, allowed,
                                          compare(arith::CmpIPredicate::sle, key, last));
        }
        bias = restrict(bias, allowed);
      }
    }
    if (validKeys) bias = restrict(bias, compare(arith::CmpIPredicate::slt, key, validKeys));
    return bias;
  });
}

/// Softmax over the last dim of `logits` in its own element type, as the
/// reference computes it: a row whose max is -inf softmaxes to zeros instead
/// of NaN, and a row whose `bias` is all -inf (no key may be attended) is
/// zeroed whatever its logits.
Value buildMaskedSoftmax(OpBuilder &b, Location loc, Value logits, Value bias) {
  auto type = cast<RankedTensorType>(logits.getType());
  Type elementType = type.getElementType(), biasElementType = getElementTypeOrSelf(bias);
  auto maximum = [](OpBuilder &nb, Location nl, Value element, Value acc) -> Value {
    return arith::MaximumFOp::create(nb, nl, element, acc);
  };
  Value rowMax = reduceLastDim(b, loc, logits, scalarConstant(b, loc, elementType, -INFINITY),
                               maximum);
  Value exps = buildElementwise(
      b, loc, type, {logits, rowMax}, [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
        Value zero = scalarConstant(nb, nl, elementType, 0);
        Value noKey = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ, args[1],
                                            scalarConstant(nb, nl, elementType, -INFINITY));
        Value shift = arith::SelectOp::create(nb, nl, noKey, zero, args[1]);
        return math::ExpOp::create(nb, nl, arith::SubFOp::create(nb, nl, args[0], shift));
      });
  Type sumType = sumAccumulatorType(elementType);
  Value rowSum = reduceLastDim(
      b, loc, exps, scalarConstant(b, loc, sumType, 0),
      [&](OpBuilder &nb, Location nl, Value element, Value acc) -> Value {
        return arith::AddFOp::create(nb, nl, castScalar(nb, nl, element, elementType, sumType),
                                     acc);
      });
  rowSum = convertElements(b, loc, rowSum, elementType);
  Value biasRowMax = reduceLastDim(
      b, loc, bias, scalarConstant(b, loc, biasElementType, -INFINITY), maximum);
  return buildElementwise(
      b, loc, type, {exps, rowSum, biasRowMax},
      [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
        Value zero = scalarConstant(nb, nl, elementType, 0);
        Value emptySum = arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ, args[1], zero);
        Value sum = arith::SelectOp::create(nb, nl, emptySum,
                                            scalarConstant(nb, nl, elementType, 1), args[1]);
        Value probability = arith::DivFOp::create(nb, nl, args[0], sum);
        Value allMasked =
            arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::OEQ, args[2],
                                  scalarConstant(nb, nl, biasElementType, -INFINITY));
        return arith::SelectOp::create(nb, nl, allMasked, zero, probability);
      });
}

/// The float type an ONNX TensorProto data type names (softmax_precision).
std::optional<Type> floatTypeOf(MLIRContext *context, int64_t dataType) {
  switch (dataType) {
  case 1: return Float32Type::get(context);
  case 10: return Float16Type::get(context);
  case 11: return Float64Type::get(context);
  case 16: return BFloat16Type::get(context);
  default: return std::nullopt;
  }
}

struct LowerAttention : OpConversionPattern<onnx::AttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::AttentionOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    SmallVector<RankedTensorType> resultTypes;
    for (Value result : op->getResults()) {
      auto type = staticResultType(rewriter, *getTypeConverter(), op, result);
      if (failed(type)) return failure();
      resultTypes.push_back(*type);
    }
    MLIRContext *context = op.getContext();
    Type elementType = resultTypes[0].getElementType();
    if (!isa<FloatType>(elementType)) return rewriter.notifyMatchFailure(op, "Q is not float");

    // The shapes in the [batch, heads, seq, head_size] layout.
    auto qType = cast<RankedTensorType>(adaptor.getQ().getType());
    auto kType = cast<RankedTensorType>(adaptor.getK().getType());
    auto vType = cast<RankedTensorType>(adaptor.getV().getType());
    int64_t rank = qType.getRank();
    if (rank != 3 && rank != 4) return rewriter.notifyMatchFailure(op, "Q is neither 3-D nor 4-D");
    if (kType.getRank() != rank || vType.getRank() != rank)
      return rewriter.notifyMatchFailure(op, "Q, K and V have different ranks");
    int64_t qHeads = qType.getDimSize(1), kvHeads = kType.getDimSize(1);
    if (rank == 3) {
      std::optional<int64_t> qHeadsAttr = op.getQNumHeads(), kvHeadsAttr = op.getKvNumHeads();
      if (!qHeadsAttr || !kvHeadsAttr || *qHeadsAttr <= 0 || *kvHeadsAttr <= 0)
        return rewriter.notifyMatchFailure(op, "3-D inputs need q_num_heads and kv_num_heads");
      qHeads = *qHeadsAttr;
      kvHeads = *kvHeadsAttr;
      if (qType.getDimSize(2) % qHeads != 0 || kType.getDimSize(2) % kvHeads != 0 ||
          vType.getDimSize(2) % kvHeads != 0)
        return rewriter.notifyMatchFailure(op, "a hidden size is not a multiple of its heads");
    }
    auto headsLayout = [&](RankedTensorType type, int64_t heads) -> SmallVector<int64_t> {
      if (rank == 4) return SmallVector<int64_t>(type.getShape());
      return {type.getDimSize(0), heads, type.getDimSize(1), type.getDimSize(2) / heads};
    };
    SmallVector<int64_t> qShape = headsLayout(qType, qHeads);
    SmallVector<int64_t> kShape = headsLayout(kType, kvHeads);
    SmallVector<int64_t> vShape = headsLayout(vType, kvHeads);
    int64_t batch = qShape[0], qLength = qShape[2], headSize = qShape[3], valueSize = vShape[3];
    if (kShape[0] != batch || vShape[0] != batch || vShape[1] != kvHeads ||
        vShape[2] != kShape[2] || kShape[3] != headSize)
      return rewriter.notifyMatchFailure(op, "Q, K and V do not fit together");
    if (qHeads % kvHeads != 0)
      return rewriter.notifyMatchFailure(op, "the query heads are not groups of the KV heads");

    bool hasPastKey = !isa<NoneType>(op.getPastKey().getType());
    bool hasPastValue = !isa<NoneType>(op.getPastValue().getType());
    bool hasValidKeys = !isa<NoneType>(op.getNonpadKvSeqlen().getType());
    if (hasPastKey != hasPastValue)
      return rewriter.notifyMatchFailure(op, "past_key and past_value are not given together");
    if (hasPastKey && hasValidKeys)
      return rewriter.notifyMatchFailure(op, "nonpad_kv_seqlen is given with a past cache");
    int64_t pastLength = 0;
    if (hasPastKey) {
      ArrayRef<int64_t> pastKeyShape =
          cast<RankedTensorType>(adaptor.getPastKey().getType()).getShape();
      ArrayRef<int64_t> pastValueShape =
          cast<RankedTensorType>(adaptor.getPastValue().getType()).getShape();
      pastLength = pastKeyShape.size() == 4 ? pastKeyShape[2] : 0;
      if (pastKeyShape != ArrayRef<int64_t>{batch, kvHeads, pastLength, headSize} ||
          pastValueShape != ArrayRef<int64_t>{batch, kvHeads, pastLength, valueSize})
        return rewriter.notifyMatchFailure(op, "past_key/past_value do not fit K and V");
    }
    int64_t kvLength = pastLength + kShape[2];
    auto scoresType = RankedTensorType::get({batch, qHeads, qLength, kvLength}, elementType);
    if (resultTypes[1].getShape() != ArrayRef<int64_t>{batch, kvHeads, kvLength, headSize} ||
        resultTypes[2].getShape() != ArrayRef<int64_t>{batch, kvHeads, kvLength, valueSize} ||
        resultTypes[3] != scoresType)
      return rewriter.notifyMatchFailure(op, "the result types do not fit the inputs");
    int64_t qkOutputMode = op.getQkMatmulOutputMode();
    if (qkOutputMode < 0 || qkOutputMode > 3)
      return rewriter.notifyMatchFailure(op, "qk_matmul_output_mode is not 0 to 3");

    BiasSources sources{};
    sources.causal = op.getIsCausal() != 0;
    sources.leftWindow = op.getLeftWindowSize();
    sources.rightWindow = op.getRightWindowSize();
    sources.pastLength = pastLength;
    if (hasValidKeys) sources.validKeys = adaptor.getNonpadKvSeqlen();
    if (!isa<NoneType>(op.getAttnMask().getType())) {
      sources.mask = adaptor.getAttnMask();
      sources.maskType = getElementTypeOrSelf(op.getAttnMask().getType());
      auto maskType = cast<RankedTensorType>(sources.mask.getType());
      int64_t maskRank = maskType.getRank();
      bool broadcasts = maskRank <= 4 && maskType.getShape().back() <= kvLength;
      for (int64_t dim = 0; broadcasts && dim < maskRank - 1; ++dim) {
        int64_t size = maskType.getDimSize(dim);
        broadcasts = size == 1 || size == scoresType.getDimSize(4 - maskRank + dim);
      }
      if (!broadcasts)
        return rewriter.notifyMatchFailure(op, "attn_mask does not broadcast to the scores");
    }

    Type softmaxType = elementType;
    if (int64_t precision = op.getSoftmaxPrecision()) {
      std::optional<Type> type = floatTypeOf(context, precision);
      if (!type) return rewriter.notifyMatchFailure(op, "softmax_precision is not a float type");
      softmaxType = *type;
    }

    Location loc = op.getLoc();
    Value query = adaptor.getQ(), key = adaptor.getK(), value = adaptor.getV();
    if (rank == 3) {
      query = splitHeads(rewriter, loc, query, qHeads);
      key = splitHeads(rewriter, loc, key, kvHeads);
      value = splitHeads(rewriter, loc, value, kvHeads);
    }
    if (hasPastKey) {
      key = concatSequence(rewriter, loc, adaptor.getPastKey(), key);
      value = concatSequence(rewriter, loc, adaptor.getPastValue(), value);
    }

    // Q and K are each scaled by sqrt(scale), rounded to the element type.
    double scale = op.getScale() ? op.getScale()->convertToDouble()
                                 : 1.0 / std::sqrt(double(headSize));
    Value scaleRoot = scalarConstant(rewriter, loc, elementType, std::sqrt(scale));
    auto scaled = [&](Value input) {
      return buildElementwise(rewriter, loc, cast<RankedTensorType>(input.getType()), input,
                              [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                                return arith::MulFOp::create(nb, nl, args[0], scaleRoot);
                              });
    };

    // Both contractions run over five loops (b, h, i, x, r), r the reduced
    // one: for QK^T x is the key and r the channel, for P * V x is the value
    // channel and r the key. Query head h reads KV head h / groups.
    AffineExpr b, h, i, x, r;
    bindDims(context, b, h, i, x, r);
    AffineExpr kvHead = h.floorDiv(qHeads / kvHeads);
    auto map = [&](ArrayRef<AffineExpr> exprs) { return AffineMap::get(5, 0, exprs, context); };
    Value scaledQuery = scaled(query), scaledKey = scaled(key);
    Value scores = buildContraction(rewriter, loc, scaledQuery, scaledKey,
                                    {map({b, h, i, r}), map({b, kvHead, x, r}), map({b, h, i, x})},
                                    scoresType.getShape(), elementType);

    double softcap = op.getSoftcap().convertToDouble();
    if (softcap > 0) {
      Value cap = scalarConstant(rewriter, loc, elementType, softcap);
      scores = buildElementwise(rewriter, loc, scoresType, scores,
                                [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                                  Value scaledDown = arith::DivFOp::create(nb, nl, args[0], cap);
                                  Value tanh = math::TanhOp::create(nb, nl, scaledDown);
                                  return arith::MulFOp::create(nb, nl, tanh, cap);
                                });
    }

    Value bias = buildBias(rewriter, loc, scoresType, sources);
    Value biased = buildElementwise(rewriter, loc, scoresType, {scores, bias},
                                    [](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                                      return arith::AddFOp::create(nb, nl, args[0], args[1]);
                                    });
    Value softmax = buildMaskedSoftmax(rewriter, loc,
                                       convertElements(rewriter, loc, biased, softmaxType), bias);
    Value probabilities = convertElements(rewriter, loc, softmax, elementType);

    Value output = buildContraction(rewriter, loc, probabilities, value,
                                    {map({b, h, i, r}), map({b, kvHead, r, x}), map({b, h, i, x})},
                                    {batch, qHeads, qLength, valueSize}, elementType);
    if (rank == 3) output = mergeHeads(rewriter, loc, output);

    // The reference's order of the steps decides what each mode returns:
    // 0 and 1 the (softcapped) scores, 2 those plus the bias, 3 the softmax.
    Value qkOutput = qkOutputMode == 2 ? biased : qkOutputMode == 3 ? probabilities : scores;
    rewriter.replaceOp(op, {output, key, value, qkOutput});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// RotaryEmbedding
//===----------------------------------------------------------------------===//

/// X (4-D [batch, heads, seq, head_size], or 3-D [batch, seq, hidden] with
/// num_heads) rotated pairwise in its first rotary_embedding_dim channels:
/// the pairs are (k, k + dim/2), or (2k, 2k + 1) when interleaved, and pair k
/// turns by the angle whose cos/sin are the caches' entry k at the token's
/// position (position_ids[b, s], or the caches' own [b, s] without them).
struct LowerRotaryEmbedding : OpConversionPattern<onnx::RotaryEmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::RotaryEmbeddingOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto resultType = staticResultType(rewriter, *getTypeConverter(), op, op.getY());
    if (failed(resultType)) return failure();
    Location loc = op.getLoc();
    Type elementType = resultType->getElementType();
    if (!isa<FloatType>(elementType)) return rewriter.notifyMatchFailure(op, "X is not float");

    // Work on [batch, heads, seq, head_size] or [batch, seq, heads, head_size].
    Value input = adaptor.getX();
    ArrayRef<int64_t> shape = resultType->getShape();
    int64_t seqDim;
    if (shape.size() == 4) {
      seqDim = 2;
    } else if (shape.size() == 3) {
      int64_t heads = op.getNumHeads();
      if (heads <= 0 || shape[2] % heads != 0)
        return rewriter.notifyMatchFailure(op, "3-D X needs num_heads dividing its hidden size");
      input = reshapeTo(rewriter, loc, input, {shape[0], shape[1], heads, shape[2] / heads});
      seqDim = 1;
    } else {
      return rewriter.notifyMatchFailure(op, "X is neither 3-D nor 4-D");
    }
    auto inputType = cast<RankedTensorType>(input.getType());
    int64_t headSize = inputType.getDimSize(3);
    int64_t rotaryDim = op.getRotaryEmbeddingDim() ? op.getRotaryEmbeddingDim() : headSize;
    if (rotaryDim % 2 != 0 || rotaryDim > headSize)
      return rewriter.notifyMatchFailure(op, "rotary_embedding_dim is odd or above the head size");
    int64_t half = rotaryDim / 2;

    bool hasPositions = !isa<NoneType>(op.getPositionIds().getType());
    auto cacheType = cast<RankedTensorType>(adaptor.getCosCache().getType());
    if (cacheType != adaptor.getSinCache().getType() ||
        cacheType.getRank() != (hasPositions ? 2 : 3) || cacheType.getShape().back() != half)
      return rewriter.notifyMatchFailure(
          op, "cos_cache/sin_cache are not [max_pos, dim/2] (or [batch, seq, dim/2] without "
              "position_ids)");
    // The [batch, seq] of what picks each token's angles, position_ids or the
    // caches themselves, broadcasts numpy-style over the tokens.
    ArrayRef<int64_t> tokenShape =
        hasPositions ? cast<RankedTensorType>(adaptor.getPositionIds().getType()).getShape()
                     : cacheType.getShape().take_front(2);
    int64_t batch = inputType.getDimSize(0), length = inputType.getDimSize(seqDim);
    if (tokenShape.size() != 2 || (tokenShape[0] != 1 && tokenShape[0] != batch) ||
        (tokenShape[1] != 1 && tokenShape[1] != length))
      return rewriter.notifyMatchFailure(op, "the angles do not broadcast to [batch, seq]");

    bool interleaved = op.getInterleaved() != 0;
    Value positions = hasPositions ? adaptor.getPositionIds() : Value();
    Value cosCache = adaptor.getCosCache(), sinCache = adaptor.getSinCache();
    Value rotated = buildElementwise(
        rewriter, loc, inputType, input, [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          SmallVector<Value> at{linalgIndex(b, l, 0), linalgIndex(b, l, 1), linalgIndex(b, l, 2),
                                linalgIndex(b, l, 3)};
          Value channel = at[3];
          auto rotate = [&](OpBuilder &nb, Location nl) -> Value {
            auto index = [&](int64_t value) {
              return scalarConstant(nb, nl, nb.getIndexType(), double(value));
            };
            // The pair (first, second) the channel belongs to, and which of
            // the two it is.
            Value pair, first, second, isSecond;
            if (interleaved) {
              pair = arith::DivUIOp::create(nb, nl, channel, index(2));
              first = arith::MulIOp::create(nb, nl, pair, index(2));
              second = arith::AddIOp::create(nb, nl, first, index(1));
              isSecond = arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, channel, second);
            } else {
              pair = arith::RemUIOp::create(nb, nl, channel, index(half));
              first = pair;
              second = arith::AddIOp::create(nb, nl, pair, index(half));
              isSecond =
                  arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::uge, channel, index(half));
            }
            auto inputAt = [&](Value channelIndex) -> Value {
              SmallVector<Value> indices{at[0], at[1], at[2], channelIndex};
              return tensor::ExtractOp::create(nb, nl, input, indices);
            };
            Value x1 = inputAt(first), x2 = inputAt(second);
            SmallVector<Value> token{tokenShape[0] != batch ? index(0) : at[0],
                                     tokenShape[1] != length ? index(0) : at[seqDim]};
            SmallVector<Value> cacheAt{token[0], token[1], pair};
            if (positions) {
              Value position = tensor::ExtractOp::create(nb, nl, positions, token);
              cacheAt = {arith::IndexCastOp::create(nb, nl, nb.getIndexType(), position), pair};
            }
            Value cos = tensor::ExtractOp::create(nb, nl, cosCache, cacheAt);
            Value sin = tensor::ExtractOp::create(nb, nl, sinCache, cacheAt);
            auto mul = [&](Value lhs, Value rhs) {
              return arith::MulFOp::create(nb, nl, lhs, rhs);
            };
            Value cosX1 = mul(cos, x1), sinX2 = mul(sin, x2);
            Value real = arith::SubFOp::create(nb, nl, cosX1, sinX2);
            Value sinX1 = mul(sin, x1), cosX2 = mul(cos, x2);
            Value imaginary = arith::AddFOp::create(nb, nl, sinX1, cosX2);
            return arith::SelectOp::create(nb, nl, isSecond, imaginary, real);
          };
          if (rotaryDim == headSize) return rotate(b, l);
          // Channels past rotary_embedding_dim pass through.
          Value inRotation =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, channel,
                                    scalarConstant(b, l, b.getIndexType(), double(rotaryDim)));
          auto ifOp = scf::IfOp::create(
              b, l, inRotation,
              [&](OpBuilder &nb, Location nl) { scf::YieldOp::create(nb, nl, rotate(nb, nl)); },
              [&](OpBuilder &nb, Location nl) { scf::YieldOp::create(nb, nl, args[0]); });
          return ifOp.getResult(0);
        });
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, rotated, shape));
    return success();
  }
};

} // namespace

void populateAttentionPatterns(TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LowerAttention, LowerRotaryEmbedding>(converter, patterns.getContext());
}

} // namespace llmc::onnx_to_linalg
