// RUN: llmc-opt %s | llmc-opt | FileCheck %s
// The llm ops print and parse back (round trip), unknown dims allowed.

// CHECK-LABEL: func.func @decoder_layer
func.func @decoder_layer(%h: tensor<?x?x64xf32>, %pos: tensor<?x?xi64>, %mask: tensor<?x?xi64>,
                         %past_k: tensor<?x2x?x16xf32>, %past_v: tensor<?x2x?x16xf32>,
                         %w: tensor<64xf32>, %wq: tensor<64x64xf32>, %wkv: tensor<32x64xf32>,
                         %inv_freq: tensor<8xf32>) -> tensor<?x?x64xf32> {
  // CHECK: llm.rms_norm %{{.*}} {epsilon = 9.99999974E-6 : f32}
  %n = llm.rms_norm %h, %w {epsilon = 1.0e-5 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %q = llm.linear %n, %wq : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  // CHECK: llm.linear %{{.*}} {transpose_weight}
  %k = llm.linear %n, %wkv {transpose_weight} : (tensor<?x?x64xf32>, tensor<32x64xf32>) -> tensor<?x?x32xf32>
  %qh = llm.split_heads %q {num_heads = 4 : i64} : (tensor<?x?x64xf32>) -> tensor<?x4x?x16xf32>
  %kh = llm.split_heads %k {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  // CHECK: llm.rope
  %qr = llm.rope %qh, %pos, %inv_freq : (tensor<?x4x?x16xf32>, tensor<?x?xi64>, tensor<8xf32>) -> tensor<?x4x?x16xf32>
  %kr = llm.rope %kh, %pos, %inv_freq : (tensor<?x2x?x16xf32>, tensor<?x?xi64>, tensor<8xf32>) -> tensor<?x2x?x16xf32>
  // CHECK: llm.kv_concat
  %kc = llm.kv_concat %past_k, %kr : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %vc = llm.kv_concat %past_v, %kh : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  // CHECK: llm.attention %{{.*}} {causal, scale = 2.500000e-01 : f32}
  %a = llm.attention %qr, %kc, %vc, %mask {causal, scale = 0.25 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  %o = llm.merge_heads %a : (tensor<?x4x?x16xf32>) -> tensor<?x?x64xf32>
  %r = llm.add %h, %o : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %g = llm.swiglu %r, %r : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %g : tensor<?x?x64xf32>
}

// Constants, and optional operands present and absent: a trailing one is
// left out of the operand list, the others are named.
// CHECK-LABEL: func.func @optional_operands
func.func @optional_operands(%x: tensor<?x8xf32>, %r: tensor<?x8xf32>,
                             %pool: tensor<1x?x2x2x16x16xf32>, %q: tensor<?x4x16xf32>,
                             %k: tensor<?x2x16xf32>, %slots: tensor<?xi32>,
                             %tables: tensor<?x?xi32>, %lens: tensor<?xi32>)
    -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>) {
  // CHECK: %[[W:.*]] = llm.constant dense<1.000000e+00> : tensor<8x8xf32>
  // CHECK: %[[B:.*]] = llm.constant dense<5.000000e-01> : tensor<8xf32>
  %w = llm.constant dense<1.0> : tensor<8x8xf32>
  %b = llm.constant dense<0.5> : tensor<8xf32>
  %freq = llm.constant dense<1.0> : tensor<8xf32>
  %cos = llm.constant dense<1.0> : tensor<64x8xf32>
  %sin = llm.constant dense<0.0> : tensor<64x8xf32>
  // CHECK: llm.linear %{{.*}}, %[[W]], %[[B]] : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %y = llm.linear %x, %w, %b : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // CHECK: llm.fused_linear %{{.*}}, %[[W]] bias(%[[B]]) extras(%{{.*}}) : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %f = llm.fused_linear %x, %w bias(%b) extras(%r) : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32> {
  ^bb0(%acc: f32, %res: f32):
    %s = arith.addf %acc, %res : f32
    llm.yield %s : f32
  }
  // CHECK: llm.rope_paged_kv_write {{.*}} inv_freq(%{{.*}}) {layer = 0 : i64}
  %rq, %p = llm.rope_paged_kv_write %pool, %q, %k, %k, %slots, %slots inv_freq(%freq) {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<8xf32>) -> (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>)
  // CHECK: llm.rope_paged_kv_write {{.*}} cos_sin(%{{.*}}, %{{.*}}) {layer = 0 : i64}
  %cq, %p2 = llm.rope_paged_kv_write %p, %q, %k, %k, %slots, %slots cos_sin(%cos, %sin) {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<64x8xf32>, tensor<64x8xf32>) -> (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>)
  // CHECK: llm.paged_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>)
  %a = llm.paged_attention %rq, %p2, %tables, %lens, %lens {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %y, %f, %a, %cq : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>
}

// The int8 KV cache: rows of 16 codes and their 4-byte scale.
// CHECK-LABEL: func.func @int8_pool
// CHECK: llm.paged_kv_write {{.*}} -> tensor<1x?x2x2x16x20xi8>
// CHECK: llm.paged_attention {{.*}} tensor<1x?x2x2x16x20xi8>
func.func @int8_pool(%pool: tensor<1x?x2x2x16x20xi8>, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %slots: tensor<?xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>) -> tensor<?x4x16xf32> {
  %p = llm.paged_kv_write %pool, %k, %k, %slots {layer = 0 : i64} : (tensor<1x?x2x2x16x20xi8>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x20xi8>
  %a = llm.paged_attention %q, %p, %tables, %lens, %lens {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<1x?x2x2x16x20xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %a : tensor<?x4x16xf32>
}

// CHECK-LABEL: func.func @permute_features
// CHECK: llm.permute_features %{{.*}}, %{{.*}} : (tensor<?x?x32xf32>, tensor<32xi32>) -> tensor<?x?x32xf32>
func.func @permute_features(%x: tensor<?x?x32xf32>, %order: tensor<32xi32>) -> tensor<?x?x32xf32> {
  %p = llm.permute_features %x, %order : (tensor<?x?x32xf32>, tensor<32xi32>) -> tensor<?x?x32xf32>
  return %p : tensor<?x?x32xf32>
}

// A per-head norm (Qwen3's q_norm): a weight of one head's length normalises
// each head of the projection on its own.
// CHECK-LABEL: func.func @per_head_norm
// CHECK: llm.rms_norm %{{.*}} : (tensor<?x?x64xf32>, tensor<16xf32>) -> tensor<?x?x64xf32>
func.func @per_head_norm(%q: tensor<?x?x64xf32>, %w: tensor<16xf32>) -> tensor<?x?x64xf32> {
  %n = llm.rms_norm %q, %w {epsilon = 1.0e-6 : f32} : (tensor<?x?x64xf32>, tensor<16xf32>) -> tensor<?x?x64xf32>
  return %n : tensor<?x?x64xf32>
}

// The cache positions of the new tokens, for exports without position_ids.
// CHECK-LABEL: func.func @cache_positions
// CHECK: llm.cache_positions %{{.*}}, %{{.*}} : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<1x?xi64>
func.func @cache_positions(%mask: tensor<?x?xi64>, %ids: tensor<?x?xi64>) -> tensor<1x?xi64> {
  %p = llm.cache_positions %mask, %ids : (tensor<?x?xi64>, tensor<?x?xi64>) -> tensor<1x?xi64>
  return %p : tensor<1x?xi64>
}

// A mixture of experts: the router's logits beside the stacked expert weights.
// CHECK-LABEL: func.func @moe
// CHECK: llm.moe %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {normalize_top_k, top_k = 2 : i64} : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x?x8xf32>
func.func @moe(%x: tensor<?x?x8xf32>, %r: tensor<?x?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x?x8xf32> {
  %y = llm.moe %x, %r, %w, %w, %d {normalize_top_k, top_k = 2 : i64} : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// GLM-4.5's routing as transformers 5 computes it: the experts of the groups
// not kept are never chosen.
// CHECK-LABEL: func.func @moe_excluded_groups
// CHECK: llm.moe {{.*}} {exclude_hidden_groups, expert_groups = 2 : i64, sigmoid_scores, top_k = 2 : i64, top_k_groups = 1 : i64}
func.func @moe_excluded_groups(%x: tensor<?x?x8xf32>, %r: tensor<?x?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x?x8xf32> {
  %y = llm.moe %x, %r, %w, %w, %d {exclude_hidden_groups, expert_groups = 2 : i64, sigmoid_scores, top_k = 2 : i64, top_k_groups = 1 : i64} : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// PhiMoE's sparsemixer: two experts by the logits, each weighed by a softmax
// over the logits near it.
// CHECK-LABEL: func.func @moe_sparse_mixer
// CHECK: llm.moe {{.*}} {sparse_mixer_threshold = 2.000000e-02 : f32, top_k = 2 : i64}
func.func @moe_sparse_mixer(%x: tensor<?x?x8xf32>, %r: tensor<?x?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x?x8xf32> {
  %y = llm.moe %x, %r, %w, %w, %d {sparse_mixer_threshold = 2.0e-02 : f32, top_k = 2 : i64} : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// gpt-oss's experts: a bias per projection and the clamped swiglu.
// CHECK-LABEL: func.func @moe_biases_clamped_swiglu
// CHECK: llm.moe %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} gate_bias(%{{.*}}) up_bias(%{{.*}}) down_bias(%{{.*}}) {normalize_top_k, swiglu_alpha = 1.702000e+00 : f32, swiglu_limit = 7.000000e+00 : f32, top_k = 2 : i64}
func.func @moe_biases_clamped_swiglu(%x: tensor<?x?x8xf32>, %r: tensor<?x?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>, %bi: tensor<4x16xf32>, %bh: tensor<4x8xf32>) -> tensor<?x?x8xf32> {
  %y = llm.moe %x, %r, %w, %w, %d gate_bias(%bi) up_bias(%bi) down_bias(%bh) {normalize_top_k, swiglu_alpha = 1.702 : f32, swiglu_limit = 7.0 : f32, top_k = 2 : i64} : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// Attention sinks: one logit per query head.
// CHECK-LABEL: func.func @attention_sinks
// CHECK: llm.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 2.500000e-01 : f32, sinks = array<f32: 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00>}
func.func @attention_sinks(%q: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %a = llm.attention %q, %q, %q {causal, scale = 0.25 : f32, sinks = array<f32: 1.0, 2.0, 3.0, 4.0>} : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %a : tensor<1x4x3x16xf32>
}

// Linear attention biases (ALiBi): one slope per query head.
// CHECK-LABEL: func.func @attention_alibi
// CHECK: llm.attention %{{.*}}, %{{.*}}, %{{.*}} {alibi_slopes = array<f32: 2.500000e-01, 6.250000e-02, 1.562500e-02, 3.906250e-03>, causal, scale = 2.500000e-01 : f32}
func.func @attention_alibi(%q: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %a = llm.attention %q, %q, %q {alibi_slopes = array<f32: 0.25, 0.0625, 0.015625, 0.00390625>, causal, scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %a : tensor<1x4x3x16xf32>
}

// DeepSeek-V3's routing: sigmoid scores, biased for the choice, within the
// best of two groups, the weights renormalised and scaled.
// CHECK-LABEL: func.func @moe_scored_routing
// CHECK: llm.moe %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} selection_bias(%{{.*}}) {expert_groups = 2 : i64, normalize_epsilon = 9.99999968E-21 : f32, normalize_top_k, routed_scale = 2.500000e+00 : f32, sigmoid_scores, top_k = 2 : i64, top_k_groups = 1 : i64}
func.func @moe_scored_routing(%x: tensor<?x?x8xf32>, %r: tensor<?x?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>, %bias: tensor<4xf32>) -> tensor<?x?x8xf32> {
  %y = llm.moe %x, %r, %w, %w, %d selection_bias(%bias) {expert_groups = 2 : i64, normalize_epsilon = 1.0e-20 : f32, normalize_top_k, routed_scale = 2.5 : f32, sigmoid_scores, top_k = 2 : i64, top_k_groups = 1 : i64} : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<4xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// ERNIE 4.5's routing: softmax scores biased for the choice, the weights
// divided by their sum floored at moe_norm_min.
// CHECK-LABEL: func.func @moe_softmax_selection_bias
// CHECK: llm.moe %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} selection_bias(%{{.*}}) {normalize_min = 9.99999996E-13 : f32, normalize_top_k, top_k = 2 : i64}
func.func @moe_softmax_selection_bias(%x: tensor<?x?x8xf32>, %r: tensor<?x?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>, %bias: tensor<4xf32>) -> tensor<?x?x8xf32> {
  %y = llm.moe %x, %r, %w, %w, %d selection_bias(%bias) {normalize_min = 1.0e-12 : f32, normalize_top_k, top_k = 2 : i64} : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<4xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @moe_quantized_experts
// CHECK: llm.dequantize %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 16 : i64} : (tensor<4x8x1x8xui8>, tensor<4x8x1xf32>) -> tensor<4x8x16xf32>
// CHECK: llm.moe
func.func @moe_quantized_experts(%x: tensor<?x?x8xf32>, %r: tensor<?x?x4xf32>, %w: tensor<4x16x8xf32>, %codes: tensor<4x8x1x8xui8>, %scales: tensor<4x8x1xf32>) -> tensor<?x?x8xf32> {
  %down = llm.dequantize %codes, %scales {bits = 4 : i64, block_size = 16 : i64} : (tensor<4x8x1x8xui8>, tensor<4x8x1xf32>) -> tensor<4x8x16xf32>
  %y = llm.moe %x, %r, %w, %w, %down {top_k = 2 : i64} : (tensor<?x?x8xf32>, tensor<?x?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// A norm whose weight has a row per head (Cohere's q/k LayerNorm).
// CHECK-LABEL: func.func @layer_norm_per_head
// CHECK: llm.layer_norm %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : (tensor<?x?x8xf32>, tensor<2x4xf32>) -> tensor<?x?x8xf32>
func.func @layer_norm_per_head(%x: tensor<?x?x8xf32>, %w: tensor<2x4xf32>) -> tensor<?x?x8xf32> {
  %n = llm.layer_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x?x8xf32>, tensor<2x4xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// Each head's features through that head's weight (multi-head latent
// attention's up-projections), dense and ragged.
// CHECK-LABEL: func.func @head_linear
// CHECK: llm.head_linear %{{.*}}, %{{.*}} : (tensor<?x2x?x8xf32>, tensor<2x8x4xf32>) -> tensor<?x2x?x4xf32>
// CHECK: llm.head_linear %{{.*}}, %{{.*}} : (tensor<?x2x8xf32>, tensor<2x8x4xf32>) -> tensor<?x2x4xf32>
func.func @head_linear(%x: tensor<?x2x?x8xf32>, %r: tensor<?x2x8xf32>, %w: tensor<2x8x4xf32>) -> (tensor<?x2x?x4xf32>, tensor<?x2x4xf32>) {
  %y = llm.head_linear %x, %w : (tensor<?x2x?x8xf32>, tensor<2x8x4xf32>) -> tensor<?x2x?x4xf32>
  %z = llm.head_linear %r, %w : (tensor<?x2x8xf32>, tensor<2x8x4xf32>) -> tensor<?x2x4xf32>
  return %y, %z : tensor<?x2x?x4xf32>, tensor<?x2x4xf32>
}

// Multi-head latent attention: a key of each head's features, then the one
// rotary head every head shares; values narrower than the keys in the pool.
// CHECK-LABEL: func.func @latent_attention
// CHECK: llm.concat_heads %{{.*}}, %{{.*}} : (tensor<?x2x8xf32>, tensor<?x1x4xf32>) -> tensor<?x2x12xf32>
// CHECK: llm.paged_kv_write %{{.*}} : (tensor<1x?x2x2x16x12xf32>, tensor<?x2x12xf32>, tensor<?x2x8xf32>, tensor<?xi32>)
// CHECK: llm.paged_attention %{{.*}} -> tensor<?x2x8xf32>
func.func @latent_attention(%nope: tensor<?x2x8xf32>, %pe: tensor<?x1x4xf32>, %v: tensor<?x2x8xf32>, %pool: tensor<1x?x2x2x16x12xf32>, %slots: tensor<?xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x2x8xf32> {
  %k = llm.concat_heads %nope, %pe : (tensor<?x2x8xf32>, tensor<?x1x4xf32>) -> tensor<?x2x12xf32>
  %p = llm.paged_kv_write %pool, %k, %v, %slots {layer = 0 : i64} : (tensor<1x?x2x2x16x12xf32>, tensor<?x2x12xf32>, tensor<?x2x8xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x12xf32>
  %a = llm.paged_attention %k, %p, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x2x12xf32>, tensor<1x?x2x2x16x12xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x8xf32>
  return %a : tensor<?x2x8xf32>
}

// A pool of one row per token: the write takes the keys alone, and attention
// reads each value as the first 8 features of its key.
// CHECK-LABEL: func.func @values_in_keys
// CHECK: llm.paged_kv_write %{{.*}} : (tensor<1x?x1x1x16x12xf32>, tensor<?x1x12xf32>, tensor<?xi32>)
// CHECK: llm.paged_attention %{{.*}} -> tensor<?x2x8xf32>
func.func @values_in_keys(%q: tensor<?x2x12xf32>, %k: tensor<?x1x12xf32>, %pool: tensor<1x?x1x1x16x12xf32>, %slots: tensor<?xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x2x8xf32> {
  %p = llm.paged_kv_write %pool, %k, %slots {layer = 0 : i64} : (tensor<1x?x1x1x16x12xf32>, tensor<?x1x12xf32>, tensor<?xi32>) -> tensor<1x?x1x1x16x12xf32>
  %a = llm.paged_attention %q, %p, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x2x12xf32>, tensor<1x?x1x1x16x12xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x8xf32>
  return %a : tensor<?x2x8xf32>
}

// An elementwise input may hold one value per row: [rows, 1] beside [rows, n].
// CHECK-LABEL: func.func @per_row_elementwise_input
// CHECK: llm.elementwise %{{.*}}, %{{.*}} : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32>
func.func @per_row_elementwise_input(%x: tensor<?x?x8xf32>, %gate: tensor<?x?x1xf32>) -> tensor<?x?x8xf32> {
  %y = llm.elementwise %x, %gate : (tensor<?x?x8xf32>, tensor<?x?x1xf32>) -> tensor<?x?x8xf32> {
  ^bb0(%a: f32, %g: f32):
    %p = arith.mulf %a, %g : f32
    llm.yield %p : f32
  }
  return %y : tensor<?x?x8xf32>
}

// A LoRA site: the linear's input and product, the site and its module.
// CHECK-LABEL: func.func @lora_site
//       CHECK:   llm.lora %{{.*}}, %{{.*}} {module = "model.layers.0.mlp.up_proj", site = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
func.func @lora_site(%x: tensor<?x8xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %o = llm.lora %x, %y {module = "model.layers.0.mlp.up_proj", site = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}
