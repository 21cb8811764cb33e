//===- ArtifactWriter.h - write model.llmc/ ----------------------*- C++ -*-===//
#ifndef LLMC_ARTIFACT_ARTIFACTWRITER_H
#define LLMC_ARTIFACT_ARTIFACTWRITER_H

#include "llmc/Target/CpuTarget.h"
#include "llmc/Target/CudaTarget.h"

#include "mlir/IR/BuiltinOps.h"

namespace llmc {

/// Writes the artifact directory (docs/artifact.md) from a module that
/// llm-lower-to-cpu produced: weights.bin laid out from its `llmc.weights`
/// attribute, kernels.so compiled for `target`, and manifest.json last, so
/// that a directory with a manifest is complete. `stage` is told what
/// starts (for progress output). The kernels come from `kernelCache` where it
/// holds them and are kept there. Errors are diagnostics on the module.
mlir::FailureOr<CodeUnitCounts>
writeCpuArtifact(mlir::ModuleOp module, llvm::StringRef directory, const CpuTargetInfo &target,
                 const CodeUnitCache &kernelCache,
                 llvm::function_ref<void(llvm::StringRef)> stage);

/// Writes a CUDA artifact (docs/cuda.md) from a module that llm-lower-to-cuda
/// produced: the kernels compiled for `target` (PTX and, where ptxas ran,
/// cubins), step_plan.json, weights.bin in the target's dtype, then
/// manifest.json.
mlir::LogicalResult writeCudaArtifact(mlir::ModuleOp module, llvm::StringRef directory,
                                      const CudaTargetInfo &target,
                                      llvm::function_ref<void(llvm::StringRef)> stage);

/// Copies the tokenizer that sits next to the source model (tokenizer.json
/// and tokenizer_config.json in the directory of `modelPath`, each when
/// present) into the artifact directory, and records the copies on `module`
/// for the manifest that writeCpuArtifact writes next. Call it first. Copies
/// that an earlier compile left and that the model no longer has are removed.
mlir::LogicalResult copyTokenizerFiles(mlir::ModuleOp module, llvm::StringRef modelPath,
                                       llvm::StringRef directory);

} // namespace llmc

#endif // LLMC_ARTIFACT_ARTIFACTWRITER_H
