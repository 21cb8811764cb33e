//===- LoweredOperands.h - an op's lowered operands by name -----*- C++ -*-===//
//
// Target lowerings turn an op's operands into their own values (a memref on
// the CPU, a tensor place on CUDA), one per operand present. An absent
// optional operand (a linear's bias, a rotation's caches) has no entry, so
// the operands after it do not sit at fixed positions: these read an entry
// through the op's accessor for the operand (`op.getBiasMutable()`,
// `op.getExtras()`) instead.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_COMMON_LOWEREDOPERANDS_H
#define LLMC_PASSES_CODEGEN_COMMON_LOWEREDOPERANDS_H

#include "mlir/IR/OperationSupport.h"

#include "llvm/ADT/ArrayRef.h"

namespace llmc::codegen {

/// The entry of `lowered` for an optional (or single) operand of the op, or
/// T() when the operand is absent.
template <typename T>
T loweredOperand(mlir::OperandRange operand, llvm::ArrayRef<T> lowered) {
  return operand.empty() ? T() : lowered[operand.getBeginOperandIndex()];
}

/// The entries of `lowered` for a variadic operand of the op.
template <typename T>
llvm::ArrayRef<T> loweredOperands(mlir::OperandRange operands, llvm::ArrayRef<T> lowered) {
  if (operands.empty()) return {};
  return lowered.slice(operands.getBeginOperandIndex(), operands.size());
}

} // namespace llmc::codegen

#endif // LLMC_PASSES_CODEGEN_COMMON_LOWEREDOPERANDS_H
