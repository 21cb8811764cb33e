//===- RaisePatterns.h - patterns of raise-onnx-to-llm ----------*- C++ -*-===//
//
// The raising patterns, one file per concept (norms, linear layers and
// activations, rotary embeddings, attention, onnxruntime's fused ops), and
// the matching helpers they share.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_RAISEPATTERNS_H
#define LLMC_PASSES_RAISEPATTERNS_H

#include "dialects/llm/LlmDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "llmc/Support/TensorShape.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace llmc::raising {

/// Stage 0: each sparse mixture-of-experts block optimum writes (its experts'
/// loop unrolled) -> llm.linear (the router) and llm.moe
/// (RaiseMixtureOfExperts.cpp). A block that is not recognised keeps its
/// ops and gets kMoeUnmatchedAttr on its output, with the reason.
void raiseMixturesOfExperts(mlir::func::FuncOp func);
/// The same for the dense form gpt-oss's export writes: every expert on
/// every token over stacked weights, weighted by a scatter of the router's
/// top-k softmax (RaiseDenseMixtureOfExperts.cpp).
void raiseDenseMixturesOfExperts(mlir::func::FuncOp func);
/// Stage 0 too: each sparse mixture-of-experts block transformers runs
/// grouped (its pairs sorted by expert), as torch.onnx's dynamo exporter
/// traces it -> llm.linear and llm.moe (RaiseGroupedMixtureOfExperts.cpp).
void raiseGroupedMixturesOfExperts(mlir::func::FuncOp func);
inline constexpr llvm::StringLiteral kMoeUnmatchedAttr = "llmc.moe_unmatched";

/// Records `reason` in `why` and returns failure(): how the matchers below,
/// which explain a miss through a string, report one.
inline mlir::LogicalResult fail(std::string &why, const llvm::Twine &reason) {
  why = reason.str();
  return mlir::failure();
}

/// A mixture of experts' router (MixtureOfExpertsUtils.cpp): Gemm(xf, W[, b])
/// (W transposed or not) or MatMul(xf, W) [+ b] of the token rows xf =
/// Reshape(x [batch, seq, hidden] -> [tokens, hidden]), W [experts, hidden]
/// (transposed) or [hidden, experts] and b [experts] constants.
struct RouterProjection {
  mlir::Value input;        ///< x [batch, seq, hidden]
  mlir::Value flatInput;    ///< xf [tokens, hidden]
  mlir::Value weight, bias; ///< the bias null without one
  bool transposed = false;

  int64_t experts() const;
  /// The router as llm.linear of x: the logits [batch, seq, experts].
  mlir::Value create(mlir::OpBuilder &builder, mlir::Location loc) const;
};
/// The router that computes `logits`, or failure with the reason in `why`.
mlir::FailureOr<RouterProjection> matchRouterProjection(mlir::Value logits, std::string &why);

/// Columns start, start + step, ... (count of them) of a last axis.
struct Columns {
  int64_t start = 0, step = 1, count = 0;
  int64_t at(int64_t i) const { return start + i * step; }
};
/// `columns` of each expert's [in, out] weight in `weights` (stacked [experts,
/// in, out], row-major), transposed to llm.moe's [experts, columns, in].
std::vector<float> transposedExpertColumns(llvm::ArrayRef<float> weights, int64_t experts,
                                           int64_t in, int64_t out, const Columns &columns);
/// `columns` of each expert's biases in `bias` ([experts, out] values):
/// llm.moe's [experts, columns].
std::vector<float> expertBiasColumns(llvm::ArrayRef<float> bias, int64_t experts, int64_t out,
                                     const Columns &columns);

/// An expert's gated activation of the gate and up columns of one
/// projection: silu(g) * u, or gpt-oss's clamped form (llm.moe's
/// swiglu_limit and swiglu_alpha).
struct ExpertActivation {
  mlir::Value projection; ///< what the gate and up columns are taken from
  Columns gate, up;       ///< Slices of its last axis, or the halves of a Split of it
  std::optional<float> limit, alpha;
};
/// The activation `hidden` is, or failure with the reason in `why`.
mlir::FailureOr<ExpertActivation> matchExpertActivation(mlir::Value hidden, std::string &why);

