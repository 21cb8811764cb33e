//===- Passes.h - Fusion passes ---------------------------------*- C++ -*-===//
//
// The passes of the fusions of the ragged llm step, declared in Passes.td
// beside this header (their documentation is there); registerFusionPasses()
// registers them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_FUSION_PASSES_H
#define LLMC_PASSES_FUSION_PASSES_H

#include "dialects/llm/LlmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc {

#define GEN_PASS_DECL
#include "passes/Fusion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Fusion/Passes.h.inc"

} // namespace llmc

#endif // LLMC_PASSES_FUSION_PASSES_H
