//===- CudaTarget.h - PTX and cubins for NVIDIA GPUs ------------*- C++ -*-===//
#ifndef LLMC_TARGET_CUDATARGET_H
#define LLMC_TARGET_CUDATARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"

#include <string>

namespace llmc {

/// The GPU the kernels are compiled for.
struct CudaTargetInfo {
  std::string arch = "sm_80"; // sm_XX
  std::string dtype = "bf16"; // storage type: bf16 or f16
};

/// `cuda`, `cuda:sm_XX`: the GPU of the target name; without an architecture,
/// the GPU present (nvidia-smi), or sm_80 where there is none. Fails, with
/// the reason in `error`, on a malformed name.
mlir::FailureOr<CudaTargetInfo> parseCudaTarget(llvm::StringRef name, std::string &error);

/// What compiling the CUDA kernels produced: PTX always, a cubin for the
/// target's architecture where ptxas ran ("" otherwise).
struct CudaKernelImages {
  std::string kernelsPtx, kernelsCubin, attentionPtx, attentionCubin;
};

/// Compiles what llm-lower-to-cuda left in `module`: its gpu.module through
/// MLIR's NVVM path to PTX, the attention source through NVRTC to PTX, and
/// both through ptxas to cubins when the CUDA toolkit's ptxas is there.
/// Errors are diagnostics on the module.
mlir::FailureOr<CudaKernelImages> compileCudaKernels(mlir::ModuleOp module,
                                                     const CudaTargetInfo &target);

/// The dialect extensions and translations compileCudaKernels needs;
/// register them before the context is created.
void registerCudaTargetInterfaces(mlir::DialectRegistry &registry);

} // namespace llmc

#endif // LLMC_TARGET_CUDATARGET_H