/// A token's experts chosen by scores biased for the choice, or by sigmoid
/// scores, within groups or not (DeepSeek-V3's router, ERNIE 4.5's), as
/// llm.moe's routing holds it.
struct ScoredRouting {
  mlir::Value logits;        ///< what the router computes [tokens, experts]
  bool sigmoid = false;      ///< sigmoid scores, else a softmax's
  mlir::Value selectionBias; ///< a constant of one value per expert, or null
  int64_t groups = 0, keptGroups = 0;
  bool excludeHiddenGroups = false; ///< the other groups' experts choose -inf, not 0
  mlir::Value weights;       ///< the routing weights the experts read [tokens, k]
  bool normalize = false;
  float epsilon = 0.0f, minimum = 0.0f; ///< of the normalisation's sum
  std::optional<float> scale;
};
/// The routing whose expert TopK is `topk` (RaiseScoredRouting.cpp), or
/// failure with the reason in `why`.
mlir::FailureOr<ScoredRouting> matchScoredRouting(onnx::TopKOp topk, std::string &why);
/// The selection bias of `routing` as an llm.constant (null without one), or
/// failure when it is not an f32 constant.
mlir::FailureOr<mlir::Value> createSelectionBias(mlir::OpBuilder &builder,
                                                 const ScoredRouting &routing);
/// `routing` as `moe`'s scored routing: sigmoid scores, the selection bias,
/// groups, the normalisation's epsilon and minimum and the routed scale.
void setScoredRouting(llm::MoeOp moe, const ScoredRouting &routing, mlir::Value selectionBias);

/// PhiMoE's sparsemixer routing (RaiseSparseMixerRouting.cpp): two experts
/// by the router's logits, each weighted by a softmax over the experts near
/// it.
struct SparseMixerRouting {
  mlir::Value logits;  ///< what the router computes [tokens, experts]
  mlir::Value weights; ///< the two slots' weights [tokens, 2]
  float threshold;     ///< llm.moe's sparse_mixer_threshold
};
/// The routing whose chosen experts [tokens, 2] are `ids`, or failure with
/// the reason in `why`.
mlir::FailureOr<SparseMixerRouting> matchSparseMixerRouting(mlir::Value ids, std::string &why);

/// Routing weights w [tokens, k] divided by their sum (norm_topk_prob).
struct WeightNormalization {
  onnx::DivOp division;
  float epsilon = 0.0f; ///< w / (ReduceSum(w, -1) + epsilon)
  float minimum = 0.0f; ///< w / Clip(ReduceSum(w, -1), minimum) (ERNIE 4.5's moe_norm_min)
  /// Whether the sum is taken as it is: w / ReduceSum(w, -1).
  bool bySumAlone() const { return epsilon == 0.0f && minimum == 0.0f; }
};
/// How a user of `weights` divides them by their sum, or nullopt when none
/// does.
std::optional<WeightNormalization> normalizedWeights(mlir::Value weights);

/// Before the masks are proven, the scores of decomposed attention in one
/// form (NormalizeScores.cpp): attention multiplied over [batch * heads]
/// batches viewed as [batch, heads] again, a mask applied by selecting the
/// scores written as added, and the terms added to a softmax's scores
/// gathered into one mask.
mlir::LogicalResult normalizeAttentionScores(mlir::func::FuncOp func);

/// Below this, an added mask value hides its key: exp(-1e4) is 0 in every
/// float type attention computes in (fp16's own minimum is -65504).
inline constexpr double kHiddenBelow = -1.0e4;

/// Stage 1: the structures (norms, rope, heads, attention, KV cache, linear).
void populateStructurePatterns(mlir::RewritePatternSet &patterns);
/// Stage 2: what joins the structures (bias, logits head, swiglu, residuals).
void populateGluePatterns(mlir::RewritePatternSet &patterns);
/// The last stage: elementwise activation ops no pattern named -> llm.elementwise.
void populateElementwisePatterns(mlir::RewritePatternSet &patterns);

