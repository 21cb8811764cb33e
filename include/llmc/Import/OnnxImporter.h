//===- OnnxImporter.h - ONNX protobuf to the onnx dialect -------*- C++ -*-===//
//
// Reads an ONNX model (protobuf, with external data) and builds a module with
// one func.func @main_graph of onnx dialect ops. Every failure is reported as
// one diagnostic on the context and the import returns failure; malformed
// input never crashes the importer.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_IMPORT_ONNXIMPORTER_H
#define LLMC_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

namespace llmc {

struct ImportOptions {
  /// Binds a boolean input named `use_cache_branch` (optimum's merged
  /// decoders) to true, so the If that selects the with-past graph folds
  /// away. Prefill then runs the with-past graph with zero-length past.
  bool bindUseCacheBranch = true;
  /// Initializers with more elements than this become dense_resource blobs
  /// (weights); smaller ones are inline dense attributes that folding reads.
  int64_t inlineConstantLimit = 1024;
};

/// The default-domain opsets llmc imports.
constexpr int64_t kMinDefaultOpset = 14;
constexpr int64_t kMaxDefaultOpset = 25;
/// The ONNX IR versions llmc imports: 8-11 as exporters write them today,
/// 7, which torch.onnx still writes for opset 14, and 12-13, which onnx
/// writes for opsets 24-25 (the element types they add are refused by type).
constexpr int64_t kMinIrVersion = 7;
constexpr int64_t kMaxIrVersion = 13;

/// Imports the ONNX model at `path`. External data files are resolved
/// relative to the model's directory.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(mlir::MLIRContext &context,
                                                  llvm::StringRef path,
                                                  const ImportOptions &options = {});

/// Imports a model held in memory (`baseDir` resolves external data).
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModelFromBuffer(mlir::MLIRContext &context,
                                                            llvm::StringRef bytes,
                                                            llvm::StringRef baseDir,
                                                            llvm::StringRef bufferName,
                                                            const ImportOptions &options = {});

} // namespace llmc

#endif // LLMC_IMPORT_ONNXIMPORTER_H
