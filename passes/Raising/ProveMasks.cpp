//===- ProveMasks.cpp - what an attention mask subgraph computes ----------===//
//
// Exporters build the attention mask in many spellings (Trilu of a min
// constant; Range/LessOrEqual/And over a flattened attention_mask; with or
// without an IsNaN guard), and each transformers release writes another. So
// a mask is not matched: it is run. The function is cloned with the inputs
// given concrete shapes and contents (probes: several batch sizes, past and
// new lengths, left and right padding, and one past longer than any constant
// of the mask, so a sliding window shows), the mask is evaluated on each
// probe with HostEvaluator, and the result is compared with causal and
// padding masks, and with sliding windows of every width. What it matches is
// written on the mask's consumer as `llmc.mask`; why nothing matched, as
// `llmc.mask_unproven`. Facts about other values are run on the same
// probes: an integer Range that gives the new tokens' cache positions
// (past .. past + new - 1, what transformers uses when no position_ids are
// given) is marked `llmc.cache_positions`, and rope may read it as the
// positions; a Where that zeroes attention rows without keys, whose condition
// is false on every real row, `llmc.inactive_guard`, and raising drops it.
//
//===----------------------------------------------------------------------===//
#include "passes/Raising/RaisePatterns.h"

#include "dialects/onnx/HostEvaluator.h"
#include "dialects/onnx/ShapeHelpers.h"
#include "dialects/onnx/ShapeFolding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/SetVector.h"
#include "llmc/Support/Debug.h"
#include "llvm/Support/Debug.h"

#include <functional>

#define DEBUG_TYPE "raise-onnx-to-llm"

using namespace mlir;