void populateNormPatterns(mlir::RewritePatternSet &patterns);
void populateNormGluePatterns(mlir::RewritePatternSet &patterns);
void populateLinearPatterns(mlir::RewritePatternSet &patterns);
/// MatMulNBits, GatherBlockQuantized and MatMul by a blocked DequantizeLinear
/// (RaiseQuantizedLinear.cpp); populateLinearPatterns adds them.
void populateQuantizedLinearPatterns(mlir::RewritePatternSet &patterns);
void populateLinearGluePatterns(mlir::RewritePatternSet &patterns);
/// Packed projections split into their parts (RaiseProjectionSplits.cpp);
/// populateLinearGluePatterns adds them.
void populateProjectionSplitPatterns(mlir::RewritePatternSet &patterns);
/// Layers computed on flattened tokens [b*s, f] moved back onto [b, s, f]
/// (RaiseFlattenedTokens.cpp); in the structure and glue stages both.
void populateFlattenedTokenPatterns(mlir::RewritePatternSet &patterns);
/// Reshape(tokens [b, s, f] -> [-1, f]) of type `flatType`: tokens flattened
/// as the flattened-token patterns find them (RaiseFlattenedTokens.cpp).
mlir::Value flattenTokens(mlir::OpBuilder &builder, mlir::Location loc, mlir::Value tokens,
                          mlir::Type flatType);
/// Multi-head latent attention's glue (RaiseLatentAttention.cpp): each head's
/// rotary features de-interleaved before the rotation, folded into the
/// projection's columns; the heads' features concatenated, the rotary key
/// shared by every head.
void populateLatentAttentionPatterns(mlir::RewritePatternSet &patterns);
void populateRopePatterns(mlir::RewritePatternSet &patterns);
/// The rotation over interleaved pairs GPT-J and CodeGen write out
/// (RaiseInterleavedRope.cpp).
void populateInterleavedRopePatterns(mlir::RewritePatternSet &patterns);
void populateAttentionPatterns(mlir::RewritePatternSet &patterns);
/// The heads' split again, and views of one head (RaiseAttention.cpp): the
/// glue stage splits packed projections into views of heads.
void populateAttentionGluePatterns(mlir::RewritePatternSet &patterns);
void populateFusedAttentionPatterns(mlir::RewritePatternSet &patterns);
/// onnxruntime's com.microsoft MoE -> llm.moe (RaiseFusedMixtureOfExperts.cpp).
void populateFusedMixtureOfExpertsPatterns(mlir::RewritePatternSet &patterns);

//===----------------------------------------------------------------------===//
// Matching helpers
//===----------------------------------------------------------------------===//

/// The op of type T that defines `value`, or null.
template <typename T>
T definedBy(mlir::Value value) {
  return value ? value.getDefiningOp<T>() : T();
}

/// The first (or second) operand of a binary op that is defined by T, and the other.
template <typename T, typename Binary>
std::pair<T, mlir::Value> operandDefinedBy(Binary op) {
  if (auto lhs = definedBy<T>(op.getA())) return {lhs, op.getB()};
  if (auto rhs = definedBy<T>(op.getB())) return {rhs, op.getA()};
  return {};
}

/// `value` with any chain of onnx.Cast ops before it removed.
mlir::Value skipCasts(mlir::Value value);

/// Whether `value` is a tensor of one float value `expected`: ConstantOfShape
/// of it (or of its default zero), or Expand of it as a constant scalar (the
/// dynamo exporter's torch.zeros_like).
bool isFilledWith(mlir::Value value, double expected);
/// isFilledWith(value, 0).
bool isZeroFill(mlir::Value value);

/// Which half of its input (0: the first) `value` is, when it is a result of
/// a Split into two equal parts along the last axis of a static, even last
/// dim; the input in `input`.
std::optional<int64_t> lastAxisHalf(mlir::Value value, mlir::Value &input);

