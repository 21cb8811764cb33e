// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' 2>/dev/null | FileCheck %s
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERROR

// onnxruntime-genai's GroupQueryAttention with rotary: positions come from
// attention_mask (from which seqlens_k is computed), the caches are
// half-width, K/V keep their 2 heads (no widening) and the KV cache is
// appended.
// CHECK-LABEL: func.func @group_query_attention
//  CHECK-SAME:   (%[[Q:[^:]*]]: tensor<1x3x128xf32>, %[[K:[^:]*]]: tensor<1x3x32xf32>, %[[V:[^:]*]]: tensor<1x3x32xf32>, %[[PK:[^:]*]]: tensor<1x2x4x16xf32>, %[[PV:[^:]*]]: tensor<1x2x4x16xf32>, %[[M:[^:]*]]: tensor<1x7xi64>
//   CHECK-DAG:   %[[COS:.*]] = llm.constant dense<1.000000e+00> : tensor<32x8xf32>
//   CHECK-DAG:   %[[SIN:.*]] = llm.constant dense<0.000000e+00> : tensor<32x8xf32>
//       CHECK:   %[[QH:.*]] = llm.split_heads %[[Q]] {num_heads = 8 : i64}
//       CHECK:   %[[KH:.*]] = llm.split_heads %[[K]] {num_heads = 2 : i64}
//       CHECK:   %[[VH:.*]] = llm.split_heads %[[V]] {num_heads = 2 : i64}
//       CHECK:   %[[POS:.*]] = llm.position_ids %[[M]], %[[Q]]
//       CHECK:   %[[QR:.*]] = llm.rope_cached %[[QH]], %[[POS]], %[[COS]], %[[SIN]]
//       CHECK:   %[[KR:.*]] = llm.rope_cached %[[KH]], %[[POS]], %[[COS]], %[[SIN]]
//       CHECK:   %[[KC:.*]] = llm.kv_concat %[[PK]], %[[KR]] : {{.*}} -> tensor<1x2x7x16xf32>
//       CHECK:   %[[VC:.*]] = llm.kv_concat %[[PV]], %[[VH]]
//       CHECK:   %[[A:.*]] = llm.attention %[[QR]], %[[KC]], %[[VC]], %[[M]] {causal, scale = 2.500000e-01 : f32} : {{.*}} -> tensor<1x8x3x16xf32>
//       CHECK:   %[[O:.*]] = llm.merge_heads %[[A]] : (tensor<1x8x3x16xf32>) -> tensor<1x3x128xf32>
//       CHECK:   return %[[O]], %[[KC]], %[[VC]]
func.func @group_query_attention(%q: tensor<1x3x128xf32>, %k: tensor<1x3x32xf32>, %v: tensor<1x3x32xf32>,
    %past_k: tensor<1x2x4x16xf32>, %past_v: tensor<1x2x4x16xf32>,
    %mask: tensor<1x7xi64> {onnx.name = "attention_mask"})
    -> (tensor<1x3x128xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>) {
  %none = onnx.None
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %total = onnx.Constant dense<7> : tensor<1xi32>
  %cos = onnx.Constant dense<1.0> : tensor<32x8xf32>
  %sin = onnx.Constant dense<0.0> : tensor<32x8xf32>
  %sum = onnx.ReduceSum %mask, %axes {keepdims = 0 : i64} : (tensor<1x7xi64>, tensor<1xi64>) -> tensor<1xi64>
  %last = onnx.Sub %sum, %one : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %seqlens = onnx.Cast %last {to = 6 : i64} : (tensor<1xi64>) -> tensor<1xi32>
  %out, %pk, %pv, %qk = onnx.GroupQueryAttention %q, %k, %v, %past_k, %past_v, %seqlens, %total, %cos, %sin, %none, %none, %none
      {do_rotary = 1 : i64, kv_num_heads = 2 : i64, num_heads = 8 : i64}
      : (tensor<1x3x128xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1xi32>, tensor<1xi32>, tensor<32x8xf32>, tensor<32x8xf32>, none, none, none)
      -> (tensor<1x3x128xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>, tensor<*xf32>)
  return %out, %pk, %pv : tensor<1x3x128xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>
}

// -----

