//===- Compile.cpp - the compiler driver ----------------------------------===//
//
// Import an ONNX model, run the pipeline up to the requested stage and write
// the IR or the artifact. Progress goes to stderr on a terminal unless
// quiet. Options and errors are named as `llmc compile` spells them.
//
// The pipeline is the default one of the -O level, with the passes of
// --insert-passes at its extension points (after-raising, before-fusion,
// before-lowering), or the one --pass-pipeline gives instead. Passes may come
// from plugins (--load-pass-plugin): shared libraries built against an
// installed llmc (docs/writing-a-fusion-pass.md), loaded before any pipeline
// text is parsed.
//
//===----------------------------------------------------------------------===//
#include "llmc/Driver/Compile.h"
#include "llmc/Support/AmxTileData.h"

#include "OpSummary.h"
#include "dialects/llm/LlmDialect.h"
#include "dialects/onnx/OnnxDialect.h"
#include "llmc/Artifact/ArtifactWriter.h"
#include "llmc/Artifact/ModelConfig.h"
#include "llmc/Artifact/StepInfo.h"
#include "llmc/Artifact/GraphLibrary.h"
#include "llmc/Import/OnnxImporter.h"
#include "passes/Fusion/FusionReport.h"
#include "passes/Onnx/Passes.h"
#include "passes/Pipelines/Pipelines.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <chrono>

using namespace mlir;

