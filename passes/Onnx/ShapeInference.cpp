//===- ShapeInference.cpp - infer shapes, fold shape subgraphs ------------===//
#include "passes/Onnx/Passes.h"

#include "llmc/Support/MatchFailureListener.h"

#define DEBUG_TYPE "onnx-shape-inference"

namespace llmc {
#define GEN_PASS_DEF_ONNXSHAPEINFERENCEPASS
#include "passes/Onnx/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// Recomputes every op's result types; true when any changed.
FailureOr<bool> refineResultTypes(func::FuncOp func) {
  bool changed = false;
  WalkResult walk = func.walk([&](onnx::ShapeInferenceOpInterface op) {
    SmallVector<Type> types;
    if (failed(op.inferShapes(types))) return WalkResult::interrupt();
    for (auto [result, type] : llvm::zip(op->getResults(), types)) {
      if (result.getType() == type) continue;
      result.setType(type);
      changed = true;
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted()) return failure();
  return changed;
}

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
      FailureOr<bool> refined = refineResultTypes(func);
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
