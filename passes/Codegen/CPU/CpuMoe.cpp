//===- CpuMoe.cpp - llm.moe: routing, then experts, then down projections -===//
//
// Five kernels, four of them spread over the runtime's threads:
//
//   route   (a task per 8 rows)  each row's scores (softmax or sigmoid)
//           and its top_k experts (equal scores: the lower expert first,
//           within the best groups when grouped) with their weights (or
//           sparsemixer's);
//   plan    (one task)  each expert's list of the (row, slot) picks that
//           chose it, the lists back to back in expert order (a counting
//           sort), and where each pick lies in them;
//   experts (a task per expert and run of kInterRun intermediate features)
//           a[pick, i] = weight * act(gate_e[i] . x, up_e[i] . x) for the
//           expert's picks, in tiles of kRowTile picks by kFeatureBlock
//           features: each weight vector dequantised is used for every
//           pick of the tile, and only chosen experts' rows are read;
//   down    (a task per expert and run of kColumnRun output columns)
//           y[pick, c] = down_e[c] . a[pick] for the expert's picks, tiled
//           as the experts kernel tiles them;
//   sum     (a task per 8 rows)  out[row, c] = the row's y[pick, c] added
//           slot by slot to zeros.
//
// Biases (gpt-oss) join each product as it is finished: gate's and up's
// before the activation, down's times the pick's weight, which a[pick]
// already carries.
//
// Every product is a dot product of a weight row (f32, f16 or bf16, or
// quantised codes kept packed and dequantised in registers: WeightReader)
// by an activation row, computed by the matmul's dot tiles
// (emitDotTileOfRows), whose arithmetic for an output is the same whatever
// the tile: a row's result does not depend on the batch, and a quantised
// weight gives the bits its widened f32 copy gives. With int8 activations
// the quantised weights are in the int8 matmul's layout instead, and x,
// then the picks' activations, are quantised by rows for VNNI products
// (emitInt8TileOfRows), again a row at a time. A decode step of one
// sequence spreads its experts over every thread.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace llmc::cpu {
namespace {

/// Intermediate features of one expert task.
constexpr int64_t kInterRun = 32;
/// Output columns of one down task.
constexpr int64_t kColumnRun = 64;
/// Weight rows of one dot tile: each activation vector loaded is multiplied
/// by this many.
constexpr int64_t kFeatureBlock = 4;
/// Picks of one dot tile: each weight vector loaded is multiplied by this
/// many activation rows.
constexpr int64_t kRowTile = 4;

/// The index in [begin, end) that comes after (prevKey, prevIndex) in the
/// order (key descending, index ascending): the best of those after it, with
/// its key. Each slot of a top k is the pick after the previous slot's.
std::pair<Value, Value> pickNext(KernelBuilder &kb, function_ref<Value(Value)> key, Value begin,
                                 Value end, Value prevKey, Value prevIndex) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value none = kb.index(-1);
  auto loop = scf::ForOp::create(
      b, loc, begin, end, kb.index(1),
      ValueRange{kb.f32(-std::numeric_limits<double>::infinity()), none},
      [&](OpBuilder &, Location, Value index, ValueRange best) {
        Value value = key(index);
        auto cmpf = [&](arith::CmpFPredicate predicate, Value a, Value c) {
          return arith::CmpFOp::create(b, loc, predicate, a, c).getResult();
        };
        auto cmpi = [&](arith::CmpIPredicate predicate, Value a, Value c) {
          return arith::CmpIOp::create(b, loc, predicate, a, c).getResult();
        };
        Value after = arith::OrIOp::create(
            b, loc, cmpf(arith::CmpFPredicate::OLT, value, prevKey),
            arith::AndIOp::create(b, loc, cmpf(arith::CmpFPredicate::OEQ, value, prevKey),
                                  cmpi(arith::CmpIPredicate::sgt, index, prevIndex)));
        Value better = arith::OrIOp::create(b, loc, cmpf(arith::CmpFPredicate::OGT, value, best[0]),
                                            cmpi(arith::CmpIPredicate::eq, best[1], none));
        Value take = arith::AndIOp::create(b, loc, after, better);
        scf::YieldOp::create(b, loc,
                             ValueRange{arith::SelectOp::create(b, loc, take, value, best[0]),
                                        arith::SelectOp::create(b, loc, take, index, best[1])});
      });
  return {loop.getResult(0), loop.getResult(1)};
}

