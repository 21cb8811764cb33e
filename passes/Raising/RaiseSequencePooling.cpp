//===- RaiseSequencePooling.cpp - a classifier's pooling at the last token ===//
//
// A sequence classifier (transformers' `*ForSequenceClassification`: a reward
// model, a reranker) applies its score head to every token, then gathers
// each row's last token that is not the pad token, and returns [batch,
// num_labels]. A ragged step has no padding: each sequence's last token is
// the row the step keeps for it, as it keeps an LM's logits. So once
// proveAttentionMasks has proven the gather picks each row's last token
// (kLastTokenRowsAttr), the function returns the head's rows [batch, new,
// num_labels] instead, under the same name, and says it did
// (kPooledAtLastTokenAttr): the head then raises as the logits head.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "llmc/Artifact/StepInfo.h"

#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;

namespace llmc::raising {

void unpoolLastTokenRows(func::FuncOp func) {
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  bool unpooled = false;
  for (OpOperand &operand : ret->getOpOperands()) {
    Operation *gather = operand.get().getDefiningOp();
    if (!gather || !gather->hasAttr(kLastTokenRowsAttr)) continue;
    // The rows the proof read: Flatten or Reshape of [batch, new, features].
    Operation *flatten = cast<onnx::GatherOp>(gather).getData().getDefiningOp();
    operand.set(flatten->getOperand(0));
    unpooled = true;
  }
  if (!unpooled) return;
  func.setFunctionType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                         ret.getOperandTypes()));
  func->setAttr(kPooledAtLastTokenAttr, UnitAttr::get(func.getContext()));
  // The pooling's gather and its indices (ArgMax over the pad-token test).
  IRRewriter rewriter(func.getContext());
  (void)runRegionDCE(rewriter, func.getBody());
}

} // namespace llmc::raising
