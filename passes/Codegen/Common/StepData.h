//===- StepData.h - what target lowerings read off the planned step -*- C++ -*-===//
//
// The planned workspace offsets, weights as constant f32 data (dequantized
// at compile time when packed) and the step's configuration for the manifest
// (llmc/Artifact/StepInfo.h): the same for every target.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_COMMON_STEPDATA_H
#define LLMC_PASSES_CODEGEN_COMMON_STEPDATA_H

#include "dialects/llm/LlmDialect.h"
#include "llmc/Artifact/StepInfo.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/BuiltinOps.h"

namespace llmc::codegen {

/// The attribute llm-plan-memory leaves on every op with results: one
/// workspace offset per result, -1 for a result that lives elsewhere.
inline constexpr llvm::StringLiteral kWorkspaceOffsetsAttr = "llmc.workspace_offsets";

/// The f32 constant data of a weight operand, dequantised if packed; an
/// error naming `target` ("CPU", "CUDA") for anything else.
mlir::FailureOr<mlir::ElementsAttr> weightConstant(mlir::Value value, llvm::StringRef target);
/// weightConstant's data of a 2-D [rows, cols] weight, transposed to
/// [cols, rows]: an [in, out] matmul weight stored [out, in], so that one
/// output's weights are one contiguous row. An error for other ranks.
mlir::FailureOr<mlir::ElementsAttr> transposedWeightConstant(mlir::Value value,
                                                             llvm::StringRef target);
/// What the manifest records about the planned step `model`: the limits and
/// workspace llm-plan-memory set, the KV pool's and the logits' shapes, the
/// hidden size (llm.embedding), the query heads (llm.paged_attention) and the
/// positions cached rotary tables hold. An error naming what the step lacks.
mlir::FailureOr<StepInfo> plannedStepInfo(mlir::func::FuncOp model);
/// What the step `model` returns a row of (kStepOutputAttr): kLogitsOutput
/// when it does not say.
llvm::StringRef stepOutput(mlir::func::FuncOp model);
/// Whether the step `model` returns final hidden states rather than logits.
bool hiddenStatesStep(mlir::func::FuncOp model);

} // namespace llmc::codegen

#endif // LLMC_PASSES_CODEGEN_COMMON_STEPDATA_H