/// The top `k` of [begin, end) by `key`, in order: each one's key and index.
SmallVector<std::pair<Value, Value>> topK(KernelBuilder &kb, function_ref<Value(Value)> key,
                                          Value begin, Value end, int64_t k) {
  SmallVector<std::pair<Value, Value>> picks;
  Value prevKey = kb.f32(std::numeric_limits<double>::infinity()), prevIndex = kb.index(-1);
  for (int64_t slot = 0; slot < k; ++slot) {
    picks.push_back(pickNext(kb, key, begin, end, prevKey, prevIndex));
    std::tie(prevKey, prevIndex) = picks.back();
  }
  return picks;
}

/// A sparsemixer slot's weight (llm.moe): the softmax at its expert, whose
/// logit `best` is the largest the slot sees, over the experts it sees: not
/// those with (best - r_e) / max(|r_e|, best) > threshold, nor `excluded`
/// (the first slot's expert, in the second; null in the first). The
/// expert's own term is exp(0): the weight is 1 over the sum.
Value sparseMixerWeight(KernelBuilder &kb, function_ref<Value(Value)> logit, int64_t experts,
                        Value best, Value excluded, float threshold) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value sum = kb.reduce(kb.index(0), kb.index(experts), kb.f32(0.0), [&](Value e, Value acc) {
    Value r = logit(e);
    Value factor = kb.max(math::AbsFOp::create(b, loc, r), best);
    Value hidden = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                         kb.div(kb.sub(best, r), factor), kb.f32(threshold));
    if (excluded)
      hidden = arith::OrIOp::create(
          b, loc, hidden, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, e, excluded));
    Value term = arith::SelectOp::create(b, loc, hidden, kb.f32(0.0), kb.exp(kb.sub(r, best)));
    return kb.add(acc, term);
  });
  return kb.div(kb.f32(1.0), sum);
}

/// How llm.moe chooses a row's experts and weighs them.
struct Routing {
  int64_t experts, topK;
  bool normalize, sigmoid;
  /// Whether the experts are chosen by the logits' order alone: the top_k
  /// of a softmax.
  bool byLogits;
  float epsilon, minimum, scale; ///< the sum's epsilon and floor (0: none); the routed scale
  int64_t groups, keptGroups; ///< 0 when the experts are not grouped
  /// What the other groups' experts choose: 0, or -inf (never chosen).
  double hiddenChoice;
  std::optional<float> sparseMixer; ///< PhiMoE's sparsemixer threshold
  Value selectionBias;        ///< f32 [experts] in the kernel, or null
  /// f32 [groups] scratch of the kernel (stack) when grouped: each group's
  /// score, and 1 for a kept group (0 for the others).
  Value groupScores, kept;

  Routing(llm::MoeOp op, int64_t experts)
      : experts(experts), topK(op.getTopK()), normalize(op.getNormalizeTopK()),
        sigmoid(op.getSigmoidScores()), byLogits(!op.hasScoredRouting()),
        epsilon(op.getNormalizeEpsilonOrZero()), minimum(op.getNormalizeMinOrZero()),
        scale(op.getRoutedScaleOrOne()),
        groups(op.getExpertGroups().value_or(0)), keptGroups(op.getTopKGroups().value_or(0)),
        hiddenChoice(op.getExcludeHiddenGroups() ? -std::numeric_limits<double>::infinity()
                                                 : 0.0),
        sparseMixer(op.getSparseMixer()) {}

  /// Allocates the groups' scratch once per kernel, before its loop over rows.
  void allocateGroupScratch(KernelBuilder &kb) {
    if (!groups) return;
    auto type = MemRefType::get({groups}, kb.builder().getF32Type());
    groupScores = memref::AllocaOp::create(kb.builder(), kb.location(), type);
    kept = memref::AllocaOp::create(kb.builder(), kb.location(), type);
  }
};

