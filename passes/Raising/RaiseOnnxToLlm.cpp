//===- RaiseOnnxToLlm.cpp - onnx patterns to llm ops, the pass ------------===//
//
// Raising runs in three greedy stages, because some roots overlap: the first
// recognises the structures (norms, rope, attention, linear layers, ...), the
// second what is left between them (bias adds folded into linears, the
// logits head, swiglu, residual adds), which would otherwise capture adds
// and muls that belong to a structure, and the third turns the elementwise
// activation ops nothing named into llm.elementwise (RaiseElementwise.cpp).
// Last, constants become llm.constant, so that the passes after raising see
// llm ops only.
//
// A mixture of experts is raised before all of them (stage 0), whole; before
// that, the attention scores are put in one form (NormalizeScores.cpp) and
// their masks are proven (ProveMasks.cpp).
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/Passes.h"
#include "passes/Raising/RaisePatterns.h"

#include "llmc/Support/MatchFailureListener.h"

#include "llvm/ADT/MapVector.h"

#define DEBUG_TYPE "raise-onnx-to-llm"

namespace llmc {
#define GEN_PASS_DEF_RAISEONNXTOLLMPASS
#include "passes/Raising/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

struct RaiseOnnxToLlmPass : impl::RaiseOnnxToLlmPassBase<RaiseOnnxToLlmPass> {
  using RaiseOnnxToLlmPassBase::RaiseOnnxToLlmPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (failed(raising::normalizeAttentionScores(func))) return signalPassFailure();
    raising::proveAttentionMasks(func);
    raising::unpoolLastTokenRows(func);
    if (failed(raising::unpoolSentenceEmbeddings(func))) return signalPassFailure();
    raising::raiseMixturesOfExperts(func);
    raising::raiseDenseMixturesOfExperts(func);
    raising::raiseGroupedMixturesOfExperts(func);
    RewritePatternSet structures(&getContext());
    raising::populateStructurePatterns(structures);
    if (failed(applyPatternsExplained(func, std::move(structures), DEBUG_TYPE)))
      return signalPassFailure();
    RewritePatternSet glue(&getContext());
    raising::populateGluePatterns(glue);
    if (failed(applyPatternsExplained(func, std::move(glue), DEBUG_TYPE)))
      return signalPassFailure();
    RewritePatternSet elementwise(&getContext());
    raising::populateElementwisePatterns(elementwise);
    if (failed(applyPatternsExplained(func, std::move(elementwise), DEBUG_TYPE)))
      return signalPassFailure();

    reportLeftovers(func);
    convertConstants(func);
  }

  /// onnx.Constant -> llm.constant, and unused onnx.None placeholders
  /// dropped. A None survives only as the operand of an op left unraised
  /// (with allow-leftovers).
  void convertConstants(func::FuncOp func) {
    IRRewriter rewriter(&getContext());
    func.walk([&](Operation *op) {
      if (auto constant = dyn_cast<onnx::ConstantOp>(op)) {
        rewriter.setInsertionPoint(constant);
        rewriter.replaceOpWithNewOp<llm::ConstantOp>(constant, constant.getType(),
                                                     constant.getValue());
      } else if (isa<onnx::NoneOp>(op) && op->use_empty()) {
        rewriter.eraseOp(op);
      }
    });
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
    InFlightDiagnostic diag = func.emitError("onnx ops not raised to llm: ") << list
                              << explainLeftovers(func, leftovers);
    for (auto &[name, entry] : leftovers)
      diag.attachNote(entry.second->getLoc()) << "first " << name;
    signalPassFailure();
  }

  /// Why the structure a user most needs to know about was not raised: a
  /// mixture of experts (a router's TopK is left only then), else attention
  /// and quantization features; "" when none applies.
  std::string explainLeftovers(
      func::FuncOp func,
      const llvm::MapVector<StringRef, std::pair<int, Operation *>> &leftovers) {
    if (leftovers.contains(onnx::TopKOp::getOperationName())) {
      std::string why = "; a mixture of experts is not supported in this form";
      func.walk([&](Operation *op) {
        auto unmatched = op->getAttrOfType<StringAttr>(raising::kMoeUnmatchedAttr);
        if (!unmatched) return WalkResult::advance();
        why += ": " + unmatched.getValue().str();
        return WalkResult::interrupt();
      });
      return why;
    }
    for (auto &[name, entry] : leftovers) {
      auto feature = raising::unsupportedAttentionFeature(entry.second);
      if (!feature) feature = raising::unsupportedQuantizationFeature(entry.second);
      if (!feature) feature = raising::unsupportedMixtureOfExpertsFeature(entry.second);
      if (!feature) feature = raising::unsupportedRopeFeature(entry.second);
      if (!feature) feature = raising::unsupportedScoresFeature(entry.second);
      std::string why;
      bool unproven =
          isa<onnx::SoftmaxOp, onnx::AttentionOp, onnx::MultiHeadAttentionOp>(entry.second) &&
          failed(raising::provenMask(entry.second, why));
      if (feature)
        return "; " + *feature + " is not supported" +
               (unproven ? " (attention mask: " + why + ")" : std::string());
      if (unproven) return "; attention mask: " + why;
    }
    return "";
  }
};

} // namespace
} // namespace llmc
