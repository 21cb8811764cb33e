//===- ShapeInference.cpp - infer shapes, fold shape subgraphs ------------===//
#include "passes/Onnx/Passes.h"

#include "dialects/onnx/ShapeInference.h"
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
    RewritePatternSet patterns(&getContext());
    onnx::IfOp::getCanonicalizationPatterns(patterns, &getContext());
    FrozenRewritePatternSet frozen(std::move(patterns));

    for (unsigned round = 0;; ++round) {
      if (round == maxIterations) {
        func.emitWarning("shape inference did not converge in ") << maxIterations << " rounds";
        break;
      }
      bool folded = false;
      if (failed(applyPatternsExplained(func, frozen, DEBUG_TYPE, {}, &folded)))
        return signalPassFailure();
      FailureOr<bool> refined = onnx::refineResultTypes(func);
      if (failed(refined)) return signalPassFailure();
      if (!folded && !*refined) break;
    }
    // Results may now be more precise than the signature says.
    auto returnOp = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    func.setFunctionType(FunctionType::get(&getContext(), func.getArgumentTypes(),
                                           returnOp.getOperandTypes()));
  }
};

} // namespace
} // namespace llmc
