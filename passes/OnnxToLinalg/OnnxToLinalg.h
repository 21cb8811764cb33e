//===- OnnxToLinalg.h - onnx ops to linalg on tensors, shared parts -*- C++ -*-===//
//
// The `onnx-lower-to-linalg` conversion is split by op family, one file each
// (OnnxToLinalgElementwise.cpp, ...Reductions.cpp, ...Shapes.cpp,
// ...LinearAlgebra.cpp, ...Attention.cpp); this header holds what they share:
// the type converter and the builders of scalar code and broadcasting
// generics. Every pattern lowers one op whose result shapes are static, and
// never updates an operand in place (destination-style ops start from a new
// tensor, or a copy): bufferization treats the graph's arguments as writable,
// and they are the caller's input buffers.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_ONNXTOLINALG_H
#define LLMC_PASSES_ONNXTOLINALG_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"


namespace llmc::onnx_to_linalg {

/// onnx types to the types of the lowered code: arith works on signless
/// integers, so ui8/si8 become i8 (the patterns read the signedness from the
/// onnx-typed operands of the op they lower). `none` stays `none`.
class OnnxTypeConverter : public mlir::TypeConverter {
public:
  OnnxTypeConverter();
};

/// The element type without signedness (ui8 -> i8); other types unchanged.
mlir::Type signless(mlir::Type elementType);
bool isUnsignedInteger(mlir::Type elementType);
bool isBool(mlir::Type elementType);

/// The converted, static result type of `value`, or failure (with the reason
/// reported on `rewriter`) when its shape is not fully known.
mlir::FailureOr<mlir::RankedTensorType> staticResultType(mlir::ConversionPatternRewriter &rewriter,
                                                         const mlir::TypeConverter &converter,
                                                         mlir::Operation *op, mlir::Value value);

/// A scalar of `type` (integer, index or float) with the given value.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type, double value);

/// Converts a scalar between element types with ONNX Cast semantics:
/// float -> int truncates, x -> bool is x != 0, bool -> x is 0 or 1, integer
/// widening follows the source's signedness. `from`/`to` are onnx element
/// types (with signedness); the values are signless.
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value, mlir::Type from,
                       mlir::Type to);

/// `tensor.empty` of a static ranked type.
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type);

/// A tensor of `type` filled with `value`.
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                         mlir::Value value);

/// The indexing map that reads `inputType` broadcast (numpy rules, aligned to
/// the right) over the iteration space of `resultType`.
mlir::AffineMap broadcastMap(mlir::MLIRContext *context, mlir::RankedTensorType inputType,
                             mlir::RankedTensorType resultType);

/// Body of an elementwise generic: the scalars of the inputs in, the result
/// scalar out.
using ScalarBuilder = llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                                     mlir::ValueRange)>;

/// One parallel linalg.generic over `resultType` that reads `inputs` with
/// numpy broadcasting and computes each element with `body`.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType, mlir::ValueRange inputs,
                             ScalarBuilder body);

/// `value` with every element cast from `from` (its onnx element type, with
/// signedness) to `to` by castScalar; `value` itself when they are equal.
mlir::Value castElements(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                         mlir::Type from, mlir::Type to);

/// Reshape of a static tensor to another static shape of the same size.
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                      llvm::ArrayRef<int64_t> shape);

/// Applies `combine` to the elements of `input` over `reducedDims`, starting
/// from `init`: the result has the input's shape without the reduced dims.
mlir::Value buildReduction(mlir::OpBuilder &b, mlir::Location loc, mlir::Value input,
                           llvm::ArrayRef<int64_t> reducedDims, mlir::Value init,
                           llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                                          mlir::Value element, mlir::Value acc)>
                               combine);

void populateElementwisePatterns(mlir::TypeConverter &converter, mlir::RewritePatternSet &patterns);
void populateReductionPatterns(mlir::TypeConverter &converter, mlir::RewritePatternSet &patterns);
void populateShapePatterns(mlir::TypeConverter &converter, mlir::RewritePatternSet &patterns);
void populateLinearAlgebraPatterns(mlir::TypeConverter &converter,
                                   mlir::RewritePatternSet &patterns);
void populateAttentionPatterns(mlir::TypeConverter &converter, mlir::RewritePatternSet &patterns);

} // namespace llmc::onnx_to_linalg

#endif // LLMC_PASSES_ONNXTOLINALG_H