namespace llmc::raising {
namespace {

/// The longest probe: a mask whose constants need more is not proven.
constexpr int64_t kMaxProbeLength = 1 << 16;

/// One set of model inputs to run a mask on.
struct Probe {
  int64_t batch, past, fresh;
  /// attention_mask: [batch][past + fresh], 1 for a real token.
  std::vector<std::vector<int>> keep;
  int64_t total() const { return past + fresh; }
};

/// Which dims of an input are the batch, the new tokens, the past or all
/// tokens, read from its ONNX name; empty when the name is unknown.
enum class Dim { Batch, Fresh, Past, Total, Fixed };
std::optional<SmallVector<Dim>> dimsByName(StringRef name, int64_t rank) {
  if (name == "attention_mask" && rank == 2) return SmallVector<Dim>{Dim::Batch, Dim::Total};
  if ((name == "input_ids" || name == "position_ids" || name == "token_type_ids") && rank == 2)
    return SmallVector<Dim>{Dim::Batch, Dim::Fresh};
  if (name == "inputs_embeds" && rank == 3)
    return SmallVector<Dim>{Dim::Batch, Dim::Fresh, Dim::Fixed};
  if (name == "cache_position" && rank == 1) return SmallVector<Dim>{Dim::Fresh};
  if (name.contains("past") && rank == 4)
    return SmallVector<Dim>{Dim::Batch, Dim::Fixed, Dim::Past, Dim::Fixed};
  return std::nullopt;
}

/// Probe lengths forced by static dims of the inputs, when there are any.
struct FixedDims {
  std::optional<int64_t> batch, fresh, past, total;
};

/// The probes, adjusted to the dims the inputs fix; `longPast` is the past
/// of the probe that shows a sliding window.
SmallVector<Probe> makeProbes(const FixedDims &fixed, int64_t longPast) {
  struct Wanted { int64_t batch, past, fresh; };
  // Prefill with left padding, a continuation over a padded past, a decode
  // step over a padded past, right padding, and a decode step after a past
  // longer than any window.
  SmallVector<Wanted> wanted = {{2, 0, 4}, {2, 3, 2}, {2, 5, 1}, {2, 0, 5}, {1, longPast, 1}};
  SmallVector<Probe> probes;
  for (auto [index, asked] : llvm::enumerate(wanted)) {
    // A model without a cache computes every token anew: a probe's past
    // tokens become new ones, so that its length (a window's) still shows.
    Wanted w = fixed.past == 0 ? Wanted{asked.batch, 0, asked.past + asked.fresh} : asked;
    Probe p{fixed.batch.value_or(w.batch), fixed.past.value_or(w.past),
            fixed.fresh.value_or(w.fresh), {}};
    if (fixed.total) {
      if (fixed.past && !fixed.fresh) p.fresh = *fixed.total - p.past;
      else if (!fixed.past) p.fresh = std::min(p.fresh, *fixed.total), p.past = *fixed.total - p.fresh;
      if (p.past + p.fresh != *fixed.total) continue;
    }
    if (p.batch <= 0 || p.fresh <= 0 || p.past < 0) continue;
    p.keep.assign(p.batch, std::vector<int>(p.total(), 1));
    // The last row is padded: on the left in most probes, on the right in one.
    if (p.batch > 1 && p.total() > 2) {
      if (index == 3) p.keep.back().back() = 0;
      else p.keep.back().front() = 0;
    }
    probes.push_back(std::move(p));
  }
  return probes;
}

/// Whether key `j` of row `b`, query `i` is visible under a mask hypothesis.
struct Hypothesis {
  bool padding, causal;
  int64_t window; // 0: none
  bool visible(const Probe &p, int64_t b, int64_t i, int64_t j) const {
    int64_t query = p.past + i;
    if (padding && !p.keep[b][j]) return false;
    if (causal && j > query) return false;
    return !window || query - j < window;
  }
};

/// What the evaluated mask shows on one probe: visible[b][i][j] for the
/// real (unpadded) query rows, or an error.
struct Observed {
  std::vector<std::vector<std::vector<int>>> visible; // empty for a padded query row
  /// What the mask adds to each key it leaves visible: added[b][i][h * keys
  /// + j] for the mask's `heads` (1 when it is the same for every head).
  std::vector<std::vector<std::vector<double>>> added;
  int64_t heads = 1;
};

FailureOr<Observed> observe(const onnx::HostTensor &mask, Type element, const Probe &p,
                            std::string &why) {
  ArrayRef<int64_t> shape = mask.shape;
  int64_t rank = shape.size();
  if (rank < 2 || rank > 4 || shape[rank - 1] != p.total() ||
      (shape[rank - 2] != p.fresh && shape[rank - 2] != 1) ||
      (rank == 4 && shape[0] != p.batch && shape[0] != 1)) {
    llvm::raw_string_ostream(why) << "the mask's shape does not fit a probe of batch " << p.batch
                                  << ", " << p.past << " past and " << p.fresh << " new tokens";
    return failure();
  }
  // Broadcast against scores [batch, heads, new, all]: a 3-D mask's first dim is heads.
  SmallVector<int64_t> dims(4 - rank, 1);
  dims.append(shape.begin(), shape.end());
  int64_t heads = dims[1];
  Observed observed;
  observed.heads = heads;
  observed.visible.assign(p.batch, std::vector<std::vector<int>>(p.fresh));
  observed.added.assign(p.batch, std::vector<std::vector<double>>(p.fresh));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t i = 0; i < p.fresh; ++i) {
      auto &row = observed.visible[b][i];
      if (!p.keep[b][p.past + i]) continue;
      row.assign(p.total(), 0);
      auto &added = observed.added[b][i];
      added.assign(heads * p.total(), 0.0);
      for (int64_t j = 0; j < p.total(); ++j)
        for (int64_t h = 0; h < heads; ++h) {
          SmallVector<int64_t> index = {dims[0] == 1 ? 0 : b, h, dims[2] == 1 ? 0 : i, j};
          double v = mask.at(ArrayRef<int64_t>(index).take_back(rank));
          int seen;
          if (element.isInteger(1)) seen = v != 0;
          else if (v <= kHiddenBelow) seen = 0;
          else if (std::isfinite(v)) seen = 1, added[h * p.total() + j] = v;
          else {
            llvm::raw_string_ostream(why) << "the mask adds " << v
                                          << ", neither a bias nor a value that hides a key";
            return failure();
          }
          if (h > 0 && seen != row[j]) {
            why = "the mask hides different keys from different heads";
            return failure();
          }
          row[j] = seen;
        }
    }
  return observed;
}

/// What the proven mask adds to the keys it leaves visible, as one slope per
/// head (empty when it adds nothing that depends on the key): each row's
/// additions must be slope * the key's position plus a constant of the row
/// (which the softmax does not see), the position a key's index among its
/// sequence's real tokens. That is ALiBi as BLOOM writes it (slope times the
/// cumulative count of the attention mask) and as MPT does (slope times the
/// key's index from the end: a shift of the row). Keys of padding, which a
/// serving step never holds, do not count.
FailureOr<std::vector<float>> fitLinearBiases(ArrayRef<Probe> probes,
                                              ArrayRef<Observed> observed, Type element,
                                              std::string &why) {
  if (observed.empty()) return std::vector<float>();
  int64_t heads = observed.front().heads;
  // Half-precision masks hold rounded biases.
  double tolerance = element.isF32() || element.isF64() ? 1e-5 : 1e-2;
  struct Row {
    const Probe *probe;
    int64_t b;
    const std::vector<int> *visible;
    const std::vector<double> *added;
  };
  SmallVector<Row> rows;
  for (auto [p, o] : llvm::zip(probes, observed)) {
    if (o.heads != heads) return why = "the mask's heads differ between probes", failure();
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t i = 0; i < p.fresh; ++i)
        if (!o.visible[b][i].empty()) rows.push_back({&p, b, &o.visible[b][i], &o.added[b][i]});
  }
  // A key's position: the real tokens before it in its sequence.
  auto positions = [](const Row &row) {
    std::vector<int64_t> at(row.probe->total());
    for (int64_t j = 0, seen = 0; j < row.probe->total(); seen += row.probe->keep[row.b][j], ++j)
      at[j] = seen;
    return at;
  };
  std::vector<float> slopes(heads, 0.0f);
  bool biased = false;
  for (int64_t h = 0; h < heads; ++h) {
    // The slope from the row whose visible keys span the most positions.
    double slope = 0.0;
    int64_t widest = 0;
    for (const Row &row : rows) {
      std::vector<int64_t> at = positions(row);
      int64_t first = -1, last = -1;
      for (auto [j, seen] : llvm::enumerate(*row.visible)) {
        if (!seen || !row.probe->keep[row.b][j]) continue;
        if (first < 0) first = j;
        last = j;
      }
      if (first < 0 || at[last] - at[first] <= widest) continue;
      int64_t total = row.probe->total();
      widest = at[last] - at[first];
      slope = ((*row.added)[h * total + last] - (*row.added)[h * total + first]) / double(widest);
    }
    for (const Row &row : rows) {
      std::vector<int64_t> at = positions(row);
      int64_t total = row.probe->total(), reference = -1;
      for (auto [j, seen] : llvm::enumerate(*row.visible)) {
        // Padding keys are never cached: what the mask adds to them does not count.
        if (!seen || !row.probe->keep[row.b][j]) continue;
        double v = (*row.added)[h * total + j];
        if (reference < 0) reference = j;
        double expected = (*row.added)[h * total + reference] + slope * double(at[j] - at[reference]);
        if (std::abs(v - expected) > tolerance * std::max(1.0, std::abs(v))) {
          llvm::raw_string_ostream(why)
              << "the mask adds " << v << " where a bias linear in the key's position would add "
              << expected;
          return failure();
        }
      }
    }
    slopes[h] = static_cast<float>(slope);
    biased = biased || slope != 0.0;
  }
  if (!biased) slopes.clear();
  return slopes;
}

