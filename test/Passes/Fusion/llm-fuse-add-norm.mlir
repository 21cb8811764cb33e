// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-add-norm))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-add-norm))' -debug-only=llm-fuse-add-norm -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// A miss says why under -debug-only:
// WHY: [llm-fuse-add-norm] {{.*}}: no match: the add broadcasts an operand

// The residual add and the norm become one op; its sum replaces the add
// for the add's other users (the next residual).
// CHECK-LABEL: func.func @rms
//  CHECK-SAME:   (%[[A:.*]]: tensor<?x8xf32>, %[[B:.*]]: tensor<?x8xf32>)
//       CHECK:   %[[SUM:.*]], %[[NORMED:.*]] = llm.add_rms_norm %[[A]], %[[B]], %{{.*}} {epsilon = 9.99999974E-6 : f32}
//   CHECK-NOT:   llm.add
//       CHECK:   return %[[SUM]], %[[NORMED]]
func.func @rms(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %w = llm.constant dense<1.0> : tensor<8xf32>
  %sum = llm.add %a, %b : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %n = llm.rms_norm %sum, %w {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %sum, %n : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// LayerNorm too, with and without a bias; the weight defined after the add
// is moved before it.
// CHECK-LABEL: func.func @layer
//   CHECK-DAG:   %[[BIAS:.*]] = llm.constant dense<5.000000e-01>
//   CHECK-DAG:   %[[W:.*]] = llm.constant dense<1.000000e+00>
//       CHECK:   %{{.*}}, %[[N:.*]] = llm.add_layer_norm %{{.*}}, %{{.*}}, %[[W]], %[[BIAS]]
//       CHECK:   return %[[N]]
func.func @layer(%a: tensor<?x8xf32>, %b: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %bias = llm.constant dense<0.5> : tensor<8xf32>
  %sum = llm.add %a, %b : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %w = llm.constant dense<1.0> : tensor<8xf32>
  %n = llm.layer_norm %sum, %w, %bias {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %n : tensor<?x8xf32>
}

// -----

// Not fused: a norm of something other than an add, an add that
// broadcasts, and a norm whose weight is computed after the add.
// CHECK-LABEL: func.func @not_fused
//   CHECK-NOT:   llm.add_rms_norm
//       CHECK:   llm.rms_norm
//       CHECK:   llm.add
//       CHECK:   llm.rms_norm
//       CHECK:   llm.add
//       CHECK:   llm.rms_norm
//   CHECK-NOT:   llm.add_rms_norm
func.func @not_fused(%a: tensor<?x8xf32>, %row: tensor<8xf32>, %w: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %c = llm.constant dense<1.0> : tensor<8xf32>
  %0 = llm.rms_norm %a, %c {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %1 = llm.add %a, %row : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %2 = llm.rms_norm %1, %c {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %3 = llm.add %a, %a : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %w2 = llm.mul %w, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %4 = llm.rms_norm %3, %w2 {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %0, %2, %4 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}