/// Row `row`'s top_k experts into chosen[row, slot] (i32) and their routing
/// weights into weights[row, slot]: the scores (probabilities as
/// onnxruntime's Softmax computes them, or sigmoids), divided by their sum
/// (plus the epsilon, at least the minimum) when `normalize`, times the
/// routed scale. The experts are chosen as
/// llm.moe says: by their logits (the softmax is monotonic), or by their
/// scores plus the selection bias within the best groups.
void emitRoute(KernelBuilder &kb, Value logits, Value chosen, Value weights, Value row,
               const Routing &routing) {
  int64_t experts = routing.experts;
  Value zero = kb.index(0), all = kb.index(experts);
  auto logit = [&](Value e) { return kb.load(logits, {row, e}); };
  Value maxLogit, denominator;
  if (!routing.sigmoid) {
    maxLogit = kb.reduce(zero, all, kb.f32(-std::numeric_limits<double>::infinity()),
                         [&](Value e, Value acc) { return kb.max(acc, logit(e)); });
    denominator = kb.reduce(zero, all, kb.f32(0.0), [&](Value e, Value acc) {
      return kb.add(acc, kb.exp(kb.sub(logit(e), maxLogit)));
    });
  }
  auto score = [&](Value e) {
    if (routing.sigmoid)
      return kb.div(kb.f32(1.0), kb.add(kb.f32(1.0), kb.exp(kb.neg(logit(e)))));
    return kb.div(kb.exp(kb.sub(logit(e), maxLogit)), denominator);
  };
  auto choice = [&](Value e) {
    Value value = score(e);
    return routing.selectionBias ? kb.add(value, kb.load(routing.selectionBias, {e})) : value;
  };

  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  std::function<Value(Value)> key = logit;
  if (!routing.byLogits) key = choice;
  if (routing.groups) {
    // Each group's two best choices summed; the best groups keep their
    // experts' choices, every other expert's becomes 0 (or -inf).
    int64_t size = experts / routing.groups;
    Value groupScores = routing.groupScores, kept = routing.kept;
    kb.forEach(zero, kb.index(routing.groups), [&](Value group) {
      Value first = kb.mulIndex(group, kb.index(size));
      auto best = topK(kb, choice, first, kb.addIndex(first, kb.index(size)), 2);
      kb.store(kb.add(best[0].first, best[1].first), groupScores, {group});
      kb.store(kb.f32(0.0), kept, {group});
    });
    auto groupScore = [&](Value group) { return kb.load(groupScores, {group}); };
    for (auto pick : topK(kb, groupScore, zero, kb.index(routing.groups), routing.keptGroups))
      kb.store(kb.f32(1.0), kept, {pick.second});
    key = [&, size, kept](Value e) {
      Value isKept = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                           kb.load(kept, {kb.divIndex(e, kb.index(size))}),
                                           kb.f32(0.0));
      Value scored = choice(e), hidden = kb.f32(routing.hiddenChoice);
      return arith::SelectOp::create(b, loc, isKept, scored, hidden).getResult();
    };
  }

  Value total = kb.f32(0.0);
  SmallVector<Value> scores;
  auto picks = topK(kb, key, zero, all, routing.topK);
  for (auto [slot, pick] : llvm::enumerate(picks)) {
    Value expert = pick.second;
    kb.store(arith::IndexCastOp::create(b, loc, b.getI32Type(), expert), chosen,
             {row, kb.index(slot)});
    if (routing.sparseMixer)
      scores.push_back(sparseMixerWeight(kb, logit, experts, pick.first,
                                         slot ? picks[0].second : Value(), *routing.sparseMixer));
    else
      scores.push_back(score(expert));
    total = kb.add(total, scores.back());
  }
  if (routing.epsilon != 0.0f) total = kb.add(total, kb.f32(routing.epsilon));
  if (routing.minimum != 0.0f) total = kb.max(total, kb.f32(routing.minimum));
  for (auto [slot, weight] : llvm::enumerate(scores)) {
    if (routing.normalize) weight = kb.div(weight, total);
    if (routing.scale != 1.0f) weight = kb.mul(weight, kb.f32(routing.scale));
    kb.store(weight, weights, {row, kb.index(slot)});
  }
}

/// Receives output (r, c) of a tile of dot products: r the tile's row, c
/// the weight row less the tile's base, and the sum.
using FinishDot = llvm::function_ref<void(int64_t, Value, Value)>;

/// One stacked expert weight inside a kernel, multiplying activation rows:
/// with the exact dot tiles (f32 rows `x`, the weight read through a
/// WeightReader), or with int8 activations (rows `quantized`, VNNI products
/// over the weight's int8 layout).
struct ExpertDots {
  Value x;
  const MatmulWeight *exact = nullptr;
  QuantizedRows quantized;
  const Int8Weight *int8 = nullptr;

