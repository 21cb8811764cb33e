//===- ElementsData.h - the bytes of a constant tensor -----------*- C++ -*-===//
#ifndef LLMC_SUPPORT_ELEMENTSDATA_H
#define LLMC_SUPPORT_ELEMENTSDATA_H

#include "mlir/IR/BuiltinAttributeInterfaces.h"

#include <vector>

namespace llmc {

/// The row-major bytes of a constant, without copying when the attribute
/// holds them (dense_resource blobs, non-splat dense elements). A splat is
/// expanded into `storage`. Fails for attributes without byte data (a
/// dense_resource whose blob is gone, sub-byte element types).
mlir::FailureOr<llvm::ArrayRef<char>> elementsBytes(mlir::ElementsAttr attr,
                                                    std::vector<char> &storage);

/// The bytes of a dense_resource constant as its blob holds them, for any
/// element type (sub-byte ones packed as the importer stored them: ONNX's raw
/// layout, two 4-bit values a byte, low first). Fails for other attributes
/// and for a blob that is gone.
mlir::FailureOr<llvm::ArrayRef<char>> resourceBytes(mlir::ElementsAttr attr);

} // namespace llmc

#endif // LLMC_SUPPORT_ELEMENTSDATA_H
