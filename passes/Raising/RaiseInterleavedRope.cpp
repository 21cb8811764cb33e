//===- RaiseInterleavedRope.cpp - rotary embeddings over interleaved pairs -===//
//
// The rotation GPT-J and CodeGen write out: each pair (x[2i], x[2i+1]) turned
// by angle i, as x * cos + rotate_every_two(x) * sin, with cos and sin
// repeated pairwise from rows of a constant [max_pos, rotary_dim] sin|cos
// table gathered at position_ids. They rotate the first rotary_dim features of
// each head on [batch, seq, heads, head_dim], before the heads' transpose, so
// the pattern is rooted at that transpose and gives llm.rope_cached
// (interleaved) on the transposed heads.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

using namespace mlir;

namespace llmc::raising {
namespace {

/// Which element of each pair a Slice of x's last axis takes: 0 for
/// x[..., ::2], 1 for x[..., 1::2].
std::optional<int> pairElement(Value value, Value x) {
  auto slice = definedBy<onnx::SliceOp>(value);
  auto taken = lastAxisSlice(slice);
  if (!taken || slice.getData() != x || taken->step != 2 || taken->end < dimOf(x, -1) ||
      (taken->start != 0 && taken->start != 1))
    return std::nullopt;
  return int(taken->start);
}

/// Whether `rotated` is rotate_every_two(x): each pair (a, b) turned to
/// (-b, a), written stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2).
bool isRotateEveryTwo(Value rotated, Value x) {
  int64_t rank = rankOf(x), dim = dimOf(x, -1);
  auto flatten = definedBy<onnx::ReshapeOp>(rotated);
  if (!flatten || rank < 1 || ShapedType::isDynamic(dim) || dim % 2 ||
      rankOf(flatten) != rank || dimOf(flatten, -1) != dim)
    return false;
  for (int64_t i = 0; i + 1 < rank; ++i)
    if (!sameDim(flatten, i, x, i)) return false;
  auto stack = definedBy<onnx::ConcatOp>(flatten.getData());
  if (!stack || stack.getInputs().size() != 2 || rankOf(stack) != rank + 1 ||
      !isSingleAxisValue(stack.getAxis(), rank + 1))
    return false;
  auto stacked = [&](Value value) {
    auto unsqueeze = definedBy<onnx::UnsqueezeOp>(value);
    return unsqueeze && isSingleAxis(unsqueeze.getAxes(), rank, rank + 1) ? unsqueeze.getData()
                                                                          : Value();
  };
  auto neg = definedBy<onnx::NegOp>(stacked(stack.getInputs()[0]));
  return neg && pairElement(neg.getX(), x) == 1 &&
         pairElement(stacked(stack.getInputs()[1]), x) == 0;
}

/// A [batch, seq, n] table repeated pairwise along the features to 2n
/// (repeat_interleave(t, 2, -1)) and broadcast over the heads of a 4-D
/// rotation at `headsAxis`.
struct PairwiseRepeat {
  Value table;
  int64_t headsAxis;
};

/// The table `value` repeats, written
/// Reshape(Tile(Unsqueeze(Unsqueeze(t, headsAxis), -1), [1, 1, 1, 1, 2]), [..., -1]).
std::optional<PairwiseRepeat> pairwiseRepeat(Value value) {
  auto flatten = definedBy<onnx::ReshapeOp>(value);
  auto tile = flatten ? definedBy<onnx::TileOp>(flatten.getData()) : onnx::TileOp();
  if (!tile || rankOf(flatten) != 4 || rankOf(tile) != 5) return std::nullopt;
  auto repeats = onnx::getConstantInts(tile.getRepeats());
  if (!repeats || ArrayRef<int64_t>(*repeats) != ArrayRef<int64_t>{1, 1, 1, 1, 2})
    return std::nullopt;
  auto pairs = definedBy<onnx::UnsqueezeOp>(tile.getInput());
  auto broadcast = pairs ? definedBy<onnx::UnsqueezeOp>(pairs.getData()) : onnx::UnsqueezeOp();
  if (!broadcast || !isSingleAxis(pairs.getAxes(), 4, 5) || rankOf(broadcast.getData()) != 3)
    return std::nullopt;
  // The flatten merges the last two dims only.
  int64_t n = dimOf(broadcast.getData(), 2);
  if (ShapedType::isDynamic(n) || dimOf(flatten, 3) != 2 * n) return std::nullopt;
  for (int64_t i = 0; i < 3; ++i)
    if (!sameDim(flatten, i, tile, i)) return std::nullopt;
  for (int64_t axis : {1, 2})
    if (isSingleAxis(broadcast.getAxes(), axis, 4))
      return PairwiseRepeat{broadcast.getData(), axis};
  return std::nullopt;
}

/// `value` before the Expand and Tile ops that copy it along `axis` only,
/// where it has size 1 (a broadcast).
Value skipBroadcastsAlong(Value value, int64_t axis) {
  while (true) {
    if (auto expand = definedBy<onnx::ExpandOp>(value)) {
      auto shape = onnx::getConstantInts(expand.getShape());
      if (!shape || !llvm::all_of(*shape, [](int64_t dim) { return dim == 1; })) return value;
      value = expand.getInput();
    } else if (auto tile = definedBy<onnx::TileOp>(value)) {
      auto repeats = onnx::evaluateShapeEntries(tile.getRepeats());
      int64_t rank = rankOf(tile);
      if (!repeats || int64_t(repeats->size()) != rank || dimOf(tile.getInput(), axis) != 1)
        return value;
      for (int64_t i = 0; i < rank; ++i)
        if (i != axis && (*repeats)[i].value != 1) return value;
      value = tile.getInput();
    } else {
      return value;
    }
  }
}

/// Rows of a constant [max_pos, width] table gathered at [batch, seq] positions.
struct GatheredRows {
  Value table, positions;
};

/// The rows `rows` gathers: Gather or llm.embedding (CodeGen), GatherND of
/// 1-tuples (torch.onnx's dynamo exporter), or GPT-J's GatherElements along
/// axis 1 of the table and the positions broadcast to [batch, max_pos, width]
/// and [batch, seq, width].
std::optional<GatheredRows> gatheredRows(Value rows) {
  GatheredRows found;
  if (auto gather = definedBy<onnx::GatherOp>(rows)) {
    if (gather.getAxis() != 0) return std::nullopt;
    found = {gather.getData(), gather.getIndices()};
  } else if (auto embedding = definedBy<llm::EmbeddingOp>(rows)) {
    if (embedding.getTransposeTable()) return std::nullopt;
    found = {embedding.getTable(), embedding.getIds()};
  } else if (auto gather = definedBy<onnx::GatherNDOp>(rows)) {
    // table[positions] as torch.onnx's dynamo exporter writes it: 1-tuples.
    auto tuples = definedBy<onnx::UnsqueezeOp>(gather.getIndices());
    if (gather.getBatchDims() != 0 || !tuples || !isSingleAxis(tuples.getAxes(), 2, 3))
      return std::nullopt;
    found = {gather.getData(), tuples.getData()};
  } else if (auto gather = definedBy<onnx::GatherElementsOp>(rows)) {
    if (rankOf(rows) != 3 || onnx::normalizeAxis(gather.getAxis(), 3) != 1) return std::nullopt;
    Value table = skipBroadcastsAlong(gather.getData(), 0);
    auto spread = definedBy<onnx::UnsqueezeOp>(skipBroadcastsAlong(gather.getIndices(), 2));
    if (rankOf(table) != 2 || dimOf(table, 0) != dimOf(gather.getData(), 1) ||
        dimOf(table, 1) != dimOf(gather.getData(), 2) || !spread ||
        !isSingleAxis(spread.getAxes(), 2, 3))
      return std::nullopt;
    found = {table, spread.getData()};
  } else {
    return std::nullopt;
  }
  if (!isConstant(found.table) || rankOf(found.table) != 2 || rankOf(found.positions) != 2)
    return std::nullopt;
  return found;
}

/// The value whose last axis `part` takes columns of (a Split output or a
/// Slice), and the first of those columns.
std::optional<std::pair<Value, int64_t>> columnsOf(Value part) {
  if (auto slice = definedBy<onnx::SliceOp>(part)) {
    auto columns = lastAxisColumns(slice);
    if (!columns) return std::nullopt;
    return std::pair(slice.getData(), columns->first);
  }
  auto split = definedBy<onnx::SplitOp>(part);
  if (!split || !isSingleAxisValue(split.getAxis(), rankOf(split.getInput())))
    return std::nullopt;
  int64_t start = 0;
  for (Value before : split.getResults().take_front(cast<OpResult>(part).getResultNumber())) {
    if (ShapedType::isDynamic(dimOf(before, -1))) return std::nullopt;
    start += dimOf(before, -1);
  }
  return std::pair(split.getInput(), start);
}

/// Half-width cos and sin caches [max_pos, rotary_dim/2] and the positions
/// they are read at, and the heads axis the tables broadcast over.
struct InterleavedTables {
  Value positions, cosCache, sinCache;
  int64_t headsAxis;
};

/// What `cos` and `sin` (repeated pairwise) are read from: columns of one
/// gathered table.
FailureOr<InterleavedTables> analyseInterleavedTables(Value cos, Value sin, OpBuilder &builder,
                                                      Location loc) {
  auto cosPairs = pairwiseRepeat(cos), sinPairs = pairwiseRepeat(sin);
  if (!cosPairs || !sinPairs || cosPairs->headsAxis != sinPairs->headsAxis) return failure();
  auto cosColumns = columnsOf(cosPairs->table), sinColumns = columnsOf(sinPairs->table);
  if (!cosColumns || !sinColumns || cosColumns->first != sinColumns->first) return failure();
  auto rows = gatheredRows(cosColumns->first);
  auto values = rows ? readConstantFloats(rows->table) : std::nullopt;
  int64_t half = dimOf(cosPairs->table, -1), width = dimOf(rows ? rows->table : Value(), 1);
  if (!values || dimOf(sinPairs->table, -1) != half) return failure();
  int64_t positions = dimOf(rows->table, 0);
  InterleavedTables tables{rows->positions, {}, {}, cosPairs->headsAxis};
  for (auto [start, slot] : {std::pair(cosColumns->second, &tables.cosCache),
                             std::pair(sinColumns->second, &tables.sinCache)}) {
    if (start + half > width) return failure();
    std::vector<float> cache;
    cache.reserve(positions * half);
    for (int64_t p = 0; p < positions; ++p) {
      const float *row = values->data() + p * width + start;
      cache.insert(cache.end(), row, row + half);
    }
    *slot = createF32Constant(builder, loc, {positions, half}, cache);
  }
  return tables;
}

/// Transpose(v, [0, 2, 1, 3]) of v = x * cos + rotate_every_two(x) * sin on
/// [batch, seq, heads, head_dim], or of Concat(that, y[..., r:]) with
/// x = y[..., :r] (a partial rotary) -> rope_cached (interleaved) of the
/// transposed x or y.
struct RaiseTokenMajorInterleavedRope : OpRewritePattern<onnx::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(onnx::TransposeOp op, PatternRewriter &rewriter) const override {
    if (!hasPerm(op, {0, 2, 1, 3}))
      return rewriter.notifyMatchFailure(op, "not the heads' transpose [0, 2, 1, 3]");
    Value rotatedPart = op.getData(), passed;
    auto concat = definedBy<onnx::ConcatOp>(rotatedPart);
    if (concat && concat.getInputs().size() == 2 && isSingleAxisValue(concat.getAxis(), 4))
      rotatedPart = concat.getInputs()[0], passed = concat.getInputs()[1];
    auto add = definedBy<onnx::AddOp>(rotatedPart);
    if (!add || !add->hasOneUse())
      return rewriter.notifyMatchFailure(op, "the rotated part is not a sum used only here");
    std::optional<RotationFactors> factors = rotationFactors(add, isRotateEveryTwo);
    if (!factors)
      return rewriter.notifyMatchFailure(op, "no x * cos + rotate_every_two(x) * sin");
    FailureOr<InterleavedTables> tables =
        analyseInterleavedTables(factors->cos, factors->sin, rewriter, op.getLoc());
    if (failed(tables) || tables->headsAxis != 2)
      return rewriter.notifyMatchFailure(
          op, "cos/sin are not columns of a constant table's rows gathered at positions, "
              "repeated pairwise and broadcast over the heads of [batch, seq, heads, head_dim]");
    Value x = factors->x;
    if (passed) {
      x = partialRotaryInput(factors->x, passed);
      if (!x) return rewriter.notifyMatchFailure(op, "the parts are not y[..., :r] and y[..., r:]");
    }
    if (dimOf(x, -1) != dimOf(op, -1))
      return rewriter.notifyMatchFailure(op, "the rotated value is not the transposed one");
    Location loc = fusedLocOf({op, add, factors->direct, factors->rotatedProduct});
    Value heads = onnx::TransposeOp::create(rewriter, loc, op.getType(), x, op.getPermAttr());
    auto rope = llm::RopeCachedOp::create(rewriter, loc, op.getType(), heads, tables->positions,
                                          tables->cosCache, tables->sinCache);
    rope.setInterleaved(true);
    rewriter.replaceOp(op, rope);
    return success();
  }
};

} // namespace

void populateInterleavedRopePatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseTokenMajorInterleavedRope>(patterns.getContext());
}

} // namespace llmc::raising
