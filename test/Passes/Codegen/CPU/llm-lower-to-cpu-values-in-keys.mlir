// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cpu)' | FileCheck %s

// A pool of one row per token (llm-kv-cache-paging where the values are the
// keys' first features: multi-head latent attention over its latent). The
// manifest says kv_rows 1. The write stores the key as a row, into no
// transposed tile; attention scores a block slot by slot, each key row's
// chunks times both query heads' (one load of the key for the two), the two
// sums reduced across lanes together (both vectors' halves in one shuffle),
// and reads the values (16 of the row's 32 features) from the same row:
// index 0 of the pool's second dim.
// CHECK:       module attributes {{.*}}llmc.step_info = {{{.*}}kv_rows = 1 : i64
// CHECK-LABEL: func.func @llmc_step
//  CHECK-SAME:   memref<1x?x1x1x16x32xf32>
//       CHECK: func.func private @llmc_paged_kv_write_{{[0-9]+}}(%[[POOL:[^:]*]]: memref<?x1x1x16x32xf32>
//   CHECK-NOT:   memref.collapse_shape
//       CHECK:   memref.store %{{.*}}, %[[POOL]][%{{.*}}, %c0{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<?x1x1x16x32xf32>
//       CHECK: func.func private @llmc_paged_attention_{{[0-9]+}}(%[[Q:[^:]*]]: memref<?x64xf32, strided<[96, 1]>>, %[[KV:[^:]*]]: memref<?x1x1x16x32xf32>
//   CHECK-NOT:   memref.collapse_shape
//       CHECK:   scf.for %[[SLOT:.*]] = %c0{{(_[0-9]+)?}} to %c16{{(_[0-9]+)?}} step
//       CHECK:     %[[SUMS:.*]]:2 = scf.for %[[D:.*]] = %c0{{(_[0-9]+)?}} to %c32{{(_[0-9]+)?}} step %c16{{(_[0-9]+)?}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>)
//       CHECK:       %[[KEY:.*]] = vector.load %[[KV]][%{{.*}}, %c0{{(_[0-9]+)?}}, %{{.*}}, %[[SLOT]], %[[D]]] : memref<?x1x1x16x32xf32>, vector<16xf32>
//       CHECK:       %[[Q0:.*]] = vector.load %[[Q]]
//       CHECK:       vector.fma %[[Q0]], %[[KEY]], %{{.*}} : vector<16xf32>
//       CHECK:       %[[Q1:.*]] = vector.load %[[Q]]
//       CHECK:       vector.fma %[[Q1]], %[[KEY]], %{{.*}} : vector<16xf32>
//       CHECK:     vector.shuffle %[[SUMS]]#0, %[[SUMS]]#1 [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]
//       CHECK:     vector.shuffle %[[SUMS]]#0, %[[SUMS]]#1 [8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31]
//   CHECK-NOT:     vector.reduction
//       CHECK:     %[[FIRST:.*]] = vector.extract %[[PACKED:.*]][0] : f32 from vector<16xf32>
//       CHECK:     %[[SECOND:.*]] = vector.extract %[[PACKED]][1] : f32 from vector<16xf32>
//       CHECK:     %[[SCORE:.*]] = arith.mulf %[[FIRST]]
//       CHECK:     memref.store %[[SCORE]]
//       CHECK:     memref.store
//       CHECK:   vector.reduction <maximumf>
//       CHECK:   scf.for
//       CHECK:     vector.load %[[KV]][%{{.*}}, %c0{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %c0{{(_[0-9]+)?}}] : memref<?x1x1x16x32xf32>, vector<16xf32>
//   CHECK-NOT:     vector.load %[[KV]][%{{.*}}, %c0{{(_[0-9]+)?}}, %{{.*}}, %{{.*}}, %c16{{(_[0-9]+)?}}]
//       CHECK: func.func private @llmc_paged_attention_task
func.func @values_in_keys(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x1x1x16x32xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %wqk = llm.constant dense<1.000000e-01> : tensor<32x96xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %qk = llm.linear %x, %wqk : (tensor<?x32xf32>, tensor<32x96xf32>) -> tensor<?x96xf32>
  %parts:2 = llm.split %qk {sizes = array<i64: 64, 32>} : (tensor<?x96xf32>) -> (tensor<?x64xf32>, tensor<?x32xf32>)
  %q = llm.split_heads %parts#0 {num_heads = 2 : i64} : (tensor<?x64xf32>) -> tensor<?x2x32xf32>
  %k = llm.split_heads %parts#1 {num_heads = 1 : i64} : (tensor<?x32xf32>) -> tensor<?x1x32xf32>
  %pool = llm.paged_kv_write %arg7, %k, %arg5 {layer = 0 : i64} : (tensor<1x?x1x1x16x32xf32>, tensor<?x1x32xf32>, tensor<?xi32>) -> tensor<1x?x1x1x16x32xf32>
  %a = llm.paged_attention %q, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x2x32xf32>, tensor<1x?x1x1x16x32xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %l = llm.logits %rows, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %l : tensor<?x64xf32>
}
