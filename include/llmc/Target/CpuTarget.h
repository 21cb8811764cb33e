//===- CpuTarget.h - machine code for the host CPU --------------*- C++ -*-===//
#ifndef LLMC_TARGET_CPUTARGET_H
#define LLMC_TARGET_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace llmc {

/// The CPU the kernels are compiled for.
struct CpuTargetInfo {
  std::string triple;
  std::string cpu;
  std::string features; // "+avx2,+fma,..."
};

/// The host CPU, its features detected.
CpuTargetInfo detectHostCpu();

/// Lowers a module that llm-lower-to-cpu produced (memref, scf, arith, math,
/// func, llvm) to the LLVM dialect, translates it, optimises it at O3 for
/// `target`, and links a shared object at `sharedObjectPath` with the
/// system's C compiler driver. Errors are reported as diagnostics on the
/// module. `objectPath` is where the intermediate object file goes.
mlir::LogicalResult emitCpuSharedObject(mlir::ModuleOp module, const CpuTargetInfo &target,
                                        llvm::StringRef objectPath,
                                        llvm::StringRef sharedObjectPath);

} // namespace llmc

#endif // LLMC_TARGET_CPUTARGET_H
