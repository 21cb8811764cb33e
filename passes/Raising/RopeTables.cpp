//===- RopeTables.cpp - what a rotary embedding's cos and sin are ---------===//
#include "passes/Raising/RopeTables.h"

#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/ShapeHelpers.h"

using namespace mlir;

namespace llmc::raising {
namespace {

/// Peels Unsqueeze(axis 1), the Mul by a scalar constant (transformers'
/// attention_scaling: 1, or YaRN's and LongRoPE's factor, returned in
/// `scale`) and the Cast to a half-precision model's type (its tables are
/// computed in f32) from a cos/sin operand broadcast over heads.
Value peelBroadcast(Value table, double &scale) {
  if (auto unsqueeze = definedBy<onnx::UnsqueezeOp>(table)) {
    if (!isSingleAxis(unsqueeze.getAxes(), 1, rankOf(unsqueeze.getData()) + 1)) return nullptr;
    table = unsqueeze.getData();
  }
  table = skipCasts(table);
  scale = 1.0;
  if (auto mul = definedBy<onnx::MulOp>(table)) {
    std::optional<double> b = constantScalar(mul.getB()), a = constantScalar(mul.getA());
    if (b && *b > 0) table = mul.getA(), scale = *b;
    else if (a && *a > 0) table = mul.getB(), scale = *a;
    else return nullptr;
  }
  return skipCasts(table);
}

/// The source of positions: peels Cast/Unsqueeze/Expand down to a non-constant value.
Value peelPositions(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (isa<onnx::CastOp, onnx::UnsqueezeOp, onnx::ExpandOp, onnx::ReshapeOp>(op))
      value = op->getOperand(0);
    else
      break;
  }
  return value;
}

/// The value whose first half along the last axis `value` is (a Slice of
/// columns [0, d/2) of d), or null.
Value wholeOfFirstHalf(Value value) {
  auto slice = definedBy<onnx::SliceOp>(value);
  auto columns = slice ? lastAxisColumns(slice) : std::nullopt;
  int64_t width = slice ? dimOf(slice.getData(), -1) : 0;
  if (!columns || width % 2 || *columns != std::pair<int64_t, int64_t>(0, width / 2)) return {};
  return slice.getData();
}

/// The axes `tile` may repeat its input along (its repeats not known to be 1),
/// when each has size 1 in the input, so that the Tile broadcasts; nullopt when not.
std::optional<SmallVector<int64_t>> broadcastAxes(onnx::TileOp tile) {
  auto repeats = onnx::evaluateShapeEntries(tile.getRepeats());
  int64_t rank = rankOf(tile.getInput());
  if (!repeats || int64_t(repeats->size()) != rank) return std::nullopt;
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < rank; ++i) {
    if ((*repeats)[i].value == 1) continue;
    if (dimOf(tile.getInput(), i) != 1) return std::nullopt;
    axes.push_back(i);
  }
  return axes;
}

/// A new constant [rows, count] of columns [start, start + count) of each row
/// of `table` [rows, width], times `scale`.
Value createColumns(OpBuilder &builder, Location loc, ArrayRef<float> table, int64_t width,
                    int64_t start, int64_t count, double scale = 1.0) {
  int64_t rows = int64_t(table.size()) / width;
  std::vector<float> columns;
  columns.reserve(rows * count);
  for (int64_t r = 0; r < rows; ++r)
    for (float value : table.slice(r * width + start, count))
      columns.push_back(float(value * scale));
  return createF32Constant(builder, loc, {rows, count}, columns);
}

