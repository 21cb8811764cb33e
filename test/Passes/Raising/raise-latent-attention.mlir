// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' 2>/dev/null | FileCheck %s

// Multi-head latent attention's glue (DeepSeek-V2/V3 with rope_interleave).
// Each head's features viewed as [2, 2], transposed and flattened back (0, 2,
// 1, 3): the permutation is folded into the projection's constant columns,
// head by head, and the heads are the projection's split_heads again.
// CHECK-LABEL: func.func @deinterleaved_heads
//       CHECK:   %[[W:.*]] = llm.constant dense<{{\[\[}}0.000000e+00, 2.000000e+00, 1.000000e+00, 3.000000e+00, 4.000000e+00, 6.000000e+00, 5.000000e+00, 7.000000e+00]]> : tensor<1x8xf32>
//       CHECK:   %[[P:.*]] = llm.linear %arg0, %[[W]]
//       CHECK:   %[[H:.*]] = llm.split_heads %[[P]] {num_heads = 2 : i64}
//       CHECK:   return %[[H]]
func.func @deinterleaved_heads(%x: tensor<?x?x1xf32>) -> tensor<?x2x?x4xf32> {
  %w = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]> : tensor<1x8xf32>
  %p = llm.linear %x, %w : (tensor<?x?x1xf32>, tensor<1x8xf32>) -> tensor<?x?x8xf32>
  %h = llm.split_heads %p {num_heads = 2 : i64} : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
  %s5 = onnx.Constant dense<[0, 0, 0, 2, 2]> : tensor<5xi64>
  %v = onnx.Reshape %h, %s5 : (tensor<?x2x?x4xf32>, tensor<5xi64>) -> tensor<?x2x?x2x2xf32>
  %t = onnx.Transpose %v {perm = array<i64: 0, 1, 2, 4, 3>} : (tensor<?x2x?x2x2xf32>) -> tensor<?x2x?x2x2xf32>
  %s4 = onnx.Constant dense<[0, 0, 0, 4]> : tensor<4xi64>
  %r = onnx.Reshape %t, %s4 : (tensor<?x2x?x2x2xf32>, tensor<4xi64>) -> tensor<?x2x?x4xf32>
  return %r : tensor<?x2x?x4xf32>
}

// -----

// The rotary key: the last 4 columns of a projection, viewed as one head. Only
// that part's columns are reordered (2, 4, 3, 5); the first part's stay.
// CHECK-LABEL: func.func @deinterleaved_part_as_one_head
//       CHECK:   %[[W:.*]] = llm.constant dense<{{\[\[}}0.000000e+00, 1.000000e+00, 2.000000e+00, 4.000000e+00, 3.000000e+00, 5.000000e+00]]> : tensor<1x6xf32>
//       CHECK:   %[[P:.*]] = llm.linear %arg0, %[[W]]
//       CHECK:   %[[PARTS:.*]]:2 = llm.split %[[P]] {sizes = array<i64: 2, 4>}
//       CHECK:   %[[H:.*]] = llm.split_heads %[[PARTS]]#1 {num_heads = 1 : i64}
//       CHECK:   return %[[PARTS]]#0, %[[H]]
func.func @deinterleaved_part_as_one_head(%x: tensor<?x?x1xf32>) -> (tensor<?x?x2xf32>, tensor<?x1x?x4xf32>) {
  %w = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]]> : tensor<1x6xf32>
  %p = llm.linear %x, %w : (tensor<?x?x1xf32>, tensor<1x6xf32>) -> tensor<?x?x6xf32>
  %parts:2 = llm.split %p {sizes = array<i64: 2, 4>} : (tensor<?x?x6xf32>) -> (tensor<?x?x2xf32>, tensor<?x?x4xf32>)
  %one = onnx.Constant dense<[0, 1, -1, 4]> : tensor<4xi64>
  %h = onnx.Reshape %parts#1, %one : (tensor<?x?x4xf32>, tensor<4xi64>) -> tensor<?x1x?x4xf32>
  %s5 = onnx.Constant dense<[0, 0, 0, 2, 2]> : tensor<5xi64>
  %v = onnx.Reshape %h, %s5 : (tensor<?x1x?x4xf32>, tensor<5xi64>) -> tensor<?x1x?x2x2xf32>
  %t = onnx.Transpose %v {perm = array<i64: 0, 1, 2, 4, 3>} : (tensor<?x1x?x2x2xf32>) -> tensor<?x1x?x2x2xf32>
  %s4 = onnx.Constant dense<[0, 0, 0, 4]> : tensor<4xi64>
  %r = onnx.Reshape %t, %s4 : (tensor<?x1x?x2x2xf32>, tensor<4xi64>) -> tensor<?x1x?x4xf32>
  return %parts#0, %r : tensor<?x?x2xf32>, tensor<?x1x?x4xf32>
}

// -----

