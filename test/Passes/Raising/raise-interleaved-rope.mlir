// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' 2>/dev/null | FileCheck %s

// GPT-J's rotary, on the first 4 features of each head of [b, s, h, d] before the
// heads' transpose: cos and sin are the right and left columns of a sin|cos table's
// rows at the positions (GatherElements over the broadcast table), repeated
// pairwise. It becomes rope_cached, interleaved, of the transposed heads, with
// half-width caches of those columns.
// CHECK-LABEL: func.func @partial_rotary
//  CHECK-SAME:   (%[[X:.*]]: tensor<1x3x2x8xf32>, %[[POS:.*]]: tensor<1x3xi64>)
//   CHECK-DAG:   %[[COS:.*]] = llm.constant dense<{{\[}}[2.000000e+00, 3.000000e+00], [6.000000e+00, 7.000000e+00], [1.000000e+01, 1.100000e+01], [1.400000e+01, 1.500000e+01]]> : tensor<4x2xf32>
//   CHECK-DAG:   %[[SIN:.*]] = llm.constant dense<{{\[}}[0.000000e+00, 1.000000e+00], [4.000000e+00, 5.000000e+00], [8.000000e+00, 9.000000e+00], [1.200000e+01, 1.300000e+01]]> : tensor<4x2xf32>
//       CHECK:   %[[HEADS:.*]] = onnx.Transpose %[[X]] {perm = array<i64: 0, 2, 1, 3>}
//  CHECK-NEXT:   %[[ROPE:.*]] = llm.rope_cached %[[HEADS]], %[[POS]], %[[COS]], %[[SIN]] {interleaved} : (tensor<1x2x3x8xf32>, tensor<1x3xi64>, tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<1x2x3x8xf32>
//  CHECK-NEXT:   return %[[ROPE]]
func.func @partial_rotary(%x: tensor<1x3x2x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %table = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]> : tensor<4x4xf32>
  %ones = onnx.Constant dense<1> : tensor<3xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %three = onnx.Constant dense<3> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %rot_end = onnx.Constant dense<4> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %index_reps = onnx.Constant dense<[1, 1, 4]> : tensor<3xi64>
  %pair_reps = onnx.Constant dense<[1, 1, 1, 1, 2]> : tensor<5xi64>
  %paired_shape = onnx.Constant dense<[1, 3, 1, 4]> : tensor<4xi64>
  %rot_shape = onnx.Constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %halves = onnx.Constant dense<2> : tensor<2xi64>
  %expanded = onnx.Expand %table, %ones : (tensor<4x4xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  %rows = onnx.Tile %expanded, %ones : (tensor<1x4x4xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  %p1 = onnx.Unsqueeze %pos, %last : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x3x1xi64>
  %p2 = onnx.Expand %p1, %ones : (tensor<1x3x1xi64>, tensor<3xi64>) -> tensor<1x3x1xi64>
  %index = onnx.Tile %p2, %index_reps : (tensor<1x3x1xi64>, tensor<3xi64>) -> tensor<1x3x4xi64>
  %sincos = onnx.GatherElements %rows, %index {axis = 1 : i64} : (tensor<1x4x4xf32>, tensor<1x3x4xi64>) -> tensor<1x3x4xf32>
  %parts:2 = onnx.Split %sincos, %halves {axis = -1 : i64} : (tensor<1x3x4xf32>, tensor<2xi64>) -> (tensor<1x3x2xf32>, tensor<1x3x2xf32>)
  %sin1 = onnx.Unsqueeze %parts#0, %two : (tensor<1x3x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2xf32>
  %sin2 = onnx.Unsqueeze %sin1, %four : (tensor<1x3x1x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2x1xf32>
  %sin3 = onnx.Tile %sin2, %pair_reps : (tensor<1x3x1x2x1xf32>, tensor<5xi64>) -> tensor<1x3x1x2x2xf32>
  %sin = onnx.Reshape %sin3, %paired_shape : (tensor<1x3x1x2x2xf32>, tensor<4xi64>) -> tensor<1x3x1x4xf32>
  %cos1 = onnx.Unsqueeze %parts#1, %two : (tensor<1x3x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2xf32>
  %cos2 = onnx.Unsqueeze %cos1, %four : (tensor<1x3x1x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2x1xf32>
  %cos3 = onnx.Tile %cos2, %pair_reps : (tensor<1x3x1x2x1xf32>, tensor<5xi64>) -> tensor<1x3x1x2x2xf32>
  %cos = onnx.Reshape %cos3, %paired_shape : (tensor<1x3x1x2x2xf32>, tensor<4xi64>) -> tensor<1x3x1x4xf32>
  %rot = onnx.Slice %x, %zero, %rot_end, %three, %one : (tensor<1x3x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x4xf32>
  %pass = onnx.Slice %x, %rot_end, %end, %three, %one : (tensor<1x3x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x4xf32>
  %even = onnx.Slice %rot, %zero, %end, %three, %two : (tensor<1x3x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x2xf32>
  %odd = onnx.Slice %rot, %one, %end, %three, %two : (tensor<1x3x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x2xf32>
  %neg = onnx.Neg %odd : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %negs = onnx.Unsqueeze %neg, %last : (tensor<1x3x2x2xf32>, tensor<1xi64>) -> tensor<1x3x2x2x1xf32>
  %kept = onnx.Unsqueeze %even, %last : (tensor<1x3x2x2xf32>, tensor<1xi64>) -> tensor<1x3x2x2x1xf32>
  %stacked = onnx.Concat %negs, %kept {axis = -1 : i64} : (tensor<1x3x2x2x1xf32>, tensor<1x3x2x2x1xf32>) -> tensor<1x3x2x2x2xf32>
  %rotated = onnx.Reshape %stacked, %rot_shape : (tensor<1x3x2x2x2xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %direct = onnx.Mul %rot, %cos : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x3x2x4xf32>
  %turned = onnx.Mul %rotated, %sin : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x3x2x4xf32>
  %sum = onnx.Add %direct, %turned : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  %whole = onnx.Concat %sum, %pass {axis = -1 : i64} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x8xf32>
  %heads = onnx.Transpose %whole {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x8xf32>) -> tensor<1x2x3x8xf32>
  return %heads : tensor<1x2x3x8xf32>
}

// -----

// CodeGen's form of the table read, rows gathered by Gather and halves sliced, on
// the whole head.
// CHECK-LABEL: func.func @whole_head_gathered_rows
//       CHECK:   %[[HEADS:.*]] = onnx.Transpose %{{.*}} {perm = array<i64: 0, 2, 1, 3>}
//  CHECK-NEXT:   %[[ROPE:.*]] = llm.rope_cached %[[HEADS]], %{{.*}} {interleaved} : (tensor<1x2x3x8xf32>, tensor<1x3xi64>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<1x2x3x8xf32>
//  CHECK-NEXT:   return %[[ROPE]]
func.func @whole_head_gathered_rows(%x: tensor<1x3x2x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %table = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0], [24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]]> : tensor<4x8xf32>
  %ones = onnx.Constant dense<1> : tensor<3xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %three = onnx.Constant dense<3> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %rot_end = onnx.Constant dense<8> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %index_reps = onnx.Constant dense<[1, 1, 8]> : tensor<3xi64>
  %pair_reps = onnx.Constant dense<[1, 1, 1, 1, 2]> : tensor<5xi64>
  %paired_shape = onnx.Constant dense<[1, 3, 1, 8]> : tensor<4xi64>
  %rot_shape = onnx.Constant dense<[1, 3, 2, 8]> : tensor<4xi64>
  %halves = onnx.Constant dense<4> : tensor<2xi64>
  %sincos = onnx.Gather %table, %pos {axis = 0 : i64} : (tensor<4x8xf32>, tensor<1x3xi64>) -> tensor<1x3x8xf32>
  %half = onnx.Constant dense<4> : tensor<1xi64>
  %sin_half = onnx.Slice %sincos, %zero, %half, %last, %one : (tensor<1x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x4xf32>
  %cos_half = onnx.Slice %sincos, %half, %end, %last, %one : (tensor<1x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x4xf32>
  %sin1 = onnx.Unsqueeze %sin_half, %two : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<1x3x1x4xf32>
  %sin2 = onnx.Unsqueeze %sin1, %four : (tensor<1x3x1x4xf32>, tensor<1xi64>) -> tensor<1x3x1x4x1xf32>
  %sin3 = onnx.Tile %sin2, %pair_reps : (tensor<1x3x1x4x1xf32>, tensor<5xi64>) -> tensor<1x3x1x4x2xf32>
  %sin = onnx.Reshape %sin3, %paired_shape : (tensor<1x3x1x4x2xf32>, tensor<4xi64>) -> tensor<1x3x1x8xf32>
  %cos1 = onnx.Unsqueeze %cos_half, %two : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<1x3x1x4xf32>
  %cos2 = onnx.Unsqueeze %cos1, %four : (tensor<1x3x1x4xf32>, tensor<1xi64>) -> tensor<1x3x1x4x1xf32>
  %cos3 = onnx.Tile %cos2, %pair_reps : (tensor<1x3x1x4x1xf32>, tensor<5xi64>) -> tensor<1x3x1x4x2xf32>
  %cos = onnx.Reshape %cos3, %paired_shape : (tensor<1x3x1x4x2xf32>, tensor<4xi64>) -> tensor<1x3x1x8xf32>
  %even = onnx.Slice %x, %zero, %end, %three, %two : (tensor<1x3x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x4xf32>
  %odd = onnx.Slice %x, %one, %end, %three, %two : (tensor<1x3x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x4xf32>
  %neg = onnx.Neg %odd : (tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  %negs = onnx.Unsqueeze %neg, %last : (tensor<1x3x2x4xf32>, tensor<1xi64>) -> tensor<1x3x2x4x1xf32>
  %kept = onnx.Unsqueeze %even, %last : (tensor<1x3x2x4xf32>, tensor<1xi64>) -> tensor<1x3x2x4x1xf32>
  %stacked = onnx.Concat %negs, %kept {axis = -1 : i64} : (tensor<1x3x2x4x1xf32>, tensor<1x3x2x4x1xf32>) -> tensor<1x3x2x4x2xf32>
  %rotated = onnx.Reshape %stacked, %rot_shape : (tensor<1x3x2x4x2xf32>, tensor<4xi64>) -> tensor<1x3x2x8xf32>
  %direct = onnx.Mul %x, %cos : (tensor<1x3x2x8xf32>, tensor<1x3x1x8xf32>) -> tensor<1x3x2x8xf32>
  %turned = onnx.Mul %rotated, %sin : (tensor<1x3x2x8xf32>, tensor<1x3x1x8xf32>) -> tensor<1x3x2x8xf32>
  %sum = onnx.Add %direct, %turned : (tensor<1x3x2x8xf32>, tensor<1x3x2x8xf32>) -> tensor<1x3x2x8xf32>
  %heads = onnx.Transpose %sum {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x8xf32>) -> tensor<1x2x3x8xf32>
  return %heads : tensor<1x2x3x8xf32>
}

// -----

// Near miss: cos and sin tiled along the features rather than pairwise (the
// Tile repeats the new last axis 1 time): no rotation is raised.
// CHECK-LABEL: func.func @not_repeated_pairwise
//   CHECK-NOT:   llm.rope_cached
//       CHECK:   onnx.Transpose
func.func @not_repeated_pairwise(%x: tensor<1x3x2x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %table = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]> : tensor<4x4xf32>
  %ones = onnx.Constant dense<1> : tensor<3xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %three = onnx.Constant dense<3> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %rot_end = onnx.Constant dense<4> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %index_reps = onnx.Constant dense<[1, 1, 4]> : tensor<3xi64>
  %pair_reps = onnx.Constant dense<[1, 1, 1, 2, 1]> : tensor<5xi64>
  %paired_shape = onnx.Constant dense<[1, 3, 1, 4]> : tensor<4xi64>
  %rot_shape = onnx.Constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %halves = onnx.Constant dense<2> : tensor<2xi64>
  %expanded = onnx.Expand %table, %ones : (tensor<4x4xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  %rows = onnx.Tile %expanded, %ones : (tensor<1x4x4xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  %p1 = onnx.Unsqueeze %pos, %last : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x3x1xi64>
  %p2 = onnx.Expand %p1, %ones : (tensor<1x3x1xi64>, tensor<3xi64>) -> tensor<1x3x1xi64>
  %index = onnx.Tile %p2, %index_reps : (tensor<1x3x1xi64>, tensor<3xi64>) -> tensor<1x3x4xi64>
  %sincos = onnx.GatherElements %rows, %index {axis = 1 : i64} : (tensor<1x4x4xf32>, tensor<1x3x4xi64>) -> tensor<1x3x4xf32>
  %parts:2 = onnx.Split %sincos, %halves {axis = -1 : i64} : (tensor<1x3x4xf32>, tensor<2xi64>) -> (tensor<1x3x2xf32>, tensor<1x3x2xf32>)
  %sin1 = onnx.Unsqueeze %parts#0, %two : (tensor<1x3x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2xf32>
  %sin2 = onnx.Unsqueeze %sin1, %four : (tensor<1x3x1x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2x1xf32>
  %sin3 = onnx.Tile %sin2, %pair_reps : (tensor<1x3x1x2x1xf32>, tensor<5xi64>) -> tensor<1x3x1x4x1xf32>
  %sin = onnx.Reshape %sin3, %paired_shape : (tensor<1x3x1x4x1xf32>, tensor<4xi64>) -> tensor<1x3x1x4xf32>
  %cos1 = onnx.Unsqueeze %parts#1, %two : (tensor<1x3x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2xf32>
  %cos2 = onnx.Unsqueeze %cos1, %four : (tensor<1x3x1x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2x1xf32>
  %cos3 = onnx.Tile %cos2, %pair_reps : (tensor<1x3x1x2x1xf32>, tensor<5xi64>) -> tensor<1x3x1x4x1xf32>
  %cos = onnx.Reshape %cos3, %paired_shape : (tensor<1x3x1x4x1xf32>, tensor<4xi64>) -> tensor<1x3x1x4xf32>
  %rot = onnx.Slice %x, %zero, %rot_end, %three, %one : (tensor<1x3x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x4xf32>
  %pass = onnx.Slice %x, %rot_end, %end, %three, %one : (tensor<1x3x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x4xf32>
  %even = onnx.Slice %rot, %zero, %end, %three, %two : (tensor<1x3x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x2xf32>
  %odd = onnx.Slice %rot, %one, %end, %three, %two : (tensor<1x3x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x2xf32>
  %neg = onnx.Neg %odd : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %negs = onnx.Unsqueeze %neg, %last : (tensor<1x3x2x2xf32>, tensor<1xi64>) -> tensor<1x3x2x2x1xf32>
  %kept = onnx.Unsqueeze %even, %last : (tensor<1x3x2x2xf32>, tensor<1xi64>) -> tensor<1x3x2x2x1xf32>
  %stacked = onnx.Concat %negs, %kept {axis = -1 : i64} : (tensor<1x3x2x2x1xf32>, tensor<1x3x2x2x1xf32>) -> tensor<1x3x2x2x2xf32>
  %rotated = onnx.Reshape %stacked, %rot_shape : (tensor<1x3x2x2x2xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %direct = onnx.Mul %rot, %cos : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x3x2x4xf32>
  %turned = onnx.Mul %rotated, %sin : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x3x2x4xf32>
  %sum = onnx.Add %direct, %turned : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  %whole = onnx.Concat %sum, %pass {axis = -1 : i64} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x8xf32>
  %heads = onnx.Transpose %whole {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x8xf32>) -> tensor<1x2x3x8xf32>
  return %heads : tensor<1x2x3x8xf32>
}

// -----

// Near miss: each pair (a, b) turned to (b, -a), a rotation by minus the angle:
// no rotation is raised.
// CHECK-LABEL: func.func @turned_the_other_way
//   CHECK-NOT:   llm.rope_cached
//       CHECK:   onnx.Transpose
func.func @turned_the_other_way(%x: tensor<1x3x2x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %table = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0], [12.0, 13.0, 14.0, 15.0]]> : tensor<4x4xf32>
  %ones = onnx.Constant dense<1> : tensor<3xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %three = onnx.Constant dense<3> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %rot_end = onnx.Constant dense<4> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %index_reps = onnx.Constant dense<[1, 1, 4]> : tensor<3xi64>
  %pair_reps = onnx.Constant dense<[1, 1, 1, 1, 2]> : tensor<5xi64>
  %paired_shape = onnx.Constant dense<[1, 3, 1, 4]> : tensor<4xi64>
  %rot_shape = onnx.Constant dense<[1, 3, 2, 4]> : tensor<4xi64>
  %halves = onnx.Constant dense<2> : tensor<2xi64>
  %expanded = onnx.Expand %table, %ones : (tensor<4x4xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  %rows = onnx.Tile %expanded, %ones : (tensor<1x4x4xf32>, tensor<3xi64>) -> tensor<1x4x4xf32>
  %p1 = onnx.Unsqueeze %pos, %last : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x3x1xi64>
  %p2 = onnx.Expand %p1, %ones : (tensor<1x3x1xi64>, tensor<3xi64>) -> tensor<1x3x1xi64>
  %index = onnx.Tile %p2, %index_reps : (tensor<1x3x1xi64>, tensor<3xi64>) -> tensor<1x3x4xi64>
  %sincos = onnx.GatherElements %rows, %index {axis = 1 : i64} : (tensor<1x4x4xf32>, tensor<1x3x4xi64>) -> tensor<1x3x4xf32>
  %parts:2 = onnx.Split %sincos, %halves {axis = -1 : i64} : (tensor<1x3x4xf32>, tensor<2xi64>) -> (tensor<1x3x2xf32>, tensor<1x3x2xf32>)
  %sin1 = onnx.Unsqueeze %parts#0, %two : (tensor<1x3x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2xf32>
  %sin2 = onnx.Unsqueeze %sin1, %four : (tensor<1x3x1x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2x1xf32>
  %sin3 = onnx.Tile %sin2, %pair_reps : (tensor<1x3x1x2x1xf32>, tensor<5xi64>) -> tensor<1x3x1x2x2xf32>
  %sin = onnx.Reshape %sin3, %paired_shape : (tensor<1x3x1x2x2xf32>, tensor<4xi64>) -> tensor<1x3x1x4xf32>
  %cos1 = onnx.Unsqueeze %parts#1, %two : (tensor<1x3x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2xf32>
  %cos2 = onnx.Unsqueeze %cos1, %four : (tensor<1x3x1x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2x1xf32>
  %cos3 = onnx.Tile %cos2, %pair_reps : (tensor<1x3x1x2x1xf32>, tensor<5xi64>) -> tensor<1x3x1x2x2xf32>
  %cos = onnx.Reshape %cos3, %paired_shape : (tensor<1x3x1x2x2xf32>, tensor<4xi64>) -> tensor<1x3x1x4xf32>
  %rot = onnx.Slice %x, %zero, %rot_end, %three, %one : (tensor<1x3x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x4xf32>
  %pass = onnx.Slice %x, %rot_end, %end, %three, %one : (tensor<1x3x2x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x4xf32>
  %even = onnx.Slice %rot, %zero, %end, %three, %two : (tensor<1x3x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x2xf32>
  %odd = onnx.Slice %rot, %one, %end, %three, %two : (tensor<1x3x2x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x3x2x2xf32>
  %neg = onnx.Neg %even : (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>
  %negs = onnx.Unsqueeze %neg, %last : (tensor<1x3x2x2xf32>, tensor<1xi64>) -> tensor<1x3x2x2x1xf32>
  %kept = onnx.Unsqueeze %odd, %last : (tensor<1x3x2x2xf32>, tensor<1xi64>) -> tensor<1x3x2x2x1xf32>
  %stacked = onnx.Concat %kept, %negs {axis = -1 : i64} : (tensor<1x3x2x2x1xf32>, tensor<1x3x2x2x1xf32>) -> tensor<1x3x2x2x2xf32>
  %rotated = onnx.Reshape %stacked, %rot_shape : (tensor<1x3x2x2x2xf32>, tensor<4xi64>) -> tensor<1x3x2x4xf32>
  %direct = onnx.Mul %rot, %cos : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x3x2x4xf32>
  %turned = onnx.Mul %rotated, %sin : (tensor<1x3x2x4xf32>, tensor<1x3x1x4xf32>) -> tensor<1x3x2x4xf32>
  %sum = onnx.Add %direct, %turned : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x4xf32>
  %whole = onnx.Concat %sum, %pass {axis = -1 : i64} : (tensor<1x3x2x4xf32>, tensor<1x3x2x4xf32>) -> tensor<1x3x2x8xf32>
  %heads = onnx.Transpose %whole {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x8xf32>) -> tensor<1x2x3x8xf32>
  return %heads : tensor<1x2x3x8xf32>
}

// -----

// Helium's and GLM's rotary on [b, heads, s, d]: cos and sin are the first halves of
// transformers' full-width tables (cat(freqs, freqs)), repeated pairwise the way
// torch exports repeat_interleave by a repeats tensor (the features moved first,
// copied twice by Expand, gathered in (m / 2, m % 2) order by GatherND, moved back).
// It becomes llm.rope, interleaved, of the frequencies.
// CHECK-LABEL: func.func @halved_tables_repeated
//  CHECK-SAME:   (%[[X:.*]]: tensor<1x2x3x8xf32>, %[[POS:.*]]: tensor<1x3xi64>)
//       CHECK:   %[[F:.*]] = llm.constant dense<[1.000000e+00, 5.000000e-01, 2.500000e-01, 1.250000e-01]> : tensor<4xf32>
//       CHECK:   %[[ROPE:.*]] = llm.rope %[[X]], %[[POS]], %[[F]] {interleaved} : (tensor<1x2x3x8xf32>, tensor<1x3xi64>, tensor<4xf32>) -> tensor<1x2x3x8xf32>
//  CHECK-NEXT:   return %[[ROPE]]
func.func @halved_tables_repeated(%x: tensor<1x2x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %inv = onnx.Constant dense<[[[1.0], [0.5], [0.25], [0.125]]]> : tensor<1x4x1xf32>
  %axis1 = onnx.Constant dense<1> : tensor<1xi64>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %three = onnx.Constant dense<3> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %rot_shape = onnx.Constant dense<[1, 2, 3, 8]> : tensor<4xi64>
  %p1 = onnx.Unsqueeze %pos, %axis1 : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x1x3xi64>
  %posf = onnx.Cast %p1 {to = 1 : i64} : (tensor<1x1x3xi64>) -> tensor<1x1x3xf32>
  %prod = onnx.MatMul %inv, %posf : (tensor<1x4x1xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %expand_shape = onnx.Constant dense<[4, 2, 1, 3, 1]> : tensor<5xi64>
  %tuples = onnx.Constant dense<[[0, 0], [0, 1], [1, 0], [1, 1], [2, 0], [2, 1], [3, 0], [3, 1]]> : tensor<8x2xi64>
  %freqs = onnx.Transpose %prod {perm = array<i64: 0, 2, 1>} : (tensor<1x4x3xf32>) -> tensor<1x3x4xf32>
  %emb = onnx.Concat %freqs, %freqs {axis = -1 : i64} : (tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
  %cos_full = onnx.Cos %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %cos_heads = onnx.Unsqueeze %cos_full, %axis1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %cos_half = onnx.Slice %cos_heads, %zero, %four, %three, %one : (tensor<1x1x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %cos_front = onnx.Transpose %cos_half {perm = array<i64: 3, 1, 2, 0>} : (tensor<1x1x3x4xf32>) -> tensor<4x1x3x1xf32>
  %cos_spread = onnx.Unsqueeze %cos_front, %axis1 : (tensor<4x1x3x1xf32>, tensor<1xi64>) -> tensor<4x1x1x3x1xf32>
  %cos_copies = onnx.Expand %cos_spread, %expand_shape : (tensor<4x1x1x3x1xf32>, tensor<5xi64>) -> tensor<4x2x1x3x1xf32>
  %cos_gathered = onnx.GatherND %cos_copies, %tuples : (tensor<4x2x1x3x1xf32>, tensor<8x2xi64>) -> tensor<8x1x3x1xf32>
  %cos = onnx.Transpose %cos_gathered {perm = array<i64: 3, 1, 2, 0>} : (tensor<8x1x3x1xf32>) -> tensor<1x1x3x8xf32>
  %sin_full = onnx.Sin %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %sin_heads = onnx.Unsqueeze %sin_full, %axis1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %sin_half = onnx.Slice %sin_heads, %zero, %four, %three, %one : (tensor<1x1x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %sin_front = onnx.Transpose %sin_half {perm = array<i64: 3, 1, 2, 0>} : (tensor<1x1x3x4xf32>) -> tensor<4x1x3x1xf32>
  %sin_spread = onnx.Unsqueeze %sin_front, %axis1 : (tensor<4x1x3x1xf32>, tensor<1xi64>) -> tensor<4x1x1x3x1xf32>
  %sin_copies = onnx.Expand %sin_spread, %expand_shape : (tensor<4x1x1x3x1xf32>, tensor<5xi64>) -> tensor<4x2x1x3x1xf32>
  %sin_gathered = onnx.GatherND %sin_copies, %tuples : (tensor<4x2x1x3x1xf32>, tensor<8x2xi64>) -> tensor<8x1x3x1xf32>
  %sin = onnx.Transpose %sin_gathered {perm = array<i64: 3, 1, 2, 0>} : (tensor<8x1x3x1xf32>) -> tensor<1x1x3x8xf32>
  %even = onnx.Slice %x, %zero, %end, %three, %two : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %odd = onnx.Slice %x, %one, %end, %three, %two : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %neg = onnx.Neg %odd : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %negs = onnx.Unsqueeze %neg, %last : (tensor<1x2x3x4xf32>, tensor<1xi64>) -> tensor<1x2x3x4x1xf32>
  %kept = onnx.Unsqueeze %even, %last : (tensor<1x2x3x4xf32>, tensor<1xi64>) -> tensor<1x2x3x4x1xf32>
  %stacked = onnx.Concat %negs, %kept {axis = -1 : i64} : (tensor<1x2x3x4x1xf32>, tensor<1x2x3x4x1xf32>) -> tensor<1x2x3x4x2xf32>
  %rotated = onnx.Reshape %stacked, %rot_shape : (tensor<1x2x3x4x2xf32>, tensor<4xi64>) -> tensor<1x2x3x8xf32>
  %direct = onnx.Mul %x, %cos : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %turned = onnx.Mul %rotated, %sin : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %sum = onnx.Add %direct, %turned : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  return %sum : tensor<1x2x3x8xf32>
}

// -----

// Cohere's: the angles repeated pairwise before cos and sin are taken, the
// transpose that made them [b, s, d/2] folded into the repeat's own.
// CHECK-LABEL: func.func @angles_repeated
//       CHECK:   %[[ROPE:.*]] = llm.rope %{{.*}}, %{{.*}}, %{{.*}} {interleaved}
//  CHECK-NEXT:   return %[[ROPE]]
func.func @angles_repeated(%x: tensor<1x2x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %inv = onnx.Constant dense<[[[1.0], [0.5], [0.25], [0.125]]]> : tensor<1x4x1xf32>
  %axis1 = onnx.Constant dense<1> : tensor<1xi64>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %three = onnx.Constant dense<3> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %rot_shape = onnx.Constant dense<[1, 2, 3, 8]> : tensor<4xi64>
  %p1 = onnx.Unsqueeze %pos, %axis1 : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x1x3xi64>
  %posf = onnx.Cast %p1 {to = 1 : i64} : (tensor<1x1x3xi64>) -> tensor<1x1x3xf32>
  %prod = onnx.MatMul %inv, %posf : (tensor<1x4x1xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %expand_shape = onnx.Constant dense<[4, 2, 3, 1]> : tensor<4xi64>
  %tuples = onnx.Constant dense<[[0, 0], [0, 1], [1, 0], [1, 1], [2, 0], [2, 1], [3, 0], [3, 1]]> : tensor<8x2xi64>
  %front = onnx.Transpose %prod {perm = array<i64: 1, 2, 0>} : (tensor<1x4x3xf32>) -> tensor<4x3x1xf32>
  %spread = onnx.Unsqueeze %front, %axis1 : (tensor<4x3x1xf32>, tensor<1xi64>) -> tensor<4x1x3x1xf32>
  %copies = onnx.Expand %spread, %expand_shape : (tensor<4x1x3x1xf32>, tensor<4xi64>) -> tensor<4x2x3x1xf32>
  %gathered = onnx.GatherND %copies, %tuples : (tensor<4x2x3x1xf32>, tensor<8x2xi64>) -> tensor<8x3x1xf32>
  %emb = onnx.Transpose %gathered {perm = array<i64: 2, 1, 0>} : (tensor<8x3x1xf32>) -> tensor<1x3x8xf32>
  %cos_angles = onnx.Cos %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %cos = onnx.Unsqueeze %cos_angles, %axis1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %sin_angles = onnx.Sin %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %sin = onnx.Unsqueeze %sin_angles, %axis1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %even = onnx.Slice %x, %zero, %end, %three, %two : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %odd = onnx.Slice %x, %one, %end, %three, %two : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %neg = onnx.Neg %odd : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %negs = onnx.Unsqueeze %neg, %last : (tensor<1x2x3x4xf32>, tensor<1xi64>) -> tensor<1x2x3x4x1xf32>
  %kept = onnx.Unsqueeze %even, %last : (tensor<1x2x3x4xf32>, tensor<1xi64>) -> tensor<1x2x3x4x1xf32>
  %stacked = onnx.Concat %negs, %kept {axis = -1 : i64} : (tensor<1x2x3x4x1xf32>, tensor<1x2x3x4x1xf32>) -> tensor<1x2x3x4x2xf32>
  %rotated = onnx.Reshape %stacked, %rot_shape : (tensor<1x2x3x4x2xf32>, tensor<4xi64>) -> tensor<1x2x3x8xf32>
  %direct = onnx.Mul %x, %cos : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %turned = onnx.Mul %rotated, %sin : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %sum = onnx.Add %direct, %turned : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  return %sum : tensor<1x2x3x8xf32>
}

// -----

// Near miss: the GatherND takes the copies in (m % 4, m / 4) order, each half
// tiled (cat(t, t)) rather than repeated pairwise: no rotation is raised.
// CHECK-LABEL: func.func @halved_tables_tiled
//   CHECK-NOT:   llm.rope
//       CHECK:   return
func.func @halved_tables_tiled(%x: tensor<1x2x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %inv = onnx.Constant dense<[[[1.0], [0.5], [0.25], [0.125]]]> : tensor<1x4x1xf32>
  %axis1 = onnx.Constant dense<1> : tensor<1xi64>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %three = onnx.Constant dense<3> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %rot_shape = onnx.Constant dense<[1, 2, 3, 8]> : tensor<4xi64>
  %p1 = onnx.Unsqueeze %pos, %axis1 : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x1x3xi64>
  %posf = onnx.Cast %p1 {to = 1 : i64} : (tensor<1x1x3xi64>) -> tensor<1x1x3xf32>
  %prod = onnx.MatMul %inv, %posf : (tensor<1x4x1xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %expand_shape = onnx.Constant dense<[4, 2, 1, 3, 1]> : tensor<5xi64>
  %tuples = onnx.Constant dense<[[0, 0], [1, 0], [2, 0], [3, 0], [0, 1], [1, 1], [2, 1], [3, 1]]> : tensor<8x2xi64>
  %freqs = onnx.Transpose %prod {perm = array<i64: 0, 2, 1>} : (tensor<1x4x3xf32>) -> tensor<1x3x4xf32>
  %emb = onnx.Concat %freqs, %freqs {axis = -1 : i64} : (tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
  %cos_full = onnx.Cos %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %cos_heads = onnx.Unsqueeze %cos_full, %axis1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %cos_half = onnx.Slice %cos_heads, %zero, %four, %three, %one : (tensor<1x1x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %cos_front = onnx.Transpose %cos_half {perm = array<i64: 3, 1, 2, 0>} : (tensor<1x1x3x4xf32>) -> tensor<4x1x3x1xf32>
  %cos_spread = onnx.Unsqueeze %cos_front, %axis1 : (tensor<4x1x3x1xf32>, tensor<1xi64>) -> tensor<4x1x1x3x1xf32>
  %cos_copies = onnx.Expand %cos_spread, %expand_shape : (tensor<4x1x1x3x1xf32>, tensor<5xi64>) -> tensor<4x2x1x3x1xf32>
  %cos_gathered = onnx.GatherND %cos_copies, %tuples : (tensor<4x2x1x3x1xf32>, tensor<8x2xi64>) -> tensor<8x1x3x1xf32>
  %cos = onnx.Transpose %cos_gathered {perm = array<i64: 3, 1, 2, 0>} : (tensor<8x1x3x1xf32>) -> tensor<1x1x3x8xf32>
  %sin_full = onnx.Sin %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %sin_heads = onnx.Unsqueeze %sin_full, %axis1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %sin_half = onnx.Slice %sin_heads, %zero, %four, %three, %one : (tensor<1x1x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %sin_front = onnx.Transpose %sin_half {perm = array<i64: 3, 1, 2, 0>} : (tensor<1x1x3x4xf32>) -> tensor<4x1x3x1xf32>
  %sin_spread = onnx.Unsqueeze %sin_front, %axis1 : (tensor<4x1x3x1xf32>, tensor<1xi64>) -> tensor<4x1x1x3x1xf32>
  %sin_copies = onnx.Expand %sin_spread, %expand_shape : (tensor<4x1x1x3x1xf32>, tensor<5xi64>) -> tensor<4x2x1x3x1xf32>
  %sin_gathered = onnx.GatherND %sin_copies, %tuples : (tensor<4x2x1x3x1xf32>, tensor<8x2xi64>) -> tensor<8x1x3x1xf32>
  %sin = onnx.Transpose %sin_gathered {perm = array<i64: 3, 1, 2, 0>} : (tensor<8x1x3x1xf32>) -> tensor<1x1x3x8xf32>
  %even = onnx.Slice %x, %zero, %end, %three, %two : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %odd = onnx.Slice %x, %one, %end, %three, %two : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %neg = onnx.Neg %odd : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %negs = onnx.Unsqueeze %neg, %last : (tensor<1x2x3x4xf32>, tensor<1xi64>) -> tensor<1x2x3x4x1xf32>
  %kept = onnx.Unsqueeze %even, %last : (tensor<1x2x3x4xf32>, tensor<1xi64>) -> tensor<1x2x3x4x1xf32>
  %stacked = onnx.Concat %negs, %kept {axis = -1 : i64} : (tensor<1x2x3x4x1xf32>, tensor<1x2x3x4x1xf32>) -> tensor<1x2x3x4x2xf32>
  %rotated = onnx.Reshape %stacked, %rot_shape : (tensor<1x2x3x4x2xf32>, tensor<4xi64>) -> tensor<1x2x3x8xf32>
  %direct = onnx.Mul %x, %cos : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %turned = onnx.Mul %rotated, %sin : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %sum = onnx.Add %direct, %turned : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  return %sum : tensor<1x2x3x8xf32>
}
