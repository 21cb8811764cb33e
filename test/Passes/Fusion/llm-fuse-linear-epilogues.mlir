// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-linear-epilogues))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-linear-epilogues{gated=false}))' | FileCheck %s --check-prefix=NOGATE
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-linear-epilogues))' -debug-only=llm-fuse-linear-epilogues -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// A miss says why under -debug-only:
// WHY: [llm-fuse-linear-epilogues] {{.*}}: no match: gate or up has other users

// SwiGLU of the two halves of a joined gate/up linear: one gated GEMM whose
// epilogue is silu(gate) * up.
// CHECK-LABEL: func.func @swiglu_halves
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x8xf32>)
//       CHECK:   %[[Y:.*]] = llm.fused_linear %[[X]], %{{.*}} {gated} : (tensor<?x8xf32>, tensor<8x32xf32>) -> tensor<?x16xf32> {
//       CHECK:   ^bb0(%[[G:.*]]: f32, %[[U:.*]]: f32):
//       CHECK:     %[[NEG:.*]] = arith.negf %[[G]]
//       CHECK:     math.exp %[[NEG]]
//       CHECK:     %[[SILU:.*]] = arith.divf %[[G]]
//       CHECK:     %[[OUT:.*]] = arith.mulf %[[SILU]], %[[U]]
//       CHECK:     llm.yield %[[OUT]] : f32
//   CHECK-NOT:   llm.split
//   CHECK-NOT:   llm.swiglu
//       CHECK:   return %[[Y]]
// Without gated epilogues the swiglu stays (the split's linear has no bias
// to fold either).
// NOGATE-LABEL: func.func @swiglu_halves
//       NOGATE:   llm.split
//       NOGATE:   llm.swiglu
func.func @swiglu_halves(%x: tensor<?x8xf32>) -> tensor<?x16xf32> {
  %w = llm.constant dense<1.0> : tensor<8x32xf32>
  %p = llm.linear %x, %w : (tensor<?x8xf32>, tensor<8x32xf32>) -> tensor<?x32xf32>
  %s:2 = llm.split %p {sizes = array<i64: 16, 16>} : (tensor<?x32xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>)
  %y = llm.swiglu %s#0, %s#1 : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// SwiGLU of two separate linears of one input: their weights are joined.
// CHECK-LABEL: func.func @swiglu_two_linears
//       CHECK:   %[[W:.*]] = llm.constant dense_resource<fused> : tensor<32x8xf32>
//       CHECK:   llm.fused_linear %{{.*}}, %[[W]] {gated, transpose_weight}
func.func @swiglu_two_linears(%x: tensor<?x8xf32>) -> tensor<?x16xf32> {
  %wg = llm.constant dense<1.0> : tensor<16x8xf32>
  %wu = llm.constant dense<2.0> : tensor<16x8xf32>
  %g = llm.linear %x, %wg {transpose_weight} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %u = llm.linear %x, %wu {transpose_weight} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %y = llm.swiglu %g, %u : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

// GELU of a linear with a bias, then a residual add: one GEMM whose
// epilogue takes the bias-added accumulator and the residual.
// CHECK-LABEL: func.func @gelu_residual
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x8xf32>, %[[R:.*]]: tensor<?x8xf32>)
//       CHECK:   llm.fused_linear %[[X]], %{{.*}} bias(%{{.*}}) extras(%[[R]]) : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32> {
//       CHECK:   ^bb0(%[[ACC:.*]]: f32, %[[RES:.*]]: f32):
//       CHECK:     math.erf
//       CHECK:     %[[G:.*]] = arith.mulf
//       CHECK:     %[[SUM:.*]] = arith.addf %[[G]], %[[RES]]
//       CHECK:     llm.yield %[[SUM]]
//   CHECK-NOT:   llm.gelu
//   CHECK-NOT:   llm.add
func.func @gelu_residual(%x: tensor<?x8xf32>, %r: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %w = llm.constant dense<1.0> : tensor<8x8xf32>
  %b = llm.constant dense<0.5> : tensor<8xf32>
  %p = llm.linear %x, %w, %b : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %a = llm.gelu %p : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %y = llm.add %a, %r : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// A bias alone goes into the epilogue; an identity body yields the sum.
// CHECK-LABEL: func.func @bias
//       CHECK:   llm.fused_linear %{{.*}}, %{{.*}} bias(%{{.*}}) : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32> {
//  CHECK-NEXT:   ^bb0(%[[ACC:.*]]: f32):
//  CHECK-NEXT:     llm.yield %[[ACC]] : f32
func.func @bias(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %w = llm.constant dense<1.0> : tensor<8x8xf32>
  %b = llm.constant dense<0.5> : tensor<8xf32>
  %p = llm.linear %x, %w, %b : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %p : tensor<?x8xf32>
}

// -----

// Not fused: the linear's result has another user; the activation reads
// something other than a GEMM; gate and up of different inputs.
// CHECK-LABEL: func.func @not_fused
//   CHECK-NOT:   llm.fused_linear
//       CHECK:   llm.silu
//       CHECK:   llm.silu
//       CHECK:   llm.swiglu
func.func @not_fused(%x: tensor<?x8xf32>, %z: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %w = llm.constant dense<1.0> : tensor<8x8xf32>
  %p = llm.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %a = llm.silu %p : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %b = llm.silu %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %g = llm.linear %z, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %c = llm.swiglu %g, %x : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %p, %a, %b, %c : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}
