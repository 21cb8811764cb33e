//===- LlmDialect.cpp - the llm dialect -----------------------------------===//
#include "dialects/llm/LlmDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace llmc::llm;

#include "dialects/llm/LlmDialect.cpp.inc"
#include "dialects/llm/LlmInterfaces.cpp.inc"

void LlmDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/llm/LlmOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "dialects/llm/LlmOps.cpp.inc"
