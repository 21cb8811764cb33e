//===- Passes.td - Onnx passes -----------------------------*- tablegen -*-===//
//
// Onnx dialect clean-up after import: half precision widened to f32, shapes
// inferred, shape subgraphs folded.
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

#endif // LLMC_PASSES_ONNX_PASSES
