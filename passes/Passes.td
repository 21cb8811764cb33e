//===- Passes.td - llmc's compiler passes ------------------*- tablegen -*-===//
//
// Every pass of the llmc pipeline, grouped by stage. Pipelines.cpp composes
// them; llmc-opt registers them all for lit tests.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_PASSES
#define LLMC_PASSES

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Import clean-up (onnx dialect)
//===----------------------------------------------------------------------===//

def OnnxShapeInferencePass : Pass<"onnx-shape-inference", "mlir::func::FuncOp"> {
  let summary = "Infer result shapes and fold shape subgraphs in the onnx dialect";
  let description = [{
    Alternates two steps until neither changes anything:

    - folding: constant shape subgraphs (Shape -> Gather -> Unsqueeze ->
      Concat chains whose dims are static, Range, ConstantOfShape, integer
      arithmetic on shape values) become constants, an `If` on a constant
      condition becomes its branch, and dead ops are erased;
    - shape inference: every op recomputes its result types from its
      operands, including partially known shape operands (a Reshape whose
      target is Concat(Gather(Shape(x), 0), [9], [64]) gets [?, 9, 64]).

    Finally the function signature is updated to the refined result types.
    Weights are never folded.
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "unsigned", /*default=*/"16",
           "Give up after this many fold/infer rounds">,
  ];
  let dependentDialects = ["::llmc::onnx::OnnxDialect"];
}

//===----------------------------------------------------------------------===//
// Raising (onnx -> llm)
//===----------------------------------------------------------------------===//

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
    - split_heads / merge_heads (the Reshape+Transpose around attention);
    - rope (rotate_half Slice/Neg/Concat/Mul/Add with cos/sin computed from
      inv_freq and position_ids, or gathered from caches; RotaryEmbedding);
    - kv_concat (Concat(past, new) on the sequence axis) and repeat_kv
      (Unsqueeze/Expand/Reshape);
    - attention (MatMul/scale/mask/Softmax/MatMul, Attention,
      GroupQueryAttention), with the causal and padding mask subgraphs
      turned into attributes;
    - silu, gelu, swiglu and residual adds;
    - last, elementwise ops on [batch, seq, features] f32 activations that
      no pattern named (Sigmoid, Tanh, Relu, Mul by a constant, ...):
      `llm.elementwise` with the op's scalar arithmetic, for
      `llm-fuse-elementwise` to fuse.

    Patterns explain a failed match with notifyMatchFailure, printed under
    `-debug-only=raise-onnx-to-llm`. After raising, ops of the onnx dialect
    that remain are reported by name; with `allow-leftovers=false` (the
    default) that is an error.
  }];
  let options = [
    Option<"allowLeftovers", "allow-leftovers", "bool", /*default=*/"false",
           "Keep onnx ops that no pattern raised instead of failing">,
  ];
  let dependentDialects = ["::llmc::onnx::OnnxDialect", "::llmc::llm::LlmDialect"];
}

//===----------------------------------------------------------------------===//
// Serving form (llm dialect): the step ABI of DESIGN.md section 2
//===----------------------------------------------------------------------===//