/// llm.rope's tables from the constant frequencies and the positions
/// (through Casts and broadcasts) that angles are the product of.
FailureOr<RopeTables> anglesOf(Value invFreq, Value positionsSource, OpBuilder &builder,
                               Location loc) {
  // Broadcasts only: Cohere's export widens inv_freq over the batch with a Tile.
  while (Operation *op = invFreq.getDefiningOp()) {
    if (isa<onnx::ExpandOp, onnx::UnsqueezeOp, onnx::ReshapeOp, onnx::CastOp>(op) ||
        (isa<onnx::TileOp>(op) && broadcastAxes(cast<onnx::TileOp>(op))))
      invFreq = op->getOperand(0);
    else
      break;
  }
  auto values = readConstantFloats(invFreq);
  if (!values) return failure();
  Value positions = peelPositions(positionsSource);
  if (auto range = definedBy<onnx::RangeOp>(positions)) {
    // A Range proven to give the cache positions: rotate by those.
    BlockArgument mask = findArgumentByName(range, "attention_mask");
    BlockArgument ids = findArgumentByName(range, "input_ids");
    if (!range->hasAttr(kCachePositionsAttr) || !mask || !ids) return failure();
    auto type = RankedTensorType::get({1, dimOf(ids, 1)}, getElementTypeOrSelf(range));
    positions = llm::CachePositionsOp::create(builder, loc, type, mask, ids);
  }
  if (isConstant(positions) || rankOf(positions) != 2) return failure();
  RopeTables tables;
  tables.positions = positions;
  tables.invFreq = createF32Constant(builder, loc, {int64_t(values->size())}, *values);
  return tables;
}

/// The angles transposed, [b, d/2, s]: MatMul(inv_freq[b, d/2, 1],
/// positions[b, 1, s]), as TorchScript exports compute them.
FailureOr<RopeTables> analyseTransposedAngles(Value product, OpBuilder &builder, Location loc) {
  auto matmul = definedBy<onnx::MatMulOp>(product);
  if (!matmul) return failure();
  return anglesOf(matmul.getA(), matmul.getB(), builder, loc);
}

} // namespace

/// The frequencies and positions rotary angles [b, s, d/2] are computed from:
/// Transpose(MatMul(inv_freq[b, d/2, 1], positions[b, 1, s]), [0, 2, 1])
/// (TorchScript) or positions[b, s, 1] * inv_freq[d/2] (torch.onnx's dynamo).
FailureOr<RopeTables> analyseAngles(Value freqs, OpBuilder &builder, Location loc) {
  if (auto transpose = definedBy<onnx::TransposeOp>(freqs); hasPerm(transpose, {0, 2, 1}))
    return analyseTransposedAngles(transpose.getData(), builder, loc);
  auto outer = definedBy<onnx::MulOp>(freqs);
  if (!outer) return failure();
  bool constantA = isConstant(skipCasts(outer.getA()));
  Value invFreq = constantA ? outer.getA() : outer.getB();
  Value positionsSource = constantA ? outer.getB() : outer.getA();
  // An outer product: positions [b, s, 1] times frequencies [d/2].
  if (rankOf(invFreq) != 1 || rankOf(positionsSource) != 3 || dimOf(positionsSource, 2) != 1)
    return failure();
  return anglesOf(invFreq, positionsSource, builder, loc);
}

