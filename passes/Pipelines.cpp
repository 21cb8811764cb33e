//===- Pipelines.cpp - the passes of llmc compile, composed ---------------===//
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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
}

} // namespace llmc