// Gemma-2's local layer as the genai builder writes it: a window of 4 keys
// (local_window_size), the logit softcap, and the past kept as a ring of the
// window's keys (sliding_window_cache), which the paged cache makes moot.
// CHECK-LABEL: func.func @group_query_attention_local_window_softcap
//       CHECK:   llm.attention {{.*}} {causal, scale = 2.500000e-01 : f32, sliding_window = 4 : i64, softcap = 5.000000e+01 : f32}
//   CHECK-NOT:   onnx.GroupQueryAttention
func.func @group_query_attention_local_window_softcap(%q: tensor<1x3x128xf32>, %k: tensor<1x3x32xf32>, %v: tensor<1x3x32xf32>,
    %past_k: tensor<1x2x4x16xf32>, %past_v: tensor<1x2x4x16xf32>,
    %mask: tensor<1x7xi64> {onnx.name = "attention_mask"}) -> tensor<1x3x128xf32> {
  %none = onnx.None
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %total = onnx.Constant dense<7> : tensor<1xi32>
  %sum = onnx.ReduceSum %mask, %axes {keepdims = 0 : i64} : (tensor<1x7xi64>, tensor<1xi64>) -> tensor<1xi64>
  %seqlens = onnx.Cast %sum {to = 6 : i64} : (tensor<1xi64>) -> tensor<1xi32>
  %out, %pk, %pv, %qk = onnx.GroupQueryAttention %q, %k, %v, %past_k, %past_v, %seqlens, %total, %none, %none, %none, %none, %none
      {kv_num_heads = 2 : i64, num_heads = 8 : i64, local_window_size = 4 : i64, softcap = 50.0 : f32, sliding_window_cache = 1 : i64}
      : (tensor<1x3x128xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1xi32>, tensor<1xi32>, none, none, none, none, none)
      -> (tensor<1x3x128xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>, tensor<*xf32>)
  return %out : tensor<1x3x128xf32>
}

// -----

// Opset-23 Attention on 3-D inputs with a KV cache and is_causal.
// CHECK-LABEL: func.func @attention_op
//       CHECK:   llm.split_heads %{{.*}} {num_heads = 4 : i64}
//       CHECK:   %[[KC:.*]] = llm.kv_concat
//       CHECK:   %[[VC:.*]] = llm.kv_concat
//       CHECK:   %[[A:.*]] = llm.attention %{{.*}}, %[[KC]], %[[VC]] {causal, scale = 2.500000e-01 : f32}
//       CHECK:   %[[O:.*]] = llm.merge_heads %[[A]]
//       CHECK:   return %[[O]], %[[KC]]
func.func @attention_op(%q: tensor<1x3x64xf32>, %k: tensor<1x3x32xf32>, %v: tensor<1x3x32xf32>,
    %past_k: tensor<1x2x4x16xf32>, %past_v: tensor<1x2x4x16xf32>) -> (tensor<1x3x64xf32>, tensor<1x2x7x16xf32>) {
  %none = onnx.None
  %y, %pk, %pv, %qk = onnx.Attention %q, %k, %v, %none, %past_k, %past_v, %none
      {is_causal = 1 : i64, q_num_heads = 4 : i64, kv_num_heads = 2 : i64}
      : (tensor<1x3x64xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, none, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, none)
      -> (tensor<1x3x64xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>, tensor<*xf32>)
  return %y, %pk : tensor<1x3x64xf32>, tensor<1x2x7x16xf32>
}

// -----

// Near miss: softcapped attention is not plain softmax attention.
// CHECK-LABEL: func.func @attention_op_softcap
//   CHECK-NOT:   llm.attention
//       CHECK:   onnx.Attention
func.func @attention_op_softcap(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %none = onnx.None
  %y, %pk, %pv, %qk = onnx.Attention %q, %k, %v, %none, %none, %none, %none {softcap = 30.0 : f32}
      : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, none, none, none, none)
      -> (tensor<1x4x3x16xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y : tensor<1x4x3x16xf32>
}

// -----

// Near miss: opset 25's sliding window is not full causal attention.
// CHECK-LABEL: func.func @attention_op_window
//   CHECK-NOT:   llm.attention
//       CHECK:   onnx.Attention
// ERROR: error: onnx ops not raised to llm: onnx.Attention x1; sliding-window attention is not supported
func.func @attention_op_window(%q: tensor<1x4x3x16xf32>, %k: tensor<1x4x3x16xf32>, %v: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %none = onnx.None
  %y, %pk, %pv, %qk = onnx.Attention %q, %k, %v, %none, %none, %none, %none {is_causal = 1 : i64, left_window_size = 2 : i64}
      : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, none, none, none, none)
      -> (tensor<1x4x3x16xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y : tensor<1x4x3x16xf32>
}

// -----