/// Whether `value` is an omitted optional operand: onnx's None value, or
/// an llm op's absent operand (null).
bool isNone(mlir::Value value);

/// `value` as an llm op's optional operand: null where onnx passes None.
mlir::Value optionalOperand(mlir::Value value);

/// Whether `op` is a Transpose with exactly this perm.
bool hasPerm(onnx::TransposeOp op, llvm::ArrayRef<int64_t> perm);

/// `probs` without the guard exports put after a softmax whose rows may be
/// all hidden: Where(IsNaN(p), 0, p). A causal row always sees its own token,
/// and the serving form has no padded rows, so the guard never fires there.
mlir::Value skipNaNGuard(mlir::Value probs);

/// Whether `op` swaps the two dims of a matrix: perm [1, 0], or no perm
/// (ONNX reverses the dims then, as torch.onnx writes `weight.T`).
bool isMatrixTranspose(onnx::TransposeOp op);

/// A Slice of only the last axis with constant start, end and step (1 when
/// absent), as written: not clamped, negative indices not resolved.
struct LastAxisSlice {
  int64_t start, end, step;
};
std::optional<LastAxisSlice> lastAxisSlice(onnx::SliceOp slice);

/// The [start, end) columns a Slice takes: one with constant starts and ends,
/// step 1, of only the last axis, whose length is static. nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> lastAxisColumns(onnx::SliceOp slice);

/// Whether dim `i` of `a` is dim `j` of `b`: the same static size, or, followed
/// back from `a` through norms (which keep their input's shape) and Reshape
/// entries that copy a dim (0), the same value's dim, or the same dim of the
/// model's inputs (onnx::canonicalDim, and through the llm ops that compute
/// token by token).
bool sameDim(mlir::Value a, int64_t i, mlir::Value b, int64_t j);

/// Whether `value` is produced by an onnx.Constant.
bool isConstant(mlir::Value value);

/// The value of a constant scalar or splat, if `value` is one.
std::optional<double> constantScalar(mlir::Value value);

/// Whether `value` is a constant scalar/splat equal to `expected` (within 1e-6 relative).
bool isConstantScalar(mlir::Value value, double expected);

/// Whether the constant 1-element `axes` operand names `axis` of a rank-`rank` tensor.
bool isSingleAxis(mlir::Value axes, int64_t axis, int64_t rank);

/// The float32 contents of a constant (dense or dense_resource).
std::optional<std::vector<float>> readConstantFloats(mlir::Value value);

/// Rows of `table` gathered at `ids` plus a positive constant below the
/// table's rows (OPT's learned positions, position_ids + 2): the ids before
/// the add and the offset; `ids` and 0 for any other ids.
std::pair<mlir::Value, int64_t> peelRowOffset(mlir::Value ids, mlir::Value table);

/// The raw bytes of a constant (dense or dense_resource), copied.
std::optional<std::vector<uint8_t>> readConstantBytes(mlir::Value value);

/// A new f32 constant of `shape` holding `data` (a resource blob when large).
mlir::Value createF32Constant(mlir::OpBuilder &builder, mlir::Location loc,
                              llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<float> data);

/// A new uint8 constant of `shape` holding `bytes` (a resource blob).
mlir::Value createBytesConstant(mlir::OpBuilder &builder, mlir::Location loc,
                                llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<uint8_t> bytes);

/// llm.dequantize [experts, rows, in] of constants holding experts' packed
/// weights in MatMulNBits' layout: `codes` [experts, rows, blocks, blockSize *
/// bits / 8], `scales` [experts, rows, blocks] and, unless empty,
/// `zeroPoints` [experts, rows, ceil(blocks * bits / 8)].
mlir::Value createStackedDequantize(mlir::OpBuilder &builder, mlir::Location loc,
                                    int64_t experts, int64_t rows, int64_t in, int64_t bits,
                                    int64_t blockSize, llvm::ArrayRef<uint8_t> codes,
                                    llvm::ArrayRef<float> scales,
                                    llvm::ArrayRef<uint8_t> zeroPoints = {});