/// Finds what cos and sin are computed from. Both must come from one source.
/// Full-width tables repeat their half (cat(t, t), rotate_half's); `halfWidth`
/// ones are that half, or the first half of a full-width one sliced off
/// (Helium and GLM take cos[..., :d/2] to repeat it pairwise).
FailureOr<RopeTables> analyseRotateHalfTables(Value cos, Value sin, OpBuilder &builder,
                                              Location loc, bool halfWidth) {
  if (halfWidth) {
    Value cosWhole = wholeOfFirstHalf(cos), sinWhole = wholeOfFirstHalf(sin);
    if (cosWhole && sinWhole) cos = cosWhole, sin = sinWhole, halfWidth = false;
  }
  double cosScale = 1.0, sinScale = 1.0;
  cos = peelBroadcast(cos, cosScale);
  sin = peelBroadcast(sin, sinScale);
  // A rotation scales cos and sin alike; anything else is not one.
  if (!cos || !sin || cosScale != sinScale) return failure();

  // Computed: Cos(emb), Sin(emb), emb = Concat(freqs, freqs, -1).
  auto cosOp = definedBy<onnx::CosOp>(cos);
  auto sinOp = definedBy<onnx::SinOp>(sin);
  if (cosOp && sinOp) {
    if (cosOp.getX() != sinOp.getX()) return failure();
    Value angles = cosOp.getX();
    if (!halfWidth) {
      auto emb = definedBy<onnx::ConcatOp>(angles);
      if (!emb || emb.getInputs().size() != 2 || emb.getInputs()[0] != emb.getInputs()[1])
        return failure();
      angles = emb.getInputs()[0];
    }
    FailureOr<RopeTables> tables = analyseAngles(angles, builder, loc);
    if (succeeded(tables)) tables->scale = cosScale;
    return tables;
  }

  // Cached: Gather(cache[max_pos, d], position_ids) with cache = cat(t, t).
  auto cosGather = definedBy<onnx::GatherOp>(cos);
  auto sinGather = definedBy<onnx::GatherOp>(sin);
  if (!cosGather || !sinGather || cosGather.getIndices() != sinGather.getIndices() ||
      cosGather.getAxis() != 0 || sinGather.getAxis() != 0)
    return failure();
  RopeTables tables;
  tables.positions = cosGather.getIndices();
  for (auto [gather, slot] : {std::pair(cosGather, &tables.cosCache),
                              std::pair(sinGather, &tables.sinCache)}) {
    auto full = readConstantFloats(gather.getData());
    int64_t rows = dimOf(gather.getData(), 0), width = dimOf(gather.getData(), 1);
    if (!full || rankOf(gather.getData()) != 2 || (!halfWidth && width % 2)) return failure();
    // Only a cat(t, t) cache is rotate_half's: both halves of each row must agree.
    for (int64_t r = 0; r < rows && !halfWidth; ++r) {
      const float *row = full->data() + r * width;
      if (!std::equal(row, row + width / 2, row + width / 2)) return failure();
    }
    *slot = createColumns(builder, loc, *full, width, 0, halfWidth ? width : width / 2,
                          cosScale);
  }
  return tables;
}

Value createRope(PatternRewriter &rewriter, Location loc, Type type, Value x,
                 const RopeTables &tables, bool interleaved) {
  // Cached tables were scaled as they were read.
  if (!tables.invFreq) {
    auto rope = llm::RopeCachedOp::create(rewriter, loc, type, x, tables.positions,
                                          tables.cosCache, tables.sinCache);
    if (interleaved) rope.setInterleaved(true);
    return rope;
  }
  FloatAttr scale;
  if (tables.scale != 1.0) scale = rewriter.getF32FloatAttr(tables.scale);
  return llm::RopeOp::create(rewriter, loc, type, x, tables.positions, tables.invFreq,
                             interleaved ? rewriter.getUnitAttr() : UnitAttr(), scale);
}

