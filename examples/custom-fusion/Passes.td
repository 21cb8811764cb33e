//===- Passes.td - the example plugin's passes -------------*- tablegen -*-===//
//
// Declared as llmc declares its own passes (passes/Fusion/Passes.td): mlir-tblgen
// -gen-pass-decls (llmc_add_pass_plugin's PASSES_TD) writes Passes.h.inc, with
// the pass's base class, its options struct and its registration.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_EXAMPLE_CUSTOM_FUSION_PASSES
#define LLMC_EXAMPLE_CUSTOM_FUSION_PASSES

include "mlir/Pass/PassBase.td"

def FuseGatedActivationPass
    : Pass<"llmc-example-fuse-gated-activation", "mlir::func::FuncOp"> {
  let summary = "Fuse a gated activation act(gate) * up into its gate/up GEMM's epilogue";
  let description = [{
    llmc's built-in fusions turn only `llm.swiglu` into a gated GEMM. A model
    whose MLP uses another gated activation (here QuickGELU:
    `quick_gelu(gate) * up` with quick_gelu(z) = z * sigmoid(1.702 z)) is,
    after -O2's fusions, one horizontally fused gate/up `llm.linear`, an
    `llm.split` into the two halves, and one `llm.elementwise` of the two
    halves: the [tokens, 2 * intermediate] product is written to memory and
    read back.

    This pass matches

      %p = llm.linear %x, %W, %bias      (or an llm.fused_linear with an
                                          identity epilogue, not gated)
      %gate, %up = llm.split %p {sizes = [m, m]}
      %y = llm.elementwise %gate, %up {body}   (inputs in either order)

    with each intermediate value used only by the next op, and replaces the
    three ops with

      %y = llm.fused_linear %x, %W, %bias {gated} {body on (gate, up)}

    whose epilogue is the elementwise body: the GEMM computes both halves'
    accumulators and applies the activation before storing the m columns of
    the result. The arithmetic per element is unchanged.

    Run it at the `before-lowering` extension point:
      llmc compile --load-pass-plugin=LlmcExampleFusion.so \
        --insert-passes=before-lowering=func.func(llmc-example-fuse-gated-activation)
  }];
  let dependentDialects = ["::llmc::llm::LlmDialect"];
}

#endif // LLMC_EXAMPLE_CUSTOM_FUSION_PASSES
