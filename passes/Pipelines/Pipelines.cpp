//===- Pipelines.cpp - the passes of llmc compile, composed ---------------===//
#include "passes/Pipelines/Pipelines.h"

#include "passes/Codegen/CPU/Passes.h"
#include "passes/Codegen/CUDA/Passes.h"
#include "passes/Codegen/Common/Passes.h"
#include "passes/Fusion/Passes.h"
#include "passes/Onnx/Passes.h"
#include "passes/OnnxToLinalg/Passes.h"
#include "passes/Raising/Passes.h"
#include "passes/Serving/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace llmc {

namespace {
/// Options of the `llmc-step` and `llmc-fuse` pipelines in llmc-opt.
struct FusionPipelineOptions : public PassPipelineOptions<FusionPipelineOptions> {
  Option<unsigned> optLevel{*this, "opt-level", llvm::cl::desc("Fusion level, 0 to 3"),
                            llvm::cl::init(2)};
  Option<bool> gated{*this, "gated", llvm::cl::desc("Form gated (SwiGLU) GEMM epilogues"),
                     llvm::cl::init(true)};
};
} // namespace

void buildRaisingPipeline(OpPassManager &pm, const RaisingPipelineOptions &options) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  func.addPass(createOnnxPromoteToF32Pass());
  OnnxSelectRopeTablesPassOptions ropeTables;
  ropeTables.maxPositions = options.maxPositions;
  ropeTables.tracedSwitch = options.tracedRopeSwitch;
  ropeTables.tracedShortFactors.assign(options.tracedRopeShortFactors.begin(),
                                      options.tracedRopeShortFactors.end());
  ropeTables.longFactors.assign(options.ropeLongFactors.begin(), options.ropeLongFactors.end());
  func.addPass(createOnnxSelectRopeTablesPass(ropeTables));
  func.addPass(createOnnxShapeInferencePass());
  RaiseOnnxToLlmPassOptions raiseOptions;
  raiseOptions.allowLeftovers = options.allowLeftovers;
  func.addPass(createRaiseOnnxToLlmPass(raiseOptions));
  func.addPass(createCSEPass());
  func.addPass(createCanonicalizerPass());
}

LogicalResult addExtensionPasses(OpPassManager &pm, const StepPipelineOptions &options,
                                 StringRef point, raw_ostream &errors) {
  auto pipeline = options.extensions.find(point);
  if (pipeline == options.extensions.end() || pipeline->second.empty()) return success();
  if (succeeded(parsePassPipeline(pipeline->second, pm, errors))) return success();
  errors << "\nin the passes given for " << point;
  return failure();
}

void buildFusionPipeline(OpPassManager &funcPm, unsigned optLevel, bool gatedEpilogues) {
  if (optLevel == 0) return;
  funcPm.addPass(createLlmFuseLogitsRowsPass());
  funcPm.addPass(createCSEPass()); // one gather per row source, for the linears to share
  funcPm.addPass(createLlmFuseHorizontalLinearsPass());
  funcPm.addPass(createLlmFuseRopeKvWritePass());
  if (optLevel >= 2) {
    funcPm.addPass(createLlmFuseAddNormPass());
    LlmFuseLinearEpiloguesPassOptions epilogues;
    epilogues.gated = gatedEpilogues;
    funcPm.addPass(createLlmFuseLinearEpiloguesPass(epilogues));
    LlmFuseElementwisePassOptions elementwise;
    elementwise.recompute = optLevel >= 3;
    funcPm.addPass(createLlmFuseElementwisePass(elementwise));
  }
  funcPm.addPass(createCSEPass());
  funcPm.addPass(createCanonicalizerPass()); // drops the weights that joined ones replaced
}