namespace {

/// The table t a value repeats pairwise along its last axis: `source`, or
/// Transpose(source, perm) where the export folded the transpose that made t
/// into one of its own (Cohere's freqs.transpose(1, 2)).
struct PairwiseSource {
  Value source;
  SmallVector<int64_t> perm;
};

/// The table that `value` repeats pairwise, repeat_interleave(t, 2, -1),
/// written Reshape(Tile(Unsqueeze(t, -1), [1, ..., 1, 2]), [..., -1]) (GPT-J).
std::optional<PairwiseSource> repeatedByTile(Value value) {
  auto flatten = definedBy<onnx::ReshapeOp>(value);
  auto tile = flatten ? definedBy<onnx::TileOp>(flatten.getData()) : onnx::TileOp();
  int64_t rank = rankOf(value);
  if (!tile || rank < 1 || rankOf(tile) != rank + 1) return std::nullopt;
  auto repeats = onnx::getConstantInts(tile.getRepeats());
  SmallVector<int64_t> pairwise(rank, 1);
  pairwise.push_back(2);
  if (!repeats || ArrayRef<int64_t>(*repeats) != ArrayRef<int64_t>(pairwise))
    return std::nullopt;
  auto pairs = definedBy<onnx::UnsqueezeOp>(tile.getInput());
  if (!pairs || !isSingleAxis(pairs.getAxes(), rank, rank + 1)) return std::nullopt;
  // The flatten merges the last two dims only.
  Value table = pairs.getData();
  int64_t half = dimOf(table, -1);
  if (ShapedType::isDynamic(half) || dimOf(value, -1) != 2 * half) return std::nullopt;
  for (int64_t i = 0; i + 1 < rank; ++i)
    if (!sameDim(flatten, i, tile, i)) return std::nullopt;
  return PairwiseSource{table, {}};
}

/// The permutation that swaps the first and the last of `rank` dims.
SmallVector<int64_t> endsSwapped(int64_t rank) {
  SmallVector<int64_t> perm = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  std::swap(perm.front(), perm.back());
  return perm;
}

/// The same written as torch exports repeat_interleave by a repeats tensor
/// (Cohere, GLM, Helium): the features moved first, each copied twice along a
/// new axis 1 by Expand, the copies gathered in order by GatherND of (m / 2,
/// m % 2) tuples (an index folded from Range, Less and NonZero over the
/// constant repeats), and moved back.
std::optional<PairwiseSource> repeatedByGather(Value value) {
  int64_t rank = rankOf(value);
  SmallVector<int64_t> swapped = endsSwapped(std::max<int64_t>(rank, 0));
  auto back = definedBy<onnx::TransposeOp>(value);
  auto gather = back ? definedBy<onnx::GatherNDOp>(back.getData()) : onnx::GatherNDOp();
  if (rank < 2 || !hasPerm(back, swapped) || !gather || gather.getBatchDims() != 0)
    return std::nullopt;
  auto expand = definedBy<onnx::ExpandOp>(gather.getData());
  auto spread = expand ? definedBy<onnx::UnsqueezeOp>(expand.getInput()) : onnx::UnsqueezeOp();
  auto front = spread ? definedBy<onnx::TransposeOp>(spread.getData()) : onnx::TransposeOp();
  if (!front || !front.getPerm() || int64_t(front.getPerm()->size()) != rank ||
      !isSingleAxis(spread.getAxes(), 1, rank + 1))
    return std::nullopt;
  // front = Transpose(t, swapped), t = Transpose(source, perm): front's perm
  // is perm composed with the swap.
  PairwiseSource table{front.getData(), {}};
  for (int64_t i = 0; i < rank; ++i) table.perm.push_back((*front.getPerm())[swapped[i]]);
  if (llvm::equal(table.perm, llvm::seq<int64_t>(0, rank))) table.perm.clear();
  int64_t half = dimOf(front, 0);
  // The Expand copies along axis 1, twice, and keeps every other dim.
  auto shape = onnx::evaluateShapeEntries(expand.getShape());
  if (ShapedType::isDynamic(half) || !shape || int64_t(shape->size()) != rank + 1 ||
      (*shape)[1].value != 2)
    return std::nullopt;
  for (auto [i, entry] : llvm::enumerate(*shape)) {
    int64_t dim = dimOf(spread, i);
    bool kept = entry.value == 1 || (!ShapedType::isDynamic(dim) && entry.value == dim) ||
                (entry.dim.first && entry.dim == onnx::canonicalDim(spread, i));
    if (i != 1 && !kept) return std::nullopt;
  }
  auto tuples = onnx::getConstantInts(gather.getIndices());
  if (!tuples || rankOf(gather.getIndices()) != 2 || dimOf(gather.getIndices(), 1) != 2 ||
      int64_t(tuples->size()) != 4 * half)
    return std::nullopt;
  for (int64_t m = 0; m < 2 * half; ++m)
    if ((*tuples)[2 * m] != m / 2 || (*tuples)[2 * m + 1] != m % 2) return std::nullopt;
  return table;
}

/// The table that `value` is repeat_interleave(t, 2, -1) of.
std::optional<PairwiseSource> repeatedPairwise(Value value) {
  if (auto table = repeatedByTile(value)) return table;
  return repeatedByGather(value);
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
      auto axes = broadcastAxes(tile);
      if (!axes || dimOf(tile.getInput(), axis) != 1 ||
          llvm::any_of(*axes, [&](int64_t tiled) { return tiled != axis; }))
        return value;
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

/// Caches of the columns of one gathered table that half-width `cos` and
/// `sin` (broadcast over the heads at `headsAxis`) are, and its positions.
FailureOr<RopeTables> readColumns(Value cos, Value sin, int64_t headsAxis, OpBuilder &builder,
                                  Location loc) {
  auto cosHeads = definedBy<onnx::UnsqueezeOp>(cos), sinHeads = definedBy<onnx::UnsqueezeOp>(sin);
  if (!cosHeads || !sinHeads || !isSingleAxis(cosHeads.getAxes(), headsAxis, 4) ||
      !isSingleAxis(sinHeads.getAxes(), headsAxis, 4))
    return failure();
  auto cosColumns = columnsOf(cosHeads.getData()), sinColumns = columnsOf(sinHeads.getData());
  if (!cosColumns || !sinColumns || cosColumns->first != sinColumns->first) return failure();
  auto rows = gatheredRows(cosColumns->first);
  auto values = rows ? readConstantFloats(rows->table) : std::nullopt;
  int64_t half = dimOf(cos, -1);
  if (!values || dimOf(sin, -1) != half) return failure();
  int64_t width = dimOf(rows->table, 1);
  if (cosColumns->second + half > width || sinColumns->second + half > width) return failure();
  RopeTables tables;
  tables.positions = rows->positions;
  tables.cosCache = createColumns(builder, loc, *values, width, cosColumns->second, half);
  tables.sinCache = createColumns(builder, loc, *values, width, sinColumns->second, half);
  return tables;
}

} // namespace

FailureOr<RopeTables> analysePairwiseTables(Value cos, Value sin, OpBuilder &builder,
                                            Location loc) {
  // The heads axis: the one of 1 and 2 that cos and sin have size 1 on.
  int64_t headsAxis = 0;
  if (rankOf(cos) != 4 || rankOf(sin) != 4) return failure();
  for (int64_t axis : {1, 2}) {
    if (dimOf(cos, axis) != 1 || dimOf(sin, axis) != 1) continue;
    if (headsAxis) return failure();
    headsAxis = axis;
  }
  if (!headsAxis) return failure();
  FailureOr<RopeTables> tables = failure();
  auto cosHalf = repeatedPairwise(cos), sinHalf = repeatedPairwise(sin);
  if (cosHalf && sinHalf) {
    // Columns of a table read at the positions (GPT-J, CodeGen), or computed
    // half-width tables (Helium, GLM).
    if (!cosHalf->perm.empty() || !sinHalf->perm.empty()) return failure();
    tables = readColumns(cosHalf->source, sinHalf->source, headsAxis, builder, loc);
    if (failed(tables) && headsAxis == 1)
      tables = analyseRotateHalfTables(cosHalf->source, sinHalf->source, builder, loc,
                                       /*halfWidth=*/true);
  } else if (headsAxis == 1) {
    // The angles repeated pairwise before their cos and sin are taken (Cohere).
    double cosScale = 1.0, sinScale = 1.0;
    auto cosOp = definedBy<onnx::CosOp>(peelBroadcast(cos, cosScale));
    auto sinOp = definedBy<onnx::SinOp>(peelBroadcast(sin, sinScale));
    std::optional<PairwiseSource> angles;
    if (cosOp && sinOp && cosOp.getX() == sinOp.getX() && cosScale == sinScale)
      angles = repeatedPairwise(cosOp.getX());
    if (angles && angles->perm.empty())
      tables = analyseAngles(angles->source, builder, loc);
    else if (angles && angles->perm == ArrayRef<int64_t>{0, 2, 1})
      tables = analyseTransposedAngles(angles->source, builder, loc);
    if (succeeded(tables)) tables->scale = cosScale;
  }
  if (succeeded(tables)) tables->headsAxis = headsAxis;
  return tables;
}

} // namespace llmc::raising