bool matches(const Hypothesis &h, ArrayRef<Probe> probes, ArrayRef<Observed> observed) {
  for (auto [p, o] : llvm::zip(probes, observed))
    for (int64_t b = 0; b < p.batch; ++b)
      for (int64_t i = 0; i < p.fresh; ++i)
        for (auto [j, seen] : llvm::enumerate(o.visible[b][i]))
          if (bool(seen) != h.visible(p, b, i, j)) return false;
  return true;
}

/// The hypothesis every probe agrees with, or failure.
FailureOr<Hypothesis> explain(ArrayRef<Probe> probes, ArrayRef<Observed> observed,
                              std::string &why) {
  for (bool causal : {true, false})
    for (bool padding : {true, false}) {
      Hypothesis h{padding, causal, 0};
      if (matches(h, probes, observed)) return h;
      // A window: the visible run that ends at the last query of the longest probe.
      const Probe &longest = probes.back();
      const auto &row = observed.back().visible[0][longest.fresh - 1];
      if (row.empty()) continue;
      int64_t query = longest.total() - 1, width = 0;
      while (width <= query && row[query - width]) ++width;
      if (width > 0 && width <= query) {
        h.window = width;
        if (matches(h, probes, observed)) return h;
      }
    }
  why = "the mask is not causal, padding or a sliding window on the probes";
  return failure();
}

/// The integer constants of `mask`'s cone below 2^31 (larger ones are
/// "to the end" sentinels of Slice): a window width is one of them.
int64_t largestConstant(Value mask) {
  int64_t largest = 0;
  forEachOpInCone(mask, [&](Operation *op) {
    if (auto ints = onnx::getConstantInts(op->getResult(0)))
      for (int64_t v : *ints)
        if (std::abs(v) < (int64_t(1) << 31)) largest = std::max(largest, std::abs(v));
    return true;
  });
  return largest;
}

/// The longest axis of a constant table in `mask`'s cone (rank 2 or more: a
/// causal buffer of positions, GPT-Neo's, or MPT's table of biases), or 0.
/// The mask holds only for positions within it, so the longest probe fills
/// it: a window baked into the table then shows.
int64_t longestConstantTable(Value mask) {
  int64_t longest = 0;
  forEachOpInCone(mask, [&](Operation *op) {
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (isa<onnx::ConstantOp>(op) && type && type.hasStaticShape() && type.getRank() >= 2)
      longest = std::max(longest, *llvm::max_element(type.getShape()));
    // What only the shape is read of (an embedding table) holds no positions.
    return !isa<onnx::ShapeOp, onnx::SizeOp>(op);
  });
  return longest;
}

/// A mask and the op that consumes it.
struct MaskSite {
  Operation *consumer;
  Value mask;
};

/// The probe's values of the function's inputs, and the fixed dims found.
struct ProbeInputs {
  SmallVector<Type> types;
  DenseMap<unsigned, onnx::HostTensor> values;
};

/// The probes' token ids start here: past every vocabulary, below 2^53
/// (HostEvaluator's doubles hold them exactly).
constexpr int64_t kProbeTokenBase = int64_t(1) << 40;

