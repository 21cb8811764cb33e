//===- CpuTarget.h - machine code for the host CPU --------------*- C++ -*-===//
#ifndef LLMC_TARGET_CPUTARGET_H
#define LLMC_TARGET_CPUTARGET_H

#include "llmc/Target/CodeUnitCache.h"
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

/// The code units that emitCpuSharedObject linked, and how many of them the
/// kernel cache held.
struct CodeUnitCounts {
  unsigned units = 0;
  unsigned fromCache = 0;
};

/// Lowers a module that llm-lower-to-cpu produced (memref, scf, arith, math,
/// func, llvm) to the LLVM dialect, translates it, splits it into code units
/// (a kernel each, and the step), takes each from `cache` or optimises it at
/// O3 for `target` (in parallel, keeping it in `cache`), and links a shared
/// object at `sharedObjectPath` with the system's C compiler driver. Errors
/// are reported as diagnostics on the module; a cache that cannot be written
/// is a warning.
mlir::FailureOr<CodeUnitCounts> emitCpuSharedObject(mlir::ModuleOp module,
                                                    const CpuTargetInfo &target,
                                                    llvm::StringRef sharedObjectPath,
                                                    const CodeUnitCache &cache);

} // namespace llmc

#endif // LLMC_TARGET_CPUTARGET_H
