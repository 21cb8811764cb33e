//===- Passes.td - Codegen/Common passes -------------------*- tablegen -*-===//
//
// Code generation, for every target: the memory plan of the step.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_PASSES_CODEGENCOMMON_PASSES
#define LLMC_PASSES_CODEGENCOMMON_PASSES

include "mlir/Pass/PassBase.td"

def LlmPlanMemoryPass : Pass<"llm-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Place every activation of the step in one workspace, reusing memory by liveness";
  let description = [{
    Runs on the ragged step. Each op result that needs memory gets a byte
    offset into a single workspace (`llmc.workspace_offsets` on the op, one
    entry per result, -1 where the result needs none), sized for the worst
    step: `max-num-batched-tokens` rows for per-token values and
    `max-num-seqs` rows for the gathered logits rows. Buffers whose live
    ranges (definition to last use, views included) do not overlap share
    memory; offsets are 64-byte aligned. Views (`llm.split_heads`,
    `llm.merge_heads` in the ragged form) share their input's buffer,
    weights and the KV pool need none, and the logits go straight to the
    step's output. The function gets `llmc.workspace_bytes`,
    `llmc.max_num_batched_tokens` and `llmc.max_num_seqs`.
  }];
  let options = [
    Option<"maxNumBatchedTokens", "max-num-batched-tokens", "int64_t", /*default=*/"2048",
           "Most tokens (prefill and decode together) one step may carry">,
    Option<"maxNumSeqs", "max-num-seqs", "int64_t", /*default=*/"256",
           "Most sequences one step may carry">,
  ];
}

#endif // LLMC_PASSES_CODEGENCOMMON_PASSES
