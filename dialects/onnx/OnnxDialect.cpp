//===- OnnxDialect.cpp - the onnx import dialect --------------------------===//
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace llmc::onnx;

#include "dialects/onnx/OnnxDialect.cpp.inc"
#include "dialects/onnx/OnnxInterfaces.cpp.inc"

void OnnxDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/onnx/OnnxOps.cpp.inc"
      >();
}

Operation *OnnxDialect::materializeConstant(OpBuilder &builder, Attribute value, Type type,
                                            Location loc) {
  if (isa<NoneType>(type)) return NoneOp::create(builder, loc, type);
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type) return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}

#define GET_OP_CLASSES
#include "dialects/onnx/OnnxOps.cpp.inc"
