// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-shape-inference))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-shape-inference))' -debug-only=onnx-shape-inference -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// A miss says why under -debug-only:
// WHY: [onnx-shape-inference] {{.*}}: no match: condition is not a constant scalar

// The Shape -> Gather -> Unsqueeze -> Concat chain exports compute the head
// split with: the dynamic dims stay symbolic, the static ones give the
// Reshape its type, and the static part of the chain folds.
// CHECK-LABEL: func.func @reshape_from_shape_chain
//  CHECK-SAME:   -> tensor<?x?x4x16xf32>
//       CHECK:   onnx.Reshape {{.*}} -> tensor<?x?x4x16xf32>
func.func @reshape_from_shape_chain(%x: tensor<?x?x64xf32>) -> tensor<*xf32> {
  %shape = onnx.Shape %x : (tensor<?x?x64xf32>) -> tensor<*xi64>
  %i0 = onnx.Constant dense<0> : tensor<i64>
  %i1 = onnx.Constant dense<1> : tensor<i64>
  %axes = onnx.Constant dense<[0]> : tensor<1xi64>
  %heads = onnx.Constant dense<[4]> : tensor<1xi64>
  %dim = onnx.Constant dense<[16]> : tensor<1xi64>
  %b = onnx.Gather %shape, %i0 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %s = onnx.Gather %shape, %i1 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %b1 = onnx.Unsqueeze %b, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %s1 = onnx.Unsqueeze %s, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %target = onnx.Concat %b1, %s1, %heads, %dim {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xi64>
  %y = onnx.Reshape %x, %target : (tensor<?x?x64xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// With static dims the whole chain folds to a constant.
// CHECK-LABEL: func.func @static_shape_folds
//       CHECK:   %[[C:.*]] = onnx.Constant dense<[2, 3]> : tensor<2xi64>
//       CHECK:   return %[[C]]
func.func @static_shape_folds(%x: tensor<2x3xf32>) -> tensor<*xi64> {
  %shape = onnx.Shape %x : (tensor<2x3xf32>) -> tensor<*xi64>
  return %shape : tensor<*xi64>
}

// -----

// A dynamic dim cannot fold: the Shape stays, typed as a 2-vector.
// CHECK-LABEL: func.func @dynamic_shape_stays
//       CHECK:   onnx.Shape {{.*}} -> tensor<2xi64>
func.func @dynamic_shape_stays(%x: tensor<?x3xf32>) -> tensor<*xi64> {
  %shape = onnx.Shape %x : (tensor<?x3xf32>) -> tensor<*xi64>
  return %shape : tensor<*xi64>
}

// -----

// An If on a constant condition becomes its chosen branch.
// CHECK-LABEL: func.func @constant_if
//   CHECK-NOT:   onnx.If
//       CHECK:   onnx.Neg
func.func @constant_if(%x: tensor<4xf32>) -> tensor<*xf32> {
  %cond = onnx.Constant dense<true> : tensor<i1>
  %y = onnx.If %cond : tensor<i1> -> tensor<*xf32> {
    %n = onnx.Neg %x : (tensor<4xf32>) -> tensor<4xf32>
    onnx.Yield %n : tensor<4xf32>
  } else {
    onnx.Yield %x : tensor<4xf32>
  }
  return %y : tensor<*xf32>
}

// -----

// An If on an input stays, its result typed from both branches.
// CHECK-LABEL: func.func @dynamic_if
//       CHECK:   onnx.If {{.*}} -> tensor<4xf32>
func.func @dynamic_if(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<*xf32> {
  %y = onnx.If %c : tensor<i1> -> tensor<*xf32> {
    %n = onnx.Neg %x : (tensor<4xf32>) -> tensor<4xf32>
    onnx.Yield %n : tensor<4xf32>
  } else {
    onnx.Yield %x : tensor<4xf32>
  }
  return %y : tensor<*xf32>
}

// -----

// torch.onnx writes `expand(-1, ...)` as Where(Equal(shape, -1), 1, shape):
// a dim is never negative, so the Equal folds to false and the Where to the
// shape itself.
// CHECK-LABEL: func.func @expand_minus_one_folds
//   CHECK-NOT:   onnx.Equal
//   CHECK-NOT:   onnx.Where
//       CHECK:   %[[SHAPE:.*]] = onnx.Concat
//       CHECK:   onnx.Expand %{{.*}}, %[[SHAPE]]
func.func @expand_minus_one_folds(%x: tensor<?x2x1x?x16xf32>) -> tensor<*xf32> {
  %shape = onnx.Shape %x : (tensor<?x2x1x?x16xf32>) -> tensor<*xi64>
  %i0 = onnx.Constant dense<0> : tensor<i64>
  %i3 = onnx.Constant dense<3> : tensor<i64>
  %axes = onnx.Constant dense<[0]> : tensor<1xi64>
  %two = onnx.Constant dense<[2]> : tensor<1xi64>
  %dim = onnx.Constant dense<[16]> : tensor<1xi64>
  %minus = onnx.Constant dense<-1> : tensor<5xi64>
  %ones = onnx.Constant dense<1> : tensor<5xi64>
  %b = onnx.Gather %shape, %i0 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %s = onnx.Gather %shape, %i3 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %b1 = onnx.Unsqueeze %b, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %s1 = onnx.Unsqueeze %s, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %target = onnx.Concat %b1, %two, %two, %s1, %dim {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>, tensor<1xi64>, tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %minus_one = onnx.Equal %target, %minus : (tensor<*xi64>, tensor<5xi64>) -> tensor<*xi1>
  %fixed = onnx.Where %minus_one, %ones, %target : (tensor<*xi1>, tensor<5xi64>, tensor<*xi64>) -> tensor<*xi64>
  %y = onnx.Expand %x, %fixed : (tensor<?x2x1x?x16xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// An entry that is not a dim may be -1: the Equal stays.
// CHECK-LABEL: func.func @unknown_entry_stays
//       CHECK:   onnx.Equal
//       CHECK:   onnx.Where
func.func @unknown_entry_stays(%x: tensor<?x16xf32>, %shape: tensor<2xi64>) -> tensor<*xf32> {
  %minus = onnx.Constant dense<-1> : tensor<2xi64>
  %ones = onnx.Constant dense<1> : tensor<2xi64>
  %minus_one = onnx.Equal %shape, %minus : (tensor<2xi64>, tensor<2xi64>) -> tensor<*xi1>
  %fixed = onnx.Where %minus_one, %ones, %shape : (tensor<*xi1>, tensor<2xi64>, tensor<2xi64>) -> tensor<*xi64>
  %y = onnx.Expand %x, %fixed : (tensor<?x16xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// A sum of dims (past + new tokens) is a dim too.
// CHECK-LABEL: func.func @sum_of_dims_is_not_minus_one
//   CHECK-NOT:   onnx.Equal
//       CHECK:   return
func.func @sum_of_dims_is_not_minus_one(%past: tensor<?x2x?x16xf32>, %x: tensor<?x?xi64>) -> tensor<*xi64> {
  %past_shape = onnx.Shape %past : (tensor<?x2x?x16xf32>) -> tensor<*xi64>
  %x_shape = onnx.Shape %x : (tensor<?x?xi64>) -> tensor<*xi64>
  %i1 = onnx.Constant dense<1> : tensor<i64>
  %i2 = onnx.Constant dense<2> : tensor<i64>
  %axes = onnx.Constant dense<[0]> : tensor<1xi64>
  %minus = onnx.Constant dense<-1> : tensor<1xi64>
  %ones = onnx.Constant dense<1> : tensor<1xi64>
  %p = onnx.Gather %past_shape, %i2 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %n = onnx.Gather %x_shape, %i1 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %total = onnx.Add %p, %n : (tensor<*xi64>, tensor<*xi64>) -> tensor<*xi64>
  %total1 = onnx.Unsqueeze %total, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %minus_one = onnx.Equal %total1, %minus : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi1>
  %fixed = onnx.Where %minus_one, %ones, %total1 : (tensor<*xi1>, tensor<1xi64>, tensor<*xi64>) -> tensor<*xi64>
  return %fixed : tensor<*xi64>
}

// -----

// view(*hidden.shape[:-1], -1, head_dim): the target reads the batch and
// sequence dims of the hidden state, and q = hidden @ W carries those same
// dims, so they cancel and -1 is 64 / 16 heads.
// CHECK-LABEL: func.func @reshape_minus_one_over_same_dims
//       CHECK:   onnx.Reshape {{.*}} -> tensor<?x?x4x16xf32>
func.func @reshape_minus_one_over_same_dims(%hidden: tensor<?x?x64xf32>) -> tensor<*xf32> {
  %w = onnx.Constant dense<1.0> : tensor<64x64xf32>
  %q = onnx.MatMul %hidden, %w : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<*xf32>
  %shape = onnx.Shape %hidden : (tensor<?x?x64xf32>) -> tensor<*xi64>
  %i0 = onnx.Constant dense<0> : tensor<i64>
  %i1 = onnx.Constant dense<1> : tensor<i64>
  %axes = onnx.Constant dense<[0]> : tensor<1xi64>
  %rest = onnx.Constant dense<[-1, 16]> : tensor<2xi64>
  %b = onnx.Gather %shape, %i0 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %s = onnx.Gather %shape, %i1 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %b1 = onnx.Unsqueeze %b, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %s1 = onnx.Unsqueeze %s, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %target = onnx.Concat %b1, %s1, %rest {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
  %y = onnx.Reshape %q, %target : (tensor<*xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// The same through an Unsqueeze (GPT-BigCode's query, [b, 1, s, 64]): the
// result's dims but the inserted one are the input's, so b and s still
// cancel; and OPT's view(batch, -1, heads, head_dim), whose -1 is then the
// sequence, is that dim for a Reshape after it: the view back to [b, s, -1]
// is the input itself.
// CHECK-LABEL: func.func @reshape_minus_one_through_unsqueeze
//  CHECK-SAME:   (%[[HIDDEN:[^:]*]]: tensor<?x?x64xf32>)
//       CHECK:   onnx.Reshape {{.*}} -> tensor<?x?x4x16xf32>
//   CHECK-NOT:   onnx.Reshape
//       CHECK:   return %{{.*}}, %[[HIDDEN]]
func.func @reshape_minus_one_through_unsqueeze(%hidden: tensor<?x?x64xf32>) -> (tensor<*xf32>, tensor<*xf32>) {
  %shape = onnx.Shape %hidden : (tensor<?x?x64xf32>) -> tensor<*xi64>
  %i0 = onnx.Constant dense<0> : tensor<i64>
  %i1 = onnx.Constant dense<1> : tensor<i64>
  %axes = onnx.Constant dense<[0]> : tensor<1xi64>
  %axis1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %rest = onnx.Constant dense<[-1, 16]> : tensor<2xi64>
  %heads = onnx.Constant dense<[-1, 4, 16]> : tensor<3xi64>
  %minus = onnx.Constant dense<[-1]> : tensor<1xi64>
  %b = onnx.Gather %shape, %i0 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %s = onnx.Gather %shape, %i1 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %b1 = onnx.Unsqueeze %b, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %s1 = onnx.Unsqueeze %s, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %target = onnx.Concat %b1, %s1, %rest {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
  %u = onnx.Unsqueeze %hidden, %axis1 : (tensor<?x?x64xf32>, tensor<1xi64>) -> tensor<*xf32>
  %y = onnx.Reshape %u, %target : (tensor<*xf32>, tensor<*xi64>) -> tensor<*xf32>
  %split = onnx.Concat %b1, %heads {axis = 0 : i64} : (tensor<*xi64>, tensor<3xi64>) -> tensor<*xi64>
  %z = onnx.Reshape %hidden, %split : (tensor<?x?x64xf32>, tensor<*xi64>) -> tensor<*xf32>
  %merge = onnx.Concat %b1, %s1, %minus {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %m = onnx.Reshape %z, %merge : (tensor<*xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y, %m : tensor<*xf32>, tensor<*xf32>
}

// -----

// And through a Clip (OLMo's clip_qkv clamps q before its heads' view).
// CHECK-LABEL: func.func @reshape_minus_one_through_clip
//       CHECK:   onnx.Reshape {{.*}} -> tensor<?x?x4x16xf32>
func.func @reshape_minus_one_through_clip(%hidden: tensor<?x?x64xf32>) -> tensor<*xf32> {
  %shape = onnx.Shape %hidden : (tensor<?x?x64xf32>) -> tensor<*xi64>
  %i0 = onnx.Constant dense<0> : tensor<i64>
  %i1 = onnx.Constant dense<1> : tensor<i64>
  %axes = onnx.Constant dense<[0]> : tensor<1xi64>
  %rest = onnx.Constant dense<[-1, 16]> : tensor<2xi64>
  %lo = onnx.Constant dense<-8.0> : tensor<f32>
  %hi = onnx.Constant dense<8.0> : tensor<f32>
  %b = onnx.Gather %shape, %i0 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %s = onnx.Gather %shape, %i1 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %b1 = onnx.Unsqueeze %b, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %s1 = onnx.Unsqueeze %s, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %target = onnx.Concat %b1, %s1, %rest {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
  %c = onnx.Clip %hidden, %lo, %hi : (tensor<?x?x64xf32>, tensor<f32>, tensor<f32>) -> tensor<*xf32>
  %y = onnx.Reshape %c, %target : (tensor<*xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// And through GatherND and a Tile that repeats only the last axis: torch.onnx's
// dynamo export of GPT-J's repeat_interleave(table[positions], 2) before its
// rotary, flattened to [b, s, 1, -1].
// CHECK-LABEL: func.func @reshape_minus_one_through_gather_nd_and_tile
//       CHECK:   onnx.Reshape {{.*}} -> tensor<?x?x1x8xf32>
func.func @reshape_minus_one_through_gather_nd_and_tile(%table: tensor<16x4xf32>, %pos: tensor<?x?xi64>) -> tensor<*xf32> {
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %repeats = onnx.Constant dense<[1, 1, 1, 1, 2]> : tensor<5xi64>
  %tuples = onnx.Unsqueeze %pos, %last : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<*xi64>
  %rows = onnx.GatherND %table, %tuples : (tensor<16x4xf32>, tensor<*xi64>) -> tensor<*xf32>
  %heads = onnx.Unsqueeze %rows, %two : (tensor<*xf32>, tensor<1xi64>) -> tensor<*xf32>
  %pairs = onnx.Unsqueeze %heads, %four : (tensor<*xf32>, tensor<1xi64>) -> tensor<*xf32>
  %tiled = onnx.Tile %pairs, %repeats : (tensor<*xf32>, tensor<5xi64>) -> tensor<*xf32>
  %kept = onnx.Shape %heads {end = 3 : i64} : (tensor<*xf32>) -> tensor<*xi64>
  %target = onnx.Concat %kept, %last {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %y = onnx.Reshape %tiled, %target : (tensor<*xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// Dims of an unrelated tensor do not cancel: -1 stays unknown.
// CHECK-LABEL: func.func @reshape_minus_one_over_other_dims
//       CHECK:   onnx.Reshape {{.*}} -> tensor<?x?x?x16xf32>
func.func @reshape_minus_one_over_other_dims(%x: tensor<?x?x64xf32>, %other: tensor<?x?xi64>) -> tensor<*xf32> {
  %shape = onnx.Shape %other : (tensor<?x?xi64>) -> tensor<*xi64>
  %rest = onnx.Constant dense<[-1, 16]> : tensor<2xi64>
  %target = onnx.Concat %shape, %rest {axis = 0 : i64} : (tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
  %y = onnx.Reshape %x, %target : (tensor<?x?x64xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// A Slice that takes a whole static axis with step 1 is its input, and a
// Concat with an empty part is its other part: what a partial-rotary export
// writes when the rotation covers the whole head.
// CHECK-LABEL: func.func @whole_slice_and_empty_concat
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x4x?x16xf32>)
//   CHECK-NOT:   onnx.Slice
//   CHECK-NOT:   onnx.Concat
//       CHECK:   return %[[X]]
func.func @whole_slice_and_empty_concat(%x: tensor<?x4x?x16xf32>) -> tensor<*xf32> {
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %sixteen = onnx.Constant dense<16> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %rot = onnx.Slice %x, %zero, %sixteen, %last, %one : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xf32>
  %pass = onnx.Slice %x, %sixteen, %sixteen, %last, %one : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xf32>
  %y = onnx.Concat %rot, %pass {axis = -1 : i64} : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// Near miss: a Slice of part of the head (a partial rotary's rotated part)
// and a Concat of two non-empty parts stay.
// CHECK-LABEL: func.func @partial_slice_stays
//       CHECK:   onnx.Slice {{.*}} -> tensor<?x4x?x8xf32>
//       CHECK:   onnx.Slice {{.*}} -> tensor<?x4x?x8xf32>
//       CHECK:   onnx.Concat {{.*}} -> tensor<?x4x?x16xf32>
func.func @partial_slice_stays(%x: tensor<?x4x?x16xf32>) -> tensor<*xf32> {
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %eight = onnx.Constant dense<8> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %rot = onnx.Slice %x, %zero, %eight, %last, %one : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xf32>
  %pass = onnx.Slice %x, %eight, %end, %last, %one : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xf32>
  %y = onnx.Concat %rot, %pass {axis = -1 : i64} : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// Sqrt of a constant folds: attention scales written as sqrt(1 / sqrt(d)).
// CHECK-LABEL: func.func @sqrt_of_constant
//       CHECK:   %[[C:.*]] = onnx.Constant dense<5.000000e-01> : tensor<1xf32>
//       CHECK:   return %[[C]]
func.func @sqrt_of_constant() -> tensor<*xf32> {
  %quarter = onnx.Constant dense<0.25> : tensor<1xf32>
  %root = onnx.Sqrt %quarter : (tensor<1xf32>) -> tensor<*xf32>
  return %root : tensor<*xf32>
}

// -----

// A Reshape to [-1, its own seq dim] keeps every dim (GPT-2's export of
// input_ids) and folds away; a constant condition picks each entry of a
// shape Where (torch's expand(-1, ...)), which then folds.
// CHECK-LABEL: func.func @reshape_to_itself
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<?x?xi64>)
//       CHECK:   %[[C:.*]] = onnx.Constant dense<[2, 1, 7]> : tensor<3xi64>
//       CHECK:   return %[[X]], %[[C]]
func.func @reshape_to_itself(%x: tensor<?x?xi64>) -> (tensor<*xi64>, tensor<*xi64>) {
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %ax0 = onnx.Constant dense<0> : tensor<1xi64>
  %minus = onnx.Constant dense<-1> : tensor<1xi64>
  %shape = onnx.Shape %x : (tensor<?x?xi64>) -> tensor<2xi64>
  %seq = onnx.Gather %shape, %c1 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %s1 = onnx.Unsqueeze %seq, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %target = onnx.Concat %minus, %s1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %y = onnx.Reshape %x, %target : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<*xi64>
  %cond = onnx.Constant dense<[false, true, false]> : tensor<3xi1>
  %ones = onnx.Constant dense<1> : tensor<3xi64>
  %dims = onnx.Constant dense<[2, -1, 7]> : tensor<3xi64>
  %picked = onnx.Where %cond, %ones, %dims : (tensor<3xi1>, tensor<3xi64>, tensor<3xi64>) -> tensor<*xi64>
  return %y, %picked : tensor<*xi64>, tensor<*xi64>
}

// -----

// A Reshape of a Reshape is the second of the first's input: CodeGen's view of
// each part as [b, s, groups, heads per group, head_dim], then as [b, s, heads,
// head_dim], reads one dims-only target off the first view's shape; here it
// is the input's own shape, so both go.
// CHECK-LABEL: func.func @reshape_of_reshape
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<?x?x4x16xf32>)
//   CHECK-NOT:   onnx.Reshape
//       CHECK:   return %[[X]]
func.func @reshape_of_reshape(%x: tensor<?x?x4x16xf32>) -> tensor<*xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %ax0 = onnx.Constant dense<0> : tensor<1xi64>
  %groups = onnx.Constant dense<[2, 2, 16]> : tensor<3xi64>
  %heads = onnx.Constant dense<[4, 16]> : tensor<2xi64>
  %shape = onnx.Shape %x : (tensor<?x?x4x16xf32>) -> tensor<4xi64>
  %b = onnx.Gather %shape, %c0 : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %s = onnx.Gather %shape, %c1 : (tensor<4xi64>, tensor<i64>) -> tensor<i64>
  %b1 = onnx.Unsqueeze %b, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %s1 = onnx.Unsqueeze %s, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %target1 = onnx.Concat %b1, %s1, %groups {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<3xi64>) -> tensor<5xi64>
  %grouped = onnx.Reshape %x, %target1 : (tensor<?x?x4x16xf32>, tensor<5xi64>) -> tensor<*xf32>
  %shape2 = onnx.Shape %grouped : (tensor<*xf32>) -> tensor<*xi64>
  %b2 = onnx.Gather %shape2, %c0 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %s2 = onnx.Gather %shape2, %c1 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %b3 = onnx.Unsqueeze %b2, %ax0 : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %s3 = onnx.Unsqueeze %s2, %ax0 : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %target2 = onnx.Concat %b3, %s3, %heads {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
  %y = onnx.Reshape %grouped, %target2 : (tensor<*xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// Near miss: a 0 entry copies the first view's dim (4 * s), not the input's (s):
// the second Reshape keeps reading the first.
// CHECK-LABEL: func.func @reshape_of_reshape_copying_a_dim
//       CHECK:   %[[FIRST:.*]] = onnx.Reshape %{{.*}} -> tensor<?x?x16xf32>
//       CHECK:   onnx.Reshape %[[FIRST]]
func.func @reshape_of_reshape_copying_a_dim(%x: tensor<?x?x64xf32>) -> tensor<*xf32> {
  %flat = onnx.Constant dense<[0, -1, 16]> : tensor<3xi64>
  %copy = onnx.Constant dense<[0, 0, 2, 8]> : tensor<4xi64>
  %r = onnx.Reshape %x, %flat : (tensor<?x?x64xf32>, tensor<3xi64>) -> tensor<*xf32>
  %y = onnx.Reshape %r, %copy : (tensor<*xf32>, tensor<4xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// Integer ops over constants alone evaluate to a constant: the index torch's
// repeat_interleave by a repeats tensor builds, NonZero(Range(0, max(r)) < r),
// [[0, 0], [0, 1], [1, 0], [1, 1]] for r = [2, 2] once transposed. A bool cast
// to integers or floats is 0 or 1, not a signed 1-bit -1.
// CHECK-LABEL: func.func @constant_integer_subgraph
//       CHECK:   %[[T:.*]] = onnx.Constant dense<{{\[}}[0, 0], [0, 1], [1, 0], [1, 1]]> : tensor<4x2xi64>
//       CHECK:   %[[I:.*]] = onnx.Constant dense<[1, 0]> : tensor<2xi64>
//       CHECK:   %[[F:.*]] = onnx.Constant dense<[1.000000e+00, 0.000000e+00]> : tensor<2xf32>
//       CHECK:   return %[[T]], %[[I]], %[[F]]
func.func @constant_integer_subgraph() -> (tensor<*xi64>, tensor<*xi64>, tensor<*xf32>) {
  %repeats = onnx.Constant dense<2> : tensor<2xi64>
  %column = onnx.Constant dense<2> : tensor<2x1xi64>
  %zero = onnx.Constant dense<0> : tensor<i64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %none = onnx.None
  %max = onnx.ReduceMax %repeats, %none {keepdims = 0 : i64} : (tensor<2xi64>, none) -> tensor<*xi64>
  %range = onnx.Range %zero, %max, %one : (tensor<i64>, tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %less = onnx.Less %range, %column : (tensor<*xi64>, tensor<2x1xi64>) -> tensor<*xi1>
  %nonzero = onnx.NonZero %less : (tensor<*xi1>) -> tensor<*xi64>
  %tuples = onnx.Transpose %nonzero {perm = array<i64: 1, 0>} : (tensor<*xi64>) -> tensor<*xi64>
  %flags = onnx.Constant dense<[true, false]> : tensor<2xi1>
  %ints = onnx.Cast %flags {to = 7 : i64} : (tensor<2xi1>) -> tensor<*xi64>
  %floats = onnx.Cast %flags {to = 1 : i64} : (tensor<2xi1>) -> tensor<*xf32>
  return %tuples, %ints, %floats : tensor<*xi64>, tensor<*xi64>, tensor<*xf32>
}

// -----

// Near miss: NonZero of an input is not known until it runs; it stays.
// CHECK-LABEL: func.func @nonzero_of_an_input
//       CHECK:   onnx.NonZero
func.func @nonzero_of_an_input(%x: tensor<2x3xi1>) -> tensor<*xi64> {
  %nonzero = onnx.NonZero %x : (tensor<2x3xi1>) -> tensor<*xi64>
  return %nonzero : tensor<*xi64>
}

// -----

// Near miss: [-1, batch] of a [batch, seq] tensor moves dims; it stays.
// CHECK-LABEL: func.func @reshape_moving_dims
//       CHECK:   onnx.Reshape
func.func @reshape_moving_dims(%x: tensor<?x?xi64>) -> tensor<*xi64> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %ax0 = onnx.Constant dense<0> : tensor<1xi64>
  %minus = onnx.Constant dense<-1> : tensor<1xi64>
  %shape = onnx.Shape %x : (tensor<?x?xi64>) -> tensor<2xi64>
  %batch = onnx.Gather %shape, %c0 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %b1 = onnx.Unsqueeze %batch, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %target = onnx.Concat %minus, %b1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %y = onnx.Reshape %x, %target : (tensor<?x?xi64>, tensor<2xi64>) -> tensor<*xi64>
  return %y : tensor<*xi64>
}

// -----

// Inputs whose dims share an ONNX dim_param name share those dims (torch.onnx
// names input_ids' and position_ids' batch `s44` alike): a head split that
// reads the batch and sequence from position_ids infers the head count.
// CHECK-LABEL: func.func @named_dims
//       CHECK:   onnx.Reshape {{.*}} -> tensor<?x?x4x16xf32>
func.func @named_dims(%x: tensor<?x?x64xf32> {onnx.dim_params = ["s44", "s70", ""]},
                      %pos: tensor<?x?xi64> {onnx.dim_params = ["s44", "s70"]}) -> tensor<*xf32> {
  %heads = onnx.Constant dense<[-1, 16]> : tensor<2xi64>
  %shape = onnx.Shape %pos : (tensor<?x?xi64>) -> tensor<2xi64>
  %target = onnx.Concat %shape, %heads {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  %y = onnx.Reshape %x, %target : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// Near miss: differently named dims may differ, so the head count stays unknown.
// CHECK-LABEL: func.func @differently_named_dims
//       CHECK:   onnx.Reshape {{.*}} -> tensor<?x?x?x16xf32>
func.func @differently_named_dims(%x: tensor<?x?x64xf32> {onnx.dim_params = ["s44", "s70", ""]},
                                  %pos: tensor<?x?xi64> {onnx.dim_params = ["s44", "s71"]}) -> tensor<*xf32> {
  %heads = onnx.Constant dense<[-1, 16]> : tensor<2xi64>
  %shape = onnx.Shape %pos : (tensor<?x?xi64>) -> tensor<2xi64>
  %target = onnx.Concat %shape, %heads {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<4xi64>
  %y = onnx.Reshape %x, %target : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}
