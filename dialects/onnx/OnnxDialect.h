//===- OnnxDialect.h - the onnx import dialect ------------------*- C++ -*-===//
#ifndef LLMC_DIALECTS_ONNX_ONNXDIALECT_H
#define LLMC_DIALECTS_ONNX_ONNXDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/onnx/ShapeInference.h"

#include "dialects/onnx/OnnxDialect.h.inc"
#include "dialects/onnx/OnnxInterfaces.h.inc"

#define GET_OP_CLASSES
#include "dialects/onnx/OnnxOps.h.inc"

#endif // LLMC_DIALECTS_ONNX_ONNXDIALECT_H
