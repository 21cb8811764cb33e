//===- SelectRopeTables.cpp - resolve LongRoPE's short/long switch ---------===//
//
// LongRoPE switches from its short factors to its long ones when the sequence
// is longer than original_max_position_embeddings: the genai builder writes
// the switch as an If between cos/sin tables, torch.onnx's dynamo exporter as
// a Where between inverse frequencies. A paged step runs sequences of every
// length with one choice, so the switch is decided once, by the longest
// sequence the compiled model serves (Passes.td has the rule and the forms
// matched). optimum traced the short side alone: past the switch, its inverse
// frequencies are rescaled to the config's long factors.
//
//===----------------------------------------------------------------------===//
#include "passes/Onnx/Passes.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/ShapeHelpers.h"
#include "llmc/Artifact/StepInfo.h"
#include "llmc/Support/Debug.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Debug.h"

#include <cmath>

#define DEBUG_TYPE "onnx-select-rope-tables"

namespace llmc {
#define GEN_PASS_DEF_ONNXSELECTROPETABLESPASS
#include "passes/Onnx/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// Why `greater` was left as it is, under -debug-only.
LogicalResult leave(onnx::GreaterOp greater, const Twine &why) {
  LLMC_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << greater.getLoc() << ": left: " << why
                          << "\n");
  return failure();
}

/// Whether `value` is the graph input `name` of the function it is in.
bool isGraphInput(Value value, StringRef name) {
  auto input = dyn_cast<BlockArgument>(value);
  return input && onnx::inputName(input) == name;
}

/// Whether `value` is dim 1 of the graph input attention_mask, [batch,
/// total_sequence_length]: Gather(Shape(attention_mask), 1).
bool isTotalLength(Value value) {
  auto gather = value.getDefiningOp<onnx::GatherOp>();
  if (!gather || gather.getAxis() != 0) return false;
  auto shape = gather.getData().getDefiningOp<onnx::ShapeOp>();
  std::optional<SmallVector<int64_t>> index = onnx::getConstantInts(gather.getIndices());
  if (!shape || shape.getStart() != 0 || shape.getEnd() || !index || index->size() != 1 ||
      ((*index)[0] != 1 && (*index)[0] != -1))
    return false;
  auto type = dyn_cast<ShapedType>(shape.getData().getType());
  return isGraphInput(shape.getData(), "attention_mask") && type && type.hasRank() &&
         type.getRank() == 2;
}

/// Whether `value` is the largest position of the batch plus one, the length
/// of its longest sequence: Add(ReduceMax(position_ids) to a scalar, 1),
/// either way round.
bool isLongestSequence(Value value) {
  auto add = value.getDefiningOp<onnx::AddOp>();
  if (!add) return false;
  for (auto [largest, one] :
       {std::pair(add.getA(), add.getB()), std::pair(add.getB(), add.getA())}) {
    auto max = largest.getDefiningOp<onnx::ReduceMaxOp>();
    std::optional<SmallVector<int64_t>> increment = onnx::getConstantInts(one);
    auto type = max ? dyn_cast<ShapedType>(max.getType()) : nullptr;
    if (max && type && type.hasRank() && type.getRank() == 0 &&
        isGraphInput(max.getData(), "position_ids") && increment && increment->size() == 1 &&
        (*increment)[0] == 1)
      return true;
  }
  return false;
}

/// Whether every use of `table` is the cos or sin table of a rotary embedding.
bool isOnlyRotaryTable(Value table) {
  return llvm::all_of(table.getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    Value used = use.get();
    if (auto gqa = dyn_cast<onnx::GroupQueryAttentionOp>(user))
      return used == gqa.getCosCache() || used == gqa.getSinCache();
    if (auto rope = dyn_cast<onnx::RotaryEmbeddingOp>(user))
      return used == rope.getCosCache() || used == rope.getSinCache();
    if (auto rope = dyn_cast<onnx::MsRotaryEmbeddingOp>(user))
      return used == rope.getCosCache() || used == rope.getSinCache();
    return false;
  });
}

/// Whether every use of `frequencies` is a product (the angles, position
/// times inverse frequency) that only cos and sin read, directly or through
/// a Concat (Hugging Face's duplicated halves).
bool isOnlyRotaryFrequencies(Value frequencies) {
  auto onlyCosSin = [](Value angles) {
    return llvm::all_of(angles.getUsers(), llvm::IsaPred<onnx::CosOp, onnx::SinOp>);
  };
  return llvm::all_of(frequencies.getUsers(), [&](Operation *user) {
    auto angles = dyn_cast<onnx::MulOp>(user);
    return angles && llvm::all_of(angles->getUsers(), [&](Operation *angleUser) {
             if (auto concat = dyn_cast<onnx::ConcatOp>(angleUser))
               return onlyCosSin(concat.getResult());
             return isa<onnx::CosOp, onnx::SinOp>(angleUser);
           });
  });
}

