// RUN: llmc-opt %s -split-input-file -verify-diagnostics

func.func @attention_heads(%q: tensor<1x6x3x16xf32>, %kv: tensor<1x4x3x16xf32>) -> tensor<1x6x3x16xf32> {
  // expected-error @+1 {{query heads (6) are not a multiple of KV heads (4)}}
  %a = llm.attention %q, %kv, %kv {scale = 0.25 : f32} : (tensor<1x6x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x6x3x16xf32>
  return %a : tensor<1x6x3x16xf32>
}

// -----

func.func @attention_head_size(%q: tensor<1x4x3x16xf32>, %kv: tensor<1x2x3x8xf32>) -> tensor<1x4x3x8xf32> {
  // expected-error @+1 {{query and key head sizes differ}}
  %a = llm.attention %q, %kv, %kv {scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>) -> tensor<1x4x3x8xf32>
  return %a : tensor<1x4x3x8xf32>
}

// -----

func.func @split_heads_size(%x: tensor<1x3x60xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{hidden size 60 is not 4 heads of 16}}
  %h = llm.split_heads %x {num_heads = 4 : i64} : (tensor<1x3x60xf32>) -> tensor<1x4x3x16xf32>
  return %h : tensor<1x4x3x16xf32>
}

// -----

func.func @rope_width(%x: tensor<1x4x3x16xf32>, %pos: tensor<1x3xi64>, %inv: tensor<16xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{rotates 32 features of a head of 16}}
  %r = llm.rope %x, %pos, %inv : (tensor<1x4x3x16xf32>, tensor<1x3xi64>, tensor<16xf32>) -> tensor<1x4x3x16xf32>
  return %r : tensor<1x4x3x16xf32>
}

// -----

func.func @kv_concat_heads(%past: tensor<1x2x5x16xf32>, %new: tensor<1x4x1x16xf32>) -> tensor<1x2x6x16xf32> {
  // expected-error @+1 {{past and current differ in dim 1}}
  %c = llm.kv_concat %past, %new : (tensor<1x2x5x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x2x6x16xf32>
  return %c : tensor<1x2x6x16xf32>
}

// -----

func.func @linear_weight(%x: tensor<1x3x64xf32>, %w: tensor<32x16xf32>) -> tensor<1x3x16xf32> {
  // expected-error @+1 {{weight's input dim differs from the input's last dim}}
  %y = llm.linear %x, %w : (tensor<1x3x64xf32>, tensor<32x16xf32>) -> tensor<1x3x16xf32>
  return %y : tensor<1x3x16xf32>
}

// -----

func.func @rms_norm_weight(%x: tensor<1x3x64xf32>, %w: tensor<48xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{weight length does not divide the normalised dim into groups}}
  %y = llm.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<1x3x64xf32>, tensor<48xf32>) -> tensor<1x3x64xf32>
  return %y : tensor<1x3x64xf32>
}

// -----

func.func @repeat_kv(%x: tensor<1x2x3x16xf32>) -> tensor<1x6x3x16xf32> {
  // expected-error @+1 {{result heads are not input heads * repeats}}
  %y = llm.repeat_kv %x {repeats = 4 : i64} : (tensor<1x2x3x16xf32>) -> tensor<1x6x3x16xf32>
  return %y : tensor<1x6x3x16xf32>
}

// -----

func.func @elementwise_body_arity(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{body takes 2 scalars, not 1}}
  %y = llm.elementwise %x : (tensor<?x8xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: f32, %b: f32):
    llm.yield %a : f32
  }
  return %y : tensor<?x8xf32>
}

// -----

func.func @elementwise_broadcast(%x: tensor<?x8xf32>, %row: tensor<4xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{an input must have the result's shape or be [columns], one value per row or a scalar}}
  %y = llm.elementwise %x, %row : (tensor<?x8xf32>, tensor<4xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    llm.yield %s : f32
  }
  return %y : tensor<?x8xf32>
}

// -----

func.func @elementwise_two_per_row(%x: tensor<?x8xf32>, %pair: tensor<?x2xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{an input differs from the result in dim 1}}
  %y = llm.elementwise %x, %pair : (tensor<?x8xf32>, tensor<?x2xf32>) -> tensor<?x8xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.mulf %a, %b : f32
    llm.yield %s : f32
  }
  return %y : tensor<?x8xf32>
}

