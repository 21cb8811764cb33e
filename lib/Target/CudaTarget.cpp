//===- CudaTarget.cpp - the step's kernels as PTX and cubins ---------------===//
//
// The gpu.module that llm-lower-to-cuda builds goes through MLIR's NVVM path
// (convert-gpu-to-nvvm, then LLVM's NVPTX backend through
// gpu-module-to-binary) to PTX; the attention source goes through NVRTC to
// PTX. ptxas, from the CUDA toolkit, turns each into a cubin for the target
// architecture. None of this needs a GPU.
//
//===----------------------------------------------------------------------===//
#include "llmc/Target/CudaTarget.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/Regex.h"

#include <nvrtc.h>

using namespace mlir;

namespace llmc {

namespace {

/// The CUDA toolkit: $CUDA_HOME, else /usr/local/cuda.
std::string toolkitPath() {
  if (const char *home = std::getenv("CUDA_HOME")) return home;
  return "/usr/local/cuda";
}

/// The compute capability of the first GPU nvidia-smi lists, as sm_XX, or ""
/// when there is no GPU (or no nvidia-smi).
std::string detectGpuArch() {
  auto smi = llvm::sys::findProgramByName("nvidia-smi");
  if (!smi) return "";
  llvm::SmallString<128> output;
  if (llvm::sys::fs::createTemporaryFile("llmc-nvidia-smi", "txt", output)) return "";
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(output), StringRef("")};
  StringRef args[] = {*smi, "--query-gpu=compute_cap", "--format=csv,noheader"};
  int status = llvm::sys::ExecuteAndWait(*smi, args, std::nullopt, redirects);
  auto text = llvm::MemoryBuffer::getFile(output);
  llvm::sys::fs::remove(output);
  if (status != 0 || !text) return "";
  llvm::SmallVector<StringRef> match;
  if (!llvm::Regex("^([0-9]+)\\.([0-9]+)").match((*text)->getBuffer().trim(), &match)) return "";
  return ("sm_" + match[1] + match[2]).str();
}

/// Runs `program` with `args`; the error names the program and its exit.
LogicalResult run(ModuleOp module, StringRef program, ArrayRef<StringRef> args) {
  std::string error;
  int status = llvm::sys::ExecuteAndWait(program, args, std::nullopt, {}, 0, 0, &error);
  if (status == 0) return success();
  return module.emitError(llvm::sys::path::filename(program))
         << " failed (exit " << status << ")" << (error.empty() ? "" : ": ") << error;
}

/// A cubin of `ptx` for `arch` through the toolkit's ptxas, or "" when the
/// toolkit has no ptxas (the runtime then lets the driver compile the PTX).
FailureOr<std::string> assemble(ModuleOp module, StringRef ptx, StringRef arch, StringRef name) {
  llvm::SmallString<256> ptxas(toolkitPath());
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (!llvm::sys::fs::can_execute(ptxas)) {
    auto onPath = llvm::sys::findProgramByName("ptxas");
    if (!onPath) return std::string();
    ptxas = *onPath;
  }
  llvm::SmallString<128> input, output;
  if (llvm::sys::fs::createTemporaryFile(name, "ptx", input) ||
      llvm::sys::fs::createTemporaryFile(name, "cubin", output))
    return module.emitError("cannot create temporary files for ptxas"), failure();
  llvm::scope_exit cleanup([&] {
    llvm::sys::fs::remove(input);
    llvm::sys::fs::remove(output);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream out(input, ec, llvm::sys::fs::OF_None);
    if (ec) return module.emitError("cannot write ") << input << ": " << ec.message(), failure();
    out << ptx;
  }
  std::string archFlag = ("-arch=" + arch).str();
  if (failed(run(module, ptxas, {ptxas, archFlag, "-O3", input, "-o", output})))
    return module.emitError("ptxas rejected the ") << name << " PTX for " << arch, failure();
  auto cubin = llvm::MemoryBuffer::getFile(output, /*IsText=*/false);
  if (!cubin) return module.emitError("cannot read back ") << output, failure();
  return (*cubin)->getBuffer().str();
}

/// The gpu.module of `module` as PTX, through convert-gpu-to-nvvm and
/// gpu-module-to-binary. Runs on a copy: the caller's module keeps its kernels.
FailureOr<std::string> kernelsToPtx(ModuleOp module) {
  gpu::GPUModuleOp kernels;
  module.walk([&](gpu::GPUModuleOp found) { kernels = found; });
  if (!kernels) return module.emitError("has no gpu.module: run llm-lower-to-cuda first"), failure();
  OpBuilder b(module.getContext());
  OwningOpRef<ModuleOp> copy = ModuleOp::create(module.getLoc());
  (*copy)->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), b.getUnitAttr());
  b.setInsertionPointToEnd(copy->getBody());
  b.clone(*kernels);

