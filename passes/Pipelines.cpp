//===- Pipelines.cpp - the passes of llmc compile, composed ---------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
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

void buildRaisingPipeline(OpPassManager &pm, bool allowLeftovers) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  func.addPass(createOnnxShapeInferencePass());
  RaiseOnnxToLlmPassOptions raiseOptions;
  raiseOptions.allowLeftovers = allowLeftovers;
  func.addPass(createRaiseOnnxToLlmPass(raiseOptions));
  func.addPass(createCSEPass());
  func.addPass(createCanonicalizerPass());
}

void buildStepPipeline(OpPassManager &pm, const StepPipelineOptions &options, bool lowerToCpu) {
  OpPassManager &func = pm.nest<func::FuncOp>();
  func.addPass(createLlmGqaRewritePass());
  func.addPass(createCanonicalizerPass());
  LlmKvCachePagingPassOptions paging;
  paging.blockSize = options.blockSize;
  func.addPass(createLlmKvCachePagingPass(paging));
  func.addPass(createLlmRaggedBatchingPass());
  func.addPass(createCanonicalizerPass());
  LlmPlanMemoryPassOptions planning;
  planning.maxNumBatchedTokens = options.maxNumBatchedTokens;
  planning.maxNumSeqs = options.maxNumSeqs;
  func.addPass(createLlmPlanMemoryPass(planning));
  if (!lowerToCpu) return;
  LlmLowerToCpuPassOptions lowering;
  lowering.matmul = options.matmul;
  pm.addPass(createLlmLowerToCpuPass(lowering));
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
  registry.insert<arith::ArithDialect, math::MathDialect, memref::MemRefDialect, scf::SCFDialect,
                  LLVM::LLVMDialect>();
}

void registerPipelines() {
  PassPipelineRegistration<>("llmc-step",
                             "From raised llm IR to the planned, ragged, paged step",
                             [](OpPassManager &pm) { buildStepPipeline(pm, {}, false); });
  PassPipelineRegistration<>("llmc-raise",
                             "Shape inference, folding and raising: onnx dialect in, llm dialect out",
                             [](OpPassManager &pm) { buildRaisingPipeline(pm); });
  PassPipelineRegistration<>("llmc-graph",
                             "A whole onnx graph of fixed shapes to bufferized loops "
                             "(its outputs as trailing arguments)",
                             [](OpPassManager &pm) { buildGraphPipeline(pm); });
}

} // namespace llmc
