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

namespace llmc {

/// The positions the model was trained for, from the config beside
/// `modelPath`: config.json's max_position_embeddings (GPT-2's n_positions)
/// or genai_config.json's model.context_length; nullopt when neither file or
/// field is there. An error when a file there is not JSON or the length is
/// not a positive integer.
llvm::Expected<std::optional<int64_t>> readMaxPositionEmbeddings(llvm::StringRef modelPath);

/// An error when config.json's rope_scaling is of a type the compiled model
/// would not compute: YaRN and LongRoPE scale cos/sin or switch tables with
/// the length; linear, Llama-3 and dynamic NTK scaling are what the export's
/// frequencies and max_position_embeddings already hold.
llvm::Error checkRopeScaling(llvm::StringRef modelPath);

/// Bounds the positions in `module`'s step info (the manifest's
/// max_positions, which the engine takes as the default max_model_len) by
/// readMaxPositionEmbeddings. Call before writing the artifact.
mlir::LogicalResult applyModelConfig(mlir::ModuleOp module, llvm::StringRef modelPath);

} // namespace llmc

#endif // LLMC_ARTIFACT_MODELCONFIG_H
