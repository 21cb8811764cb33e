// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-kv-cache-paging{block-size=16}))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-kv-cache-paging{block-size=32}))' | FileCheck %s --check-prefix=BLOCK32
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-kv-cache-paging{kv-cache-dtype=int8}))' | FileCheck %s --check-prefix=INT8
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-kv-cache-paging{kv-cache-dtype=bf16}))' | FileCheck %s --check-prefix=BF16
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-kv-cache-paging{kv-cache-dtype=int4}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADTYPE

// BADTYPE: error: kv-cache-dtype must be auto, bf16 or int8, not 'int4'

// One layer with a KV cache in and out (optimum's past_key_values/present):
// the pool replaces both, attention_mask goes, the positions become an i32
// input, and only the logits are returned.
// CHECK-LABEL: func.func @cached
//  CHECK-SAME:   (%[[TOK:.*]]: tensor<?x?xi32> {llmc.abi = "tokens"}, %[[POS:.*]]: tensor<?x?xi32> {llmc.abi = "positions"}, %[[CTX:.*]]: tensor<?xi32> {llmc.abi = "context_lens"}, %[[BT:.*]]: tensor<?x?xi32> {llmc.abi = "block_tables"}, %[[SLOT:.*]]: tensor<?x?xi32> {llmc.abi = "slot_mapping"}, %[[POOL:.*]]: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"})
//  CHECK-SAME:   -> tensor<?x?x64xf32>
//       CHECK:   %[[E:.*]] = llm.embedding %{{.*}}, %[[TOK]]
//       CHECK:   %[[QR:.*]] = llm.rope %{{.*}}, %[[POS]]
//       CHECK:   %[[KR:.*]] = llm.rope %{{.*}}, %[[POS]]
//       CHECK:   %[[W:.*]] = llm.paged_kv_write %[[POOL]], %[[KR]], %{{.*}}, %[[SLOT]] {layer = 0 : i64}
//       CHECK:   %[[A:.*]] = llm.paged_attention %[[QR]], %[[W]], %[[BT]], %[[CTX]] {layer = 0 : i64, scale = 2.500000e-01 : f32}
//   CHECK-NOT:   llm.kv_concat
//   CHECK-NOT:   llm.attention
//       CHECK:   %[[L:.*]] = llm.logits
//       CHECK:   return %[[L]] : tensor<?x?x64xf32>
// BLOCK32-LABEL: func.func @cached
//  BLOCK32-SAME:   tensor<1x?x2x2x32x16xf32> {llmc.abi = "kv_pool"}
// The int8 cache: rows of 16 codes and a 4-byte scale.
// INT8-LABEL: func.func @cached
//  INT8-SAME:   %[[POOL:[^:]*]]: tensor<1x?x2x2x16x20xi8> {llmc.abi = "kv_pool"}
//      INT8:   llm.paged_kv_write %[[POOL]], %{{.*}} : (tensor<1x?x2x2x16x20xi8>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi32>) -> tensor<1x?x2x2x16x20xi8>
//      INT8:   llm.paged_attention %{{.*}} : (tensor<?x2x?x16xf32>, tensor<1x?x2x2x16x20xi8>,
// The bf16 cache: rows of 16 bf16, written from the f32 keys and values.
// BF16-LABEL: func.func @cached
//  BF16-SAME:   %[[POOL:[^:]*]]: tensor<1x?x2x2x16x16xbf16> {llmc.abi = "kv_pool"}
//      BF16:   llm.paged_kv_write %[[POOL]], %{{.*}} : (tensor<1x?x2x2x16x16xbf16>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi32>) -> tensor<1x?x2x2x16x16xbf16>
//      BF16:   llm.paged_attention %{{.*}} : (tensor<?x2x?x16xf32>, tensor<1x?x2x2x16x16xbf16>,
func.func @cached(%ids: tensor<?x?xi64> {onnx.name = "input_ids"}, %mask: tensor<?x?xi64> {onnx.name = "attention_mask"},
                  %positions: tensor<?x?xi64> {onnx.name = "position_ids"},
                  %past_k: tensor<?x2x?x16xf32>, %past_v: tensor<?x2x?x16xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %inv_freq = llm.constant dense<[1.0, 0.1, 0.01, 0.001, 0.0001, 0.00001, 0.000001, 0.0000001]> : tensor<8xf32>
  %wq = llm.constant dense<0.1> : tensor<32x32xf32>
  %wkv = llm.constant dense<0.1> : tensor<32x32xf32>
  %head = llm.constant dense<0.2> : tensor<32x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %q = llm.linear %e, %wq : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  %k = llm.split_heads %q {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %v = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %qr = llm.rope %k, %positions, %inv_freq : (tensor<?x2x?x16xf32>, tensor<?x?xi64>, tensor<8xf32>) -> tensor<?x2x?x16xf32>
  %kr = llm.rope %v, %positions, %inv_freq : (tensor<?x2x?x16xf32>, tensor<?x?xi64>, tensor<8xf32>) -> tensor<?x2x?x16xf32>
  %kc = llm.kv_concat %past_k, %kr : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %vc = llm.kv_concat %past_v, %v : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %a = llm.attention %qr, %kc, %vc, %mask {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.logits %m, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %l, %kc, %vc : tensor<?x?x64xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}

// -----

// A model exported without a cache: keys and values of the current tokens
// go to the pool as they are, and positions derived from attention_mask
// (llm.position_ids) become the positions input.
// CHECK-LABEL: func.func @uncached
//  CHECK-SAME:   %[[POS:[^:]*]]: tensor<?x?xi32> {llmc.abi = "positions"}
//   CHECK-NOT:   llm.position_ids
//       CHECK:   llm.rope %{{.*}}, %[[POS]]
//       CHECK:   llm.paged_kv_write
//       CHECK:   llm.paged_attention
func.func @uncached(%ids: tensor<?x?xi64>, %mask: tensor<?x?xi64>) -> tensor<?x?x64xf32> {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %inv_freq = llm.constant dense<1.0> : tensor<8xf32>
  %head = llm.constant dense<0.2> : tensor<32x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %p = llm.position_ids %mask, %e : (tensor<?x?xi64>, tensor<?x?x32xf32>) -> tensor<?x?xi64>
  %r = llm.rope %h, %p, %inv_freq : (tensor<?x2x?x16xf32>, tensor<?x?xi64>, tensor<8xf32>) -> tensor<?x2x?x16xf32>
  %a = llm.attention %r, %r, %h, %mask {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.logits %m, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %l : tensor<?x?x64xf32>
}

// -----

// A model exported without its LM head (optimum's --task feature-extraction,
// an embedding model) returns its final hidden states, last_hidden_state: the
// step returns them, and says so.
// CHECK-LABEL: func.func @last_hidden_state
//  CHECK-SAME:   -> tensor<?x?x32xf32> attributes {llmc.step_output = "hidden_states"}
//       CHECK:   %[[NORMED:.*]] = llm.rms_norm
//       CHECK:   return %[[NORMED]] : tensor<?x?x32xf32>
func.func @last_hidden_state(%ids: tensor<?x?xi64>) -> (tensor<?x?x32xf32> {onnx.name = "last_hidden_state"}) {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %scale = llm.constant dense<1.0> : tensor<32xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %a = llm.attention %h, %h, %h {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %n = llm.rms_norm %m, %scale {epsilon = 1.0e-6 : f32} : (tensor<?x?x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  return %n : tensor<?x?x32xf32>
}

// -----

// A sequence classifier's logits, which raising unpooled from the export's
// last-token gather (llmc.pooled_at_last_token): the score head is the
// logits head, and the step says its rows are class logits.
// CHECK-LABEL: func.func @class_logits
//  CHECK-SAME:   -> tensor<?x?x3xf32> attributes {llmc.step_output = "class_logits"}
//       CHECK:   %[[SCORES:.*]] = llm.logits
//       CHECK:   return %[[SCORES]] : tensor<?x?x3xf32>
func.func @class_logits(%ids: tensor<?x?xi64>) -> (tensor<?x?x3xf32> {onnx.name = "logits"}) attributes {llmc.pooled_at_last_token} {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<32x3xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %a = llm.attention %h, %h, %h {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.logits %m, %head : (tensor<?x?x32xf32>, tensor<32x3xf32>) -> tensor<?x?x3xf32>
  return %l : tensor<?x?x3xf32>
}

// -----

// Near miss: hidden states under another name are not the export's final
// ones (they could be any layer's), and are refused.
func.func @unnamed_hidden_states(%ids: tensor<?x?xi64>) -> (tensor<?x?x32xf32> {onnx.name = "hidden_states"}) {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %a = llm.attention %h, %h, %h {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  // expected-error @+1 {{must return the logits (llm.logits), or the final hidden states (last_hidden_state), and the present K/V only}}
  return %m : tensor<?x?x32xf32>
}

// -----

// Attention sinks, ALiBi slopes, a sliding window and a softcap go with the
// attention onto the pool.
// CHECK-LABEL: func.func @sinks
//       CHECK:   llm.paged_attention %{{.*}} {alibi_slopes = array<f32: 2.500000e-01, 6.250000e-02>, layer = 0 : i64, scale = 2.500000e-01 : f32, sinks = array<f32: 5.000000e-01, -1.000000e+00>, sliding_window = 8 : i64, softcap = 3.000000e+01 : f32}
func.func @sinks(%ids: tensor<?x?xi64>, %mask: tensor<?x?xi64>) -> tensor<?x?x64xf32> {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %inv_freq = llm.constant dense<1.0> : tensor<8xf32>
  %head = llm.constant dense<0.2> : tensor<32x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %p = llm.position_ids %mask, %e : (tensor<?x?xi64>, tensor<?x?x32xf32>) -> tensor<?x?xi64>
  %r = llm.rope %h, %p, %inv_freq : (tensor<?x2x?x16xf32>, tensor<?x?xi64>, tensor<8xf32>) -> tensor<?x2x?x16xf32>
  %a = llm.attention %r, %r, %h, %mask {alibi_slopes = array<f32: 0.25, 0.0625>, causal, scale = 0.25 : f32, sinks = array<f32: 0.5, -1.0>, sliding_window = 8 : i64, softcap = 30.0 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.logits %m, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %l : tensor<?x?x64xf32>
}

// -----

func.func @not_causal(%ids: tensor<?x?xi64>) -> tensor<?x?x64xf32> {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<32x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  // expected-error @+1 {{is not causal}}
  %a = llm.attention %h, %h, %h {scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.logits %m, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %l : tensor<?x?x64xf32>
}

// -----

// Values narrower than the keys (DeepSeek's multi-head latent attention):
// the pool's rows are the keys' 16 wide, a value fills the first 8 of its
// row, and the attention's result has the values' head_dim.
// CHECK-LABEL: func.func @values_narrower_than_keys
//       CHECK:   llm.paged_kv_write %{{.*}} {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>, tensor<?x?xi32>) -> tensor<1x?x2x2x16x16xf32>
//       CHECK:   llm.paged_attention %{{.*}} : (tensor<?x2x?x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x2x?x8xf32>
func.func @values_narrower_than_keys(%ids: tensor<?x?xi64>) -> tensor<?x?x64xf32> {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<16x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %w = llm.constant dense<0.1> : tensor<32x16xf32>
  %narrow = llm.linear %e, %w : (tensor<?x?x32xf32>, tensor<32x16xf32>) -> tensor<?x?x16xf32>
  %v2 = llm.split_heads %narrow {num_heads = 2 : i64} : (tensor<?x?x16xf32>) -> tensor<?x2x?x8xf32>
  %a = llm.attention %h, %h, %v2 {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x8xf32>) -> tensor<?x?x16xf32>
  %l = llm.logits %m, %head : (tensor<?x?x16xf32>, tensor<16x64xf32>) -> tensor<?x?x64xf32>
  return %l : tensor<?x?x64xf32>
}

// -----

// Keys concat_heads(values, rotary key), as llm-absorb-latent-attention
// leaves DeepSeek's attention over its latent: a token caches the keys' row
// alone, the write takes no values, and attention reads them from the
// keys' first 8 features.
// CHECK-LABEL: func.func @values_in_keys
//  CHECK-SAME:   tensor<1x?x1x1x16x16xf32> {llmc.abi = "kv_pool"}
//       CHECK:   llm.paged_kv_write %{{.*}} {layer = 0 : i64} : (tensor<1x?x1x1x16x16xf32>, tensor<?x1x?x16xf32>, tensor<?x?xi32>) -> tensor<1x?x1x1x16x16xf32>
//       CHECK:   llm.paged_attention %{{.*}} : (tensor<?x2x?x16xf32>, tensor<1x?x1x1x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x2x?x8xf32>
func.func @values_in_keys(%ids: tensor<?x?xi64>) -> tensor<?x?x64xf32> {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<16x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %q = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %wl = llm.constant dense<0.1> : tensor<32x8xf32>
  %latent = llm.linear %e, %wl : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  %c = llm.split_heads %latent {num_heads = 1 : i64} : (tensor<?x?x8xf32>) -> tensor<?x1x?x8xf32>
  %wr = llm.constant dense<0.3> : tensor<32x8xf32>
  %rotary = llm.linear %e, %wr : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  %r = llm.split_heads %rotary {num_heads = 1 : i64} : (tensor<?x?x8xf32>) -> tensor<?x1x?x8xf32>
  %k = llm.concat_heads %c, %r : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x16xf32>
  %a = llm.attention %q, %k, %c {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x8xf32>) -> tensor<?x2x?x8xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x8xf32>) -> tensor<?x?x16xf32>
  %l = llm.logits %m, %head : (tensor<?x?x16xf32>, tensor<16x64xf32>) -> tensor<?x?x64xf32>
  return %l : tensor<?x?x64xf32>
}

// -----

// Values that are the keys' last features, not their first, keep rows of
// their own.
// CHECK-LABEL: func.func @values_after_keys_features
//  CHECK-SAME:   tensor<1x?x2x1x16x16xf32> {llmc.abi = "kv_pool"}
//       CHECK:   llm.paged_kv_write %{{.*}} {layer = 0 : i64} : (tensor<1x?x2x1x16x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x8xf32>, tensor<?x?xi32>) -> tensor<1x?x2x1x16x16xf32>
func.func @values_after_keys_features(%ids: tensor<?x?xi64>) -> tensor<?x?x64xf32> {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<16x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %q = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %wl = llm.constant dense<0.1> : tensor<32x8xf32>
  %latent = llm.linear %e, %wl : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  %c = llm.split_heads %latent {num_heads = 1 : i64} : (tensor<?x?x8xf32>) -> tensor<?x1x?x8xf32>
  %wr = llm.constant dense<0.3> : tensor<32x8xf32>
  %rotary = llm.linear %e, %wr : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  %r = llm.split_heads %rotary {num_heads = 1 : i64} : (tensor<?x?x8xf32>) -> tensor<?x1x?x8xf32>
  %k = llm.concat_heads %r, %c : (tensor<?x1x?x8xf32>, tensor<?x1x?x8xf32>) -> tensor<?x1x?x16xf32>
  %a = llm.attention %q, %k, %c {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x1x?x16xf32>, tensor<?x1x?x8xf32>) -> tensor<?x2x?x8xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x8xf32>) -> tensor<?x?x16xf32>
  %l = llm.logits %m, %head : (tensor<?x?x16xf32>, tensor<16x64xf32>) -> tensor<?x?x64xf32>
  return %l : tensor<?x?x64xf32>
}

// -----

// Values wider than the keys do not fit the pool's rows.
func.func @values_wider_than_keys(%ids: tensor<?x?xi64>) -> tensor<?x?x64xf32> {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<64x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %w = llm.constant dense<0.1> : tensor<32x64xf32>
  %wide = llm.linear %e, %w : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  %v2 = llm.split_heads %wide {num_heads = 2 : i64} : (tensor<?x?x64xf32>) -> tensor<?x2x?x32xf32>
  // expected-error @+1 {{caches values of head_dim 32 beside keys of 16: a pool's rows are as wide as the keys, the values' no wider}}
  %a = llm.attention %h, %h, %v2 {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x32xf32>) -> tensor<?x2x?x32xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x32xf32>) -> tensor<?x?x64xf32>
  %l = llm.logits %m, %head : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  return %l : tensor<?x?x64xf32>
}

// -----

func.func @widened(%ids: tensor<?x?xi64>) -> tensor<?x?x64xf32> {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<32x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %q = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %k = llm.split_heads %e {num_heads = 1 : i64} : (tensor<?x?x32xf32>) -> tensor<?x1x?x32xf32>
  %kr = llm.repeat_kv %q {repeats = 1 : i64} : (tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  // expected-error @+1 {{keys are widened by llm.repeat_kv: run llm-gqa-rewrite first}}
  %a = llm.attention %q, %kr, %q {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.logits %m, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %l : tensor<?x?x64xf32>
}

// -----

func.func @extra_result(%ids: tensor<?x?xi64>) -> (tensor<?x?x64xf32>, tensor<?x?x32xf32>) {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<32x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %a = llm.attention %h, %h, %h {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.logits %m, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  // expected-error @+1 {{must return the logits (llm.logits), or the final hidden states (last_hidden_state), and the present K/V only}}
  return %l, %e : tensor<?x?x64xf32>, tensor<?x?x32xf32>
}

// -----

// An input returned as it is (transformers 5's sliding-window cache passes
// its window size through) is no result of the step: it is dropped with
// the input.
// CHECK-LABEL: func.func @passed_through_input
//   CHECK-NOT:   tensor<i64>
//       CHECK:   llm.paged_attention
//       CHECK:   return %{{.*}} : tensor<?x?x64xf32>
func.func @passed_through_input(%ids: tensor<?x?xi64>, %window: tensor<i64>) -> (tensor<?x?x64xf32>, tensor<i64>) {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<32x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %a = llm.attention %h, %h, %h {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.logits %m, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %l, %window : tensor<?x?x64xf32>, tensor<i64>
}

// -----

// Logits transformed after the LM head by an op raising left outside the
// head's epilogue are refused by name: the step returns the head's output.
func.func @scaled_logits(%ids: tensor<?x?xi64>) -> tensor<?x?x64xf32> {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<32x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %a = llm.attention %h, %h, %h {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.linear %m, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  // expected-error @+1 {{transforms the logits after the LM head with more than per-logit arithmetic on constants}}
  %s = llm.elementwise %l : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32> {
  ^bb0(%x: f32):
    %c = arith.constant 8.0 : f32
    %d = arith.divf %x, %c : f32
    llm.yield %d : f32
  }
  return %s : tensor<?x?x64xf32>
}

// -----

func.func @mask_read_elsewhere(%ids: tensor<?x?xi64>, %mask: tensor<?x?xi64> {onnx.name = "attention_mask"}) -> tensor<?x?x64xf32> {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<32x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  // expected-error @+1 {{reads input 'attention_mask', which the paged step ABI replaces}}
  %e2 = llm.cast %mask : (tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %s = llm.add %e, %e2 : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %s {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %a = llm.attention %h, %h, %h, %mask {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.logits %m, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %l : tensor<?x?x64xf32>
}

// -----

func.func @dynamic_head_dim(%ids: tensor<?x?xi64>, %k: tensor<?x2x?x?xf32>) -> tensor<?x?x64xf32> {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %head = llm.constant dense<0.2> : tensor<32x64xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %h = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  // expected-error @+1 {{needs keys of static [batch, kv_heads, seq, head_dim] shape}}
  %a = llm.attention %h, %k, %k {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.logits %m, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %l : tensor<?x?x64xf32>
}

// -----

// A learned position embedding (GPT-2's wpe) reads position_ids as its ids:
// it reads the step's positions, the token embedding the tokens.
// CHECK-LABEL: func.func @learned_positions
//  CHECK-SAME:   (%[[TOK:[^:]*]]: tensor<?x?xi32> {llmc.abi = "tokens"}, %[[POS:[^:]*]]: tensor<?x?xi32> {llmc.abi = "positions"}
//       CHECK:   llm.embedding %{{.*}}, %[[TOK]]
//       CHECK:   llm.embedding %{{.*}}, %[[POS]]
func.func @learned_positions(%ids: tensor<?x?xi64> {onnx.name = "input_ids"}, %mask: tensor<?x?xi64> {onnx.name = "attention_mask"},
                             %positions: tensor<?x?xi64> {onnx.name = "position_ids"},
                             %past_k: tensor<?x2x?x16xf32>, %past_v: tensor<?x2x?x16xf32>)
    -> (tensor<?x?x64xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) {
  %table = llm.constant dense<0.5> : tensor<64x32xf32>
  %wpe = llm.constant dense<0.25> : tensor<128x32xf32>
  %head = llm.constant dense<0.2> : tensor<32x64xf32>
  %te = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %pe = llm.embedding %wpe, %positions : (tensor<128x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  %e = llm.add %te, %pe : (tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %k = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %kc = llm.kv_concat %past_k, %k : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %vc = llm.kv_concat %past_v, %k : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %a = llm.attention %k, %kc, %vc, %mask {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x2x?x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %l = llm.logits %m, %head : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %l, %kc, %vc : tensor<?x?x64xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>
}
