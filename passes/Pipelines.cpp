//===- Pipelines.cpp - the passes of llmc compile, composed ---------------===//
#include "passes/Passes.h"

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

void registerPipelines() {
  PassPipelineRegistration<>("llmc-raise",
                             "Shape inference, folding and raising: onnx dialect in, llm dialect out",
                             [](OpPassManager &pm) { buildRaisingPipeline(pm); });
}

} // namespace llmc
