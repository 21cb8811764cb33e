//===- HostEvaluator.h - evaluate small onnx subgraphs on the host -*- C++ -*-===//
//
// Raising proves what a subgraph computes (an attention mask built from
// attention_mask and shapes, say) by running it on probe inputs and comparing
// the result with what it is meant to compute, instead of matching one
// exporter's spelling. HostEvaluator runs such a subgraph: the ops exports
// build masks and positions with, on small tensors, in double precision
// (exact for integers below 2^53, booleans and float32 mask values), each
// result rounded to its MLIR element type.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_ONNX_HOSTEVALUATOR_H
#define LLMC_DIALECTS_ONNX_HOSTEVALUATOR_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <string>
#include <vector>

namespace llmc::onnx {

/// A dense row-major tensor held as doubles.
struct HostTensor {
  llvm::SmallVector<int64_t> shape;
  std::vector<double> data;

  /// The element at a row-major multi-index of `shape`.
  double at(llvm::ArrayRef<int64_t> index) const;
};

/// Evaluates values defined by onnx ops, given the block arguments their
/// cone reads. Shape and Size of a value of static type read the type alone,
/// so a subgraph may take shapes of activations it cannot evaluate.
class HostEvaluator {
public:
  /// `inputs` gives the block arguments' values; evaluation fails on a
  /// tensor of more than `maxElements` elements. With `readResources`,
  /// constants held as dense_resource blobs are read too (a causal buffer
  /// a mask slices, GPT-Neo's); without, they stay opaque, so that folding
  /// never turns weights into dense attributes.
  explicit HostEvaluator(const llvm::DenseMap<mlir::Value, HostTensor> &inputs,
                         int64_t maxElements = 1 << 20, bool readResources = false);

  /// The value of `value`, or null after setting failureReason (the op that
  /// could not be evaluated, and why).
  const HostTensor *evaluate(mlir::Value value);

  std::string failureReason;

private:
  mlir::LogicalResult evaluateOp(mlir::Operation *op);
  mlir::LogicalResult fail(mlir::Operation *op, const llvm::Twine &why);

  /// Held by pointer: evaluating one operand must not move another's value.
  llvm::DenseMap<mlir::Value, std::unique_ptr<HostTensor>> values;
  int64_t maxElements;
  bool readResources;
};

} // namespace llmc::onnx

#endif // LLMC_DIALECTS_ONNX_HOSTEVALUATOR_H