// -----

// A GEMM's epilogue reads its extras per element or per column only.
func.func @fused_linear_per_row_extra(%x: tensor<?x8xf32>, %w: tensor<8x8xf32>, %gate: tensor<?x1xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{an extra differs from the result in dim 1}}
  %y = llm.fused_linear %x, %w extras(%gate) : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32> {
  ^bb0(%acc: f32, %g: f32):
    %s = arith.mulf %acc, %g : f32
    llm.yield %s : f32
  }
  return %y : tensor<?x8xf32>
}

// -----

func.func @fused_linear_gated_width(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{result has 16 columns; the product has 16 (gated: twice the result's)}}
  %y = llm.fused_linear %x, %w {gated} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32> {
  ^bb0(%g: f32, %u: f32):
    llm.yield %g : f32
  }
  return %y : tensor<?x16xf32>
}

// -----

func.func @fused_linear_accumulators(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{body takes 1 scalars, not 2}}
  %y = llm.fused_linear %x, %w {gated} : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32> {
  ^bb0(%g: f32):
    llm.yield %g : f32
  }
  return %y : tensor<?x8xf32>
}

// -----

func.func @split_sizes(%x: tensor<?x8xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{sizes add up to 6, not the input's 8}}
  %a:2 = llm.split %x {sizes = array<i64: 4, 2>} : (tensor<?x8xf32>) -> (tensor<?x4xf32>, tensor<?x2xf32>)
  return %a#0 : tensor<?x4xf32>
}

// -----

func.func @add_norm_types(%a: tensor<?x8xf32>, %b: tensor<?x4xf32>, %w: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{lhs, rhs, sum and normed must have one type}}
  %s, %n = llm.add_rms_norm %a, %b, %w {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>)
  return %n : tensor<?x8xf32>
}

// -----

func.func @rope_kv_write_angles(%pool: tensor<1x?x2x2x16x16xf32>, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %slots: tensor<?xi32>) -> tensor<?x4x16xf32> {
  // expected-error @+1 {{takes either inv_freq or both cos_cache and sin_cache}}
  %r, %p = llm.rope_paged_kv_write %pool, %q, %k, %k, %slots, %slots {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<?xi32>) -> (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>)
  return %r : tensor<?x4x16xf32>
}

// -----

// The logits head's epilogue maps one logit: it takes one scalar.
func.func @logits_epilogue_scalars(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{body takes 2 scalars, not 1}}
  %y = llm.logits %x, %w : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32> {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    llm.yield %s : f32
  }
  return %y : tensor<?x16xf32>
}

// -----

func.func @logits_bias_width(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) -> tensor<?x16xf32> {
  // expected-error @+1 {{bias must be [16]}}
  %y = llm.logits %x, %w bias(%b) : (tensor<?x8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<?x16xf32>
  return %y : tensor<?x16xf32>
}

// -----

func.func @attention_window(%q: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{sliding_window must be positive}}
  %a = llm.attention %q, %q, %q {causal, scale = 0.25 : f32, sliding_window = 0 : i64} : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %a : tensor<1x4x3x16xf32>
}

// -----

func.func @attention_softcap(%q: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{softcap must be positive}}
  %a = llm.attention %q, %q, %q {causal, scale = 0.25 : f32, softcap = -1.0 : f32} : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %a : tensor<1x4x3x16xf32>
}

// -----