FailureOr<ProbeInputs> probeInputs(func::FuncOp func, const Probe &p, std::string &why) {
  ProbeInputs inputs;
  for (BlockArgument arg : func.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    StringRef name = onnx::inputName(arg);
    auto dims = dimsByName(name, type.getRank());
    SmallVector<int64_t> shape;
    for (auto [d, size] : llvm::enumerate(type.getShape())) {
      if (!ShapedType::isDynamic(size) || !dims) {
        shape.push_back(size);
        continue;
      }
      switch ((*dims)[d]) {
      case Dim::Batch: shape.push_back(p.batch); break;
      case Dim::Fresh: shape.push_back(p.fresh); break;
      case Dim::Past: shape.push_back(p.past); break;
      case Dim::Total: shape.push_back(p.total()); break;
      case Dim::Fixed: shape.push_back(size); break;
      }
    }
    // An input of unknown dims stays dynamic: a mask that reads its shape
    // cannot be evaluated, and says so.
    inputs.types.push_back(RankedTensorType::get(shape, type.getElementType()));
    onnx::HostTensor value{shape, {}};
    if (name == "attention_mask") {
      for (const auto &row : p.keep) value.data.insert(value.data.end(), row.begin(), row.end());
    } else if (name == "input_ids") {
      // Ids no vocabulary has, so that no probe token is a pad token (a
      // classifier pools each row's last token that is not one).
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t j = 0; j < p.fresh; ++j) value.data.push_back(double(kProbeTokenBase + j));
    } else if (name == "position_ids" || name == "cache_position") {
      // A sequence's own token count before each token; padding at position 1, as
      // transformers' generate() writes it.
      for (int64_t b = 0; b < (name == "cache_position" ? 1 : p.batch); ++b) {
        int64_t seen = 0;
        for (int64_t j = 0; j < p.total(); ++j) {
          int keep = name == "cache_position" ? 1 : p.keep[b][j];
          if (j >= p.past) value.data.push_back(keep ? seen : 1);
          seen += keep;
        }
      }
    } else {
      continue;
    }
    if (int64_t(value.data.size()) != ShapedType::getNumElements(shape)) {
      why = "input '" + name.str() + "' does not have the probe's shape";
      return failure();
    }
    inputs.values[arg.getArgNumber()] = std::move(value);
  }
  return inputs;
}

/// The dims the inputs' static shapes fix, and those the masks' static
/// types fix ([batch, heads, new, all] tokens).
FixedDims fixedDims(func::FuncOp func, ArrayRef<MaskSite> sites) {
  FixedDims fixed;
  for (const MaskSite &site : sites) {
    auto type = dyn_cast<RankedTensorType>(site.mask.getType());
    if (!type || type.getRank() < 2) continue;
    ArrayRef<int64_t> shape = type.getShape();
    if (!ShapedType::isDynamic(shape.back())) fixed.total = shape.back();
    if (!ShapedType::isDynamic(shape[shape.size() - 2]) && shape[shape.size() - 2] != 1)
      fixed.fresh = shape[shape.size() - 2];
    if (type.getRank() == 4 && !ShapedType::isDynamic(shape[0]) && shape[0] != 1)
      fixed.batch = shape[0];
  }
  // Inputs that are all token ids, positions or masks leave no room for a
  // cache: the model recomputes every token (optimum's `--task
  // text-generation`, a plain torch.onnx.export of forward()).
  bool cacheless = true;
  for (BlockArgument arg : func.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    auto dims = dimsByName(onnx::inputName(arg), type.getRank());
    if (!dims || llvm::is_contained(*dims, Dim::Past)) cacheless = false;
  }
  if (cacheless) fixed.past = 0;
  for (BlockArgument arg : func.getArguments()) {
    auto type = cast<RankedTensorType>(arg.getType());
    auto dims = dimsByName(onnx::inputName(arg), type.getRank());
    if (!dims) continue;
    for (auto [d, size] : llvm::enumerate(type.getShape())) {
      if (ShapedType::isDynamic(size)) continue;
      switch ((*dims)[d]) {
      case Dim::Batch: fixed.batch = size; break;
      case Dim::Fresh: fixed.fresh = size; break;
      case Dim::Past: fixed.past = size; break;
      case Dim::Total: fixed.total = size; break;
      case Dim::Fixed: break;
      }
    }
  }
  return fixed;
}

/// Rounds of shape inference and folding on a probe's clone.
constexpr unsigned kMaxShapeRounds = 16;

/// The values to evaluate in a probe's clone, followed through folding: a
/// value whose op folds (to a constant, or to one of its operands) is its
/// replacement; one whose op is erased is null.
struct ValueTracker : RewriterBase::Listener {
  SmallVector<Value> values;

  void notifyOperationReplaced(Operation *op, ValueRange replacement) override {
    for (Value &value : values)
      if (value && value.getDefiningOp() == op)
        value = replacement[cast<OpResult>(value).getResultNumber()];
  }
  void notifyOperationErased(Operation *op) override {
    for (Value &value : values)
      if (value && value.getDefiningOp() == op) value = nullptr;
  }
};

