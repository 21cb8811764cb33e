//===- Passes.td - Onnx passes -----------------------------*- tablegen -*-===//
//
// Onnx dialect clean-up after import: shapes inferred, shape subgraphs folded.
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

#endif // LLMC_PASSES_ONNX_PASSES
