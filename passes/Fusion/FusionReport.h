//===- FusionReport.h - what fusion did to a model, per layer kind -*- C++ -*-===//
//
// `llmc compile --dump-fusion-report` compiles the model's step twice, at
// -O0 and at the requested level, and compares the two planned steps read
// from the IR: kernels (ops that become a kernel call) and the activation
// bytes they read and write per decode token, per layer kind.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_FUSIONREPORT_H
#define LLMC_PASSES_FUSIONREPORT_H

#include "passes/Fusion/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace llmc {

/// One stretch of the step: the embedding, a decoder layer, the head.
struct StepSegment {
  std::string kind;          // "embedding", "layer", "head"
  std::string signature;     // the kernels' op names, in order
  int64_t kernels = 0;
  int64_t bytesPerToken = 0; // activations read + written, per decode token
};

/// The planned step function of `module` cut into segments: ops before the
/// first layer's input norm (the embedding), one segment per decoder layer
/// (from its input norm, the last norm before its KV write, to the next
/// layer's), and the head (from the last norm before the logits). Fails if
/// the module has no step function.
mlir::FailureOr<std::vector<StepSegment>> segmentStep(mlir::ModuleOp module);

/// Prints the report comparing `before` (unfused) and `after` segments of
/// one model, as text or JSON. Layers of the same kind (the same kernels,
/// before and after) share a line.
void printFusionReport(llvm::ArrayRef<StepSegment> before, llvm::ArrayRef<StepSegment> after,
                       unsigned optLevel, llvm::raw_ostream &os, bool json);

} // namespace llmc

#endif // LLMC_PASSES_FUSIONREPORT_H