  /// For c in [first, last): the sums of row xRows[r] . w[base + c], handed
  /// to `finish`. Exact: in dot tiles of kFeatureBlock weight rows and of
  /// one row for the rest. Int8: in tiles of 16 weight rows (base, first and
  /// last are multiples of 16).
  void emit(KernelBuilder &kb, ArrayRef<Value> xRows, Value base, Value first, Value last,
            FinishDot finish) const {
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    if (int8) {
      Value firstTile = kb.divIndex(kb.addIndex(base, first), kb.index(16));
      Value lastTile = kb.divIndex(kb.addIndex(base, last), kb.index(16));
      kb.forEach(firstTile, lastTile, [&](Value tile) {
        Value tileStart = arith::SubIOp::create(b, loc, kb.mulIndex(tile, kb.index(16)), base);
        emitInt8TileOfRows(kb, *int8, quantized, tile, xRows, /*parts=*/1, /*partTiles=*/0,
                           [&](int64_t r, ArrayRef<Value> sums) {
                             for (int64_t lane = 0; lane < 16; ++lane)
                               finish(r, kb.addIndex(tileStart, kb.index(lane)),
                                      vector::ExtractOp::create(b, loc, sums[0],
                                                                ArrayRef<int64_t>{lane}));
                           });
      });
      return;
    }
    WeightReader w(kb, *exact);
    int64_t k = staticDim(x, 1);
    Value count = arith::SubIOp::create(b, loc, last, first);
    Value blocksEnd = kb.addIndex(
        first, kb.mulIndex(kb.divIndex(count, kb.index(kFeatureBlock)), kb.index(kFeatureBlock)));
    auto tiles = [&](Value from, Value to, int64_t cols) {
      kb.forEach(from, to, [&](Value c) {
        emitDotTileOfRows(kb, x, xRows, w, kb.addIndex(base, c), cols, /*parts=*/1,
                          /*partStride=*/0, k, [&](int64_t r, Value col, ArrayRef<Value> sums) {
                            finish(r, arith::SubIOp::create(b, loc, col, base), sums[0]);
                          });
      }, cols);
    };
    tiles(first, blocksEnd, kFeatureBlock);
    tiles(blocksEnd, last, 1);
  }
};

/// An i32 loaded from `memref` as an index.
Value loadIndex(KernelBuilder &kb, Value memref, ValueRange indices) {
  OpBuilder &b = kb.builder();
  return arith::IndexCastOp::create(b, kb.location(), b.getIndexType(),
                                    kb.load(memref, indices));
}

/// An index stored into an i32 `memref`.
void storeIndex(KernelBuilder &kb, Value value, Value memref, ValueRange indices) {
  OpBuilder &b = kb.builder();
  kb.store(arith::IndexCastOp::create(b, kb.location(), b.getI32Type(), value), memref, indices);
}

/// The scratch views of a mixture of experts' picks and activations. A pick
/// p is (row p / top_k, slot p % top_k).
struct Picks {
  Value chosen;      ///< i32 [rows, top_k]: each pick's expert
  Value weights;     ///< f32 [rows, top_k]: its routing weight
  Value order;       ///< i32 [picks, 1]: the picks, each expert's in a run
  Value position;    ///< i32 [picks, 1]: where each pick lies in `order`
  Value offsets;     ///< i32 [1, experts + 1]: where each expert's run starts
  Value cursor;      ///< i32 [1, experts]: the plan's fill points
  Value activations; ///< f32 [picks, inter]: row q for order[q]
  Value products;    ///< f32 [picks, hidden]: row q, order[q]'s down product

  SmallVector<Value> buffers() const {
    return {chosen, weights, order, position, offsets, cursor, activations, products};
  }
  static Picks in(ValueRange params) {
    return {params[0], params[1], params[2], params[3],
            params[4], params[5], params[6], params[7]};
  }
};
constexpr size_t kPicksBuffers = 8;

/// The plan: a counting sort of the picks by expert into `order`, and
/// `position`, its inverse.
void emitPlan(KernelBuilder &kb, const Picks &picks, int64_t experts) {
  int64_t topK = staticDim(picks.chosen, 1);
  Value zero = kb.index(0), one = kb.index(1);
  Value count = kb.mulIndex(kb.dim(picks.chosen, 0), kb.index(topK));
  auto expertOf = [&](Value pick) {
    return loadIndex(kb, picks.chosen, {kb.divIndex(pick, kb.index(topK)),
                                        kb.remIndex(pick, kb.index(topK))});
  };
  kb.forEach(zero, kb.index(experts + 1),
             [&](Value e) { storeIndex(kb, zero, picks.offsets, {zero, e}); });
  kb.forEach(zero, count, [&](Value pick) {
    Value next = kb.addIndex(expertOf(pick), one);
    storeIndex(kb, kb.addIndex(loadIndex(kb, picks.offsets, {zero, next}), one), picks.offsets,
               {zero, next});
  });
  kb.forEach(zero, kb.index(experts), [&](Value e) {
    Value next = kb.addIndex(e, one);
    Value start = loadIndex(kb, picks.offsets, {zero, e});
    storeIndex(kb, start, picks.cursor, {zero, e});
    storeIndex(kb, kb.addIndex(loadIndex(kb, picks.offsets, {zero, next}), start), picks.offsets,
               {zero, next});
  });
  kb.forEach(zero, count, [&](Value pick) {
    Value expert = expertOf(pick);
    Value at = loadIndex(kb, picks.cursor, {zero, expert});
    storeIndex(kb, kb.addIndex(at, one), picks.cursor, {zero, expert});
    storeIndex(kb, pick, picks.order, {at, zero});
    storeIndex(kb, at, picks.position, {pick, zero});
  });
}

