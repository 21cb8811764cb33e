// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' 2>/dev/null | FileCheck %s

// The decomposed RMSNorm torch.onnx writes becomes one llm.rms_norm.
// CHECK-LABEL: func.func @rms_norm
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x8x16xf32>)
//       CHECK:   %[[W:.*]] = llm.constant
//       CHECK:   %[[N:.*]] = llm.rms_norm %[[X]], %[[W]] {epsilon = 9.99999974E-6 : f32}
//   CHECK-NOT:   onnx.ReduceMean
//       CHECK:   return %[[N]]
func.func @rms_norm(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %axes = onnx.Constant dense<[-1]> : tensor<1xi64>
  %eps = onnx.Constant dense<1.0e-5> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %w = onnx.Constant dense<0.5> : tensor<16xf32>
  %sq = onnx.Pow %x, %two : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8x16xf32>
  %mean = onnx.ReduceMean %sq, %axes : (tensor<2x8x16xf32>, tensor<1xi64>) -> tensor<2x8x1xf32>
  %sum = onnx.Add %mean, %eps : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %root = onnx.Sqrt %sum : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %inv = onnx.Div %one, %root : (tensor<f32>, tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %normed = onnx.Mul %x, %inv : (tensor<2x8x16xf32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  %y = onnx.Mul %w, %normed : (tensor<16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Near miss: the mean is over axis 1, not the hidden axis: not an RMSNorm.
// CHECK-LABEL: func.func @rms_norm_wrong_axis
//   CHECK-NOT:   llm.rms_norm
//       CHECK:   onnx.ReduceMean
func.func @rms_norm_wrong_axis(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %eps = onnx.Constant dense<1.0e-5> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %w = onnx.Constant dense<0.5> : tensor<16xf32>
  %sq = onnx.Pow %x, %two : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8x16xf32>
  %mean = onnx.ReduceMean %sq, %axes : (tensor<2x8x16xf32>, tensor<1xi64>) -> tensor<2x1x16xf32>
  %sum = onnx.Add %mean, %eps : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1x16xf32>
  %root = onnx.Sqrt %sum : (tensor<2x1x16xf32>) -> tensor<2x1x16xf32>
  %inv = onnx.Div %one, %root : (tensor<f32>, tensor<2x1x16xf32>) -> tensor<2x1x16xf32>
  %normed = onnx.Mul %x, %inv : (tensor<2x8x16xf32>, tensor<2x1x16xf32>) -> tensor<2x8x16xf32>
  %y = onnx.Mul %w, %normed : (tensor<16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// MatMul by a constant weight and a bias add become one llm.linear.
// CHECK-LABEL: func.func @linear_with_bias
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x8x16xf32>)
//   CHECK-DAG:   %[[W:.*]] = llm.constant dense<1.000000e+00> : tensor<16x32xf32>
//   CHECK-DAG:   %[[B:.*]] = llm.constant dense<2.000000e+00> : tensor<32xf32>
//       CHECK:   llm.linear %[[X]], %[[W]], %[[B]] :
func.func @linear_with_bias(%x: tensor<2x8x16xf32>) -> tensor<2x8x32xf32> {
  %w = onnx.Constant dense<1.0> : tensor<16x32xf32>
  %b = onnx.Constant dense<2.0> : tensor<32xf32>
  %y = onnx.MatMul %x, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %z = onnx.Add %y, %b : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  return %z : tensor<2x8x32xf32>
}

// -----

// Near miss: B is an activation, so this MatMul is not a linear layer.
// CHECK-LABEL: func.func @matmul_of_activations
//   CHECK-NOT:   llm.linear
//       CHECK:   onnx.MatMul
func.func @matmul_of_activations(%x: tensor<8x16xf32>, %y: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %z = onnx.MatMul %x, %y : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %z : tensor<8x4xf32>
}

// -----

// x * sigmoid(x) * up is the SwiGLU of a gated MLP.
// CHECK-LABEL: func.func @swiglu
//  CHECK-SAME:   (%[[G:.*]]: tensor<2x8xf32>, %[[U:.*]]: tensor<2x8xf32>)
//       CHECK:   %[[S:.*]] = llm.swiglu %[[G]], %[[U]]
//       CHECK:   return %[[S]]
func.func @swiglu(%gate: tensor<2x8xf32>, %up: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = onnx.Sigmoid %gate : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %silu = onnx.Mul %gate, %s : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = onnx.Mul %silu, %up : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Near miss: sigmoid of a different value is a gate, not SiLU.
// CHECK-LABEL: func.func @sigmoid_gate
//   CHECK-NOT:   llm.silu
//       CHECK:   onnx.Sigmoid
func.func @sigmoid_gate(%a: tensor<2x8xf32>, %b: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %s = onnx.Sigmoid %b : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %y = onnx.Mul %a, %s : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Reshape to heads + Transpose is split_heads; the reverse is merge_heads.
// CHECK-LABEL: func.func @heads
//  CHECK-SAME:   (%[[X:.*]]: tensor<1x5x64xf32>)
//       CHECK:   %[[S:.*]] = llm.split_heads %[[X]] {num_heads = 4 : i64} : (tensor<1x5x64xf32>) -> tensor<1x4x5x16xf32>
//       CHECK:   %[[M:.*]] = llm.merge_heads %[[S]] : (tensor<1x4x5x16xf32>) -> tensor<1x5x64xf32>
//       CHECK:   return %[[M]]
func.func @heads(%x: tensor<1x5x64xf32>) -> tensor<1x5x64xf32> {
  %split_shape = onnx.Constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  %merge_shape = onnx.Constant dense<[0, 0, 64]> : tensor<3xi64>
  %r = onnx.Reshape %x, %split_shape : (tensor<1x5x64xf32>, tensor<4xi64>) -> tensor<1x5x4x16xf32>
  %t = onnx.Transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x4x16xf32>) -> tensor<1x4x5x16xf32>
  %u = onnx.Transpose %t {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x5x16xf32>) -> tensor<1x5x4x16xf32>
  %m = onnx.Reshape %u, %merge_shape : (tensor<1x5x4x16xf32>, tensor<3xi64>) -> tensor<1x5x64xf32>
  return %m : tensor<1x5x64xf32>
}

// -----

// OPT's view(batch, -1, heads, head_dim): the -1 is the sequence, since the
// batch entry is x's own and heads * head_dim its width; merged back with
// [batch, seq, -1], whose -1 is then the width.
// CHECK-LABEL: func.func @heads_with_an_inferred_sequence
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x?x64xf32>)
//       CHECK:   %[[S:.*]] = llm.split_heads %[[X]] {num_heads = 4 : i64} : (tensor<?x?x64xf32>) -> tensor<?x4x?x16xf32>
//       CHECK:   %[[M:.*]] = llm.merge_heads %[[S]] : (tensor<?x4x?x16xf32>) -> tensor<?x?x64xf32>
//       CHECK:   return %[[M]]
func.func @heads_with_an_inferred_sequence(%x: tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %ax0 = onnx.Constant dense<0> : tensor<1xi64>
  %rest = onnx.Constant dense<[-1, 4, 16]> : tensor<3xi64>
  %minus = onnx.Constant dense<-1> : tensor<1xi64>
  %shape = onnx.Shape %x : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %batch = onnx.Gather %shape, %c0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %seq = onnx.Gather %shape, %c1 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %b = onnx.Unsqueeze %batch, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %s = onnx.Unsqueeze %seq, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %split = onnx.Concat %b, %rest {axis = 0 : i64} : (tensor<1xi64>, tensor<3xi64>) -> tensor<4xi64>
  %merge = onnx.Concat %b, %s, %minus {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %r = onnx.Reshape %x, %split : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %t = onnx.Transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  %u = onnx.Transpose %t {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x4x?x16xf32>) -> tensor<?x?x4x16xf32>
  %m = onnx.Reshape %u, %merge : (tensor<?x?x4x16xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  return %m : tensor<?x?x64xf32>
}

// -----

// Near miss: view(n, -1, heads, head_dim) with n the batch of another input:
// the -1 is not proven x's sequence, so there is no head split.
// CHECK-LABEL: func.func @heads_with_a_foreign_batch
//   CHECK-NOT:   llm.split_heads
//       CHECK:   onnx.Transpose
func.func @heads_with_a_foreign_batch(%x: tensor<?x?x64xf32>, %y: tensor<?x3xf32>) -> tensor<?x4x?x16xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %ax0 = onnx.Constant dense<0> : tensor<1xi64>
  %rest = onnx.Constant dense<[-1, 4, 16]> : tensor<3xi64>
  %shape = onnx.Shape %y : (tensor<?x3xf32>) -> tensor<2xi64>
  %n = onnx.Gather %shape, %c0 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %b = onnx.Unsqueeze %n, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %split = onnx.Concat %b, %rest {axis = 0 : i64} : (tensor<1xi64>, tensor<3xi64>) -> tensor<4xi64>
  %r = onnx.Reshape %x, %split : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %t = onnx.Transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  return %t : tensor<?x4x?x16xf32>
}

// -----

// Near miss: a different permutation is not a head split.
// CHECK-LABEL: func.func @not_heads
//   CHECK-NOT:   llm.split_heads
//       CHECK:   onnx.Transpose
func.func @not_heads(%x: tensor<1x5x64xf32>) -> tensor<4x5x1x16xf32> {
  %shape = onnx.Constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  %r = onnx.Reshape %x, %shape : (tensor<1x5x64xf32>, tensor<4xi64>) -> tensor<1x5x4x16xf32>
  %t = onnx.Transpose %r {perm = array<i64: 2, 1, 0, 3>} : (tensor<1x5x4x16xf32>) -> tensor<4x5x1x16xf32>
  return %t : tensor<4x5x1x16xf32>
}

// -----

// A norm over each head between the Reshape and the Transpose (Qwen3's
// q_norm) is a per-head norm of the projection, before split_heads.
// CHECK-LABEL: func.func @per_head_norm
//  CHECK-SAME:   (%[[X:.*]]: tensor<1x5x64xf32>
//       CHECK:   %[[N:.*]] = llm.rms_norm %[[X]], %{{.*}} {epsilon = {{.*}}} : (tensor<1x5x64xf32>, tensor<16xf32>) -> tensor<1x5x64xf32>
//       CHECK:   llm.split_heads %[[N]] {num_heads = 4 : i64}
//   CHECK-NOT:   onnx.Transpose
func.func @per_head_norm(%x: tensor<1x5x64xf32>, %w: tensor<16xf32>) -> tensor<1x4x5x16xf32> {
  %shape = onnx.Constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  %r = onnx.Reshape %x, %shape : (tensor<1x5x64xf32>, tensor<4xi64>) -> tensor<1x5x4x16xf32>
  %n = llm.rms_norm %r, %w {epsilon = 1.0e-6 : f32} : (tensor<1x5x4x16xf32>, tensor<16xf32>) -> tensor<1x5x4x16xf32>
  %t = onnx.Transpose %n {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x4x16xf32>) -> tensor<1x4x5x16xf32>
  return %t : tensor<1x4x5x16xf32>
}

// -----

// Near miss: the normed heads are also read unsplit, so the norm cannot move
// before the split.
// CHECK-LABEL: func.func @per_head_norm_read_twice
//       CHECK:   llm.rms_norm {{.*}} -> tensor<1x5x4x16xf32>
//       CHECK:   onnx.Transpose
func.func @per_head_norm_read_twice(%x: tensor<1x5x64xf32>, %w: tensor<16xf32>) -> (tensor<1x4x5x16xf32>, tensor<1x5x4x16xf32>) {
  %shape = onnx.Constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  %r = onnx.Reshape %x, %shape : (tensor<1x5x64xf32>, tensor<4xi64>) -> tensor<1x5x4x16xf32>
  %n = llm.rms_norm %r, %w {epsilon = 1.0e-6 : f32} : (tensor<1x5x4x16xf32>, tensor<16xf32>) -> tensor<1x5x4x16xf32>
  %t = onnx.Transpose %n {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x5x4x16xf32>) -> tensor<1x4x5x16xf32>
  return %t, %n : tensor<1x4x5x16xf32>, tensor<1x5x4x16xf32>
}

// -----

// Concat(past, new) on the sequence axis is the KV cache append; Unsqueeze,
// Expand, Reshape widen it for GQA (repeat_kv).
// CHECK-LABEL: func.func @kv_cache
//  CHECK-SAME:   (%[[P:.*]]: tensor<1x2x3x16xf32>, %[[N:.*]]: tensor<1x2x1x16xf32>)
//       CHECK:   %[[C:.*]] = llm.kv_concat %[[P]], %[[N]]
//       CHECK:   %[[R:.*]] = llm.repeat_kv %[[C]] {repeats = 4 : i64} : (tensor<1x2x4x16xf32>) -> tensor<1x8x4x16xf32>
//       CHECK:   return %[[C]], %[[R]]
func.func @kv_cache(%past: tensor<1x2x3x16xf32>, %new: tensor<1x2x1x16xf32>) -> (tensor<1x2x4x16xf32>, tensor<1x8x4x16xf32>) {
  %present = onnx.Concat %past, %new {axis = -2 : i64} : (tensor<1x2x3x16xf32>, tensor<1x2x1x16xf32>) -> tensor<1x2x4x16xf32>
  %axis = onnx.Constant dense<[2]> : tensor<1xi64>
  %expand_shape = onnx.Constant dense<[1, 2, 4, 4, 16]> : tensor<5xi64>
  %merged_shape = onnx.Constant dense<[1, 8, 4, 16]> : tensor<4xi64>
  %u = onnx.Unsqueeze %present, %axis : (tensor<1x2x4x16xf32>, tensor<1xi64>) -> tensor<1x2x1x4x16xf32>
  %e = onnx.Expand %u, %expand_shape : (tensor<1x2x1x4x16xf32>, tensor<5xi64>) -> tensor<1x2x4x4x16xf32>
  %r = onnx.Reshape %e, %merged_shape : (tensor<1x2x4x4x16xf32>, tensor<4xi64>) -> tensor<1x8x4x16xf32>
  return %present, %r : tensor<1x2x4x16xf32>, tensor<1x8x4x16xf32>
}

// -----

// Near miss: a concat on the head axis is not a cache append.
// CHECK-LABEL: func.func @concat_heads
//   CHECK-NOT:   llm.kv_concat
//       CHECK:   onnx.Concat
func.func @concat_heads(%a: tensor<1x2x3x16xf32>, %b: tensor<1x2x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %c = onnx.Concat %a, %b {axis = 1 : i64} : (tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %c : tensor<1x4x3x16xf32>
}

// -----

// Scaled dot-product attention with a causal + padding mask built from
// attention_mask: the mask becomes the `causal` attribute and the raw
// attention_mask operand; no mask tensor is left.
// CHECK-LABEL: func.func @attention
//  CHECK-SAME:   (%[[Q:[^:]*]]: tensor<1x4x3x16xf32>, %[[K:[^:]*]]: tensor<1x4x3x16xf32>, %[[V:[^:]*]]: tensor<1x4x3x16xf32>, %[[M:[^:]*]]: tensor<1x3xi64>
//       CHECK:   %[[A:.*]] = llm.attention %[[Q]], %[[K]], %[[V]], %[[M]] {causal, scale = 2.500000e-01 : f32}
//   CHECK-NOT:   onnx.Softmax
//       CHECK:   return %[[A]]
func.func @attention(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>,
                     %mask: tensor<1x3xi64> {onnx.name = "attention_mask"}) -> tensor<1x4x3x16xf32> {
  %min = onnx.Constant dense<-3.40282347E+38> : tensor<3x3xf32>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %axes = onnx.Constant dense<[1, 2]> : tensor<2xi64>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %fmin = onnx.Constant dense<-3.40282347E+38> : tensor<f32>
  %sqrt = onnx.Constant dense<4.0> : tensor<f32>
  %causal = onnx.Trilu %min, %one {upper = 1 : i64} : (tensor<3x3xf32>, tensor<1xi64>) -> tensor<3x3xf32>
  %m4 = onnx.Unsqueeze %mask, %axes : (tensor<1x3xi64>, tensor<2xi64>) -> tensor<1x1x1x3xi64>
  %mf = onnx.Cast %m4 {to = 1 : i64} : (tensor<1x1x1x3xi64>) -> tensor<1x1x1x3xf32>
  %sum = onnx.Add %causal, %mf : (tensor<3x3xf32>, tensor<1x1x1x3xf32>) -> tensor<1x1x3x3xf32>
  %pad = onnx.Equal %sum, %zero : (tensor<1x1x3x3xf32>, tensor<f32>) -> tensor<1x1x3x3xi1>
  %full = onnx.Where %pad, %fmin, %causal : (tensor<1x1x3x3xi1>, tensor<f32>, tensor<3x3xf32>) -> tensor<1x1x3x3xf32>
  %kt = onnx.Transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %qk = onnx.MatMul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %scaled = onnx.Div %qk, %sqrt : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %masked = onnx.Add %scaled, %full : (tensor<1x4x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  %p = onnx.Softmax %masked {axis = -1 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %o = onnx.MatMul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}

// -----

// Near miss: an additive bias computed from activations (ALiBi-like) is not
// a mask; dropping it would change the model, so nothing is raised.
// CHECK-LABEL: func.func @attention_with_bias
//   CHECK-NOT:   llm.attention
//       CHECK:   onnx.Softmax
func.func @attention_with_bias(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>,
                               %bias: tensor<1x4x3x3xf32>) -> tensor<1x4x3x16xf32> {
  %kt = onnx.Transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %qk = onnx.MatMul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %masked = onnx.Add %qk, %bias : (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %p = onnx.Softmax %masked {axis = -1 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %o = onnx.MatMul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}

// -----

// gpt-oss's attention sinks: a column of per-head logits concatenated after
// the masked scores, the row max subtracted, the softmax's last column
// sliced off. The logits become the `sinks` attribute.
// CHECK-LABEL: func.func @attention_sinks
//       CHECK:   llm.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 2.500000e-01 : f32, sinks = array<f32: 5.000000e-01, -1.000000e+00, 0.000000e+00, 2.000000e+00>}
//   CHECK-NOT:   onnx.Softmax
//   CHECK-NOT:   onnx.Concat
func.func @attention_sinks(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>,
                           %mask: tensor<1x3xi64> {onnx.name = "attention_mask"}) -> tensor<1x4x3x16xf32> {
  %min = onnx.Constant dense<-3.40282347E+38> : tensor<3x3xf32>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %axes = onnx.Constant dense<[1, 2]> : tensor<2xi64>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %fmin = onnx.Constant dense<-3.40282347E+38> : tensor<f32>
  %scale = onnx.Constant dense<0.25> : tensor<f32>
  %sinks = onnx.Constant dense<[[[[0.5]], [[-1.0]], [[0.0]], [[2.0]]]]> : tensor<1x4x1x1xf32>
  %sink_shape = onnx.Constant dense<[1, 4, 3, 1]> : tensor<4xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %start = onnx.Constant dense<0> : tensor<1xi64>
  %axis3 = onnx.Constant dense<3> : tensor<1xi64>
  %causal = onnx.Trilu %min, %one {upper = 1 : i64} : (tensor<3x3xf32>, tensor<1xi64>) -> tensor<3x3xf32>
  %m4 = onnx.Unsqueeze %mask, %axes : (tensor<1x3xi64>, tensor<2xi64>) -> tensor<1x1x1x3xi64>
  %mf = onnx.Cast %m4 {to = 1 : i64} : (tensor<1x1x1x3xi64>) -> tensor<1x1x1x3xf32>
  %sum = onnx.Add %causal, %mf : (tensor<3x3xf32>, tensor<1x1x1x3xf32>) -> tensor<1x1x3x3xf32>
  %pad = onnx.Equal %sum, %zero : (tensor<1x1x3x3xf32>, tensor<f32>) -> tensor<1x1x3x3xi1>
  %full = onnx.Where %pad, %fmin, %causal : (tensor<1x1x3x3xi1>, tensor<f32>, tensor<3x3xf32>) -> tensor<1x1x3x3xf32>
  %kt = onnx.Transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %qk = onnx.MatMul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %scaled = onnx.Mul %qk, %scale : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %masked = onnx.Add %scaled, %full : (tensor<1x4x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  %column = onnx.Expand %sinks, %sink_shape : (tensor<1x4x1x1xf32>, tensor<4xi64>) -> tensor<1x4x3x1xf32>
  %both = onnx.Concat %masked, %column {axis = -1 : i64} : (tensor<1x4x3x3xf32>, tensor<1x4x3x1xf32>) -> tensor<1x4x3x4xf32>
  %max = onnx.ReduceMax %both, %last {keepdims = 1 : i64} : (tensor<1x4x3x4xf32>, tensor<1xi64>) -> tensor<1x4x3x1xf32>
  %shifted = onnx.Sub %both, %max : (tensor<1x4x3x4xf32>, tensor<1x4x3x1xf32>) -> tensor<1x4x3x4xf32>
  %p = onnx.Softmax %shifted {axis = -1 : i64} : (tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  %keys = onnx.Slice %p, %start, %last, %axis3, %one : (tensor<1x4x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x3x3xf32>
  %o = onnx.MatMul %keys, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}

// -----

// Near miss: the sink column's weight is kept (the slice takes every
// column but the first): that is no attention over the keys, so nothing is
// raised.
// CHECK-LABEL: func.func @attention_sinks_not_dropped
//   CHECK-NOT:   llm.attention
//       CHECK:   onnx.Softmax
func.func @attention_sinks_not_dropped(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>,
                                       %v: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %sinks = onnx.Constant dense<1.0> : tensor<1x4x1x1xf32>
  %sink_shape = onnx.Constant dense<[1, 4, 3, 1]> : tensor<4xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %end = onnx.Constant dense<4> : tensor<1xi64>
  %axis3 = onnx.Constant dense<3> : tensor<1xi64>
  %kt = onnx.Transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %qk = onnx.MatMul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %column = onnx.Expand %sinks, %sink_shape : (tensor<1x4x1x1xf32>, tensor<4xi64>) -> tensor<1x4x3x1xf32>
  %both = onnx.Concat %qk, %column {axis = 3 : i64} : (tensor<1x4x3x3xf32>, tensor<1x4x3x1xf32>) -> tensor<1x4x3x4xf32>
  %p = onnx.Softmax %both {axis = -1 : i64} : (tensor<1x4x3x4xf32>) -> tensor<1x4x3x4xf32>
  %keys = onnx.Slice %p, %one, %end, %axis3, %one : (tensor<1x4x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x3x3xf32>
  %o = onnx.MatMul %keys, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}

// -----

// The LayerNorm torch.onnx decomposes before opset 17, with its bias folded in.
// The constants it reads become llm.constant; no onnx op is left.
// CHECK-LABEL: func.func @layer_norm
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x16xf32>)
//   CHECK-NOT:   onnx.
//       CHECK:   %[[W:.*]] = llm.constant dense<5.000000e-01> : tensor<16xf32>
//       CHECK:   %[[B:.*]] = llm.constant dense<2.500000e-01> : tensor<16xf32>
//   CHECK-NOT:   onnx.
//       CHECK:   %[[N:.*]] = llm.layer_norm %[[X]], %[[W]], %[[B]] {epsilon = 9.99999974E-6 : f32}
//   CHECK-NOT:   onnx.
//       CHECK:   return %[[N]]
func.func @layer_norm(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %axes = onnx.Constant dense<[-1]> : tensor<1xi64>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-5> : tensor<f32>
  %w = onnx.Constant dense<0.5> : tensor<16xf32>
  %b = onnx.Constant dense<0.25> : tensor<16xf32>
  %mean = onnx.ReduceMean %x, %axes : (tensor<2x16xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %d = onnx.Sub %x, %mean : (tensor<2x16xf32>, tensor<2x1xf32>) -> tensor<2x16xf32>
  %sq = onnx.Pow %d, %two : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %var = onnx.ReduceMean %sq, %axes : (tensor<2x16xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %ve = onnx.Add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %std = onnx.Sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = onnx.Div %d, %std : (tensor<2x16xf32>, tensor<2x1xf32>) -> tensor<2x16xf32>
  %scaled = onnx.Mul %n, %w : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  %y = onnx.Add %scaled, %b : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// Cohere's LayerNorm: no bias, and x - mean multiplied by 1 / sqrt(var + eps).
// CHECK-LABEL: func.func @layer_norm_times_inverse_sqrt
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x16xf32>)
//       CHECK:   %[[N:.*]] = llm.layer_norm %[[X]], %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<2x16xf32>, tensor<16xf32>) -> tensor<2x16xf32>
//       CHECK:   return %[[N]]
func.func @layer_norm_times_inverse_sqrt(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %axes = onnx.Constant dense<[-1]> : tensor<1xi64>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-5> : tensor<f32>
  %w = onnx.Constant dense<0.5> : tensor<16xf32>
  %mean = onnx.ReduceMean %x, %axes : (tensor<2x16xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %d = onnx.Sub %x, %mean : (tensor<2x16xf32>, tensor<2x1xf32>) -> tensor<2x16xf32>
  %sq = onnx.Pow %d, %two : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %var = onnx.ReduceMean %sq, %axes : (tensor<2x16xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %ve = onnx.Add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %std = onnx.Sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %inv = onnx.Div %one, %std : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = onnx.Mul %d, %inv : (tensor<2x16xf32>, tensor<2x1xf32>) -> tensor<2x16xf32>
  %y = onnx.Mul %w, %n : (tensor<16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// Cohere's q/k norm (use_qk_norm): a LayerNorm over each head of a
// projection viewed as [tokens, heads, head_dim], its weight a row per head,
// is the LayerNorm of the projection itself (its runs of 4 scaled by the
// weight's rows), then the view.
// CHECK-LABEL: func.func @layer_norm_per_head
//  CHECK-SAME:   (%[[P:.*]]: tensor<3x8xf32>)
//       CHECK:   %[[W:.*]] = llm.constant dense<{{\[\[}}5.000000e-01, 1.000000e+00, 1.500000e+00, 2.000000e+00], [2.500000e+00, 3.000000e+00, 3.500000e+00, 4.000000e+00]]> : tensor<2x4xf32>
//       CHECK:   %[[N:.*]] = llm.layer_norm %[[P]], %[[W]] {epsilon = 9.99999974E-6 : f32} : (tensor<3x8xf32>, tensor<2x4xf32>) -> tensor<3x8xf32>
//       CHECK:   %[[V:.*]] = onnx.Reshape %[[N]], %{{.*}} : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<3x2x4xf32>
//       CHECK:   return %[[V]]
func.func @layer_norm_per_head(%p: tensor<3x8xf32>) -> tensor<3x2x4xf32> {
  %shape = onnx.Constant dense<[3, 2, 4]> : tensor<3xi64>
  %x = onnx.Reshape %p, %shape : (tensor<3x8xf32>, tensor<3xi64>) -> tensor<3x2x4xf32>
  %axes = onnx.Constant dense<[-1]> : tensor<1xi64>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-5> : tensor<f32>
  %w = onnx.Constant dense<[[0.5, 1.0, 1.5, 2.0], [2.5, 3.0, 3.5, 4.0]]> : tensor<2x4xf32>
  %mean = onnx.ReduceMean %x, %axes : (tensor<3x2x4xf32>, tensor<1xi64>) -> tensor<3x2x1xf32>
  %d = onnx.Sub %x, %mean : (tensor<3x2x4xf32>, tensor<3x2x1xf32>) -> tensor<3x2x4xf32>
  %sq = onnx.Pow %d, %two : (tensor<3x2x4xf32>, tensor<f32>) -> tensor<3x2x4xf32>
  %var = onnx.ReduceMean %sq, %axes : (tensor<3x2x4xf32>, tensor<1xi64>) -> tensor<3x2x1xf32>
  %ve = onnx.Add %var, %eps : (tensor<3x2x1xf32>, tensor<f32>) -> tensor<3x2x1xf32>
  %std = onnx.Sqrt %ve : (tensor<3x2x1xf32>) -> tensor<3x2x1xf32>
  %inv = onnx.Div %one, %std : (tensor<f32>, tensor<3x2x1xf32>) -> tensor<3x2x1xf32>
  %n = onnx.Mul %d, %inv : (tensor<3x2x4xf32>, tensor<3x2x1xf32>) -> tensor<3x2x4xf32>
  %y = onnx.Mul %w, %n : (tensor<2x4xf32>, tensor<3x2x4xf32>) -> tensor<3x2x4xf32>
  return %y : tensor<3x2x4xf32>
}

// -----

// Near miss: a weight per head on what is no view of a projection (an
// input already [tokens, heads, head_dim]) stays unraised.
// CHECK-LABEL: func.func @layer_norm_per_head_of_no_view
//   CHECK-NOT:   llm.layer_norm
//       CHECK:   return
func.func @layer_norm_per_head_of_no_view(%x: tensor<3x2x4xf32>) -> tensor<3x2x4xf32> {
  %axes = onnx.Constant dense<[-1]> : tensor<1xi64>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-5> : tensor<f32>
  %w = onnx.Constant dense<[[0.5, 1.0, 1.5, 2.0], [2.5, 3.0, 3.5, 4.0]]> : tensor<2x4xf32>
  %mean = onnx.ReduceMean %x, %axes : (tensor<3x2x4xf32>, tensor<1xi64>) -> tensor<3x2x1xf32>
  %d = onnx.Sub %x, %mean : (tensor<3x2x4xf32>, tensor<3x2x1xf32>) -> tensor<3x2x4xf32>
  %sq = onnx.Pow %d, %two : (tensor<3x2x4xf32>, tensor<f32>) -> tensor<3x2x4xf32>
  %var = onnx.ReduceMean %sq, %axes : (tensor<3x2x4xf32>, tensor<1xi64>) -> tensor<3x2x1xf32>
  %ve = onnx.Add %var, %eps : (tensor<3x2x1xf32>, tensor<f32>) -> tensor<3x2x1xf32>
  %std = onnx.Sqrt %ve : (tensor<3x2x1xf32>) -> tensor<3x2x1xf32>
  %inv = onnx.Div %one, %std : (tensor<f32>, tensor<3x2x1xf32>) -> tensor<3x2x1xf32>
  %n = onnx.Mul %d, %inv : (tensor<3x2x4xf32>, tensor<3x2x1xf32>) -> tensor<3x2x4xf32>
  %y = onnx.Mul %w, %n : (tensor<2x4xf32>, tensor<3x2x4xf32>) -> tensor<3x2x4xf32>
  return %y : tensor<3x2x4xf32>
}

// -----

// Near miss: the variance is of x, not of x - mean; that is no LayerNorm (nor
// an RMSNorm of the centred value), and stays unraised.
// CHECK-LABEL: func.func @layer_norm_of_other_variance
//   CHECK-NOT:   llm.layer_norm
//   CHECK-NOT:   llm.rms_norm
//       CHECK:   return
func.func @layer_norm_of_other_variance(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %axes = onnx.Constant dense<[-1]> : tensor<1xi64>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %eps = onnx.Constant dense<1.0e-5> : tensor<f32>
  %w = onnx.Constant dense<0.5> : tensor<16xf32>
  %mean = onnx.ReduceMean %x, %axes : (tensor<2x16xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %d = onnx.Sub %x, %mean : (tensor<2x16xf32>, tensor<2x1xf32>) -> tensor<2x16xf32>
  %sq = onnx.Pow %x, %two : (tensor<2x16xf32>, tensor<f32>) -> tensor<2x16xf32>
  %var = onnx.ReduceMean %sq, %axes : (tensor<2x16xf32>, tensor<1xi64>) -> tensor<2x1xf32>
  %ve = onnx.Add %var, %eps : (tensor<2x1xf32>, tensor<f32>) -> tensor<2x1xf32>
  %std = onnx.Sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %inv = onnx.Div %one, %std : (tensor<f32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = onnx.Mul %d, %inv : (tensor<2x16xf32>, tensor<2x1xf32>) -> tensor<2x16xf32>
  %y = onnx.Mul %w, %n : (tensor<16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// Decomposed GELU, exact (erf) and tanh-approximated.
// CHECK-LABEL: func.func @gelu
//  CHECK-SAME:   (%[[X:.*]]: tensor<4xf32>)
//       CHECK:   %[[E:.*]] = llm.gelu %[[X]] :
//       CHECK:   %[[T:.*]] = llm.gelu %[[X]] {tanh_approximation}
//       CHECK:   return %[[E]], %[[T]]
func.func @gelu(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %half = onnx.Constant dense<0.5> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %sqrt2 = onnx.Constant dense<1.41421354> : tensor<f32>
  %three = onnx.Constant dense<3.0> : tensor<f32>
  %c = onnx.Constant dense<0.044715> : tensor<f32>
  %k = onnx.Constant dense<0.797884583> : tensor<f32>
  %hx = onnx.Mul %x, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %xs = onnx.Div %x, %sqrt2 : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %erf = onnx.Erf %xs : (tensor<4xf32>) -> tensor<4xf32>
  %ope = onnx.Add %erf, %one : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %exact = onnx.Mul %hx, %ope : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %cube = onnx.Pow %x, %three : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %cc = onnx.Mul %cube, %c : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %inner = onnx.Add %x, %cc : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %scaled = onnx.Mul %inner, %k : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %t = onnx.Tanh %scaled : (tensor<4xf32>) -> tensor<4xf32>
  %opt = onnx.Add %one, %t : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  %approx = onnx.Mul %hx, %opt : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %exact, %approx : tensor<4xf32>, tensor<4xf32>
}

// -----

// gpt-oss's rotary, written on x's halves with half-width cos/sin (YaRN's
// attention factor on both): x1 * cos - x2 * sin, x2 * cos + x1 * sin.
// CHECK-LABEL: func.func @rope_halves
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<1x2x3x8xf32>, %[[P:[^:]*]]: tensor<1x3xi64>)
//       CHECK:   %[[F:.*]] = llm.constant dense<[1.000000e+00, 1.000000e-01, 0.00999999977, 1.000000e-03]> : tensor<4xf32>
//       CHECK:   %[[R:.*]] = llm.rope %[[X]], %[[P]], %[[F]] {scale = 1.500000e+00 : f32}
//       CHECK:   return %[[R]]
func.func @rope_halves(%x: tensor<1x2x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %inv = onnx.Constant dense<[[[1.0], [0.1], [0.01], [0.001]]]> : tensor<1x4x1xf32>
  %scale = onnx.Constant dense<1.5> : tensor<f32>
  %a1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %a3 = onnx.Constant dense<[3]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %zero = onnx.Constant dense<[0]> : tensor<1xi64>
  %four = onnx.Constant dense<[4]> : tensor<1xi64>
  %eight = onnx.Constant dense<[8]> : tensor<1xi64>
  %pu = onnx.Unsqueeze %pos, %a1 : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x1x3xi64>
  %pf = onnx.Cast %pu {to = 1 : i64} : (tensor<1x1x3xi64>) -> tensor<1x1x3xf32>
  %mm = onnx.MatMul %inv, %pf : (tensor<1x4x1xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %freqs = onnx.Transpose %mm {perm = array<i64: 0, 2, 1>} : (tensor<1x4x3xf32>) -> tensor<1x3x4xf32>
  %c0 = onnx.Cos %freqs : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %s0 = onnx.Sin %freqs : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %c = onnx.Mul %c0, %scale : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %s = onnx.Mul %s0, %scale : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %cu = onnx.Unsqueeze %c, %a1 : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %su = onnx.Unsqueeze %s, %a1 : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %first = onnx.Slice %x, %zero, %four, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %second = onnx.Slice %x, %four, %eight, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %fc = onnx.Mul %first, %cu : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ss = onnx.Mul %second, %su : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %sc = onnx.Mul %second, %cu : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %fs = onnx.Mul %first, %su : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y1 = onnx.Sub %fc, %ss : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y2 = onnx.Add %sc, %fs : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y = onnx.Concat %y1, %y2 {axis = -1 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}


// -----

// The same rotation with x's halves the two results of Split(x, 2, last
// axis): torch.chunk as torch.onnx's dynamo exporter writes gpt-oss's.
// CHECK-LABEL: func.func @rope_halves_split
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<1x2x3x8xf32>, %[[P:[^:]*]]: tensor<1x3xi64>)
//       CHECK:   %[[R:.*]] = llm.rope %[[X]], %[[P]], %{{.*}} {scale = 1.500000e+00 : f32}
//       CHECK:   return %[[R]]
func.func @rope_halves_split(%x: tensor<1x2x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %inv = onnx.Constant dense<[[[1.0], [0.1], [0.01], [0.001]]]> : tensor<1x4x1xf32>
  %scale = onnx.Constant dense<1.5> : tensor<f32>
  %a1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %a3 = onnx.Constant dense<[3]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %zero = onnx.Constant dense<[0]> : tensor<1xi64>
  %four = onnx.Constant dense<[4]> : tensor<1xi64>
  %eight = onnx.Constant dense<[8]> : tensor<1xi64>
  %pu = onnx.Unsqueeze %pos, %a1 : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x1x3xi64>
  %pf = onnx.Cast %pu {to = 1 : i64} : (tensor<1x1x3xi64>) -> tensor<1x1x3xf32>
  %mm = onnx.MatMul %inv, %pf : (tensor<1x4x1xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %freqs = onnx.Transpose %mm {perm = array<i64: 0, 2, 1>} : (tensor<1x4x3xf32>) -> tensor<1x3x4xf32>
  %c0 = onnx.Cos %freqs : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %s0 = onnx.Sin %freqs : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %c = onnx.Mul %c0, %scale : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %s = onnx.Mul %s0, %scale : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %cu = onnx.Unsqueeze %c, %a1 : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %su = onnx.Unsqueeze %s, %a1 : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %none = onnx.None
  %first, %second = onnx.Split %x, %none {axis = 3 : i64, num_outputs = 2 : i64} : (tensor<1x2x3x8xf32>, none) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>)
  %fc = onnx.Mul %first, %cu : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ss = onnx.Mul %second, %su : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %sc = onnx.Mul %second, %cu : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %fs = onnx.Mul %first, %su : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y1 = onnx.Sub %fc, %ss : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y2 = onnx.Add %sc, %fs : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y = onnx.Concat %y1, %y2 {axis = -1 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}

// -----

// Near miss: a Split of another axis than the features' is not x's halves:
// not raised.
// CHECK-LABEL: func.func @rope_split_of_other_axis
//   CHECK-NOT:   llm.rope
func.func @rope_split_of_other_axis(%x: tensor<1x2x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %inv = onnx.Constant dense<[[[1.0], [0.1], [0.01], [0.001]]]> : tensor<1x4x1xf32>
  %scale = onnx.Constant dense<1.5> : tensor<f32>
  %a1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %a3 = onnx.Constant dense<[3]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %zero = onnx.Constant dense<[0]> : tensor<1xi64>
  %four = onnx.Constant dense<[4]> : tensor<1xi64>
  %eight = onnx.Constant dense<[8]> : tensor<1xi64>
  %pu = onnx.Unsqueeze %pos, %a1 : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x1x3xi64>
  %pf = onnx.Cast %pu {to = 1 : i64} : (tensor<1x1x3xi64>) -> tensor<1x1x3xf32>
  %mm = onnx.MatMul %inv, %pf : (tensor<1x4x1xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %freqs = onnx.Transpose %mm {perm = array<i64: 0, 2, 1>} : (tensor<1x4x3xf32>) -> tensor<1x3x4xf32>
  %c0 = onnx.Cos %freqs : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %s0 = onnx.Sin %freqs : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %c = onnx.Mul %c0, %scale : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %s = onnx.Mul %s0, %scale : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %cu = onnx.Unsqueeze %c, %a1 : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %su = onnx.Unsqueeze %s, %a1 : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %sizes = onnx.Constant dense<[4, 4]> : tensor<2xi64>
  %first, %second = onnx.Split %x, %sizes {axis = 2 : i64} : (tensor<1x2x3x8xf32>, tensor<2xi64>) -> (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>)
  %fc = onnx.Mul %first, %cu : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ss = onnx.Mul %second, %su : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %sc = onnx.Mul %second, %cu : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %fs = onnx.Mul %first, %su : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y1 = onnx.Sub %fc, %ss : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y2 = onnx.Add %sc, %fs : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y = onnx.Concat %y1, %y2 {axis = -1 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}

// -----

// Near miss: the halves' signs swapped (x1 * cos + x2 * sin first) rotate
// the other way: not raised.
// CHECK-LABEL: func.func @rope_halves_other_sign
//   CHECK-NOT:   llm.rope
func.func @rope_halves_other_sign(%x: tensor<1x2x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %inv = onnx.Constant dense<[[[1.0], [0.1], [0.01], [0.001]]]> : tensor<1x4x1xf32>
  %scale = onnx.Constant dense<1.5> : tensor<f32>
  %a1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %a3 = onnx.Constant dense<[3]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %zero = onnx.Constant dense<[0]> : tensor<1xi64>
  %four = onnx.Constant dense<[4]> : tensor<1xi64>
  %eight = onnx.Constant dense<[8]> : tensor<1xi64>
  %pu = onnx.Unsqueeze %pos, %a1 : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x1x3xi64>
  %pf = onnx.Cast %pu {to = 1 : i64} : (tensor<1x1x3xi64>) -> tensor<1x1x3xf32>
  %mm = onnx.MatMul %inv, %pf : (tensor<1x4x1xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %freqs = onnx.Transpose %mm {perm = array<i64: 0, 2, 1>} : (tensor<1x4x3xf32>) -> tensor<1x3x4xf32>
  %c0 = onnx.Cos %freqs : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %s0 = onnx.Sin %freqs : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %c = onnx.Mul %c0, %scale : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %s = onnx.Mul %s0, %scale : (tensor<1x3x4xf32>, tensor<f32>) -> tensor<1x3x4xf32>
  %cu = onnx.Unsqueeze %c, %a1 : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %su = onnx.Unsqueeze %s, %a1 : (tensor<1x3x4xf32>, tensor<1xi64>) -> tensor<1x1x3x4xf32>
  %first = onnx.Slice %x, %zero, %four, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %second = onnx.Slice %x, %four, %eight, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %fc = onnx.Mul %first, %cu : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %ss = onnx.Mul %second, %su : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %sc = onnx.Mul %second, %cu : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %fs = onnx.Mul %first, %su : (tensor<1x2x3x4xf32>, tensor<1x1x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y1 = onnx.Add %fc, %ss : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y2 = onnx.Sub %sc, %fs : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %y = onnx.Concat %y1, %y2 {axis = -1 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}

// -----

// Hugging Face's rope: x * cos + rotate_half(x) * sin, with cos/sin computed
// from an inv_freq constant and position_ids.
// CHECK-LABEL: func.func @rope
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<1x2x3x8xf32>, %[[P:[^:]*]]: tensor<1x3xi64>)
//       CHECK:   %[[F:.*]] = llm.constant dense<[1.000000e+00, 1.000000e-01, 0.00999999977, 1.000000e-03]> : tensor<4xf32>
//       CHECK:   %[[R:.*]] = llm.rope %[[X]], %[[P]], %[[F]]
//       CHECK:   return %[[R]]
func.func @rope(%x: tensor<1x2x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %inv = onnx.Constant dense<[[[1.0], [0.1], [0.01], [0.001]]]> : tensor<1x4x1xf32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %a1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %a3 = onnx.Constant dense<[3]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %zero = onnx.Constant dense<[0]> : tensor<1xi64>
  %four = onnx.Constant dense<[4]> : tensor<1xi64>
  %end = onnx.Constant dense<[9223372036854775807]> : tensor<1xi64>
  %pu = onnx.Unsqueeze %pos, %a1 : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x1x3xi64>
  %pf = onnx.Cast %pu {to = 1 : i64} : (tensor<1x1x3xi64>) -> tensor<1x1x3xf32>
  %mm = onnx.MatMul %inv, %pf : (tensor<1x4x1xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %freqs = onnx.Transpose %mm {perm = array<i64: 0, 2, 1>} : (tensor<1x4x3xf32>) -> tensor<1x3x4xf32>
  %emb = onnx.Concat %freqs, %freqs {axis = -1 : i64} : (tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
  %c0 = onnx.Cos %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %s0 = onnx.Sin %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %c = onnx.Mul %c0, %one : (tensor<1x3x8xf32>, tensor<f32>) -> tensor<1x3x8xf32>
  %s = onnx.Mul %s0, %one : (tensor<1x3x8xf32>, tensor<f32>) -> tensor<1x3x8xf32>
  %cu = onnx.Unsqueeze %c, %a1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %su = onnx.Unsqueeze %s, %a1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %first = onnx.Slice %x, %zero, %four, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %second = onnx.Slice %x, %four, %end, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %neg = onnx.Neg %second : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %rot = onnx.Concat %neg, %first {axis = -1 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x8xf32>
  %xc = onnx.Mul %x, %cu : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %rs = onnx.Mul %rot, %su : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %y = onnx.Add %xc, %rs : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}

// -----

// YaRN's and LongRoPE's rope: cos and sin times the same attention factor,
// which llm.rope keeps as its scale.
// CHECK-LABEL: func.func @rope_scaled
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<1x2x3x8xf32>, %[[P:[^:]*]]: tensor<1x3xi64>)
//       CHECK:   %[[R:.*]] = llm.rope %[[X]], %[[P]], %{{.*}} {scale = 1.250000e+00 : f32}
//       CHECK:   return %[[R]]
func.func @rope_scaled(%x: tensor<1x2x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %inv = onnx.Constant dense<[[[1.0], [0.1], [0.01], [0.001]]]> : tensor<1x4x1xf32>
  %cscale = onnx.Constant dense<1.25> : tensor<f32>
  %sscale = onnx.Constant dense<1.25> : tensor<f32>
  %a1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %a3 = onnx.Constant dense<[3]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %zero = onnx.Constant dense<[0]> : tensor<1xi64>
  %four = onnx.Constant dense<[4]> : tensor<1xi64>
  %end = onnx.Constant dense<[9223372036854775807]> : tensor<1xi64>
  %pu = onnx.Unsqueeze %pos, %a1 : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x1x3xi64>
  %pf = onnx.Cast %pu {to = 1 : i64} : (tensor<1x1x3xi64>) -> tensor<1x1x3xf32>
  %mm = onnx.MatMul %inv, %pf : (tensor<1x4x1xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %freqs = onnx.Transpose %mm {perm = array<i64: 0, 2, 1>} : (tensor<1x4x3xf32>) -> tensor<1x3x4xf32>
  %emb = onnx.Concat %freqs, %freqs {axis = -1 : i64} : (tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
  %c0 = onnx.Cos %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %s0 = onnx.Sin %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %c = onnx.Mul %c0, %cscale : (tensor<1x3x8xf32>, tensor<f32>) -> tensor<1x3x8xf32>
  %s = onnx.Mul %s0, %sscale : (tensor<1x3x8xf32>, tensor<f32>) -> tensor<1x3x8xf32>
  %cu = onnx.Unsqueeze %c, %a1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %su = onnx.Unsqueeze %s, %a1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %first = onnx.Slice %x, %zero, %four, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %second = onnx.Slice %x, %four, %end, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %neg = onnx.Neg %second : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %rot = onnx.Concat %neg, %first {axis = -1 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x8xf32>
  %xc = onnx.Mul %x, %cu : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %rs = onnx.Mul %rot, %su : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %y = onnx.Add %xc, %rs : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}

// -----

// Near miss: cos and sin scaled by different factors are not a rotation.
// CHECK-LABEL: func.func @rope_scaled_apart
//   CHECK-NOT:   llm.rope
//       CHECK:   onnx.Cos
func.func @rope_scaled_apart(%x: tensor<1x2x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %inv = onnx.Constant dense<[[[1.0], [0.1], [0.01], [0.001]]]> : tensor<1x4x1xf32>
  %cscale = onnx.Constant dense<1.25> : tensor<f32>
  %sscale = onnx.Constant dense<1.5> : tensor<f32>
  %a1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %a3 = onnx.Constant dense<[3]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %zero = onnx.Constant dense<[0]> : tensor<1xi64>
  %four = onnx.Constant dense<[4]> : tensor<1xi64>
  %end = onnx.Constant dense<[9223372036854775807]> : tensor<1xi64>
  %pu = onnx.Unsqueeze %pos, %a1 : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x1x3xi64>
  %pf = onnx.Cast %pu {to = 1 : i64} : (tensor<1x1x3xi64>) -> tensor<1x1x3xf32>
  %mm = onnx.MatMul %inv, %pf : (tensor<1x4x1xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %freqs = onnx.Transpose %mm {perm = array<i64: 0, 2, 1>} : (tensor<1x4x3xf32>) -> tensor<1x3x4xf32>
  %emb = onnx.Concat %freqs, %freqs {axis = -1 : i64} : (tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
  %c0 = onnx.Cos %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %s0 = onnx.Sin %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %c = onnx.Mul %c0, %cscale : (tensor<1x3x8xf32>, tensor<f32>) -> tensor<1x3x8xf32>
  %s = onnx.Mul %s0, %sscale : (tensor<1x3x8xf32>, tensor<f32>) -> tensor<1x3x8xf32>
  %cu = onnx.Unsqueeze %c, %a1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %su = onnx.Unsqueeze %s, %a1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %first = onnx.Slice %x, %zero, %four, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %second = onnx.Slice %x, %four, %end, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %neg = onnx.Neg %second : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %rot = onnx.Concat %neg, %first {axis = -1 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x8xf32>
  %xc = onnx.Mul %x, %cu : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %rs = onnx.Mul %rot, %su : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %y = onnx.Add %xc, %rs : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}

// -----

// Near miss: rotate_half with the halves not negated is not rope.
// CHECK-LABEL: func.func @rope_unnegated
//   CHECK-NOT:   llm.rope
//       CHECK:   onnx.Cos
func.func @rope_unnegated(%x: tensor<1x2x3x8xf32>, %pos: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  %inv = onnx.Constant dense<[[[1.0], [0.1], [0.01], [0.001]]]> : tensor<1x4x1xf32>
  %a1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %a3 = onnx.Constant dense<[3]> : tensor<1xi64>
  %s1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %zero = onnx.Constant dense<[0]> : tensor<1xi64>
  %four = onnx.Constant dense<[4]> : tensor<1xi64>
  %end = onnx.Constant dense<[9223372036854775807]> : tensor<1xi64>
  %pu = onnx.Unsqueeze %pos, %a1 : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x1x3xi64>
  %pf = onnx.Cast %pu {to = 1 : i64} : (tensor<1x1x3xi64>) -> tensor<1x1x3xf32>
  %mm = onnx.MatMul %inv, %pf : (tensor<1x4x1xf32>, tensor<1x1x3xf32>) -> tensor<1x4x3xf32>
  %freqs = onnx.Transpose %mm {perm = array<i64: 0, 2, 1>} : (tensor<1x4x3xf32>) -> tensor<1x3x4xf32>
  %emb = onnx.Concat %freqs, %freqs {axis = -1 : i64} : (tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
  %c = onnx.Cos %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %s = onnx.Sin %emb : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %cu = onnx.Unsqueeze %c, %a1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %su = onnx.Unsqueeze %s, %a1 : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %first = onnx.Slice %x, %zero, %four, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %second = onnx.Slice %x, %four, %end, %a3, %s1 : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %rot = onnx.Concat %second, %first {axis = -1 : i64} : (tensor<1x2x3x4xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x8xf32>
  %xc = onnx.Mul %x, %cu : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %rs = onnx.Mul %rot, %su : (tensor<1x2x3x8xf32>, tensor<1x1x3x8xf32>) -> tensor<1x2x3x8xf32>
  %y = onnx.Add %xc, %rs : (tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}

// -----

// Near miss: a sliding-window mask over constant key positions and
// position_ids of static shape [3, 1] fits no probe (the types fix the new
// tokens at one, the keys at three), so it is not proven and nothing is
// raised. (prove-masks.mlir raises a window mask built from attention_mask.)
// CHECK-LABEL: func.func @attention_sliding_window
//   CHECK-NOT:   llm.attention
//       CHECK:   onnx.Softmax
func.func @attention_sliding_window(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>,
                                    %pos: tensor<3x1xi64> {onnx.name = "position_ids"}) -> tensor<1x4x3x16xf32> {
  %keys = onnx.Constant dense<[0, 1, 2]> : tensor<3xi64>
  %window = onnx.Constant dense<2> : tensor<i64>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %min = onnx.Constant dense<-3.40282347E+38> : tensor<f32>
  %future = onnx.Greater %keys, %pos : (tensor<3xi64>, tensor<3x1xi64>) -> tensor<3x3xi1>
  %start = onnx.Sub %pos, %window : (tensor<3x1xi64>, tensor<i64>) -> tensor<3x1xi64>
  %old = onnx.LessOrEqual %keys, %start : (tensor<3xi64>, tensor<3x1xi64>) -> tensor<3x3xi1>
  %hidden = onnx.Or %future, %old : (tensor<3x3xi1>, tensor<3x3xi1>) -> tensor<3x3xi1>
  %mask = onnx.Where %hidden, %min, %zero : (tensor<3x3xi1>, tensor<f32>, tensor<f32>) -> tensor<3x3xf32>
  %kt = onnx.Transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %qk = onnx.MatMul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %masked = onnx.Add %qk, %mask : (tensor<1x4x3x3xf32>, tensor<3x3xf32>) -> tensor<1x4x3x3xf32>
  %p = onnx.Softmax %masked {axis = -1 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %o = onnx.MatMul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}

// -----

// torch.onnx writes a tied head's `weight.T` as a Transpose without perm
// (ONNX then reverses the dims): the same linear over the transposed weight.
// CHECK-LABEL: func.func @linear_transpose_without_perm
//       CHECK:   llm.linear %{{.*}}, %{{.*}} {transpose_weight}
//   CHECK-NOT:   onnx.Transpose
func.func @linear_transpose_without_perm(%x: tensor<1x3x64xf32>) -> tensor<1x3x512xf32> {
  %w = onnx.Constant dense<1.0> : tensor<512x64xf32>
  %wt = onnx.Transpose %w : (tensor<512x64xf32>) -> tensor<64x512xf32>
  %y = onnx.MatMul %x, %wt : (tensor<1x3x64xf32>, tensor<64x512xf32>) -> tensor<1x3x512xf32>
  return %y : tensor<1x3x512xf32>
}

// -----

// Near miss: a perm-less Transpose of an activation is not a weight.
// CHECK-LABEL: func.func @transposed_activation_is_not_a_weight
//       CHECK:   onnx.Transpose
//       CHECK:   onnx.MatMul
func.func @transposed_activation_is_not_a_weight(%x: tensor<1x3x64xf32>, %m: tensor<512x64xf32>) -> tensor<1x3x512xf32> {
  %mt = onnx.Transpose %m : (tensor<512x64xf32>) -> tensor<64x512xf32>
  %y = onnx.MatMul %x, %mt : (tensor<1x3x64xf32>, tensor<64x512xf32>) -> tensor<1x3x512xf32>
  return %y : tensor<1x3x512xf32>
}

// -----

// Slices that take each column of a linear once are the parts of a packed
// projection (Phi-3's gate_up_proj): one llm.split, which fusion reads as
// the two halves of a gated GEMM.
// CHECK-LABEL: func.func @packed_projection_split
//       CHECK:   %[[P:.*]] = llm.linear
//       CHECK:   %[[S:.*]]:2 = llm.split %[[P]] {sizes = array<i64: 8, 8>}
//       CHECK:   llm.swiglu %[[S]]#0, %[[S]]#1
//   CHECK-NOT:   onnx.Slice
func.func @packed_projection_split(%x: tensor<1x3x4xf32>) -> tensor<1x3x8xf32> {
  %w = onnx.Constant dense<1.0> : tensor<4x16xf32>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %eight = onnx.Constant dense<8> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %none = onnx.None
  %gate_up = onnx.MatMul %x, %w : (tensor<1x3x4xf32>, tensor<4x16xf32>) -> tensor<1x3x16xf32>
  %gate = onnx.Slice %gate_up, %zero, %eight, %last, %none : (tensor<1x3x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x3x8xf32>
  %up = onnx.Slice %gate_up, %eight, %end, %last, %none : (tensor<1x3x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x3x8xf32>
  %s = onnx.Sigmoid %gate : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %silu = onnx.Mul %gate, %s : (tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %y = onnx.Mul %silu, %up : (tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// Near miss: slices that overlap (or leave columns out) are no partition of
// the projection and stay slices.
// CHECK-LABEL: func.func @overlapping_slices_stay
//   CHECK-NOT:   llm.split
//       CHECK:   onnx.Slice
//       CHECK:   onnx.Slice
func.func @overlapping_slices_stay(%x: tensor<1x3x4xf32>) -> (tensor<1x3x10xf32>, tensor<1x3x8xf32>) {
  %w = onnx.Constant dense<1.0> : tensor<4x16xf32>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %eight = onnx.Constant dense<8> : tensor<1xi64>
  %ten = onnx.Constant dense<10> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %none = onnx.None
  %p = onnx.MatMul %x, %w : (tensor<1x3x4xf32>, tensor<4x16xf32>) -> tensor<1x3x16xf32>
  %a = onnx.Slice %p, %zero, %ten, %last, %none : (tensor<1x3x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x3x10xf32>
  %b = onnx.Slice %p, %eight, %end, %last, %none : (tensor<1x3x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x3x8xf32>
  return %a, %b : tensor<1x3x10xf32>, tensor<1x3x8xf32>
}

// -----

// A projection laid out head by head, [heads, q|k|v, head_dim] (GPT-NeoX's
// query_key_value), sliced per head: its weight and bias columns reordered
// part by part at compile time, then one llm.split and a split_heads per part.
// CHECK-LABEL: func.func @head_interleaved_projection
//   CHECK-DAG:   %[[W:.*]] = llm.constant dense<{{\[}}[0.000000e+00, 1.000000e+00, 6.000000e+00, 7.000000e+00, 2.000000e+00, 3.000000e+00, 8.000000e+00, 9.000000e+00, 4.000000e+00, 5.000000e+00, 1.000000e+01, 1.100000e+01]]>
//   CHECK-DAG:   %[[B:.*]] = llm.constant dense<[0.000000e+00, 1.000000e+00, 6.000000e+00, 7.000000e+00, 2.000000e+00, 3.000000e+00, 8.000000e+00, 9.000000e+00, 4.000000e+00, 5.000000e+00, 1.000000e+01, 1.100000e+01]>
//       CHECK:   %[[P:.*]] = llm.linear %{{.*}}, %[[W]], %[[B]]
//       CHECK:   %[[S:.*]]:3 = llm.split %[[P]] {sizes = array<i64: 4, 4, 4>}
//       CHECK:   %[[Q:.*]] = llm.split_heads %[[S]]#0 {num_heads = 2 : i64}
//       CHECK:   %[[K:.*]] = llm.split_heads %[[S]]#1 {num_heads = 2 : i64}
//       CHECK:   %[[V:.*]] = llm.split_heads %[[S]]#2 {num_heads = 2 : i64}
//       CHECK:   return %[[Q]], %[[K]], %[[V]]
//   CHECK-NOT:   onnx.Slice
func.func @head_interleaved_projection(%x: tensor<1x3x1xf32>) -> (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) {
  %w = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]]> : tensor<1x12xf32>
  %b = onnx.Constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]> : tensor<12xf32>
  %shape = onnx.Constant dense<[0, 0, 2, 6]> : tensor<4xi64>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %none = onnx.None
  %m = onnx.MatMul %x, %w : (tensor<1x3x1xf32>, tensor<1x12xf32>) -> tensor<1x3x12xf32>
  %p = onnx.Add %m, %b : (tensor<1x3x12xf32>, tensor<12xf32>) -> tensor<1x3x12xf32>
  %r = onnx.Reshape %p, %shape : (tensor<1x3x12xf32>, tensor<4xi64>) -> tensor<1x3x2x6xf32>
  %t = onnx.Transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x6xf32>) -> tensor<1x2x3x6xf32>
  %q = onnx.Slice %t, %zero, %two, %last, %none : (tensor<1x2x3x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x2x3x2xf32>
  %k = onnx.Slice %t, %two, %four, %last, %none : (tensor<1x2x3x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x2x3x2xf32>
  %v = onnx.Slice %t, %four, %end, %last, %none : (tensor<1x2x3x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x2x3x2xf32>
  return %q, %k, %v : tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>
}

// -----

// BLOOM's query_key_value viewed as [b, s, heads, 3, head_dim], each part a
// Gather on axis 3 transposed to heads: the same head-by-head layout as
// GPT-NeoX's, reordered part by part.
// CHECK-LABEL: func.func @head_part_gathers
//   CHECK-DAG:   %[[W:.*]] = llm.constant dense<{{\[}}[0.000000e+00, 1.000000e+00, 6.000000e+00, 7.000000e+00, 2.000000e+00, 3.000000e+00, 8.000000e+00, 9.000000e+00, 4.000000e+00, 5.000000e+00, 1.000000e+01, 1.100000e+01]]>
//       CHECK:   %[[P:.*]] = llm.linear %{{.*}}, %[[W]]
//       CHECK:   %[[S:.*]]:3 = llm.split %[[P]] {sizes = array<i64: 4, 4, 4>}
//       CHECK:   %[[Q:.*]] = llm.split_heads %[[S]]#0 {num_heads = 2 : i64}
//       CHECK:   %[[K:.*]] = llm.split_heads %[[S]]#1 {num_heads = 2 : i64}
//       CHECK:   %[[V:.*]] = llm.split_heads %[[S]]#2 {num_heads = 2 : i64}
//       CHECK:   return %[[Q]], %[[K]], %[[V]]
//   CHECK-NOT:   onnx.Gather
func.func @head_part_gathers(%x: tensor<1x3x1xf32>) -> (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) {
  %w = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]]> : tensor<1x12xf32>
  %shape = onnx.Constant dense<[0, 0, 2, 3, 2]> : tensor<5xi64>
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %c2 = onnx.Constant dense<2> : tensor<i64>
  %m = onnx.MatMul %x, %w : (tensor<1x3x1xf32>, tensor<1x12xf32>) -> tensor<1x3x12xf32>
  %r = onnx.Reshape %m, %shape : (tensor<1x3x12xf32>, tensor<5xi64>) -> tensor<1x3x2x3x2xf32>
  %q = onnx.Gather %r, %c0 {axis = 3 : i64} : (tensor<1x3x2x3x2xf32>, tensor<i64>) -> tensor<1x3x2x2xf32>
  %k = onnx.Gather %r, %c1 {axis = 3 : i64} : (tensor<1x3x2x3x2xf32>, tensor<i64>) -> tensor<1x3x2x2xf32>
  %v = onnx.Gather %r, %c2 {axis = 3 : i64} : (tensor<1x3x2x3x2xf32>, tensor<i64>) -> tensor<1x3x2x2xf32>
  %qt = onnx.Transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
  %kt = onnx.Transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
  %vt = onnx.Transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
  return %qt, %kt, %vt : tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>
}

// -----

// Near miss: a part read as it is, not as heads, keeps the gathers.
// CHECK-LABEL: func.func @head_part_read_untransposed
//       CHECK:   onnx.Gather
func.func @head_part_read_untransposed(%x: tensor<1x3x1xf32>) -> (tensor<1x2x3x2xf32>, tensor<1x3x2x2xf32>) {
  %w = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]]> : tensor<1x12xf32>
  %shape = onnx.Constant dense<[0, 0, 2, 3, 2]> : tensor<5xi64>
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %m = onnx.MatMul %x, %w : (tensor<1x3x1xf32>, tensor<1x12xf32>) -> tensor<1x3x12xf32>
  %r = onnx.Reshape %m, %shape : (tensor<1x3x12xf32>, tensor<5xi64>) -> tensor<1x3x2x3x2xf32>
  %q = onnx.Gather %r, %c0 {axis = 3 : i64} : (tensor<1x3x2x3x2xf32>, tensor<i64>) -> tensor<1x3x2x2xf32>
  %k = onnx.Gather %r, %c1 {axis = 3 : i64} : (tensor<1x3x2x3x2xf32>, tensor<i64>) -> tensor<1x3x2x2xf32>
  %qt = onnx.Transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x2xf32>) -> tensor<1x2x3x2xf32>
  return %qt, %k : tensor<1x2x3x2xf32>, tensor<1x3x2x2xf32>
}

// -----

// Falcon's fused query_key_value viewed as [b, s, heads + 2, D]: the query
// heads sliced, the key and value heads gathered. The linear's columns split
// into the three runs of heads, each its own split_heads.
// CHECK-LABEL: func.func @head_group_selection
//       CHECK:   %[[P:.*]] = llm.linear
//       CHECK:   %[[S:.*]]:3 = llm.split %[[P]] {sizes = array<i64: 8, 2, 2>}
//       CHECK:   %[[Q:.*]] = llm.split_heads %[[S]]#0 {num_heads = 4 : i64}
//       CHECK:   %[[K:.*]] = llm.split_heads %[[S]]#1 {num_heads = 1 : i64}
//       CHECK:   %[[V:.*]] = llm.split_heads %[[S]]#2 {num_heads = 1 : i64}
//       CHECK:   return %[[Q]], %[[K]], %[[V]]
func.func @head_group_selection(%x: tensor<1x3x4xf32>) -> (tensor<1x4x3x2xf32>, tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) {
  %w = onnx.Constant dense<1.0> : tensor<4x12xf32>
  %shape = onnx.Constant dense<[0, 0, 6, 2]> : tensor<4xi64>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %five = onnx.Constant dense<5> : tensor<1xi64>
  %axis = onnx.Constant dense<2> : tensor<1xi64>
  %none = onnx.None
  %p = onnx.MatMul %x, %w : (tensor<1x3x4xf32>, tensor<4x12xf32>) -> tensor<1x3x12xf32>
  %r = onnx.Reshape %p, %shape : (tensor<1x3x12xf32>, tensor<4xi64>) -> tensor<1x3x6x2xf32>
  %q = onnx.Slice %r, %zero, %four, %axis, %none : (tensor<1x3x6x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x3x4x2xf32>
  %k = onnx.Gather %r, %four {axis = 2 : i64} : (tensor<1x3x6x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2xf32>
  %v = onnx.Gather %r, %five {axis = 2 : i64} : (tensor<1x3x6x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2xf32>
  %qt = onnx.Transpose %q {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x4x2xf32>) -> tensor<1x4x3x2xf32>
  %kt = onnx.Transpose %k {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x1x2xf32>) -> tensor<1x1x3x2xf32>
  %vt = onnx.Transpose %v {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x1x2xf32>) -> tensor<1x1x3x2xf32>
  return %qt, %kt, %vt : tensor<1x4x3x2xf32>, tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>
}

// -----

// Near miss: the key head gathered twice and the value head never: no
// partition of the heads, so no split.
// CHECK-LABEL: func.func @head_group_selection_overlaps
//   CHECK-NOT:   llm.split
//       CHECK:   onnx.Gather
func.func @head_group_selection_overlaps(%x: tensor<1x3x4xf32>) -> (tensor<1x3x4x2xf32>, tensor<1x3x1x2xf32>, tensor<1x3x1x2xf32>) {
  %w = onnx.Constant dense<1.0> : tensor<4x10xf32>
  %shape = onnx.Constant dense<[0, 0, 5, 2]> : tensor<4xi64>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %three = onnx.Constant dense<3> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %axis = onnx.Constant dense<2> : tensor<1xi64>
  %none = onnx.None
  %p = onnx.MatMul %x, %w : (tensor<1x3x4xf32>, tensor<4x10xf32>) -> tensor<1x3x10xf32>
  %r = onnx.Reshape %p, %shape : (tensor<1x3x10xf32>, tensor<4xi64>) -> tensor<1x3x5x2xf32>
  %q = onnx.Slice %r, %zero, %four, %axis, %none : (tensor<1x3x5x2xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x3x4x2xf32>
  %k = onnx.Gather %r, %three {axis = 2 : i64} : (tensor<1x3x5x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2xf32>
  %v = onnx.Gather %r, %three {axis = 2 : i64} : (tensor<1x3x5x2xf32>, tensor<1xi64>) -> tensor<1x3x1x2xf32>
  return %q, %k, %v : tensor<1x3x4x2xf32>, tensor<1x3x1x2xf32>, tensor<1x3x1x2xf32>
}

// -----

// GPT-BigCode's multi-query c_attn: the projection unsqueezed to one head and
// split into q, k and v along the features. The linear is split instead; k
// and v are one head each, and q viewed as heads is split_heads of its part.
// CHECK-LABEL: func.func @unsqueezed_projection_split
//       CHECK:   %[[P:.*]] = llm.linear
//       CHECK:   %[[S:.*]]:3 = llm.split %[[P]] {sizes = array<i64: 8, 2, 2>}
//   CHECK-DAG:   %[[K:.*]] = llm.split_heads %[[S]]#1 {num_heads = 1 : i64}
//   CHECK-DAG:   %[[V:.*]] = llm.split_heads %[[S]]#2 {num_heads = 1 : i64}
//   CHECK-DAG:   %[[Q:.*]] = llm.split_heads %[[S]]#0 {num_heads = 4 : i64}
//       CHECK:   return %[[Q]], %[[K]], %[[V]]
func.func @unsqueezed_projection_split(%x: tensor<1x3x4xf32>) -> (tensor<1x4x3x2xf32>, tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>) {
  %w = onnx.Constant dense<1.0> : tensor<4x12xf32>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %sizes = onnx.Constant dense<[8, 2, 2]> : tensor<3xi64>
  %heads = onnx.Constant dense<[1, 3, 4, 2]> : tensor<4xi64>
  %p = onnx.MatMul %x, %w : (tensor<1x3x4xf32>, tensor<4x12xf32>) -> tensor<1x3x12xf32>
  %u = onnx.Unsqueeze %p, %one : (tensor<1x3x12xf32>, tensor<1xi64>) -> tensor<1x1x3x12xf32>
  %q, %k, %v = onnx.Split %u, %sizes {axis = 3 : i64} : (tensor<1x1x3x12xf32>, tensor<3xi64>) -> (tensor<1x1x3x8xf32>, tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>)
  %r = onnx.Reshape %q, %heads : (tensor<1x1x3x8xf32>, tensor<4xi64>) -> tensor<1x3x4x2xf32>
  %qt = onnx.Transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x4x2xf32>) -> tensor<1x4x3x2xf32>
  return %qt, %k, %v : tensor<1x4x3x2xf32>, tensor<1x1x3x2xf32>, tensor<1x1x3x2xf32>
}

// -----

// Near miss: unsqueezed at axis 0, the parts are not heads; the split stays.
// CHECK-LABEL: func.func @projection_unsqueezed_elsewhere
//   CHECK-NOT:   llm.split_heads
//       CHECK:   onnx.Split
func.func @projection_unsqueezed_elsewhere(%x: tensor<1x3x4xf32>) -> (tensor<1x1x3x8xf32>, tensor<1x1x3x4xf32>) {
  %w = onnx.Constant dense<1.0> : tensor<4x12xf32>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %sizes = onnx.Constant dense<[8, 4]> : tensor<2xi64>
  %p = onnx.MatMul %x, %w : (tensor<1x3x4xf32>, tensor<4x12xf32>) -> tensor<1x3x12xf32>
  %u = onnx.Unsqueeze %p, %zero : (tensor<1x3x12xf32>, tensor<1xi64>) -> tensor<1x1x3x12xf32>
  %a, %b = onnx.Split %u, %sizes {axis = 3 : i64} : (tensor<1x1x3x12xf32>, tensor<2xi64>) -> (tensor<1x1x3x8xf32>, tensor<1x1x3x4xf32>)
  return %a, %b : tensor<1x1x3x8xf32>, tensor<1x1x3x4xf32>
}

// -----

// The same projection split per head by one Split, as torch.onnx's dynamo
// exporter writes GPT-NeoX's query_key_value.
// CHECK-LABEL: func.func @head_interleaved_projection_split
//       CHECK:   %[[S:.*]]:3 = llm.split %{{.*}} {sizes = array<i64: 4, 4, 4>}
//       CHECK:   %[[Q:.*]] = llm.split_heads %[[S]]#0 {num_heads = 2 : i64}
//       CHECK:   %[[K:.*]] = llm.split_heads %[[S]]#1 {num_heads = 2 : i64}
//       CHECK:   %[[V:.*]] = llm.split_heads %[[S]]#2 {num_heads = 2 : i64}
//       CHECK:   return %[[Q]], %[[K]], %[[V]]
//   CHECK-NOT:   onnx.Split
func.func @head_interleaved_projection_split(%x: tensor<1x3x1xf32>) -> (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) {
  %w = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]]> : tensor<1x12xf32>
  %shape = onnx.Constant dense<[0, 0, 2, 6]> : tensor<4xi64>
  %sizes = onnx.Constant dense<2> : tensor<3xi64>
  %m = onnx.MatMul %x, %w : (tensor<1x3x1xf32>, tensor<1x12xf32>) -> tensor<1x3x12xf32>
  %r = onnx.Reshape %m, %shape : (tensor<1x3x12xf32>, tensor<4xi64>) -> tensor<1x3x2x6xf32>
  %t = onnx.Transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x6xf32>) -> tensor<1x2x3x6xf32>
  %q, %k, %v = onnx.Split %t, %sizes {axis = -1 : i64} : (tensor<1x2x3x6xf32>, tensor<3xi64>) -> (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>)
  return %q, %k, %v : tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>
}

// -----

// A projection laid out in groups of heads, each group's q, v and k side by
// side, viewed as [b, s, groups, group width] and split along the group
// (CodeGen's qkv_proj): its columns reordered part by part at compile time,
// one llm.split, each part viewed as its groups again.
// CHECK-LABEL: func.func @group_interleaved_projection
//   CHECK-DAG:   %[[W:.*]] = llm.constant dense<{{\[}}[0.000000e+00, 1.000000e+00, 6.000000e+00, 7.000000e+00, 2.000000e+00, 3.000000e+00, 8.000000e+00, 9.000000e+00, 4.000000e+00, 5.000000e+00, 1.000000e+01, 1.100000e+01]]>
//       CHECK:   %[[P:.*]] = llm.linear %{{.*}}, %[[W]]
//       CHECK:   %[[S:.*]]:3 = llm.split %[[P]] {sizes = array<i64: 4, 4, 4>}
//       CHECK:   %[[Q:.*]] = onnx.Reshape %[[S]]#0, %{{.*}} -> tensor<1x3x2x2xf32>
//       CHECK:   %[[V:.*]] = onnx.Reshape %[[S]]#1, %{{.*}} -> tensor<1x3x2x2xf32>
//       CHECK:   %[[K:.*]] = onnx.Reshape %[[S]]#2, %{{.*}} -> tensor<1x3x2x2xf32>
//       CHECK:   return %[[Q]], %[[V]], %[[K]]
//   CHECK-NOT:   onnx.Split
func.func @group_interleaved_projection(%x: tensor<1x3x1xf32>) -> (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>) {
  %w = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]]> : tensor<1x12xf32>
  %shape = onnx.Constant dense<[0, 0, 2, 6]> : tensor<4xi64>
  %sizes = onnx.Constant dense<2> : tensor<3xi64>
  %m = onnx.MatMul %x, %w : (tensor<1x3x1xf32>, tensor<1x12xf32>) -> tensor<1x3x12xf32>
  %r = onnx.Reshape %m, %shape : (tensor<1x3x12xf32>, tensor<4xi64>) -> tensor<1x3x2x6xf32>
  %q, %v, %k = onnx.Split %r, %sizes {axis = -1 : i64} : (tensor<1x3x2x6xf32>, tensor<3xi64>) -> (tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>)
  return %q, %v, %k : tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>, tensor<1x3x2x2xf32>
}

// -----

// Near miss: the view moves the sequence into the batch, so its groups are
// not of one token's features; the Split stays.
// CHECK-LABEL: func.func @grouped_view_across_tokens
//       CHECK:   onnx.Split
func.func @grouped_view_across_tokens(%x: tensor<1x3x1xf32>) -> (tensor<3x1x2x2xf32>, tensor<3x1x2x2xf32>, tensor<3x1x2x2xf32>) {
  %w = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]]> : tensor<1x12xf32>
  %shape = onnx.Constant dense<[3, 1, 2, 6]> : tensor<4xi64>
  %sizes = onnx.Constant dense<2> : tensor<3xi64>
  %m = onnx.MatMul %x, %w : (tensor<1x3x1xf32>, tensor<1x12xf32>) -> tensor<1x3x12xf32>
  %r = onnx.Reshape %m, %shape : (tensor<1x3x12xf32>, tensor<4xi64>) -> tensor<3x1x2x6xf32>
  %q, %v, %k = onnx.Split %r, %sizes {axis = -1 : i64} : (tensor<3x1x2x6xf32>, tensor<3xi64>) -> (tensor<3x1x2x2xf32>, tensor<3x1x2x2xf32>, tensor<3x1x2x2xf32>)
  return %q, %v, %k : tensor<3x1x2x2xf32>, tensor<3x1x2x2xf32>, tensor<3x1x2x2xf32>
}

// -----

// Near miss: one head viewed with a 0 entry, which copies the head axis (1)
// where the projection has its sequence; the view keeps reading the head.
// CHECK-LABEL: func.func @one_head_viewed_with_a_copied_dim
//       CHECK:   %[[H:.*]] = llm.split_heads %{{.*}} {num_heads = 1 : i64}
//       CHECK:   onnx.Reshape %[[H]], %{{.*}} : (tensor<1x1x3x4xf32>, tensor<3xi64>) -> tensor<1x1x12xf32>
func.func @one_head_viewed_with_a_copied_dim(%x: tensor<1x3x4xf32>) -> tensor<1x1x12xf32> {
  %w = onnx.Constant dense<1.0> : tensor<4x8xf32>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %sizes = onnx.Constant dense<[4, 4]> : tensor<2xi64>
  %shape = onnx.Constant dense<[0, 0, 12]> : tensor<3xi64>
  %p = onnx.MatMul %x, %w : (tensor<1x3x4xf32>, tensor<4x8xf32>) -> tensor<1x3x8xf32>
  %u = onnx.Unsqueeze %p, %one : (tensor<1x3x8xf32>, tensor<1xi64>) -> tensor<1x1x3x8xf32>
  %a, %b = onnx.Split %u, %sizes {axis = 3 : i64} : (tensor<1x1x3x8xf32>, tensor<2xi64>) -> (tensor<1x1x3x4xf32>, tensor<1x1x3x4xf32>)
  %r = onnx.Reshape %a, %shape : (tensor<1x1x3x4xf32>, tensor<3xi64>) -> tensor<1x1x12xf32>
  return %r : tensor<1x1x12xf32>
}

// -----

// Near miss: per-head slices that leave a column of each head out are no
// partition of the heads; the projection keeps its layout and the slices stay.
// CHECK-LABEL: func.func @head_slices_leave_columns_out
//       CHECK:   llm.split_heads
//   CHECK-NOT:   llm.split {{.*}}sizes
//       CHECK:   onnx.Slice
//       CHECK:   onnx.Slice
func.func @head_slices_leave_columns_out(%x: tensor<1x3x1xf32>) -> (tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>) {
  %w = onnx.Constant dense<1.0> : tensor<1x12xf32>
  %shape = onnx.Constant dense<[0, 0, 2, 6]> : tensor<4xi64>
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %none = onnx.None
  %p = onnx.MatMul %x, %w : (tensor<1x3x1xf32>, tensor<1x12xf32>) -> tensor<1x3x12xf32>
  %r = onnx.Reshape %p, %shape : (tensor<1x3x12xf32>, tensor<4xi64>) -> tensor<1x3x2x6xf32>
  %t = onnx.Transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x3x2x6xf32>) -> tensor<1x2x3x6xf32>
  %q = onnx.Slice %t, %zero, %two, %last, %none : (tensor<1x2x3x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x2x3x2xf32>
  %k = onnx.Slice %t, %two, %four, %last, %none : (tensor<1x2x3x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x2x3x2xf32>
  return %q, %k : tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>
}

// -----

// A partial rotary (StableLM: the first quarter of each head rotates, the
// rest passes through) is one llm.rope of the whole head: its inv_freq's
// length says how much rotates.
// CHECK-LABEL: func.func @partial_rotary
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<?x4x?x16xf32>
//       CHECK:   %[[R:.*]] = llm.rope %[[X]], %{{.*}}, %{{.*}} : (tensor<?x4x?x16xf32>, tensor<?x?xi64>, tensor<2xf32>) -> tensor<?x4x?x16xf32>
//       CHECK:   return %[[R]]
func.func @partial_rotary(%x: tensor<?x4x?x16xf32>, %pos: tensor<?x?xi64>, %inv_freq: tensor<2xf32>) -> tensor<?x4x?x16xf32> {
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %rot = onnx.Slice %x, %zero, %four, %last, %one : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x4xf32>
  %pass = onnx.Slice %x, %four, %end, %last, %one : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x12xf32>
  %r = llm.rope %rot, %pos, %inv_freq : (tensor<?x4x?x4xf32>, tensor<?x?xi64>, tensor<2xf32>) -> tensor<?x4x?x4xf32>
  %y = onnx.Concat %r, %pass {axis = -1 : i64} : (tensor<?x4x?x4xf32>, tensor<?x4x?x12xf32>) -> tensor<?x4x?x16xf32>
  return %y : tensor<?x4x?x16xf32>
}

// -----

// Near miss: the part passed through starts past the rotated part (a column is
// dropped), so this is no partial rotary of x.
// CHECK-LABEL: func.func @partial_rotary_gap
//       CHECK:   onnx.Concat
func.func @partial_rotary_gap(%x: tensor<?x4x?x16xf32>, %pos: tensor<?x?xi64>, %inv_freq: tensor<2xf32>) -> tensor<?x4x?x15xf32> {
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %five = onnx.Constant dense<5> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %rot = onnx.Slice %x, %zero, %four, %last, %one : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x4xf32>
  %pass = onnx.Slice %x, %five, %end, %last, %one : (tensor<?x4x?x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x11xf32>
  %r = llm.rope %rot, %pos, %inv_freq : (tensor<?x4x?x4xf32>, tensor<?x?xi64>, tensor<2xf32>) -> tensor<?x4x?x4xf32>
  %y = onnx.Concat %r, %pass {axis = -1 : i64} : (tensor<?x4x?x4xf32>, tensor<?x4x?x11xf32>) -> tensor<?x4x?x15xf32>
  return %y : tensor<?x4x?x15xf32>
}

// -----

// A Gemm over the flattened tokens, reshaped back to [b, s, out] (GPT-2's
// Conv1D), is one llm.linear with its bias; a Split of its features (q, k,
// v of c_attn) is an llm.split.
// CHECK-LABEL: func.func @flattened_gemm
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<?x?x4xf32>
//       CHECK:   %[[L:.*]] = llm.linear %[[X]], %{{.*}}, %{{.*}} : (tensor<?x?x4xf32>, tensor<4x12xf32>, tensor<12xf32>) -> tensor<?x?x12xf32>
//       CHECK:   llm.split %[[L]] {sizes = array<i64: 4, 4, 4>}
//   CHECK-NOT:   onnx.Gemm
func.func @flattened_gemm(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %w = onnx.Constant dense<1.0> : tensor<4x12xf32>
  %b = onnx.Constant dense<0.5> : tensor<12xf32>
  %flat = onnx.Constant dense<[-1, 4]> : tensor<2xi64>
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %ax0 = onnx.Constant dense<0> : tensor<1xi64>
  %out = onnx.Constant dense<12> : tensor<1xi64>
  %sizes = onnx.Constant dense<4> : tensor<3xi64>
  %shape = onnx.Shape %x : (tensor<?x?x4xf32>) -> tensor<3xi64>
  %batch = onnx.Gather %shape, %c0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %seq = onnx.Gather %shape, %c1 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %b1 = onnx.Unsqueeze %batch, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %s1 = onnx.Unsqueeze %seq, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %back = onnx.Concat %b1, %s1, %out {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %x2 = onnx.Reshape %x, %flat : (tensor<?x?x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %y2 = onnx.Gemm %x2, %w, %b : (tensor<?x4xf32>, tensor<4x12xf32>, tensor<12xf32>) -> tensor<?x12xf32>
  %y = onnx.Reshape %y2, %back : (tensor<?x12xf32>, tensor<3xi64>) -> tensor<?x?x12xf32>
  %q, %k, %v = onnx.Split %y, %sizes {axis = 2 : i64} : (tensor<?x?x12xf32>, tensor<3xi64>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>)
  return %q, %k, %v : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// The same with allowzero set, as torch.onnx's dynamo exporter writes its
// Reshapes: the Reshape back folds into the flattening the linear leaves on
// [b, s, f], one Reshape of the tokens to their own dims, which goes.
// CHECK-LABEL: func.func @flattened_gemm_allowzero
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<?x?x4xf32>
//       CHECK:   %[[L:.*]] = llm.linear %[[X]], %{{.*}}, %{{.*}} : (tensor<?x?x4xf32>, tensor<4x12xf32>, tensor<12xf32>) -> tensor<?x?x12xf32>
//       CHECK:   llm.split %[[L]] {sizes = array<i64: 4, 4, 4>}
//   CHECK-NOT:   onnx.Gemm
func.func @flattened_gemm_allowzero(%x: tensor<?x?x4xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) {
  %w = onnx.Constant dense<1.0> : tensor<4x12xf32>
  %b = onnx.Constant dense<0.5> : tensor<12xf32>
  %flat = onnx.Constant dense<[-1, 4]> : tensor<2xi64>
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %ax0 = onnx.Constant dense<0> : tensor<1xi64>
  %out = onnx.Constant dense<12> : tensor<1xi64>
  %sizes = onnx.Constant dense<4> : tensor<3xi64>
  %shape = onnx.Shape %x : (tensor<?x?x4xf32>) -> tensor<3xi64>
  %batch = onnx.Gather %shape, %c0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %seq = onnx.Gather %shape, %c1 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %b1 = onnx.Unsqueeze %batch, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %s1 = onnx.Unsqueeze %seq, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %back = onnx.Concat %b1, %s1, %out {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %x2 = onnx.Reshape %x, %flat : (tensor<?x?x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %y2 = onnx.Gemm %x2, %w, %b : (tensor<?x4xf32>, tensor<4x12xf32>, tensor<12xf32>) -> tensor<?x12xf32>
  %y = onnx.Reshape %y2, %back {allowzero = 1 : i64} : (tensor<?x12xf32>, tensor<3xi64>) -> tensor<?x?x12xf32>
  %q, %k, %v = onnx.Split %y, %sizes {axis = 2 : i64} : (tensor<?x?x12xf32>, tensor<3xi64>) -> (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>)
  return %q, %k, %v : tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>
}

// -----

// Near miss: reshaped back to [s, b, out] (the dims swapped), the rows are
// no longer the tokens in order: the linear runs on the tokens, but its
// flattened result keeps the reshape to [s, b, out].
// CHECK-LABEL: func.func @flattened_gemm_wrong_dims
//       CHECK:   %[[L:.*]] = llm.linear
//       CHECK:   %[[F:.*]] = onnx.Reshape %[[L]]
//       CHECK:   %[[Y:.*]] = onnx.Reshape %[[F]]
//       CHECK:   return %[[Y]]
func.func @flattened_gemm_wrong_dims(%x: tensor<?x?x4xf32>) -> tensor<?x?x12xf32> {
  %w = onnx.Constant dense<1.0> : tensor<4x12xf32>
  %flat = onnx.Constant dense<[-1, 4]> : tensor<2xi64>
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %ax0 = onnx.Constant dense<0> : tensor<1xi64>
  %out = onnx.Constant dense<12> : tensor<1xi64>
  %none = onnx.None
  %shape = onnx.Shape %x : (tensor<?x?x4xf32>) -> tensor<3xi64>
  %batch = onnx.Gather %shape, %c0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %seq = onnx.Gather %shape, %c1 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %b1 = onnx.Unsqueeze %batch, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %s1 = onnx.Unsqueeze %seq, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %back = onnx.Concat %s1, %b1, %out {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %x2 = onnx.Reshape %x, %flat : (tensor<?x?x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %y2 = onnx.Gemm %x2, %w, %none : (tensor<?x4xf32>, tensor<4x12xf32>, none) -> tensor<?x12xf32>
  %y = onnx.Reshape %y2, %back : (tensor<?x12xf32>, tensor<3xi64>) -> tensor<?x?x12xf32>
  return %y : tensor<?x?x12xf32>
}

// -----

// OPT's feed-forward block on the flattened tokens: LayerNorm, fc1, ReLU, fc2
// and the residual add all read [b*s, features]; each moves onto [b, s,
// features] and the reshape back goes.
// CHECK-LABEL: func.func @flattened_feed_forward
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<?x?x4xf32>
//       CHECK:   %[[N:.*]] = llm.layer_norm %[[X]]
//       CHECK:   %[[U:.*]] = llm.linear %[[N]], {{.*}} -> tensor<?x?x8xf32>
//       CHECK:   %[[R:.*]] = llm.elementwise %[[U]]
//       CHECK:   %[[D:.*]] = llm.linear %[[R]], {{.*}} -> tensor<?x?x4xf32>
//       CHECK:   %[[S:.*]] = llm.add %[[X]], %[[D]]
//       CHECK:   return %[[S]]
//   CHECK-NOT:   onnx.
func.func @flattened_feed_forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
  %scale = onnx.Constant dense<1.0> : tensor<4xf32>
  %shift = onnx.Constant dense<0.0> : tensor<4xf32>
  %w1 = onnx.Constant dense<0.5> : tensor<8x4xf32>
  %b1 = onnx.Constant dense<0.25> : tensor<8xf32>
  %w2 = onnx.Constant dense<0.5> : tensor<4x8xf32>
  %b2 = onnx.Constant dense<0.25> : tensor<4xf32>
  %flat = onnx.Constant dense<[-1, 4]> : tensor<2xi64>
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %ax0 = onnx.Constant dense<0> : tensor<1xi64>
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %shape = onnx.Shape %x : (tensor<?x?x4xf32>) -> tensor<3xi64>
  %batch = onnx.Gather %shape, %c0 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %seq = onnx.Gather %shape, %c1 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %b = onnx.Unsqueeze %batch, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %s = onnx.Unsqueeze %seq, %ax0 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %back = onnx.Concat %b, %s, %four {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %x2 = onnx.Reshape %x, %flat : (tensor<?x?x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %n, %mean, %inv = onnx.LayerNormalization %x2, %scale, %shift {axis = -1 : i64, epsilon = 1.0e-5 : f32} : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<?x1xf32>, tensor<?x1xf32>)
  %u = onnx.Gemm %n, %w1, %b1 {transB = 1 : i64} : (tensor<?x4xf32>, tensor<8x4xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %r = onnx.Relu %u : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %d = onnx.Gemm %r, %w2, %b2 {transB = 1 : i64} : (tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %sum = onnx.Add %x2, %d : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y = onnx.Reshape %sum, %back : (tensor<?x4xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
  return %y : tensor<?x?x4xf32>
}

// -----

// Near miss: an add of the flattened tokens of two unrelated activations
// (their batch and sequence dims unproven the same) stays flattened.
// CHECK-LABEL: func.func @flattened_tokens_of_two_inputs
//       CHECK:   llm.add %{{.*}}, %{{.*}} : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
func.func @flattened_tokens_of_two_inputs(%x: tensor<?x?x4xf32>, %y: tensor<?x?x4xf32>) -> tensor<?x4xf32> {
  %flat = onnx.Constant dense<[-1, 4]> : tensor<2xi64>
  %x2 = onnx.Reshape %x, %flat : (tensor<?x?x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %y2 = onnx.Reshape %y, %flat : (tensor<?x?x4xf32>, tensor<2xi64>) -> tensor<?x4xf32>
  %sum = onnx.Add %x2, %y2 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %sum : tensor<?x4xf32>
}

// -----

// Near miss: a constant with a row per flattened token (static here) would
// not broadcast the same over [b, s, features]; the add stays flattened.
// CHECK-LABEL: func.func @flattened_tokens_plus_a_token_table
//       CHECK:   onnx.Add %{{.*}}, %{{.*}} : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
func.func @flattened_tokens_plus_a_token_table(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %flat = onnx.Constant dense<[-1, 4]> : tensor<2xi64>
  %table = onnx.Constant dense<1.0> : tensor<6x4xf32>
  %x2 = onnx.Reshape %x, %flat : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %sum = onnx.Add %x2, %table : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
  return %sum : tensor<6x4xf32>
}

// -----

// Learned positions gathered at an offset (OPT's position_ids + 2): the table
// from row 2 on, gathered at the positions themselves.
// CHECK-LABEL: func.func @embedding_at_an_offset
//  CHECK-SAME:   (%[[P:[^:]*]]: tensor<?x?xi64>
//       CHECK:   %[[T:.*]] = llm.constant dense<{{\[}}[2.000000e+00, 2.000000e+00], [3.000000e+00, 3.000000e+00]]> : tensor<2x2xf32>
//       CHECK:   llm.embedding %[[T]], %[[P]]
//   CHECK-NOT:   onnx.Add
func.func @embedding_at_an_offset(%positions: tensor<?x?xi64>) -> tensor<?x?x2xf32> {
  %table = onnx.Constant dense<[[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]> : tensor<4x2xf32>
  %two = onnx.Constant dense<2> : tensor<i64>
  %shifted = onnx.Add %positions, %two : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %e = onnx.Gather %table, %shifted {axis = 0 : i64} : (tensor<4x2xf32>, tensor<?x?xi64>) -> tensor<?x?x2xf32>
  return %e : tensor<?x?x2xf32>
}

// -----

// Near miss: an offset past the table's rows is no offset table; the add stays.
// CHECK-LABEL: func.func @embedding_offset_past_the_table
//       CHECK:   onnx.Add
func.func @embedding_offset_past_the_table(%positions: tensor<?x?xi64>) -> tensor<?x?x2xf32> {
  %table = onnx.Constant dense<1.0> : tensor<4x2xf32>
  %four = onnx.Constant dense<4> : tensor<i64>
  %shifted = onnx.Add %positions, %four : (tensor<?x?xi64>, tensor<i64>) -> tensor<?x?xi64>
  %e = onnx.Gather %table, %shifted {axis = 0 : i64} : (tensor<4x2xf32>, tensor<?x?xi64>) -> tensor<?x?x2xf32>
  return %e : tensor<?x?x2xf32>
}

// -----

// onnxruntime-genai writes Qwen3's per-head q_norm as a norm of the
// projection reshaped to [b, s*H, D] and reshaped back: a per-head norm of x.
// CHECK-LABEL: func.func @reshaped_head_norm
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<?x?x64xf32>, %[[W:[^:]*]]: tensor<16xf32>)
//       CHECK:   %[[N:.*]] = llm.rms_norm %[[X]], %[[W]] {{.*}} : (tensor<?x?x64xf32>, tensor<16xf32>) -> tensor<?x?x64xf32>
//       CHECK:   return %[[N]]
func.func @reshaped_head_norm(%x: tensor<?x?x64xf32>, %w: tensor<16xf32>) -> tensor<?x?x64xf32> {
  %heads = onnx.Constant dense<[0, -1, 16]> : tensor<3xi64>
  %back = onnx.Constant dense<[0, -1, 64]> : tensor<3xi64>
  %r = onnx.Reshape %x, %heads : (tensor<?x?x64xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %n = llm.rms_norm %r, %w {epsilon = 1.0e-6 : f32} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %y = onnx.Reshape %n, %back : (tensor<?x?x16xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// Near miss: reshaped back to [-1, s, 64], the batch dim is no longer x's own
// (two dims unproven), so the reshapes stay.
// CHECK-LABEL: func.func @reshaped_head_norm_moved
//       CHECK:   onnx.Reshape
//       CHECK:   onnx.Reshape
func.func @reshaped_head_norm_moved(%x: tensor<?x?x64xf32>, %w: tensor<16xf32>, %back: tensor<3xi64>) -> tensor<?x?x64xf32> {
  %heads = onnx.Constant dense<[0, -1, 16]> : tensor<3xi64>
  %r = onnx.Reshape %x, %heads : (tensor<?x?x64xf32>, tensor<3xi64>) -> tensor<?x?x16xf32>
  %n = llm.rms_norm %r, %w {epsilon = 1.0e-6 : f32} : (tensor<?x?x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  %y = onnx.Reshape %n, %back : (tensor<?x?x16xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  return %y : tensor<?x?x64xf32>
}

// -----

// K^T as torch.onnx's dynamo exporter writes it, through [b*h, m, n] batches,
// is one transpose of the last two dims, which attention raising reads.
// CHECK-LABEL: func.func @flattened_transpose
//  CHECK-SAME:   (%[[K:[^:]*]]: tensor<2x4x5x16xf32>)
//       CHECK:   %[[T:.*]] = onnx.Transpose %[[K]] {perm = array<i64: 0, 1, 3, 2>}
//       CHECK:   return %[[T]]
func.func @flattened_transpose(%k: tensor<2x4x5x16xf32>) -> tensor<2x4x16x5xf32> {
  %flat = onnx.Constant dense<[-1, 5, 16]> : tensor<3xi64>
  %back = onnx.Constant dense<[2, 4, 16, 5]> : tensor<4xi64>
  %r = onnx.Reshape %k, %flat : (tensor<2x4x5x16xf32>, tensor<3xi64>) -> tensor<8x5x16xf32>
  %t = onnx.Transpose %r {perm = array<i64: 0, 2, 1>} : (tensor<8x5x16xf32>) -> tensor<8x16x5xf32>
  %y = onnx.Reshape %t, %back : (tensor<8x16x5xf32>, tensor<4xi64>) -> tensor<2x4x16x5xf32>
  return %y : tensor<2x4x16x5xf32>
}

// -----

// Near miss: reshaped back to [4, 2, ...], the batch and head dims trade
// places: not a transpose of x.
// CHECK-LABEL: func.func @flattened_transpose_regrouped
//   CHECK-NOT:   perm = array<i64: 0, 1, 3, 2>
func.func @flattened_transpose_regrouped(%k: tensor<2x4x5x16xf32>) -> tensor<4x2x16x5xf32> {
  %flat = onnx.Constant dense<[-1, 5, 16]> : tensor<3xi64>
  %back = onnx.Constant dense<[4, 2, 16, 5]> : tensor<4xi64>
  %r = onnx.Reshape %k, %flat : (tensor<2x4x5x16xf32>, tensor<3xi64>) -> tensor<8x5x16xf32>
  %t = onnx.Transpose %r {perm = array<i64: 0, 2, 1>} : (tensor<8x5x16xf32>) -> tensor<8x16x5xf32>
  %y = onnx.Reshape %t, %back : (tensor<8x16x5xf32>, tensor<4xi64>) -> tensor<4x2x16x5xf32>
  return %y : tensor<4x2x16x5xf32>
}

// -----

// torch.onnx's dynamo exporter writes the rotary angles as the outer product
// positions[b, s, 1] * inv_freq[d/2], not as a MatMul.
// CHECK-LABEL: func.func @rope_outer_product
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<1x4x3x16xf32>, %[[P:[^:]*]]: tensor<1x3xi64>)
//       CHECK:   llm.rope %[[X]], %[[P]], %{{.*}} : (tensor<1x4x3x16xf32>, tensor<1x3xi64>, tensor<8xf32>)
//   CHECK-NOT:   onnx.Cos
func.func @rope_outer_product(%x: tensor<1x4x3x16xf32>, %pos: tensor<1x3xi64>) -> tensor<1x4x3x16xf32> {
  %inv_freq = onnx.Constant dense<[1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125]> : tensor<8xf32>
  %last = onnx.Constant dense<[-1]> : tensor<1xi64>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %zero = onnx.Constant dense<[0]> : tensor<1xi64>
  %eight = onnx.Constant dense<[8]> : tensor<1xi64>
  %end = onnx.Constant dense<[16]> : tensor<1xi64>
  %p3 = onnx.Unsqueeze %pos, %last : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x3x1xi64>
  %pf = onnx.Cast %p3 {to = 1 : i64} : (tensor<1x3x1xi64>) -> tensor<1x3x1xf32>
  %freqs = onnx.Mul %pf, %inv_freq : (tensor<1x3x1xf32>, tensor<8xf32>) -> tensor<1x3x8xf32>
  %emb = onnx.Concat %freqs, %freqs {axis = -1 : i64} : (tensor<1x3x8xf32>, tensor<1x3x8xf32>) -> tensor<1x3x16xf32>
  %cos = onnx.Cos %emb : (tensor<1x3x16xf32>) -> tensor<1x3x16xf32>
  %sin = onnx.Sin %emb : (tensor<1x3x16xf32>) -> tensor<1x3x16xf32>
  %cos4 = onnx.Unsqueeze %cos, %ax1 : (tensor<1x3x16xf32>, tensor<1xi64>) -> tensor<1x1x3x16xf32>
  %sin4 = onnx.Unsqueeze %sin, %ax1 : (tensor<1x3x16xf32>, tensor<1xi64>) -> tensor<1x1x3x16xf32>
  %x1 = onnx.Slice %x, %zero, %eight, %last, %ax1 : (tensor<1x4x3x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x3x8xf32>
  %x2 = onnx.Slice %x, %eight, %end, %last, %ax1 : (tensor<1x4x3x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x4x3x8xf32>
  %nx2 = onnx.Neg %x2 : (tensor<1x4x3x8xf32>) -> tensor<1x4x3x8xf32>
  %rot = onnx.Concat %nx2, %x1 {axis = -1 : i64} : (tensor<1x4x3x8xf32>, tensor<1x4x3x8xf32>) -> tensor<1x4x3x16xf32>
  %a = onnx.Mul %x, %cos4 : (tensor<1x4x3x16xf32>, tensor<1x1x3x16xf32>) -> tensor<1x4x3x16xf32>
  %b = onnx.Mul %rot, %sin4 : (tensor<1x4x3x16xf32>, tensor<1x1x3x16xf32>) -> tensor<1x4x3x16xf32>
  %y = onnx.Add %a, %b : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %y : tensor<1x4x3x16xf32>
}

// -----

// The attention output transposed back to [b, s, H, D] and flattened with
// the tokens into one Gemm (torch.onnx's dynamo export of GPT-2's c_proj):
// merge_heads, then the linear.
// CHECK-LABEL: func.func @flattened_gemm_of_heads
//  CHECK-SAME:   (%[[H:[^:]*]]: tensor<2x4x3x16xf32>)
//       CHECK:   %[[M:.*]] = llm.merge_heads %[[H]] : (tensor<2x4x3x16xf32>) -> tensor<2x3x64xf32>
//       CHECK:   llm.linear %[[M]], %{{.*}} : (tensor<2x3x64xf32>, tensor<64x64xf32>) -> tensor<2x3x64xf32>
func.func @flattened_gemm_of_heads(%heads: tensor<2x4x3x16xf32>) -> tensor<2x3x64xf32> {
  %w = onnx.Constant dense<1.0> : tensor<64x64xf32>
  %flat = onnx.Constant dense<[-1, 64]> : tensor<2xi64>
  %back = onnx.Constant dense<[2, 3, 64]> : tensor<3xi64>
  %none = onnx.None
  %t = onnx.Transpose %heads {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x4x3x16xf32>) -> tensor<2x3x4x16xf32>
  %x2 = onnx.Reshape %t, %flat : (tensor<2x3x4x16xf32>, tensor<2xi64>) -> tensor<6x64xf32>
  %y2 = onnx.Gemm %x2, %w, %none : (tensor<6x64xf32>, tensor<64x64xf32>, none) -> tensor<6x64xf32>
  %y = onnx.Reshape %y2, %back : (tensor<6x64xf32>, tensor<3xi64>) -> tensor<2x3x64xf32>
  return %y : tensor<2x3x64xf32>
}

// -----

// The linear that is the graph output `logits` is the LM head, with its bias
// (Phi-2's lm_head has one).
// CHECK-LABEL: func.func @logits_head_with_bias
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x8x16xf32>)
//       CHECK:   %[[W:.*]] = llm.constant dense<5.000000e-01> : tensor<16x32xf32>
//       CHECK:   %[[B:.*]] = llm.constant dense<2.500000e-01> : tensor<32xf32>
//       CHECK:   %[[L:.*]] = llm.logits %[[X]], %[[W]] bias(%[[B]]) : (tensor<2x8x16xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
//       CHECK:   return %[[L]]
func.func @logits_head_with_bias(%x: tensor<2x8x16xf32>) -> (tensor<2x8x32xf32> {onnx.name = "logits"}) {
  %w = onnx.Constant dense<0.5> : tensor<16x32xf32>
  %b = onnx.Constant dense<0.25> : tensor<32xf32>
  %p = onnx.MatMul %x, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %l = onnx.Add %p, %b : (tensor<2x8x32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  return %l : tensor<2x8x32xf32>
}

// -----

// Gemma-2's final softcap, c * tanh(logits / c), and Granite's division by
// logits_scaling map each logit with scalar constants: they become the LM
// head's epilogue, composed in order, and the head is what is returned.
// CHECK-LABEL: func.func @logits_softcap
//       CHECK:   %[[L:.*]] = llm.logits %{{.*}}, %{{.*}} : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32> {
//       CHECK:   ^bb0(%[[X:.*]]: f32):
//       CHECK:     %[[C:.*]] = arith.constant 3.000000e+01 : f32
//       CHECK:     %[[D:.*]] = arith.divf %[[X]], %[[C]] : f32
//       CHECK:     %[[T:.*]] = math.tanh %[[D]] : f32
//       CHECK:     %[[M:.*]] = arith.mulf %[[T]], %{{.*}} : f32
//       CHECK:     %[[S:.*]] = arith.divf %[[M]], %{{.*}} : f32
//       CHECK:     llm.yield %[[S]] : f32
//       CHECK:   return %[[L]]
//   CHECK-NOT:   llm.elementwise
func.func @logits_softcap(%x: tensor<2x8x16xf32>) -> (tensor<2x8x32xf32> {onnx.name = "logits"}) {
  %w = onnx.Constant dense<0.5> : tensor<16x32xf32>
  %cap = onnx.Constant dense<30.0> : tensor<f32>
  %scaling = onnx.Constant dense<8.0> : tensor<f32>
  %p = onnx.MatMul %x, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %d = onnx.Div %p, %cap : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf32>
  %t = onnx.Tanh %d : (tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  %m = onnx.Mul %t, %cap : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf32>
  %s = onnx.Div %m, %scaling : (tensor<2x8x32xf32>, tensor<f32>) -> tensor<2x8x32xf32>
  return %s : tensor<2x8x32xf32>
}

// -----

// Near miss: an op on the logits that reads another activation is no
// per-logit epilogue; the projection stays a linear.
// CHECK-LABEL: func.func @logits_plus_activation
//   CHECK-NOT:   llm.logits
//       CHECK:   llm.linear
func.func @logits_plus_activation(%x: tensor<2x8x16xf32>, %y: tensor<2x8x32xf32>) -> (tensor<2x8x32xf32> {onnx.name = "logits"}) {
  %w = onnx.Constant dense<0.5> : tensor<16x32xf32>
  %p = onnx.MatMul %x, %w : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
  %s = onnx.Add %p, %y : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
  return %s : tensor<2x8x32xf32>
}

// -----

// Gemma-2's attention softcap c * tanh(s / c) on the scaled scores, before the
// mask: llm.attention's softcap.
// CHECK-LABEL: func.func @attention_softcap
//       CHECK:   llm.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f32, softcap = 5.000000e+01 : f32}
//   CHECK-NOT:   onnx.Tanh
func.func @attention_softcap(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %scale = onnx.Constant dense<0.25> : tensor<f32>
  %cap = onnx.Constant dense<50.0> : tensor<f32>
  %kt = onnx.Transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %qk = onnx.MatMul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %scaled = onnx.Mul %qk, %scale : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %over = onnx.Div %scaled, %cap : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %t = onnx.Tanh %over : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %capped = onnx.Mul %t, %cap : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %p = onnx.Softmax %capped {axis = -1 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %o = onnx.MatMul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}

// -----

// Near miss: tanh between two different scales is no softcap (c * tanh(s / d),
// c != d); the scores are not a QK^T product, so nothing is raised.
// CHECK-LABEL: func.func @attention_tanh_not_softcap
//   CHECK-NOT:   llm.attention
//       CHECK:   onnx.Softmax
func.func @attention_tanh_not_softcap(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %c = onnx.Constant dense<50.0> : tensor<f32>
  %d = onnx.Constant dense<30.0> : tensor<f32>
  %kt = onnx.Transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %qk = onnx.MatMul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %over = onnx.Div %qk, %d : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %t = onnx.Tanh %over : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %capped = onnx.Mul %t, %c : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %p = onnx.Softmax %capped {axis = -1 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %o = onnx.MatMul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}

// -----

// Gemma-3 normalises each head after the heads' transpose: the norm moves
// before split_heads, as a per-head norm of the projection.
// CHECK-LABEL: func.func @norm_after_split_heads
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<2x3x64xf32>)
//       CHECK:   %[[N:.*]] = llm.rms_norm %[[X]], %{{.*}} {{.*}} : (tensor<2x3x64xf32>, tensor<16xf32>) -> tensor<2x3x64xf32>
//       CHECK:   llm.split_heads %[[N]] {num_heads = 4 : i64}
func.func @norm_after_split_heads(%x: tensor<2x3x64xf32>) -> tensor<2x4x3x16xf32> {
  %shape = onnx.Constant dense<[2, 3, 4, 16]> : tensor<4xi64>
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %axes = onnx.Constant dense<[-1]> : tensor<1xi64>
  %eps = onnx.Constant dense<1.0e-6> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %w = onnx.Constant dense<0.5> : tensor<16xf32>
  %r = onnx.Reshape %x, %shape : (tensor<2x3x64xf32>, tensor<4xi64>) -> tensor<2x3x4x16xf32>
  %h = onnx.Transpose %r {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x3x4x16xf32>) -> tensor<2x4x3x16xf32>
  %sq = onnx.Pow %h, %two : (tensor<2x4x3x16xf32>, tensor<f32>) -> tensor<2x4x3x16xf32>
  %mean = onnx.ReduceMean %sq, %axes : (tensor<2x4x3x16xf32>, tensor<1xi64>) -> tensor<2x4x3x1xf32>
  %sum = onnx.Add %mean, %eps : (tensor<2x4x3x1xf32>, tensor<f32>) -> tensor<2x4x3x1xf32>
  %root = onnx.Sqrt %sum : (tensor<2x4x3x1xf32>) -> tensor<2x4x3x1xf32>
  %inv = onnx.Div %one, %root : (tensor<f32>, tensor<2x4x3x1xf32>) -> tensor<2x4x3x1xf32>
  %normed = onnx.Mul %h, %inv : (tensor<2x4x3x16xf32>, tensor<2x4x3x1xf32>) -> tensor<2x4x3x16xf32>
  %y = onnx.Mul %w, %normed : (tensor<16xf32>, tensor<2x4x3x16xf32>) -> tensor<2x4x3x16xf32>
  return %y : tensor<2x4x3x16xf32>
}

// -----

// Hunyuan normalises each head after the rotary: the norm of the heads becomes
// the per-head norm of the merged heads, split again.
// CHECK-LABEL: func.func @norm_after_rope
//       CHECK:   %[[R:.*]] = llm.rope
//       CHECK:   %[[M:.*]] = llm.merge_heads %[[R]] : (tensor<2x4x3x16xf32>) -> tensor<2x3x64xf32>
//       CHECK:   %[[N:.*]] = llm.rms_norm %[[M]], %{{.*}} {{.*}} : (tensor<2x3x64xf32>, tensor<16xf32>) -> tensor<2x3x64xf32>
//       CHECK:   llm.split_heads %[[N]] {num_heads = 4 : i64} : (tensor<2x3x64xf32>) -> tensor<2x4x3x16xf32>
func.func @norm_after_rope(%x: tensor<2x4x3x16xf32>, %positions: tensor<2x3xi64>) -> tensor<2x4x3x16xf32> {
  %frequencies = llm.constant dense<0.5> : tensor<8xf32>
  %w = llm.constant dense<0.5> : tensor<16xf32>
  %r = llm.rope %x, %positions, %frequencies : (tensor<2x4x3x16xf32>, tensor<2x3xi64>, tensor<8xf32>) -> tensor<2x4x3x16xf32>
  %y = llm.rms_norm %r, %w {epsilon = 1.0e-6 : f32} : (tensor<2x4x3x16xf32>, tensor<16xf32>) -> tensor<2x4x3x16xf32>
  return %y : tensor<2x4x3x16xf32>
}

// -----

// Near misses: a norm of heads the function is given (no op of the heads form
// made them), and one over half of each head, stay as they are.
// CHECK-LABEL: func.func @norm_of_heads_near_misses
//   CHECK-NOT:   llm.merge_heads
//       CHECK:   llm.rms_norm %{{.*}} : (tensor<2x4x3x16xf32>, tensor<16xf32>)
//       CHECK:   llm.rms_norm %{{.*}} : (tensor<2x4x3x16xf32>, tensor<8xf32>)
//   CHECK-NOT:   llm.merge_heads
func.func @norm_of_heads_near_misses(%x: tensor<2x4x3x16xf32>, %positions: tensor<2x3xi64>) -> (tensor<2x4x3x16xf32>, tensor<2x4x3x16xf32>) {
  %frequencies = llm.constant dense<0.5> : tensor<8xf32>
  %w = llm.constant dense<0.5> : tensor<16xf32>
  %half = llm.constant dense<0.5> : tensor<8xf32>
  %given = llm.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<2x4x3x16xf32>, tensor<16xf32>) -> tensor<2x4x3x16xf32>
  %r = llm.rope %x, %positions, %frequencies : (tensor<2x4x3x16xf32>, tensor<2x3xi64>, tensor<8xf32>) -> tensor<2x4x3x16xf32>
  %halves = llm.rms_norm %r, %half {epsilon = 1.0e-6 : f32} : (tensor<2x4x3x16xf32>, tensor<8xf32>) -> tensor<2x4x3x16xf32>
  return %given, %halves : tensor<2x4x3x16xf32>, tensor<2x4x3x16xf32>
}

// -----

// Near miss: a scale outside the softcap and the mask, k * (c * tanh(s / c) +
// mask), is no softcap of scaled scores: nothing is raised.
// CHECK-LABEL: func.func @attention_scale_outside_softcap
//   CHECK-NOT:   llm.attention
//       CHECK:   onnx.Softmax
func.func @attention_scale_outside_softcap(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %cap = onnx.Constant dense<50.0> : tensor<f32>
  %outer = onnx.Constant dense<0.25> : tensor<f32>
  %bias = onnx.Constant dense<0.0> : tensor<3x3xf32>
  %kt = onnx.Transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x3x16xf32>) -> tensor<1x4x16x3xf32>
  %qk = onnx.MatMul %q, %kt : (tensor<1x4x3x16xf32>, tensor<1x4x16x3xf32>) -> tensor<1x4x3x3xf32>
  %over = onnx.Div %qk, %cap : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %t = onnx.Tanh %over : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %capped = onnx.Mul %t, %cap : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %masked = onnx.Add %capped, %bias : (tensor<1x4x3x3xf32>, tensor<3x3xf32>) -> tensor<1x4x3x3xf32>
  %scaled = onnx.Mul %masked, %outer : (tensor<1x4x3x3xf32>, tensor<f32>) -> tensor<1x4x3x3xf32>
  %p = onnx.Softmax %scaled {axis = -1 : i64} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %o = onnx.MatMul %p, %v : (tensor<1x4x3x3xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %o : tensor<1x4x3x16xf32>
}