def LlmGqaRewritePass : Pass<"llm-gqa-rewrite", "mlir::func::FuncOp"> {
  let summary = "Attend over the KV heads themselves instead of their repeated copies";
  let description = [{
    Exports of grouped-query attention widen K and V to the query's head
    count (repeat_kv: Unsqueeze/Expand/Reshape, Tile) before a plain
    attention. `llm.attention` is grouped-query itself, so this pass feeds it
    the KV heads directly and the widened tensors disappear: MHA (one query
    head per KV head), GQA and MQA (one KV head) are the same op with
    different head counts. Attention that reads only one of K and V through
    repeat_kv, or the two with different repeats, is left alone.
  }];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmKvCachePagingPass : Pass<"llm-kv-cache-paging", "mlir::func::FuncOp"> {
  let summary = "Replace the dense KV cache with writes to and attention over a paged pool";
  let description = [{
    Rewrites the model function into the paged form of the step ABI:

    - every `llm.attention` (with or without a cache: past inputs joined by
      `llm.kv_concat`, or K/V of the current tokens only) becomes
      `llm.paged_kv_write` of the new keys and values at `slot_mapping`,
      then `llm.paged_attention` over the pool through `block_tables` and
      `context_lens`; layers are numbered in program order;
    - the past_key_values inputs and present outputs disappear, and one
      `kv_pool` input [layers, num_blocks, 2, kv_heads, block_size,
      head_dim] takes their place;
    - the token ids and positions become i32 inputs (positions derived
      inside the graph from attention_mask are replaced by them), and
      attention_mask goes: padding is what context_lens leaves out.

    The function then takes (input_ids, positions, context_lens,
    block_tables, slot_mapping, kv_pool) as [batch, seq]-shaped tensors and
    returns the logits; `llm-ragged-batching` makes it ragged. The pass
    fails, naming the op, when attention is not causal, when an input it
    removes is still read by something else, or when the function returns
    anything but the logits and the present K/V.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"16",
           "Tokens per KV block">,
  ];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmRaggedBatchingPass : Pass<"llm-ragged-batching", "mlir::func::FuncOp"> {
  let summary = "Turn [batch, seq] tensors into [tokens] tensors with cu_seqlens (no padding)";
  let description = [{
    Runs on the paged form `llm-kv-cache-paging` produces. Every
    [batch, seq, ...] activation becomes [tokens, ...], so that sequences of
    different lengths (prefill chunks and decode tokens alike) share a step
    without padding; heads become [tokens, heads, head_dim].
    `llm.paged_attention` receives `cu_seqlens_q` [seqs + 1] to find each
    sequence's rows, and keeps causality implicit. Only the rows named by
    the new `logits_indices` input reach the logits head (`llm.gather_rows`),
    so the result is [seqs, vocab]. The signature becomes exactly the step
    ABI: (tokens, positions, cu_seqlens_q, context_lens, block_tables,
    slot_mapping, logits_indices, kv_pool) -> logits. An op that is not
    token-wise (it mixes tokens, like a leftover onnx op) makes the pass
    fail with its name.
  }];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

def LlmPlanMemoryPass : Pass<"llm-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Place every activation of the step in one workspace, reusing memory by liveness";
  let description = [{
    Runs on the ragged step. Each op result that needs memory gets a byte
    offset into a single workspace (`llmc.workspace_offsets` on the op, one
    entry per result, -1 where the result needs none), sized for the worst
    step: `max-num-batched-tokens` rows for per-token values and
    `max-num-seqs` rows for the gathered logits rows. Buffers whose live
    ranges (definition to last use, views included) do not overlap share
    memory; offsets are 64-byte aligned. Views (`llm.split_heads`,
    `llm.merge_heads` in the ragged form) share their input's buffer,
    weights and the KV pool need none, and the logits go straight to the
    step's output. The function gets `llmc.workspace_bytes`,
    `llmc.max_num_batched_tokens` and `llmc.max_num_seqs`.
  }];
  let options = [
    Option<"maxNumBatchedTokens", "max-num-batched-tokens", "int64_t", /*default=*/"2048",
           "Most tokens (prefill and decode together) one step may carry">,
    Option<"maxNumSeqs", "max-num-seqs", "int64_t", /*default=*/"256",
           "Most sequences one step may carry">,
  ];
}

def LlmLowerToCpuPass : Pass<"llm-lower-to-cpu", "mlir::ModuleOp"> {
  let summary = "Generate the CPU step function and its kernels from the planned llm step";
  let description = [{
    Replaces the ragged, planned llm step with `llmc_step`, the function of
    the step ABI (include/llmc/Runtime/StepABI.h) on memrefs, and one
    private kernel function per distinct op and shape, built from scf loops
    on memrefs: embedding, norms, rope, elementwise activations, the paged
    KV write, paged attention (online softmax over the sequence's KV blocks,
    O(1) extra memory per query row) and row gathers. Activations are views
    of the workspace at the planned offsets; weights are views of the
    weights buffer at offsets recorded in the `llmc.weights` module
    attribute (the artifact writer lays weights.bin out from it). Weights
    that `llm.dequantize` unpacks are dequantized here, at compile time.

    Matrix products use the `matmul` strategy: `generated` (the default)
    emits register-tiled vector loops (4 rows x 4 columns of outputs share
    each load) that read each weight row once per call and sum every
    output in the same order whatever the number of rows, so that a
    sequence's logits do not depend on the rest of the batch; `blas` calls
    the runtime's sgemm through the host API table (OpenBLAS), faster for
    long prefills but not batch-invariant (bench/RESULTS.md).
    Only f32 models are lowered; other element types are refused by name.
  }];
  let options = [
    Option<"matmul", "matmul", "std::string", /*default=*/"\"generated\"",
           "How matrix products run: generated (loops) or blas (the runtime's sgemm)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
                           "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect"];
}

def LlmLowerToCudaPass : Pass<"llm-lower-to-cuda", "mlir::ModuleOp"> {
  let summary = "Generate GPU kernels and the CUDA step plan from the planned llm step";
  let description = [{
    Lowers the ragged, planned llm step for an NVIDIA GPU (docs/cuda.md).
    Each op becomes one of:

    - a `gpu.func` kernel in `gpu.module @llmc_kernels` (targeting
      `#nvvm.target` of `arch`), built from scf, arith, math and memref ops:
      embedding, row gathers, norms and add+norms (one block per row, the
      sums through `gpu.all_reduce`), rope, the paged KV write and
      rope+KV write, split q/k/v, and every elementwise op (its scalar body
      from `ScalarFunctionOpInterface`, one thread per element);
    - a cuBLASLt GEMM step for `llm.linear`, `llm.fused_linear` and
      `llm.logits`: a bias rides on cuBLASLt's bias epilogue and a residual
      add on beta = 1; any other epilogue becomes a kernel from the op's
      epilogue region, reading the f32 product from scratch;
    - launches of the paged attention kernels, whose CUDA C++ source,
      specialised to the model, is left in the `llmc.cuda_attention_source`
      module attribute for the target to compile with NVRTC.

    The step itself becomes data: the `llmc.cuda_plan` module attribute
    lists the launches and GEMMs in order, with buffers as (buffer, byte
    offset) and row counts as symbols the runtime resolves per step.
    Activations, weights (`llmc.weights`, converted to `dtype` when written)
    and the KV pool are stored in `dtype`; kernels compute in f32; logits
    and rotary tables stay f32.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_80\"",
           "The GPU architecture, sm_XX">,
    Option<"dtype", "dtype", "std::string", /*default=*/"\"bf16\"",
           "The storage type of weights, activations and the KV cache: bf16 or f16">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
                           "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect"];
}

//===----------------------------------------------------------------------===//
// Fusion (ragged llm step): fewer kernels, fewer passes over memory per token.
// buildFusionPipeline (Pipelines.cpp) runs them in this order; -O1 runs the
// first three, -O2 all, -O3 all with llm-fuse-elementwise{recompute}.
//===----------------------------------------------------------------------===//

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

    Linears whose weight is not a constant (or an `llm.dequantize` of
    constants) are left alone, as are single linears.
  }];
  let options = [
    Option<"maxColumns", "max-columns", "int64_t", /*default=*/"65536",
           "Do not merge into a product wider than this many columns">,
  ];
  let dependentDialects = ["::llmc::llm::LlmDialect", "::llmc::onnx::OnnxDialect"];
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
    not rotated like the key, or whose rotated key has other users, are
    left alone.
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
  let dependentDialects = ["::llmc::llm::LlmDialect", "::llmc::onnx::OnnxDialect"];
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

//===----------------------------------------------------------------------===//
// Whole-graph lowering (onnx -> linalg), for graphs of fixed shapes
//===----------------------------------------------------------------------===//

def OnnxLowerToLinalgPass : Pass<"onnx-lower-to-linalg", "mlir::ModuleOp"> {
  let summary = "Lower onnx ops of static shapes to linalg, tensor, arith, math and scf";
  let description = [{
    Lowers every onnx op the importer reads to tensor-level upstream IR, op by
    op and with ONNX's semantics (numpy broadcasting, negative axes and
    indices, signed and unsigned integers, bool, f16/bf16/f32/f64):
    elementwise ops become broadcasting `linalg.generic`s; reductions,
    ArgMax, CumSum, Softmax and the normalisations become reduction
    generics; shape ops become `tensor` reshapes, slices and inserts or
    index-computing generics; MatMul, Gemm and DequantizeLinear become
    contraction generics; Attention and RotaryEmbedding are composed from
    the same pieces; If becomes `scf.if`. Function signatures lose ONNX's
    integer signedness (ui8 -> i8); the ops read it from their onnx
    operands.

    This is llmc's path for whole ONNX graphs of fixed shapes (the ONNX
    backend node tests run through it, `llmc compile --emit=graph`); LLM
    decoders take the llm-dialect path instead. Every result shape must be
    static after shape inference: the pass names the first op whose shape is
    not, and fails.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // LLMC_PASSES
