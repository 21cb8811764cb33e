//===- ClassifierFromTokens.cpp - a causal LM served as a cross-encoder ---===//
//
// A reranker published as a causal LM scores a prompt by its LM head's logit
// of one token ("yes") at the last position, or by the difference of two
// ("yes" minus "no"). Only those columns of the head matter, and since
// w_yes . h - w_no . h = (w_yes - w_no) . h the head shrinks to one column:
// the model becomes a classifier of one label.
//
//===----------------------------------------------------------------------===//
#include "passes/Serving/Passes.h"

#include "dialects/llm/BlockQuantized.h"
#include "llmc/Artifact/StepInfo.h"
#include "llmc/Support/TensorShape.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "llm-classifier-from-tokens"

namespace llmc {
#define GEN_PASS_DEF_LLMCLASSIFIERFROMTOKENSPASS
#include "passes/Serving/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// The values of `weight`'s column `token` (an [in, out] weight, or [out, in]
/// when `outIn`), times `sign`, added to `column`.
void addColumn(ArrayRef<float> weight, int64_t numTokens, bool outIn, int64_t token, float sign,
               MutableArrayRef<float> column) {
  int64_t hidden = int64_t(column.size());
  for (int64_t j = 0; j < hidden; ++j)
    column[j] += sign * (outIn ? weight[token * hidden + j] : weight[j * numTokens + token]);
}

struct LlmClassifierFromTokensPass
    : impl::LlmClassifierFromTokensPassBase<LlmClassifierFromTokensPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(scoreByTokens(getOperation()))) signalPassFailure();
  }

  LogicalResult scoreByTokens(func::FuncOp func) {
    if (tokenIds.empty() || tokenIds.size() > 2)
      return func.emitError("llm-classifier-from-tokens scores by one token or two, not ")
             << tokenIds.size();
    if (func->hasAttr(kPooledAtLastTokenAttr))
      return func.emitOpError("is a sequence classifier already; its score head is not an LM "
                              "head to score by tokens");
    SmallVector<llm::LogitsOp> heads;
    func.walk([&](llm::LogitsOp head) { heads.push_back(head); });
    if (heads.size() != 1)
      return func.emitOpError("has ")
             << heads.size()
             << " LM heads (llm.logits); scoring by tokens needs the one of a causal LM";
    llm::LogitsOp head = heads.front();
    for (Operation *user : head->getUsers())
      if (!isa<func::ReturnOp>(user))
        return head.emitOpError("feeds ")
               << user->getName() << "; scoring by tokens needs the logits returned as they are";
    if (tokenIds.size() == 2 && !head.getEpilogue().empty())
      return head.emitOpError("maps each logit through an epilogue (a softcap, a scaling), "
                              "which does not commute with the difference of two tokens' "
                              "logits; score by one token instead");

    std::vector<char> weightStorage;
    std::optional<ArrayRef<float>> weight = llm::weightFloats(head.getWeight(), weightStorage);
    if (!weight)
      return head.emitOpError("has a weight that is not known at compile time as f32 (or as "
                              "constants it dequantizes); scoring by tokens reads its columns");
    int64_t numTokens = dimOf(head.getOutput(), -1);
    int64_t hidden = int64_t(weight->size()) / numTokens;
    for (int64_t token : tokenIds)
      if (token < 0 || token >= numTokens)
        return head.emitOpError("has ") << numTokens << " logits; token id " << token
                                        << " is not one of them";

    // The score's column: the scored token's ("yes"), minus the other's ("no")
    // when there are two.
    int64_t scored = tokenIds[tokenIds.size() - 1];
    std::optional<int64_t> subtracted;
    if (tokenIds.size() == 2) subtracted = tokenIds[0];
    bool outIn = head.getTransposeWeight();
    std::vector<float> column(hidden, 0.0f);
    addColumn(*weight, numTokens, outIn, scored, 1.0f, column);
    if (subtracted) addColumn(*weight, numTokens, outIn, *subtracted, -1.0f, column);

    OpBuilder builder(head);
    Location loc = head.getLoc();
    SmallVector<int64_t> shape = outIn ? SmallVector<int64_t>{1, hidden}
                                       : SmallVector<int64_t>{hidden, 1};
    Value scoreWeight = llm::createWeightConstant(builder, loc, shape, column, "score_head");
    Value scoreBias;
    if (Value bias = head.getBias()) {
      std::vector<char> biasStorage;
      std::optional<ArrayRef<float>> values = llm::weightFloats(bias, biasStorage);
      if (!values || int64_t(values->size()) != numTokens)
        return head.emitOpError("has a bias that is not known at compile time as f32");
      float score = (*values)[scored];
      if (subtracted) score -= (*values)[*subtracted];
      scoreBias = llm::createWeightConstant(builder, loc, {1}, {score}, "score_bias");
    }

    auto logitsType = cast<RankedTensorType>(head.getOutput().getType());
    SmallVector<int64_t> scoresShape(logitsType.getShape());
    scoresShape.back() = 1;
    head.getWeightMutable().assign(scoreWeight);
    if (scoreBias) head.getBiasMutable().assign(scoreBias);
    head.getOutput().setType(logitsType.clone(scoresShape));
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    func.setFunctionType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                           ret.getOperandTypes()));
    // What a classifier's raising leaves: llm-kv-cache-paging returns class logits.
    func->setAttr(kPooledAtLastTokenAttr, UnitAttr::get(func.getContext()));
    return success();
  }
};

} // namespace
} // namespace llmc
