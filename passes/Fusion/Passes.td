//===- Passes.td - Fusion passes ---------------------------*- tablegen -*-===//
//
// Fusion (ragged llm step): fewer kernels, fewer passes over memory per
// token. buildFusionPipeline (passes/Pipelines) runs them in this order; -O1
// runs the first three, -O2 all, -O3 all with llm-fuse-elementwise{recompute}.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_PASSES_FUSION_PASSES
#define LLMC_PASSES_FUSION_PASSES

include "mlir/Pass/PassBase.td"

def LlmFuseLogitsRowsPass : Pass<"llm-fuse-logits-rows", "mlir::func::FuncOp"> {
  let summary = "Compute the model's last row-wise ops only for the rows that get logits";
  let description = [{
    `llm-ragged-batching` gathers the rows the step needs (`logits_indices`)
    just before the logits head, so a prefill of T tokens still runs the
    final norm (and, in the last layer, everything after attention) on all
    T rows. This pass moves `llm.gather_rows` up through the ops that
    compute each row from the same row alone (norms, linear layers,
    elementwise ops and activations), so they run on one row per sequence.
    It stops at values with other users (a residual stream needed by later
    tokens' ops), at attention (which reads every token's keys) and at the
    step's inputs. Results are unchanged: each of those ops computes a row
    the same way whatever the other rows.
  }];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmFuseHorizontalLinearsPass : Pass<"llm-fuse-horizontal-linears", "mlir::func::FuncOp"> {
  let summary = "Merge linear layers that read the same input into one (Q/K/V, gate/up)";
  let description = [{
    Linear layers with the same input, constant weights of the same layout
    and element type, and the same bias presence (for example the Q, K and V
    projections, or the gate and up projections of a gated MLP) become one
    `llm.linear` whose weight (and bias) concatenates theirs along the
    output dim, followed by `llm.split` into the original results. The
    input is read once and one GEMM kernel runs instead of several; the
    split is a view. Each output column is computed as before, so results
    are bit-identical.

    Block-quantised weights stored [out, in] (`llm.dequantize` of constant
    codes, scales and zero points in whole bytes: MatMulNBits' form) join
    when their bits, block size, input features and operand types agree:
    their operands stack by rows under one `llm.dequantize`, so the joined
    layers stay packed and the gate and up halves can still form a gated
    epilogue.

    Linears whose weight is neither a constant nor such a dequantize are
    left alone, as are single linears and a mixture of experts' router (its
    logits rank the experts; a joined product may be stored narrower, as in
    bf16 on the CUDA target, and a rounding could swap two experts).
  }];
  let options = [
    Option<"maxColumns", "max-columns", "int64_t", /*default=*/"65536",
           "Do not merge into a product wider than this many columns">,
  ];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmFuseRopeKvWritePass : Pass<"llm-fuse-rope-kv-write", "mlir::func::FuncOp"> {
  let summary = "Rotate Q and K and write K/V into the paged pool in one kernel";
  let description = [{
    Matches `llm.paged_kv_write` of a rotated key (`llm.rope` or
    `llm.rope_cached` used only by the write) and the value, where the
    query of the same layer is rotated with the same positions and
    frequencies (or caches) and interleaving, and replaces the three ops
    with `llm.rope_paged_kv_write`: the rotated keys go straight into their
    cache slots and never exist as an activation. Layers whose query is
    not rotated like the key, whose rotated key has other users, or whose
    rope is scaled (`llm.rope`'s scale: YaRN, LongRoPE) are left alone.
  }];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmFuseAddNormPass : Pass<"llm-fuse-add-norm", "mlir::func::FuncOp"> {
  let summary = "Fuse a residual add with the norm that reads it";
  let description = [{
    `llm.rms_norm(llm.add(a, b))` becomes `llm.add_rms_norm(a, b)` (and
    likewise for `llm.layer_norm`), which writes both the sum (the next
    residual, for the add's other users) and the norm in one pass over the
    row. The sum is rounded to the element type before the norm reads it,
    as before fusion.
  }];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmFuseLinearEpiloguesPass : Pass<"llm-fuse-linear-epilogues", "mlir::func::FuncOp"> {
  let summary = "Fold bias, activations, SwiGLU and residual adds into the GEMM that feeds them";
  let description = [{
    Turns `llm.linear` into `llm.fused_linear`, whose epilogue applies, to
    each accumulator before it is stored:

    - the bias (always: a linear with a bias becomes fused);
    - `llm.silu` or `llm.gelu` of its result, when that is the only use;
    - `llm.swiglu(gate, up)` where gate and up are the two halves of one
      linear (after llm-fuse-horizontal-linears) or two linears of the same
      input: a gated GEMM that never stores the [rows, 2 * inter] product;
    - `llm.add(linear, residual)`: the residual read in the epilogue.

    The arithmetic per element is the unfused one, so results are
    bit-identical.
  }];
  let options = [
    Option<"gated", "gated", "bool", /*default=*/"true",
           "Form gated (SwiGLU) epilogues; off for the BLAS matmul, which "
           "writes the whole product">,
  ];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmFuseElementwisePass : Pass<"llm-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Fuse chains of elementwise ops into one kernel, and into GEMM epilogues";
  let description = [{
    The generic fusion, for what no named pattern knows (an unusual
    activation, a scaled residual): every elementwise op (`llm.elementwise`,
    and the named `llm.silu`, `llm.gelu`, `llm.swiglu`, `llm.add`,
    `llm.mul`, `llm.cast`) is expressed as an `llm.elementwise` scalar
    body, then

    - a producer used only by one elementwise consumer is inlined into the
      consumer's body (its inputs become the consumer's);
    - an elementwise op whose input is the result of an `llm.linear` or
      `llm.fused_linear` used only there, at the same element, becomes that
      GEMM's epilogue.

    With `recompute`, a producer with several elementwise users is inlined
    into each of them (its work is repeated, its result never stored).
    Named ops that nothing fuses with stay as they are.
  }];
  let options = [
    Option<"recompute", "recompute", "bool", /*default=*/"false",
           "Inline elementwise producers with several users into each of them">,
  ];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

#endif // LLMC_PASSES_FUSION_PASSES
