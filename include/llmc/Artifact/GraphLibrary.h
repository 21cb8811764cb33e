//===- GraphLibrary.h - a whole ONNX graph as one native function -*- C++ -*-===//
//
// `llmc compile --emit=graph -o DIR` writes DIR/graph.so, whose function
// `_mlir_ciface_main_graph` takes one memref descriptor per graph input, then
// one per output (written by the call), and DIR/graph.json, which lists them
// (docs/artifact.md, "Graph libraries"). Shapes are fixed at compile time.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_ARTIFACT_GRAPHLIBRARY_H
#define LLMC_ARTIFACT_GRAPHLIBRARY_H

#include "llmc/Target/CpuTarget.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace llmc {

/// One input or output of the graph function.
struct GraphValue {
  std::string name;           // the ONNX value name
  std::string dtype;          // numpy's name: float32, int64, bool, uint8, bfloat16, ...
  std::vector<int64_t> shape; // static
};

struct GraphSignature {
  std::vector<GraphValue> inputs, outputs;
};

/// The signature of `main_graph` in an imported, shape-inferred onnx module.
/// Fails, with a diagnostic, when a shape is not static or an element type
/// has no numpy name.
mlir::FailureOr<GraphSignature> readGraphSignature(mlir::ModuleOp module);

/// Compiles a module that buildGraphPipeline lowered into DIR/graph.so for
/// `target` (its code from `kernelCache` where it holds it) and writes
/// DIR/graph.json. Errors are diagnostics on the module.
mlir::LogicalResult writeGraphLibrary(mlir::ModuleOp module, const GraphSignature &signature,
                                      llvm::StringRef directory, const CpuTargetInfo &target,
                                      const CodeUnitCache &kernelCache);

} // namespace llmc

#endif // LLMC_ARTIFACT_GRAPHLIBRARY_H
