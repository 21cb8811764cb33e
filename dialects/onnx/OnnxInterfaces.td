//===- OnnxInterfaces.td - interfaces of the onnx dialect --*- tablegen -*-===//
#ifndef LLMC_DIALECT_ONNX_INTERFACES
#define LLMC_DIALECT_ONNX_INTERFACES

include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------===//
// Shape inference interface
//===----------------------------------------------------------------------===//

def Onnx_ShapeInferenceOpInterface : OpInterface<"ShapeInferenceOpInterface"> {
  let cppNamespace = "::llmc::onnx";
  let description = [{
    Ops that can compute their result types from their operands' types and
    from constant (or partially constant) shape operands. `inferShapes`
    returns the refined result types; it never makes a type less precise.
  }];
  let methods = [
    InterfaceMethod<
      "Computes the result types from the operands; fails when an operand "
      "contradicts the op's semantics (e.g. mismatched broadcast dims).",
      "::llvm::LogicalResult", "inferShapes",
      (ins "::llvm::SmallVectorImpl<::mlir::Type> &":$resultTypes)>,
  ];
}

#endif // LLMC_DIALECT_ONNX_INTERFACES
