//===- ShapeInference.cpp - infer shapes, fold shape subgraphs ------------===//
#include "passes/Onnx/Passes.h"

#include "dialects/onnx/ShapeFolding.h"
#include "llmc/Support/MatchFailureListener.h"

#define DEBUG_TYPE "onnx-shape-inference"

namespace llmc {
#define GEN_PASS_DEF_ONNXSHAPEINFERENCEPASS
#include "passes/Onnx/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

struct OnnxShapeInferencePass
    : impl::OnnxShapeInferencePassBase<OnnxShapeInferencePass> {
  using OnnxShapeInferencePassBase::OnnxShapeInferencePassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MatchFailureListener listener(DEBUG_TYPE);
    FailureOr<bool> converged = onnx::inferShapesAndFold(func, maxIterations, &listener);
    if (failed(converged)) return signalPassFailure();
    if (!*converged)
      func.emitWarning("shape inference did not converge in ") << maxIterations << " rounds";
    // Results may now be more precise than the signature says.
    auto returnOp = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    func.setFunctionType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                           returnOp.getOperandTypes()));
  }
};

} // namespace
} // namespace llmc
