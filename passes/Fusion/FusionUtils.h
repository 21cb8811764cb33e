//===- FusionUtils.h - building blocks of the llm-fuse-* passes -*- C++ -*-===//
//
// What several fusion patterns need: constant weights and their
// concatenation, scalar bodies built from llm ops, and placing a fused op
// where all its operands are defined.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_FUSIONUTILS_H
#define LLMC_PASSES_FUSIONUTILS_H

#include "passes/Fusion/Passes.h"

#include "llmc/Support/TensorShape.h"

#include "mlir/IR/PatternMatch.h"

namespace llmc::fusion {

/// Builds one scalar at the builder's insertion point from the epilogue or
/// body's scalar arguments.
using ScalarBuilder =
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location, mlir::ValueRange)>;

/// The constant a weight operand is (an llm.constant), or null.
mlir::ElementsAttr constantOf(mlir::Value value);

/// Erases the llm.constant defining `value` when nothing reads it any more.
void eraseIfUnused(mlir::RewriterBase &rewriter, mlir::Value value);

/// An llm.constant holding `parts` (same element type and rank) joined
/// along dim `dim`, or failure when a part's bytes cannot be read.
mlir::FailureOr<mlir::Value> concatConstants(mlir::RewriterBase &rewriter, mlir::Location loc,
                                             llvm::ArrayRef<mlir::ElementsAttr> parts,
                                             int64_t dim);

/// Creates `llm.elementwise` of `inputs` whose body is `body`.
llm::ElementwiseOp createElementwise(mlir::RewriterBase &rewriter, mlir::Location loc,
                                     mlir::Type resultType, mlir::ValueRange inputs,
                                     ScalarBuilder body);

/// Creates `llm.fused_linear` whose epilogue is `epilogue`, called with the
/// accumulators then one scalar per extra.
llm::FusedLinearOp createFusedLinear(mlir::RewriterBase &rewriter, mlir::Location loc,
                                     mlir::Type resultType, mlir::Value input, mlir::Value weight,
                                     mlir::Value bias, mlir::ValueRange extras,
                                     bool transposeWeight, bool gated, ScalarBuilder epilogue);

/// Moves the operand-free ops (constants) that define `values` before
/// `point` if they come after it; fails if a value with operands is not
/// defined before `point`. Null values (absent optional operands) are skipped.
mlir::LogicalResult defineBefore(mlir::ValueRange values, mlir::Operation *point);

/// Whether `op` is the only user of `value` (possibly several times).
bool onlyUsedBy(mlir::Value value, mlir::Operation *op);

/// Replaces `consumer`, an elementwise op one of whose operands is the
/// result of `gemm` (an llm.linear or a non-gated or gated
/// llm.fused_linear used only by `consumer`), with a fused_linear whose
/// epilogue applies `consumer` to the GEMM's value. The consumer's other
/// operands become extras (constants of rank 0 are inlined). Fails, with
/// the reason, when the shapes do not line up.
mlir::FailureOr<llm::FusedLinearOp>
absorbIntoEpilogue(mlir::PatternRewriter &rewriter, mlir::Operation *gemm,
                   llm::ScalarFunctionOpInterface consumer);

} // namespace llmc::fusion

#endif // LLMC_PASSES_FUSIONUTILS_H
