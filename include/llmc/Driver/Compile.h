//===- Compile.h - the compiler driver: ONNX in, IR or an artifact out -*- C++ -*-===//
//
// What `llmc compile` does, as a library: import an ONNX model, run the
// pipeline up to the requested stage and write the IR or the artifact. The
// command line (tools/llmc/CompileFlags.cpp) only fills CompileOptions.
//
//===--------------------------------------------------------------------------===//
#ifndef LLMC_DRIVER_COMPILE_H
#define LLMC_DRIVER_COMPILE_H

#include "mlir/Pass/PassManager.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace llmc {

/// What a compilation produces: IR text at a stage, or a directory.
enum class EmitKind { OnnxIR, LlmIR, StepIR, Artifact, GraphIR, Graph };

/// The --emit spelling of `kind` ("step-ir").
const char *emitName(EmitKind kind);

/// One compilation. Unset optionals mean "not given": some options apply
/// only to some targets or pipelines, and giving them elsewhere is an error.
struct CompileOptions {
  std::string inputPath;                 ///< the ONNX model
  EmitKind emit = EmitKind::Artifact;
  std::string outputPath = "-";          ///< the directory, or the IR file ("-": stdout)
  std::string target = "cpu";            ///< cpu, cuda or cuda:sm_XX
  std::optional<std::string> dtype;      ///< CUDA storage type: bf16 (default) or f16
  int64_t blockSize = 16;                ///< tokens per KV-cache block
  std::string kvCacheDtype = "auto";     ///< the KV cache's type: auto (the model's) or int8
  /// Multi-head latent attention caches its latent and rotary key (false:
  /// every head's keys and values, as the export computes them).
  bool latentKvCache = true;
  /// CPU: a block table per group of layers of one attention window (false:
  /// one table for every layer, whose blocks no window gives back).
  bool kvCacheGroups = true;
  int64_t maxNumBatchedTokens = 2048;    ///< most tokens one step carries
  int64_t maxNumSeqs = 256;              ///< most sequences one step carries
  /// Longest sequence the artifact serves (nullopt: what the model holds).
  std::optional<int64_t> maxModelLen;
  /// Serve a causal LM as a cross-encoder scored by its LM head's logit of
  /// this token, or of the second minus the first (vLLM's
  /// classifier_from_token); empty: as it is.
  std::vector<std::string> classifierFromTokens;
  /// An embedding model's Matryoshka widths ("any", or "64,128,..."), in
  /// place of its config.json's; nullopt: the config's.
  std::optional<std::string> matryoshkaDimensions;
  /// CPU: a LoRA site after each linear layer of the decoder layers, so
  /// that requests may run with LoRA adapters (llm-lora-sites).
  bool enableLora = false;
  std::string matmul = "generated";      ///< CPU matrix products: generated or blas
  /// CPU: quantised weights times int8 activations; nullopt follows the
  /// file (int8 where every MatMulNBits asks for accuracy_level 4).
  std::optional<bool> int8Activations;
  std::string int8Products = "auto";     ///< their instructions: auto, avx512-vnni or avx2
  bool bf16Activations = false;          ///< CPU: bf16 weights times bf16-rounded activations
  std::string bf16Products = "auto";     ///< their instructions: auto, amx or avx512-bf16
  std::optional<unsigned> optLevel;      ///< fusion level 0..3 (default 2)
  std::vector<std::string> passPlugins;  ///< plugin libraries to load first
  std::vector<std::string> insertPasses; ///< POINT=PIPELINE, at the extension points
  std::optional<std::string> passPipeline; ///< replaces the default pipeline
  bool allowLeftovers = false;           ///< keep onnx ops raising did not handle
  bool summary = false;                  ///< print the per-layer op summary
  bool json = false;                     ///< the summary and the fusion report as JSON
  bool dumpFusionReport = false;         ///< compare the step at -O0 and the chosen level
  bool keepWeights = false;              ///< print the weight blobs with the IR
  bool quiet = false;                    ///< no progress lines on a terminal
  /// CPU: take kernels from the kernel cache and keep them there
  /// (CodeUnitCache::defaultDirectory()); false compiles every one.
  bool kernelCache = true;
  /// Called on the pass manager before it runs (the command line applies
  /// MLIR's --mlir-* pass-manager options there); a failure stops the run.
  std::function<mlir::LogicalResult(mlir::PassManager &)> configurePassManager;
};

/// Runs one compilation. Errors are one line each on stderr
/// (`llmc: error: ...`); returns the exit code (0 on success).
int runCompile(const CompileOptions &options);

} // namespace llmc

#endif // LLMC_DRIVER_COMPILE_H
