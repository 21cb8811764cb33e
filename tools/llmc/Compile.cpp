//===- Compile.cpp - `llmc compile` ---------------------------------------===//
//
// Import an ONNX model, run the pipeline up to the requested stage and write
// the IR. Progress goes to stderr on a terminal unless --quiet.
//
//===----------------------------------------------------------------------===//
#include "Compile.h"

#include "OpSummary.h"
#include "llmc/Artifact/ArtifactWriter.h"
#include "llmc/Artifact/GraphLibrary.h"
#include "llmc/Import/OnnxImporter.h"
#include "passes/Passes.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>

using namespace mlir;
namespace cl = llvm::cl;

namespace llmc {

cl::OptionCategory compileCategory("llmc compile options");

namespace {
enum class EmitKind { OnnxIR, LlmIR, StepIR, Artifact, GraphIR, Graph };

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"), cl::Required,
                               cl::cat(compileCategory));
cl::opt<EmitKind> emit(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::Artifact),
    cl::values(clEnumValN(EmitKind::OnnxIR, "onnx-ir", "the imported onnx dialect IR"),
               clEnumValN(EmitKind::LlmIR, "llm-ir", "the raised llm dialect IR"),
               clEnumValN(EmitKind::StepIR, "step-ir",
                          "the paged, ragged, planned llm step (before target lowering)"),
               clEnumValN(EmitKind::Artifact, "artifact",
                          "the compiled model directory (default; needs -o DIR)"),
               clEnumValN(EmitKind::GraphIR, "graph-ir",
                          "the whole graph lowered to loops on memrefs (fixed shapes)"),
               clEnumValN(EmitKind::Graph, "graph",
                          "the whole graph as one native function: graph.so + graph.json "
                          "(fixed shapes; needs -o DIR)")),
    cl::cat(compileCategory));
cl::opt<std::string> outputPath("o", cl::desc("Output: the artifact directory, or the IR file ('-' for stdout)"),
                                cl::value_desc("path"), cl::init("-"), cl::cat(compileCategory));
cl::opt<std::string> target("target", cl::desc("Where the artifact runs (only cpu, the host, so far)"),
                            cl::init("cpu"), cl::cat(compileCategory));
cl::opt<int64_t> blockSize("block-size", cl::desc("Tokens per KV-cache block"), cl::init(16),
                           cl::cat(compileCategory));
cl::opt<int64_t> maxNumBatchedTokens("max-num-batched-tokens",
                                     cl::desc("Most tokens one step carries (sizes the workspace)"),
                                     cl::init(2048), cl::cat(compileCategory));
cl::opt<int64_t> maxNumSeqs("max-num-seqs", cl::desc("Most sequences one step carries"),
                            cl::init(256), cl::cat(compileCategory));
cl::opt<std::string> matmul("matmul", cl::desc("CPU matrix products: blas or generated"),
                            cl::init("generated"), cl::cat(compileCategory));
cl::opt<bool> summary("summary", cl::desc("Print a per-layer op summary (to stderr when the IR goes to stdout)"),
                      cl::cat(compileCategory));
cl::opt<bool> keepWeights("keep-weights",
                          cl::desc("Print the weight blobs with the IR (left out by default)"),
                          cl::cat(compileCategory));
cl::opt<bool> allowLeftovers("allow-leftovers",
                             cl::desc("Keep onnx ops that raising did not handle instead of failing"),
                             cl::cat(compileCategory));
cl::opt<bool> quiet("quiet", cl::desc("No progress output"), cl::cat(compileCategory));
cl::opt<bool> json("json", cl::desc("Print the summary as JSON"), cl::cat(compileCategory));

