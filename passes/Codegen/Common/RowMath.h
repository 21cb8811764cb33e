//===- RowMath.h - the maths both targets' row kernels share ----*- C++ -*-===//
//
// What a norm or a rotary embedding computes for one row, independent of how
// a target spreads the row over loops or threads.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_COMMON_ROWMATH_H
#define LLMC_PASSES_CODEGEN_COMMON_ROWMATH_H

#include "passes/Codegen/Common/KernelBuilder.h"

#include "mlir/IR/Operation.h"

#include <utility>

namespace llmc::codegen {

/// A norm op's (rms_norm, layer_norm, add_rms_norm, add_layer_norm) epsilon
/// and whether it centres (layer norm); both targets' norm kernels read it.
std::pair<double, bool> normKind(mlir::Operation *op);

/// What a rotary embedding rotates by: frequencies, or cos/sin tables.
struct Rotation {
  int64_t headDim = 0;
  int64_t halfRotary = 0; // rotary_dim / 2
  bool interleaved = false;
  mlir::Value invFreq, cosCache, sinCache; // one form or the other
  /// What cos and sin computed from invFreq are multiplied by (llm.rope's
  /// scale); cos/sin tables hold theirs already.
  double scale = 1.0;
};

/// `value` (a cos or sin computed from inverse frequencies) times a rotation's
/// scale; `value` itself when the scale is 1.
mlir::Value scaledBy(KernelBuilder &kb, mlir::Value value, double scale);

/// Rotates rotary pair `i` of one head at `position`: features (i, i +
/// rotary/2), or (2i, 2i + 1) when interleaved.
void emitRotatedPair(KernelBuilder &kb, const Rotation &rotation, mlir::Value position,
                     mlir::Value i, llvm::function_ref<mlir::Value(mlir::Value)> read,
                     llvm::function_ref<void(mlir::Value, mlir::Value)> write);

} // namespace llmc::codegen

#endif // LLMC_PASSES_CODEGEN_COMMON_ROWMATH_H
