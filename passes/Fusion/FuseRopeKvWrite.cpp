//===- FuseRopeKvWrite.cpp - rope and the paged KV write in one kernel ----===//
//
// Unfused, a layer rotates Q into a buffer, rotates K into another, then
// copies K and V into the pool. Fused, one kernel reads q, k and v once,
// writes the rotated q, and sends the rotated k and v straight to their
// cache slots.
//
//===----------------------------------------------------------------------===//
#include "passes/Fusion/FusionUtils.h"

#include "llmc/Support/MatchFailureListener.h"

#define DEBUG_TYPE "llm-fuse-rope-kv-write"

namespace llmc {
#define GEN_PASS_DEF_LLMFUSEROPEKVWRITEPASS
#include "passes/Fusion/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// A rotation: its input and what the angles come from.
struct Rotation {
  Operation *op = nullptr;
  Value input, positions, invFreq, cosCache, sinCache;
  bool interleaved = false;

  /// Whether `other` rotates with the same angles.
  bool sameAngles(const Rotation &other) const {
    return positions == other.positions && invFreq == other.invFreq &&
           cosCache == other.cosCache && sinCache == other.sinCache &&
           interleaved == other.interleaved;
  }
};

/// The rotation that defines `value`, if any.
std::optional<Rotation> rotationOf(Value value) {
  Operation *def = value.getDefiningOp();
  // rope_paged_kv_write has no scale: a scaled rope (YaRN, LongRoPE) stays unfused.
  if (auto rope = dyn_cast_or_null<llm::RopeOp>(def); rope && !rope.getScale())
    return Rotation{def, rope.getInput(), rope.getPositions(), rope.getInvFreq(), nullptr, nullptr,
                    rope.getInterleaved()};
  if (auto rope = dyn_cast_or_null<llm::RopeCachedOp>(def))
    return Rotation{def,     rope.getInput(),    rope.getPositions(), nullptr,
                    rope.getCosCache(), rope.getSinCache(), rope.getInterleaved()};
  return std::nullopt;
}

/// paged_kv_write(rope(k), v) with the layer's paged_attention(rope(q)) ->
/// rope_paged_kv_write(q, k, v).
struct FuseRopeIntoKvWrite : OpRewritePattern<llm::PagedKvWriteOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(llm::PagedKvWriteOp write, PatternRewriter &rewriter) const override {
    if (rankOf(write.getKey()) != 3)
      return rewriter.notifyMatchFailure(write, "is not in the ragged form");
    if (!write.getValue())
      return rewriter.notifyMatchFailure(write, "its values are its keys' first features");
    if (write.getKey().getType() != write.getValue().getType())
      return rewriter.notifyMatchFailure(write, "its values are narrower than its keys");
    std::optional<Rotation> key = rotationOf(write.getKey());
    if (!key) return rewriter.notifyMatchFailure(write, "its keys are not rotated by llm.rope");
    if (!fusion::onlyUsedBy(write.getKey(), write))
      return rewriter.notifyMatchFailure(write, "the rotated keys have other users");
    // The attention that reads this write's pool reads the rotated query.
    llm::PagedAttentionOp attention;
    for (Operation *user : write.getUpdatedPool().getUsers())
      if (auto candidate = dyn_cast<llm::PagedAttentionOp>(user))
        if (candidate.getLayer() == write.getLayer() && candidate.getKvGroup() == write.getKvGroup())
          attention = candidate;
    if (!attention)
      return rewriter.notifyMatchFailure(write, "no attention of its layer reads the pool it writes");
    std::optional<Rotation> query = rotationOf(attention.getQuery());
    if (!query || !query->sameAngles(*key))
      return rewriter.notifyMatchFailure(write, "the query is not rotated with the keys' angles");
    if (!fusion::onlyUsedBy(attention.getQuery(), attention))
      return rewriter.notifyMatchFailure(write, "the rotated query has other users");

    // Sit after both the write and the query's rotation; everything that
    // reads either result must come later.
    Operation *point = write->isBeforeInBlock(query->op) ? query->op : write.getOperation();
    for (Value result : {write.getUpdatedPool(), attention.getQuery()})
      for (Operation *user : result.getUsers())
        if (user->getBlock() != point->getBlock() || !point->isBeforeInBlock(user))
          return rewriter.notifyMatchFailure(write, "a user of the pool comes before the query's rotation");

    rewriter.setInsertionPointAfter(point);
    auto fused = llm::RopePagedKvWriteOp::create(
        rewriter, rewriter.getFusedLoc({query->op->getLoc(), key->op->getLoc(), write.getLoc()}),
        TypeRange{attention.getQuery().getType(), write.getUpdatedPool().getType()},
        write.getKvPool(), query->input, key->input, write.getValue(), write.getSlotMapping(),
        key->positions, key->invFreq, key->cosCache, key->sinCache,
        write.getLayer(), key->interleaved, write.getKvGroupAttr());
    rewriter.replaceAllUsesWith(attention.getQuery(), fused.getRotatedQuery());
    rewriter.replaceAllUsesWith(write.getUpdatedPool(), fused.getUpdatedPool());
    rewriter.eraseOp(write);
    rewriter.eraseOp(key->op);
    rewriter.eraseOp(query->op);
    return success();
  }
};

struct LlmFuseRopeKvWritePass : impl::LlmFuseRopeKvWritePassBase<LlmFuseRopeKvWritePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseRopeIntoKvWrite>(&getContext());
    if (failed(applyPatternsExplained(getOperation(), std::move(patterns), DEBUG_TYPE)))
      signalPassFailure();
  }
};

} // namespace
} // namespace llmc