/// The file name inside a location, if any.
std::string fileOf(Location loc) {
  std::string file;
  loc->walk([&](Location inner) {
    if (auto fileLoc = dyn_cast<FileLineColLoc>(inner)) {
      file = fileLoc.getFilename().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return file;
}

/// One line per diagnostic: "llmc: error: model.onnx: message".
LogicalResult printDiagnostic(Diagnostic &diagnostic) {
  auto &os = diagnostic.getSeverity() == DiagnosticSeverity::Error
                 ? llvm::WithColor::error(llvm::errs(), "llmc")
                 : llvm::WithColor::warning(llvm::errs(), "llmc");
  std::string file = fileOf(diagnostic.getLocation());
  if (!file.empty()) os << file << ": ";
  os << diagnostic.str() << "\n";
  return success();
}

/// Stage progress on stderr, when it is a terminal and --quiet is not given.
class Progress {
public:
  Progress() : enabled(!quiet && llvm::sys::Process::StandardErrIsDisplayed()) {}
  void stage(llvm::StringRef what) {
    finish();
    if (!enabled) return;
    llvm::errs() << "  " << what << " ...";
    start = std::chrono::steady_clock::now();
    open = true;
  }
  void finish() {
    if (!open) return;
    std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    llvm::errs() << llvm::formatv(" {0:f2} s\n", elapsed.count());
    open = false;
  }

private:
  bool enabled;
  bool open = false;
  std::chrono::steady_clock::time_point start;
};
} // namespace

int runCompile() {
  DialectRegistry registry;
  registry.insert<onnx::OnnxDialect, llm::LlmDialect, func::FuncDialect>();
  registerGraphLoweringDialects(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.getDiagEngine().registerHandler(printDiagnostic);

  // --mlir-timing reports the import next to each pass.
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope rootTiming = timing.getRootScope();

  Progress progress;
  progress.stage("importing " + inputPath);
  TimingScope importTiming = rootTiming.nest("import");
  OwningOpRef<ModuleOp> module = importOnnxModel(context, inputPath);
  importTiming.stop();
  if (!module) return 1;

  bool graph = emit == EmitKind::Graph || emit == EmitKind::GraphIR;
  bool directory = emit == EmitKind::Artifact || emit == EmitKind::Graph;
  if (directory && outputPath == "-") {
    llvm::WithColor::error(llvm::errs(), "llmc") << "this output is a directory: give -o DIR\n";
    return 1;
  }
  if (directory && target != "cpu") {
    llvm::WithColor::error(llvm::errs(), "llmc")
        << "unknown target '" << target << "': this llmc compiles for cpu\n";
    return 1;
  }

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm))) return 1;
  pm.enableTiming(rootTiming);
  GraphSignature signature;
  if (emit == EmitKind::OnnxIR) {
    pm.nest<func::FuncOp>().addPass(createOnnxShapeInferencePass());
    progress.stage("shape inference");
  } else if (graph) {
    // The graph's signature, with ONNX's element types, is read before the
    // lowering drops their signedness.
    progress.stage("shape inference");
    PassManager shapes(&context);
    shapes.nest<func::FuncOp>().addPass(createOnnxShapeInferencePass());
    if (failed(shapes.run(*module))) return 1;
    auto read = readGraphSignature(*module);
    if (failed(read)) return 1;
    signature = std::move(*read);
    buildGraphPipeline(pm);
    progress.stage("lowering the graph to loops");
  } else {
    buildRaisingPipeline(pm, allowLeftovers);
    if (emit == EmitKind::StepIR || emit == EmitKind::Artifact) {
      StepPipelineOptions options;
      options.blockSize = blockSize;
      options.maxNumBatchedTokens = maxNumBatchedTokens;
      options.maxNumSeqs = maxNumSeqs;
      options.matmul = matmul;
      buildStepPipeline(pm, options, /*lowerToCpu=*/emit == EmitKind::Artifact);
      progress.stage("raising, paging, ragged batching and CPU lowering");
    } else {
      progress.stage("shape inference and raising to llm");
    }
  }
  if (failed(pm.run(*module))) return 1;
  progress.finish();

  if (directory) {
    TimingScope writeTiming = rootTiming.nest(emit == EmitKind::Graph ? "graph library" : "artifact");
    CpuTargetInfo host = detectHostCpu();
    if (emit == EmitKind::Graph) {
      progress.stage("generating graph.so for " + host.cpu);
      if (failed(writeGraphLibrary(*module, signature, outputPath, host))) return 1;
    } else {
      auto stage = [&](llvm::StringRef what) { progress.stage(what); };
      if (failed(copyTokenizerFiles(*module, inputPath, outputPath))) return 1;
      if (failed(writeCpuArtifact(*module, outputPath, host, stage))) return 1;
    }
    progress.finish();
    if (!quiet) llvm::errs() << "llmc: wrote " << outputPath << "\n";
    return 0;
  }

  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output) {
    llvm::WithColor::error(llvm::errs(), "llmc") << error << "\n";
    return 1;
  }
  TimingScope printTiming = rootTiming.nest("print");
  // Without --keep-weights the blobs are left out entirely: printing in local
  // scope skips the resource section, which the printer would hex-encode in
  // full even to elide it (seconds and ~1 GB for a 135M model).
  OpPrintingFlags flags;
  if (!keepWeights) flags.useLocalScope();
  module->print(output->os(), flags);
  printTiming.stop();
  output->keep();
  if (summary) printOpSummary(*module, outputPath == "-" ? llvm::errs() : llvm::outs(), json);
  return 0;
}

} // namespace llmc
