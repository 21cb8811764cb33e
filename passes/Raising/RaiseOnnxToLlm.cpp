//===- RaiseOnnxToLlm.cpp - onnx patterns to llm ops, the pass ------------===//
//
// Raising runs in three greedy stages, because some roots overlap: the first
// recognises the structures (norms, rope, attention, linear layers, ...), the
// second what is left between them (bias adds folded into linears, the
// logits head, swiglu, residual adds), which would otherwise capture adds
// and muls that belong to a structure, and the third turns the elementwise
// activation ops nothing named into llm.elementwise (RaiseElementwise.cpp).
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"
#include "passes/RaisePatterns.h"

#include "llmc/Support/Debug.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "raise-onnx-to-llm"

namespace llmc {
#define GEN_PASS_DEF_RAISEONNXTOLLMPASS
#include "passes/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// Prints why patterns did not match, under -debug-only=raise-onnx-to-llm.
struct MatchFailureLogger : RewriterBase::Listener {
  void notifyMatchFailure(Location loc, function_ref<void(Diagnostic &)> reasonCallback) override {
    LLMC_DEBUG({
      Diagnostic diagnostic(loc, DiagnosticSeverity::Remark);
      reasonCallback(diagnostic);
      llvm::dbgs() << "[" DEBUG_TYPE "] " << loc << ": no match: " << diagnostic.str() << "\n";
    });
  }
};

struct RaiseOnnxToLlmPass : impl::RaiseOnnxToLlmPassBase<RaiseOnnxToLlmPass> {
  using RaiseOnnxToLlmPassBase::RaiseOnnxToLlmPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    MatchFailureLogger logger;
    GreedyRewriteConfig config;
    config.setListener(&logger);

    RewritePatternSet structures(&getContext());
    raising::populateStructurePatterns(structures);
    if (failed(applyPatternsGreedily(func, std::move(structures), config)))
      return signalPassFailure();
    RewritePatternSet glue(&getContext());
    raising::populateGluePatterns(glue);
    if (failed(applyPatternsGreedily(func, std::move(glue), config)))
      return signalPassFailure();
    RewritePatternSet elementwise(&getContext());
    raising::populateElementwisePatterns(elementwise);
    if (failed(applyPatternsGreedily(func, std::move(elementwise), config)))
      return signalPassFailure();

    reportLeftovers(func);
  }

  /// Names each onnx op kind that no pattern raised (constants and the
  /// None placeholder are data, not computation, and may stay).
  void reportLeftovers(func::FuncOp func) {
    llvm::MapVector<StringRef, std::pair<int, Operation *>> leftovers;
    func.walk([&](Operation *op) {
      if (!isa<onnx::OnnxDialect>(op->getDialect()) || isa<onnx::ConstantOp, onnx::NoneOp>(op))
        return;
      auto &entry = leftovers[op->getName().getStringRef()];
      if (entry.first++ == 0) entry.second = op;
    });
    if (leftovers.empty()) return;
    std::string list;
    for (auto &[name, entry] : leftovers)
      list += (list.empty() ? "" : ", ") + name.str() + " x" + std::to_string(entry.first);
    if (allowLeftovers) {
      func.emitWarning("onnx ops not raised to llm: ") << list;
      return;
    }
    InFlightDiagnostic diag = func.emitError("onnx ops not raised to llm: ") << list;
    for (auto &[name, entry] : leftovers)
      diag.attachNote(entry.second->getLoc()) << "first " << name;
    signalPassFailure();
  }
};

} // namespace
} // namespace llmc
