//===- ShapeFolding.h - infer shapes and fold until fixed point -*- C++ -*-===//
//
// Exports compute shapes at run time (Shape -> Gather -> Concat -> Reshape,
// Where(Equal(shape, -1), 1, shape) for expand): a type becomes static only
// once the subgraph that computes it folds, and folding needs the types.
// inferShapesAndFold alternates the two; the onnx-shape-inference pass runs
// it on the model, and mask proving on each probe's clone.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_ONNX_SHAPEFOLDING_H
#define LLMC_DIALECTS_ONNX_SHAPEFOLDING_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"

namespace llmc::onnx {

/// Folds (and inlines If ops on constant conditions) and refines result
/// types under `func` in rounds until a round changes nothing: true then,
/// false when `maxRounds` did not reach it, failure when an op's shapes
/// contradict. `listener` sees every rewrite.
llvm::FailureOr<bool> inferShapesAndFold(mlir::func::FuncOp func, unsigned maxRounds,
                                         mlir::RewriterBase::Listener *listener = nullptr);

} // namespace llmc::onnx

#endif // LLMC_DIALECTS_ONNX_SHAPEFOLDING_H
