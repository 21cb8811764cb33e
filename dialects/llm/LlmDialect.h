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

/// Bytes after each cached [head_dim] row of an int8 KV pool: the row's f32
/// scale, stored little-endian.
inline constexpr int64_t kInt8KvScaleBytes = 4;

/// Whether a KV pool is the int8 cache: i8 codes, each row followed by its
/// scale (see llm.paged_kv_write).
inline bool isInt8KvPool(mlir::ShapedType pool) { return pool.getElementType().isInteger(8); }

/// Whether a [layers, blocks, rows, kv_heads, block_size, row] pool caches
/// one row per token (rows 1: the keys, whose first features are the
/// values) instead of a key row and a value row (rows 2).
inline bool valuesInKeys(mlir::ShapedType pool) { return pool.getDimSize(2) == 1; }

/// The head_dim of the rows a [layers, blocks, 2, kv_heads, block_size, row]
/// pool caches: the last dim, less the scale of an int8 pool.
inline int64_t cachedHeadDim(mlir::ShapedType pool) {
  int64_t row = pool.getShape().back();
  if (mlir::ShapedType::isDynamic(row) || !isInt8KvPool(pool)) return row;
  return row - kInt8KvScaleBytes;
}
} // namespace llmc::llm

#endif // LLMC_DIALECTS_LLM_LLMDIALECT_H