/// Whether every user of `value` is `reader` or an onnx.Shape: the views
/// exporters put around a value read its shape.
bool onlyReadBy(mlir::Value value, mlir::Operation *reader);

/// `linear` computing its output features in another order: feature i of
/// the new linear is feature order[i] of `linear`, its constant weight and
/// bias reordered once, at compile time (inserted before `linear`); a
/// quantized [out, in] weight (MatMulNBits') moves its packed rows. Null
/// when the weight or bias is neither.
llm::LinearOp reorderColumns(mlir::OpBuilder &builder, llm::LinearOp linear,
                             llvm::ArrayRef<int64_t> order);

/// The argument of `op`'s function whose onnx.name is `name`, or null.
mlir::BlockArgument findArgumentByName(mlir::Operation *op, llvm::StringRef name);

/// The function argument among the leaves of `value`'s backward slice whose
/// onnx.name is `name`, or null.
mlir::BlockArgument findArgumentInSlice(mlir::Value value, llvm::StringRef name);

/// Calls `visit` once on each op of `value`'s cone (its backward slice), the
/// first `limit` values of it at most; an op's operands join the cone unless
/// `visit` returns false.
void forEachOpInCone(mlir::Value value, llvm::function_ref<bool(mlir::Operation *)> visit,
                     size_t limit = std::numeric_limits<size_t>::max());

/// Whether a Concat-style `axis` attribute names the last axis of a rank-`rank` tensor.
bool isSingleAxisValue(int64_t axis, int64_t rank);

/// The factors of a rotary embedding written out, x * cos + rotated * sin.
struct RotationFactors {
  mlir::Value x, cos, rotated, sin;
  onnx::MulOp direct, rotatedProduct;
};
/// `add`'s factors, in either order, where `rotates(rotated, x)`.
std::optional<RotationFactors>
rotationFactors(onnx::AddOp add, llvm::function_ref<bool(mlir::Value, mlir::Value)> rotates);

/// The y whose y[..., :r] and y[..., r:] are `rotated` and `passed`, r being
/// `rotated`'s width (a partial rotary's parts), or null.
mlir::Value partialRotaryInput(mlir::Value rotated, mlir::Value passed);

/// rope_cached on a 4-D [batch, heads, seq, d] value (GroupQueryAttention's rotary).
mlir::Value createRopeForHeads(mlir::PatternRewriter &rewriter, mlir::Location loc,
                               mlir::Value heads, mlir::Value positions, mlir::Value cosCache,
                               mlir::Value sinCache, bool interleaved);

/// The parts of a Softmax's input in decomposed attention:
/// [scale *] (softcap(QK^T [* scale]) [+ mask]), softcap(s) = c * tanh(s / c),
/// or that with one more column of per-head sink logits concatenated after it
/// (gpt-oss: Concat([scores, Expand(sinks)], -1), less its row max).
struct AttentionScores {
  /// The scores before the mask (a QK^T product when this is attention).
  mlir::Value scores;
  /// The additive mask, or null.
  mlir::Value mask;
  /// The product of the constant scales peeled off.
  double scale = 1.0;
  /// c of Gemma-2's softcap, when the scores pass through one.
  std::optional<double> softcap;
  /// The constant [1, heads, 1, 1] sink logits, when a column of them is
  /// concatenated after the scores.
  mlir::Value sinks;
};
AttentionScores splitScores(onnx::SoftmaxOp softmax);

/// `value` less an optional softcap and the constant scales around it: what
/// softcap(s * scale) is computed from; multiplies `scale` by the scales and
/// sets `softcap` to c.
mlir::Value peelScores(mlir::Value value, double &scale, std::optional<double> &softcap);