// Near miss: a local window of 0 tokens has no meaning llm.attention can
// give it; the error names it.
// CHECK-LABEL: func.func @group_query_attention_empty_window
//   CHECK-NOT:   llm.attention
//       CHECK:   onnx.GroupQueryAttention
// ERROR: error: onnx ops not raised to llm: {{.*}}onnx.GroupQueryAttention x1; a local window of 0 tokens is not supported
func.func @group_query_attention_empty_window(%q: tensor<1x3x128xf32>, %k: tensor<1x3x32xf32>, %v: tensor<1x3x32xf32>,
    %past_k: tensor<1x2x4x16xf32>, %past_v: tensor<1x2x4x16xf32>,
    %mask: tensor<1x7xi64> {onnx.name = "attention_mask"}) -> tensor<1x3x128xf32> {
  %none = onnx.None
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %total = onnx.Constant dense<7> : tensor<1xi32>
  %sum = onnx.ReduceSum %mask, %axes {keepdims = 0 : i64} : (tensor<1x7xi64>, tensor<1xi64>) -> tensor<1xi64>
  %seqlens = onnx.Cast %sum {to = 6 : i64} : (tensor<1xi64>) -> tensor<1xi32>
  %out, %pk, %pv, %qk = onnx.GroupQueryAttention %q, %k, %v, %past_k, %past_v, %seqlens, %total, %none, %none, %none, %none, %none
      {kv_num_heads = 2 : i64, num_heads = 8 : i64, local_window_size = 0 : i64}
      : (tensor<1x3x128xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1xi32>, tensor<1xi32>, none, none, none, none, none)
      -> (tensor<1x3x128xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>, tensor<*xf32>)
  return %out : tensor<1x3x128xf32>
}

// -----

// Attention sinks as the genai builder writes gpt-oss's: head_sink, a
// constant logit per query head, becomes llm.attention's sinks; with
// smooth_softmax alone each head's sink is 0.
// CHECK-LABEL: func.func @group_query_attention_head_sink
//       CHECK:   llm.attention {{.*}} {causal, scale = 2.500000e-01 : f32, sinks = array<f32: 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00, 5.000000e+00, 6.000000e+00, 7.000000e+00, 8.000000e+00>}
func.func @group_query_attention_head_sink(%q: tensor<1x3x128xf32>, %k: tensor<1x3x32xf32>, %v: tensor<1x3x32xf32>,
    %past_k: tensor<1x2x4x16xf32>, %past_v: tensor<1x2x4x16xf32>,
    %mask: tensor<1x7xi64> {onnx.name = "attention_mask"}) -> tensor<1x3x128xf32> {
  %none = onnx.None
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %total = onnx.Constant dense<7> : tensor<1xi32>
  %sink = onnx.Constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>
  %sum = onnx.ReduceSum %mask, %axes {keepdims = 0 : i64} : (tensor<1x7xi64>, tensor<1xi64>) -> tensor<1xi64>
  %seqlens = onnx.Cast %sum {to = 6 : i64} : (tensor<1xi64>) -> tensor<1xi32>
  %out, %pk, %pv, %qk = onnx.GroupQueryAttention %q, %k, %v, %past_k, %past_v, %seqlens, %total, %none, %none, %none, %none, %sink
      {kv_num_heads = 2 : i64, num_heads = 8 : i64}
      : (tensor<1x3x128xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1xi32>, tensor<1xi32>, none, none, none, none, tensor<8xf32>)
      -> (tensor<1x3x128xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>, tensor<*xf32>)
  return %out : tensor<1x3x128xf32>
}

// -----

// CHECK-LABEL: func.func @group_query_attention_smooth_softmax
//       CHECK:   llm.attention {{.*}} {causal, scale = 2.500000e-01 : f32, sinks = array<f32: 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>}
func.func @group_query_attention_smooth_softmax(%q: tensor<1x3x128xf32>, %k: tensor<1x3x32xf32>, %v: tensor<1x3x32xf32>,
    %past_k: tensor<1x2x4x16xf32>, %past_v: tensor<1x2x4x16xf32>,
    %mask: tensor<1x7xi64> {onnx.name = "attention_mask"}) -> tensor<1x3x128xf32> {
  %none = onnx.None
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %total = onnx.Constant dense<7> : tensor<1xi32>
  %sink = onnx.None
  %sum = onnx.ReduceSum %mask, %axes {keepdims = 0 : i64} : (tensor<1x7xi64>, tensor<1xi64>) -> tensor<1xi64>
  %seqlens = onnx.Cast %sum {to = 6 : i64} : (tensor<1xi64>) -> tensor<1xi32>
  %out, %pk, %pv, %qk = onnx.GroupQueryAttention %q, %k, %v, %past_k, %past_v, %seqlens, %total, %none, %none, %none, %none, %sink
      {kv_num_heads = 2 : i64, num_heads = 8 : i64, smooth_softmax = 1 : i64}
      : (tensor<1x3x128xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1xi32>, tensor<1xi32>, none, none, none, none, none)
      -> (tensor<1x3x128xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>, tensor<*xf32>)
  return %out : tensor<1x3x128xf32>
}

// -----

