//===- LlmTraits.h - properties passes ask of llm ops -----------*- C++ -*-===//
//
// The traits LlmOps.td attaches to ops, so that a pass asks an op what it is
// (`op->hasTrait<llm::OpTrait::RowWise>()`) instead of keeping its own list
// of op classes: a new op states its properties once, where it is declared.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLM_LLMTRAITS_H
#define LLMC_DIALECTS_LLM_LLMTRAITS_H

#include "mlir/IR/OpDefinition.h"

namespace llmc::llm::OpTrait {

/// Each row of every result is computed from the same row of the per-row
/// operands (and from weights) alone: a row gather may move above the op.
template <typename ConcreteType>
class RowWise : public mlir::OpTrait::TraitBase<ConcreteType, RowWise> {};

/// In the dense form, every result is a [batch, seq, features] activation
/// computed token by token: the ragged form drops its seq dim (1).
template <typename ConcreteType>
class TokenWise : public mlir::OpTrait::TraitBase<ConcreteType, TokenWise> {};

/// In the dense form, every result is [batch, heads, seq, head_dim],
/// computed token by token: the ragged form drops its seq dim (2).
template <typename ConcreteType>
class TokenWiseHeads : public mlir::OpTrait::TraitBase<ConcreteType, TokenWiseHeads> {};

/// The results are views of the first operand's memory: no kernel, no
/// buffer of their own.
template <typename ConcreteType>
class View : public mlir::OpTrait::TraitBase<ConcreteType, View> {};

} // namespace llmc::llm::OpTrait

#endif // LLMC_DIALECTS_LLM_LLMTRAITS_H
