// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' 2>/dev/null | FileCheck %s
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERROR

// BLOOM's attention: baddbmm and bmm over [batch * heads] batches, the scores
// viewed as heads for the mask, plus linear biases per head computed from the
// attention mask (each key's position, the real tokens before it, times the
// head's slope). The products are viewed as heads again, the biases and the
// causal + padding mask gathered into one mask, and the mask proven on the
// probes: llm.attention with the slopes.
// CHECK-LABEL: func.func @bloom_alibi
//  CHECK-SAME:   %[[M:[^:]*]]: tensor<?x?xi64> {onnx.name = "attention_mask"}
//       CHECK:   llm.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[M]] {alibi_slopes = array<f32: 2.500000e-01, 6.250000e-02>, causal, scale = 5.000000e-01 : f32}
//   CHECK-NOT:   onnx.Softmax
//   CHECK-NOT:   onnx.MatMul
// ERROR-NOT: error: {{.*}}@bloom_alibi
func.func @bloom_alibi(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>,
                  %ids: tensor<?x?xi64> {onnx.name = "input_ids"},
                  %am: tensor<?x?xi64> {onnx.name = "attention_mask"}) -> tensor<?x2x?x4xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %ax0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %ax12 = onnx.Constant dense<[1, 2]> : tensor<2xi64>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %am_shape = onnx.Shape %am : (tensor<?x?xi64>) -> tensor<2xi64>
  %ids_shape = onnx.Shape %ids : (tensor<?x?xi64>) -> tensor<2xi64>
  %total = onnx.Gather %am_shape, %c1 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %fresh = onnx.Gather %ids_shape, %c1 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %past = onnx.Sub %total, %fresh : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %queries = onnx.Range %past, %total, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %keys = onnx.Range %c0, %total, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %q_col = onnx.Unsqueeze %queries, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %k_row = onnx.Unsqueeze %keys, %ax0 : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %causal = onnx.LessOrEqual %k_row, %q_col : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %keep = onnx.Cast %am {to = 9 : i64} : (tensor<?x?xi64>) -> tensor<?x?xi1>
  %keep4 = onnx.Unsqueeze %keep, %ax12 : (tensor<?x?xi1>, tensor<2xi64>) -> tensor<?x1x1x?xi1>
  %visible = onnx.And %causal, %keep4 : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %mask = onnx.Where %visible, %zero, %ninf : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  // The linear biases: each key's position (the real tokens before it) times each head's slope.
  %amf = onnx.Cast %am {to = 1 : i64} : (tensor<?x?xi64>) -> tensor<?x?xf32>
  %count = onnx.CumSum %amf, %c1 : (tensor<?x?xf32>, tensor<i64>) -> tensor<?x?xf32>
  %before = onnx.Sub %count, %one : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
  %pos = onnx.Mul %before, %amf : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %pos3 = onnx.Unsqueeze %pos, %ax1 : (tensor<?x?xf32>, tensor<1xi64>) -> tensor<?x1x?xf32>
  %slopes = onnx.Constant dense<[[0.25], [0.0625]]> : tensor<2x1xf32>
  %alibi = onnx.Mul %slopes, %pos3 : (tensor<2x1xf32>, tensor<?x1x?xf32>) -> tensor<?x2x?xf32>
  %lead_flat = onnx.Constant dense<[-1, 1]> : tensor<2xi64>
  %keys_1 = onnx.Shape %am {start = 1 : i64} : (tensor<?x?xi64>) -> tensor<1xi64>
  %alibi_shape = onnx.Concat %lead_flat, %keys_1 {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %alibi3 = onnx.Reshape %alibi, %alibi_shape : (tensor<?x2x?xf32>, tensor<3xi64>) -> tensor<?x1x?xf32>
  // baddbmm and bmm over [batch * heads] batches, viewed as heads for the softmax.
  %minus1 = onnx.Constant dense<[-1]> : tensor<1xi64>
  %four = onnx.Constant dense<[4]> : tensor<1xi64>
  %two = onnx.Constant dense<[2]> : tensor<1xi64>
  %batch = onnx.Shape %q {end = 1 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %s = onnx.Shape %q {start = 2 : i64, end = 3 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %t = onnx.Shape %k {start = 2 : i64, end = 3 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %q_batch = onnx.Shape %q {end = 1 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %q_bh = onnx.Mul %q_batch, %two : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %q_flat = onnx.Concat %q_bh, %minus1, %four {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %q3 = onnx.Reshape %q, %q_flat : (tensor<?x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
  %k_batch = onnx.Shape %k {end = 1 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %k_bh = onnx.Mul %k_batch, %two : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %k_flat = onnx.Concat %k_bh, %minus1, %four {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %k3 = onnx.Reshape %k, %k_flat : (tensor<?x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
  %v_batch = onnx.Shape %v {end = 1 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %v_bh = onnx.Mul %v_batch, %two : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %v_flat = onnx.Concat %v_bh, %minus1, %four {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %v3 = onnx.Reshape %v, %v_flat : (tensor<?x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
  %kT3 = onnx.Transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<?x?x4xf32>) -> tensor<?x4x?xf32>
  %qk = onnx.MatMul %q3, %kT3 : (tensor<?x?x4xf32>, tensor<?x4x?xf32>) -> tensor<?x?x?xf32>
  %alpha = onnx.Constant dense<0.5> : tensor<f32>
  %scaled = onnx.Mul %qk, %alpha : (tensor<?x?x?xf32>, tensor<f32>) -> tensor<?x?x?xf32>
  %biased = onnx.Add %scaled, %alibi3 : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
  %scores_shape = onnx.Concat %batch, %two, %s, %t {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %scores = onnx.Reshape %biased, %scores_shape : (tensor<?x?x?xf32>, tensor<4xi64>) -> tensor<?x2x?x?xf32>
  %masked = onnx.Add %scores, %mask : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = onnx.Softmax %masked {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p_shape = onnx.Concat %q_bh, %s, %minus1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %p3 = onnx.Reshape %p, %p_shape : (tensor<?x2x?x?xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %o3 = onnx.MatMul %p3, %v3 : (tensor<?x?x?xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %o_shape = onnx.Concat %batch, %two, %s, %four {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %o = onnx.Reshape %o3, %o_shape : (tensor<?x?x4xf32>, tensor<4xi64>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Near miss: a bias quadratic in the key's position is no ALiBi; the mask is
// not proven and the attention is left, the error naming why.
// CHECK-LABEL: func.func @quadratic_bias
//       CHECK:   onnx.Softmax
// ERROR: error: onnx ops not raised to llm
// ERROR-SAME: attention with linear biases per head (ALiBi) that are not proven to be slope * the key's position is not supported (attention mask: the mask adds {{.*}} where a bias linear in the key's position would add
func.func @quadratic_bias(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>,
                  %ids: tensor<?x?xi64> {onnx.name = "input_ids"},
                  %am: tensor<?x?xi64> {onnx.name = "attention_mask"}) -> tensor<?x2x?x4xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %ax0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %ax12 = onnx.Constant dense<[1, 2]> : tensor<2xi64>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %am_shape = onnx.Shape %am : (tensor<?x?xi64>) -> tensor<2xi64>
  %ids_shape = onnx.Shape %ids : (tensor<?x?xi64>) -> tensor<2xi64>
  %total = onnx.Gather %am_shape, %c1 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %fresh = onnx.Gather %ids_shape, %c1 : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %past = onnx.Sub %total, %fresh : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %queries = onnx.Range %past, %total, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %keys = onnx.Range %c0, %total, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %q_col = onnx.Unsqueeze %queries, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %k_row = onnx.Unsqueeze %keys, %ax0 : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %causal = onnx.LessOrEqual %k_row, %q_col : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %keep = onnx.Cast %am {to = 9 : i64} : (tensor<?x?xi64>) -> tensor<?x?xi1>
  %keep4 = onnx.Unsqueeze %keep, %ax12 : (tensor<?x?xi1>, tensor<2xi64>) -> tensor<?x1x1x?xi1>
  %visible = onnx.And %causal, %keep4 : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %mask = onnx.Where %visible, %zero, %ninf : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  // The linear biases: each key's position (the real tokens before it) times each head's slope.
  %amf = onnx.Cast %am {to = 1 : i64} : (tensor<?x?xi64>) -> tensor<?x?xf32>
  %count = onnx.CumSum %amf, %c1 : (tensor<?x?xf32>, tensor<i64>) -> tensor<?x?xf32>
  %before = onnx.Sub %count, %one : (tensor<?x?xf32>, tensor<f32>) -> tensor<?x?xf32>
  %pos = onnx.Mul %before, %amf : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %pos2 = onnx.Mul %pos, %pos : (tensor<?x?xf32>, tensor<?x?xf32>) -> tensor<?x?xf32>
  %pos3 = onnx.Unsqueeze %pos2, %ax1 : (tensor<?x?xf32>, tensor<1xi64>) -> tensor<?x1x?xf32>
  %slopes = onnx.Constant dense<[[0.25], [0.0625]]> : tensor<2x1xf32>
  %alibi = onnx.Mul %slopes, %pos3 : (tensor<2x1xf32>, tensor<?x1x?xf32>) -> tensor<?x2x?xf32>
  %lead_flat = onnx.Constant dense<[-1, 1]> : tensor<2xi64>
  %keys_1 = onnx.Shape %am {start = 1 : i64} : (tensor<?x?xi64>) -> tensor<1xi64>
  %alibi_shape = onnx.Concat %lead_flat, %keys_1 {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
  %alibi3 = onnx.Reshape %alibi, %alibi_shape : (tensor<?x2x?xf32>, tensor<3xi64>) -> tensor<?x1x?xf32>
  // baddbmm and bmm over [batch * heads] batches, viewed as heads for the softmax.
  %minus1 = onnx.Constant dense<[-1]> : tensor<1xi64>
  %four = onnx.Constant dense<[4]> : tensor<1xi64>
  %two = onnx.Constant dense<[2]> : tensor<1xi64>
  %batch = onnx.Shape %q {end = 1 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %s = onnx.Shape %q {start = 2 : i64, end = 3 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %t = onnx.Shape %k {start = 2 : i64, end = 3 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %q_batch = onnx.Shape %q {end = 1 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %q_bh = onnx.Mul %q_batch, %two : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %q_flat = onnx.Concat %q_bh, %minus1, %four {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %q3 = onnx.Reshape %q, %q_flat : (tensor<?x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
  %k_batch = onnx.Shape %k {end = 1 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %k_bh = onnx.Mul %k_batch, %two : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %k_flat = onnx.Concat %k_bh, %minus1, %four {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %k3 = onnx.Reshape %k, %k_flat : (tensor<?x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
  %v_batch = onnx.Shape %v {end = 1 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %v_bh = onnx.Mul %v_batch, %two : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %v_flat = onnx.Concat %v_bh, %minus1, %four {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %v3 = onnx.Reshape %v, %v_flat : (tensor<?x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
  %kT3 = onnx.Transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<?x?x4xf32>) -> tensor<?x4x?xf32>
  %qk = onnx.MatMul %q3, %kT3 : (tensor<?x?x4xf32>, tensor<?x4x?xf32>) -> tensor<?x?x?xf32>
  %alpha = onnx.Constant dense<0.5> : tensor<f32>
  %scaled = onnx.Mul %qk, %alpha : (tensor<?x?x?xf32>, tensor<f32>) -> tensor<?x?x?xf32>
  %biased = onnx.Add %scaled, %alibi3 : (tensor<?x?x?xf32>, tensor<?x1x?xf32>) -> tensor<?x?x?xf32>
  %scores_shape = onnx.Concat %batch, %two, %s, %t {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %scores = onnx.Reshape %biased, %scores_shape : (tensor<?x?x?xf32>, tensor<4xi64>) -> tensor<?x2x?x?xf32>
  %masked = onnx.Add %scores, %mask : (tensor<?x2x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p = onnx.Softmax %masked {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %p_shape = onnx.Concat %q_bh, %s, %minus1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %p3 = onnx.Reshape %p, %p_shape : (tensor<?x2x?x?xf32>, tensor<3xi64>) -> tensor<?x?x?xf32>
  %o3 = onnx.MatMul %p3, %v3 : (tensor<?x?x?xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
  %o_shape = onnx.Concat %batch, %two, %s, %four {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %o = onnx.Reshape %o3, %o_shape : (tensor<?x?x4xf32>, tensor<4xi64>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// Near miss: a view that changes the last dims is no view of heads; the
// 3-D product stays.
// CHECK-LABEL: func.func @not_a_view_of_heads
//       CHECK:   onnx.MatMul %{{.*}} : (tensor<4x3x4xf32>, tensor<4x4x3xf32>) -> tensor<4x3x3xf32>
//       CHECK:   onnx.Reshape
func.func @not_a_view_of_heads(%q: tensor<2x2x3x4xf32>, %k: tensor<2x2x4x3xf32>) -> tensor<2x2x9x1xf32> {
  %flat_q = onnx.Constant dense<[4, 3, 4]> : tensor<3xi64>
  %flat_k = onnx.Constant dense<[4, 4, 3]> : tensor<3xi64>
  %view = onnx.Constant dense<[2, 2, 9, 1]> : tensor<4xi64>
  %q3 = onnx.Reshape %q, %flat_q : (tensor<2x2x3x4xf32>, tensor<3xi64>) -> tensor<4x3x4xf32>
  %k3 = onnx.Reshape %k, %flat_k : (tensor<2x2x4x3xf32>, tensor<3xi64>) -> tensor<4x4x3xf32>
  %s = onnx.MatMul %q3, %k3 : (tensor<4x3x4xf32>, tensor<4x4x3xf32>) -> tensor<4x3x3xf32>
  %r = onnx.Reshape %s, %view : (tensor<4x3x3xf32>, tensor<4xi64>) -> tensor<2x2x9x1xf32>
  return %r : tensor<2x2x9x1xf32>
}

// -----

// A product of flattened heads viewed as heads is the product of the heads,
// the keys' transpose moved onto the 4-D keys.
// CHECK-LABEL: func.func @view_of_head_product
//       CHECK:   %[[KT:.*]] = onnx.Transpose %{{.*}} {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x2x5x4xf32>) -> tensor<2x2x4x5xf32>
//       CHECK:   onnx.MatMul %{{.*}}, %[[KT]] : (tensor<2x2x3x4xf32>, tensor<2x2x4x5xf32>) -> tensor<2x2x3x5xf32>
//   CHECK-NOT:   onnx.Reshape
func.func @view_of_head_product(%q: tensor<2x2x3x4xf32>, %k: tensor<2x2x5x4xf32>) -> tensor<2x2x3x5xf32> {
  %flat_q = onnx.Constant dense<[4, 3, 4]> : tensor<3xi64>
  %flat_k = onnx.Constant dense<[4, 5, 4]> : tensor<3xi64>
  %view = onnx.Constant dense<[2, 2, 3, 5]> : tensor<4xi64>
  %q3 = onnx.Reshape %q, %flat_q : (tensor<2x2x3x4xf32>, tensor<3xi64>) -> tensor<4x3x4xf32>
  %k3 = onnx.Reshape %k, %flat_k : (tensor<2x2x5x4xf32>, tensor<3xi64>) -> tensor<4x5x4xf32>
  %kT3 = onnx.Transpose %k3 {perm = array<i64: 0, 2, 1>} : (tensor<4x5x4xf32>) -> tensor<4x4x5xf32>
  %s = onnx.MatMul %q3, %kT3 : (tensor<4x3x4xf32>, tensor<4x4x5xf32>) -> tensor<4x3x5xf32>
  %r = onnx.Reshape %s, %view : (tensor<4x3x5xf32>, tensor<4xi64>) -> tensor<2x2x3x5xf32>
  return %r : tensor<2x2x3x5xf32>
}

// -----

// The dynamo exporter's flattening: batch * heads computed as a scalar and
// reshaped to [-1] beside a -1, allowzero views. The view back to heads is
// proven to keep the last dims through both -1s (q times its own transpose,
// so that the keys' dims are q's).
// CHECK-LABEL: func.func @view_of_heads_computed_apart
//       CHECK:   %[[T:.*]] = onnx.Transpose %arg0 {perm = array<i64: 0, 1, 3, 2>}
//       CHECK:   onnx.MatMul %arg0, %[[T]] : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
//   CHECK-NOT:   onnx.Reshape
func.func @view_of_heads_computed_apart(%q: tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32> {
  %none = onnx.None
  %two = onnx.Constant dense<2> : tensor<i64>
  %two_1 = onnx.Constant dense<[2]> : tensor<1xi64>
  %four = onnx.Constant dense<[4]> : tensor<1xi64>
  %minus1 = onnx.Constant dense<[-1]> : tensor<1xi64>
  %batch = onnx.Shape %q {end = 1 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %s = onnx.Shape %q {start = 2 : i64, end = 3 : i64} : (tensor<?x2x?x4xf32>) -> tensor<1xi64>
  %b = onnx.Squeeze %batch, %none : (tensor<1xi64>, none) -> tensor<i64>
  %bh = onnx.Mul %b, %two : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %bh_1 = onnx.Reshape %bh, %minus1 : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %flat = onnx.Concat %bh_1, %minus1, %four {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
  %q3 = onnx.Reshape %q, %flat {allowzero = 1 : i64} : (tensor<?x2x?x4xf32>, tensor<3xi64>) -> tensor<?x?x4xf32>
  %kT3 = onnx.Transpose %q3 {perm = array<i64: 0, 2, 1>} : (tensor<?x?x4xf32>) -> tensor<?x4x?xf32>
  %scores = onnx.MatMul %q3, %kT3 : (tensor<?x?x4xf32>, tensor<?x4x?xf32>) -> tensor<?x?x?xf32>
  %view_shape = onnx.Concat %batch, %two_1, %s, %minus1 {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xi64>
  %view = onnx.Reshape %scores, %view_shape {allowzero = 1 : i64} : (tensor<?x?x?xf32>, tensor<4xi64>) -> tensor<?x2x?x?xf32>
  return %view : tensor<?x2x?x?xf32>
}

// -----

// GPT-Neo's local layer: the scores selected where a constant causal buffer
// (a resource, its window of 4 baked in) allows, finfo.min elsewhere, then
// the padding mask added. The selection becomes an added mask, the buffer is
// read, and the longest probe fills the buffer's 12 positions, so the window
// shows.
// CHECK-LABEL: func.func @selected_by_a_buffer
//  CHECK-SAME:   %[[M:[^:]*]]: tensor<?x?xi64> {onnx.name = "attention_mask"}
//       CHECK:   llm.attention %{{.*}}, %{{.*}}, %{{.*}}, %[[M]] {causal, scale = 1.000000e+00 : f32, sliding_window = 4 : i64}
//   CHECK-NOT:   onnx.Where
// ERROR-NOT: error: {{.*}}@selected_by_a_buffer
func.func @selected_by_a_buffer(%q: tensor<?x2x?x4xf32>, %k: tensor<?x2x?x4xf32>, %v: tensor<?x2x?x4xf32>,
                                %ids: tensor<?x?xi64> {onnx.name = "input_ids"},
                                %am: tensor<?x?xi64> {onnx.name = "attention_mask"}) -> tensor<?x2x?x4xf32> {
  %ax2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %ax3 = onnx.Constant dense<[3]> : tensor<1xi64>
  %ax12 = onnx.Constant dense<[1, 2]> : tensor<2xi64>
  %zero_1 = onnx.Constant dense<[0]> : tensor<1xi64>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %lowest = onnx.Constant dense<-3.40282347E+38> : tensor<f32>
  %buffer = onnx.Constant dense_resource<neo_buffer> : tensor<1x1x12x12xi1>
  %keys = onnx.Shape %am {start = 1 : i64} : (tensor<?x?xi64>) -> tensor<1xi64>
  %fresh = onnx.Shape %ids {start = 1 : i64} : (tensor<?x?xi64>) -> tensor<1xi64>
  %first = onnx.Sub %keys, %fresh : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %none = onnx.None
  %rows = onnx.Slice %buffer, %first, %keys, %ax2, %none : (tensor<1x1x12x12xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x1x?x12xi1>
  %causal = onnx.Slice %rows, %zero_1, %keys, %ax3, %none : (tensor<1x1x?x12xi1>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x1x?x?xi1>
  %kt = onnx.Transpose %k {perm = array<i64: 0, 1, 3, 2>} : (tensor<?x2x?x4xf32>) -> tensor<?x2x4x?xf32>
  %qk = onnx.MatMul %q, %kt : (tensor<?x2x?x4xf32>, tensor<?x2x4x?xf32>) -> tensor<?x2x?x?xf32>
  %selected = onnx.Where %causal, %qk, %lowest : (tensor<1x1x?x?xi1>, tensor<?x2x?x?xf32>, tensor<f32>) -> tensor<?x2x?x?xf32>
  %keep = onnx.Cast %am {to = 9 : i64} : (tensor<?x?xi64>) -> tensor<?x?xi1>
  %keep4 = onnx.Unsqueeze %keep, %ax12 : (tensor<?x?xi1>, tensor<2xi64>) -> tensor<?x1x1x?xi1>
  %padding = onnx.Where %keep4, %zero, %lowest : (tensor<?x1x1x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x1x?xf32>
  %masked = onnx.Add %selected, %padding : (tensor<?x2x?x?xf32>, tensor<?x1x1x?xf32>) -> tensor<?x2x?x?xf32>
  %p = onnx.Softmax %masked {axis = -1 : i64} : (tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %o = onnx.MatMul %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      neo_buffer: "0x04000000010000000000000000000000010100000000000000000000010101000000000000000000010101010000000000000000000101010100000000000000000001010101000000000000000000010101010000000000000000000101010100000000000000000001010101000000000000000000010101010000000000000000000101010100000000000000000001010101"
    }
  }
#-}

// -----

// Without a cache between them, TorchScript joins the keys' heads transpose
// and K^T into one Transpose [0, 2, 3, 1] of the heads' view (GPT-2 and MPT
// exported without their cache): it is split again, and the attention raised.
// CHECK-LABEL: func.func @joined_key_transposes
//       CHECK:   %[[Q:.*]] = llm.split_heads %arg0 {num_heads = 4 : i64}
//       CHECK:   %[[K:.*]] = llm.split_heads %arg0 {num_heads = 4 : i64}
//       CHECK:   llm.attention %[[Q]], %[[K]], %[[Q]], %arg1 {causal, scale = 2.500000e-01 : f32}
//   CHECK-NOT:   onnx.Softmax
// ERROR-NOT: error: {{.*}}@joined_key_transposes
func.func @joined_key_transposes(%x: tensor<?x?x64xf32> {onnx.name = "inputs_embeds"},
                                 %am: tensor<?x?xi64> {onnx.name = "attention_mask"}) -> tensor<?x4x?x16xf32> {
  %c0 = onnx.Constant dense<0> : tensor<i64>
  %c1 = onnx.Constant dense<1> : tensor<i64>
  %heads = onnx.Constant dense<[0, 0, 4, 16]> : tensor<4xi64>
  %ax0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %ax12 = onnx.Constant dense<[1, 2]> : tensor<2xi64>
  %zero = onnx.Constant dense<0.0> : tensor<f32>
  %ninf = onnx.Constant dense<0xFF800000> : tensor<f32>
  %view = onnx.Reshape %x, %heads : (tensor<?x?x64xf32>, tensor<4xi64>) -> tensor<?x?x4x16xf32>
  %q = onnx.Transpose %view {perm = array<i64: 0, 2, 1, 3>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x?x16xf32>
  %kt = onnx.Transpose %view {perm = array<i64: 0, 2, 3, 1>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x16x?xf32>
  %x_shape = onnx.Shape %x : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %fresh = onnx.Gather %x_shape, %c1 : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %positions = onnx.Range %c0, %fresh, %c1 : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
  %q_col = onnx.Unsqueeze %positions, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %k_row = onnx.Unsqueeze %positions, %ax0 : (tensor<?xi64>, tensor<1xi64>) -> tensor<1x?xi64>
  %causal = onnx.LessOrEqual %k_row, %q_col : (tensor<1x?xi64>, tensor<?x1xi64>) -> tensor<?x?xi1>
  %keep = onnx.Cast %am {to = 9 : i64} : (tensor<?x?xi64>) -> tensor<?x?xi1>
  %keep4 = onnx.Unsqueeze %keep, %ax12 : (tensor<?x?xi1>, tensor<2xi64>) -> tensor<?x1x1x?xi1>
  %visible = onnx.And %causal, %keep4 : (tensor<?x?xi1>, tensor<?x1x1x?xi1>) -> tensor<?x1x?x?xi1>
  %mask = onnx.Where %visible, %zero, %ninf : (tensor<?x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<?x1x?x?xf32>
  %qk = onnx.MatMul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %scale = onnx.Constant dense<0.25> : tensor<f32>
  %scaled = onnx.Mul %qk, %scale : (tensor<?x4x?x?xf32>, tensor<f32>) -> tensor<?x4x?x?xf32>
  %masked = onnx.Add %scaled, %mask : (tensor<?x4x?x?xf32>, tensor<?x1x?x?xf32>) -> tensor<?x4x?x?xf32>
  %p = onnx.Softmax %masked {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %o = onnx.MatMul %p, %q : (tensor<?x4x?x?xf32>, tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  return %o : tensor<?x4x?x16xf32>
}

// -----

// Near miss: a Transpose [0, 2, 3, 1] of anything but the heads' view is left
// as it is, and the scores are not a QK^T product.
// CHECK-LABEL: func.func @joined_transpose_of_no_view
//       CHECK:   onnx.Transpose %arg1 {perm = array<i64: 0, 2, 3, 1>}
//       CHECK:   onnx.Softmax
// ERROR: error: onnx ops not raised to llm: {{.*}}onnx.Transpose x1{{.*}}onnx.Softmax x1
func.func @joined_transpose_of_no_view(%q: tensor<?x4x?x16xf32>, %k: tensor<?x?x4x16xf32>) -> tensor<?x4x?x?xf32> {
  %kt = onnx.Transpose %k {perm = array<i64: 0, 2, 3, 1>} : (tensor<?x?x4x16xf32>) -> tensor<?x4x16x?xf32>
  %qk = onnx.MatMul %q, %kt : (tensor<?x4x?x16xf32>, tensor<?x4x16x?xf32>) -> tensor<?x4x?x?xf32>
  %p = onnx.Softmax %qk {axis = -1 : i64} : (tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  return %p : tensor<?x4x?x?xf32>
}
