//===- StepWalker.h - the op walk both target lowerings share ---*- C++ -*-===//
//
// A target lowering walks the planned, ragged llm step in order and gives
// every value a place (`Ref`: a memref on the CPU, a tensor place in the
// CUDA plan). What does not depend on the target is here, once: weights and
// their dequantization are placed where they are used, views (split/merge of
// heads, the parts of a split) alias their input, a KV write's updated pool
// is its input pool, and results get workspace views at the offsets
// llm-plan-memory planned. The target says how to place a weight, view the
// workspace, slice columns and lower one compute op.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_COMMON_STEPWALKER_H
#define LLMC_PASSES_CODEGEN_COMMON_STEPWALKER_H

#include "dialects/llm/LlmDialect.h"
#include "passes/Codegen/Common/StepData.h"
#include "passes/Serving/StepFunction.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>

namespace llmc::codegen {

/// `Operand` is what a compute op receives per operand: a `Ref`, or the
/// default-constructed value (null, nullopt) for an absent optional operand
/// and for an operand the target places itself in the layout its kernel
/// reads (`placesOwnOperand`: a matmul's weight).
template <typename Ref, typename Operand = std::optional<Ref>>
class StepWalker {
public:
  virtual ~StepWalker() = default;

  /// Lowers the body of the planned step `step` op by op. Its inputs must
  /// already have refs.
  mlir::LogicalResult walk(mlir::func::FuncOp step) {
    perSequence = abi::perSequenceValues(step);
    for (mlir::Operation &op : step.getBody().front())
      if (mlir::failed(lowerOp(&op))) return mlir::failure();
    return mlir::success();
  }

  /// Where the walk put `value` (a step input or a result), if anywhere.
  std::optional<Ref> placeOf(mlir::Value value) const {
    auto it = refs.find(value);
    if (it == refs.end()) return std::nullopt;
    return it->second;
  }

protected:
  /// Places the weight `value` read as operand `operandNumber` of `user`.
  /// The target caches what it placed (a weight may be read by many ops).
  virtual mlir::FailureOr<Ref> placeWeight(mlir::Value value, mlir::Operation *user,
                                           unsigned operandNumber) = 0;
  /// A [rows, features] view of the workspace at byte `offset` for `result`
  /// of `op`; rows are sequences when `perSequenceRows`, else tokens.
  virtual mlir::FailureOr<Ref> workspaceView(mlir::Operation *op, mlir::Value result,
                                             int64_t offset, int64_t features,
                                             bool perSequenceRows) = 0;
  /// Columns [column, column + size) of every row of `input`.
  virtual Ref columnSlice(mlir::Location loc, const Ref &input, int64_t column, int64_t size) = 0;
  /// Lowers a compute op given its operands (see `Operand`) and the
  /// workspace views of its results (none for a KV write or the logits).
  virtual mlir::LogicalResult lowerCompute(mlir::Operation *op, llvm::ArrayRef<Operand> operands,
                                           llvm::ArrayRef<Ref> outputs) = 0;

  /// The place of `value`, read as operand `operandNumber` of `user`: a step
  /// input, an earlier result, a weight, or absent for no value.
  mlir::FailureOr<Operand> refOf(mlir::Value value, mlir::Operation *user,
                                 unsigned operandNumber) {
    if (!value) return Operand();
    if (auto known = refs.find(value); known != refs.end()) return Operand(known->second);
    auto placed = placeWeight(value, user, operandNumber);
    if (mlir::failed(placed)) return mlir::failure();
    return Operand(*placed);
  }

  static bool isMatmul(mlir::Operation *op) {
    return mlir::isa<llm::LinearOp, llm::LogitsOp, llm::FusedLinearOp>(op);
  }

  /// Whether the target places operand `operandNumber` of `op` itself, in
  /// the layout its kernel reads (it then receives the default `Operand`):
  /// a matmul's weight, and what a target adds.
  virtual bool placesOwnOperand(mlir::Operation *op, unsigned operandNumber) {
    return isMatmul(op) && operandNumber == 1;
  }

