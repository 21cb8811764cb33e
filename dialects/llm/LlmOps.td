//===- LlmOps.td - the llm dialect -------------------------*- tablegen -*-===//
//
// The `llm` dialect names the building blocks of decoder-only transformers,
// so that later passes (GQA rewrite, KV-cache paging, ragged batching,
// fusion, lowering) reason about attention and norms instead of about the
// dozens of ONNX nodes each one is exported as.
//
// Layout conventions (what every op below assumes):
//  - activations are [batch, seq, features]; attention heads are split out
//    as [batch, heads, seq, head_dim] (`llm.split_heads`), the layout of the
//    KV cache tensors that exports take and return;
//  - weights of `llm.linear` are [in, out] (ONNX MatMul's B) unless
//    `transpose_weight` is set, then [out, in] (torch's nn.Linear);
//  - masks are never tensors here: causality is an attribute of
//    `llm.attention`, and padding comes from the model's raw
//    attention_mask input ([batch, total_len], 1 = keep);
//  - after `llm-ragged-batching` the [batch, seq] dims are one [tokens]
//    dim: activations [tokens, features], heads [tokens, heads, head_dim],
//    positions [tokens]. The token-wise ops below accept both forms.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_DIALECT_LLM_OPS
#define LLMC_DIALECT_LLM_OPS

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Llm_Dialect : Dialect {
  let name = "llm";
  let cppNamespace = "::llmc::llm";
  let summary = "transformer building blocks for decoder-only LLMs";
  let description = [{
    Ops at the level at which LLM serving engines reason: embedding, norms,
    linear layers, rotary embeddings, attention with a KV cache, gated MLP
    activations and the logits head. `raise-onnx-to-llm` produces them from
    the patterns exporters write.
  }];
  // The scalar bodies of elementwise and fused ops are arith/math ops.
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
  let hasConstantMaterializer = 1;
}

def Llm_ScalarFunctionOpInterface : OpInterface<"ScalarFunctionOpInterface"> {
  let cppNamespace = "::llmc::llm";
  let description = [{
    An elementwise op: each result element is a function of the operands'
    elements at the same index (per-column and rank-0 operands broadcast).
    The function is built as scalar arith/math ops, which is how fusion
    passes merge such ops into one body and how backends generate their
    loops: one definition of each activation's arithmetic for fused and
    unfused code alike.
  }];
  let methods = [
    InterfaceMethod<[{
      Builds the scalar function at the builder's insertion point, on
      `scalars` (one per operand, in operand order), and returns its value.
    }], "::mlir::Value", "buildScalar",
    (ins "::mlir::OpBuilder &":$builder, "::mlir::Location":$loc, "::mlir::ValueRange":$scalars)>,
  ];
}

// Operands print in order; an absent optional operand (at most one per op
// using this format) is left out of the list and of the types.
class Llm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Llm_Dialect, mnemonic, !listconcat(traits, [Pure])> {
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
}

// Properties passes ask of ops (LlmTraits.h).
class Llm_Trait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::llmc::llm::OpTrait";
}
def Llm_RowWise : Llm_Trait<"RowWise">;
def Llm_TokenWise : Llm_Trait<"TokenWise">;
def Llm_TokenWiseHeads : Llm_Trait<"TokenWiseHeads">;
def Llm_View : Llm_Trait<"View">;

// Ops applying a scalar function to every element: row-wise and token-wise.
class Llm_ElementwiseOpBase<string mnemonic, list<Trait> traits = []>
    : Llm_Op<mnemonic, !listconcat([Llm_RowWise, Llm_TokenWise,
                                    DeclareOpInterfaceMethods<Llm_ScalarFunctionOpInterface>],
                                   traits)>;

def Llm_Tensor : AnyTypeOf<[AnyRankedTensor, AnyUnrankedTensor]>;
def Llm_OptTensor : Optional<Llm_Tensor>;

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

