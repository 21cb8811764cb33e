//===- Passes.h - Serving passes --------------------------------*- C++ -*-===//
//
// The passes of the serving form of the llm step, declared in Passes.td beside
// this header (their documentation is there); registerServingPasses() registers
// them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_SERVING_PASSES_H
#define LLMC_PASSES_SERVING_PASSES_H

#include "dialects/llm/LlmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc {

#define GEN_PASS_DECL
#include "passes/Serving/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Serving/Passes.h.inc"

} // namespace llmc

#endif // LLMC_PASSES_SERVING_PASSES_H