// Near miss: sinks computed at run time (an input) are refused by name.
// CHECK-LABEL: func.func @group_query_attention_head_sink_input
//       CHECK:   onnx.GroupQueryAttention
// ERROR: error: onnx ops not raised to llm: {{.*}}onnx.GroupQueryAttention x1; a head_sink (attention sinks) that is not a constant f32 per query head is not supported
func.func @group_query_attention_head_sink_input(%q: tensor<1x3x128xf32>, %k: tensor<1x3x32xf32>, %v: tensor<1x3x32xf32>,
    %past_k: tensor<1x2x4x16xf32>, %past_v: tensor<1x2x4x16xf32>,
    %mask: tensor<1x7xi64> {onnx.name = "attention_mask"}, %sink: tensor<8xf32>) -> tensor<1x3x128xf32> {
  %none = onnx.None
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %total = onnx.Constant dense<7> : tensor<1xi32>
  %sum = onnx.ReduceSum %mask, %axes {keepdims = 0 : i64} : (tensor<1x7xi64>, tensor<1xi64>) -> tensor<1xi64>
  %seqlens = onnx.Cast %sum {to = 6 : i64} : (tensor<1xi64>) -> tensor<1xi32>
  %out, %pk, %pv, %qk = onnx.GroupQueryAttention %q, %k, %v, %past_k, %past_v, %seqlens, %total, %none, %none, %none, %none, %sink
      {kv_num_heads = 2 : i64, num_heads = 8 : i64}
      : (tensor<1x3x128xf32>, tensor<1x3x32xf32>, tensor<1x3x32xf32>, tensor<1x2x4x16xf32>, tensor<1x2x4x16xf32>, tensor<1xi32>, tensor<1xi32>, none, none, none, none, tensor<8xf32>)
      -> (tensor<1x3x128xf32>, tensor<1x2x7x16xf32>, tensor<1x2x7x16xf32>, tensor<*xf32>)
  return %out : tensor<1x3x128xf32>
}

// -----

// SkipLayerNormalization (Phi-2 from the genai builder): the residual sum and
// its LayerNorm with gamma and beta.
// CHECK-LABEL: func.func @skip_layer_norm
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<1x3x16xf32>, %[[R:[^:]*]]: tensor<1x3x16xf32>)
//   CHECK-DAG:   %[[G:.*]] = llm.constant dense<1.000000e+00> : tensor<16xf32>
//   CHECK-DAG:   %[[B:.*]] = llm.constant dense<5.000000e-01> : tensor<16xf32>
//       CHECK:   %[[S:.*]] = llm.add %[[X]], %[[R]]
//       CHECK:   %[[N:.*]] = llm.layer_norm %[[S]], %[[G]], %[[B]] {epsilon = 9.99999974E-6 : f32}
//       CHECK:   return %[[N]], %[[S]]
func.func @skip_layer_norm(%x: tensor<1x3x16xf32>, %residual: tensor<1x3x16xf32>) -> (tensor<1x3x16xf32>, tensor<1x3x16xf32>) {
  %none = onnx.None
  %g = onnx.Constant dense<1.0> : tensor<16xf32>
  %b = onnx.Constant dense<0.5> : tensor<16xf32>
  %out, %mean, %inv, %sum = onnx.SkipLayerNormalization %x, %residual, %g, %b, %none {epsilon = 1.0e-5 : f32}
      : (tensor<1x3x16xf32>, tensor<1x3x16xf32>, tensor<16xf32>, tensor<16xf32>, none)
      -> (tensor<1x3x16xf32>, tensor<1x3x1xf32>, tensor<1x3x1xf32>, tensor<1x3x16xf32>)
  return %out, %sum : tensor<1x3x16xf32>, tensor<1x3x16xf32>
}

// -----

// SkipSimplifiedLayerNormalization: the residual sum and its RMS norm.
// CHECK-LABEL: func.func @skip_simplified_layer_norm
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<1x3x16xf32>, %[[R:[^:]*]]: tensor<1x3x16xf32>)
//       CHECK:   %[[S:.*]] = llm.add %[[X]], %[[R]]
//       CHECK:   %[[N:.*]] = llm.rms_norm %[[S]], %{{.*}} {epsilon = 9.99999997E-7 : f32}
//       CHECK:   return %[[N]], %[[S]]
func.func @skip_simplified_layer_norm(%x: tensor<1x3x16xf32>, %residual: tensor<1x3x16xf32>) -> (tensor<1x3x16xf32>, tensor<1x3x16xf32>) {
  %none = onnx.None
  %w = onnx.Constant dense<1.0> : tensor<16xf32>
  %out, %mean, %inv, %sum = onnx.SkipSimplifiedLayerNormalization %x, %residual, %w, %none {epsilon = 1.0e-6 : f32}
      : (tensor<1x3x16xf32>, tensor<1x3x16xf32>, tensor<16xf32>, none)
      -> (tensor<1x3x16xf32>, tensor<1x3x1xf32>, tensor<1x3x1xf32>, tensor<1x3x16xf32>)
  return %out, %sum : tensor<1x3x16xf32>, tensor<1x3x16xf32>
}

