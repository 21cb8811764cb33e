//===- Passes.td - Codegen/CPU passes ----------------------*- tablegen -*-===//
//
// Code generation for the host CPU.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_PASSES_CODEGENCPU_PASSES
#define LLMC_PASSES_CODEGENCPU_PASSES

include "mlir/Pass/PassBase.td"

def LlmLowerToCpuPass : Pass<"llm-lower-to-cpu", "mlir::ModuleOp"> {
  let summary = "Generate the CPU step function and its kernels from the planned llm step";
  let description = [{
    Replaces the ragged, planned llm step with `llmc_step`, the function of
    the step ABI (include/llmc/Runtime/StepABI.h) on memrefs, and one
    private kernel function per distinct op and shape, built from scf loops
    on memrefs: embedding, norms, rope, elementwise activations, the paged
    KV write, paged attention (online softmax over the sequence's KV blocks,
    O(1) extra memory per query row) and row gathers. Activations are views
    of the workspace at the planned offsets; weights are views of the
    weights buffer at offsets recorded in the `llmc.weights` module
    attribute (the artifact writer lays weights.bin out from it).

    A block-quantised weight (`llm.dequantize` of constants: 4- or 8-bit
    codes, blocks of a multiple of 16) that a generated matmul, an embedding
    or a mixture of experts (its stacked experts) reads stays packed
    (`pack-quantized`): weights.bin holds its
    codes, scales and zero points, and the kernels dequantise 16 values at a
    time in registers with the arithmetic of the compile-time widening, so
    the logits are bit-identical to those of the weights widened to f32.
    Other quantised weights, and all of them under `blas` or
    `pack-quantized=false`, are widened to f32 here, at compile time.

    With `int8-activations`, a matmul over a packed quantised weight instead
    quantises its input rows to int8 (a scale per block, into scratch past
    the planned workspace, once for the matmuls that read the same input one
    after another) and multiplies in integers with AVX-512 VNNI (vpdpbusd),
    16 output columns a vector, as llama.cpp does: not exact, but each row
    is computed alone, so the logits do not depend on the batch. With
    `int8-products=avx2` AVX2's vpmaddubsw and vpmaddwd compute the same
    integer sums, so the same logits. The weight
    is packed per tile of 16 columns for it (CpuInt8Matmul.cpp); so are a
    mixture of experts' when every expert's sizes are multiples of 16. The host
    must have the instructions (`llmc compile --int8-activations` picks VNNI,
    else AVX2).

    Matrix products use the `matmul` strategy: `generated` (the default)
    emits register-tiled vector loops that read each weight once per call
    and sum every output in the same order whatever the number of rows, so
    that a sequence's logits do not depend on the rest of the batch. An f32
    weight that only its matmul reads, with whole vectors of output
    columns, is stored in panels of 48 columns, k after k, and multiplied
    as outer products (8 rows x 48 columns of accumulators, x[r, k]
    broadcast; CpuPanelMatmul.cpp); an embedding table tied to the logits
    head is stored once, in the head's panels, and the embedding gathers
    from them. Quantised weights keep [out, in] rows and dot-product tiles
    of 4 x 4 outputs. `blas` calls the runtime's sgemm
    through the host API table (OpenBLAS), not batch-invariant
    (bench/RESULTS.md).
    With `weight-dtype=bf16` or `f16` the generated matmul's f32 weights
    (linear layers, the logits head and embedding tables; not norms or
    biases) are stored in weights.bin as bf16 or f16, rounded to nearest
    even, and widened to f32 as they are loaded (f16 by vcvtph2ps): half
    the bytes a decode step streams, and the product of the f32
    activations and the rounded weights computed in f32 exactly as the f32
    path computes it. `weight-dtype=auto` stores each weight in the first
    of f16, bf16 and f32 that holds all its values, so nothing is rounded:
    a half-precision export, which onnx-promote-to-f32 widened, narrows
    back. `bf16-activations` adds
    AVX512_BF16 products: each matmul input row is rounded to bf16 (to
    nearest even) once, into the scratch, the weight's panels hold pairs
    of k, and vdpbf16ps adds the products of 32 bf16 pairs per instruction
    into f32 lanes (a row's pair broadcast), twice the products of an f32
    fma, summed in the same order whatever the rows (batch-invariant, not
    exact).
    Matmuls whose inner dimension is not a multiple of 32 keep f32
    products. With `bf16-products=amx` (a host with AMX-BF16) the
    matmuls over panels multiply with AMX tiles instead: the rounded rows
    padded with zeros to whole tiles of 16, each 16 pairs of k one tile
    load of the rows, one of each 16 columns' pairs straight from the
    panel and a TDPBF16PS into 16 x 16 f32 sums, for every row count
    (still batch-invariant; the k loop unrolled, since tiles live in
    registers only within a block). Paged attention multiplies on tiles
    too where it fits them (head_dim a multiple of 32, blocks of 16, an
    f32 or bf16 cache, no softcap or ALiBi; CpuTileAttention.cpp): a tile
    of (position, query head) rows rounded to bf16 times a block's keys,
    then the softmax weights rounded to bf16 times its values; softmax and
    accumulators stay f32, a decode row is a tile of one position, so its
    bits are a prefill's. The host process must be granted the tile state
    (Linux's arch_prctl; the runtime asks for it).
    With `avx512` (a target with AVX-512F) the exact product reads packed
    4-bit codes through their block's 16 values, (c - zero_point) * scale
    for c = 0..15 computed once per block and looked up with vpermps: the
    same values, in one instruction where converting, offsetting and
    scaling each code takes three.
    Only f32 models are lowered; other element types are refused by name.
  }];
  let options = [
    Option<"matmul", "matmul", "std::string", /*default=*/"\"generated\"",
           "How matrix products run: generated (loops) or blas (the runtime's sgemm)">,
    Option<"packQuantized", "pack-quantized", "bool", /*default=*/"true",
           "Keep block-quantised weights packed for the generated kernels (else widen to f32)">,
    Option<"int8Activations", "int8-activations", "bool", /*default=*/"false",
           "Multiply packed quantised weights by int8-quantised activations">,
    Option<"int8Products", "int8-products", "std::string", /*default=*/"\"avx512-vnni\"",
           "The instructions of int8-activations' products: avx512-vnni or avx2 (the same "
           "sums)">,
    Option<"weightDtype", "weight-dtype", "std::string", /*default=*/"\"f32\"",
           "How the generated matmul stores f32 weights in weights.bin: f32, bf16 or f16 "
           "(rounded to nearest even, widened to f32 in registers), or auto (each weight "
           "in the first of f16, bf16 and f32 that holds it exactly; llmc compile's "
           "default)">,
    Option<"avx512", "avx512", "bool", /*default=*/"false",
           "The target has AVX-512F (llmc compile sets it from the host): packed 4-bit "
           "codes dequantise through a lookup in their block's 16 values (vpermps)">,
    Option<"bf16Activations", "bf16-activations", "bool", /*default=*/"false",
           "With weight-dtype=bf16: multiply bf16 pairs (AVX512_BF16), the activations "
           "rounded to bf16 per row, where the inner dimension is a multiple of 32">,
    Option<"bf16Products", "bf16-products", "std::string", /*default=*/"\"avx512-bf16\"",
           "The instructions of bf16-activations' products over panels: avx512-bf16 "
           "(vdpbf16ps) or amx (TDPBF16PS tiles of 16 rows)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
                           "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::vector::VectorDialect", "::mlir::amx::AMXDialect"];
}

#endif // LLMC_PASSES_CODEGENCPU_PASSES
