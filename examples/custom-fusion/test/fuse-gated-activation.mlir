// The example plugin's pass on the ragged step's MLP as -O2 leaves it (gate/up fused into one
// llm.linear + llm.split, the activation and the product one llm.elementwise), and on what it
// must leave alone.
//
// RUN: %llmc-opt %s --load-pass-plugin=%plugin \
// RUN:   --pass-pipeline='builtin.module(func.func(llmc-example-fuse-gated-activation))' \
// RUN:   | FileCheck %s
// RUN: %llmc-opt %s --load-pass-plugin=%plugin \
// RUN:   --pass-pipeline='builtin.module(func.func(llmc-example-fuse-gated-activation))' \
// RUN:   -debug-only=llmc-example-fuse-gated-activation --mlir-disable-threading -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=WHY

// quick_gelu(gate) * up, with the inputs in the order -O2's fusion leaves them (up first).
// CHECK-LABEL: func.func @quick_gelu_mlp
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<?x8xf32>
// CHECK: %[[W:[a-z0-9_]+]] = llm.constant
// CHECK-NOT: llm.linear
// CHECK-NOT: llm.split
// CHECK: %[[Y:[a-z0-9_]+]] = llm.fused_linear %[[X]], %[[W]] {gated}
// CHECK-SAME: -> tensor<?x16xf32> {
// CHECK-NEXT: ^bb0(%[[GATE:[a-z0-9_]+]]: f32, %[[UP:[a-z0-9_]+]]: f32):
// CHECK-DAG: %[[ALPHA:[a-z0-9_]+]] = arith.constant 1.702
// CHECK: arith.mulf %[[GATE]], %[[ALPHA]]
// CHECK: math.exp
// CHECK: %[[ACT:[a-z0-9_]+]] = arith.mulf %[[GATE]], %{{[a-z0-9_]+}}
// CHECK-NEXT: %[[OUT:[a-z0-9_]+]] = arith.mulf %[[ACT]], %[[UP]]
// CHECK-NEXT: llm.yield %[[OUT]] : f32
// CHECK-NOT: llm.elementwise
// CHECK: return %[[Y]]
func.func @quick_gelu_mlp(%x: tensor<?x8xf32>) -> tensor<?x16xf32> {
  %w = llm.constant dense<0.5> : tensor<8x32xf32>
  %product = llm.linear %x, %w : (tensor<?x8xf32>, tensor<8x32xf32>) -> tensor<?x32xf32>
  %halves:2 = llm.split %product {sizes = array<i64: 16, 16>} : (tensor<?x32xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>)
  %y = llm.elementwise %halves#1, %halves#0 : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32> {
  ^bb0(%up: f32, %gate: f32):
    %alpha = arith.constant 1.702 : f32
    %z = arith.mulf %gate, %alpha : f32
    %neg = arith.negf %z : f32
    %exp = math.exp %neg : f32
    %one = arith.constant 1.0 : f32
    %den = arith.addf %one, %exp : f32
    %sig = arith.divf %one, %den : f32
    %act = arith.mulf %gate, %sig : f32
    %out = arith.mulf %act, %up : f32
    llm.yield %out : f32
  }
  return %y : tensor<?x16xf32>
}

// A bias and a transposed weight carry over to the gated GEMM.
// CHECK-LABEL: func.func @biased_transposed
// CHECK: llm.fused_linear %{{.*}}, %{{.*}} bias(%{{.*}}) {gated, transpose_weight} : (tensor<?x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<?x16xf32>
func.func @biased_transposed(%x: tensor<?x8xf32>) -> tensor<?x16xf32> {
  %w = llm.constant dense<0.5> : tensor<32x8xf32>
  %b = llm.constant dense<0.25> : tensor<32xf32>
  %product = llm.linear %x, %w, %b {transpose_weight} : (tensor<?x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  %halves:2 = llm.split %product {sizes = array<i64: 16, 16>} : (tensor<?x32xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>)
  %y = llm.elementwise %halves#0, %halves#1 : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32> {
  ^bb0(%gate: f32, %up: f32):
    %r = arith.mulf %gate, %up : f32
    llm.yield %r : f32
  }
  return %y : tensor<?x16xf32>
}

// Left alone: a half with another user (the product must be stored anyway).
// CHECK-LABEL: func.func @half_used_twice
// CHECK: llm.linear
// CHECK: llm.split
// CHECK: llm.elementwise
// WHY: [llmc-example-fuse-gated-activation] {{.*}}: no match: a half of the split has other users
func.func @half_used_twice(%x: tensor<?x8xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>) {
  %w = llm.constant dense<0.5> : tensor<8x32xf32>
  %product = llm.linear %x, %w : (tensor<?x8xf32>, tensor<8x32xf32>) -> tensor<?x32xf32>
  %halves:2 = llm.split %product {sizes = array<i64: 16, 16>} : (tensor<?x32xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>)
  %y = llm.elementwise %halves#0, %halves#1 : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32> {
  ^bb0(%gate: f32, %up: f32):
    %r = arith.mulf %gate, %up : f32
    llm.yield %r : f32
  }
  return %y, %halves#1 : tensor<?x16xf32>, tensor<?x16xf32>
}

// Left alone: three columns ranges (Q/K/V), not a gate/up pair.
// CHECK-LABEL: func.func @unequal_split
// CHECK: llm.elementwise
// WHY: [llmc-example-fuse-gated-activation] {{.*}}: no match: the split is not into two equal halves
func.func @unequal_split(%x: tensor<?x8xf32>) -> tensor<?x16xf32> {
  %w = llm.constant dense<0.5> : tensor<8x40xf32>
  %product = llm.linear %x, %w : (tensor<?x8xf32>, tensor<8x40xf32>) -> tensor<?x40xf32>
  %parts:3 = llm.split %product {sizes = array<i64: 16, 16, 8>} : (tensor<?x40xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x8xf32>)
  %y = llm.elementwise %parts#0, %parts#1 : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32> {
  ^bb0(%gate: f32, %up: f32):
    %r = arith.mulf %gate, %up : f32
    llm.yield %r : f32
  }
  return %y : tensor<?x16xf32>
}