/// Whether `where` guards an attention output: Where(condition, 0, attention)
/// with attention MatMul(Softmax, V) or onnx.Attention, the zeroing of rows
/// that see no key (torch.onnx's dynamo exporter).
bool guardsAttention(onnx::WhereOp where) {
  Value output = where.getY();
  if (!isConstantScalar(where.getX(), 0.0) || rankOf(output) != 4 ||
      rankOf(where.getCondition()) != 4)
    return false;
  if (definedBy<onnx::AttentionOp>(output)) return true;
  // What raising takes for decomposed attention (RaiseDecomposedAttention).
  auto product = definedBy<onnx::MatMulOp>(output);
  return product && definedBy<onnx::SoftmaxOp>(skipCasts(skipNaNGuard(product.getA())));
}

/// A claim about one value that must hold on every probe, and the attribute
/// that records it on an op when it does.
struct ProbedFact {
  Value value;
  std::function<bool(const onnx::HostTensor &, const Probe &)> holds;
  Operation *owner;
  StringRef attr;
  const char *what;
  bool proven = true;
};

/// Whether `value` holds past, past + 1, ..., past + fresh - 1: the new
/// tokens' cache positions, as transformers computes them when no
/// position_ids are given (`cache_position`).
bool isCachePositions(const onnx::HostTensor &value, const Probe &probe) {
  if (value.shape.size() != 1 || value.shape[0] != probe.fresh) return false;
  for (int64_t i = 0; i < probe.fresh; ++i)
    if (value.data[i] != double(probe.past + i)) return false;
  return true;
}

/// Whether a [batch, _, new, _] condition (broadcast dims of 1 allowed) is
/// false everywhere on the rows of real tokens: a guard that zeroes the
/// attention output of rows that see no key never fires where a causal mask
/// holds (padding rows are never computed).
bool isFalseOnRealRows(const onnx::HostTensor &value, const Probe &probe) {
  if (value.shape.size() != 4) return false;
  int64_t batches = value.shape[0], rows = value.shape[2];
  if ((batches != 1 && batches != probe.batch) || (rows != 1 && rows != probe.fresh))
    return false;
  int64_t inner = value.shape[3], perRow = value.shape[1];
  for (int64_t b = 0; b < probe.batch; ++b)
    for (int64_t i = 0; i < probe.fresh; ++i) {
      if (!probe.keep[b][probe.past + i]) continue;
      for (int64_t h = 0; h < perRow; ++h)
        for (int64_t j = 0; j < inner; ++j)
          if (value.at({batches == 1 ? 0 : b, h, rows == 1 ? 0 : i, j}) != 0) return false;
    }
  return true;
}

/// Whether [batch] row indices into the new tokens flattened to [batch *
/// new, ...] pick each row's last token: b * new + new - 1. A classifier's
/// pooling (transformers' last token that is not the pad token) does so on
/// every probe, whose tokens are never the pad token.
bool isLastTokenOfEachRow(const onnx::HostTensor &value, const Probe &probe) {
  if (value.shape.size() != 1 || value.shape[0] != probe.batch) return false;
  for (int64_t b = 0; b < probe.batch; ++b)
    if (value.data[b] != double(b * probe.fresh + probe.fresh - 1)) return false;
  return true;
}

/// Whether [batch, 1, width] indices along the new tokens pick each
/// unpadded row's last token in every column: sentence-transformers'
/// last-token pooling (a ragged step has no padding, so padded rows are not
/// asked).
bool isLastTokenOfEachRowColumns(const onnx::HostTensor &value, const Probe &probe) {
  if (value.shape.size() != 3 || value.shape[0] != probe.batch || value.shape[1] != 1)
    return false;
  for (int64_t b = 0; b < probe.batch; ++b) {
    if (llvm::is_contained(probe.keep[b], 0)) continue;
    for (int64_t j = 0; j < value.shape[2]; ++j)
      if (value.at({b, 0, j}) != double(probe.fresh - 1)) return false;
  }
  return true;
}

/// Whether a [batch or 1, new, width] factor is 1 on every unpadded row.
bool isOneOnRealRows(const onnx::HostTensor &value, const Probe &probe) {
  if (value.shape.size() != 3 || value.shape[1] != probe.fresh ||
      (value.shape[0] != 1 && value.shape[0] != probe.batch))
    return false;
  for (int64_t b = 0; b < probe.batch; ++b) {
    if (llvm::is_contained(probe.keep[b], 0)) continue;
    for (int64_t i = 0; i < probe.fresh; ++i)
      for (int64_t j = 0; j < value.shape[2]; ++j)
        if (value.at({value.shape[0] == 1 ? 0 : b, i, j}) != 1.0) return false;
  }
  return true;
}

/// Whether [batch or 1, new] ids hold the new tokens' positions, past, ...,
/// past + new - 1, on every probe row without padding (the first row of
/// each; a ragged step has no padding, so padded rows are not asked).
bool isTokenPositions(const onnx::HostTensor &value, const Probe &probe) {
  if (value.shape.size() != 2 || value.shape[1] != probe.fresh ||
      (value.shape[0] != 1 && value.shape[0] != probe.batch))
    return false;
  for (int64_t b = 0; b < probe.batch; ++b) {
    if (llvm::is_contained(probe.keep[b], 0)) continue;
    for (int64_t i = 0; i < probe.fresh; ++i)
      if (value.at({value.shape[0] == 1 ? 0 : b, i}) != double(probe.past + i)) return false;
  }
  return true;
}

