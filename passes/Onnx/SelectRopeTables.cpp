//===- SelectRopeTables.cpp - resolve LongRoPE's short/long switch ---------===//
//
// The genai builder's LongRoPE picks its cos/sin tables with an If on the
// total sequence length. A paged step runs sequences of every length with
// one table, so the switch is decided once, by the longest sequence the
// compiled model serves (Passes.td has the rule and the form matched).
//
//===----------------------------------------------------------------------===//
#include "passes/Onnx/Passes.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/ShapeHelpers.h"
#include "llmc/Support/Debug.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

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
  auto mask = dyn_cast<BlockArgument>(shape.getData());
  auto function = mask ? dyn_cast<func::FuncOp>(mask.getOwner()->getParentOp()) : nullptr;
  if (!function || mask.getOwner() != &function.getBody().front()) return false;
  auto name = function.getArgAttrOfType<StringAttr>(mask.getArgNumber(), "onnx.name");
  auto type = dyn_cast<ShapedType>(mask.getType());
  return name && name.getValue() == "attention_mask" && type && type.hasRank() &&
         type.getRank() == 2;
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

/// The switch's value for every sequence the compiled model serves, or
/// failure (with why under -debug-only) when `greater` is not LongRoPE's
/// switch or cannot be decided.
FailureOr<bool> decideSwitch(onnx::GreaterOp greater, int64_t maxPositions) {
  if (!isTotalLength(greater.getA()))
    return leave(greater, "its left side is not dim 1 of the graph input attention_mask");
  std::optional<SmallVector<int64_t>> threshold = onnx::getConstantInts(greater.getB());
  if (!threshold || threshold->size() != 1)
    return leave(greater, "its right side is not a constant integer");
  int64_t original = (*threshold)[0];
  if (greater->use_empty()) return leave(greater, "nothing uses it");
  for (Operation *user : greater->getUsers()) {
    auto ifOp = dyn_cast<onnx::IfOp>(user);
    if (!ifOp) return leave(greater, "a use is not an If");
    std::optional<OperandRange> longTables = yieldedConstants(ifOp.getThenBranch(), ifOp);
    std::optional<OperandRange> shortTables = yieldedConstants(ifOp.getElseBranch(), ifOp);
    if (!longTables || !shortTables)
      return leave(greater, "an If branch computes more than constants");
    if (!llvm::all_of(ifOp.getResults(), isOnlyRotaryTable))
      return leave(greater, "an If result is used other than as a rotary cos/sin table");
    if (maxPositions) continue;
    for (Value table : *shortTables) {
      auto type = dyn_cast<ShapedType>(table.getType());
      if (!type || !type.hasRank() || type.getRank() == 0 || type.isDynamicDim(0) ||
          type.getDimSize(0) > original)
        return leave(greater, "without max-positions the short tables must hold at most " +
                                  Twine(original) + " rows, to bound the positions served");
    }
  }
  return maxPositions > original;
}

struct OnnxSelectRopeTablesPass : impl::OnnxSelectRopeTablesPassBase<OnnxSelectRopeTablesPass> {
  using OnnxSelectRopeTablesPassBase::OnnxSelectRopeTablesPassBase;

  void runOnOperation() override {
    if (maxPositions < 0) {
      getOperation().emitError("onnx-select-rope-tables: max-positions must not be negative");
      return signalPassFailure();
    }
    SmallVector<onnx::GreaterOp> switches;
    getOperation().walk([&](onnx::GreaterOp greater) { switches.push_back(greater); });
    for (onnx::GreaterOp greater : switches) {
      FailureOr<bool> useLongTables = decideSwitch(greater, maxPositions);
      if (failed(useLongTables)) continue;
      OpBuilder builder(greater);
      auto type = RankedTensorType::get({}, builder.getI1Type());
      Value decided = onnx::ConstantOp::create(
          builder, greater.getLoc(), type, DenseElementsAttr::get(type, *useLongTables));
      greater.replaceAllUsesWith(decided);
      greater.erase();
    }
  }
};

} // namespace
} // namespace llmc
