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

#endif // LLMC_DIALECTS_LLM_LLMDIALECT_H
