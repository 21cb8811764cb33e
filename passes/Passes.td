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
    - silu, gelu, swiglu and residual adds.

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

#endif // LLMC_PASSES
