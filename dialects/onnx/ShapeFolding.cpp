//===- ShapeFolding.cpp - infer shapes and fold until fixed point ---------===//
#include "dialects/onnx/ShapeFolding.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/ShapeInference.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace llmc::onnx {

FailureOr<bool> inferShapesAndFold(func::FuncOp func, unsigned maxRounds,
                                   RewriterBase::Listener *listener) {
  RewritePatternSet patterns(func.getContext());
  IfOp::getCanonicalizationPatterns(patterns, func.getContext());
  FrozenRewritePatternSet frozen(std::move(patterns));
  GreedyRewriteConfig config;
  config.setListener(listener);
  for (unsigned round = 0; round < maxRounds; ++round) {
    bool folded = false;
    if (failed(applyPatternsGreedily(func, frozen, config, &folded))) return failure();
    FailureOr<bool> refined = refineResultTypes(func);
    if (failed(refined)) return failure();
    if (!folded && !*refined) return true;
  }
  return false;
}

} // namespace llmc::onnx
