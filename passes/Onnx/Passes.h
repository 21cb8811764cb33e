//===- Passes.h - Onnx passes -----------------------------------*- C++ -*-===//
//
// The passes of the onnx dialect's clean-up after import, declared in Passes.td
// beside this header (their documentation is there); registerOnnxPasses()
// registers them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_ONNX_PASSES_H
#define LLMC_PASSES_ONNX_PASSES_H

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc {

#define GEN_PASS_DECL
#include "passes/Onnx/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Onnx/Passes.h.inc"

} // namespace llmc

#endif // LLMC_PASSES_ONNX_PASSES_H
