//===- CpuTarget.cpp - the step function as a shared object ---------------===//
//
// MLIR lowers the kernels to the LLVM dialect; LLVM optimises them for the
// host CPU (its features detected, so AVX2/AVX-512 are used where present)
// and emits an object in-process; the system's compiler driver links it into
// the kernels.so the runtime loads.
//
//===----------------------------------------------------------------------===//
#include "llmc/Target/CpuTarget.h"

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
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

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
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  return pm.run(module);
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

} // namespace

LogicalResult emitCpuSharedObject(ModuleOp module, const CpuTargetInfo &target,
                                  StringRef objectPath, StringRef sharedObjectPath) {
  if (failed(lowerToLlvmDialect(module))) return failure();

  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule = translateModuleToLLVMIR(module, llvmContext, "llmc");
  if (!llvmModule) return module.emitError("translation to LLVM IR failed");

  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string error;
  llvm::Triple triple(target.triple);
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!llvmTarget) return module.emitError("no LLVM target for ") << target.triple << ": " << error;
  std::unique_ptr<llvm::TargetMachine> machine(llvmTarget->createTargetMachine(
      triple, target.cpu, target.features, llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine) return module.emitError("cannot create a target machine for ") << target.cpu;
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  optimize(*llvmModule, *machine);

  std::error_code ec;
  llvm::raw_fd_ostream object(objectPath, ec, llvm::sys::fs::OF_None);
  if (ec) return module.emitError("cannot write ") << objectPath << ": " << ec.message();
  llvm::legacy::PassManager codegen;
  if (machine->addPassesToEmitFile(codegen, object, nullptr, llvm::CodeGenFileType::ObjectFile))
    return module.emitError("LLVM cannot emit objects for ") << target.triple;
  codegen.run(*llvmModule);
  object.close();

  auto driver = llvm::sys::findProgramByName("cc");
  if (!driver)
    return module.emitError("no C compiler driver (cc) on PATH to link the kernels: install gcc or clang");
  llvm::SmallVector<StringRef> args{*driver, "-shared", "-o", sharedObjectPath, objectPath, "-lm"};
  std::string linkError;
  if (llvm::sys::ExecuteAndWait(*driver, args, std::nullopt, {}, 0, 0, &linkError) != 0)
    return module.emitError("linking ") << sharedObjectPath << " failed" << (linkError.empty() ? "" : ": ")
                                        << linkError;
  return success();
}

} // namespace llmc
