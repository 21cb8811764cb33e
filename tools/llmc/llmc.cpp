//===- llmc.cpp - the llmc command-line tool ------------------------------===//
//
//   llmc compile model.onnx [--emit=onnx-ir|llm-ir] [-o FILE] [--summary]
//   llmc quantize model.onnx -o q.onnx [--method rtn|awq|gptq] [--bits 4|8] ...
//   llmc run model.llmc --prompt-ids 1,2,3 [--max-tokens N] [--json] ...
//   llmc serve model.llmc [--host H] [--port P] [--api-key KEY] ...
//   llmc bench throughput model.llmc [--num-prompts N] [--max-concurrency C] ...
//   llmc bench serve --url URL [--request-rate R] [--num-prompts N] ...
//
// Errors are one line on stderr, `llmc: error: ...`, and a non-zero exit.
//
//===----------------------------------------------------------------------===//
#include "Bench.h"
#include "CompileFlags.h"
#include "Quantize.h"
#include "Run.h"
#include "Serve.h"

#include "llmc/Support/Debug.h"
#include "passes/Pipelines/Pipelines.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  // `llmc <command> ...`: the command picks what runs; its options and MLIR's
  // (--mlir-print-ir-after-all, --mlir-timing, ...) are parsed after it.
  llvm::StringRef command = argc > 1 ? argv[1] : "";
  if (command == "run") return llmc::runRun(std::vector<std::string>(argv + 2, argv + argc));
  if (command == "serve") return llmc::runServe(std::vector<std::string>(argv + 2, argv + argc));
  if (command == "bench") return llmc::runBench(std::vector<std::string>(argv + 2, argv + argc));
  if (command == "quantize")
    return llmc::runQuantize(std::vector<std::string>(argv + 2, argv + argc));
  if (command != "compile") {
    llvm::errs() << "usage: llmc compile model.onnx [options]   (llmc compile --help for the options)\n"
                    "       llmc quantize model.onnx -o q.onnx [options]   (llmc quantize --help)\n"
                    "       llmc run model.llmc --prompt-ids 1,2,3 [options]   (llmc run --help)\n"
                    "       llmc serve model.llmc [--port P] [options]   (llmc serve --help)\n"
                    "       llmc bench throughput model.llmc [options]   (llmc bench --help)\n"
                    "       llmc bench serve --url URL [options]   (llmc bench serve --help)\n";
    return command == "--help" || command == "-h" ? 0 : 1;
  }
  // First the passes: --mlir-print-ir-after=<pass> takes their names.
  llmc::registerAllPasses();
  // Pipeline text (--insert-passes, --pass-pipeline, --mlir-print-ir-after) may
  // name llmc's pipelines and MLIR's generic transforms.
  llmc::registerPipelines();
  mlir::registerTransformsPasses();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  llmc::registerDebugOnlyOption();
  llvm::cl::HideUnrelatedOptions(llmc::compileCategory);
  std::vector<const char *> args = {"llmc compile"};
  args.insert(args.end(), argv + 2, argv + argc);
  llvm::cl::ParseCommandLineOptions(int(args.size()), args.data(),
                                    "llmc compile: an ONNX decoder in, a model.llmc artifact (or its IR at a stage) out\n\n  MLIR's --mlir-* printing and timing options and -debug-only=<pass> also apply\n  (--help-hidden lists them).\n");
  return llmc::runCompileCommand();
}