/// bias[expert, i] as f32.
Value expertBias(KernelBuilder &kb, Value bias, Value expert, Value i) {
  Value value = kb.load(bias, {expert, i});
  if (value.getType().isF32()) return value;
  return arith::ExtFOp::create(kb.builder(), kb.location(), kb.builder().getF32Type(), value);
}

/// `sum` plus bias[expert, i] where there is a bias.
Value plusExpertBias(KernelBuilder &kb, Value sum, Value bias, Value expert, Value i) {
  return bias ? kb.add(sum, expertBias(kb, bias, expert, i)) : sum;
}

/// llm.moe's act(g, u): silu(g) * u, or gpt-oss's clamped swiglu.
struct ExpertActivation {
  std::optional<float> limit, alpha;

  explicit ExpertActivation(llm::MoeOp op) {
    if (auto value = op.getSwigluLimit()) limit = value->convertToFloat();
    if (auto value = op.getSwigluAlpha()) alpha = value->convertToFloat();
  }
  Value apply(KernelBuilder &kb, Value g, Value u) const {
    auto sigmoid = [&](Value x) {
      return kb.div(kb.f32(1.0), kb.add(kb.f32(1.0), kb.exp(kb.neg(x))));
    };
    if (!limit) return kb.mul(kb.mul(g, sigmoid(g)), u);
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    Value upper = kb.f32(*limit), lower = kb.f32(-*limit);
    g = arith::MinimumFOp::create(b, loc, g, upper);
    u = arith::MinimumFOp::create(b, loc, arith::MaximumFOp::create(b, loc, u, lower), upper);
    return kb.mul(kb.mul(g, sigmoid(kb.mul(kb.f32(*alpha), g))), kb.add(u, kb.f32(1.0)));
  }
};

/// A kernel's bias buffers, the ones the op has, in gate, up, down order.
struct ExpertBiases {
  Value gate, up, down;

  SmallVector<Value> buffers() const {
    SmallVector<Value> present;
    for (Value bias : {gate, up, down})
      if (bias) present.push_back(bias);
    return present;
  }
  /// The same biases over a kernel's `params`, which end with buffers().
  ExpertBiases in(ValueRange params) const {
    ExpertBiases inside;
    ValueRange tail = params.take_back(buffers().size());
    for (auto [outer, inner] : {std::pair(gate, &inside.gate), std::pair(up, &inside.up),
                                std::pair(down, &inside.down)})
      if (outer) {
        *inner = tail.front();
        tail = tail.drop_front();
      }
    return inside;
  }
};

/// The routing weight of pick `pick` (row pick / top_k, slot pick % top_k).
Value routingWeight(KernelBuilder &kb, const Picks &picks, Value pick) {
  int64_t topK = staticDim(picks.chosen, 1);
  return kb.load(picks.weights, {kb.divIndex(pick, kb.index(topK)),
                                 kb.remIndex(pick, kb.index(topK))});
}

/// The intermediate features [first, last) of expert `expert` for the
/// `rows` picks from order[at]: the gate's products stored first, then the
/// activations that the up products complete.
void emitPickTile(KernelBuilder &kb, const Picks &picks, const ExpertDots &gate,
                  const ExpertDots &up, const ExpertBiases &biases,
                  const ExpertActivation &activation, Value expert, Value at, int64_t rows,
                  Value first, Value last) {
  int64_t topK = staticDim(picks.chosen, 1), inter = staticDim(picks.activations, 1);
  Value zero = kb.index(0);
  SmallVector<Value> xRows, slots, routing;
  for (int64_t r = 0; r < rows; ++r) {
    Value slot = kb.addIndex(at, kb.index(r));
    Value pick = loadIndex(kb, picks.order, {slot, zero});
    xRows.push_back(kb.divIndex(pick, kb.index(topK)));
    slots.push_back(slot);
    routing.push_back(routingWeight(kb, picks, pick));
  }
  Value base = kb.mulIndex(expert, kb.index(inter));
  gate.emit(kb, xRows, base, first, last, [&](int64_t r, Value i, Value g) {
    kb.store(plusExpertBias(kb, g, biases.gate, expert, i), picks.activations, {slots[r], i});
  });
  up.emit(kb, xRows, base, first, last, [&](int64_t r, Value i, Value u) {
    Value g = kb.load(picks.activations, {slots[r], i});
    Value act = activation.apply(kb, g, plusExpertBias(kb, u, biases.up, expert, i));
    kb.store(kb.mul(routing[r], act), picks.activations, {slots[r], i});
  });
}