def Llm_ConstantOp : Op<Llm_Dialect, "constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "output"]>]> {
  let summary = "a constant tensor: a weight, a rotary table, a scalar";
  let description = [{
    Raising turns every `onnx.Constant` into this op, so that the llm IR the
    serving, fusion and codegen passes see holds llm ops only. The value is
    an `ElementsAttr` kept as imported: a `dense` attribute for small tensors,
    a `dense_resource` blob in ONNX's raw little-endian layout for weights
    (int4/uint4 two elements per byte, low nibble first).
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Embedding, norms, linear layers
//===----------------------------------------------------------------------===//

def Llm_EmbeddingOp : Llm_Op<"embedding", [Llm_TokenWise]> {
  let summary = "row lookup: table[vocab, hidden] at token ids";
  let description = [{
    With `transpose_table` the table is stored [hidden, vocab]: the LM
    head's [in, out] weight that tied models gather their embeddings from.
  }];
  let arguments = (ins Llm_Tensor:$table, Llm_Tensor:$ids, UnitAttr:$transpose_table);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_RmsNormOp : Llm_Op<"rms_norm", [Llm_RowWise, Llm_TokenWise]> {
  let summary = "x / sqrt(mean(x^2, -1) + epsilon) * weight, computed in f32";
  let description = [{
    Each run of `weight`'s length along the last dim is normalised on its
    own: the whole dim for the norms of a decoder layer, one head of a
    [batch, seq, heads*head_dim] projection for the per-head q/k norms of
    Qwen3 and Gemma-3 (raised before their split_heads). A weight
    [groups, n] normalises the groups runs of n, run g times row g (a weight
    per head).
  }];
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$weight, F32Attr:$epsilon);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_LayerNormOp : Llm_Op<"layer_norm", [Llm_RowWise, Llm_TokenWise]> {
  let summary = "(x - mean) / sqrt(var + epsilon) * weight + bias over the last dim";
  let description = [{
    As llm.rms_norm, each run of the weight's length along the last dim is
    normalised on its own, and a weight [groups, n] scales run g by row g:
    Cohere's q/k LayerNorm (`use_qk_norm`, Command-R+) normalises each
    head's features with that head's weight. The bias has the weight's
    shape.
  }];
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$weight, Llm_OptTensor:$bias,
                   F32Attr:$epsilon);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_LinearOp : Llm_Op<"linear", [Llm_RowWise, Llm_TokenWise]> {
  let summary = "x * W (+ bias), the weight [in, out] or [out, in] if transposed";
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$weight, Llm_OptTensor:$bias,
                   UnitAttr:$transpose_weight);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_LoraOp : Llm_Op<"lora", [Llm_RowWise, Llm_TokenWise]> {
  let summary = "a linear layer's output plus the row's LoRA adapter's product";
  let description = [{
    `output[r] = base[r] + scaling * (input[r] * A^T) * B^T` where A [rank,
    in] and B [out, rank] are the low-rank weights the serving runtime holds
    for `site` in the adapter row r runs with, and `base` is the linear
    layer's product of `input`; a row without an adapter (or whose adapter
    leaves the site alone) is `base[r]`. `module` is the linear's module
    path as the adapter names it (`model.layers.0.self_attn.q_proj`).
    Adapters are loaded while the model serves, so their weights are not
    constants of the program: `llm-lora-sites` inserts this op after each
    linear layer an adapter may target, and the target lowering hands the
    product to the runtime (docs/lora.md).
  }];
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$base, I64Attr:$site, StrAttr:$module);
  let results = (outs Llm_Tensor:$output);
  let assemblyFormat = "$input `,` $base attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Llm_MoeOp : Llm_Op<"moe", [Llm_TokenWise, AttrSizedOperandSegments]> {
  let summary = "a sparse mixture of gated-MLP experts, top_k of them per token";
  let description = [{
    For each token row x [hidden] and its router logits r [experts]:
    p = softmax(r), or sigmoid(r) with `sigmoid_scores`; the top_k experts
    by p (equal scores: the lower expert first) are chosen, with weights
    w = p[chosen], divided by their sum (plus `normalize_epsilon`, 0 when
    absent; at least `normalize_min` when present, ERNIE 4.5's
    moe_norm_min) when `normalize_top_k` (Qwen3-MoE's norm_topk_prob;
    Mixtral's and gpt-oss's softmax over the top_k logits is the same
    number), then times `routed_scale` when present.

    DeepSeek-V3's routing (and ERNIE 4.5's, over softmax scores) chooses
    by c = p + `selection_bias` [experts] (its e_score_correction_bias;
    the weights stay p) and, with
    `expert_groups` G, within groups: the experts are G runs of
    experts / G, a group scores the sum of its two largest c, the
    `top_k_groups` best groups (equal scores: the lower group first) keep
    their c and every other expert's c becomes 0 (transformers 4's
    masked_fill(0): a negative c ranks below it), or -inf with
    `exclude_hidden_groups` (transformers 5's and vLLM's: only the kept
    groups' experts are chosen), and the top_k experts are those of the
    largest c.

    PhiMoE's sparsemixer (`sparse_mixer_threshold` T, 2 x its
    router_jitter_noise; top_k 2) chooses e1, the largest r, then e2, the
    largest of the others. Slot s's weight is the softmax of r at e_s over
    the experts that slot sees: not those with (m - r_e) / max(|r_e|, m) > T,
    m = r[e_s], and in slot 2 not e1.

    output = sum over the chosen e of w_e * down_e(act(gate_e(x), up_e(x))),
    each projection adding its bias, when it has one, for the expert
    (gpt-oss). act(g, u) is silu(g) * u; with `swiglu_limit` L it is
    gpt-oss's clamped form: g' = min(g, L), u' = clamp(u, -L, L),
    act = g' * sigmoid(swiglu_alpha * g') * (u' + 1).

    Each weight is [experts, out, in]: row i of expert e holds the weights
    of its output i. `gate_weight` and `up_weight` are [experts,
    intermediate, hidden], `down_weight` [experts, hidden, intermediate]:
    the layout of a weight quantised in blocks along its inputs, which a
    weight may be (an llm.dequantize of packed codes stacked by expert: the
    CPU keeps them packed). The biases are [experts, out]. A token reads
    only its top_k experts' weights.
  }];
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$router_logits, Llm_Tensor:$gate_weight,
                   Llm_Tensor:$up_weight, Llm_Tensor:$down_weight, Llm_OptTensor:$gate_bias,
                   Llm_OptTensor:$up_bias, Llm_OptTensor:$down_bias,
                   Llm_OptTensor:$selection_bias, I64Attr:$top_k,
                   UnitAttr:$normalize_top_k, OptionalAttr<F32Attr>:$swiglu_limit,
                   OptionalAttr<F32Attr>:$swiglu_alpha, UnitAttr:$sigmoid_scores,
                   OptionalAttr<I64Attr>:$expert_groups, OptionalAttr<I64Attr>:$top_k_groups,
                   OptionalAttr<F32Attr>:$normalize_epsilon,
                   OptionalAttr<F32Attr>:$routed_scale,
                   OptionalAttr<F32Attr>:$normalize_min, UnitAttr:$exclude_hidden_groups,
                   OptionalAttr<F32Attr>:$sparse_mixer_threshold);
  let results = (outs Llm_Tensor:$output);
  let assemblyFormat = [{
    $input `,` $router_logits `,` $gate_weight `,` $up_weight `,` $down_weight
    (`gate_bias` `(` $gate_bias^ `)`)? (`up_bias` `(` $up_bias^ `)`)?
    (`down_bias` `(` $down_bias^ `)`)? (`selection_bias` `(` $selection_bias^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    // Routed by the top_k of a softmax; the scored routing's operand and
    // attributes are set on the op after.
    OpBuilder<(ins "::mlir::Type":$output, "::mlir::Value":$input,
                   "::mlir::Value":$routerLogits, "::mlir::Value":$gateWeight,
                   "::mlir::Value":$upWeight, "::mlir::Value":$downWeight,
                   "::mlir::Value":$gateBias, "::mlir::Value":$upBias,
                   "::mlir::Value":$downBias, "int64_t":$topK, "bool":$normalizeTopK,
                   "::mlir::FloatAttr":$swigluLimit, "::mlir::FloatAttr":$swigluAlpha), [{
      build($_builder, $_state, output, input, routerLogits, gateWeight, upWeight, downWeight,
            gateBias, upBias, downBias, /*selection_bias=*/::mlir::Value(), topK,
            normalizeTopK, swigluLimit, swigluAlpha, /*sigmoid_scores=*/false,
            ::mlir::IntegerAttr(), ::mlir::IntegerAttr(), ::mlir::FloatAttr(),
            ::mlir::FloatAttr(), ::mlir::FloatAttr(), /*exclude_hidden_groups=*/false,
            /*sparse_mixer_threshold=*/::mlir::FloatAttr());
    }]>
  ];
  let extraClassDeclaration = [{
    /// Whether the experts are chosen otherwise than by the top_k of a
    /// softmax: by sigmoid scores, a selection bias or within groups.
    bool hasScoredRouting() {
      return getSigmoidScores() || getSelectionBias() || getExpertGroups();
    }
    /// sparse_mixer_threshold, when the routing is PhiMoE's sparsemixer.
    std::optional<float> getSparseMixer() {
      if (auto threshold = getSparseMixerThreshold()) return threshold->convertToFloat();
      return std::nullopt;
    }
    /// normalize_epsilon, 0 when absent.
    float getNormalizeEpsilonOrZero() {
      return getNormalizeEpsilon() ? getNormalizeEpsilon()->convertToFloat() : 0.0f;
    }
    /// normalize_min, 0 when absent (a sum of scores is never below 0).
    float getNormalizeMinOrZero() {
      return getNormalizeMin() ? getNormalizeMin()->convertToFloat() : 0.0f;
    }
    /// routed_scale, 1 when absent.
    float getRoutedScaleOrOne() {
      return getRoutedScale() ? getRoutedScale()->convertToFloat() : 1.0f;
    }
    /// The checks of the routing's operand and attributes.
    ::llvm::LogicalResult verifyRouting(int64_t experts, int64_t topK);
  }];
  let hasVerifier = 1;
}

def Llm_DequantizeOp : Llm_Op<"dequantize"> {
  let summary = "block-wise dequantisation of a packed integer weight";
  let description = [{
    `data` holds `bits`-bit integers packed low nibble first in the layouts
    onnxruntime uses: MatMulNBits' uint8 container
    [rows][cols/block_size][block_size*bits/8], or GatherBlockQuantized's
    uint4/int4 tensor [rows, cols]. Each block of `block_size` values along
    a row shares one scale (and one zero point; when absent 2^(bits-1), or 0
    for signed int4 codes). The result is [rows, cols] in the scale's
    element type; a result [..., rows, cols] stacks such matrices (a mixture
    of experts' weights), the operands' leading dims stacking them alike.
  }];
  let arguments = (ins Llm_Tensor:$data, Llm_Tensor:$scales, Llm_OptTensor:$zero_points,
                   I64Attr:$bits, I64Attr:$block_size);
  let results = (outs Llm_Tensor:$output);
}

def Llm_PermuteFeaturesOp : Llm_Op<"permute_features", [Llm_RowWise, Llm_TokenWise]> {
  let summary = "the features of each row in another order";
  let description = [{
    output[..., i] = input[..., indices[i]], `indices` an i32 permutation of
    the last dim. GPTQ's act-order scatters a weight's quantisation groups
    over its input features (MatMulNBits' g_idx); raising sorts the weight's
    columns by group, so each block is one group again and stays packed,
    and reorders the layer's input the same way.
  }];
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$indices);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_LogitsOp : Llm_Op<"logits", [SingleBlock, IsolatedFromAbove]> {
  let summary = "the LM head: hidden states times the vocabulary projection";
  let description = [{
    A linear layer (with an optional bias, as Phi-2's LM head has) that
    produces the vocabulary logits. Kept apart from `llm.linear` so that
    later passes compute only the rows a step needs.

    An optional epilogue maps each logit on its own before it is written:
    Granite's `logits / logits_scaling`, Gemma-2's softcap
    `c * tanh(logit / c)`. Its block takes the f32 logit and yields the
    result, like a `llm.fused_linear` epilogue with one accumulator.
  }];
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$weight, Llm_OptTensor:$bias,
                   UnitAttr:$transpose_weight);
  let results = (outs Llm_Tensor:$output);
  let regions = (region AnyRegion:$epilogue);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `)`)? attr-dict `:` functional-type(operands, results)
    ($epilogue^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Activations and elementwise ops that remain between blocks
//===----------------------------------------------------------------------===//

def Llm_SiluOp : Llm_ElementwiseOpBase<"silu"> {
  let summary = "x * sigmoid(x)";
  let arguments = (ins Llm_Tensor:$input);
  let results = (outs Llm_Tensor:$output);
}

def Llm_GeluOp : Llm_ElementwiseOpBase<"gelu"> {
  let summary = "GELU, exact (erf) or with the tanh approximation";
  let arguments = (ins Llm_Tensor:$input, UnitAttr:$tanh_approximation);
  let results = (outs Llm_Tensor:$output);
}

def Llm_SwigluOp : Llm_ElementwiseOpBase<"swiglu"> {
  let summary = "silu(gate) * up, the gated MLP activation";
  let arguments = (ins Llm_Tensor:$gate, Llm_Tensor:$up);
  let results = (outs Llm_Tensor:$output);
}

def Llm_AddOp : Llm_ElementwiseOpBase<"add"> {
  let summary = "elementwise sum of same-shaped tensors (residual connections)";
  let arguments = (ins Llm_Tensor:$lhs, Llm_Tensor:$rhs);
  let results = (outs Llm_Tensor:$output);
}

def Llm_MulOp : Llm_ElementwiseOpBase<"mul"> {
  let summary = "elementwise product of same-shaped tensors";
  let arguments = (ins Llm_Tensor:$lhs, Llm_Tensor:$rhs);
  let results = (outs Llm_Tensor:$output);
}

def Llm_CastOp : Llm_ElementwiseOpBase<"cast"> {
  let summary = "element type conversion of activations";
  let arguments = (ins Llm_Tensor:$input);
  let results = (outs Llm_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Llm_SplitHeadsOp : Llm_Op<"split_heads", [Llm_TokenWiseHeads, Llm_View]> {
  let summary = "[batch, seq, heads*head_dim] -> [batch, heads, seq, head_dim]";
  let description = [{
    In the ragged form, [tokens, heads*head_dim] -> [tokens, heads,
    head_dim]: a view of the same memory.
  }];
  let arguments = (ins Llm_Tensor:$input, I64Attr:$num_heads);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Llm_SplitQkvOp : Llm_Op<"split_qkv", [Llm_TokenWise]> {
  let summary = "split a packed [batch, seq, (heads + 2*kv_heads)*head_dim] projection";
  let description = [{
    The fused QKV projection some exporters write (onnxruntime-genai's
    packed GroupQueryAttention input): q, then k, then v along the last dim.
  }];
  let arguments = (ins Llm_Tensor:$input, I64Attr:$num_heads, I64Attr:$num_kv_heads);
  let results = (outs Llm_Tensor:$query, Llm_Tensor:$key, Llm_Tensor:$value);
  let hasVerifier = 1;
}

def Llm_MergeHeadsOp : Llm_Op<"merge_heads", [Llm_TokenWise, Llm_View]> {
  let summary = "[batch, heads, seq, head_dim] -> [batch, seq, heads*head_dim]";
  let description = [{
    In the ragged form, [tokens, heads, head_dim] -> [tokens,
    heads*head_dim]: a view of the same memory.
  }];
  let arguments = (ins Llm_Tensor:$input);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_ConcatHeadsOp : Llm_Op<"concat_heads", [Llm_TokenWiseHeads]> {
  let summary = "each head's features of `lhs`, then of `rhs`";
  let description = [{
    lhs [batch, heads, seq, d1] and rhs [batch, heads, seq, d2] give
    [batch, heads, seq, d1 + d2]; an rhs of one head is every head's
    (multi-head latent attention's rotary key, one for all the heads:
    DeepSeek-V2 and V3). In the ragged form the operands are [tokens,
    heads, d].
  }];
  let arguments = (ins Llm_Tensor:$lhs, Llm_Tensor:$rhs);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_HeadLinearOp : Llm_Op<"head_linear", [Llm_TokenWiseHeads]> {
  let summary = "each head's features times that head's own weight";
  let description = [{
    input [batch, heads, seq, in] and weight [heads, in, out] give
    [batch, heads, seq, out]: head h's row x becomes x * weight[h]. In the
    ragged form the input and result are [tokens, heads, d]. Multi-head
    latent attention attends over its latent through two of these
    (`llm-absorb-latent-attention`): the query's features without rotation
    through each head's key up-projection, transposed, and the latent
    attention's output through each head's value up-projection.
  }];
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$weight);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_PositionIdsOp : Llm_Op<"position_ids"> {
  let summary = "positions of the new tokens: cumsum(attention_mask) - 1, last `seq` columns";
  let description = [{
    For models that do not take position_ids (onnxruntime-genai's GQA
    models), the positions the exporter derives inside the graph.
    `like` gives the [batch, seq] shape of the new tokens.
  }];
  let arguments = (ins Llm_Tensor:$attention_mask, Llm_Tensor:$like);
  let results = (outs Llm_Tensor:$output);
}

def Llm_CachePositionsOp : Llm_Op<"cache_positions"> {
  let summary = "[1, seq] cache positions of the new tokens: past, ..., past + seq - 1";
  let description = [{
    What transformers rotates by when an export takes no position_ids
    (`cache_position`, Gemma): past = attention_mask's length - seq, and
    `like` gives the [batch, seq] shape of the new tokens. Raising writes it
    for an onnx.Range proven to compute this on probe inputs;
    `llm-kv-cache-paging` gives rope the step's positions instead, which are
    the same for a sequence without padding.
  }];
  let arguments = (ins Llm_Tensor:$attention_mask, Llm_Tensor:$like);
  let results = (outs Llm_Tensor:$output);
}

def Llm_RopeOp : Llm_Op<"rope", [Llm_TokenWiseHeads]> {
  let summary = "rotary embedding with angles position * inv_freq";
  let description = [{
    input is [batch, heads, seq, head_dim] and positions [batch, seq], or
    [tokens, heads, head_dim] and [tokens] in the ragged form; inv_freq is
    [rotary_dim/2]. The first rotary_dim features are rotated in
    halves (rotate_half, as Hugging Face does) or in interleaved pairs.
    With `scale` s, cos and sin are s cos and s sin (transformers'
    attention_scaling of YaRN and LongRoPE), so the output is s times the
    rotation.
  }];
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$positions, Llm_Tensor:$inv_freq,
                   UnitAttr:$interleaved, OptionalAttr<F32Attr>:$scale);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_RopeCachedOp : Llm_Op<"rope_cached", [Llm_TokenWiseHeads]> {
  let summary = "rotary embedding with precomputed cos/sin tables";
  let description = [{
    As `llm.rope`, with cos_cache/sin_cache of [max_positions, rotary_dim/2]
    indexed by position (the half-width caches ONNX's RotaryEmbedding ops
    take; full-width Hugging Face caches are halved when raised).
  }];
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$positions,
                   Llm_Tensor:$cos_cache, Llm_Tensor:$sin_cache, UnitAttr:$interleaved);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_KvConcatOp : Llm_Op<"kv_concat"> {
  let summary = "append new keys or values to the past cache along the sequence";
  let description = [{
    past [batch, kv_heads, past_len, head_dim] and new [batch, kv_heads,
    seq, head_dim] give present [batch, kv_heads, past_len + seq, head_dim].
    `llm-kv-cache-paging` replaces it with writes into the paged pool.
  }];
  let arguments = (ins Llm_Tensor:$past, Llm_Tensor:$current);
  let results = (outs Llm_Tensor:$present);
  let hasVerifier = 1;
}

def Llm_RepeatKvOp : Llm_Op<"repeat_kv"> {
  let summary = "repeat each KV head `repeats` times (what GQA exports widen K/V with)";
  let arguments = (ins Llm_Tensor:$input, I64Attr:$repeats);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_AttentionOp : Llm_Op<"attention"> {
  let summary = "softmax(q k^T * scale + masks) v, grouped-query";
  let description = [{
    q is [batch, heads, seq, head_dim]; k and v are [batch, kv_heads,
    total_len, head_dim] with heads a multiple of kv_heads (query head h
    reads KV head h / (heads / kv_heads)). The new tokens are the last `seq`
    of the total_len positions. Masks are attributes: `causal` hides later
    positions; a present `attention_mask` operand ([batch, total_len], 0 =
    padding) hides padded keys. With `sliding_window` W, the query at
    position p sees only keys at positions above p - W (Mistral, Gemma-2/3's
    local layers). With `softcap` c, a score s becomes c * tanh(s / c)
    before the softmax (Gemma-2). With `sinks` (one logit per query head,
    gpt-oss's attention sinks), head h's softmax also takes sinks[h] as one
    more score that no mask hides and no scale or softcap changes, and the
    weight it gets is dropped: the key weights sum to less than 1. With
    `alibi_slopes` (one per query head: attention with linear biases, BLOOM's
    and MPT's), head h's score of the key at position j for the query at
    position p gains alibi_slopes[h] * (j - p), after the scale and softcap:
    a bias that grows with the distance and needs no position embedding.
    Only differences of positions count (a softmax ignores a row's shift), so
    a key's position is its index among the sequence's cached tokens.
  }];
  let arguments = (ins Llm_Tensor:$query, Llm_Tensor:$key, Llm_Tensor:$value,
                   Llm_OptTensor:$attention_mask, F32Attr:$scale, UnitAttr:$causal,
                   OptionalAttr<I64Attr>:$sliding_window, OptionalAttr<F32Attr>:$softcap,
                   OptionalAttr<DenseF32ArrayAttr>:$sinks,
                   OptionalAttr<DenseF32ArrayAttr>:$alibi_slopes);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The paged KV cache and the step ABI (after llm-kv-cache-paging)
//===----------------------------------------------------------------------===//

def Llm_PagedKvWriteOp : Llm_Op<"paged_kv_write"> {
  let summary = "write a layer's new keys and values into the paged KV pool";
  let description = [{
    `kv_pool` is [layers, num_blocks, 2, kv_heads, block_size, head_dim]
    (index 0 of the third dim holds keys, 1 values). key and value are
    [batch, kv_heads, seq, head_dim] with slot_mapping [batch, seq], or
    [tokens, kv_heads, head_dim] with slot_mapping [tokens] when ragged.
    Values may be narrower than the keys (multi-head latent attention):
    they fill the first features of their rows, the rest never read.

    A pool whose third dim is 1 caches one row per token: the keys, whose
    first features are the values (multi-head latent attention over its
    latent, FlashMLA's layout: the latent then the rotary key). Its write
    takes no value; llm.paged_attention reads each value as the first
    head_dim of its result features of the key's row.
    Token t goes to block slot / block_size, offset slot % block_size of
    layer `layer`; a negative slot is skipped. The result is the pool after
    the write: threading it through the layers orders writes before the
    attention that reads them.

    An i8 pool is the int8 KV cache: its last dim is head_dim + 4, each
    cached row holding head_dim codes and then, in its last 4 bytes, the
    row's f32 scale (little-endian). A row x is written as
    scale = max|x| / 127 and codes round_half_even(x / scale) (all 0 for a
    row of zeros), and read back as code * scale: one scale per token and
    KV head, so that writing a token never rescales what is cached.

    How the rows of one block's [block_size, row] tile (one layer, K or V,
    KV head) lie in its bytes is the target lowering's choice, as long as
    its write and its attention agree: the runtime only moves whole blocks.
    The CPU target transposes the keys ([head_dim, block_size], then for
    int8 the block_size scales).

    With `kv_group` g (llm-kv-cache-groups), layers of different attention
    windows own their blocks apart: the pool's first dim holds the slots
    of one group's layers and `layer` is this layer's slot; slot_mapping
    is [groups * tokens], group g's slots at rows [g * tokens, (g + 1) *
    tokens).
  }];
  let arguments = (ins Llm_Tensor:$kv_pool, Llm_Tensor:$key, Llm_OptTensor:$value,
                   Llm_Tensor:$slot_mapping, I64Attr:$layer,
                   OptionalAttr<I64Attr>:$kv_group);
  let results = (outs Llm_Tensor:$updated_pool);
  let hasVerifier = 1;
}

def Llm_PagedAttentionOp : Llm_Op<"paged_attention", [Llm_TokenWiseHeads]> {
  let summary = "causal grouped-query attention over the paged KV pool";
  let description = [{
    Keys and values of layer `layer` come from `kv_pool` through each
    sequence's row of `block_tables` [seqs, max_blocks]; `context_lens`
    [seqs] counts the positions cached for a sequence, this step's
    included. The query is [batch, heads, seq, head_dim] (seqs = batch,
    each row `seq` new tokens), or [tokens, heads, head_dim] with
    `cu_seqlens_q` [seqs + 1] marking each sequence's rows when ragged.
    Query row i of a sequence with q_len new tokens sits at position
    context_len - q_len + i and sees positions 0..that one: causality is
    implied, no mask is ever built. Query head h reads KV head
    h / (heads / kv_heads). `sliding_window`, `softcap`, `sinks` and
    `alibi_slopes` are llm.attention's: only the blocks that hold the
    window's keys are read. The result's head_dim is the values': the
    query's, or narrower (multi-head latent attention); from a pool of one
    row per token, each value is that many first features of its key.
    With `kv_group` g (llm-kv-cache-groups), `layer` is the layer's slot in
    the pool and block_tables is [groups * seqs, max_blocks], group g's
    rows at [g * seqs, (g + 1) * seqs).
  }];
  let arguments = (ins Llm_Tensor:$query, Llm_Tensor:$kv_pool, Llm_Tensor:$block_tables,
                   Llm_Tensor:$context_lens, Llm_OptTensor:$cu_seqlens_q,
                   I64Attr:$layer, F32Attr:$scale, OptionalAttr<I64Attr>:$sliding_window,
                   OptionalAttr<F32Attr>:$softcap, OptionalAttr<DenseF32ArrayAttr>:$sinks,
                   OptionalAttr<DenseF32ArrayAttr>:$alibi_slopes,
                   OptionalAttr<I64Attr>:$kv_group);
  let results = (outs Llm_Tensor:$output);
  let hasVerifier = 1;
}

def Llm_GatherRowsOp : Llm_Op<"gather_rows"> {
  let summary = "rows of a [tokens, features] tensor at the given indices";
  let description = [{
    The ragged step computes logits only for the rows the runtime asks for
    (`logits_indices`, usually each sequence's last token).
  }];
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$indices);
  let results = (outs Llm_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Fused ops (made by the llm-fuse-* passes on the ragged step)
//
// Each replaces a chain of the ops above with one that a backend runs as one
// kernel. Their scalar bodies are regions of arith/math ops on f32 (or the
// element type), so that fusion passes, built-in or plugins, compose any
// elementwise function into them.
//===----------------------------------------------------------------------===//

def Llm_YieldOp : Op<Llm_Dialect, "yield",
    [Pure, Terminator, ReturnLike, ParentOneOf<["ElementwiseOp", "FusedLinearOp", "LogitsOp"]>]> {
  let summary = "the scalar result of an elementwise body";
  let arguments = (ins AnyType:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

def Llm_ElementwiseOp : Llm_ElementwiseOpBase<"elementwise", [SingleBlock, IsolatedFromAbove]> {
  let summary = "a scalar function applied to every element: one kernel for a chain";
  let description = [{
    `output[r, c] = body(inputs[0][r, c], inputs[1][r, c], ...)`. Each input
    has the result's shape, or is [features] (the same for every row), or has
    the result's shape with one column (one value per row: a gate's scalar
    scaling a row), or is rank 0 (one value). The body has one scalar
    argument per input (its element type) and yields the result's element
    type; it holds only side-effect-free scalar ops (arith, math).

    Raising turns elementwise onnx ops it has no name for into this op;
    `llm-fuse-elementwise` merges chains of them (and the named activations)
    into one.
  }];
  let arguments = (ins Variadic<Llm_Tensor>:$inputs);
  let results = (outs Llm_Tensor:$output);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, results) $body";
  let hasVerifier = 1;
}

def Llm_FusedLinearOp : Llm_Op<"fused_linear",
    [Llm_RowWise, Llm_TokenWise, SingleBlock, IsolatedFromAbove, AttrSizedOperandSegments]> {
  let summary = "x * W + bias with an elementwise epilogue, in one GEMM kernel";
  let description = [{
    The weight is [in, n] (or [n, in] with `transpose_weight`); `bias` is
    [n] or absent. For every row r and product column j,
    `acc[r, j] = sum_i x[r, i] * W[i, j] + bias[j]`; the epilogue turns the
    accumulators into the result without storing them:

    - plain: the result has n columns, `out[r, c] = epilogue(acc[r, c],
      extras...)`;
    - `gated`: the weight holds a gate and an up projection side by side
      (n = 2 * m), the result has m columns, and
      `out[r, c] = epilogue(acc[r, c], acc[r, m + c], extras...)`: SwiGLU,
      GeGLU and the like with the [rows, 2m] product never in memory.

    Each extra operand is [rows, columns of the result] (a residual) or
    [columns] and passes one scalar to the epilogue after the accumulators.
  }];
  let arguments = (ins Llm_Tensor:$input, Llm_Tensor:$weight, Llm_OptTensor:$bias,
                   Variadic<Llm_Tensor>:$extras, UnitAttr:$transpose_weight,
                   UnitAttr:$gated);
  let results = (outs Llm_Tensor:$output);
  let regions = (region SizedRegion<1>:$epilogue);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `)`)? (`extras` `(` $extras^ `)`)? attr-dict `:`
    functional-type(operands, results) $epilogue
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Columns of the product (n): twice the result's when gated.
    int64_t getProductColumns();
    /// How many accumulators the epilogue receives: 2 when gated, else 1.
    unsigned getNumAccumulators() { return getGated() ? 2 : 1; }
  }];
}

def Llm_SplitOp : Llm_Op<"split", [Llm_TokenWise, Llm_View]> {
  let summary = "column ranges of the last dim: the outputs of a horizontally fused linear";
  let description = [{
    Result i holds `sizes[i]` consecutive features of the input's last dim,
    in order. Backends view the input's memory; nothing is copied.
  }];
  let arguments = (ins Llm_Tensor:$input, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Llm_Tensor>:$outputs);
  let hasVerifier = 1;
}

def Llm_AddRmsNormOp : Llm_Op<"add_rms_norm", [Llm_RowWise, Llm_TokenWise]> {
  let summary = "residual add then RMSNorm: returns the sum and its norm";
  let description = [{
    `sum = lhs + rhs` and `normed = rms_norm(sum, weight, epsilon)` in one
    pass over the rows: the residual stream is read once and both results
    are written (the sum is the next residual).
  }];
  let arguments = (ins Llm_Tensor:$lhs, Llm_Tensor:$rhs, Llm_Tensor:$weight, F32Attr:$epsilon);
  let results = (outs Llm_Tensor:$sum, Llm_Tensor:$normed);
  let hasVerifier = 1;
}

def Llm_AddLayerNormOp : Llm_Op<"add_layer_norm", [Llm_RowWise, Llm_TokenWise]> {
  let summary = "residual add then LayerNorm: returns the sum and its norm";
  let arguments = (ins Llm_Tensor:$lhs, Llm_Tensor:$rhs, Llm_Tensor:$weight,
                   Llm_OptTensor:$bias, F32Attr:$epsilon);
  let results = (outs Llm_Tensor:$sum, Llm_Tensor:$normed);
  let hasVerifier = 1;
}

def Llm_RopePagedKvWriteOp : Llm_Op<"rope_paged_kv_write", [AttrSizedOperandSegments]> {
  let summary = "rotate q and k, and write k and v into the paged pool, in one kernel";
  let description = [{
    The ragged form only: query [tokens, heads, head_dim], key and value
    [tokens, kv_heads, head_dim], slot_mapping and positions [tokens]. The
    rotation is `llm.rope`'s (with `inv_freq`) or `llm.rope_cached`'s (with
    `cos_cache` and `sin_cache`); exactly one of the two forms is given.
    Returns the rotated query and the pool after writing the rotated keys
    and the values of layer `layer` (as `llm.paged_kv_write`): the rotated
    keys never exist outside the cache. `kv_group` is llm.paged_kv_write's.
  }];
  let arguments = (ins Llm_Tensor:$kv_pool, Llm_Tensor:$query, Llm_Tensor:$key,
                   Llm_Tensor:$value, Llm_Tensor:$slot_mapping, Llm_Tensor:$positions,
                   Llm_OptTensor:$inv_freq, Llm_OptTensor:$cos_cache, Llm_OptTensor:$sin_cache,
                   I64Attr:$layer, UnitAttr:$interleaved, OptionalAttr<I64Attr>:$kv_group);
  let results = (outs Llm_Tensor:$rotated_query, Llm_Tensor:$updated_pool);
  let assemblyFormat = [{
    $kv_pool `,` $query `,` $key `,` $value `,` $slot_mapping `,` $positions
    (`inv_freq` `(` $inv_freq^ `)`)? (`cos_sin` `(` $cos_cache^ `,` $sin_cache `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // LLMC_DIALECT_LLM_OPS
