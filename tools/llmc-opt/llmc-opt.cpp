//===- llmc-opt.cpp - mlir-opt for llmc's dialects and passes -------------===//
//
// Drives the lit tests: parses IR in the onnx and llm dialects (plus the
// upstream dialects the pipeline uses), runs llmc's passes and pipelines,
// and loads out-of-tree pass plugins with --load-pass-plugin.
//
//===----------------------------------------------------------------------===//
#include "dialects/llm/LlmDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "llmc/Support/Debug.h"
#include "passes/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Func/Extensions/InlinerExtension.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<llmc::onnx::OnnxDialect, llmc::llm::LlmDialect, mlir::func::FuncDialect>();
  mlir::func::registerInlinerExtension(registry);
  llmc::registerGraphLoweringDialects(registry);
  mlir::registerTransformsPasses();
  llmc::registerAllPasses();
  llmc::registerPipelines();
  llmc::registerDebugOnlyOption();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "llmc optimizer driver\n", registry));
}