namespace llmc {

namespace {

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
  explicit Progress(bool quiet)
      : enabled(!quiet && llvm::sys::Process::StandardErrIsDisplayed()) {}
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

/// `llmc: error: ` on stderr.
llvm::raw_ostream &error() { return llvm::WithColor::error(llvm::errs(), "llmc"); }

/// Whether the host CPU has LLVM feature `feature` ("+avx2").
bool hostHasFeature(llvm::StringRef feature) {
  return llvm::StringRef(detectHostCpu().features).contains(feature);
}

/// Whether the host CPU has LLVM feature `feature` (`name` to users); if
/// not, says that `flag` needs it.
bool hostHas(llvm::StringRef feature, llvm::StringRef name, llvm::StringRef flag) {
  if (hostHasFeature(feature)) return true;
  error() << flag << " needs a CPU with " << name << "; this one (" << detectHostCpu().cpu
          << ") has none\n";
  return false;
}

/// Checks --int8-products and makes "auto" the host's best: VNNI where it
/// has it (every x86 host with VNNI has AVX2 too). False, having said why,
/// when the name is unknown or the host lacks the instructions.
bool resolveInt8Products(std::string &products) {
  if (!llvm::is_contained({"auto", "avx512-vnni", "avx2"}, products)) {
    error() << "unknown --int8-products '" << products << "': use auto, avx512-vnni or avx2\n";
    return false;
  }
  std::string flag = "--int8-products=" + products;
  if (products == "auto") {
    products = hostHasFeature("+avx512vnni") ? "avx512-vnni" : "avx2";
    flag = "--int8-activations";
  }
  bool vnni = products == "avx512-vnni";
  return hostHas(vnni ? "+avx512vnni" : "+avx2", vnni ? "AVX512-VNNI" : "AVX2", flag);
}

/// Checks --bf16-products and makes "auto" the host's best: AMX tiles where
/// it has AMX-BF16 and the kernel grants this process the tile state, else
/// AVX512_BF16. False, having said why, when the name is unknown or the host
/// cannot run AMX tiles that were asked for.
bool resolveBf16Products(std::string &products) {
  if (!llvm::is_contained({"auto", "amx", "avx512-bf16"}, products)) {
    error() << "unknown --bf16-products '" << products << "': use auto, amx or avx512-bf16\n";
    return false;
  }
  if (products == "auto") {
    products = hostHasFeature("+amx-bf16") && requestAmxTileData().empty() ? "amx"
                                                                           : "avx512-bf16";
    return true;
  }
  if (products != "amx") return true;
  if (!hostHas("+amx-bf16", "AMX-BF16", "--bf16-products=amx")) return false;
  std::string refused = requestAmxTileData();
  if (refused.empty()) return true;
  error() << "--bf16-products=amx: " << refused << "\n";
  return false;
}

/// Whether the imported file asks for int8 activations: it has MatMulNBits
/// and every one says accuracy_level 4, which lets onnxruntime quantise the
/// activations to int8 (the genai builder's int4 CPU models). A file that
/// asks for the exact product anywhere gets it everywhere.
bool fileAsksForInt8Activations(ModuleOp module) {
  bool any = false, all = true;
  module.walk([&](onnx::MatMulNBitsOp op) {
    any = true;
    all &= op.getAccuracyLevel() == 4;
  });
  return any && all;
}

/// A pass pipeline parser's message on one line: the parser prints
/// "MLIR Textual PassPipeline Parser:1:5: error: MESSAGE", then the pipeline
/// and a caret under the column; the message alone is what the user needs.
std::string oneLine(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  // A pass of another anchor at the top level: the useful line is the first.
  if (!lines.empty() && lines.front().contains("did you intend to nest?"))
    return (lines.front().trim() + " (a func.func pass goes inside func.func(...))").str();
  for (llvm::StringRef line : lines) {
    size_t at = line.find("error: ");
    if (at != llvm::StringRef::npos) return line.drop_front(at + 7).trim().str();
  }
  std::string joined;
  for (llvm::StringRef line : lines) {
    if (line.trim().empty()) continue;
    if (!joined.empty()) joined += "; ";
    joined += line.trim().str();
  }
  return joined.empty() ? "invalid pass pipeline" : joined;
}

/// The extension points the pipeline of `kind` reaches, in order.
llvm::ArrayRef<llvm::StringLiteral> reachedExtensionPoints(EmitKind kind) {
  switch (kind) {
  case EmitKind::LlmIR:
    return llvm::ArrayRef(kExtensionPoints).take_front(1);
  case EmitKind::StepIR:
  case EmitKind::Artifact:
    return kExtensionPoints;
  default:
    return {};
  }
}

/// PassPlugin::load's message, without the repetition of the path.
std::string pluginLoadError(llvm::StringRef path, llvm::StringRef message) {
  message = message.trim();
  if (message.starts_with("Plugin entry point not found"))
    return "it defines no mlirGetPassPluginInfo(): not an MLIR pass plugin";
  // "Could not load library 'PATH': <dlerror>", dlerror starting "PATH: ".
  if (message.consume_front("Could not load library '")) {
    message = message.split("': ").second;
    message.consume_front((path + ": ").str());
    if (message.contains("undefined symbol"))
      return (message + " (was the plugin built against this llmc's install and its MLIR?)")
          .str();
  }
  return message.str();
}

/// Loads every --load-pass-plugin library and registers its passes (and
/// pipelines): after this, pipeline text may name them.
LogicalResult loadPassPlugins(const std::vector<std::string> &passPlugins) {
  for (const std::string &path : passPlugins) {
    if (!llvm::sys::fs::exists(path)) {
      error() << "cannot load pass plugin '" << path << "': no such file\n";
      return failure();
    }
    llvm::Expected<PassPlugin> plugin = PassPlugin::load(path);
    if (!plugin) {
      error() << "cannot load pass plugin '" << path
              << "': " << pluginLoadError(path, llvm::toString(plugin.takeError())) << "\n";
      return failure();
    }
    plugin->registerPassRegistryCallbacks();
  }
  return success();
}

/// --insert-passes as the pipeline options' extensions: POINT=PIPELINE, the
/// pipelines of one point joined in the order given. Each pipeline is
/// parsed here once (after the plugins are loaded), so that a bad one is an
/// error naming its flag.
LogicalResult parseInsertPasses(EmitKind kind, const std::vector<std::string> &insertPasses,
                                llvm::StringMap<std::string> &extensions) {
  llvm::ArrayRef<llvm::StringLiteral> reached = reachedExtensionPoints(kind);
  for (const std::string &item : insertPasses) {
    auto [point, pipeline] = llvm::StringRef(item).split('=');
    if (point.size() == item.size() || point.empty()) {
      error() << "--insert-passes expects POINT=PIPELINE, got '" << item << "'\n";
      return failure();
    }
    if (!llvm::is_contained(kExtensionPoints, point)) {
      error() << "unknown extension point '" << point << "' in --insert-passes: use "
              << llvm::join(llvm::ArrayRef(kExtensionPoints), ", ") << "\n";
      return failure();
    }
    if (!llvm::is_contained(reached, point)) {
      error() << "--insert-passes=" << point << "=...: --emit=" << emitName(kind)
              << " stops before " << point
              << (kind == EmitKind::LlmIR ? " (only after-raising applies)" : "") << "\n";
      return failure();
    }
    if (pipeline.trim().empty()) {
      error() << "--insert-passes=" << point << "=: no passes given\n";
      return failure();
    }
    std::string message;
    llvm::raw_string_ostream os(message);
    OpPassManager scratch(ModuleOp::getOperationName());
    if (failed(parsePassPipeline(pipeline, scratch, os))) {
      error() << "--insert-passes=" << point << ": " << oneLine(message) << "\n";
      return failure();
    }
    std::string &joined = extensions[point];
    if (!joined.empty()) joined += ",";
    joined += pipeline.str();
  }
  return success();
}

/// --pass-pipeline, parsed into `pm` in place of the default pipeline.
LogicalResult parseReplacementPipeline(StringRef passPipeline, PassManager &pm) {
  std::string message;
  llvm::raw_string_ostream os(message);
  FailureOr<OpPassManager> parsed = parsePassPipeline(passPipeline, os);
  if (failed(parsed)) {
    error() << "--pass-pipeline: " << oneLine(message) << "\n";
    return failure();
  }
  llvm::StringRef anchor = parsed->getOpAnchorName();
  if (anchor != ModuleOp::getOperationName() && anchor != OpPassManager::getAnyOpAnchorName()) {
    error() << "--pass-pipeline runs on the imported module: anchor it with "
               "builtin.module(...), not " << anchor << "(...)\n";
    return failure();
  }
  static_cast<OpPassManager &>(pm) = std::move(*parsed);
  return success();
}

/// What the progress line says the default pipeline does.
std::string pipelineStage(const CompileOptions &options, unsigned optLevel) {
  EmitKind kind = options.emit;
  std::string stage;
  if (kind == EmitKind::LlmIR) stage = "shape inference and raising to llm";
  else if (kind == EmitKind::StepIR)
    stage = llvm::formatv("raising, paging, ragged batching and fusion (-O{0})",
                          optLevel);
  else
    stage = llvm::formatv("raising, paging, ragged batching, fusion (-O{0}) and CPU lowering",
                          optLevel);
  if (!options.insertPasses.empty()) stage += ", with the inserted passes";
  return stage;
}

/// Bounds the manifest's max_positions by --max-model-len; an error when the
/// model holds fewer positions than that.
LogicalResult boundPositions(ModuleOp module, int64_t maxModelLen) {
  FailureOr<StepInfo> info = getStepInfo(module);
  if (failed(info)) return failure();
  if (info->maxPositions && info->maxPositions < maxModelLen)
    return module.emitError("--max-model-len ")
           << maxModelLen << " is more than the " << info->maxPositions
           << " positions the model holds (its rotary tables, position embeddings or "
              "config)",
           failure();
  info->maxPositions = maxModelLen;
  setStepInfo(module, *info);
  return success();
}

/// The planned step of `imported` (cloned) at `options`' level and at -O0,
/// compared by printFusionReport.
LogicalResult printFusionReportOf(ModuleOp imported, const StepPipelineOptions &options,
                                  const RaisingPipelineOptions &raising, bool json,
                                  llvm::raw_ostream &os) {
  auto plannedStep = [&](unsigned level) -> FailureOr<std::vector<StepSegment>> {
    OwningOpRef<ModuleOp> module = imported.clone();
    StepPipelineOptions atLevel = options;
    atLevel.optLevel = level;
    PassManager pm(imported.getContext());
    buildRaisingPipeline(pm, raising);
    std::string errors;
    llvm::raw_string_ostream errorStream(errors);
    if (failed(addExtensionPasses(pm, atLevel, "after-raising", errorStream)) ||
        failed(buildStepPipeline(pm, atLevel, /*lowerToTarget=*/false, errorStream))) {
      error() << oneLine(errors) << "\n";
      return failure();
    }
    if (failed(pm.run(*module))) return failure();
    return segmentStep(*module);
  };
  auto before = plannedStep(0);
  if (failed(before)) return failure();
  auto after = plannedStep(options.optLevel);
  if (failed(after)) return failure();
  printFusionReport(*before, *after, options.optLevel, os, json);
  return success();
}
} // namespace

const char *emitName(EmitKind kind) {
  switch (kind) {
  case EmitKind::OnnxIR: return "onnx-ir";
  case EmitKind::LlmIR: return "llm-ir";
  case EmitKind::StepIR: return "step-ir";
  case EmitKind::Artifact: return "artifact";
  case EmitKind::GraphIR: return "graph-ir";
  case EmitKind::Graph: return "graph";
  }
  return "?";
}

int runCompile(const CompileOptions &options) {
  const std::string &inputPath = options.inputPath, &outputPath = options.outputPath;
  const std::string &target = options.target;
  EmitKind emit = options.emit;
  unsigned optLevel = options.optLevel.value_or(2);
  const std::vector<std::string> &insertPasses = options.insertPasses;
  bool graph = emit == EmitKind::Graph || emit == EmitKind::GraphIR;
  bool directory = emit == EmitKind::Artifact || emit == EmitKind::Graph;
  bool customPipeline = options.passPipeline.has_value();
  // Every usage error before the import, which takes a while on a real model.
  if (directory && outputPath == "-") {
    error() << "this output is a directory: give -o DIR\n";
    return 1;
  }
  if (options.maxModelLen && *options.maxModelLen <= 0) {
    error() << "--max-model-len must be a positive number of tokens, not "
            << *options.maxModelLen << "\n";
    return 1;
  }
  bool cuda = StringRef(target).starts_with("cuda");
  CudaTargetInfo cudaTarget;
  if (cuda) {
    std::string targetError;
    auto parsed = parseCudaTarget(target, targetError);
    if (failed(parsed)) {
      error() << targetError << "\n";
      return 1;
    }
    cudaTarget = *parsed;
    std::string dtype = options.dtype.value_or("bf16");
    if (dtype != "bf16" && dtype != "f16") {
      error() << "--dtype must be bf16 or f16, not '" << dtype << "'\n";
      return 1;
    }
    cudaTarget.dtype = dtype;
    if (graph) {
      error() << "--emit=" << emitName(emit) << " builds for the host CPU: use --target cpu\n";
      return 1;
    }
  } else if (target != "cpu") {
    error() << "unknown target '" << target << "': use cpu, cuda or cuda:sm_XX\n";
    return 1;
  } else if (options.dtype && !llvm::is_contained({"f32", "bf16", "f16"}, *options.dtype)) {
    error() << "--dtype " << *options.dtype
            << ": the CPU target stores weights as f32, bf16 or f16\n";
    return 1;
  } else if (options.dtype && *options.dtype != "f32" && options.matmul != "generated") {
    error() << "--dtype " << *options.dtype
            << " needs the generated matmul: sgemm reads f32 weights\n";
    return 1;
  }
  // With --int8-activations, the instructions of its products; without the
  // flag the file decides after the import (fileAsksForInt8Activations).
  std::string int8Products = options.int8Products;
  bool int8Applies = !cuda && options.matmul == "generated";
  if (options.int8Activations == false && int8Products != "auto") {
    error() << "--int8-products applies with --int8-activations\n";
    return 1;
  }
  if (options.int8Activations.value_or(false)) {
    if (!int8Applies) {
      error() << "--int8-activations applies to the CPU target's generated matmul\n";
      return 1;
    }
    if (!resolveInt8Products(int8Products)) return 1;
  }
  std::string bf16Products = options.bf16Products;
  if (options.bf16Activations) {
    if (cuda || options.dtype.value_or("") != "bf16") {
      error() << "--bf16-activations multiplies the CPU target's bf16 weights: add --dtype bf16\n";
      return 1;
    }
    if (!resolveBf16Products(bf16Products) ||
        !hostHas("+avx512bf16", "AVX512_BF16", "--bf16-activations"))
      return 1;
  } else if (bf16Products != "auto") {
    error() << "--bf16-products applies with --bf16-activations\n";
    return 1;
  }
  if (options.kvCacheDtype != "auto" && options.kvCacheDtype != "bf16" &&
      options.kvCacheDtype != "int8") {
    error() << "unknown --kv-cache-dtype '" << options.kvCacheDtype
            << "': use auto, bf16 or int8\n";
    return 1;
  }
  if (options.kvCacheDtype != "auto" && cuda) {
    error() << "--kv-cache-dtype " << options.kvCacheDtype
            << " applies to the CPU target; the CUDA target caches K/V in its --dtype\n";
    return 1;
  }
  if (options.kvCacheDtype != "auto" && graph) {
    error() << "--kv-cache-dtype applies to the paged step; --emit=" << emitName(emit)
            << " has no KV cache\n";
    return 1;
  }
  if (optLevel > 3) {
    error() << "unknown optimization level -O" << optLevel << ": use -O0, -O1, -O2 or -O3\n";
    return 1;
  }
  if (customPipeline) {
    if (!insertPasses.empty()) {
      error() << "--pass-pipeline replaces the default pipeline, which --insert-passes adds "
                 "to: give one or the other\n";
      return 1;
    }
    if (options.optLevel) {
      error() << "-O applies to the default pipeline: with --pass-pipeline, give the level to "
                 "the pipelines (e.g. llmc-step{opt-level=" << optLevel << "})\n";
      return 1;
    }
    if (graph) {
      error() << "--pass-pipeline does not apply to --emit=" << emitName(emit)
              << ": use --emit=onnx-ir, llm-ir, step-ir or artifact\n";
      return 1;
    }
  }
  if (options.dumpFusionReport && (customPipeline || graph || emit == EmitKind::OnnxIR ||
                           emit == EmitKind::LlmIR)) {
    error() << "--dump-fusion-report compares the default pipeline's steps: use it with "
               "--emit=step-ir or artifact, without --pass-pipeline\n";
    return 1;
  }
  if (!insertPasses.empty() && reachedExtensionPoints(emit).empty()) {
    error() << "--insert-passes does not apply to --emit=" << emitName(emit)
            << ": use --emit=llm-ir (after-raising), step-ir or artifact\n";
    return 1;
  }

  // Plugins first: the pipelines below may name their passes.
  Progress progress(options.quiet);
  if (!options.passPlugins.empty()) progress.stage("loading pass plugins");
  if (failed(loadPassPlugins(options.passPlugins))) return 1;
  StepPipelineOptions step;
  step.blockSize = options.blockSize;
  step.kvCacheDtype = options.kvCacheDtype;
  step.latentKvCache = options.latentKvCache;
  step.kvCacheGroups = options.kvCacheGroups;
  step.maxNumBatchedTokens = options.maxNumBatchedTokens;
  step.maxNumSeqs = options.maxNumSeqs;
  step.matmul = options.matmul;
  step.int8Activations = options.int8Activations.value_or(false);
  if (step.int8Activations) step.int8Products = int8Products;
  // On the CPU, without --dtype, each matmul weight takes the narrowest type
  // that holds its values exactly (a half-precision export's, widened by
  // onnx-promote-to-f32, narrows back).
  if (!cuda) step.cpuWeightDtype = options.dtype.value_or(
                 options.matmul == "generated" ? "auto" : "f32");
  step.bf16Activations = options.bf16Activations;
  if (step.bf16Activations) step.bf16Products = bf16Products;
  step.cpuAvx512 = !cuda && hostHasFeature("+avx512f");
  step.optLevel = optLevel;
  if (options.enableLora && cuda) {
    error() << "--enable-lora: LoRA adapters are served on the CPU target only\n";
    return 1;
  }
  step.loraSites = options.enableLora;
  if (cuda) {
    step.target = "cuda";
    step.cudaArch = cudaTarget.arch;
    step.dtype = cudaTarget.dtype;
  }
  if (failed(parseInsertPasses(emit, insertPasses, step.extensions))) return 1;
  if (!options.classifierFromTokens.empty()) {
    if (options.classifierFromTokens.size() > 2) {
      error() << "--classifier-from-token takes one token or two (no,yes), not "
              << options.classifierFromTokens.size() << "\n";
      return 1;
    }
    llvm::Expected<std::vector<int64_t>> ids =
        readTokenIds(inputPath, options.classifierFromTokens);
    if (!ids) {
      error() << "--classifier-from-token: " << llvm::toString(ids.takeError()) << "\n";
      return 1;
    }
    step.classifierTokenIds = std::move(*ids);
  }
  // The exporter's config is read before compiling (a model the compiled step
  // would compute wrongly is refused first, once the module can say where):
  // its LongRoPE switch bounds an export that traced one side of it.
  ExporterConfig exporterConfig;
  std::optional<std::string> exporterConfigError;
  if (llvm::Expected<ExporterConfig> read = readExporterConfig(inputPath))
    exporterConfig = *read;
  else
    exporterConfigError = llvm::toString(read.takeError());
  if (options.matryoshkaDimensions) {
    llvm::Expected<std::vector<int64_t>> widths =
        parseMatryoshkaDimensions(*options.matryoshkaDimensions);
    if (!widths) {
      error() << "--matryoshka-dimensions: " << llvm::toString(widths.takeError()) << "\n";
      return 1;
    }
    exporterConfig.matryoshkaDimensions = std::move(*widths);
  }
  RaisingPipelineOptions raising;
  raising.allowLeftovers = options.allowLeftovers;
  raising.maxPositions = options.maxModelLen.value_or(0);
  raising.tracedRopeSwitch = exporterConfig.longRopeSwitch.value_or(0);
  raising.tracedRopeShortFactors = exporterConfig.longRopeShortFactors;
  raising.ropeLongFactors = exporterConfig.longRopeLongFactors;
  // A --pass-pipeline raises without that length, so it bounds the whole
  // artifact: never past what a traced export computes exactly.
  if (customPipeline && exporterConfig.longRopeSwitch)
    exporterConfig.maxPositionEmbeddings =
        std::min(exporterConfig.maxPositionEmbeddings.value_or(*exporterConfig.longRopeSwitch),
                 *exporterConfig.longRopeSwitch);

  DialectRegistry registry;
  registry.insert<onnx::OnnxDialect, llm::LlmDialect, func::FuncDialect>();
  registerGraphLoweringDialects(registry);
  registerCudaTargetInterfaces(registry);
  MLIRContext context(registry);
  context.loadAllAvailableDialects();
  context.getDiagEngine().registerHandler(printDiagnostic);

  PassManager pm(&context);
  if (customPipeline && failed(parseReplacementPipeline(*options.passPipeline, pm))) return 1;
  if (options.configurePassManager && failed(options.configurePassManager(pm))) return 1;

  // --mlir-timing reports the import next to each pass.
  DefaultTimingManager timing;
  applyDefaultTimingManagerCLOptions(timing);
  TimingScope rootTiming = timing.getRootScope();

  progress.stage("importing " + inputPath);
  TimingScope importTiming = rootTiming.nest("import");
  OwningOpRef<ModuleOp> module = importOnnxModel(context, inputPath);
  importTiming.stop();
  if (!module) return 1;
  // Without --int8-activations, what the file asks for, where it can be had.
  std::optional<std::string> activationsNote;
  if (step.bf16Activations)
    activationsNote = step.bf16Products == "amx" ? "bf16 products on AMX tiles"
                                                 : "bf16 products with AVX512_BF16";
  if (!options.int8Activations && !graph) {
    bool asked = fileAsksForInt8Activations(*module);
    if (int8Products != "auto" && !(asked && int8Applies)) {
      if (!asked)
        error() << "--int8-products applies with --int8-activations, which this file does not "
                   "ask for (MatMulNBits' accuracy_level 4)\n";
      else
        error() << "--int8-products applies to the CPU target's generated matmul\n";
      return 1;
    }
    if (asked && int8Applies) {
      if (int8Products != "auto" || hostHasFeature("+avx2")) {
        if (!resolveInt8Products(int8Products)) return 1;
        step.int8Activations = true;
        step.int8Products = int8Products;
        activationsNote = "int8 activations, as the file's MatMulNBits ask (accuracy_level 4)";
      } else {
        activationsNote = "the exact product: the file's MatMulNBits ask for int8 "
                          "activations, for which this CPU has neither AVX512-VNNI nor AVX2";
      }
    }
  }

  if (options.dumpFusionReport) {
    progress.stage("fusion report: the step at -O0 and -O" + std::to_string(optLevel));
    bool irOnStdout = emit != EmitKind::Artifact && outputPath == "-";
    if (failed(printFusionReportOf(*module, step, raising, options.json,
                                   irOnStdout ? llvm::errs() : llvm::outs())))
      return 1;
  }

  pm.enableTiming(rootTiming);
  GraphSignature signature;
  std::string pipelineErrors;
  llvm::raw_string_ostream pipelineErrorStream(pipelineErrors);
  if (customPipeline) {
    progress.stage("running --pass-pipeline");
  } else if (emit == EmitKind::OnnxIR) {
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
    buildRaisingPipeline(pm, raising);
    // The pipelines were parsed once above: these cannot fail but for a bug.
    if (failed(addExtensionPasses(pm, step, "after-raising", pipelineErrorStream))) {
      error() << oneLine(pipelineErrors) << "\n";
      return 1;
    }
    if (emit == EmitKind::StepIR || emit == EmitKind::Artifact) {
      if (failed(buildStepPipeline(pm, step, /*lowerToTarget=*/emit == EmitKind::Artifact,
                                   pipelineErrorStream))) {
        error() << oneLine(pipelineErrors) << "\n";
        return 1;
      }
    }
    progress.stage(pipelineStage(options, optLevel));
  }
  if (exporterConfigError) {
    module->emitError(*exporterConfigError);
    return 1;
  }
  if (failed(pm.run(*module))) return 1;
  progress.finish();
  bool lowered = cuda ? (*module)->hasAttr("llmc.cuda_plan") : !!module->lookupSymbol("llmc_step");
  if (customPipeline && emit == EmitKind::Artifact && !lowered) {
    error() << "--pass-pipeline did not lower the model: for --emit=artifact it must end with "
            << (cuda ? "llm-lower-to-cuda" : "llm-lower-to-cpu")
            << " (e.g. builtin.module(llmc-raise,llmc-step,"
            << (cuda ? "llm-lower-to-cuda" : "llm-lower-to-cpu")
            << ")), or use --emit=llm-ir or step-ir to print the IR\n";
    return 1;
  }

  if (directory) {
    std::optional<int64_t> weightsBytes;
    TimingScope writeTiming = rootTiming.nest(emit == EmitKind::Graph ? "graph library" : "artifact");
    CpuTargetInfo host = detectHostCpu();
    CodeUnitCache kernelCache(options.kernelCache ? CodeUnitCache::defaultDirectory()
                                                  : std::string());
    std::optional<CodeUnitCounts> codeUnits;
    if (emit == EmitKind::Graph) {
      progress.stage("generating graph.so for " + host.cpu);
      if (failed(writeGraphLibrary(*module, signature, outputPath, host, kernelCache))) return 1;
    } else {
      auto stage = [&](llvm::StringRef what) { progress.stage(what); };
      if (failed(applyExporterConfig(*module, exporterConfig)) ||
          (options.maxModelLen && failed(boundPositions(*module, *options.maxModelLen))) ||
          failed(copyTokenizerFiles(*module, inputPath, outputPath)))
        return 1;
      if (options.matryoshkaDimensions && !(*module)->hasAttr(kMatryoshkaAttr)) {
        error() << "--matryoshka-dimensions applies to an embedding model (an export without "
                   "its LM head), not to this one\n";
        return 1;
      }
      // The resident weights, what weights.bin maps (quantised weights stay
      // packed), read before the writer takes the layout off the module.
      if (auto bytes = (*module)->getAttrOfType<IntegerAttr>("llmc.weights_bytes"))
        weightsBytes = bytes.getInt();
      if (cuda) {
        if (failed(writeCudaArtifact(*module, outputPath, cudaTarget, stage))) return 1;
      } else {
        FailureOr<CodeUnitCounts> units =
            writeCpuArtifact(*module, outputPath, host, kernelCache, stage);
        if (failed(units)) return 1;
        codeUnits = *units;
      }
    }
    progress.finish();
    if (!options.quiet) {
      llvm::SmallVector<std::string> notes;
      if (weightsBytes) notes.push_back(llvm::formatv("weights {0:f1} MB", *weightsBytes / 1e6));
      if (activationsNote) notes.push_back(*activationsNote);
      if (codeUnits)
        notes.push_back(llvm::formatv("{0} code units, {1} from the kernel cache",
                                      codeUnits->units, codeUnits->fromCache));
      llvm::errs() << "llmc: wrote " << outputPath;
      if (!notes.empty()) llvm::errs() << " (" << llvm::join(notes, "; ") << ")";
      llvm::errs() << "\n";
    }
    return 0;
  }

  std::string error;
  auto output = openOutputFile(outputPath, &error);
  if (!output) {
    llmc::error() << error << "\n";
    return 1;
  }
  TimingScope printTiming = rootTiming.nest("print");
  // Without --keep-weights the blobs are left out entirely: printing in local
  // scope skips the resource section, which the printer would hex-encode in
  // full even to elide it (seconds and ~1 GB for a 135M model).
  OpPrintingFlags flags;
  if (!options.keepWeights) flags.useLocalScope();
  module->print(output->os(), flags);
  printTiming.stop();
  output->keep();
  if (options.summary)
    printOpSummary(*module, outputPath == "-" ? llvm::errs() : llvm::outs(), options.json);
  return 0;
}

} // namespace llmc
