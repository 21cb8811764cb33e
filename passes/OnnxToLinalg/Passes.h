//===- Passes.h - OnnxToLinalg passes ---------------------------*- C++ -*-===//
//
// The passes of whole-graph lowering, onnx to linalg, declared in Passes.td
// beside this header (their documentation is there);
// registerOnnxToLinalgPasses() registers them.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_ONNXTOLINALG_PASSES_H
#define LLMC_PASSES_ONNXTOLINALG_PASSES_H

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc {

#define GEN_PASS_DECL
#include "passes/OnnxToLinalg/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/OnnxToLinalg/Passes.h.inc"

} // namespace llmc

#endif // LLMC_PASSES_ONNXTOLINALG_PASSES_H
