//===- KvCachePaging.cpp - dense KV cache -> paged pool -------------------===//
//
// Exports carry the KV cache as tensors: past_key_values.N.{key,value} in,
// Concat(past, new) inside, present.N.* out. A server cannot keep one dense
// tensor per sequence: it keeps fixed-size blocks in one pool and tells each
// step where a sequence's blocks are. This pass moves the model to that
// contract: new keys and values are written to the pool at slot_mapping, and
// attention reads them back through block_tables.
//
//===----------------------------------------------------------------------===//
#include "passes/Serving/Passes.h"
#include "passes/Serving/StepFunction.h"

#include "llmc/Artifact/StepInfo.h"
#include "llmc/Support/TensorShape.h"

#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"

#define DEBUG_TYPE "llm-kv-cache-paging"

namespace llmc {
#define GEN_PASS_DEF_LLMKVCACHEPAGINGPASS
#include "passes/Serving/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// One attention layer: its op and the keys and values of the new tokens.
struct Layer {
  llm::AttentionOp attention;
  Value newKeys, newValues;

  /// Whether the values are the keys' first features: keys
  /// concat_heads(values, rotary key), as llm-absorb-latent-attention
  /// leaves multi-head latent attention over its latent.
  bool valuesInKeys() const {
    auto keys = newKeys.getDefiningOp<llm::ConcatHeadsOp>();
    return keys && keys.getLhs() == newValues;
  }
};

/// The keys or values of the current tokens that `cached` attends over:
/// `new` of kv_concat(past input, new), or `cached` itself in a model
/// without a cache.
FailureOr<Value> newTokensOf(llm::AttentionOp attention, Value cached, StringRef what) {
  if (cached.getDefiningOp<llm::RepeatKvOp>())
    return attention.emitOpError() << what << " are widened by llm.repeat_kv: run llm-gqa-rewrite first",
           failure();
  auto concat = cached.getDefiningOp<llm::KvConcatOp>();
  if (!concat) return cached;
  if (!isa<BlockArgument>(concat.getPast()))
    return attention.emitOpError() << "past " << what
                                   << " are not a model input: only a cache the model takes and "
                                      "returns can be paged",
           failure();
  return concat.getCurrent();
}

/// The [kv_heads, head_dim] of a [batch, kv_heads, seq, head_dim] tensor, or
/// failure when they are not static.
FailureOr<std::pair<int64_t, int64_t>> kvShape(llm::AttentionOp attention, Value keys) {
  int64_t kvHeads = dimOf(keys, 1), headDim = dimOf(keys, 3);
  if (rankOf(keys) != 4 || ShapedType::isDynamic(kvHeads) || ShapedType::isDynamic(headDim))
    return attention.emitOpError("needs keys of static [batch, kv_heads, seq, head_dim] shape"),
           failure();
  return std::make_pair(kvHeads, headDim);
}

/// A name for an input in error messages: its ONNX name when it has one.
std::string describeInput(func::FuncOp func, BlockArgument arg) {
  if (auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "onnx.name"))
    return "'" + name.str() + "'";
  return "#" + std::to_string(arg.getArgNumber());
}

/// Whether `ids` are the new tokens' positions: the model's position_ids
/// input, or positions raising derived (GPT-2's learned position embedding
/// reads them as an embedding's ids).
bool isPositions(Value ids) {
  if (isa_and_present<llm::PositionIdsOp, llm::CachePositionsOp>(ids.getDefiningOp())) return true;
  auto arg = dyn_cast<BlockArgument>(ids);
  auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp()) : nullptr;
  auto name = func ? func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "onnx.name") : nullptr;
  return name && name.getValue() == "position_ids";
}

struct LlmKvCachePagingPass : impl::LlmKvCachePagingPassBase<LlmKvCachePagingPass> {
  using LlmKvCachePagingPassBase::LlmKvCachePagingPassBase;

  void runOnOperation() override {
    if (failed(page(getOperation()))) signalPassFailure();
  }

