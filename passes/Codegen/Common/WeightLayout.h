//===- WeightLayout.h - where each weight lives in weights.bin --*- C++ -*-===//
//
// Both target lowerings place the weights a step reads one after another in
// weights.bin, each at an aligned offset and named after the op that holds
// it, and record the layout on the module for the artifact writer
// (`llmc.weights`: name, offset, value and, on CUDA, the stored dtype;
// `llmc.weights_bytes`). What a target adds is how it views the bytes.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_COMMON_WEIGHTLAYOUT_H
#define LLMC_PASSES_CODEGEN_COMMON_WEIGHTLAYOUT_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"

namespace llmc::codegen {

class WeightLayout {
public:
  explicit WeightLayout(int64_t alignment) : alignment(alignment) {}

  /// Places `data`, held by `holder` and stored as `bytes` bytes (converted
  /// to `dtype` when written, if one is named), and returns its offset.
  int64_t place(mlir::Operation *holder, mlir::ElementsAttr data, int64_t bytes,
                llvm::StringRef dtype = {});

  /// Records the layout on `module`: llmc.weights and llmc.weights_bytes.
  void record(mlir::ModuleOp module) const;

private:
  int64_t alignment;
  int64_t end = 0;
  llvm::SmallVector<mlir::Attribute> entries;
};

} // namespace llmc::codegen

#endif // LLMC_PASSES_CODEGEN_COMMON_WEIGHTLAYOUT_H
