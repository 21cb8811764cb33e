//===- MatchFailureListener.h - why a pattern did not match -----*- C++ -*-===//
//
// Patterns say why they did not match with notifyMatchFailure; the greedy
// driver hands the reason to its listener and drops it otherwise. Every
// greedy pass of llmc runs its patterns through applyPatternsExplained, so
// that `-debug-only=<pass argument>` prints each reason. (MLIR 22's dialect
// conversion gives no listener the reasons: onnx-lower-to-linalg reports the
// op it could not legalize instead.) Header-only: plugins use it too
// (examples/custom-fusion).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_SUPPORT_MATCHFAILURELISTENER_H
#define LLMC_SUPPORT_MATCHFAILURELISTENER_H

#include "llmc/Support/Debug.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

namespace llmc {

/// Prints `[debugType] loc: no match: reason` for every failed match, under
/// -debug-only=debugType (nothing otherwise).
class MatchFailureListener : public mlir::RewriterBase::Listener {
public:
  explicit MatchFailureListener(llvm::StringRef debugType) : debugType(debugType) {}

  void notifyMatchFailure(mlir::Location loc,
                          llvm::function_ref<void(mlir::Diagnostic &)> reasonCallback) override {
    if (!isDebugEnabled(debugType)) return;
    mlir::Diagnostic diagnostic(loc, mlir::DiagnosticSeverity::Remark);
    reasonCallback(diagnostic);
    llvm::dbgs() << "[" << debugType << "] " << loc << ": no match: " << diagnostic.str() << "\n";
  }

private:
  llvm::StringRef debugType;
};

/// applyPatternsGreedily with a MatchFailureListener for `debugType` (the
/// pass argument) as the config's listener.
inline mlir::LogicalResult applyPatternsExplained(mlir::Operation *op,
                                                  const mlir::FrozenRewritePatternSet &patterns,
                                                  llvm::StringRef debugType,
                                                  mlir::GreedyRewriteConfig config = {},
                                                  bool *changed = nullptr) {
  MatchFailureListener listener(debugType);
  config.setListener(&listener);
  return mlir::applyPatternsGreedily(op, patterns, config, changed);
}

} // namespace llmc

#endif // LLMC_SUPPORT_MATCHFAILURELISTENER_H
