// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cpu)' | FileCheck %s

// An int8 pool (llm-kv-cache-paging{kv-cache-dtype=int8}): rows of 16 codes
// and a 4-byte scale. The step takes it as i8 and the manifest says int8.
// CHECK:       module attributes {llmc.activations = "f32", llmc.kv_dtype = "int8"
// CHECK-LABEL: func.func @llmc_step
//  CHECK-SAME:   memref<1x?x2x1x16x20xi8>
//       CHECK:   constant @llmc_rope_paged_kv_write_task_
//       CHECK:   constant @llmc_paged_attention_task_
// The write rotates a key into a row buffer, then quantises it: the row's
// absolute maximum, codes rounded half to even and clamped to +-127. A
// block's keys are transposed in its [16, 20] tile (seen flat, 320 bytes):
// feature d of slot s at d * 16 + s, then the 16 slots' scales as 4 bytes
// each from byte 256.
//       CHECK: func.func private @llmc_rope_paged_kv_write_{{[0-9]+}}(%[[POOL:[^:]*]]: memref<?x2x1x16x20xi8>
//       CHECK:   %[[TILES:.*]] = memref.collapse_shape %[[POOL]] {{\[}}[0], [1], [2], [3, 4]] : memref<?x2x1x16x20xi8> into memref<?x2x1x320xi8>
//       CHECK:   %[[ROW:.*]] = memref.alloca() : memref<16xf32>
//       CHECK:   math.absf
//       CHECK:   arith.maximumf
//       CHECK:   math.roundeven
//       CHECK:   %[[CODE:.*]] = arith.fptosi %{{.*}} : f32 to i8
//       CHECK:   %[[AT:.*]] = arith.muli %{{.*}}, %c16{{.*}} : index
//       CHECK:   %[[AT2:.*]] = arith.addi %[[AT]], %[[SLOT:.*]] : index
//       CHECK:   memref.store %[[CODE]], %[[TILES]][%{{.*}}, %{{.*}}, %{{.*}}, %[[AT2]]]
//       CHECK:   %[[SCALEBYTE:.*]] = arith.muli %[[SLOT]], %c4
//       CHECK:   %[[SCALEAT:.*]] = arith.addi %c256, %[[SCALEBYTE]]
//       CHECK:   %[[WORD:.*]] = vector.broadcast %{{.*}} : f32 to vector<1xf32>
//       CHECK:   %[[BYTES:.*]] = vector.bitcast %[[WORD]] : vector<1xf32> to vector<4xi8>
//       CHECK:   vector.store %[[BYTES]], %[[TILES]][%{{.*}}, %{{.*}}, %{{.*}}, %[[SCALEAT]]] : memref<?x2x1x320xi8>, vector<4xi8>
// A value stays a row: codes, then its scale at byte 16.
//       CHECK:   math.roundeven
//       CHECK:   memref.store %{{.*}}, %[[POOL]]
//       CHECK:   vector.store %{{.*}}, %[[POOL]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c16{{.*}}]
// Attention computes a block's 16 scores as one vector: per feature, the
// slots' codes (a row of the transposed tile) times each query head's
// feature, for both heads of the GQA group (2 heads, 1 KV head) from one
// load, in 2 interleaved sums; then the 16 keys' scales.
//       CHECK: func.func private @llmc_paged_attention_{{[0-9]+}}
//       CHECK:   %[[KTILES:.*]] = memref.collapse_shape %{{.*}} : memref<?x2x1x16x20xi8> into memref<?x2x1x320xi8>
//       CHECK:   scf.for %{{.*}} step %c2{{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
//       CHECK:     %[[KCODES:.*]] = vector.load %[[KTILES]][{{.*}}] : memref<?x2x1x320xi8>, vector<16xi8>
//       CHECK:     %[[K:.*]] = arith.sitofp %[[KCODES]] : vector<16xi8> to vector<16xf32>
//       CHECK:     vector.fma %{{.*}}, %[[K]], %{{.*}} : vector<16xf32>
//   CHECK-NOT:     vector<16xi8>
//       CHECK:     vector.fma %{{.*}}, %[[K]], %{{.*}} : vector<16xf32>
//       CHECK:   %[[KBYTES:.*]] = vector.load %[[KTILES]][%{{.*}}, %{{.*}}, %{{.*}}, %c256{{.*}}] : memref<?x2x1x320xi8>, vector<64xi8>
//       CHECK:   %[[KSCALES:.*]] = vector.bitcast %[[KBYTES]] : vector<64xi8> to vector<16xf32>
//       CHECK:   %[[SUM:.*]] = arith.addf
//       CHECK:   arith.mulf %[[SUM]], %[[KSCALES]]
//       CHECK:   math.roundeven
//       CHECK:   %[[VCODES:.*]] = vector.load %{{.*}} : memref<?x2x1x16x20xi8>, vector<16xi8>
//       CHECK:   %[[V:.*]] = arith.sitofp %[[VCODES]] : vector<16xi8> to vector<16xf32>
//       CHECK:   %[[VBYTES:.*]] = vector.load %{{.*}} : memref<?x2x1x16x20xi8>, vector<4xi8>
//       CHECK:   %[[VWORD:.*]] = vector.bitcast %[[VBYTES]] : vector<4xi8> to vector<1xf32>
//       CHECK:   %[[VSCALE:.*]] = vector.extract %[[VWORD]][0]
//       CHECK:   %[[WEIGHT:.*]] = arith.mulf %{{.*}}, %[[VSCALE]]
//       CHECK:   %[[SPLAT:.*]] = vector.broadcast %[[WEIGHT]] : f32 to vector<16xf32>
//       CHECK:   vector.fma %[[SPLAT]], %[[V]], %{{.*}} : vector<16xf32>
func.func @int8_pool(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x20xi8> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
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
  %rq, %pool = llm.rope_paged_kv_write %arg7, %q, %k, %v, %arg5, %arg1 inv_freq(%freq) {layer = 0 : i64} : (tensor<1x?x2x1x16x20xi8>, tensor<?x2x16xf32>, tensor<?x1x16xf32>, tensor<?x1x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<8xf32>) -> (tensor<?x2x16xf32>, tensor<1x?x2x1x16x20xi8>)
  %a = llm.paged_attention %rq, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x1x16x20xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %l = llm.logits %rows, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %l : tensor<?x64xf32>
}

// -----

// The unfused write quantises keys and values alike, straight from the
// projections.
// CHECK-LABEL: func.func private @llmc_paged_kv_write_
//       CHECK:   math.roundeven
//       CHECK:   vector.bitcast %{{.*}} : vector<1xf32> to vector<4xi8>
//       CHECK:   math.roundeven
//       CHECK:   vector.bitcast %{{.*}} : vector<1xf32> to vector<4xi8>
func.func @unfused_write(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x20xi8> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %h, %h, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x20xi8>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x20xi8>
  %a = llm.paged_attention %h, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x20xi8>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %l = llm.logits %rows, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %l : tensor<?x64xf32>
}

// -----

// A half-precision pool is the CUDA target's; the CPU caches f32, bf16 or int8.
// expected-error @+1 {{has a 'f16' KV cache; the CPU target caches f32, bf16 or int8}}
func.func @half_pool(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf16> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %a = llm.paged_attention %h, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf16>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %l = llm.logits %rows, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %l : tensor<?x64xf32>
}
