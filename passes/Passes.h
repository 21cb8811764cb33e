//===- Passes.h - llmc's compiler passes ------------------------*- C++ -*-===//
#ifndef LLMC_PASSES_PASSES_H
#define LLMC_PASSES_PASSES_H

#include "dialects/llm/LlmDialect.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Adds the import clean-up and raising passes: onnx ops in, llm ops out.
void buildRaisingPipeline(mlir::OpPassManager &pm, bool allowLeftovers = false);

/// Registers the named pipelines (e.g. `llmc-raise`) with the pass registry.
void registerPipelines();

} // namespace llmc

#endif // LLMC_PASSES_PASSES_H