/// The ids a learned position embedding computed in the graph reads: a
/// Gather of a constant table at computed ids, added to the token embedding
/// (a Gather by input_ids), less a constant offset (OPT's + 2, which the
/// embedding's raising peels); null for any other Gather.
Value computedPositionIds(onnx::GatherOp gather) {
  Value ids = gather.getIndices();
  if (gather.getAxis() != 0 || !isConstant(gather.getData()) || rankOf(gather.getData()) != 2 ||
      isa<BlockArgument>(ids) || !gather->hasOneUse())
    return nullptr;
  auto add = dyn_cast<onnx::AddOp>(*gather->user_begin());
  if (!add) return nullptr;
  Value other = add.getA() == gather.getResult() ? add.getB() : add.getA();
  auto tokens = definedBy<onnx::GatherOp>(other);
  auto tokenIds = tokens ? dyn_cast<BlockArgument>(tokens.getIndices()) : nullptr;
  if (!tokenIds || onnx::inputName(tokenIds) != "input_ids") return nullptr;
  ids = peelRowOffset(ids, gather.getData()).first;
  return isa<IntegerType>(getElementTypeOrSelf(ids)) ? ids : nullptr;
}

/// The rows a result gathers from [batch, new, features] flattened to
/// [batch * new, features] (Flatten at axis 2, or a Reshape to rank 2 that
/// keeps the features): its indices, or null.
Value pooledRowIndices(Value result) {
  auto gather = definedBy<onnx::GatherOp>(result);
  if (!gather || gather.getAxis() != 0 || rankOf(gather.getIndices()) != 1 ||
      rankOf(gather.getData()) != 2)
    return nullptr;
  Operation *flatten = gather.getData().getDefiningOp();
  Value rows;
  if (auto op = dyn_cast_or_null<onnx::FlattenOp>(flatten); op && op.getAxis() == 2)
    rows = op.getInput();
  else if (auto op = dyn_cast_or_null<onnx::ReshapeOp>(flatten))
    rows = op.getData();
  if (!rows || rankOf(rows) != 3 || dimOf(rows, 2) != dimOf(result, 1) ||
      ShapedType::isDynamic(dimOf(rows, 2)))
    return nullptr;
  return gather.getIndices();
}

