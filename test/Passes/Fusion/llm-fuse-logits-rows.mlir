// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-logits-rows,cse))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-logits-rows))' -debug-only=llm-fuse-logits-rows -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// A miss says why under -debug-only:
// WHY: [llm-fuse-logits-rows] {{.*}}: no match: the rows it gathers from have other users

// The gather moves above the final norm and the last MLP (row-wise ops),
// and stops at the residual stream, which has another user.
// CHECK-LABEL: func.func @head
//  CHECK-SAME:   (%[[H:.*]]: tensor<?x8xf32>, %[[IDX:.*]]: tensor<?xi32>)
//       CHECK:   %[[ROWS:.*]] = llm.gather_rows %[[H]], %[[IDX]]
//       CHECK:   %[[UP:.*]] = llm.linear %[[ROWS]]
//       CHECK:   %[[ACT:.*]] = llm.silu %[[UP]]
//       CHECK:   %[[DOWN:.*]] = llm.linear %[[ACT]]
//       CHECK:   %[[SUM:.*]] = llm.add %[[ROWS]], %[[DOWN]]
//       CHECK:   %[[NORM:.*]] = llm.rms_norm %[[SUM]]
//       CHECK:   llm.logits %[[NORM]]
//   CHECK-NOT:   llm.gather_rows
func.func @head(%h: tensor<?x8xf32>, %idx: tensor<?xi32>) -> tensor<?x16xf32> {
  %w1 = llm.constant dense<1.0> : tensor<8x8xf32>
  %w2 = llm.constant dense<2.0> : tensor<8x8xf32>
  %g = llm.constant dense<1.0> : tensor<8xf32>
  %head = llm.constant dense<1.0> : tensor<8x16xf32>
  %up = llm.linear %h, %w1 : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %act = llm.silu %up : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %down = llm.linear %act, %w2 : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %sum = llm.add %h, %down : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %norm = llm.rms_norm %sum, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %rows = llm.gather_rows %norm, %idx : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  %logits = llm.logits %rows, %head : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}

// -----

// Not moved: the gathered value has another user, and attention mixes
// tokens (the gather stays after it).
// CHECK-LABEL: func.func @stays
//       CHECK:   llm.rms_norm
//       CHECK:   llm.gather_rows
//       CHECK:   llm.merge_heads
//       CHECK:   llm.gather_rows
func.func @stays(%x: tensor<?x8xf32>, %idx: tensor<?xi32>, %heads: tensor<?x2x4xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %g = llm.constant dense<1.0> : tensor<8xf32>
  %norm = llm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %rows = llm.gather_rows %norm, %idx : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  %merged = llm.merge_heads %heads : (tensor<?x2x4xf32>) -> tensor<?x8xf32>
  %rows2 = llm.gather_rows %merged, %idx : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %norm, %rows, %rows2 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// A value the chain reads twice (QuickGELU's gate) is gathered twice on the
// way up; one op on the gathered rows then serves both.
// CHECK-LABEL: func.func @read_twice
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x8xf32>, %[[IDX:.*]]: tensor<?xi32>)
//       CHECK:   %[[ROWS:.*]] = llm.gather_rows %[[X]], %[[IDX]]
//       CHECK:   %[[GATE:.*]] = llm.linear %[[ROWS]]
//       CHECK:   %[[S:.*]] = llm.silu %[[GATE]]
//       CHECK:   llm.mul %[[GATE]], %[[S]]
//   CHECK-NOT:   llm.gather_rows
func.func @read_twice(%x: tensor<?x8xf32>, %idx: tensor<?xi32>) -> tensor<?x8xf32> {
  %w = llm.constant dense<1.0> : tensor<8x8xf32>
  %gate = llm.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %s = llm.silu %gate : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %m = llm.mul %gate, %s : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %rows = llm.gather_rows %m, %idx : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  return %rows : tensor<?x8xf32>
}
