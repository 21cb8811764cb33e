//===- ShapeInference.h - shape inference shared by op families -*- C++ -*-===//
//
// Shape inference of the onnx dialect's op families (unary, broadcasting,
// reductions); the ODS classes of those families call these.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_ONNX_SHAPEINFERENCE_H
#define LLMC_DIALECTS_ONNX_SHAPEINFERENCE_H

#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

namespace llmc::onnx {

/// The result has the operand's type (element type changes for IsNaN/IsInf/Not).
llvm::LogicalResult inferUnaryShapes(mlir::Operation *op,
                                     llvm::SmallVectorImpl<mlir::Type> &resultTypes);

/// The result is the numpy broadcast of all operands; comparisons give i1.
llvm::LogicalResult inferBroadcastShapes(mlir::Operation *op,
                                         llvm::SmallVectorImpl<mlir::Type> &resultTypes);

/// Reduction of operand 0 over the constant axes of operand 1.
llvm::LogicalResult inferReduceShapes(mlir::Operation *op, int64_t keepdims,
                                      int64_t noopWithEmptyAxes,
                                      llvm::SmallVectorImpl<mlir::Type> &resultTypes);

/// Recomputes the result types of every op under `root` from its operands,
/// in order; true when any changed. Failure when an op's inference fails.
llvm::FailureOr<bool> refineResultTypes(mlir::Operation *root);

} // namespace llmc::onnx

#endif // LLMC_DIALECTS_ONNX_SHAPEINFERENCE_H