// Near miss: the heads are also read as they are, so the projection's
// columns cannot be reordered for the view alone; the view stays.
// CHECK-LABEL: func.func @heads_read_unpermuted
//       CHECK:   onnx.Transpose
func.func @heads_read_unpermuted(%x: tensor<?x?x1xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) {
  %w = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]]> : tensor<1x8xf32>
  %p = llm.linear %x, %w : (tensor<?x?x1xf32>, tensor<1x8xf32>) -> tensor<?x?x8xf32>
  %h = llm.split_heads %p {num_heads = 2 : i64} : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
  %s5 = onnx.Constant dense<[0, 0, 0, 2, 2]> : tensor<5xi64>
  %v = onnx.Reshape %h, %s5 : (tensor<?x2x?x4xf32>, tensor<5xi64>) -> tensor<?x2x?x2x2xf32>
  %t = onnx.Transpose %v {perm = array<i64: 0, 1, 2, 4, 3>} : (tensor<?x2x?x2x2xf32>) -> tensor<?x2x?x2x2xf32>
  %s4 = onnx.Constant dense<[0, 0, 0, 4]> : tensor<4xi64>
  %r = onnx.Reshape %t, %s4 : (tensor<?x2x?x2x2xf32>, tensor<4xi64>) -> tensor<?x2x?x4xf32>
  return %r, %h : tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>
}

// -----

// Near miss: a projection by a weight computed at run time has no constant
// columns to reorder.
// CHECK-LABEL: func.func @runtime_weight
//       CHECK:   onnx.Transpose
func.func @runtime_weight(%x: tensor<?x?x1xf32>, %w: tensor<1x8xf32>) -> tensor<?x2x?x4xf32> {
  %p = llm.linear %x, %w : (tensor<?x?x1xf32>, tensor<1x8xf32>) -> tensor<?x?x8xf32>
  %h = llm.split_heads %p {num_heads = 2 : i64} : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
  %s5 = onnx.Constant dense<[0, 0, 0, 2, 2]> : tensor<5xi64>
  %v = onnx.Reshape %h, %s5 : (tensor<?x2x?x4xf32>, tensor<5xi64>) -> tensor<?x2x?x2x2xf32>
  %t = onnx.Transpose %v {perm = array<i64: 0, 1, 2, 4, 3>} : (tensor<?x2x?x2x2xf32>) -> tensor<?x2x?x2x2xf32>
  %s4 = onnx.Constant dense<[0, 0, 0, 4]> : tensor<4xi64>
  %r = onnx.Reshape %t, %s4 : (tensor<?x2x?x2x2xf32>, tensor<4xi64>) -> tensor<?x2x?x4xf32>
  return %r : tensor<?x2x?x4xf32>
}

// -----

// The key: each head's features without rotation, then the one rotary head
// that Expand copies to every head -> llm.concat_heads of that one head.
// CHECK-LABEL: func.func @key_of_shared_rotary_head
//       CHECK:   %[[NOPE:.*]] = llm.split_heads %{{.*}} {num_heads = 2 : i64}
//       CHECK:   %[[PE:.*]] = llm.split_heads %{{.*}} {num_heads = 1 : i64}
//       CHECK:   %[[KEY:.*]] = llm.concat_heads %[[NOPE]], %[[PE]] : (tensor<?x2x?x4xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x6xf32>
//       CHECK:   return %[[KEY]]
func.func @key_of_shared_rotary_head(%x: tensor<?x?x1xf32>) -> tensor<?x2x?x6xf32> {
  %wn = onnx.Constant dense<0.5> : tensor<1x8xf32>
  %wr = onnx.Constant dense<0.25> : tensor<1x2xf32>
  %n = llm.linear %x, %wn : (tensor<?x?x1xf32>, tensor<1x8xf32>) -> tensor<?x?x8xf32>
  %nope = llm.split_heads %n {num_heads = 2 : i64} : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
  %r = llm.linear %x, %wr : (tensor<?x?x1xf32>, tensor<1x2xf32>) -> tensor<?x?x2xf32>
  %pe = llm.split_heads %r {num_heads = 1 : i64} : (tensor<?x?x2xf32>) -> tensor<?x1x?x2xf32>
  %heads = onnx.Constant dense<[1, 2, 1, 1]> : tensor<4xi64>
  %every = onnx.Expand %pe, %heads : (tensor<?x1x?x2xf32>, tensor<4xi64>) -> tensor<?x2x?x2xf32>
  %key = onnx.Concat %nope, %every {axis = -1 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x6xf32>
  return %key : tensor<?x2x?x6xf32>
}

// -----

// Near miss: a part that is not raised (an onnx op computes it) is left to
// the patterns that may raise it; the concat stays.
// CHECK-LABEL: func.func @unraised_part
//       CHECK:   onnx.Concat
func.func @unraised_part(%x: tensor<?x?x1xf32>, %y: tensor<?x2x?x2xf32>) -> tensor<?x2x?x6xf32> {
  %wn = onnx.Constant dense<0.5> : tensor<1x8xf32>
  %n = llm.linear %x, %wn : (tensor<?x?x1xf32>, tensor<1x8xf32>) -> tensor<?x?x8xf32>
  %nope = llm.split_heads %n {num_heads = 2 : i64} : (tensor<?x?x8xf32>) -> tensor<?x2x?x4xf32>
  %pe = onnx.Neg %y : (tensor<?x2x?x2xf32>) -> tensor<?x2x?x2xf32>
  %key = onnx.Concat %nope, %pe {axis = -1 : i64} : (tensor<?x2x?x4xf32>, tensor<?x2x?x2xf32>) -> tensor<?x2x?x6xf32>
  return %key : tensor<?x2x?x6xf32>
}
