//===- RaiseSequencePooling.cpp - pooling at the last token ---------------===//
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
// A sentence-transformers embedding model exported with its pooling
// (`sentence_embedding`) is unpooled the same way once its gather is proven
// to pick each row's last token: its output becomes the final hidden
// states, which the runtime pools at the last token and normalises.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "llmc/Artifact/StepInfo.h"

#include "dialects/onnx/ShapeHelpers.h"

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

namespace {
/// Whether `value` depends on the values (not only the shape) of the
/// function input named `name`.
bool readsInput(Value value, StringRef name) {
  bool reads = false;
  forEachOpInCone(value, [&](Operation *op) {
    for (Value operand : op->getOperands())
      if (auto arg = dyn_cast<BlockArgument>(operand); arg && onnx::inputName(arg) == name)
        reads = reads || !isa<onnx::ShapeOp, onnx::SizeOp>(op);
    return !isa<onnx::ShapeOp, onnx::SizeOp>(op);
  });
  return reads;
}

/// The operand of a Div by x's L2 norm: Div(x, Expand(Clip(ReduceL2(x) over
/// the last axis, eps), Shape(x))), the Expand and the Clip optional.
Value normalizedOperand(onnx::DivOp div) {
  Value norm = div.getB();
  if (auto expand = definedBy<onnx::ExpandOp>(norm)) norm = expand.getInput();
  if (auto clip = definedBy<onnx::ClipOp>(norm)) norm = clip.getInput();
  auto reduce = definedBy<onnx::ReduceL2Op>(norm);
  if (!reduce || reduce.getData() != div.getA()) return nullptr;
  auto axes = onnx::getConstantInts(reduce.getAxes());
  int64_t rank = rankOf(div.getA());
  if (!axes || axes->size() != 1 || ((*axes)[0] != -1 && (*axes)[0] != rank - 1)) return nullptr;
  return div.getA();
}
} // namespace

std::optional<SentencePooling> sentencePooling(Value result) {
  SentencePooling pooling{};
  Value pooled = result;
  if (auto div = definedBy<onnx::DivOp>(pooled))
    if (Value operand = normalizedOperand(div)) {
      pooling.normalize = div;
      pooled = operand;
    }
  // sentence-transformers concatenates its pooling modes' outputs: one here.
  if (auto concat = definedBy<onnx::ConcatOp>(pooled); concat && concat->getNumOperands() == 1)
    pooled = concat->getOperand(0);
  auto squeeze = definedBy<onnx::SqueezeOp>(pooled);
  if (!squeeze) return std::nullopt;
  auto gather = definedBy<onnx::GatherElementsOp>(squeeze.getData());
  if (!gather || gather.getAxis() != 1 || rankOf(gather.getData()) != 3 ||
      rankOf(gather.getIndices()) != 3 || dimOf(gather.getIndices(), 1) != 1)
    return std::nullopt;
  pooling.gather = gather;
  pooling.tokens = gather.getData();
  if (auto mul = definedBy<onnx::MulOp>(pooling.tokens)) {
    // The mask is the factor computed from attention_mask alone.
    for (auto [mask, tokens] :
         {std::pair(mul.getB(), mul.getA()), std::pair(mul.getA(), mul.getB())})
      if (readsInput(mask, "attention_mask") && !readsInput(mask, "input_ids") &&
          rankOf(tokens) == 3) {
        pooling.mask = mul;
        pooling.tokens = tokens;
        break;
      }
  }
  return pooling;
}

LogicalResult unpoolSentenceEmbeddings(func::FuncOp func) {
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  for (unsigned index = 0; index < ret->getNumOperands(); ++index) {
    auto name = func.getResultAttrOfType<StringAttr>(index, "onnx.name");
    if (!name || name.getValue() != "sentence_embedding") continue;
    std::optional<SentencePooling> pooling = sentencePooling(ret->getOperand(index));
    if (!pooling)
      return func.emitError("pools its sentence_embedding in a way llmc does not serve: only "
                            "sentence-transformers' last-token pooling is, optionally "
                            "normalised (mean and CLS pooling, and modules after the pooling "
                            "such as Dense, are not)");
    if (!pooling->gather->hasAttr(kLastTokenRowsAttr) ||
        (pooling->mask && !pooling->mask->hasAttr(kOnesOnRealRowsAttr)))
      return func.emitError("pools its sentence_embedding at rows not proven to be each "
                            "sequence's last token (mean or CLS pooling, or a mask that is not "
                            "the attention mask); only last-token pooling is served");
    Value tokens = pooling->tokens;
    ret->setOperand(index, tokens);
    // What optimum's transformers export names the final hidden states.
    func.setResultAttr(index, "onnx.name",
                       StringAttr::get(func.getContext(), "last_hidden_state"));
    // The export's token_embeddings: the same rows, no second output.
    for (unsigned other = ret->getNumOperands(); other-- > 0;)
      if (other != index && ret->getOperand(other) == tokens) {
        ret->eraseOperand(other);
        (void)func.eraseResult(other);
        if (other < index) --index;
      }
    func.setFunctionType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                           ret.getOperandTypes()));
    IRRewriter rewriter(func.getContext());
    (void)runRegionDCE(rewriter, func.getBody());
    return success();
  }
  return success();
}

} // namespace llmc::raising