/// What an attention mask computes: written on its consumer (a Softmax, an
/// onnx.Attention) by proveAttentionMasks as a dictionary {causal, padding,
/// sliding_window = N, alibi_slopes = [...]}, or the reason no such mask
/// matched.
inline constexpr llvm::StringLiteral kMaskAttr = "llmc.mask";
inline constexpr llvm::StringLiteral kMaskUnprovenAttr = "llmc.mask_unproven";

/// Marks an integer onnx.Range proven to give the new tokens' cache
/// positions (past, ..., past + new - 1) on every probe.
inline constexpr llvm::StringLiteral kCachePositionsAttr = "llmc.cache_positions";

/// Marks Where(condition, 0, attention output) whose condition is proven
/// false on every row of a real token (so it never zeroes one).
inline constexpr llvm::StringLiteral kInactiveGuardAttr = "llmc.inactive_guard";

/// Marks a result's Gather of rows from [batch, new, features] flattened
/// to rows, proven to pick each batch row's last token on every probe: a
/// sequence classifier's pooling (transformers' `*ForSequenceClassification`:
/// the last token that is not the pad token, which no probe token is).
inline constexpr llvm::StringLiteral kLastTokenRowsAttr = "llmc.last_token_rows";

/// Marks a Mul by a tensor computed from attention_mask alone, proven to
/// be ones on every unpadded probe row: sentence-transformers' pooling masks
/// the token embeddings so, and a ragged step has no padding.
inline constexpr llvm::StringLiteral kOnesOnRealRowsAttr = "llmc.ones_on_real_rows";

/// Marks a learned position embedding's Gather whose ids the export
/// computes in the graph (GPT-2's and OPT's classifiers take no
/// position_ids), proven to be the new tokens' positions (past + index, up
/// to the constant offset the embedding peels) on every unpadded probe row.
inline constexpr llvm::StringLiteral kTokenPositionsAttr = "llmc.token_positions";

/// Proves what the mask of every attention Softmax and onnx.Attention in
/// `func` computes by evaluating it on probe inputs (ProveMasks.cpp), and
/// writes kMaskAttr or kMaskUnprovenAttr on each; marks the integer Ranges
/// that compute cache positions with kCachePositionsAttr, the attention
/// guards that never fire with kInactiveGuardAttr, the results pooled at
/// each row's last token with kLastTokenRowsAttr, and the learned position
/// embeddings of computed positions with kTokenPositionsAttr.
void proveAttentionMasks(mlir::func::FuncOp func);

/// A sentence-transformers embedding's pooling at each row's last token, as
/// optimum exports it (`--library sentence_transformers`, the default for a
/// model with modules.json: Qwen3-Embedding, gte-Qwen2, e5-mistral): the
/// token embeddings [batch, new, hidden], times the attention mask expanded
/// (`mask`, a Mul; null without it), gathered (GatherElements on axis 1) at
/// indices computed from the mask, squeezed, and with a Normalize module
/// divided by their L2 norm (`normalize`, null without it).
struct SentencePooling {
  mlir::Value tokens;
  onnx::MulOp mask;
  onnx::GatherElementsOp gather;
  onnx::DivOp normalize;
};
/// `result`'s sentence-transformers pooling, or nullopt.
std::optional<SentencePooling> sentencePooling(mlir::Value result);

/// Returns the rows a result marked kLastTokenRowsAttr pools from, [batch,
/// new, features], in its place: the step keeps each sequence's last row of
/// a result as it does for logits. Marks the function
/// kPooledAtLastTokenAttr (StepInfo.h) when it did (RaiseSequencePooling.cpp).
void unpoolLastTokenRows(mlir::func::FuncOp func);

/// Returns a sentence-transformers embedding's token embeddings in place of
/// its `sentence_embedding`, once proveAttentionMasks has proven its pooling
/// picks each row's last token and its mask is ones, as the final hidden
/// states (`last_hidden_state`, the embedding model's output: the runtime
/// pools the last token and normalises, as vLLM serves such a model); the
/// export's `token_embeddings` result, the same rows, goes. An error for a
/// `sentence_embedding` pooled otherwise (mean, CLS), which the step does not
/// compute (RaiseSequencePooling.cpp).
mlir::LogicalResult unpoolSentenceEmbeddings(mlir::func::FuncOp func);

