//===- ModelConfig.h - what the exporter's config says -----------*- C++ -*-===//
//
// Exporters write the model's configuration beside model.onnx: config.json
// (transformers, optimum, torch.onnx) or genai_config.json (onnxruntime-
// genai's builder). The artifact keeps what the graph does not say.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_ARTIFACT_MODELCONFIG_H
#define LLMC_ARTIFACT_MODELCONFIG_H

#include "mlir/IR/BuiltinOps.h"

#include <optional>
#include <vector>

namespace llmc {

/// What the config beside the model says that the artifact keeps.
struct ExporterConfig {
  /// The positions the model was trained for: config.json's
  /// max_position_embeddings (GPT-2's n_positions) or genai_config.json's
  /// model.context_length; nullopt when neither is there.
  std::optional<int64_t> maxPositionEmbeddings;
  /// LongRoPE's original_max_position_embeddings, past which the model
  /// switches from its short factors to its long ones; nullopt without
  /// LongRoPE. An export that traced one side (optimum's: the short) serves
  /// at most this many positions (onnx-select-rope-tables' traced-switch).
  std::optional<int64_t> longRopeSwitch;
  /// LongRoPE's per-frequency factors: short ones up to longRopeSwitch, long
  /// ones past it (rope_scaling's short_factor and long_factor, each one per
  /// rotated pair of features). Empty without LongRoPE, or when the layer
  /// types' entries disagree or scale their short and long attention
  /// differently: an export that traced the short side then stays bounded by
  /// the switch (onnx-select-rope-tables' long-factors).
  std::vector<double> longRopeShortFactors, longRopeLongFactors;
  /// A sequence classifier's label names by index: config.json's id2label.
  std::vector<std::string> labels;
  /// An embedding model trained with Matryoshka representation learning,
  /// whose embeddings' leading features are embeddings themselves:
  /// config.json's matryoshka_dimensions (the widths it serves), or its
  /// is_matryoshka (an empty list: any width); nullopt when neither.
  std::optional<std::vector<int64_t>> matryoshkaDimensions;
};

/// Reads the config beside `modelPath`, once, before compiling: an error when
/// a file there is not JSON, a length is not a positive integer, or
/// config.json's rope scaling (transformers 4's rope_scaling, 5's
/// rope_parameters) is of a type the compiled model would not compute (YaRN
/// and LongRoPE scale cos/sin or switch factors with the length; linear,
/// Llama-3 and dynamic NTK scaling are what the export's frequencies and
/// max_position_embeddings already hold).
llvm::Expected<ExporterConfig> readExporterConfig(llvm::StringRef modelPath);

/// The ids of `tokens` in the tokenizer.json beside `modelPath`, as
/// transformers' convert_tokens_to_ids finds them: an added token's content
/// or a vocabulary entry (a byte-level BPE's "Ġyes" is " yes" spelt in its
/// alphabet). An error when there is no tokenizer.json or a token is in
/// neither.
llvm::Expected<std::vector<int64_t>> readTokenIds(llvm::StringRef modelPath,
                                                  llvm::ArrayRef<std::string> tokens);

/// Parses a Matryoshka width list as `--matryoshka-dimensions` gives it:
/// "any", or positive widths separated by commas; an error names the text.
llvm::Expected<std::vector<int64_t>> parseMatryoshkaDimensions(llvm::StringRef text);

/// The module attribute of an embedding model's Matryoshka widths for the
/// manifest (model.is_matryoshka, model.matryoshka_dimensions): an array of
/// integers, empty for any width.
inline constexpr llvm::StringLiteral kMatryoshkaAttr = "llmc.matryoshka_dimensions";

/// The module attribute that names a classifier's labels for the manifest
/// (model.labels): an array of strings, one per label.
inline constexpr llvm::StringLiteral kLabelsAttr = "llmc.labels";

/// Bounds the positions in `module`'s step info (the manifest's
/// max_positions, which the engine takes as the default max_model_len) by
/// the config's, names a classifier's labels (kLabelsAttr) where the config
/// names as many as the step returns, and an embedding model's Matryoshka
/// widths (kMatryoshkaAttr; an error when one is wider than the model).
/// Call before writing the artifact.
mlir::LogicalResult applyExporterConfig(mlir::ModuleOp module, const ExporterConfig &config);

} // namespace llmc

#endif // LLMC_ARTIFACT_MODELCONFIG_H
