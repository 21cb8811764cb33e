//===- KernelBuilder.h - the vocabulary of generated kernels ----*- C++ -*-===//
//
// Both targets write their kernels' bodies with KernelBuilder: scf loops,
// memref loads and stores and f32 arithmetic. The CPU lowering puts them in
// private func.funcs, the CUDA lowering in gpu.funcs (one block per row).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_COMMON_KERNELBUILDER_H
#define LLMC_PASSES_CODEGEN_COMMON_KERNELBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <string>

namespace llmc::codegen {

/// Builds loop nests and scalar arithmetic inside a kernel. Float arithmetic
/// carries reassoc+contract fast-math flags so that LLVM vectorises
/// reductions; every row is computed by the same code whatever the batch, so
/// results stay independent of the batch composition.
class KernelBuilder {
public:
  KernelBuilder(mlir::OpBuilder &builder, mlir::Location loc) : b(builder), loc(loc) {}

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() const { return loc; }

  mlir::Value index(int64_t value);
  mlir::Value f32(double value);
  mlir::Value dim(mlir::Value memref, int64_t dim);
  /// An i32 (or other integer) value as an index.
  mlir::Value toIndex(mlir::Value integer);
  mlir::Value toF32(mlir::Value integer);

  /// for (iv = lower; iv < upper; iv += step) body(iv)
  void forEach(mlir::Value lower, mlir::Value upper, llvm::function_ref<void(mlir::Value)> body,
               int64_t step = 1);
  /// acc = init; for (iv...) acc = body(iv, acc); returns acc.
  mlir::Value reduce(mlir::Value lower, mlir::Value upper, mlir::Value init,
                     llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> body);
  /// if (condition) then()
  void ifThen(mlir::Value condition, llvm::function_ref<void()> then);

  mlir::Value load(mlir::Value memref, mlir::ValueRange indices);
  void store(mlir::Value value, mlir::Value memref, mlir::ValueRange indices);

  mlir::Value add(mlir::Value a, mlir::Value c);
  mlir::Value sub(mlir::Value a, mlir::Value c);
  mlir::Value mul(mlir::Value a, mlir::Value c);
  mlir::Value div(mlir::Value a, mlir::Value c);
  mlir::Value max(mlir::Value a, mlir::Value c);
  mlir::Value neg(mlir::Value a);
  mlir::Value exp(mlir::Value a);
  /// exp(a) in f32 arithmetic the loop vectoriser can widen (no libm call):
  /// 2^n * p(r) after Cody-Waite reduction, Cephes' degree-6 polynomial, a
  /// few ulp from expf; inputs below -87.3 give FLT_MIN, not 0. Built
  /// without fast-math flags so that every caller gets the same bits. `a`
  /// may be a vector: the same arithmetic lane by lane.
  mlir::Value expPolynomial(mlir::Value a);
  mlir::Value sqrt(mlir::Value a);
  mlir::Value cos(mlir::Value a);
  mlir::Value sin(mlir::Value a);
  mlir::Value erf(mlir::Value a);
  mlir::Value tanh(mlir::Value a);

  mlir::Value addIndex(mlir::Value a, mlir::Value c);
  mlir::Value subIndex(mlir::Value a, mlir::Value c);
  mlir::Value mulIndex(mlir::Value a, mlir::Value c);
  mlir::Value divIndex(mlir::Value a, mlir::Value c);
  mlir::Value remIndex(mlir::Value a, mlir::Value c);
  mlir::Value minIndex(mlir::Value a, mlir::Value c);
  mlir::Value maxIndex(mlir::Value a, mlir::Value c);
  mlir::Value lessThan(mlir::Value a, mlir::Value c);

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
};

/// The static size of dim `dim` of a memref (kDynamic when it is not).
inline int64_t staticDim(mlir::Value memref, int64_t dim) {
  return mlir::cast<mlir::MemRefType>(memref.getType()).getDimSize(dim);
}

/// What identifies a kernel: the op's name and attributes and the types it
/// is called with. Attributes named in `ignored` are left out: the kernel
/// takes what they say as an argument.
std::string kernelKey(mlir::Operation *op, mlir::ValueRange args,
                      llvm::ArrayRef<llvm::StringRef> ignored = {});
/// The same for kernels that are not one op's: a name and the argument types.
std::string kernelKey(llvm::StringRef name, mlir::ValueRange args);
/// The same from argument types (kernels that are not called from IR).
std::string kernelKey(mlir::Operation *op, mlir::TypeRange argTypes,
                      llvm::ArrayRef<llvm::StringRef> ignored = {});
std::string kernelKey(llvm::StringRef name, mlir::TypeRange argTypes);

} // namespace llmc::codegen

#endif // LLMC_PASSES_CODEGEN_COMMON_KERNELBUILDER_H
