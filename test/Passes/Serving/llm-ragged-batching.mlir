// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-ragged-batching))' | FileCheck %s

// The paged [batch, seq] step becomes the ragged step ABI: one [tokens] dim,
// cu_seqlens_q for attention, logits only at logits_indices.
// CHECK-LABEL: func.func @paged
//  CHECK-SAME:   (%[[TOK:.*]]: tensor<?xi32> {llmc.abi = "tokens"}, %[[POS:.*]]: tensor<?xi32> {llmc.abi = "positions"}, %[[CU:.*]]: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %[[CTX:.*]]: tensor<?xi32> {llmc.abi = "context_lens"}, %[[BT:.*]]: tensor<?x?xi32> {llmc.abi = "block_tables"}, %[[SLOT:.*]]: tensor<?xi32> {llmc.abi = "slot_mapping"}, %[[IDX:.*]]: tensor<?xi32> {llmc.abi = "logits_indices"}, %[[POOL:.*]]: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"})
//  CHECK-SAME:   -> tensor<?x64xf32>
//       CHECK:   %[[E:.*]] = llm.embedding %{{.*}}, %[[TOK]] : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
//       CHECK:   %[[Q:.*]] = llm.split_heads %{{.*}} {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
//       CHECK:   %[[QR:.*]] = llm.rope %[[Q]], %[[POS]], %{{.*}} : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
//       CHECK:   %[[W:.*]] = llm.paged_kv_write %[[POOL]], %{{.*}}, %{{.*}}, %[[SLOT]] {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>)
//       CHECK:   %[[A:.*]] = llm.paged_attention %[[QR]], %[[W]], %[[BT]], %[[CTX]], %[[CU]] {{.*}} -> tensor<?x2x16xf32>
//       CHECK:   %[[M:.*]] = llm.merge_heads %[[A]] : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
//       CHECK:   %[[ROWS:.*]] = llm.gather_rows %[[M]], %[[IDX]] : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
//       CHECK:   %[[L:.*]] = llm.logits %[[ROWS]], %{{.*}} : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
//       CHECK:   return %[[L]]
func.func @paged(%arg0: tensor<?x?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?x?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "context_lens"}, %arg3: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg4: tensor<?x?xi32> {llmc.abi = "slot_mapping"}, %arg5: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x?x64xf32> {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %2 = llm.constant dense<1.0> : tensor<8xf32>
  %3 = llm.constant dense<1.000000e-01> : tensor<32x32xf32>
  %4 = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %5 = llm.embedding %1, %arg0 : (tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<?x?x32xf32>
  %6 = llm.linear %5, %3 : (tensor<?x?x32xf32>, tensor<32x32xf32>) -> tensor<?x?x32xf32>
  %7 = llm.split_heads %6 {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %8 = llm.split_heads %5 {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %9 = llm.rope %7, %arg1, %2 : (tensor<?x2x?x16xf32>, tensor<?x?xi32>, tensor<8xf32>) -> tensor<?x2x?x16xf32>
  %10 = llm.rope %8, %arg1, %2 : (tensor<?x2x?x16xf32>, tensor<?x?xi32>, tensor<8xf32>) -> tensor<?x2x?x16xf32>
  %11 = llm.paged_kv_write %arg5, %10, %8, %arg4 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %9, %11, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x?x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x2x?x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  %14 = llm.logits %13, %4 : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %14 : tensor<?x?x64xf32>
}

// -----

// A step of hidden states (an embedding model's, llmc.step_output) returns the
// rows at logits_indices of what the model returned.
// CHECK-LABEL: func.func @hidden_states
//  CHECK-SAME:   %[[IDX:[^:]*]]: tensor<?xi32> {llmc.abi = "logits_indices"}
//  CHECK-SAME:   -> tensor<?x32xf32> attributes {llmc.step_output = "hidden_states"}
//       CHECK:   %[[M:.*]] = llm.merge_heads
//       CHECK:   %[[ROWS:.*]] = llm.gather_rows %[[M]], %[[IDX]] : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
//       CHECK:   return %[[ROWS]]
func.func @hidden_states(%arg0: tensor<?x?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?x?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "context_lens"}, %arg3: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg4: tensor<?x?xi32> {llmc.abi = "slot_mapping"}, %arg5: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x?x32xf32> attributes {llmc.step_output = "hidden_states"} {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %5 = llm.embedding %1, %arg0 : (tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<?x?x32xf32>
  %8 = llm.split_heads %5 {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  %11 = llm.paged_kv_write %arg5, %8, %8, %arg4 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %8, %11, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x?x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>) -> tensor<?x2x?x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x?x16xf32>) -> tensor<?x?x32xf32>
  return %13 : tensor<?x?x32xf32>
}

// -----

// Near miss: without llm.logits or the attribute, the step has nothing to
// return rows of.
// expected-error @+1 {{has no llm.logits head to gather rows for}}
func.func @no_head(%arg0: tensor<?x?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?x?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "context_lens"}, %arg3: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg4: tensor<?x?xi32> {llmc.abi = "slot_mapping"}, %arg5: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x?x32xf32> {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %5 = llm.embedding %1, %arg0 : (tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<?x?x32xf32>
  return %5 : tensor<?x?x32xf32>
}

// -----

// expected-error @+1 {{expects the paged [batch, seq] step that llm-kv-cache-paging makes}}
func.func @not_paged(%ids: tensor<?x?xi64>) -> tensor<?x?x32xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %e = llm.embedding %table, %ids : (tensor<64x32xf32>, tensor<?x?xi64>) -> tensor<?x?x32xf32>
  return %e : tensor<?x?x32xf32>
}

// -----

// An op that mixes tokens (here a leftover onnx op) cannot be made ragged.
func.func @leftover(%arg0: tensor<?x?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?x?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "context_lens"}, %arg3: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg4: tensor<?x?xi32> {llmc.abi = "slot_mapping"}, %arg5: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x?x64xf32> {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %4 = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %5 = llm.embedding %1, %arg0 : (tensor<64x32xf32>, tensor<?x?xi32>) -> tensor<?x?x32xf32>
  // expected-error @+1 {{is not token-wise}}
  %6 = onnx.Softmax %5 {axis = 1 : i64} : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %14 = llm.logits %6, %4 : (tensor<?x?x32xf32>, tensor<32x64xf32>) -> tensor<?x?x64xf32>
  return %14 : tensor<?x?x64xf32>
}
