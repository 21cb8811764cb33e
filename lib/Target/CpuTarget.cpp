//===- CpuTarget.cpp - the step function as a shared object ---------------===//
//
// MLIR lowers the kernels to the LLVM dialect; the LLVM module is split into
// code units (a kernel each, and the step), which LLVM optimises for the host
// CPU (its features detected, so AVX2/AVX-512 are used where present) in
// parallel, or which come from the kernel cache; the system's compiler
// driver links their objects into the kernels.so the runtime loads.
//
//===----------------------------------------------------------------------===//
#include "llmc/Target/CpuTarget.h"

#include "CodeUnits.h"
#include "llmc/Target/CodeUnitCache.h"
#include "mlir/IR/Threading.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

#include <atomic>
#include <elf.h>
#include <link.h>

using namespace mlir;

namespace llmc {

CpuTargetInfo detectHostCpu() {
  CpuTargetInfo info;
  info.triple = llvm::sys::getDefaultTargetTriple();
  info.cpu = llvm::sys::getHostCPUName().str();
  llvm::SmallVector<std::string> features;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    features.push_back((feature.second ? "+" : "-") + feature.first().str());
  llvm::sort(features);
  info.features = llvm::join(features, ",");
  return info;
}

namespace {

/// memref/scf/arith/math/func -> llvm dialect.
LogicalResult lowerToLlvmDialect(ModuleOp module) {
  PassManager toF32(module.getContext());
  toF32.addPass(createCanonicalizerPass());
  toF32.addPass(createSCFToControlFlowPass());
  toF32.addPass(memref::createExpandStridedMetadataPass());
  toF32.addPass(createLowerAffinePass());
  // f16/bf16 math and arithmetic run in f32, rounded after each op (as numpy
  // and onnxruntime compute them on CPUs without native half arithmetic).
  toF32.addPass(math::createMathExtendToSupportedTypes());
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"f16", "bf16"};
  toF32.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  if (failed(toF32.run(module))) return failure();
  // bf16 <-> f32 conversions as integer bit operations (rounding to nearest
  // even): LLVM 22 makes the narrowing a call of __truncsfbf2, which GCC 12's
  // libgcc (Debian 12's), where the shared object finds it at load, does not
  // define. Only these patterns: arith-expand would also rewrite the kernels'
  // min/max ops.
  RewritePatternSet bf16Conversions(module.getContext());
  arith::populateExpandBFloat16Patterns(bf16Conversions);
  if (failed(applyPatternsGreedily(module, std::move(bf16Conversions)))) return failure();

  PassManager pm(module.getContext());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass()); // erf: no LLVM intrinsic
  // AMX ops (bf16-products=amx) lower with the vector ops.
  ConvertVectorToLLVMPassOptions vectorOptions;
  vectorOptions.amx = true;
  pm.addPass(createConvertVectorToLLVMPass(vectorOptions));
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  return pm.run(module);
}

/// How a code unit is compiled: the TargetMachine's options and the O3
/// pipeline below. Part of every cache key: change it with either (the build
/// ID already tells builds apart where the linker writes one).
constexpr llvm::StringLiteral kCodeUnitPipeline = "PIC, CodeGenOptLevel::Aggressive, O3 v1";

/// The GNU build ID of the running executable (a hash of its contents that
/// the linker writes into a note), in hex; empty without one. In the cache
/// key, so that a rebuilt llmc never takes objects that another build made.
std::string executableBuildId() {
  std::string id;
  dl_iterate_phdr(
      [](dl_phdr_info *info, size_t, void *result) {
        // The first object listed is the executable itself.
        for (unsigned i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr) &header = info->dlpi_phdr[i];
          if (header.p_type != PT_NOTE) continue;
          auto *at = reinterpret_cast<const char *>(info->dlpi_addr + header.p_vaddr);
          const char *end = at + header.p_memsz;
          while (at + sizeof(ElfW(Nhdr)) <= end) {
            auto *note = reinterpret_cast<const ElfW(Nhdr) *>(at);
            const char *name = at + sizeof(ElfW(Nhdr));
            const char *desc = name + llvm::alignTo(note->n_namesz, 4);
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
                llvm::StringRef(name, 3) == "GNU" && desc + note->n_descsz <= end) {
              *static_cast<std::string *>(result) = llvm::toHex(
                  llvm::StringRef(desc, note->n_descsz), /*LowerCase=*/true);
              return 1;
            }
            at = desc + llvm::alignTo(note->n_descsz, 4);
          }
        }
        return 1;
      },
      &id);
  return id;
}

std::unique_ptr<llvm::TargetMachine> createTargetMachine(const CpuTargetInfo &target,
                                                         std::string &error) {
  llvm::Triple triple(target.triple);
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget) {
    error = "no LLVM target for " + target.triple + ": " + error;
    return nullptr;
  }
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      triple, target.cpu, target.features, llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine) error = "cannot create a target machine for " + target.cpu;
  return machine;
}

