//===- TensorShape.h - rank and dims of tensor values -----------*- C++ -*-===//
//
// The two questions every pattern and verifier asks of a tensor value, with
// unranked tensors and out-of-range dims answered as "unknown".
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_SUPPORT_TENSORSHAPE_H
#define LLMC_SUPPORT_TENSORSHAPE_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

namespace llmc {

/// The rank of a ranked tensor value, or -1.
inline int64_t rankOf(mlir::Value value) {
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(value.getType());
  return type ? type.getRank() : -1;
}

/// The static dim `index` (negative counts from the back), or kDynamic when
/// unknown or out of range.
inline int64_t dimOf(mlir::Value value, int64_t index) {
  auto type = llvm::dyn_cast<mlir::RankedTensorType>(value.getType());
  if (!type) return mlir::ShapedType::kDynamic;
  if (index < 0) index += type.getRank();
  if (index < 0 || index >= type.getRank()) return mlir::ShapedType::kDynamic;
  return type.getDimSize(index);
}

} // namespace llmc

#endif // LLMC_SUPPORT_TENSORSHAPE_H