  llvm::DenseMap<mlir::Value, Ref> refs;
  llvm::DenseSet<mlir::Value> perSequence; // abi::perSequenceValues of the step

private:
  mlir::LogicalResult lowerOp(mlir::Operation *op) {
    if (mlir::isa<llm::ConstantOp, llm::DequantizeOp, mlir::func::ReturnOp>(op))
      return mlir::success(); // weights are placed where they are used
    if (auto split = mlir::dyn_cast<llm::SplitOp>(op)) return lowerSplit(split);
    if (op->hasTrait<llm::OpTrait::View>()) {
      auto input = known(op, op->getOperand(0));
      if (mlir::failed(input)) return mlir::failure();
      refs[op->getResult(0)] = *input;
      return mlir::success();
    }

    llvm::SmallVector<Operand> operands;
    for (mlir::OpOperand &operand : op->getOpOperands()) {
      if (placesOwnOperand(op, operand.getOperandNumber())) {
        operands.push_back(Operand());
        continue;
      }
      auto ref = refOf(operand.get(), op, operand.getOperandNumber());
      if (mlir::failed(ref)) return mlir::failure();
      operands.push_back(*ref);
    }
    if (mlir::failed(aliasUpdatedPool(op))) return mlir::failure();
    llvm::SmallVector<Ref> outputs;
    if (!mlir::isa<llm::PagedKvWriteOp, llm::LogitsOp>(op))
      if (mlir::failed(workspaceViews(op, outputs))) return mlir::failure();
    return lowerCompute(op, operands, outputs);
  }

  /// A KV write updates the pool in place: its result is its input pool.
  mlir::LogicalResult aliasUpdatedPool(mlir::Operation *op) {
    mlir::Value pool, updated;
    if (auto write = mlir::dyn_cast<llm::PagedKvWriteOp>(op))
      std::tie(pool, updated) = std::make_pair(write.getKvPool(), write.getUpdatedPool());
    else if (auto write = mlir::dyn_cast<llm::RopePagedKvWriteOp>(op))
      std::tie(pool, updated) = std::make_pair(write.getKvPool(), write.getUpdatedPool());
    else
      return mlir::success();
    auto ref = known(op, pool);
    if (mlir::failed(ref)) return mlir::failure();
    refs[updated] = *ref;
    return mlir::success();
  }

  /// The parts of an llm.split are column slices of its input's rows.
  mlir::LogicalResult lowerSplit(llm::SplitOp split) {
    auto input = known(split, split.getInput());
    if (mlir::failed(input)) return mlir::failure();
    int64_t column = 0;
    for (auto [result, size] : llvm::zip(split.getResults(), split.getSizes())) {
      refs[result] = columnSlice(split.getLoc(), *input, column, size);
      column += size;
    }
    return mlir::success();
  }

  /// Views of the workspace at the planned offsets for `op`'s results.
  mlir::LogicalResult workspaceViews(mlir::Operation *op, llvm::SmallVectorImpl<Ref> &outputs) {
    auto offsets = op->getAttrOfType<mlir::DenseI64ArrayAttr>(kWorkspaceOffsetsAttr);
    if (!offsets || offsets.size() != static_cast<int64_t>(op->getNumResults()))
      return op->emitOpError("has no planned workspace offsets: run llm-plan-memory first");
    for (auto [result, offset] : llvm::zip(op->getResults(), offsets.asArrayRef())) {
      if (offset < 0) continue; // the pool a fused KV write updates in place
      // Activations are [rows, features], heads included in the features.
      int64_t features = 1;
      for (int64_t dim : llvm::cast<mlir::ShapedType>(result.getType()).getShape().drop_front())
        features *= dim;
      auto view = workspaceView(op, result, offset, features, perSequence.contains(result));
      if (mlir::failed(view)) return mlir::failure();
      refs[result] = *view;
      outputs.push_back(*view);
    }
    return mlir::success();
  }

  /// The ref an earlier op gave `value` (a copy: inserting into `refs` may
  /// move its entries).
  mlir::FailureOr<Ref> known(mlir::Operation *op, mlir::Value value) {
    auto it = refs.find(value);
    if (it == refs.end()) return op->emitOpError("reads a value that has no memory");
    return Ref(it->second);
  }
};

} // namespace llmc::codegen

#endif // LLMC_PASSES_CODEGEN_COMMON_STEPWALKER_H
