//===- RopeTables.h - what a rotary embedding's cos and sin are -*- C++ -*-===//
//
// The rotary patterns (RaiseRope.cpp, RaiseInterleavedRope.cpp) match the
// rotation; these helpers say what its cos and sin operands are: computed in
// the graph from an inv_freq constant and positions, or read from constant
// tables at positions, in the layouts exporters write them (full width
// cat(t, t) for rotate_half, half width, or repeated pairwise for a rotation
// over interleaved pairs). RopeTables.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_RAISING_ROPETABLES_H
#define LLMC_PASSES_RAISING_ROPETABLES_H

#include "mlir/IR/PatternMatch.h"

namespace llmc::raising {

/// cos and sin as a rope pattern found them: llm.rope's inv_freq, or
/// llm.rope_cached's half-width caches, and the positions either is read at.
struct RopeTables {
  mlir::Value positions;
  mlir::Value invFreq;            ///< [rotary_dim/2], for llm.rope
  mlir::Value cosCache, sinCache; ///< [max_pos, rotary_dim/2], for llm.rope_cached
  double scale = 1.0;             ///< what cos and sin are multiplied by (llm.rope's scale)
  /// The axis of the rotated value that cos and sin broadcast over: its heads,
  /// 1 on [batch, heads, seq, d], or 2 on [batch, seq, heads, d] (GPT-J's).
  int64_t headsAxis = 1;
};

/// The angles [b, s, d/2] are positions times inv_freq: the tables llm.rope
/// computes cos and sin of.
mlir::FailureOr<RopeTables> analyseAngles(mlir::Value freqs, mlir::OpBuilder &builder,
                                          mlir::Location loc);

/// rotate_half's cos and sin, broadcast over the heads at axis 1: full width
/// (cat(t, t)), or `halfWidth` (t; also the first half of a full-width one).
mlir::FailureOr<RopeTables> analyseRotateHalfTables(mlir::Value cos, mlir::Value sin,
                                                    mlir::OpBuilder &builder, mlir::Location loc,
                                                    bool halfWidth = false);

/// The cos and sin of a rotation over interleaved pairs: each pair's
/// cos and sin repeated pairwise (repeat_interleave(t, 2, -1)), of half-width
/// tables or of the angles, broadcast over the heads at axis 1 or 2.
mlir::FailureOr<RopeTables> analysePairwiseTables(mlir::Value cos, mlir::Value sin,
                                                  mlir::OpBuilder &builder, mlir::Location loc);

/// llm.rope or llm.rope_cached of x [batch, heads, seq, d] as `tables` give it.
mlir::Value createRope(mlir::PatternRewriter &rewriter, mlir::Location loc, mlir::Type type,
                       mlir::Value x, const RopeTables &tables, bool interleaved = false);

} // namespace llmc::raising

#endif // LLMC_PASSES_RAISING_ROPETABLES_H
