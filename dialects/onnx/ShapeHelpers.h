//===- ShapeHelpers.h - constants and shapes in the onnx dialect -*- C++ -*-===//
//
// Helpers shared by shape inference, folding, the importer and the raising
// patterns: reading constant operands, evaluating the 1-D int64 "shape
// subgraphs" that exports compute with Shape/Gather/Concat, and numpy-style
// broadcasting.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_ONNX_SHAPEHELPERS_H
#define LLMC_DIALECTS_ONNX_SHAPEHELPERS_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace llmc::onnx {

/// The element type of ONNX TensorProto.DataType `dataType`, or null for a
/// type llmc does not support (float8, complex, string).
mlir::Type elementTypeForOnnxDataType(mlir::MLIRContext *context, int64_t dataType);

/// The inverse of elementTypeForOnnxDataType; 0 (UNDEFINED) when unknown.
int64_t onnxDataTypeForElementType(mlir::Type type);

/// The ONNX name of a graph input (its function argument's `onnx.name`), or
/// "" for any other block argument.
llvm::StringRef inputName(mlir::BlockArgument arg);

/// The attribute of a constant-like producer of `value`, if any.
mlir::DenseElementsAttr getConstantAttr(mlir::Value value);

/// The integer elements of a constant operand.
std::optional<llvm::SmallVector<int64_t>> getConstantInts(mlir::Value value);

/// The single floating-point value of a constant operand whose elements are
/// all equal (a scalar or a splat), e.g. an epsilon or a scale.
std::optional<double> getConstantSplatFloat(mlir::Value value);

/// One entry of a shape tensor: its value (ShapedType::kDynamic when
/// unknown) and whether it is known to be >= 0 (a dim always is, even when
/// its value is unknown).
struct ShapeEntry {
  int64_t value = mlir::ShapedType::kDynamic;
  bool nonNegative = false;
  /// For an unknown dim read by Shape: which dim it is (canonicalDim), so that
  /// Reshape can tell that a target entry copies a dim of its input.
  std::pair<mlir::Value, int64_t> dim = {};
  /// For such a dim times a constant (batch * heads, as [batch * heads, -1,
  /// head_dim] flattens heads): the dim and the constant, so that Reshape can
  /// infer a -1 beside it. `dim` stays empty: the entry is not that dim.
  std::pair<mlir::Value, int64_t> scaledDim = {};
  int64_t factor = 1;
};

/// The earliest value and dim index known to equal dim `index` of `value`:
/// followed back through ops that carry a dim unchanged (elementwise ops,
/// casts, reductions that keep it, MatMul's batch and row dims, Gather,
/// Transpose, Concat and Split off their axis). Exports compute the batch and
/// sequence dims of every activation from the model inputs, so two reads of
/// those dims meet at the same input; dims of inputs that share an ONNX
/// dim_param name are the first such input's.
std::pair<mlir::Value, int64_t> canonicalDim(mlir::Value value, int64_t index);

/// What the -1 entry (at `inferred`) of a Reshape of `data` to `target` is:
/// the input's element count over the other entries', where an unknown input
/// dim cancels against a target entry that is the same dim (canonicalDim), as
/// in view(*x.shape[:-1], -1, head_dim). `size` when every unknown dim
/// cancels; when exactly one is left and the static sizes agree, `dim` is
/// that input dim (view(batch, -1, heads, head_dim) keeps the sequence);
/// nullopt when neither.
struct InferredReshapeDim {
  int64_t size = mlir::ShapedType::kDynamic;
  std::pair<mlir::Value, int64_t> dim = {};
};
std::optional<InferredReshapeDim> inferReshapeDim(mlir::Value data,
                                                  llvm::ArrayRef<ShapeEntry> target,
                                                  int64_t inferred, bool allowzero);

/// The entries of a 1-D (or scalar) integer tensor as evaluateShapeTensor
/// finds them, with what is known of their sign.
std::optional<llvm::SmallVector<ShapeEntry>> evaluateShapeEntries(mlir::Value value);

/// Evaluates a 1-D (or scalar) integer tensor that holds dims: constants,
/// Shape of a tensor, and Gather/Slice/Concat/Unsqueeze/Squeeze/Cast of those,
/// and integer Add/Mul of those.
/// Unknown entries are ShapedType::kDynamic. nullopt when even the length is
/// unknown.
std::optional<llvm::SmallVector<int64_t>> evaluateShapeTensor(mlir::Value value);

/// Numpy broadcasting of shapes (kDynamic where unknown); failure when two
/// static dims differ and neither is 1.
llvm::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes);

/// Normalises a possibly negative axis against `rank`; nullopt when out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// A tensor type of `shape` (unranked when nullopt) with `elementType`.
mlir::TensorType makeTensorType(std::optional<llvm::ArrayRef<int64_t>> shape,
                                mlir::Type elementType);

} // namespace llmc::onnx

#endif // LLMC_DIALECTS_ONNX_SHAPEHELPERS_H
