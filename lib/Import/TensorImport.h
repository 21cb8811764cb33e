//===- TensorImport.h - ONNX TensorProto to MLIR attributes -----*- C++ -*-===//
#ifndef LLMC_LIB_IMPORT_TENSORIMPORT_H
#define LLMC_LIB_IMPORT_TENSORIMPORT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Location.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace onnx {
class TensorProto;
} // namespace onnx

namespace llmc::import {

/// Converts TensorProtos to ElementsAttrs, validating sizes against shapes,
/// and reading external data files (each mapped once, shared by its tensors).
class TensorImporter {
public:
  TensorImporter(mlir::MLIRContext &context, std::string baseDir, int64_t inlineLimit)
      : context(context), baseDir(std::move(baseDir)), inlineLimit(inlineLimit) {}

  /// The tensor as an attribute; emits one error at `loc` and returns null
  /// when the tensor is malformed or its data cannot be read.
  mlir::ElementsAttr convert(const onnx::TensorProto &tensor, mlir::Location loc);

private:
  /// The bytes of an external-data tensor, or an error.
  llvm::Expected<llvm::ArrayRef<char>> readExternal(const onnx::TensorProto &tensor,
                                                    std::shared_ptr<llvm::MemoryBuffer> &owner);

  mlir::MLIRContext &context;
  std::string baseDir;
  int64_t inlineLimit;
  llvm::StringMap<std::shared_ptr<llvm::MemoryBuffer>> externalFiles;
};

/// The name of ONNX TensorProto.DataType `dataType` (e.g. FLOAT8E4M3FN), or its number.
std::string dataTypeName(int64_t dataType);

/// Largest dim llmc accepts in a shape (larger ones are malformed files).
constexpr int64_t kMaxDim = int64_t(1) << 32;

} // namespace llmc::import

#endif // LLMC_LIB_IMPORT_TENSORIMPORT_H
