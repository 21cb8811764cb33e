//===- Passes.td - Codegen/CUDA passes ---------------------*- tablegen -*-===//
//
// Code generation for NVIDIA GPUs.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_PASSES_CODEGENCUDA_PASSES
#define LLMC_PASSES_CODEGENCUDA_PASSES

include "mlir/Pass/PassBase.td"

def LlmLowerToCudaPass : Pass<"llm-lower-to-cuda", "mlir::ModuleOp"> {
  let summary = "Generate GPU kernels and the CUDA step plan from the planned llm step";
  let description = [{
    Lowers the ragged, planned llm step for an NVIDIA GPU (docs/cuda.md).
    Each op becomes one of:

    - a `gpu.func` kernel in `gpu.module @llmc_kernels` (targeting
      `#nvvm.target` of `arch`), built from scf, arith, math and memref ops:
      embedding, row gathers, norms and add+norms (one block per row, the
      sums through `gpu.all_reduce`), rope, the paged KV write and
      rope+KV write, split q/k/v, and every elementwise op (its scalar body
      from `ScalarFunctionOpInterface`, one thread per element);
    - a cuBLASLt GEMM step for `llm.linear`, `llm.fused_linear` and
      `llm.logits`: a bias rides on cuBLASLt's bias epilogue and a residual
      add on beta = 1; any other epilogue becomes a kernel from the op's
      epilogue region, reading the f32 product from scratch;
    - launches of the paged attention kernels, whose CUDA C++ source,
      specialised to the model, is left in the `llmc.cuda_attention_source`
      module attribute for the target to compile with NVRTC.

    The step itself becomes data: the `llmc.cuda_plan` module attribute
    lists the launches and GEMMs in order, with buffers as (buffer, byte
    offset) and row counts as symbols the runtime resolves per step.
    Activations, weights (`llmc.weights`, converted to `dtype` when written)
    and the KV pool are stored in `dtype`; kernels compute in f32; logits
    and rotary tables stay f32.
  }];
  let options = [
    Option<"arch", "arch", "std::string", /*default=*/"\"sm_80\"",
           "The GPU architecture, sm_XX">,
    Option<"dtype", "dtype", "std::string", /*default=*/"\"bf16\"",
           "The storage type of weights, activations and the KV cache: bf16 or f16">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
                           "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect"];
}

#endif // LLMC_PASSES_CODEGENCUDA_PASSES
