//===- OpRegistry.h - ONNX operators llmc imports, keyed by opset -*- C++ -*-===//
//
// The table of (domain, op_type) -> the onnx dialect op and its arity, with
// opset-specific rewrites of a node into the dialect's canonical form.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_LIB_IMPORT_OPREGISTRY_H
#define LLMC_LIB_IMPORT_OPREGISTRY_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace llmc::import {

/// How a node's ONNX-opset form differs from the dialect op's form.
enum class OpsetRewrite {
  None,
  /// Before opset 18, ReduceMean/Max/Min/Prod take `axes` as an attribute;
  /// the dialect op always takes it as operand 1.
  AxesAttributeToInput,
};

struct OpSchema {
  llvm::StringRef domain;      ///< "" for the default domain, or "com.microsoft".
  llvm::StringRef opType;      ///< ONNX op_type.
  llvm::StringRef dialectOp;   ///< Name of the onnx dialect op.
  int64_t sinceVersion;        ///< First opset of the domain that defines this form.
  int numInputs;               ///< Fixed operand count (optional ones padded), -1 variadic.
  int numOutputs;              ///< Fixed result count, -1 as many as the node names.
  OpsetRewrite rewrite = OpsetRewrite::None;
};

/// The schema of (domain, opType) at `opset`: the form with the newest
/// sinceVersion <= opset. Null when the op is not one llmc imports.
const OpSchema *lookupOpSchema(llvm::StringRef domain, llvm::StringRef opType, int64_t opset);

/// The oldest opset at which llmc knows (domain, opType), or -1.
int64_t firstKnownOpset(llvm::StringRef domain, llvm::StringRef opType);

} // namespace llmc::import

#endif // LLMC_LIB_IMPORT_OPREGISTRY_H