/// Evaluates every site's mask and every fact's value on every probe, in one
/// clone of the function per probe.
void proveSites(func::FuncOp func, ArrayRef<MaskSite> sites, MutableArrayRef<ProbedFact> facts) {
  MLIRContext *context = func.getContext();
  SmallVector<std::string> why(sites.size());
  SmallVector<SmallVector<Observed>> observed(sites.size());
  constexpr int64_t kShortestPast = 8;
  int64_t longPast = kShortestPast;
  for (const MaskSite &site : sites) longPast = std::max(longPast, largestConstant(site.mask) + 2);
  // A mask that reads a constant table of positions holds within it: the
  // longest probe fills the shortest that holds more than the shorter probes
  // (its integer constants, MPT's 256 to slice from, are the table's end,
  // and a window is shorter).
  int64_t table = std::numeric_limits<int64_t>::max();
  for (const MaskSite &site : sites)
    if (int64_t length = longestConstantTable(site.mask); length > kShortestPast)
      table = std::min(table, length);
  if (table != std::numeric_limits<int64_t>::max()) longPast = table - 1;
  LLMC_DEBUG(llvm::dbgs() << "the longest probe's past: " << longPast << "\n");
  SmallVector<Probe> probes = makeProbes(fixedDims(func, sites), longPast);
  if (longPast > kMaxProbeLength)
    for (std::string &w : why) w = "a constant of the mask is too large to probe past";
  if (probes.empty())
    for (std::string &w : why) w = "no probe fits the static dims of the inputs";

  for (ProbedFact &fact : facts) fact.proven = !probes.empty();
  // An export may not take every probe: the genai builder's fp16 CPU model builds its
  // causal mask as [new, new], which fits prefill from an empty cache and one-token
  // decode only. What it computes is proven on the probes it takes, and only if they
  // include prefill and steps after a past.
  SmallVector<Probe> accepted;
  std::string rejectedWhy;
  for (const Probe &probe : probes) {
    if (llvm::all_of(why, [](const std::string &w) { return !w.empty(); }) &&
        llvm::none_of(facts, [](const ProbedFact &fact) { return fact.proven; }))
      break;
    std::string inputsWhy;
    FailureOr<ProbeInputs> inputs = probeInputs(func, probe, inputsWhy);
    IRMapping mapping;
    OwningOpRef<func::FuncOp> clone = func.clone(mapping);
    ValueTracker tracked;
    for (const MaskSite &site : sites) tracked.values.push_back(mapping.lookup(site.mask));
    for (const ProbedFact &fact : facts) tracked.values.push_back(mapping.lookup(fact.value));
    // Returned, the values stay alive when folding leaves them unused.
    Operation *terminator = clone->getBody().back().getTerminator();
    terminator->insertOperands(terminator->getNumOperands(), tracked.values);
    if (succeeded(inputs)) {
      for (auto [arg, type] : llvm::zip(clone->getArguments(), inputs->types)) arg.setType(type);
      std::string shapeError;
      ScopedDiagnosticHandler quiet(context, [&](Diagnostic &diagnostic) {
        if (diagnostic.getSeverity() == DiagnosticSeverity::Error && shapeError.empty())
          shapeError = diagnostic.str();
        return success();
      });
      if (failed(onnx::inferShapesAndFold(*clone, kMaxShapeRounds, &tracked))) {
        if (rejectedWhy.empty())
          rejectedWhy = "shape inference fails on a probe of " + std::to_string(probe.past) +
                        " past and " + std::to_string(probe.fresh) + " new tokens (" +
                        shapeError + ")";
        continue;
      }
    }
    accepted.push_back(probe);
    DenseMap<Value, onnx::HostTensor> given;
    if (succeeded(inputs))
      for (auto &[number, value] : inputs->values) given[clone->getArgument(number)] = value;
    // Masks may slice a constant causal buffer (GPT-Neo's), kept as a resource.
    onnx::HostEvaluator evaluator(given, /*maxElements=*/1 << 24, /*readResources=*/true);
    for (auto [index, site] : llvm::enumerate(sites)) {
      if (!why[index].empty()) continue;
      if (!inputsWhy.empty()) {
        why[index] = inputsWhy;
        continue;
      }
      Value mask = tracked.values[index];
      if (!mask) {
        why[index] = "it was folded away on a probe";
        continue;
      }
      const onnx::HostTensor *value = evaluator.evaluate(mask);
      if (!value) {
        LLMC_DEBUG(llvm::dbgs() << "mask of " << site.consumer->getLoc()
                                << " not evaluated on a probe of " << probe.batch << " x ("
                                << probe.past << " past + " << probe.fresh << " new) tokens\n";
                   clone->print(llvm::dbgs()));
        why[index] = "it could not be evaluated: " + evaluator.failureReason;
        evaluator.failureReason.clear();
        continue;
      }
      FailureOr<Observed> seen =
          observe(*value, getElementTypeOrSelf(mask.getType()), probe, why[index]);
      if (succeeded(seen)) observed[index].push_back(std::move(*seen));
    }
    for (auto [index, fact] : llvm::enumerate(facts)) {
      if (!fact.proven) continue;
      Value tracedValue = tracked.values[sites.size() + index];
      const onnx::HostTensor *value =
          inputsWhy.empty() && tracedValue ? evaluator.evaluate(tracedValue) : nullptr;
      fact.proven = value && fact.holds(*value, probe);
      LLMC_DEBUG(if (!fact.proven) llvm::dbgs()
                 << fact.owner->getLoc() << " is not " << fact.what << " on a probe of "
                 << probe.past << " past and " << probe.fresh << " new tokens"
                 << (value ? "" : ": " + inputsWhy + evaluator.failureReason) << "\n");
      evaluator.failureReason.clear();
    }
  }
  auto coveredBy = [&](ArrayRef<Probe> set, bool afterPast) {
    return llvm::any_of(set, [&](const Probe &p) { return afterPast ? p.past > 0 : p.fresh > 1; });
  };
  for (bool afterPast : {false, true}) {
    if (!coveredBy(probes, afterPast) || coveredBy(accepted, afterPast)) continue;
    for (std::string &w : why)
      if (w.empty()) w = rejectedWhy;
    for (ProbedFact &fact : facts) fact.proven = false;
  }
  // Without the longest probe a window (or a table's end) would not show.
  bool longestAccepted = !accepted.empty() && !probes.empty() &&
                         accepted.back().past == probes.back().past &&
                         accepted.back().fresh == probes.back().fresh;
  if (!probes.empty() && !longestAccepted)
    for (std::string &w : why)
      if (w.empty()) w = rejectedWhy;
  for (const ProbedFact &fact : facts) {
    LLMC_DEBUG(llvm::dbgs() << fact.owner->getLoc() << (fact.proven ? " is " : " is not ")
                            << fact.what << "\n");
    if (fact.proven) fact.owner->setAttr(fact.attr, UnitAttr::get(context));
  }

  Builder builder(context);
  for (auto [index, site] : llvm::enumerate(sites)) {
    FailureOr<Hypothesis> h = failure();
    FailureOr<std::vector<float>> slopes = failure();
    if (why[index].empty()) h = explain(accepted, observed[index], why[index]);
    if (succeeded(h))
      slopes = fitLinearBiases(accepted, observed[index],
                               getElementTypeOrSelf(site.mask.getType()), why[index]);
    if (failed(h) || failed(slopes)) {
      LLMC_DEBUG(llvm::dbgs() << "mask of " << site.consumer->getLoc() << " not proven: "
                              << why[index] << "\n");
      site.consumer->setAttr(kMaskUnprovenAttr, builder.getStringAttr(why[index]));
      continue;
    }
    SmallVector<NamedAttribute> entries;
    if (h->causal) entries.push_back(builder.getNamedAttr("causal", builder.getUnitAttr()));
    if (h->padding) entries.push_back(builder.getNamedAttr("padding", builder.getUnitAttr()));
    if (h->window)
      entries.push_back(builder.getNamedAttr("sliding_window", builder.getI64IntegerAttr(h->window)));
    if (!slopes->empty())
      entries.push_back(
          builder.getNamedAttr("alibi_slopes", builder.getDenseF32ArrayAttr(*slopes)));
    site.consumer->setAttr(kMaskAttr, builder.getDictionaryAttr(entries));
  }
}

} // namespace

