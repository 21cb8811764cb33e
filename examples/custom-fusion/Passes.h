//===- Passes.h - the example plugin's passes -------------------*- C++ -*-===//
#ifndef LLMC_EXAMPLE_CUSTOM_FUSION_PASSES_H
#define LLMC_EXAMPLE_CUSTOM_FUSION_PASSES_H

#include "dialects/llm/LlmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc_example {

// createFuseGatedActivationPass() and the options struct.
#define GEN_PASS_DECL
#include "Passes.h.inc"

// registerFuseGatedActivationPass() and registerLlmcExampleFusionPasses().
#define GEN_PASS_REGISTRATION
#include "Passes.h.inc"

} // namespace llmc_example

#endif // LLMC_EXAMPLE_CUSTOM_FUSION_PASSES_H