/// The values `region`'s Yield gives, when the region computes nothing but
/// constants: each is a constant or defined outside `op`.
std::optional<OperandRange> yieldedConstants(Region &region, Operation *op) {
  Block &body = region.front();
  if (!llvm::all_of(body.without_terminator(), llvm::IsaPred<onnx::ConstantOp>))
    return std::nullopt;
  auto yield = cast<onnx::YieldOp>(body.getTerminator());
  if (llvm::any_of(yield.getOperands(), [&](Value value) {
        return !value.getDefiningOp<onnx::ConstantOp>() &&
               op->isAncestor(value.getParentRegion()->getParentOp());
      }))
    return std::nullopt;
  return yield.getOperands();
}

/// Why `use` is not a choice between LongRoPE's short and long factors
/// (an If yielding cos/sin tables, or a Where between inverse frequencies),
/// or std::nullopt when it is.
std::optional<StringRef> whyNotFactorChoice(OpOperand &use) {
  Operation *user = use.getOwner();
  if (auto where = dyn_cast<onnx::WhereOp>(user)) {
    if (use.getOperandNumber() != 0) return "a Where takes it as a value, not as its condition";
    if (!where.getX().getDefiningOp<onnx::ConstantOp>() ||
        !where.getY().getDefiningOp<onnx::ConstantOp>())
      return "a Where chooses between values that are not constants";
    if (!isOnlyRotaryFrequencies(where.getResult()))
      return "a Where result is used other than as rotary frequencies under cos and sin";
    return std::nullopt;
  }
  auto ifOp = dyn_cast<onnx::IfOp>(user);
  if (!ifOp) return "a use is neither an If nor a Where";
  if (!yieldedConstants(ifOp.getThenBranch(), ifOp) ||
      !yieldedConstants(ifOp.getElseBranch(), ifOp))
    return "an If branch computes more than constants";
  if (!llvm::all_of(ifOp.getResults(), isOnlyRotaryTable))
    return "an If result is used other than as a rotary cos/sin table";
  return std::nullopt;
}

/// The length past which `greater` switches LongRoPE to its long factors, or
/// failure (with why under -debug-only) when it is not LongRoPE's switch.
FailureOr<int64_t> switchLength(onnx::GreaterOp greater) {
  if (!isTotalLength(greater.getA()) && !isLongestSequence(greater.getA()))
    return leave(greater, "its left side is neither dim 1 of the graph input attention_mask "
                          "nor the largest position_ids plus one");
  std::optional<SmallVector<int64_t>> threshold = onnx::getConstantInts(greater.getB());
  if (!threshold || threshold->size() != 1)
    return leave(greater, "its right side is not a constant integer");
  if (greater->use_empty()) return leave(greater, "nothing uses it");
  for (OpOperand &use : greater->getUses())
    if (std::optional<StringRef> why = whyNotFactorChoice(use)) return leave(greater, *why);
  return (*threshold)[0];
}

/// Whether `value` reaches Cos or Sin and nothing else, through the ops that
/// carry inverse frequencies to the angles: optimum's LongRoPE export expands
/// and casts them, multiplies them by the positions (MatMul), and transposes
/// and concatenates the angles (Hugging Face's duplicated halves).
bool reachesOnlyCosSin(Value value) {
  SmallVector<Value> pending{value};
  llvm::SmallPtrSet<Operation *, 16> seen;
  bool reached = false;
  while (!pending.empty()) {
    for (Operation *user : pending.pop_back_val().getUsers()) {
      if (!seen.insert(user).second) continue;
      if (isa<onnx::CosOp, onnx::SinOp>(user)) {
        reached = true;
        continue;
      }
      if (!isa<onnx::ExpandOp, onnx::CastOp, onnx::ReshapeOp, onnx::UnsqueezeOp, onnx::SqueezeOp,
               onnx::TransposeOp, onnx::ConcatOp, onnx::MulOp, onnx::MatMulOp>(user))
        return false;
      llvm::append_range(pending, user->getResults());
    }
  }
  return reached;
}

