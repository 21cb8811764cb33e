//===- Passes.td - Raising passes --------------------------*- tablegen -*-===//
//
// Raising: the op patterns exporters write (onnx) to llm ops.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_PASSES_RAISING_PASSES
#define LLMC_PASSES_RAISING_PASSES

include "mlir/Pass/PassBase.td"

def RaiseOnnxToLlmPass : Pass<"raise-onnx-to-llm", "mlir::func::FuncOp"> {
  let summary = "Replace the op patterns that LLM exports write with llm ops";
  let description = [{
    Recognises, in the decomposed form torch.onnx writes and in the fused
    forms of onnxruntime and opset 23:

    - embedding (Gather of a weight table by token ids, GatherBlockQuantized);
    - rms_norm (Pow/ReduceMean/Add/Sqrt/Div or Reciprocal/Mul, with Casts;
      RMSNormalization, SimplifiedLayerNormalization, and
      SkipSimplifiedLayerNormalization with its residual add) and layer_norm;
    - linear (MatMul by a weight, + bias; MatMulNBits via llm.dequantize) and
      the logits head (the linear that produces the graph's `logits`);
      layers computed on flattened tokens [batch*seq, features] (Gemm,
      activations, norms, adds between a Reshape to [-1, n] and one back, as
      GPT-2 and OPT write them) moved onto [batch, seq, features], the
      reshapes gone once the dims are proven the tokens';
    - split_heads / merge_heads (the Reshape+Transpose around attention);
      a projection laid out head by head and sliced per head (GPT-NeoX's
      query_key_value: each head's q, k and v side by side) gets its
      constant weight and bias columns reordered part by part, then an
      llm.split and a split_heads per part; a projection viewed as heads
      whose runs of heads are sliced or gathered (Falcon's query heads, key
      head and value head) is split by those runs of columns; one
      unsqueezed at axis 1 and split along its features (GPT-BigCode's
      multi-query c_attn) is split as a linear, each part a head; one viewed
      as groups of heads and split within each group (CodeGen's qkv_proj) is
      reordered part by part like GPT-NeoX's;
    - rope (rotate_half Slice/Neg/Concat/Mul/Add with cos/sin computed from
      inv_freq and position_ids, or gathered from caches; the same rotation
      on x's halves with half-width cos/sin, as gpt-oss writes it;
      rotate_every_two over interleaved pairs, cos/sin repeated pairwise:
      on [b, s, heads, head_dim] before the heads' transpose from columns
      of a constant table read at the positions (GPT-J, CodeGen), or on
      [b, heads, s, head_dim] from computed half-width tables or angles
      (Helium, GLM, Cohere);
      RotaryEmbedding);
    - moe (a sparse mixture of experts as optimum writes Qwen3-MoE: the
      loop over every expert unrolled, TopK routing, NonZero/ScatterElements
      per expert, each projection a MatMul or a MatMulNBits), raised whole
      before the other patterns, its router an llm.linear and each
      projection's experts stacked [experts, out, in] (packed codes under
      one llm.dequantize); a block that fails a check keeps its ops and gets
      `llmc.moe_unmatched = "why"` on its output, which the error quotes;
      and gpt-oss's dense form (every expert on every token over weights
      stacked by expert, with biases and a clamped swiglu over interleaved
      gate/up columns, weighted by a scatter of the router's top-k softmax),
      whose columns are split and biases kept: llm.moe with gate_bias,
      up_bias, down_bias and swiglu_limit/swiglu_alpha; and onnxruntime's
      MoE op (the genai builder's gpt-oss: fc1's interleaved gate and up
      rows split, its swiglu attributes kept where llm.moe computes them,
      refused by name where not);
    - kv_concat (Concat(past, new) on the sequence axis) and repeat_kv
      (Unsqueeze/Expand/Reshape);
    - attention (MatMul/scale/mask/Softmax/MatMul, with or without the
      Where(IsNaN) guard after the softmax; with a column of per-head sink
      logits concatenated before the softmax and sliced off after it,
      gpt-oss's attention sinks, the `sinks` attribute; Attention,
      GroupQueryAttention); attention multiplied over [batch * heads]
      batches (BLOOM's baddbmm and bmm) is viewed as [batch, heads] first,
      each Reshape back to heads pushed through the elementwise ops to the
      products, scores selected against a constant that hides a key
      (GPT-Neo's Where(causal, scores, finfo.min)) become scores plus a
      mask, and the terms added to the scores are gathered into one mask.
      Before any other pattern runs, every attention mask is proven, not matched:
      the function is cloned with inputs of concrete shapes and contents
      (several batch sizes, past and new lengths, left and right padding,
      and a past longer than any constant of the mask, filling a constant
      table of positions the mask reads), the mask evaluated
      on each probe (onnx::HostEvaluator) and compared with causal, padding
      and sliding-window masks; what it adds to the keys it leaves visible
      must be a linear bias per head, slope * the key's position up to a
      constant of the row (ALiBi: BLOOM's, MPT's), or nothing. The consumer
      gets `llmc.mask = {causal, padding, sliding_window = N, alibi_slopes =
      [...]}` or `llmc.mask_unproven = "why"`; attention is raised with the
      causal attribute, the attention_mask operand and the slopes, and an
      unproven mask is named in the error;
    - a sequence classifier's pooling (transformers'
      `*ForSequenceClassification`, optimum's --task text-classification: the
      score head on every token, then a Gather of the rows at each batch
      row's last token that is not the pad token, over the head's result
      flattened to [batch * seq, labels]), proven like the masks: on every
      probe, whose token ids are never the pad token, the gather's indices
      must be b * seq + seq - 1. Then the function returns the head's
      [batch, seq, labels] under the same name, the head raises as the
      logits head, and the function gets `llmc.pooled_at_last_token`; a
      gather that picks other rows stays, and is named;
    - a sentence-transformers embedding's pooling (optimum's export of a
      model with modules.json: the token embeddings times the expanded
      attention mask, a GatherElements at indices computed from the mask,
      then Normalize's division by the L2 norm: `sentence_embedding`),
      proven on the probes' unpadded rows to gather each row's last token
      (`llmc.last_token_rows`) through a mask of ones
      (`llmc.ones_on_real_rows`). Then the function returns the token
      embeddings once, as `last_hidden_state`: the runtime pools the last
      token and normalises, as vLLM serves such a model. Other pooling
      (mean, CLS) is refused by name;
    - a learned position embedding (a Gather of a constant table added to
      the token embedding) whose ids the export computes in the graph
      (GPT-2's and OPT's classifiers take no position_ids), proven on the
      probes' unpadded rows to be the new tokens' positions, up to the
      offset the embedding peels: it reads `llm.position_ids` instead;
    - silu, gelu, swiglu and residual adds;
    - last, elementwise ops on [batch, seq, features] f32 activations that
      no pattern named (Sigmoid, Tanh, Relu, Mul by a constant, ...):
      `llm.elementwise` with the op's scalar arithmetic, for
      `llm-fuse-elementwise` to fuse;
    - and at the end constants: onnx.Constant becomes llm.constant, and the
      onnx.None placeholders go (absent optional operands of llm ops are
      simply absent).

    Patterns explain a failed match with notifyMatchFailure, printed under
    `-debug-only=raise-onnx-to-llm`. After raising, ops of the onnx dialect
    that remain are reported by name, with the feature they were part of
    where it is one llmc does not compute (fused attention and MatMulNBits
    attributes, a mixture of experts' failed check, an interleaved rotary
    whose tables are not recognised, ALiBi not proven linear, attention
    masked by selecting its scores against a constant that does not hide a
    key, an unproven mask); with `allow-leftovers=false` (the
    default) that is an error.
  }];
  let options = [
    Option<"allowLeftovers", "allow-leftovers", "bool", /*default=*/"false",
           "Keep onnx ops that no pattern raised instead of failing">,
  ];
  let dependentDialects = ["::llmc::onnx::OnnxDialect", "::llmc::llm::LlmDialect"];
}

#endif // LLMC_PASSES_RAISING_PASSES
