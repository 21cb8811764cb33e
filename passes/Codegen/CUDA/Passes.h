//===- Passes.h - Codegen/CUDA passes ---------------------------*- C++ -*-===//
//
// The passes of code generation for NVIDIA GPUs, declared in Passes.td beside
// this header (their documentation is there); registerCodegenCUDAPasses()
// registers them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_CUDA_PASSES_H
#define LLMC_PASSES_CODEGEN_CUDA_PASSES_H

#include "dialects/llm/LlmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc {

#define GEN_PASS_DECL
#include "passes/Codegen/CUDA/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Codegen/CUDA/Passes.h.inc"

} // namespace llmc

#endif // LLMC_PASSES_CODEGEN_CUDA_PASSES_H
