// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-elementwise))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-elementwise{recompute}))' | FileCheck %s --check-prefix=RECOMPUTE
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-elementwise))' -debug-only=llm-fuse-elementwise -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// A miss says why under -debug-only:
// WHY: [llm-fuse-elementwise] {{.*}}: no match: no operand is a GEMM result used only here

// QuickGELU, x * sigmoid(1.702 x), as raising leaves an activation it has
// no name for, then times `up`: one body, one kernel.
// CHECK-LABEL: func.func @chain
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x8xf32>, %[[UP:.*]]: tensor<?x8xf32>)
//       CHECK:   %[[Y:.*]] = llm.elementwise %[[UP]], %[[X]] : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32> {
//       CHECK:   ^bb0(%[[U:.*]]: f32, %[[V:.*]]: f32):
//       CHECK:     %[[C:.*]] = arith.constant 1.702
//       CHECK:     %[[S:.*]] = arith.mulf %[[V]], %[[C]]
//       CHECK:     math.exp
//       CHECK:     %[[GATE:.*]] = arith.mulf %[[V]], %{{.*}}
//       CHECK:     %[[OUT:.*]] = arith.mulf %[[GATE]], %[[U]]
//       CHECK:     llm.yield %[[OUT]]
//   CHECK-NOT:   llm.elementwise
//   CHECK-NOT:   llm.mul
//       CHECK:   return %[[Y]]
func.func @chain(%x: tensor<?x8xf32>, %up: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %s = llm.elementwise %x : (tensor<?x8xf32>) -> tensor<?x8xf32> {
  ^bb0(%v: f32):
    %c = arith.constant 1.702 : f32
    %m = arith.mulf %v, %c : f32
    llm.yield %m : f32
  }
  %sig = llm.elementwise %s : (tensor<?x8xf32>) -> tensor<?x8xf32> {
  ^bb0(%v: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %v : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %r = arith.divf %one, %d : f32
    llm.yield %r : f32
  }
  %g = llm.mul %x, %sig : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %y = llm.mul %g, %up : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// A chain that starts at a GEMM becomes its epilogue; per-column inputs
// become extras.
// CHECK-LABEL: func.func @into_gemm
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x8xf32>, %[[SCALE:.*]]: tensor<8xf32>)
//       CHECK:   llm.fused_linear %[[X]], %{{.*}} extras(%[[SCALE]]) : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32> {
//       CHECK:   ^bb0(%[[ACC:.*]]: f32, %[[S:.*]]: f32):
//       CHECK:     arith.maximumf %[[ACC]]
//       CHECK:     arith.mulf %{{.*}}, %[[S]]
//   CHECK-NOT:   llm.elementwise
func.func @into_gemm(%x: tensor<?x8xf32>, %scale: tensor<8xf32>) -> tensor<?x8xf32> {
  %w = llm.constant dense<1.0> : tensor<8x8xf32>
  %p = llm.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %relu = llm.elementwise %p : (tensor<?x8xf32>) -> tensor<?x8xf32> {
  ^bb0(%v: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %v, %z : f32
    llm.yield %m : f32
  }
  %y = llm.elementwise %relu, %scale : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32> {
  ^bb0(%v: f32, %s: f32):
    %m = arith.mulf %v, %s : f32
    llm.yield %m : f32
  }
  return %y : tensor<?x8xf32>
}

// -----

// A producer with two users is not inlined, unless with recompute: then
// each user gets its own copy and the producer goes.
// CHECK-LABEL: func.func @shared
//       CHECK:   %[[P:.*]] = llm.silu
//       CHECK:   llm.add %[[P]]
//       CHECK:   llm.mul %[[P]]
// RECOMPUTE-LABEL: func.func @shared
//   RECOMPUTE-NOT:   llm.silu
//       RECOMPUTE:   llm.elementwise
//       RECOMPUTE:   llm.elementwise
//   RECOMPUTE-NOT:   llm.silu
func.func @shared(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %p = llm.silu %x : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %a = llm.add %p, %y : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %b = llm.mul %p, %y : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %a, %b : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Qwen2-MoE's shared expert: its down projection times sigmoid of a gate
// with one value per row. The sigmoid is inlined (computed again for each
// column from the gate's [rows, 1]), but a GEMM's epilogue reads its extras
// per element or per column, so the product is not folded into the
// projection.
// CHECK-LABEL: func.func @scaled_by_a_value_per_row
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x8xf32>, %[[W:.*]]: tensor<8x8xf32>, %[[G:.*]]: tensor<?x1xf32>)
//       CHECK:   %[[D:.*]] = llm.linear %[[X]], %[[W]]
//       CHECK:   llm.elementwise %[[D]], %[[G]] : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
//       CHECK:     math.exp
//       CHECK:     arith.mulf
//   CHECK-NOT:   llm.fused_linear
func.func @scaled_by_a_value_per_row(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>, %gate: tensor<?x1xf32>) -> tensor<?x8xf32> {
  %down = llm.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %s = llm.elementwise %gate : (tensor<?x1xf32>) -> tensor<?x1xf32> {
  ^bb0(%v: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %v : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %r = arith.divf %one, %d : f32
    llm.yield %r : f32
  }
  %y = llm.elementwise %down, %s : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: f32, %b: f32):
    %m = arith.mulf %a, %b : f32
    llm.yield %m : f32
  }
  return %y : tensor<?x8xf32>
}
