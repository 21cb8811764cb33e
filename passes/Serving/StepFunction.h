//===- StepFunction.h - names of the step function's inputs -----*- C++ -*-===//
//
// llm-kv-cache-paging and llm-ragged-batching rewrite the model function
// into the step ABI (include/llmc/Runtime/StepABI.h). They tag each input
// with its role under the `llmc.abi` argument attribute, so that later passes
// find inputs by role instead of by position.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_SERVING_STEPFUNCTION_H
#define LLMC_PASSES_SERVING_STEPFUNCTION_H

#include "dialects/llm/LlmDialect.h"
#include "llmc/Runtime/StepABI.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseSet.h"

namespace llmc::abi {

inline constexpr llvm::StringLiteral kRoleAttr = "llmc.abi";

inline constexpr llvm::StringLiteral kTokens = LLMC_STEP_INPUT_TOKENS;
inline constexpr llvm::StringLiteral kPositions = LLMC_STEP_INPUT_POSITIONS;
inline constexpr llvm::StringLiteral kCuSeqlensQ = LLMC_STEP_INPUT_CU_SEQLENS_Q;
inline constexpr llvm::StringLiteral kContextLens = LLMC_STEP_INPUT_CONTEXT_LENS;
inline constexpr llvm::StringLiteral kBlockTables = LLMC_STEP_INPUT_BLOCK_TABLES;
inline constexpr llvm::StringLiteral kSlotMapping = LLMC_STEP_INPUT_SLOT_MAPPING;
inline constexpr llvm::StringLiteral kLogitsIndices = LLMC_STEP_INPUT_LOGITS_INDICES;
inline constexpr llvm::StringLiteral kKvPool = LLMC_STEP_INPUT_KV_POOL;

/// The step ABI's array inputs in argument order (after `api`).
inline constexpr llvm::StringLiteral kStepInputs[] = {
    kTokens, kPositions, kCuSeqlensQ, kContextLens, kBlockTables, kSlotMapping, kLogitsIndices,
    kKvPool};

/// The input of `func` tagged with `role`, or null.
inline mlir::BlockArgument findInput(mlir::func::FuncOp func, llvm::StringRef role) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (auto tag = func.getArgAttrOfType<mlir::StringAttr>(i, kRoleAttr))
      if (tag.getValue() == role) return func.getArgument(i);
  return nullptr;
}

/// Appends an input tagged with `role`.
inline mlir::BlockArgument addInput(mlir::func::FuncOp func, llvm::StringRef role,
                                    mlir::Type type) {
  mlir::MLIRContext *context = func.getContext();
  auto attrs = mlir::DictionaryAttr::get(
      context, {mlir::NamedAttribute(mlir::StringAttr::get(context, kRoleAttr),
                                     mlir::StringAttr::get(context, role))});
  unsigned index = func.getNumArguments();
  (void)func.insertArgument(index, type, attrs, func.getLoc());
  return func.getArgument(index);
}

/// The ragged step function of `module` (the one with a cu_seqlens_q
/// input), or null.
inline mlir::func::FuncOp findRaggedStep(mlir::ModuleOp module) {
  for (auto func : module.getOps<mlir::func::FuncOp>())
    if (findInput(func, kCuSeqlensQ)) return func;
  return nullptr;
}

/// The ragged step of `module` with its memory plan, as the target
/// lowerings take it; null, after an error naming the missing pass, if
/// there is none.
inline mlir::func::FuncOp findPlannedStep(mlir::ModuleOp module) {
  mlir::func::FuncOp model = findRaggedStep(module);
  if (!model) {
    module.emitError("no ragged step function: run llm-kv-cache-paging and llm-ragged-batching first");
    return nullptr;
  }
  if (!model->hasAttr("llmc.workspace_bytes")) {
    model.emitError("has no memory plan: run llm-plan-memory first");
    return nullptr;
  }
  return model;
}

/// The values of the ragged step `func` with one row per sequence rather
/// than per token: gathered rows and what row-wise ops compute from them
/// (after llm-fuse-logits-rows). Memory planning sizes them and the CPU
/// lowering runs their kernels for max_num_seqs / the step's sequences.
inline llvm::DenseSet<mlir::Value> perSequenceValues(mlir::func::FuncOp func) {
  llvm::DenseSet<mlir::Value> rows;
  for (mlir::Operation &op : func.getBody().front())
    if (mlir::isa<llm::GatherRowsOp>(op) ||
        llvm::any_of(op.getOperands(), [&](mlir::Value v) { return rows.contains(v); }))
      rows.insert(op.result_begin(), op.result_end());
  return rows;
}

/// The model's hidden size: the width of its first llm.embedding (the token
/// table's; learned position tables are as wide); 0 without one.
inline int64_t hiddenSize(mlir::func::FuncOp func) {
  int64_t width = 0;
  func.walk([&](llm::EmbeddingOp op) {
    if (!width) width = mlir::cast<mlir::ShapedType>(op.getType()).getShape().back();
  });
  return width;
}

} // namespace llmc::abi

#endif // LLMC_PASSES_SERVING_STEPFUNCTION_H
