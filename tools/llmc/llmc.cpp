//===- llmc.cpp - the llmc command-line tool ------------------------------===//
//
//   llmc compile model.onnx [--emit=onnx-ir|llm-ir] [-o FILE] [--summary]
//
// Errors are one line on stderr, `llmc: error: ...`, and a non-zero exit.
//
//===----------------------------------------------------------------------===//
#include "Compile.h"

#include "llmc/Support/Debug.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  llmc::registerDebugOnlyOption();
  llvm::cl::ParseCommandLineOptions(argc, argv, "llmc: a compiler for decoder-only LLMs\n");
  if (llmc::compileCommand) return llmc::runCompile();
  llvm::cl::PrintHelpMessage();
  return 1;
}