/// A proven mask, as the llm.attention operands and attributes it becomes.
struct MaskInfo {
  /// The model's attention_mask input, when the mask hides padded keys.
  mlir::Value attentionMask;
  /// Whether the mask hides later positions.
  bool causal = false;
  /// The keys a query sees when the mask is a sliding window.
  std::optional<int64_t> slidingWindow;
  /// One slope per query head when the mask also adds linear biases (ALiBi:
  /// slope * the key's position, up to a shift per row); empty otherwise.
  std::vector<float> alibiSlopes;
};

/// llm.attention of q, k, v under `mask` (its linear biases too), with its
/// scale, softcap and sinks.
llm::AttentionOp createAttention(mlir::OpBuilder &builder, mlir::Location loc, mlir::Type type,
                                 mlir::Value q, mlir::Value k, mlir::Value v,
                                 const MaskInfo &mask, float scale,
                                 std::optional<double> softcap,
                                 llvm::ArrayRef<float> sinks = {});

/// The mask proven on `consumer`; failure with `why` when it was not proven.
mlir::FailureOr<MaskInfo> provenMask(mlir::Operation *consumer, std::string &why);

/// What a fused attention op (opset-23 Attention, GroupQueryAttention,
/// MultiHeadAttention) asks for that llmc does not compute, named; nullopt
/// when nothing or for other ops.
std::optional<std::string> unsupportedAttentionFeature(mlir::Operation *op);
/// The same for MatMulNBits (its g_idx).
std::optional<std::string> unsupportedQuantizationFeature(mlir::Operation *op);
/// The same for onnxruntime's MoE op (its activation, fusion, sparse mixer).
std::optional<std::string> unsupportedMixtureOfExpertsFeature(mlir::Operation *op);
/// The same for a decomposed attention's Softmax left unraised: linear biases
/// per head (ALiBi), or a mask applied by selecting the scores (RaiseAttention.cpp).
std::optional<std::string> unsupportedScoresFeature(mlir::Operation *op);
/// The same for a rotary embedding left decomposed: the Neg of the odd
/// elements of pairs that rotate_every_two writes (RaiseRope.cpp).
std::optional<std::string> unsupportedRopeFeature(mlir::Operation *op);

/// producer(x) + bias[last dim] -> producer(x, bias), for an llm op with an
/// optional `bias` operand (linear, layer_norm) whose only use is the add.
template <typename OpTy>
struct FoldBiasAdd : mlir::OpRewritePattern<onnx::AddOp> {
  using mlir::OpRewritePattern<onnx::AddOp>::OpRewritePattern;
  mlir::LogicalResult matchAndRewrite(onnx::AddOp op,
                                      mlir::PatternRewriter &rewriter) const override {
    for (auto [result, bias] : {std::pair(op.getA(), op.getB()), std::pair(op.getB(), op.getA())}) {
      auto producer = definedBy<OpTy>(result);
      if (!producer || !isNone(producer.getBias()) || !producer->hasOneUse()) continue;
      if (!isConstant(bias) || rankOf(bias) != 1 || dimOf(bias, 0) != dimOf(result, -1)) continue;
      rewriter.modifyOpInPlace(producer, [&] {
        producer.getBiasMutable().assign(bias);
        producer->getResult(0).setType(op.getType());
      });
      rewriter.replaceOp(op, producer);
      return mlir::success();
    }
    return rewriter.notifyMatchFailure(op, "not " + OpTy::getOperationName() +
                                               " + a constant bias over its last dim");
  }
};

/// A fused location of the given ops (the raised op's provenance).
mlir::Location fusedLocOf(llvm::ArrayRef<mlir::Operation *> ops);

} // namespace llmc::raising

#endif // LLMC_PASSES_RAISEPATTERNS_H
