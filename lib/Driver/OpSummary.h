//===- OpSummary.h - per-layer op counts of a compiled module ---*- C++ -*-===//
#ifndef LLMC_LIB_DRIVER_OPSUMMARY_H
#define LLMC_LIB_DRIVER_OPSUMMARY_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace llmc {

/// Prints how many ops of each kind each decoder layer has (layers with the
/// same counts are merged into one row), then the ops outside the layers.
/// Layers are told apart by the exporter's node names (".../layers.N/...").
void printOpSummary(mlir::ModuleOp module, llvm::raw_ostream &os, bool json);

} // namespace llmc

#endif // LLMC_LIB_DRIVER_OPSUMMARY_H
