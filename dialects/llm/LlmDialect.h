//===- LlmDialect.h - the llm dialect ---------------------------*- C++ -*-===//
#ifndef LLMC_DIALECTS_LLM_LLMDIALECT_H
#define LLMC_DIALECTS_LLM_LLMDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/llm/LlmTraits.h"

#include "dialects/llm/LlmDialect.h.inc"
#include "dialects/llm/LlmInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/llm/LlmOps.h.inc"

namespace llmc::llm {
/// Clones the scalar body of an elementwise op or an epilogue (a block
/// ending in llm.yield) at `b`'s insertion point with its arguments bound to
/// `scalars`; returns the yielded value.
mlir::Value inlineScalarBody(mlir::OpBuilder &b, mlir::Region &body, mlir::ValueRange scalars);
} // namespace llmc::llm

#endif // LLMC_DIALECTS_LLM_LLMDIALECT_H