// -----

// Near miss: a caller reading the statistics needs the op itself.
// CHECK-LABEL: func.func @skip_simplified_layer_norm_stats
//   CHECK-NOT:   llm.rms_norm
//       CHECK:   onnx.SkipSimplifiedLayerNormalization
func.func @skip_simplified_layer_norm_stats(%x: tensor<1x3x16xf32>, %residual: tensor<1x3x16xf32>) -> tensor<1x3x1xf32> {
  %none = onnx.None
  %w = onnx.Constant dense<1.0> : tensor<16xf32>
  %out, %mean, %inv, %sum = onnx.SkipSimplifiedLayerNormalization %x, %residual, %w, %none {epsilon = 1.0e-6 : f32}
      : (tensor<1x3x16xf32>, tensor<1x3x16xf32>, tensor<16xf32>, none)
      -> (tensor<1x3x16xf32>, tensor<1x3x1xf32>, tensor<1x3x1xf32>, tensor<1x3x16xf32>)
  return %inv : tensor<1x3x1xf32>
}

// -----

// MatMulNBits: a linear layer over the dequantised [N, K] weight.
// CHECK-LABEL: func.func @matmul_nbits
//       CHECK:   %[[W:.*]] = llm.dequantize %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 32 : i64} : {{.*}} -> tensor<8x64xf32>
//       CHECK:   llm.linear %{{.*}}, %[[W]] {transpose_weight}
func.func @matmul_nbits(%x: tensor<1x3x64xf32>) -> tensor<1x3x8xf32> {
  %none = onnx.None
  %b = onnx.Constant dense<17> : tensor<8x2x16xui8>
  %scales = onnx.Constant dense<0.5> : tensor<8x2xf32>
  %y = onnx.MatMulNBits %x, %b, %scales, %none, %none, %none {K = 64 : i64, N = 8 : i64, bits = 4 : i64, block_size = 32 : i64}
      : (tensor<1x3x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>, none, none, none) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// Act-order: g_idx scatters the groups over the input features. The codes'
// columns are sorted by group (column i takes feature order[i]'s code:
// 0, 2, ..., 30, then 1, 3, ..., 31) so that each block is one group, and the
// input is reordered the same way.
// CHECK-LABEL: func.func @matmul_nbits_act_order
//  CHECK-SAME:   (%[[X:.*]]: tensor<1x3x32xf32>)
//       CHECK:   %[[B:.*]] = llm.constant dense_resource<[[BLOB:repacked[_0-9]*]]> : tensor<1x2x16xui8>
//       CHECK:   %[[ORDER:.*]] = llm.constant dense<[0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31]> : tensor<32xi32>
//       CHECK:   %[[XP:.*]] = llm.permute_features %[[X]], %[[ORDER]]
//       CHECK:   %[[W:.*]] = llm.dequantize %[[B]], %{{.*}} {bits = 8 : i64, block_size = 16 : i64}
//       CHECK:   llm.linear %[[XP]], %[[W]] {transpose_weight}
//       CHECK:   [[BLOB]]: "0x0100000000020406080A0C0E10121416181A1C1E01030507090B0D0F11131517191B1D1F"
func.func @matmul_nbits_act_order(%x: tensor<1x3x32xf32>) -> tensor<1x3x1xf32> {
  %none = onnx.None
  %b = onnx.Constant dense<[[[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15],[16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31]]]> : tensor<1x2x16xui8>
  %scales = onnx.Constant dense<0.5> : tensor<1x2xf32>
  %g = onnx.Constant dense<[0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1]> : tensor<32xi32>
  %y = onnx.MatMulNBits %x, %b, %scales, %none, %g, %none {K = 32 : i64, N = 1 : i64, bits = 8 : i64, block_size = 16 : i64}
      : (tensor<1x3x32xf32>, tensor<1x2x16xui8>, tensor<1x2xf32>, none, tensor<32xi32>, none) -> tensor<1x3x1xf32>
  return %y : tensor<1x3x1xf32>
}

// -----

// A g_idx in the plain order (feature k in group k / block_size) changes nothing.
// CHECK-LABEL: func.func @matmul_nbits_plain_g_idx
//   CHECK-NOT:   llm.permute_features
//       CHECK:   llm.linear
func.func @matmul_nbits_plain_g_idx(%x: tensor<1x3x32xf32>) -> tensor<1x3x1xf32> {
  %none = onnx.None
  %b = onnx.Constant dense<17> : tensor<1x2x16xui8>
  %scales = onnx.Constant dense<0.5> : tensor<1x2xf32>
  %g = onnx.Constant dense<[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]> : tensor<32xi32>
  %y = onnx.MatMulNBits %x, %b, %scales, %none, %g, %none {K = 32 : i64, N = 1 : i64, bits = 8 : i64, block_size = 16 : i64}
      : (tensor<1x3x32xf32>, tensor<1x2x16xui8>, tensor<1x2xf32>, none, tensor<32xi32>, none) -> tensor<1x3x1xf32>
  return %y : tensor<1x3x1xf32>
}

// -----

// Near misses: a g_idx that is not a constant, or whose groups do not hold
// block_size features each, or that comes with packed zero points (which
// onnxruntime ignores when g_idx is given).
// CHECK-LABEL: func.func @matmul_nbits_g_idx_input
//   CHECK-NOT:   llm.dequantize
//       CHECK:   onnx.MatMulNBits
// ERROR: error: onnx ops not raised to llm: onnx.MatMulNBits x1; a g_idx that is not a constant grouping block_size input features per scale is not supported
func.func @matmul_nbits_g_idx_input(%x: tensor<1x3x64xf32>, %g: tensor<64xi32>) -> tensor<1x3x8xf32> {
  %none = onnx.None
  %b = onnx.Constant dense<17> : tensor<8x2x16xui8>
  %scales = onnx.Constant dense<0.5> : tensor<8x2xf32>
  %y = onnx.MatMulNBits %x, %b, %scales, %none, %g, %none {K = 64 : i64, N = 8 : i64, bits = 4 : i64, block_size = 32 : i64}
      : (tensor<1x3x64xf32>, tensor<8x2x16xui8>, tensor<8x2xf32>, none, tensor<64xi32>, none) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// ERROR: error: onnx ops not raised to llm: onnx.MatMulNBits x1; a g_idx that is not a constant grouping block_size input features per scale is not supported
// CHECK-LABEL: func.func @matmul_nbits_uneven_groups
//       CHECK:   onnx.MatMulNBits
func.func @matmul_nbits_uneven_groups(%x: tensor<1x3x32xf32>) -> tensor<1x3x1xf32> {
  %none = onnx.None
  %b = onnx.Constant dense<17> : tensor<1x2x16xui8>
  %scales = onnx.Constant dense<0.5> : tensor<1x2xf32>
  %g = onnx.Constant dense<0> : tensor<32xi32>
  %y = onnx.MatMulNBits %x, %b, %scales, %none, %g, %none {K = 32 : i64, N = 1 : i64, bits = 8 : i64, block_size = 16 : i64}
      : (tensor<1x3x32xf32>, tensor<1x2x16xui8>, tensor<1x2xf32>, none, tensor<32xi32>, none) -> tensor<1x3x1xf32>
  return %y : tensor<1x3x1xf32>
}

// -----

// ERROR: error: onnx ops not raised to llm: onnx.MatMulNBits x1; act-order (g_idx) with packed uint8 zero points (onnxruntime ignores them with g_idx, using 2^(bits-1): the file means two things) is not supported
// CHECK-LABEL: func.func @matmul_nbits_act_order_zero_points
//       CHECK:   onnx.MatMulNBits
func.func @matmul_nbits_act_order_zero_points(%x: tensor<1x3x32xf32>) -> tensor<1x3x1xf32> {
  %none = onnx.None
  %b = onnx.Constant dense<17> : tensor<1x2x16xui8>
  %scales = onnx.Constant dense<0.5> : tensor<1x2xf32>
  %zeros = onnx.Constant dense<136> : tensor<1x1xui8>
  %g = onnx.Constant dense<[0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1]> : tensor<32xi32>
  %y = onnx.MatMulNBits %x, %b, %scales, %zeros, %g, %none {K = 32 : i64, N = 1 : i64, bits = 8 : i64, block_size = 16 : i64}
      : (tensor<1x3x32xf32>, tensor<1x2x16xui8>, tensor<1x2xf32>, tensor<1x1xui8>, tensor<32xi32>, none) -> tensor<1x3x1xf32>
  return %y : tensor<1x3x1xf32>
}

// MatMul by a blocked DequantizeLinear (onnxruntime's QDQ form): the weight
// transposed to [N, K] in MatMulNBits' layout, under the same llm.dequantize.
// uint4 codes keep their zero points ([N, blocks] packed by rows).
// CHECK-LABEL: func.func @qdq_uint4
//       CHECK:   %[[C:.*]] = llm.constant dense_resource<repacked> : tensor<8x2x16xui8>
//       CHECK:   %[[S:.*]] = llm.constant dense<{{.*}}> : tensor<8x2xf32>
//       CHECK:   %[[Z:.*]] = llm.constant dense_resource<repacked{{.*}}> : tensor<8x1xui8>
//       CHECK:   %[[W:.*]] = llm.dequantize %[[C]], %[[S]], %[[Z]] {bits = 4 : i64, block_size = 32 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf32>, tensor<8x1xui8>) -> tensor<8x64xf32>
//       CHECK:   llm.linear %{{.*}}, %[[W]] {transpose_weight} : (tensor<1x3x64xf32>, tensor<8x64xf32>) -> tensor<1x3x8xf32>
func.func @qdq_uint4(%x: tensor<1x3x64xf32>) -> tensor<1x3x8xf32> {
  %q = onnx.Constant dense<3> : tensor<64x8xui4>
  %s = onnx.Constant dense<0.5> : tensor<2x8xf32>
  %z = onnx.Constant dense<8> : tensor<2x8xui4>
  %w = onnx.DequantizeLinear %q, %s, %z {axis = 0 : i64, block_size = 32 : i64} : (tensor<64x8xui4>, tensor<2x8xf32>, tensor<2x8xui4>) -> tensor<64x8xf32>
  %y = onnx.MatMul %x, %w : (tensor<1x3x64xf32>, tensor<64x8xf32>) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// Signed int8 codes without zero points are stored biased by 128, which is
// the layout's default zero point: no zero points. Unsigned codes without
// zero points get explicit zeros (DequantizeLinear's default is 0).
// CHECK-LABEL: func.func @qdq_int8_and_uint8
//       CHECK:   llm.dequantize %{{[^,]*}}, %{{[^,]*}} {bits = 8 : i64, block_size = 16 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf32>) -> tensor<8x32xf32>
//       CHECK:   llm.dequantize %{{.*}}, %{{.*}}, %{{.*}} {bits = 8 : i64, block_size = 16 : i64} : (tensor<8x2x16xui8>, tensor<8x2xf32>, tensor<8x2xui8>) -> tensor<8x32xf32>
func.func @qdq_int8_and_uint8(%x: tensor<1x3x32xf32>) -> (tensor<1x3x8xf32>, tensor<1x3x8xf32>) {
  %none = onnx.None
  %qi = onnx.Constant dense<-5> : tensor<32x8xi8>
  %qu = onnx.Constant dense<200> : tensor<32x8xui8>
  %s = onnx.Constant dense<0.25> : tensor<2x8xf32>
  %wi = onnx.DequantizeLinear %qi, %s, %none {axis = 0 : i64, block_size = 16 : i64} : (tensor<32x8xi8>, tensor<2x8xf32>, none) -> tensor<32x8xf32>
  %wu = onnx.DequantizeLinear %qu, %s, %none {axis = 0 : i64, block_size = 16 : i64} : (tensor<32x8xui8>, tensor<2x8xf32>, none) -> tensor<32x8xf32>
  %yi = onnx.MatMul %x, %wi : (tensor<1x3x32xf32>, tensor<32x8xf32>) -> tensor<1x3x8xf32>
  %yu = onnx.MatMul %x, %wu : (tensor<1x3x32xf32>, tensor<32x8xf32>) -> tensor<1x3x8xf32>
  return %yi, %yu : tensor<1x3x8xf32>, tensor<1x3x8xf32>
}

// -----

// Near misses: scales per axis rather than per block, blocks along N.
// CHECK-LABEL: func.func @qdq_not_blocked_along_k
//   CHECK-NOT:   llm.dequantize
//   CHECK-COUNT-2: onnx.MatMul
func.func @qdq_not_blocked_along_k(%x: tensor<1x3x64xf32>) -> (tensor<1x3x8xf32>, tensor<1x3x8xf32>) {
  %none = onnx.None
  %q = onnx.Constant dense<3> : tensor<64x8xui4>
  %sa = onnx.Constant dense<0.5> : tensor<8xf32>
  %sn = onnx.Constant dense<0.5> : tensor<64x1xf32>
  %wa = onnx.DequantizeLinear %q, %sa, %none {axis = 1 : i64} : (tensor<64x8xui4>, tensor<8xf32>, none) -> tensor<64x8xf32>
  %wn = onnx.DequantizeLinear %q, %sn, %none {axis = 1 : i64, block_size = 8 : i64} : (tensor<64x8xui4>, tensor<64x1xf32>, none) -> tensor<64x8xf32>
  %ya = onnx.MatMul %x, %wa : (tensor<1x3x64xf32>, tensor<64x8xf32>) -> tensor<1x3x8xf32>
  %yn = onnx.MatMul %x, %wn : (tensor<1x3x64xf32>, tensor<64x8xf32>) -> tensor<1x3x8xf32>
  return %ya, %yn : tensor<1x3x8xf32>, tensor<1x3x8xf32>
}

// -----

// A row gather of a weight table is the embedding; of an activation it is not.
// CHECK-LABEL: func.func @embedding
//  CHECK-SAME:   (%[[IDS:[^:]*]]: tensor<1x3xi64>, %[[H:[^:]*]]: tensor<4x16xf32>
//       CHECK:   llm.embedding %{{.*}}, %[[IDS]]
//       CHECK:   onnx.Gather %[[H]], %[[IDS]]
func.func @embedding(%ids: tensor<1x3xi64>, %h: tensor<4x16xf32>) -> (tensor<1x3x16xf32>, tensor<1x3x16xf32>) {
  %table = onnx.Constant dense<1.0> : tensor<32x16xf32>
  %e = onnx.Gather %table, %ids : (tensor<32x16xf32>, tensor<1x3xi64>) -> tensor<1x3x16xf32>
  %g = onnx.Gather %h, %ids : (tensor<4x16xf32>, tensor<1x3xi64>) -> tensor<1x3x16xf32>
  return %e, %g : tensor<1x3x16xf32>, tensor<1x3x16xf32>
}

// -----

// RotaryEmbedding (opset 23) on [b, heads, s, d] with position_ids.
// CHECK-LABEL: func.func @rotary_embedding
//       CHECK:   llm.rope_cached %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x4x3x16xf32>
func.func @rotary_embedding(%x: tensor<1x4x3x16xf32>, %pos: tensor<1x3xi64>) -> tensor<1x4x3x16xf32> {
  %cos = onnx.Constant dense<1.0> : tensor<32x8xf32>
  %sin = onnx.Constant dense<0.0> : tensor<32x8xf32>
  %y = onnx.RotaryEmbedding %x, %cos, %sin, %pos : (tensor<1x4x3x16xf32>, tensor<32x8xf32>, tensor<32x8xf32>, tensor<1x3xi64>) -> tensor<1x4x3x16xf32>
  return %y : tensor<1x4x3x16xf32>
}

// -----

// Tables gathered per token (no position_ids) as Cos and Sin of the angles
// positions x inv_freq (torch.onnx's opset-23 export): llm.rope over those.
// CHECK-LABEL: func.func @rotary_embedding_angles
//  CHECK-SAME:   (%[[X:[^:]*]]: tensor<1x4x3x16xf32>, %[[P:[^:]*]]: tensor<1x3xi64>)
//       CHECK:   llm.rope %[[X]], %[[P]], %{{.*}} : (tensor<1x4x3x16xf32>, tensor<1x3xi64>, tensor<8xf32>)
//   CHECK-NOT:   onnx.RotaryEmbedding
func.func @rotary_embedding_angles(%x: tensor<1x4x3x16xf32>, %pos: tensor<1x3xi64>) -> tensor<1x4x3x16xf32> {
  %none = onnx.None
  %inv_freq = onnx.Constant dense<[1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125]> : tensor<8xf32>
  %last = onnx.Constant dense<[-1]> : tensor<1xi64>
  %p3 = onnx.Unsqueeze %pos, %last : (tensor<1x3xi64>, tensor<1xi64>) -> tensor<1x3x1xi64>
  %pf = onnx.Cast %p3 {to = 1 : i64} : (tensor<1x3x1xi64>) -> tensor<1x3x1xf32>
  %angles = onnx.Mul %pf, %inv_freq : (tensor<1x3x1xf32>, tensor<8xf32>) -> tensor<1x3x8xf32>
  %cos = onnx.Cos %angles : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %sin = onnx.Sin %angles : (tensor<1x3x8xf32>) -> tensor<1x3x8xf32>
  %y = onnx.RotaryEmbedding %x, %cos, %sin, %none : (tensor<1x4x3x16xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>, none) -> tensor<1x4x3x16xf32>
  return %y : tensor<1x4x3x16xf32>
}

// -----

// Near miss: tables gathered per token that are inputs, not Cos/Sin of angles.
// CHECK-LABEL: func.func @rotary_embedding_pregathered
//   CHECK-NOT:   llm.rope_cached
//       CHECK:   onnx.RotaryEmbedding
func.func @rotary_embedding_pregathered(%x: tensor<1x4x3x16xf32>, %cos: tensor<1x3x8xf32>, %sin: tensor<1x3x8xf32>) -> tensor<1x4x3x16xf32> {
  %none = onnx.None
  %y = onnx.RotaryEmbedding %x, %cos, %sin, %none : (tensor<1x4x3x16xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>, none) -> tensor<1x4x3x16xf32>
  return %y : tensor<1x4x3x16xf32>
}
