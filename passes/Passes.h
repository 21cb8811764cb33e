//===- Passes.h - llmc's compiler passes ------------------------*- C++ -*-===//
#ifndef LLMC_PASSES_PASSES_H
#define LLMC_PASSES_PASSES_H

#include "dialects/llm/LlmDialect.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

namespace llmc {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Adds the import clean-up and raising passes: onnx ops in, llm ops out.
void buildRaisingPipeline(mlir::OpPassManager &pm, bool allowLeftovers = false);

/// Options of the serving-form pipeline.
struct StepPipelineOptions {
  int64_t blockSize = 16;
  int64_t maxNumBatchedTokens = 2048;
  int64_t maxNumSeqs = 256;
  std::string matmul = "generated";
};

/// Adds the passes from raised llm IR to the planned, ragged, paged step
/// (llm-gqa-rewrite, llm-kv-cache-paging, llm-ragged-batching,
/// llm-plan-memory), and with `lowerToCpu` llm-lower-to-cpu.
void buildStepPipeline(mlir::OpPassManager &pm, const StepPipelineOptions &options,
                       bool lowerToCpu);

/// Registers the dialects the CPU lowering produces (for tools that run it).
void registerStepLoweringDialects(mlir::DialectRegistry &registry);

/// Adds the passes that lower a whole onnx graph of fixed shapes to loops on
/// memrefs: shape inference, onnx-lower-to-linalg, one-shot bufferization,
/// results turned into trailing out-parameters, deallocation, linalg to
/// loops. The graph function keeps its name.
void buildGraphPipeline(mlir::OpPassManager &pm);

/// Registers what buildGraphPipeline needs beyond the step lowering's
/// dialects: linalg, tensor, bufferization and the bufferization models.
void registerGraphLoweringDialects(mlir::DialectRegistry &registry);

/// Registers the named pipelines (e.g. `llmc-raise`) with the pass registry.
void registerPipelines();

} // namespace llmc

#endif // LLMC_PASSES_PASSES_H
