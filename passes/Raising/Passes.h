//===- Passes.h - Raising passes --------------------------------*- C++ -*-===//
//
// The passes of raising, onnx to llm, declared in Passes.td beside this header
// (their documentation is there); registerRaisingPasses() registers them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_RAISING_PASSES_H
#define LLMC_PASSES_RAISING_PASSES_H

#include "dialects/llm/LlmDialect.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc {

#define GEN_PASS_DECL
#include "passes/Raising/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Raising/Passes.h.inc"

} // namespace llmc

#endif // LLMC_PASSES_RAISING_PASSES_H
