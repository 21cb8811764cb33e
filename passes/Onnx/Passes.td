//===- Passes.td - Onnx passes -----------------------------*- tablegen -*-===//
//
// Onnx dialect clean-up after import: half precision widened to f32, LongRoPE's
// length switch resolved, shapes inferred, shape subgraphs folded.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_PASSES_ONNX_PASSES
#define LLMC_PASSES_ONNX_PASSES

include "mlir/Pass/PassBase.td"

def OnnxShapeInferencePass : Pass<"onnx-shape-inference", "mlir::func::FuncOp"> {
  let summary = "Infer result shapes and fold shape subgraphs in the onnx dialect";
  let description = [{
    Alternates two steps until neither changes anything:

    - folding: constant shape subgraphs (Shape -> Gather -> Unsqueeze ->
      Concat chains whose dims are static, Range, ConstantOfShape, integer
      arithmetic on shape values) become constants, so does any op with an
      integer or bool result over constants alone, evaluated on the host
      (the Range, Less and NonZero index torch's repeat_interleave builds);
      a Reshape of a Reshape becomes one; an `If` on a constant
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

def OnnxPromoteToF32Pass : Pass<"onnx-promote-to-f32", "mlir::func::FuncOp"> {
  let summary = "Compute a model stored in f16 or bf16 in f32";
  let description = [{
    Half-precision exports (optimum's `--dtype fp16`, the genai builder's
    `-p fp16`) hold f16 weights and activations, with Casts to f32 and back
    around what the exporter computes in f32 (norms, rotary tables). The
    step computes in f32 whatever the model stores, as llama.cpp does with
    F16 weights on a CPU: every f16 and bf16 type in the function (its
    signature, op results, region arguments) becomes f32, every
    half-precision constant is widened once, exactly (weight blobs stay
    blobs), and a Cast or DequantizeLinear to a half type casts to f32
    instead, so the Casts between precisions become no-ops that fold. Raising
    then sees an f32 graph; the CUDA target narrows to its `--dtype` again
    when it places the weights. An f32 model is unchanged.
  }];
}

def OnnxSelectRopeTablesPass : Pass<"onnx-select-rope-tables", "mlir::func::FuncOp"> {
  let summary = "Resolve LongRoPE's switch between its short and long factors";
  let description = [{
    LongRoPE (Phi-3 and Phi-4 mini) rotates a sequence of at most
    original_max_position_embeddings, C, tokens with its short factors and a
    longer one with its long factors, at every position. Exporters compute
    the switch in the graph, as `Greater(length, C)`:

    - the genai builder: the length is the total sequence length, dim 1 of
      the graph input `attention_mask` (`Gather(Shape(attention_mask), 1)`),
      and the switch chooses with an `If` between two pairs of cos/sin
      tables: each use is an If whose branches yield constants and whose
      results are only the cos and sin tables of rotary embeddings
      (GroupQueryAttention, RotaryEmbedding, com.microsoft.RotaryEmbedding);
    - torch.onnx's dynamo exporter (transformers' LongRoPE): the length is
      the largest position plus one (`Add(ReduceMax(position_ids), 1)`, a
      scalar), and the switch chooses with a `Where` between two constant
      inverse frequencies, each used only in products (the angles) that only
      Cos and Sin read, directly or through a Concat.

    A paged step serves sequences of every length with one choice, so the
    switch is resolved once, for the longest sequence the compiled model
    serves (`max-positions`), as vLLM and llama.cpp resolve it:

    - unset: the short factors, exact up to C, and the function is marked to
      serve at most C positions (`llmc.max_positions`, which the target
      lowerings fold into the manifest's `max_positions`);
    - at most C: the short factors; no run reaches the switch;
    - more than C: the long factors, at every length. A sequence longer than
      C computes what onnxruntime computes on the same file; a shorter one
      rotates with the long factors where onnxruntime would use the short.

    optimum's export traced one side of the switch (the short factors, for
    its short inputs) and holds no switch: given the config's switch length
    (`traced-switch`, config.json's LongRoPE original_max_position_embeddings),
    a function with no switch in its graph is marked to serve at most that
    many positions. Given the config's factors too (`traced-short-factors`,
    `long-factors`) and a `max-positions` past the switch, it takes the long
    factors at every length instead, as for the other exporters: each traced
    inverse frequency, a constant of one value per factor whose values times
    the short factors are a decreasing geometric sequence (base^(-2i/d)) and
    that reaches only Cos and Sin (through Expand, Cast, Reshape, Unsqueeze,
    Squeeze, Transpose, Concat, Mul and MatMul), is divided by the long factor
    and multiplied by the short one. With no such constant the function stays
    bounded by the switch.

    The condition becomes a constant, and onnx-shape-inference folds the If
    or Where to the chosen side. Any other switch stays, for raising to
    refuse by name; why a candidate was left is printed under
    `-debug-only=onnx-select-rope-tables`.
  }];
  let options = [
    Option<"maxPositions", "max-positions", "int64_t", /*default=*/"0",
           "The longest sequence the compiled model serves (0: unset)">,
    Option<"tracedSwitch", "traced-switch", "int64_t", /*default=*/"0",
           "The config's LongRoPE switch length (0: none): a function with no "
           "switch in its graph traced one side and serves at most that many positions">,
    ListOption<"tracedShortFactors", "traced-short-factors", "double",
               "The config's LongRoPE short factors, one per rotated pair of features, "
               "which a function with no switch traced">,
    ListOption<"longFactors", "long-factors", "double",
               "The config's LongRoPE long factors, taken in place of the traced short "
               "ones when max-positions is past traced-switch">,
  ];
  let dependentDialects = ["::llmc::onnx::OnnxDialect"];
}

#endif // LLMC_PASSES_ONNX_PASSES
