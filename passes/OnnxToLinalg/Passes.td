//===- Passes.td - OnnxToLinalg passes ---------------------*- tablegen -*-===//
//
// Whole-graph lowering (onnx -> linalg) for graphs of fixed shapes.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_PASSES_ONNXTOLINALG_PASSES
#define LLMC_PASSES_ONNXTOLINALG_PASSES

include "mlir/Pass/PassBase.td"

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

#endif // LLMC_PASSES_ONNXTOLINALG_PASSES