void optimize(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgsccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&machine);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgsccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgsccs, modules);
  builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(module, modules);
}

/// Optimises a code unit and emits its object file. Runs on any thread: the
/// unit is read into its own context and compiled by its own machine.
llvm::Expected<std::string> compileUnit(const CodeUnit &unit, const CpuTargetInfo &target) {
  llvm::LLVMContext context;
  auto module = llvm::parseBitcodeFile(llvm::MemoryBufferRef(unit.bitcode, unit.name), context);
  if (!module) return module.takeError();
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = createTargetMachine(target, error);
  if (!machine) return llvm::createStringError(error);
  optimize(**module, *machine);
  llvm::SmallString<0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("LLVM cannot emit objects for " + target.triple);
  codegen.run(**module);
  return std::string(object.str());
}

} // namespace

FailureOr<CodeUnitCounts> emitCpuSharedObject(ModuleOp module, const CpuTargetInfo &target,
                                              StringRef sharedObjectPath,
                                              const CodeUnitCache &cache) {
  if (failed(lowerToLlvmDialect(module))) return failure();

  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, llvmContext, "llmc");
  if (!llvmModule) return module.emitError("translation to LLVM IR failed");

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string error;
  std::unique_ptr<llvm::TargetMachine> machine = createTargetMachine(target, error);
  if (!machine) return module.emitError(error);
  llvmModule->setTargetTriple(llvm::Triple(target.triple));
  llvmModule->setDataLayout(machine->createDataLayout());

  static const std::string buildId = executableBuildId();
  std::string keyPrefix =
      llvm::formatv("llmc CPU code unit\nllmc build {0}\nLLVM {1}\n{2}\n{3}\n{4}\n{5}", buildId,
                    LLVM_VERSION_STRING, target.triple, target.cpu, target.features,
                    kCodeUnitPipeline);
  std::vector<CodeUnit> units = splitIntoCodeUnits(*llvmModule, keyPrefix);

  // Each unit's object: from the cache, else compiled and kept there, or in
  // a scratch directory when there is no cache or it cannot be written; the
  // units in parallel.
  llvm::SmallString<128> scratchDirectory;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("llmc-kernels", scratchDirectory))
    return module.emitError("cannot create a temporary directory: ") << ec.message();
  llvm::scope_exit removeScratch([&] { llvm::sys::fs::remove_directories(scratchDirectory); });
  CodeUnitCache scratch(std::string(scratchDirectory.str()));
  std::vector<std::string> objects(units.size()), errors(units.size()), notKept(units.size());
  std::atomic<unsigned> fromCache = 0;
  (void)failableParallelForEach(module.getContext(), llvm::seq(units.size()), [&](size_t i) {
    const CodeUnit &unit = units[i];
    if (std::optional<std::string> kept = cache.find(unit.key)) {
      objects[i] = std::move(*kept);
      ++fromCache;
      return success();
    }
    llvm::Expected<std::string> object = compileUnit(unit, target);
    if (!object) {
      errors[i] = unit.name + ": " + llvm::toString(object.takeError());
      return failure();
    }
    if (cache.enabled()) {
      llvm::Expected<std::string> kept = cache.keep(unit.key, *object);
      if (kept) {
        objects[i] = std::move(*kept);
        return success();
      }
      notKept[i] = llvm::toString(kept.takeError());
    }
    llvm::Expected<std::string> kept = scratch.keep(unit.key, *object);
    if (!kept) {
      errors[i] = llvm::toString(kept.takeError());
      return failure();
    }
    objects[i] = std::move(*kept);
    return success();
  });
  for (const std::string &message : errors)
    if (!message.empty()) return module.emitError("compiling the kernels: ") << message;
  for (const std::string &message : notKept)
    if (!message.empty()) {
      module.emitWarning("the kernel cache is not written: ") << message;
      break;
    }

  auto driver = llvm::sys::findProgramByName("cc");
  if (!driver)
    return module.emitError(
        "no C compiler driver (cc) on PATH to link the kernels: install gcc or clang");
  llvm::SmallVector<StringRef> args{*driver, "-shared", "-o", sharedObjectPath};
  for (const std::string &object : objects) args.push_back(object);
  args.push_back("-lm");
  std::string linkError;
  if (llvm::sys::ExecuteAndWait(*driver, args, std::nullopt, {}, 0, 0, &linkError) != 0)
    return module.emitError("linking ")
           << sharedObjectPath << " failed" << (linkError.empty() ? "" : ": ") << linkError;
  return CodeUnitCounts{static_cast<unsigned>(units.size()), fromCache.load()};
}

} // namespace llmc