/// Calls tile(at, rows) over expert `expert`'s run of picks in `order`: tiles
/// of kRowTile picks, then of one for the rest.
void forEachPickTile(KernelBuilder &kb, const Picks &picks, Value expert,
                     llvm::function_ref<void(Value, int64_t)> tile) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value zero = kb.index(0);
  Value begin = loadIndex(kb, picks.offsets, {zero, expert});
  Value end = loadIndex(kb, picks.offsets, {zero, kb.addIndex(expert, kb.index(1))});
  Value count = arith::SubIOp::create(b, loc, end, begin);
  Value tilesEnd =
      kb.addIndex(begin, kb.mulIndex(kb.divIndex(count, kb.index(kRowTile)), kb.index(kRowTile)));
  kb.forEach(begin, tilesEnd, [&](Value at) { tile(at, kRowTile); }, kRowTile);
  kb.forEach(tilesEnd, end, [&](Value at) { tile(at, 1); });
}

/// The features [first, last) of expert `expert` for every pick of it.
void emitExpertRun(KernelBuilder &kb, const Picks &picks, const ExpertDots &gate,
                   const ExpertDots &up, const ExpertBiases &biases,
                   const ExpertActivation &activation, Value expert, Value first, Value last) {
  forEachPickTile(kb, picks, expert, [&](Value at, int64_t rows) {
    emitPickTile(kb, picks, gate, up, biases, activation, expert, at, rows, first, last);
  });
}

/// The output columns [first, last) of expert `expert`'s down products for
/// the `rows` picks from order[at]: their activations times its down rows
/// (plus each pick's weight times the down bias), into `products`.
void emitDownTile(KernelBuilder &kb, const Picks &picks, const ExpertDots &down, Value downBias,
                  Value expert, Value at, int64_t rows, Value first, Value last) {
  int64_t hidden = staticDim(picks.products, 1);
  Value zero = kb.index(0);
  SmallVector<Value> slots, routing;
  for (int64_t r = 0; r < rows; ++r) {
    Value slot = kb.addIndex(at, kb.index(r));
    slots.push_back(slot);
    if (downBias)
      routing.push_back(routingWeight(kb, picks, loadIndex(kb, picks.order, {slot, zero})));
  }
  down.emit(kb, slots, kb.mulIndex(expert, kb.index(hidden)), first, last,
            [&](int64_t r, Value c, Value sum) {
              if (downBias)
                sum = kb.add(sum, kb.mul(routing[r], expertBias(kb, downBias, expert, c)));
              kb.store(sum, picks.products, {slots[r], c});
            });
}

/// The output columns [first, last) of expert `expert`'s down products for
/// every pick of it: a down row is read once a tile, not once a pick.
void emitDownExpertRun(KernelBuilder &kb, const Picks &picks, const ExpertDots &down,
                       Value downBias, Value expert, Value first, Value last) {
  forEachPickTile(kb, picks, expert, [&](Value at, int64_t rows) {
    emitDownTile(kb, picks, down, downBias, expert, at, rows, first, last);
  });
}

/// out[row, :]: the down products of the row's picks added slot by slot to
/// zero (the order that keeps a row's bits whatever the batch).
void emitDownSum(KernelBuilder &kb, const Picks &picks, Value out, Value row) {
  int64_t topK = staticDim(picks.chosen, 1), hidden = staticDim(out, 1);
  Value zero = kb.index(0);
  SmallVector<Value> products;
  for (int64_t slot = 0; slot < topK; ++slot) {
    Value pick = kb.addIndex(kb.mulIndex(row, kb.index(topK)), kb.index(slot));
    products.push_back(loadIndex(kb, picks.position, {pick, zero}));
  }
  kb.forEach(zero, kb.index(hidden), [&](Value c) {
    Value sum = kb.f32(0.0);
    for (Value product : products) sum = kb.add(sum, kb.load(picks.products, {product, c}));
    kb.store(sum, out, {row, c});
  });
}

/// A kernel's buffers for expert weights: the rows they multiply (f32
/// `rows`, or `quantized` in int8 mode), once, then each weight's.
SmallVector<Value> expertBuffers(ArrayRef<const ExpertWeight *> weights, Value rows,
                                 QuantizedRows quantized) {
  SmallVector<Value> buffers;
  if (weights.front()->int8)
    buffers = {quantized.codes, quantized.scales, quantized.sums};
  else if (rows)
    buffers = {rows};
  for (const ExpertWeight *weight : weights)
    llvm::append_range(buffers,
                       weight->int8 ? weight->int8->buffers() : weight->exact.buffers());
  return buffers;
}

