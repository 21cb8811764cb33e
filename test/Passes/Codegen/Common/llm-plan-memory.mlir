// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=16 max-num-seqs=2}))' | FileCheck %s --check-prefix=T16

// Rows of 32 f32 are 128 bytes: 8 tokens take 1024. Buffers reuse memory
// once their last reader (views included) has run: the attention output
// takes the embedding's place after the KV write, its last reader through
// a split_heads view; the gathered rows are sized for 2 sequences.
// CHECK-LABEL: func.func @paged
//  CHECK-SAME:   llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64
//       CHECK:   llm.embedding {{.*}} {llmc.workspace_offsets = array<i64: 0>}
//       CHECK:   llm.linear {{.*}} {llmc.workspace_offsets = array<i64: 1024>}
//   CHECK-NOT:   llm.split_heads {{.*}}workspace
//       CHECK:   llm.rope {{.*}} {llmc.workspace_offsets = array<i64: 2048>}
//       CHECK:   llm.rope {{.*}} {llmc.workspace_offsets = array<i64: 1024>}
//       CHECK:   llm.paged_kv_write
//   CHECK-NOT:   workspace_offsets
//       CHECK:   llm.paged_attention {{.*}}llmc.workspace_offsets = array<i64: 0>
//       CHECK:   llm.gather_rows {{.*}} {llmc.workspace_offsets = array<i64: 1024>}
//       CHECK:   llm.logits
//   CHECK-NOT:   workspace_offsets
// T16-LABEL: func.func @paged
//  T16-SAME:   llmc.workspace_bytes = 6144 : i64
func.func @paged(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %2 = llm.constant dense<1.000000e+00> : tensor<8xf32>
  %3 = llm.constant dense<1.000000e-01> : tensor<32x32xf32>
  %4 = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %5 = llm.embedding %1, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %6 = llm.linear %5, %3 : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %7 = llm.split_heads %6 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %8 = llm.split_heads %5 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %9 = llm.rope %7, %arg1, %2 : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %10 = llm.rope %8, %arg1, %2 : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %11 = llm.paged_kv_write %arg7, %10, %8, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %9, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %14 = llm.gather_rows %13, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %15 = llm.logits %14, %4 : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}

// -----

func.func @dynamic_features(%x: tensor<?x?xf32>, %w: tensor<4xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{has a dynamic dim other than the leading [tokens] one}}
  %y = llm.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<?x?xf32>, tensor<4xf32>) -> tensor<?x?xf32>
  return %y : tensor<?x?xf32>
}
