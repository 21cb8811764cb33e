// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cpu)' | FileCheck %s

// A bf16 pool (llm-kv-cache-paging{kv-cache-dtype=bf16}): rows of 16 bf16.
// The step takes it as bf16 and the manifest says bf16. The write rounds
// each rotated key and each value to nearest even in integer arithmetic (the
// f32 bits plus 0x7fff and the kept half's lowest bit, a NaN kept quiet),
// into the transposed key tile and the value row; attention widens what it
// loads (the bits shifted into the high half of an f32) before the f32
// fmas.
// CHECK:       module attributes {llmc.activations = "f32", llmc.kv_dtype = "bf16"
// CHECK-LABEL: func.func @llmc_step
//  CHECK-SAME:   memref<1x?x2x1x16x16xbf16>
// A token's cos and sin are computed once, into one-row tables, and each of
// its heads (2 query heads, 1 key head) reads them.
//       CHECK: func.func private @llmc_rope_paged_kv_write_{{[0-9]+}}(%[[POOL:[^:]*]]: memref<?x2x1x16x16xbf16>
//       CHECK:   %[[TILES:.*]] = memref.collapse_shape %[[POOL]] {{\[}}[0], [1], [2], [3, 4]] : memref<?x2x1x16x16xbf16> into memref<?x2x1x256xbf16>
//       CHECK:   %[[COS:.*]] = memref.alloca() : memref<1x8xf32>
//       CHECK:   %[[SIN:.*]] = memref.alloca() : memref<1x8xf32>
//       CHECK:   math.cos
//       CHECK:   memref.store %{{.*}}, %[[COS]]
//       CHECK:   math.sin
//       CHECK:   memref.store %{{.*}}, %[[SIN]]
//   CHECK-NOT:   math.cos
//       CHECK:   memref.load %[[COS]]
//       CHECK:   memref.load %[[SIN]]
//   CHECK-NOT:   math.cos
//       CHECK:   memref.load %[[COS]]
//   CHECK-NOT:   math.cos
//       CHECK:   %[[BITS:.*]] = arith.bitcast %[[KEY:.*]] : f32 to i32
//       CHECK:   arith.addi %{{.*}}, %c32767_i32 : i32
//       CHECK:   %[[NAN:.*]] = arith.cmpf uno, %[[KEY]], %[[KEY]] : f32
//       CHECK:   %[[CHOSEN:.*]] = arith.select %[[NAN]]
//       CHECK:   %[[HALF:.*]] = arith.trunci %[[CHOSEN]] : i32 to i16
//       CHECK:   %[[ROUNDED:.*]] = arith.bitcast %[[HALF]] : i16 to bf16
//       CHECK:   memref.store %[[ROUNDED]], %[[TILES]]
//       CHECK:   arith.trunci %{{.*}} : i32 to i16
//       CHECK:   memref.store %{{.*}}, %[[POOL]]
//       CHECK: func.func private @llmc_paged_attention_{{[0-9]+}}
//       CHECK:   %[[KTILES:.*]] = memref.collapse_shape %{{.*}} : memref<?x2x1x16x16xbf16> into memref<?x2x1x256xbf16>
//       CHECK:     %[[K16:.*]] = vector.load %[[KTILES]][{{.*}}] : memref<?x2x1x256xbf16>, vector<16xbf16>
//       CHECK:     %[[KBITS:.*]] = arith.bitcast %[[K16]] : vector<16xbf16> to vector<16xi16>
//       CHECK:     %[[KWIDE:.*]] = arith.extui %[[KBITS]] : vector<16xi16> to vector<16xi32>
//       CHECK:     %[[KHIGH:.*]] = arith.shli %[[KWIDE]], %{{.*}} : vector<16xi32>
//       CHECK:     %[[K:.*]] = arith.bitcast %[[KHIGH]] : vector<16xi32> to vector<16xf32>
//       CHECK:     vector.fma %{{.*}}, %[[K]], %{{.*}} : vector<16xf32>
//       CHECK:   %[[V16:.*]] = vector.load %{{.*}} : memref<?x2x1x16x16xbf16>, vector<16xbf16>
//       CHECK:   arith.bitcast %[[V16]] : vector<16xbf16> to vector<16xi16>
//       CHECK:   vector.fma
func.func @bf16_pool(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x16xbf16> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %freq = llm.constant dense<1.000000e+00> : tensor<8xf32>
  %wqkv = llm.constant dense<1.000000e-01> : tensor<32x64xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %qkv = llm.linear %x, %wqkv : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  %parts:3 = llm.split %qkv {sizes = array<i64: 32, 16, 16>} : (tensor<?x64xf32>) -> (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>)
  %q = llm.split_heads %parts#0 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %k = llm.split_heads %parts#1 {num_heads = 1 : i64} : (tensor<?x16xf32>) -> tensor<?x1x16xf32>
  %v = llm.split_heads %parts#2 {num_heads = 1 : i64} : (tensor<?x16xf32>) -> tensor<?x1x16xf32>
  %rq, %pool = llm.rope_paged_kv_write %arg7, %q, %k, %v, %arg5, %arg1 inv_freq(%freq) {layer = 0 : i64} : (tensor<1x?x2x1x16x16xbf16>, tensor<?x2x16xf32>, tensor<?x1x16xf32>, tensor<?x1x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<8xf32>) -> (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xbf16>)
  %a = llm.paged_attention %rq, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xbf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %l = llm.logits %rows, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %l : tensor<?x64xf32>
}