/// What distinguishes kernels over these weights beyond their buffers' types.
std::string expertKey(ArrayRef<const ExpertWeight *> weights) {
  std::string key;
  for (const ExpertWeight *weight : weights)
    key += "/" + (weight->int8 ? weight->int8->key() : weight->exact.key());
  return key;
}

/// The expert weights of a kernel, over its expertBuffers parameters.
struct KernelExperts {
  SmallVector<MatmulWeight, 2> exact;
  SmallVector<Int8Weight, 2> int8;
  SmallVector<ExpertDots, 2> dots;

  /// `rows`: the f32 rows where expertBuffers had none (then `params` holds
  /// only the weights').
  KernelExperts(ArrayRef<const ExpertWeight *> weights, ValueRange params, Value rows) {
    bool quantized = static_cast<bool>(weights.front()->int8);
    QuantizedRows quantizedRows;
    if (quantized) {
      quantizedRows = {params[0], params[1], params[2]};
      params = params.drop_front(3);
    } else if (!rows) {
      rows = params.front();
      params = params.drop_front();
    }
    // The dots point into these: no reallocation past here.
    exact.reserve(weights.size());
    int8.reserve(weights.size());
    for (const ExpertWeight *weight : weights) {
      ExpertDots dot;
      if (quantized) {
        Int8Weight kernelWeight = *weight->int8;
        kernelWeight.codes = params[0];
        kernelWeight.scales = params[1];
        if (kernelWeight.zeroPoints) kernelWeight.zeroPoints = params[2];
        params = params.drop_front(kernelWeight.buffers().size());
        int8.push_back(kernelWeight);
        dot.quantized = quantizedRows;
        dot.int8 = &int8.back();
      } else {
        size_t count = weight->exact.buffers().size();
        exact.push_back(weight->exact.withBuffers(params.take_front(count)));
        params = params.drop_front(count);
        dot.x = rows;
        dot.exact = &exact.back();
      }
      dots.push_back(dot);
    }
  }
};

/// [first, last): run `run` of `size` elements of [0, limit).
std::pair<Value, Value> runBounds(KernelBuilder &kb, Value run, int64_t size, int64_t limit) {
  Value first = kb.mulIndex(run, kb.index(size));
  return {first, kb.minIndex(kb.addIndex(first, kb.index(size)), kb.index(limit))};
}

} // namespace