void proveAttentionMasks(func::FuncOp func) {
  SmallVector<MaskSite> sites;
  func.walk([&](Operation *op) {
    if (op->hasAttr(kMaskAttr) || op->hasAttr(kMaskUnprovenAttr)) return;
    if (auto softmax = dyn_cast<onnx::SoftmaxOp>(op)) {
      if (Value mask = splitScores(softmax).mask) sites.push_back({op, mask});
    } else if (auto attention = dyn_cast<onnx::AttentionOp>(op)) {
      if (!isNone(attention.getAttnMask())) sites.push_back({op, attention.getAttnMask()});
    } else if (auto attention = dyn_cast<onnx::MultiHeadAttentionOp>(op)) {
      if (!isNone(attention.getAttentionBias()))
        sites.push_back({op, attention.getAttentionBias()});
    }
  });
  SmallVector<ProbedFact> facts;
  func.walk([&](Operation *op) {
    if (auto range = dyn_cast<onnx::RangeOp>(op)) {
      if (!range->hasAttr(kCachePositionsAttr) &&
          isa<IntegerType>(getElementTypeOrSelf(range.getType())))
        facts.push_back({range, isCachePositions, op, kCachePositionsAttr, "the cache positions"});
    } else if (auto where = dyn_cast<onnx::WhereOp>(op)) {
      if (!where->hasAttr(kInactiveGuardAttr) && guardsAttention(where))
        facts.push_back({where.getCondition(), isFalseOnRealRows, op, kInactiveGuardAttr,
                         "false on the rows of real tokens"});
    } else if (auto gather = dyn_cast<onnx::GatherOp>(op)) {
      if (Value ids = computedPositionIds(gather); ids && !op->hasAttr(kTokenPositionsAttr))
        facts.push_back({ids, isTokenPositions, op, kTokenPositionsAttr, "the tokens' positions"});
    }
  });
  auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
  for (Value result : ret.getOperands())
    if (Value indices = pooledRowIndices(result))
      if (!result.getDefiningOp()->hasAttr(kLastTokenRowsAttr))
        facts.push_back({indices, isLastTokenOfEachRow, result.getDefiningOp(),
                         kLastTokenRowsAttr, "each row's last token"});
  for (Value result : ret.getOperands()) {
    std::optional<SentencePooling> pooling = sentencePooling(result);
    if (!pooling) continue;
    if (!pooling->gather->hasAttr(kLastTokenRowsAttr))
      facts.push_back({pooling->gather.getIndices(), isLastTokenOfEachRowColumns, pooling->gather,
                       kLastTokenRowsAttr, "each row's last token"});
    if (onnx::MulOp mul = pooling->mask; mul && !mul->hasAttr(kOnesOnRealRowsAttr)) {
      Value mask = mul.getA() == pooling->tokens ? mul.getB() : mul.getA();
      facts.push_back({mask, isOneOnRealRows, mul, kOnesOnRealRowsAttr,
                       "ones on the rows of real tokens"});
    }
  }
  if (!sites.empty() || !facts.empty()) proveSites(func, sites, facts);
}

FailureOr<MaskInfo> provenMask(Operation *consumer, std::string &why) {
  auto proven = consumer->getAttrOfType<DictionaryAttr>(kMaskAttr);
  if (!proven) {
    auto unproven = consumer->getAttrOfType<StringAttr>(kMaskUnprovenAttr);
    why = unproven ? unproven.str() : "the mask was not analysed";
    return failure();
  }
  MaskInfo info;
  info.causal = proven.contains("causal");
  if (auto window = proven.getAs<IntegerAttr>("sliding_window"))
    info.slidingWindow = window.getInt();
  if (proven.contains("padding")) info.attentionMask = findArgumentByName(consumer, "attention_mask");
  if (auto slopes = proven.getAs<DenseF32ArrayAttr>("alibi_slopes"))
    info.alibiSlopes.assign(slopes.asArrayRef().begin(), slopes.asArrayRef().end());
  return info;
}

} // namespace llmc::raising