// A pool of one row per token holds the keys, whose first features are the
// values: a write of values has nowhere to put them.
func.func @values_into_one_row_pool(%pool: tensor<1x?x1x2x16x16xf32>, %k: tensor<?x2x16xf32>, %slots: tensor<?xi32>) -> tensor<1x?x1x2x16x16xf32> {
  // expected-error @+1 {{writes values into a pool of one row per token, whose values are its keys' first features}}
  %p = llm.paged_kv_write %pool, %k, %k, %slots {layer = 0 : i64} : (tensor<1x?x1x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x1x2x16x16xf32>
  return %p : tensor<1x?x1x2x16x16xf32>
}

// -----

func.func @no_values_into_two_row_pool(%pool: tensor<1x?x2x2x16x16xf32>, %k: tensor<?x2x16xf32>, %slots: tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32> {
  // expected-error @+1 {{takes no values for a pool of key and value rows}}
  %p = llm.paged_kv_write %pool, %k, %slots {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  return %p : tensor<1x?x2x2x16x16xf32>
}

// -----

func.func @three_rows_a_token(%pool: tensor<1x?x3x2x16x16xf32>, %k: tensor<?x2x16xf32>, %slots: tensor<?xi32>) -> tensor<1x?x3x2x16x16xf32> {
  // expected-error @+1 {{the KV pool's third dim must be 2 (keys, values) or 1 (keys whose first features are the values)}}
  %p = llm.paged_kv_write %pool, %k, %k, %slots {layer = 0 : i64} : (tensor<1x?x3x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x3x2x16x16xf32>
  return %p : tensor<1x?x3x2x16x16xf32>
}

// -----

func.func @rope_kv_write_into_one_row_pool(%pool: tensor<1x?x1x2x16x16xf32>, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %slots: tensor<?xi32>, %freq: tensor<8xf32>) -> tensor<?x4x16xf32> {
  // expected-error @+1 {{writes values into a pool of one row per token, whose values are its keys' first features}}
  %r, %p = llm.rope_paged_kv_write %pool, %q, %k, %k, %slots, %slots inv_freq(%freq) {layer = 0 : i64} : (tensor<1x?x1x2x16x16xf32>, tensor<?x4x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<8xf32>) -> (tensor<?x4x16xf32>, tensor<1x?x1x2x16x16xf32>)
  return %r : tensor<?x4x16xf32>
}

// -----

func.func @int8_pool_without_codes(%pool: tensor<1x?x2x2x16x4xi8>, %k: tensor<?x2x16xf32>, %slots: tensor<?xi32>) -> tensor<1x?x2x2x16x4xi8> {
  // expected-error @+1 {{an int8 KV pool's rows must hold head_dim codes and a 4-byte scale}}
  %p = llm.paged_kv_write %pool, %k, %k, %slots {layer = 0 : i64} : (tensor<1x?x2x2x16x4xi8>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x4xi8>
  return %p : tensor<1x?x2x2x16x4xi8>
}

// -----

// An int8 row is head_dim codes and 4 bytes of scale: 16 codes need rows of 20.
func.func @int8_pool_row_without_scale(%pool: tensor<1x?x2x2x16x16xi8>, %k: tensor<?x2x16xf32>, %slots: tensor<?xi32>) -> tensor<1x?x2x2x16x16xi8> {
  // expected-error @+1 {{keys do not fit the pool's kv_heads and head_dim}}
  %p = llm.paged_kv_write %pool, %k, %k, %slots {layer = 0 : i64} : (tensor<1x?x2x2x16x16xi8>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xi8>
  return %p : tensor<1x?x2x2x16x16xi8>
}

// -----

func.func @int32_pool(%q: tensor<?x2x16xf32>, %pool: tensor<1x?x2x2x16x16xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>) -> tensor<?x2x16xf32> {
  // expected-error @+1 {{the KV pool holds 'i32'; it must be a float or i8 (int8 codes)}}
  %a = llm.paged_attention %q, %pool, %tables, %lens, %lens {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xi32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  return %a : tensor<?x2x16xf32>
}

// -----

func.func @permute_features_short_indices(%x: tensor<?x32xf32>, %order: tensor<16xi32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{indices must hold one index per feature}}
  %p = llm.permute_features %x, %order : (tensor<?x32xf32>, tensor<16xi32>) -> tensor<?x32xf32>
  return %p : tensor<?x32xf32>
}

// -----

func.func @permute_features_i64_indices(%x: tensor<?x32xf32>, %order: tensor<32xi64>) -> tensor<?x32xf32> {
  // expected-error @+1 {{indices must be i32}}
  %p = llm.permute_features %x, %order : (tensor<?x32xf32>, tensor<32xi64>) -> tensor<?x32xf32>
  return %p : tensor<?x32xf32>
}

// -----

func.func @moe_top_k_past_experts(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{top_k 5 must be in [1, 4]}}
  %y = llm.moe %x, %r, %w, %w, %d {top_k = 5 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_router_columns(%x: tensor<?x8xf32>, %r: tensor<?x3xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{the router logits must have one column per expert (4)}}
  %y = llm.moe %x, %r, %w, %w, %d {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x3xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_down_weight_not_out_in(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{the down weight must be [experts, hidden, intermediate]}}
  %y = llm.moe %x, %r, %w, %w, %w {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_up_weight(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %u: tensor<4x12x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{the gate and up weights must both be [experts, intermediate, hidden]}}
  %y = llm.moe %x, %r, %w, %u, %d {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x12x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_groups_without_kept(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expert_groups and top_k_groups come together}}
  %y = llm.moe %x, %r, %w, %w, %d {expert_groups = 2 : i64, sigmoid_scores, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_excluded_groups_without_groups(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{exclude_hidden_groups needs expert_groups}}
  %y = llm.moe %x, %r, %w, %w, %d {exclude_hidden_groups, sigmoid_scores, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_sparse_mixer_of_three(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{sparse_mixer_threshold (PhiMoE's sparsemixer) chooses 2 experts by their logits alone, unnormalised}}
  %y = llm.moe %x, %r, %w, %w, %d {sparse_mixer_threshold = 2.0e-02 : f32, top_k = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_groups_of_one(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{expert_groups 4 must split the 4 experts into groups of at least 2}}
  %y = llm.moe %x, %r, %w, %w, %d {expert_groups = 4 : i64, sigmoid_scores, top_k = 2 : i64, top_k_groups = 1 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_top_k_past_kept_groups(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{top_k 3 is more than the 2 experts of the top_k_groups groups}}
  %y = llm.moe %x, %r, %w, %w, %d {expert_groups = 2 : i64, sigmoid_scores, top_k = 3 : i64, top_k_groups = 1 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_kept_groups_past_groups(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{top_k_groups 3 must be in [1, expert_groups 2]}}
  %y = llm.moe %x, %r, %w, %w, %d {expert_groups = 2 : i64, sigmoid_scores, top_k = 2 : i64, top_k_groups = 3 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_selection_bias_shape(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>, %b: tensor<3xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{the selection bias must be [experts]}}
  %y = llm.moe %x, %r, %w, %w, %d selection_bias(%b) {sigmoid_scores, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<3xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_epsilon_without_normalize(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{normalize_epsilon needs normalize_top_k}}
  %y = llm.moe %x, %r, %w, %w, %d {normalize_epsilon = 1.0e-20 : f32, sigmoid_scores, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_min_without_normalize(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{normalize_min needs normalize_top_k}}
  %y = llm.moe %x, %r, %w, %w, %d {normalize_min = 1.0e-12 : f32, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_negative_min(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{normalize_min must not be negative}}
  %y = llm.moe %x, %r, %w, %w, %d {normalize_min = -1.0 : f32, normalize_top_k, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

func.func @moe_hidden_size(%x: tensor<?x6xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x6xf32> {
  // expected-error @+1 {{the input and output rows must be the experts' hidden size 8}}
  %y = llm.moe %x, %r, %w, %w, %d {top_k = 2 : i64} : (tensor<?x6xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x6xf32>
  return %y : tensor<?x6xf32>
}

// -----

func.func @attention_sinks_per_head(%q: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{has 2 sinks for 4 query heads}}
  %a = llm.attention %q, %q, %q {causal, scale = 0.25 : f32, sinks = array<f32: 1.0, 2.0>} : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %a : tensor<1x4x3x16xf32>
}

// -----

func.func @alibi_slopes_per_head(%q: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{has 3 alibi_slopes for 4 query heads}}
  %a = llm.attention %q, %q, %q {alibi_slopes = array<f32: 0.5, 0.25, 0.125>, causal, scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %a : tensor<1x4x3x16xf32>
}

// -----

func.func @alibi_slopes_finite(%q: tensor<1x2x3x16xf32>) -> tensor<1x2x3x16xf32> {
  // expected-error @+1 {{alibi_slopes must be finite}}
  %a = llm.attention %q, %q, %q {alibi_slopes = array<f32: 0.5, 0x7F800000>, causal, scale = 0.25 : f32} : (tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>) -> tensor<1x2x3x16xf32>
  return %a : tensor<1x2x3x16xf32>
}

// -----

func.func @moe_down_bias(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>, %b: tensor<4x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{the down bias must be [experts, 8]}}
  %y = llm.moe %x, %r, %w, %w, %d down_bias(%b) {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>, tensor<4x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @moe_swiglu_limit_alone(%x: tensor<?x8xf32>, %r: tensor<?x4xf32>, %w: tensor<4x16x8xf32>, %d: tensor<4x8x16xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{swiglu_limit and swiglu_alpha come together}}
  %y = llm.moe %x, %r, %w, %w, %d {swiglu_limit = 7.0 : f32, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

func.func @concat_heads_width(%a: tensor<?x2x8xf32>, %b: tensor<?x1x4xf32>) -> tensor<?x2x16xf32> {
  // expected-error @+1 {{the result's head_dim must be the operands' summed}}
  %k = llm.concat_heads %a, %b : (tensor<?x2x8xf32>, tensor<?x1x4xf32>) -> tensor<?x2x16xf32>
  return %k : tensor<?x2x16xf32>
}

// -----

func.func @concat_heads_rhs_heads(%a: tensor<?x4x8xf32>, %b: tensor<?x2x4xf32>) -> tensor<?x4x12xf32> {
  // expected-error @+1 {{the lhs must have the result's heads, the rhs those or one}}
  %k = llm.concat_heads %a, %b : (tensor<?x4x8xf32>, tensor<?x2x4xf32>) -> tensor<?x4x12xf32>
  return %k : tensor<?x4x12xf32>
}

// -----

func.func @paged_values_wider(%pool: tensor<1x?x2x2x16x8xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x2x12xf32>, %slots: tensor<?xi32>) -> tensor<1x?x2x2x16x8xf32> {
  // expected-error @+1 {{the head_dim of values (12) is wider than that of keys (8)}}
  %p = llm.paged_kv_write %pool, %k, %v, %slots {layer = 0 : i64} : (tensor<1x?x2x2x16x8xf32>, tensor<?x2x8xf32>, tensor<?x2x12xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x8xf32>
  return %p : tensor<1x?x2x2x16x8xf32>
}

// -----

func.func @head_linear_heads(%x: tensor<?x2x8xf32>, %w: tensor<4x8x4xf32>) -> tensor<?x2x4xf32> {
  // expected-error @+1 {{the input and result must have the weight's 4 heads}}
  %o = llm.head_linear %x, %w : (tensor<?x2x8xf32>, tensor<4x8x4xf32>) -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

func.func @head_linear_features(%x: tensor<?x2x8xf32>, %w: tensor<2x4x4xf32>) -> tensor<?x2x4xf32> {
  // expected-error @+1 {{the weight must be [heads, input features, result features]}}
  %o = llm.head_linear %x, %w : (tensor<?x2x8xf32>, tensor<2x4x4xf32>) -> tensor<?x2x4xf32>
  return %o : tensor<?x2x4xf32>
}

// -----

func.func @layer_norm_weight_rows(%x: tensor<?x12xf32>, %w: tensor<2x4xf32>) -> tensor<?x12xf32> {
  // expected-error @+1 {{a [groups, n] weight must have a row for each of the 3 groups of the normalised dim}}
  %n = llm.layer_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x12xf32>, tensor<2x4xf32>) -> tensor<?x12xf32>
  return %n : tensor<?x12xf32>
}

// -----

func.func @layer_norm_bias_shape(%x: tensor<?x8xf32>, %w: tensor<2x4xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{the bias must have the weight's shape}}
  %n = llm.layer_norm %x, %w, %b {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<2x4xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %n : tensor<?x8xf32>
}

// -----

func.func @lora_output_type(%x: tensor<?x8xf32>, %y: tensor<?x4xf32>) -> tensor<?x8xf32> {
  // expected-error @+1 {{the output must have the base product's type}}
  %o = llm.lora %x, %y {module = "model.layers.0.mlp.up_proj", site = 0 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>) -> tensor<?x8xf32>
  return %o : tensor<?x8xf32>
}

// -----

func.func @lora_rows(%x: tensor<3x8xf32>, %y: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{the input and the base product must have the same rows}}
  %o = llm.lora %x, %y {module = "model.layers.0.mlp.up_proj", site = 0 : i64} : (tensor<3x8xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %o : tensor<2x4xf32>
}