  PassManager pm(module.getContext());
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createSCFToControlFlowPass());
  device.addPass(createConvertGpuOpsToNVVMOps());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa"; // PTX; ptxas makes the cubin below
  binary.toolkitPath = toolkitPath();
  pm.addPass(createGpuModuleToBinaryPass(binary));
  if (failed(pm.run(*copy))) return module.emitError("lowering the kernels to PTX failed"), failure();
  std::string ptx;
  copy->walk([&](gpu::BinaryOp binaryOp) {
    for (Attribute object : binaryOp.getObjects())
      ptx = cast<gpu::ObjectAttr>(object).getObject().getValue().str();
  });
  if (ptx.empty()) return module.emitError("the NVPTX backend produced no PTX"), failure();
  return ptx;
}

/// The attention source as PTX for `arch`, through NVRTC.
FailureOr<std::string> attentionToPtx(ModuleOp module, StringRef source, StringRef arch) {
  nvrtcProgram program;
  std::string text = source.str();
  if (nvrtcCreateProgram(&program, text.c_str(), "llmc_attention.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS)
    return module.emitError("NVRTC could not create a program"), failure();
  llvm::scope_exit destroy([&] { nvrtcDestroyProgram(&program); });
  std::string archFlag = ("--gpu-architecture=compute_" + arch.drop_front(3)).str();
  // The toolkit's headers: the kernels use WMMA (mma.h).
  std::string includeFlag = "-I" + toolkitPath() + "/include";
  const char *options[] = {archFlag.c_str(), includeFlag.c_str(), "--std=c++17", "-default-device"};
  nvrtcResult compiled = nvrtcCompileProgram(program, std::size(options), options);
  if (compiled != NVRTC_SUCCESS) {
    size_t logSize = 0;
    nvrtcGetProgramLogSize(program, &logSize);
    std::string log(logSize, '\0');
    nvrtcGetProgramLog(program, log.data());
    return module.emitError("NVRTC rejected the attention kernels: ")
               << nvrtcGetErrorString(compiled) << "\n" << log,
           failure();
  }
  size_t ptxSize = 0;
  nvrtcGetPTXSize(program, &ptxSize);
  std::string ptx(ptxSize, '\0');
  nvrtcGetPTX(program, ptx.data());
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  return ptx;
}

} // namespace

FailureOr<CudaTargetInfo> parseCudaTarget(StringRef name, std::string &error) {
  CudaTargetInfo info;
  if (name == "cuda") {
    std::string present = detectGpuArch();
    if (!present.empty()) info.arch = present;
    return info;
  }
  StringRef arch;
  if (!name.consume_front("cuda:") || !llvm::Regex("^sm_[0-9]+a?$").match(name)) {
    error = "a CUDA target is cuda or cuda:sm_XX (cuda:sm_80, cuda:sm_90, ...), not '" + name.str() + "'";
    return failure();
  }
  info.arch = name.str();
  int major = 0;
  StringRef(info.arch).drop_front(3).take_while(llvm::isDigit).getAsInteger(10, major);
  if (major < 80) {
    error = "the CUDA target needs sm_80 (Ampere) or newer for bf16: '" + info.arch + "'";
    return failure();
  }
  return info;
}

FailureOr<CudaKernelImages> compileCudaKernels(ModuleOp module, const CudaTargetInfo &target) {
  CudaKernelImages images;
  auto kernelsPtx = kernelsToPtx(module);
  if (failed(kernelsPtx)) return failure();
  images.kernelsPtx = std::move(*kernelsPtx);
  auto source = module->getAttrOfType<StringAttr>("llmc.cuda_attention_source");
  if (source && !source.getValue().empty()) {
    auto attentionPtx = attentionToPtx(module, source.getValue(), target.arch);
    if (failed(attentionPtx)) return failure();
    images.attentionPtx = std::move(*attentionPtx);
  }
  auto kernelsCubin = assemble(module, images.kernelsPtx, target.arch, "kernels");
  if (failed(kernelsCubin)) return failure();
  images.kernelsCubin = std::move(*kernelsCubin);
  if (!images.attentionPtx.empty()) {
    auto attentionCubin = assemble(module, images.attentionPtx, target.arch, "attention");
    if (failed(attentionCubin)) return failure();
    images.attentionCubin = std::move(*attentionCubin);
  }
  return images;
}

void registerCudaTargetInterfaces(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect>();
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

} // namespace llmc
