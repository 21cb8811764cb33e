//===- Passes.h - Codegen/Common passes -------------------------*- C++ -*-===//
//
// The passes of code generation shared by the targets, declared in Passes.td
// beside this header (their documentation is there);
// registerCodegenCommonPasses() registers them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_COMMON_PASSES_H
#define LLMC_PASSES_CODEGEN_COMMON_PASSES_H

#include "dialects/llm/LlmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc {

#define GEN_PASS_DECL
#include "passes/Codegen/Common/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Codegen/Common/Passes.h.inc"

} // namespace llmc

#endif // LLMC_PASSES_CODEGEN_COMMON_PASSES_H