  LogicalResult page(func::FuncOp func) {
    if (blockSize <= 0) return func.emitError("block-size must be positive");
    if (kvCacheDtype != "auto" && kvCacheDtype != "bf16" && kvCacheDtype != "int8")
      return func.emitError("kv-cache-dtype must be auto, bf16 or int8, not '")
             << kvCacheDtype << "'";
    SmallVector<Layer> layers;
    if (failed(collectLayers(func, layers))) return failure();

    // The token ids (what the token embedding reads) and the positions
    // (what every rotary embedding and a learned position embedding read,
    // given or derived from attention_mask).
    Value ids;
    SmallVector<Operation *> ropes;
    SmallVector<llm::EmbeddingOp> positionEmbeddings;
    WalkResult walk = func.walk([&](Operation *op) {
      if (auto embedding = dyn_cast<llm::EmbeddingOp>(op)) {
        if (isPositions(embedding.getIds())) {
          positionEmbeddings.push_back(embedding);
          return WalkResult::advance();
        }
        if (ids && ids != embedding.getIds()) {
          op->emitOpError("reads other token ids than an earlier embedding");
          return WalkResult::interrupt();
        }
        ids = embedding.getIds();
      } else if (isa<llm::RopeOp, llm::RopeCachedOp>(op)) {
        ropes.push_back(op);
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted()) return failure();
    if (!ids || !isa<BlockArgument>(ids) || rankOf(ids) != 2)
      return func.emitError("the token ids must be a [batch, seq] input read by llm.embedding");

    MLIRContext *context = func.getContext();
    OpBuilder builder(context);
    auto i32 = IntegerType::get(context, 32);
    int64_t batch = dimOf(ids, 0), seq = dimOf(ids, 1), dynamic = ShapedType::kDynamic;
    unsigned originalInputs = func.getNumArguments();

    auto firstShape = kvShape(layers.front().attention, layers.front().newKeys);
    if (failed(firstShape)) return failure();
    auto [kvHeads, headDim] = *firstShape;
    Type kvType = cast<ShapedType>(layers.front().newKeys.getType()).getElementType();
    bool int8 = kvCacheDtype == "int8", bf16 = kvCacheDtype == "bf16";
    if ((int8 || bf16) && !kvType.isF32())
      return layers.front().attention.emitOpError("caches ")
             << kvType << " keys; the " << kvCacheDtype << " KV cache stores f32 keys and values";
    int64_t row = int8 ? headDim + llm::kInt8KvScaleBytes : headDim;
    Type poolElement = int8 ? builder.getI8Type() : bf16 ? builder.getBF16Type() : kvType;
    // Where every layer's values are its keys' first features, a token
    // caches one row: the keys, which attention reads the values from.
    bool valuesInKeys = llvm::all_of(layers, [](const Layer &layer) { return layer.valuesInKeys(); });
    int64_t rowsPerToken = valuesInKeys ? 1 : 2;
    auto poolType = RankedTensorType::get(
        {static_cast<int64_t>(layers.size()), dynamic, rowsPerToken, kvHeads, blockSize, row},
        poolElement);

    Value tokens = abi::addInput(func, abi::kTokens, RankedTensorType::get({batch, seq}, i32));
    Value positions = abi::addInput(func, abi::kPositions, RankedTensorType::get({batch, seq}, i32));
    Value contextLens = abi::addInput(func, abi::kContextLens, RankedTensorType::get({batch}, i32));
    Value blockTables =
        abi::addInput(func, abi::kBlockTables, RankedTensorType::get({batch, dynamic}, i32));
    Value slotMapping =
        abi::addInput(func, abi::kSlotMapping, RankedTensorType::get({batch, seq}, i32));
    Value pool = abi::addInput(func, abi::kKvPool, poolType);

    ids.replaceAllUsesWith(tokens);
    for (Operation *rope : ropes) rope->setOperand(1, positions);
    for (llm::EmbeddingOp embedding : positionEmbeddings)
      embedding.getIdsMutable().assign(positions);

    for (auto [index, layer] : llvm::enumerate(layers)) {
      llm::AttentionOp attention = layer.attention;
      auto shape = index == 0 ? firstShape : kvShape(attention, layer.newKeys);
      if (failed(shape)) return failure();
      if (*shape != std::make_pair(kvHeads, headDim) ||
          cast<ShapedType>(layer.newKeys.getType()).getElementType() != kvType)
        return attention.emitOpError("has another KV shape than layer 0; one pool holds all layers");
      // Values narrower than the keys (multi-head latent attention) fill the
      // first features of their rows.
      if (int64_t valueDim = dimOf(layer.newValues, 3);
          ShapedType::isDynamic(valueDim) || valueDim > headDim)
        return attention.emitOpError("caches values of head_dim ")
               << valueDim << " beside keys of " << headDim
               << ": a pool's rows are as wide as the keys, the values' no wider";
      builder.setInsertionPoint(attention);
      Location loc = attention.getLoc();
      pool = llm::PagedKvWriteOp::create(builder, loc, poolType, pool, layer.newKeys,
                                         valuesInKeys ? Value() : layer.newValues, slotMapping,
                                         builder.getI64IntegerAttr(index), /*kv_group=*/nullptr);
      Value output = llm::PagedAttentionOp::create(
          builder, loc, attention.getType(), attention.getQuery(), pool, blockTables, contextLens,
          /*cu_seqlens_q=*/Value(), builder.getI64IntegerAttr(index), attention.getScaleAttr(),
          attention.getSlidingWindowAttr(), attention.getSoftcapAttr(), attention.getSinksAttr(),
          attention.getAlibiSlopesAttr(), /*kv_group=*/nullptr);
      attention.replaceAllUsesWith(output);
    }

    if (failed(returnOnlyLogits(func))) return failure();
    eraseDeadOps(func);
    return eraseOriginalInputs(func, originalInputs);
  }

  /// Finds every attention, in program order, with its new keys and values.
  LogicalResult collectLayers(func::FuncOp func, SmallVectorImpl<Layer> &layers) {
    WalkResult walk = func.walk([&](llm::AttentionOp attention) {
      if (!attention.getCausal()) {
        attention.emitOpError("is not causal: a paged KV cache serves causal decoders");
        return WalkResult::interrupt();
      }
      auto keys = newTokensOf(attention, attention.getKey(), "keys");
      auto values = newTokensOf(attention, attention.getValue(), "values");
      if (failed(keys) || failed(values)) return WalkResult::interrupt();
      layers.push_back({attention, *keys, *values});
      return WalkResult::advance();
    });
    if (walk.wasInterrupted()) return failure();
    if (layers.empty()) return func.emitError("no llm.attention to page: raise the model first");
    return success();
  }

  /// The op that computes `result` from the LM head (llm.logits, or a linear
  /// raising could not make one) through row-wise ops that raising could not
  /// fold into the head's epilogue (they read more than the logits). Null
  /// otherwise.
  static Operation *opAfterLogitsHead(Value result) {
    Operation *last = result.getDefiningOp();
    for (Operation *op = last; op && op->hasTrait<llm::OpTrait::RowWise>();) {
      Operation *next = nullptr;
      for (Value operand : op->getOperands()) {
        if (isa_and_nonnull<llm::LogitsOp, llm::LinearOp>(operand.getDefiningOp())) return last;
        if (operand.getType() == result.getType()) next = operand.getDefiningOp();
      }
      op = next;
    }
    return nullptr;
  }

  /// Whether result `index` of `func` is the final hidden states of an
  /// export without its LM head (optimum's --task feature-extraction, an
  /// embedding model): named `last_hidden_state`, [batch, seq, hidden].
  static bool isLastHiddenState(func::FuncOp func, unsigned index, Value value) {
    auto name = func.getResultAttrOfType<StringAttr>(index, "onnx.name");
    return name && name.getValue() == "last_hidden_state" && rankOf(value) == 3 &&
           dimOf(value, 2) == abi::hiddenSize(func);
  }

  /// Drops the present K/V from the results, and the inputs returned as they
  /// are (transformers 5's sliding-window cache passes its window size
  /// through so), which the step computes nothing for; the logits, or the
  /// final hidden states of a model exported without its head, must be what
  /// is left (kStepOutputAttr says which).
  LogicalResult returnOnlyLogits(func::FuncOp func) {
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    SmallVector<Value> kept;
    bool hiddenStates = false;
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      if (value.getDefiningOp<llm::KvConcatOp>() || isa<BlockArgument>(value)) continue;
      kept.push_back(value);
      hiddenStates = isLastHiddenState(func, index, value);
    }
    if (kept.size() == 1 && hiddenStates) {
      func->setAttr(kStepOutputAttr, StringAttr::get(func.getContext(), kHiddenStatesOutput));
    } else if (kept.size() == 1 && !kept.front().getDefiningOp<llm::LogitsOp>() &&
               dimOf(kept.front(), -1) != abi::hiddenSize(func)) {
      // Logits as wide as the vocabulary, not hidden states under another name.
      if (Operation *after = opAfterLogitsHead(kept.front()))
        return after->emitOpError("transforms the logits after the LM head with more than "
                                  "per-logit arithmetic on constants, which the head's epilogue "
                                  "holds; such logits are not supported");
    }
    if (kept.size() != 1 || (!hiddenStates && !kept.front().getDefiningOp<llm::LogitsOp>()))
      return ret.emitOpError("must return the logits (llm.logits), or the final hidden states "
                             "(last_hidden_state), and the present K/V only; the step ABI has no "
                             "place for other results");
    // A classifier's logits (raising unpooled them): num_labels wide.
    if (!hiddenStates)
      func->setAttr(kStepOutputAttr,
                    StringAttr::get(func.getContext(), func->hasAttr(kPooledAtLastTokenAttr)
                                                           ? kClassLogitsOutput
                                                           : kLogitsOutput));
    func->removeAttr(kPooledAtLastTokenAttr);
    ret->setOperands(kept);
    func.removeResAttrsAttr();
    func.setFunctionType(
        FunctionType::get(func.getContext(), func.getArgumentTypes(), {kept.front().getType()}));
    return success();
  }

  void eraseDeadOps(func::FuncOp func) {
    IRRewriter rewriter(func.getContext());
    (void)runRegionDCE(rewriter, func.getBody());
  }

  /// Removes the export's own inputs, which the step inputs have replaced.
  LogicalResult eraseOriginalInputs(func::FuncOp func, unsigned count) {
    llvm::BitVector erase(func.getNumArguments());
    for (unsigned i = 0; i < count; ++i) {
      BlockArgument arg = func.getArgument(i);
      if (!arg.use_empty()) {
        Operation *user = *arg.getUsers().begin();
        return user->emitOpError() << "reads input " << describeInput(func, arg)
                                   << ", which the paged step ABI replaces";
      }
      erase.set(i);
    }
    return func.eraseArguments(erase);
  }
};

} // namespace
} // namespace llmc
