//===- StepInfo.h - what a target lowering tells the writer -----*- C++ -*-===//
//
// The model and step configuration that manifest.json records (docs/
// artifact.md), as one record: the target lowerings set it on the module as
// the `llmc.step_info` dictionary, and the artifact writer reads it back.
// Every field must be there: a missing one is an error naming it, never a
// default written into the manifest.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_ARTIFACT_STEPINFO_H
#define LLMC_ARTIFACT_STEPINFO_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace llmc {

struct StepInfo {
  // manifest.json "model"
  int64_t vocabSize = 0, hiddenSize = 0, numHeads = 0, numLayers = 0, numKvHeads = 0,
          headDim = 0;
  /// The positions cached rotary tables hold; 0 when nothing bounds them.
  int64_t maxPositions = 0;
  /// The keys a query sees at most when every layer has a sliding window
  /// (the widest one); 0 when some layer sees every key.
  int64_t attentionWindow = 0;
  /// A sequence classifier's labels, the width of its step's rows
  /// (kClassLogitsOutput); 0 for any other model.
  int64_t numLabels = 0;
  // manifest.json "step"
  int64_t maxNumBatchedTokens = 0, maxNumSeqs = 0, workspaceBytes = 0, blockSize = 0;
  /// Rows a token caches per layer and KV head: 2 (a key and a value), or 1
  /// (the key, whose first features are the value).
  int64_t kvRows = 0;
};

inline constexpr llvm::StringLiteral kStepInfoAttr = "llmc.step_info";

/// The function attribute that bounds the positions a model computes
/// exactly, where raising chose something exact only up to a length
/// (LongRoPE's short factors); the target lowerings fold it into
/// max_positions.
inline constexpr llvm::StringLiteral kMaxPositionsAttr = "llmc.max_positions";

/// The step function's (then the lowered module's) KV cache groups, set by
/// llm-kv-cache-groups: an array of {window, layers} dictionaries, which the
/// manifest records as step.kv_groups. Absent: one group of every layer.
inline constexpr llvm::StringLiteral kKvGroupsAttr = "llmc.kv_groups";

/// What a step returns a row of for each sequence it asks one of, set by
/// llm-kv-cache-paging on the step function (and by the target lowerings on
/// the lowered module), recorded as the manifest's step.output: "logits" (the
/// LM head's, vocab_size wide), "hidden_states" (the final hidden states,
/// hidden_size wide: an export of the model without its head, an embedding
/// model's `last_hidden_state`) or "class_logits" (below).
inline constexpr llvm::StringLiteral kStepOutputAttr = "llmc.step_output";
inline constexpr llvm::StringLiteral kLogitsOutput = "logits";
inline constexpr llvm::StringLiteral kHiddenStatesOutput = "hidden_states";
/// A sequence classifier's (a reward model's, a reranker's): its score
/// head's logits, num_labels wide, at each prompt's last token.
inline constexpr llvm::StringLiteral kClassLogitsOutput = "class_logits";

/// Set by raising on a function whose `logits` result the export pooled at
/// each sequence's last token (a sequence classifier: transformers'
/// `*ForSequenceClassification`), now returned unpooled; llm-kv-cache-paging
/// makes its step output kClassLogitsOutput.
inline constexpr llvm::StringLiteral kPooledAtLastTokenAttr = "llmc.pooled_at_last_token";

/// The step function's (then the lowered module's) LoRA sites, set by
/// llm-lora-sites: an array of {module, in, out} dictionaries in the order
/// of their `site` numbers, which the manifest records as step.lora_sites.
/// Absent: the artifact serves no adapter.
inline constexpr llvm::StringLiteral kLoraSitesAttr = "llmc.lora_sites";

/// Bounds the positions `function` serves by `length`; the smaller bound wins.
inline void boundServedPositions(mlir::Operation *function, int64_t length) {
  if (auto served = function->getAttrOfType<mlir::IntegerAttr>(kMaxPositionsAttr))
    length = std::min(length, served.getInt());
  function->setAttr(kMaxPositionsAttr,
                    mlir::Builder(function->getContext()).getI64IntegerAttr(length));
}

/// A field of the record and its name in manifest.json (and in the
/// `llmc.step_info` dictionary).
using StepInfoField = std::pair<llvm::StringLiteral, int64_t StepInfo::*>;

/// The fields of the manifest's "model" entry.
inline constexpr StepInfoField kStepInfoModelFields[] = {
    {"vocab_size", &StepInfo::vocabSize},   {"hidden_size", &StepInfo::hiddenSize},
    {"num_heads", &StepInfo::numHeads},     {"num_layers", &StepInfo::numLayers},
    {"num_kv_heads", &StepInfo::numKvHeads}, {"head_dim", &StepInfo::headDim},
    {"max_positions", &StepInfo::maxPositions},
    {"attention_window", &StepInfo::attentionWindow},
    {"num_labels", &StepInfo::numLabels},
};

/// The fields of the manifest's "step" entry.
inline constexpr StepInfoField kStepInfoStepFields[] = {
    {"max_num_batched_tokens", &StepInfo::maxNumBatchedTokens},
    {"max_num_seqs", &StepInfo::maxNumSeqs},
    {"workspace_bytes", &StepInfo::workspaceBytes},
    {"block_size", &StepInfo::blockSize},
    {"kv_rows", &StepInfo::kvRows},
};

/// Every field of the record.
inline auto stepInfoFields() {
  return llvm::concat<const StepInfoField>(kStepInfoModelFields, kStepInfoStepFields);
}

/// Records `info` on `module`.
inline void setStepInfo(mlir::ModuleOp module, const StepInfo &info) {
  mlir::Builder b(module.getContext());
  llvm::SmallVector<mlir::NamedAttribute> fields;
  for (const auto &[name, field] : stepInfoFields())
    fields.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(info.*field)));
  module->setAttr(kStepInfoAttr, b.getDictionaryAttr(fields));
}

/// The record on `module`; an error naming what is missing otherwise.
inline mlir::FailureOr<StepInfo> getStepInfo(mlir::ModuleOp module) {
  auto dict = module->getAttrOfType<mlir::DictionaryAttr>(kStepInfoAttr);
  if (!dict)
    return module.emitError("has no ") << kStepInfoAttr << ": not a module a target lowering made",
           mlir::failure();
  StepInfo info;
  for (const auto &[name, field] : stepInfoFields()) {
    auto value = dict.getAs<mlir::IntegerAttr>(name);
    if (!value) return module.emitError(kStepInfoAttr) << " has no " << name, mlir::failure();
    info.*field = value.getInt();
  }
  return info;
}

} // namespace llmc

#endif // LLMC_ARTIFACT_STEPINFO_H
