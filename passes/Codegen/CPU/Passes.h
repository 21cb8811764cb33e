//===- Passes.h - Codegen/CPU passes ----------------------------*- C++ -*-===//
//
// The passes of code generation for the host CPU, declared in Passes.td beside
// this header (their documentation is there); registerCodegenCPUPasses()
// registers them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_CPU_PASSES_H
#define LLMC_PASSES_CODEGEN_CPU_PASSES_H

#include "dialects/llm/LlmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc {

#define GEN_PASS_DECL
#include "passes/Codegen/CPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Codegen/CPU/Passes.h.inc"

} // namespace llmc

#endif // LLMC_PASSES_CODEGEN_CPU_PASSES_H