LogicalResult lowerMoe(StepLowering &step, llm::MoeOp op, Value x, Value logits,
                       const ExpertWeight &gate, const ExpertWeight &up, const ExpertWeight &down,
                       Value gateBias, Value upBias, Value downBias, Value selectionBias,
                       Value output) {
  auto gateType = cast<RankedTensorType>(op.getGateWeight().getType());
  int64_t experts = gateType.getDimSize(0), inter = gateType.getDimSize(1);
  int64_t hidden = gateType.getDimSize(2);
  int64_t topK = op.getTopK();
  bool int8 = static_cast<bool>(gate.int8);
  Location loc = op.getLoc();
  OpBuilder &b = step.b;
  KernelBuilder stepBuilder(b, loc);
  Value rows = memref::DimOp::create(b, loc, x, 0);
  Value count = stepBuilder.mulIndex(rows, stepBuilder.index(topK));
  Value one = stepBuilder.index(1);
  int64_t maxPicks = step.maxRows * topK;

  // The scratch, in order: x quantised (int8 mode), the picks, their plan,
  // their activations and down products, the activations quantised (int8
  // mode).
  int64_t offset = 0;
  QuantizedRows quantizedX;
  if (int8)
    quantizedX = quantizeRowsIntoScratch(step, loc, x, step.maxRows, gate.int8->blockSize, offset);
  auto take = [&](Type element, int64_t cols, Value viewRows, int64_t bytes) {
    Value view = step.scratchView(loc, element, cols, viewRows, offset);
    offset += llvm::alignTo(bytes, 64);
    return view;
  };
  Picks picks;
  picks.chosen = take(b.getI32Type(), topK, rows, maxPicks * 4);
  picks.weights = take(b.getF32Type(), topK, rows, maxPicks * 4);
  picks.order = take(b.getI32Type(), 1, count, maxPicks * 4);
  picks.position = take(b.getI32Type(), 1, count, maxPicks * 4);
  picks.offsets = take(b.getI32Type(), experts + 1, one, (experts + 1) * 4);
  picks.cursor = take(b.getI32Type(), experts, one, experts * 4);
  picks.activations = take(b.getF32Type(), inter, count, maxPicks * inter * 4);
  picks.products = take(b.getF32Type(), hidden, count, maxPicks * hidden * 4);
  step.clobberScratch(offset);

  SmallVector<Value> routeArgs{logits, picks.chosen, picks.weights};
  if (selectionBias) routeArgs.push_back(selectionBias);
  runOverRows(step, loc, "moe_route", kernelKey(op, routeArgs) + "/route", routeArgs, 0,
              [&](KernelBuilder &kb, ValueRange params, Value begin, Value end) {
                Routing routing(op, experts);
                if (selectionBias) routing.selectionBias = params[3];
                routing.allocateGroupScratch(kb);
                kb.forEach(begin, end, [&](Value row) {
                  emitRoute(kb, params[0], params[1], params[2], row, routing);
                });
              });
  SmallVector<Value> planArgs = picks.buffers();
  step.callKernel(loc, "moe_plan", kernelKey(op, planArgs) + "/plan", planArgs,
                  [&](KernelBuilder &kb, ValueRange params) {
                    emitPlan(kb, Picks::in(params), experts);
                  });

  // Task t is run t / experts of expert t % experts: a thread's range of
  // tasks covers every expert, whichever the rows chose.
  int64_t interRuns = llvm::divideCeil(inter, kInterRun);
  SmallVector<const ExpertWeight *> gateUp{&gate, &up};
  ExpertActivation activation(op);
  ExpertBiases gateUpBiases{gateBias, upBias, Value()};
  SmallVector<Value> expertArgs = picks.buffers();
  llvm::append_range(expertArgs, expertBuffers(gateUp, x, quantizedX));
  llvm::append_range(expertArgs, gateUpBiases.buffers());
  runParallel(step, loc, "moe_experts",
              kernelKey(op, expertArgs) + "/experts" + expertKey(gateUp), expertArgs,
              stepBuilder.index(experts * interRuns),
              [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
                Picks kernelPicks = Picks::in(params);
                KernelExperts weights(gateUp, params.drop_front(kPicksBuffers), Value());
                ArrayRef<ExpertDots> dots = weights.dots;
                ExpertBiases biases = gateUpBiases.in(params);
                kb.forEach(firstTask, lastTask, [&](Value task) {
                  Value expert = kb.remIndex(task, kb.index(experts));
                  auto [first, last] =
                      runBounds(kb, kb.divIndex(task, kb.index(experts)), kInterRun, inter);
                  emitExpertRun(kb, kernelPicks, dots[0], dots[1], biases, activation, expert,
                                first, last);
                });
              });

  QuantizedRows quantizedActivations;
  if (int8)
    quantizedActivations = quantizeRowsIntoScratch(step, loc, picks.activations, maxPicks,
                                                   down.int8->blockSize, offset);
  int64_t columnRuns = llvm::divideCeil(hidden, kColumnRun);
  // The down products read the picks' activations (exact) or their
  // quantised copy.
  SmallVector<const ExpertWeight *> downOnly{&down};
  SmallVector<Value> downArgs = picks.buffers();
  llvm::append_range(downArgs, expertBuffers(downOnly, Value(), quantizedActivations));
  ExpertBiases downBiases{Value(), Value(), downBias};
  llvm::append_range(downArgs, downBiases.buffers());
  // Task t is run t / experts of expert t % experts, as the experts kernel's.
  runParallel(step, loc, "moe_down", kernelKey(op, downArgs) + "/down" + expertKey(downOnly),
              downArgs, stepBuilder.index(experts * columnRuns),
              [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
                Picks kernelPicks = Picks::in(params);
                KernelExperts weights(downOnly, params.drop_front(kPicksBuffers),
                                      kernelPicks.activations);
                ArrayRef<ExpertDots> dots = weights.dots;
                Value bias = downBiases.in(params).down;
                kb.forEach(firstTask, lastTask, [&](Value task) {
                  Value expert = kb.remIndex(task, kb.index(experts));
                  auto [first, last] =
                      runBounds(kb, kb.divIndex(task, kb.index(experts)), kColumnRun, hidden);
                  emitDownExpertRun(kb, kernelPicks, dots[0], bias, expert, first, last);
                });
              });
  SmallVector<Value> sumArgs = picks.buffers();
  sumArgs.push_back(output);
  runOverRows(step, loc, "moe_sum", kernelKey(op, sumArgs) + "/sum", sumArgs, 0,
              [&](KernelBuilder &kb, ValueRange params, Value begin, Value end) {
                Picks kernelPicks = Picks::in(params);
                kb.forEach(begin, end, [&](Value row) {
                  emitDownSum(kb, kernelPicks, params[kPicksBuffers], row);
                });
              });
  return success();
}

} // namespace llmc::cpu