LogicalResult buildStepPipeline(OpPassManager &pm, const StepPipelineOptions &options,
                                bool lowerToTarget, raw_ostream &errors) {
  OpPassManager &serving = pm.nest<func::FuncOp>();
  if (!options.classifierTokenIds.empty()) {
    LlmClassifierFromTokensPassOptions scoring;
    scoring.tokenIds.assign(options.classifierTokenIds.begin(), options.classifierTokenIds.end());
    serving.addPass(createLlmClassifierFromTokensPass(scoring));
  }
  if (options.latentKvCache) serving.addPass(createLlmAbsorbLatentAttentionPass());
  serving.addPass(createLlmGqaRewritePass());
  serving.addPass(createCanonicalizerPass());
  LlmKvCachePagingPassOptions paging;
  paging.blockSize = options.blockSize;
  paging.kvCacheDtype = options.kvCacheDtype;
  serving.addPass(createLlmKvCachePagingPass(paging));
  serving.addPass(createLlmRaggedBatchingPass());
  serving.addPass(createCanonicalizerPass());
  if (options.loraSites) serving.addPass(createLlmLoraSitesPass());
  if (failed(addExtensionPasses(pm, options, "before-fusion", errors))) return failure();
  buildFusionPipeline(pm.nest<func::FuncOp>(), options.optLevel, options.matmul != "blas");
  if (failed(addExtensionPasses(pm, options, "before-lowering", errors))) return failure();
  // The CUDA runtime's device inputs hold one block table a sequence.
  if (options.kvCacheGroups && options.target != "cuda")
    pm.nest<func::FuncOp>().addPass(createLlmKvCacheGroupsPass());
  LlmPlanMemoryPassOptions planning;
  planning.maxNumBatchedTokens = options.maxNumBatchedTokens;
  planning.maxNumSeqs = options.maxNumSeqs;
  pm.nest<func::FuncOp>().addPass(createLlmPlanMemoryPass(planning));
  if (!lowerToTarget) return success();
  if (options.target == "cuda") {
    LlmLowerToCudaPassOptions lowering;
    lowering.arch = options.cudaArch;
    lowering.dtype = options.dtype;
    pm.addPass(createLlmLowerToCudaPass(lowering));
    return success();
  }
  LlmLowerToCpuPassOptions lowering;
  lowering.matmul = options.matmul;
  lowering.int8Activations = options.int8Activations;
  lowering.int8Products = options.int8Products;
  lowering.weightDtype = options.cpuWeightDtype;
  lowering.bf16Activations = options.bf16Activations;
  lowering.bf16Products = options.bf16Products;
  lowering.avx512 = options.cpuAvx512;
  pm.addPass(createLlmLowerToCpuPass(lowering));
  return success();
}

void buildGraphPipeline(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(createOnnxShapeInferencePass());
  pm.addPass(createOnnxLowerToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // The caller owns the outputs: results become trailing memref arguments.
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.modifyPublicFunctions = true;
  outParams.hoistStaticAllocs = true; // compute into the caller's buffers, no copy
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createCanonicalizerPass());
}

void registerGraphLoweringDialects(DialectRegistry &registry) {
  registerStepLoweringDialects(registry);
  registry.insert<bufferization::BufferizationDialect, linalg::LinalgDialect,
                  tensor::TensorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
}

void registerStepLoweringDialects(DialectRegistry &registry) {
  registry.insert<arith::ArithDialect, gpu::GPUDialect, math::MathDialect, memref::MemRefDialect,
                  NVVM::NVVMDialect, scf::SCFDialect, LLVM::LLVMDialect>();
}

void registerPipelines() {
  PassPipelineRegistration<FusionPipelineOptions>(
      "llmc-step", "From raised llm IR to the planned, ragged, paged step (fused at opt-level)",
      [](OpPassManager &pm, const FusionPipelineOptions &fusion) {
        StepPipelineOptions options;
        options.optLevel = fusion.optLevel;
        (void)buildStepPipeline(pm, options, false, llvm::errs());
      });
  PassPipelineRegistration<FusionPipelineOptions>(
      "llmc-fuse", "The built-in fusions of an -O level, on the ragged step",
      [](OpPassManager &pm, const FusionPipelineOptions &fusion) {
        buildFusionPipeline(pm.nest<func::FuncOp>(), fusion.optLevel, fusion.gated);
      });
  PassPipelineRegistration<>("llmc-raise",
                             "LongRoPE's table switch, shape inference, folding and raising: onnx "
                             "dialect in, llm dialect out",
                             [](OpPassManager &pm) { buildRaisingPipeline(pm); });
  PassPipelineRegistration<>("llmc-graph",
                             "A whole onnx graph of fixed shapes to bufferized loops "
                             "(its outputs as trailing arguments)",
                             [](OpPassManager &pm) { buildGraphPipeline(pm); });
}

void registerAllPasses() {
  registerOnnxPasses();
  registerOnnxToLinalgPasses();
  registerRaisingPasses();
  registerServingPasses();
  registerFusionPasses();
  registerCodegenCommonPasses();
  registerCodegenCPUPasses();
  registerCodegenCUDAPasses();
}

} // namespace llmc