/// Whether `values` are LongRoPE's inverse frequencies with `shortFactors`:
/// one per factor, and, times them, base^(-2i/d), a decreasing geometric
/// sequence (to 1e-4, the f32 rounding of the traced values and more).
bool areShortInverseFrequencies(ArrayRef<double> values, ArrayRef<double> shortFactors) {
  if (values.size() != shortFactors.size() || values.size() < 2) return false;
  double first = values[0] * shortFactors[0];
  double ratio = values[1] * shortFactors[1] / first;
  if (!(first > 0) || !(ratio > 0 && ratio < 1)) return false;
  for (auto [i, value] : llvm::enumerate(values))
    if (std::abs(value * shortFactors[i] / (first * std::pow(ratio, double(i))) - 1) > 1e-4)
      return false;
  return true;
}

struct OnnxSelectRopeTablesPass : impl::OnnxSelectRopeTablesPassBase<OnnxSelectRopeTablesPass> {
  using OnnxSelectRopeTablesPassBase::OnnxSelectRopeTablesPassBase;

  void runOnOperation() override {
    if (maxPositions < 0 || tracedSwitch < 0) {
      getOperation().emitError("onnx-select-rope-tables: ")
          << (maxPositions < 0 ? "max-positions" : "traced-switch") << " must not be negative";
      return signalPassFailure();
    }
    func::FuncOp function = getOperation();
    SmallVector<onnx::GreaterOp> switches;
    function.walk([&](onnx::GreaterOp greater) { switches.push_back(greater); });
    bool graphSwitches = false;
    for (onnx::GreaterOp greater : switches) {
      FailureOr<int64_t> length = switchLength(greater);
      if (failed(length)) continue;
      graphSwitches = true;
      bool useLongFactors = maxPositions > *length;
      // Unset, the short factors are exact only up to the switch: the
      // function then serves at most that many positions.
      if (!maxPositions) boundServedPositions(function, *length);
      OpBuilder builder(greater);
      auto type = RankedTensorType::get({}, builder.getI1Type());
      Value decided = onnx::ConstantOp::create(builder, greater.getLoc(), type,
                                               DenseElementsAttr::get(type, useLongFactors));
      greater.replaceAllUsesWith(decided);
      greater.erase();
    }
    if (graphSwitches || !tracedSwitch) return;
    // The short factors are exact up to the switch; past it, the long ones
    // at every length, where the config has them and the traced frequencies
    // are found.
    if (maxPositions > tracedSwitch && succeeded(takeLongFactors(function))) return;
    boundServedPositions(function, tracedSwitch);
  }

  /// Rescales each traced inverse frequency constant of `function` from the
  /// short factors to the long ones; failure (with why under -debug-only)
  /// when there are no factors or no such constant.
  LogicalResult takeLongFactors(func::FuncOp function) {
    auto leaveTraced = [&](const Twine &why) {
      LLMC_DEBUG(llvm::dbgs() << "[" DEBUG_TYPE "] " << function.getSymName()
                              << ": the traced short factors kept: " << why << "\n");
      return failure();
    };
    ArrayRef<double> shortFactors = *tracedShortFactors, longFactorList = *longFactors;
    if (longFactorList.empty() || longFactorList.size() != shortFactors.size())
      return leaveTraced("no long factors of the short ones' length were given");
    SmallVector<std::pair<onnx::ConstantOp, DenseElementsAttr>> rescaled;
    function.walk([&](onnx::ConstantOp constant) {
      auto attr = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!attr || !isa<FloatType>(attr.getElementType()) ||
          attr.getNumElements() != static_cast<int64_t>(longFactorList.size()))
        return;
      SmallVector<double> values;
      for (const APFloat &value : attr.getValues<APFloat>())
        values.push_back(value.convertToDouble());
      if (!areShortInverseFrequencies(values, shortFactors) ||
          !reachesOnlyCosSin(constant.getResult()))
        return;
      auto elementType = cast<FloatType>(attr.getElementType());
      SmallVector<APFloat> longValues;
      for (auto [i, value] : llvm::enumerate(values)) {
        APFloat longValue(value * shortFactors[i] / longFactorList[i]);
        bool lostInfo;
        longValue.convert(elementType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                          &lostInfo);
        longValues.push_back(longValue);
      }
      rescaled.emplace_back(constant, DenseElementsAttr::get(attr.getType(), longValues));
    });
    if (rescaled.empty())
      return leaveTraced("no constant is inverse frequencies with the short factors, used only "
                         "under Cos and Sin");
    for (auto [constant, longValues] : rescaled) constant.setValueAttr(longValues);
    return success();
  }
};

} // namespace
} // namespace llmc
