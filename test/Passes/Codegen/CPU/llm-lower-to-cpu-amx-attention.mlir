// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(llm-lower-to-cpu{weight-dtype=bf16 bf16-activations=true bf16-products=amx})' | FileCheck %s

// bf16-products=amx: paged attention with head_dim 32 (a multiple of an A
// tile's 32 values) and blocks of 16 takes its products on AMX tiles, in
// softmax steps of 4 blocks (64 keys). The kernel keeps its scratch on entry:
// the query rows rounded to bf16 of a pass of 4 tiles (4 x 16 (position,
// query head) pairs x head_dim), a step's keys as pairs of features (4
// blocks x 16 rows of 16 x 2 slots) and values as pairs of slots (32 rows of
// 2 x head_dim), its scores and bf16 weights (16 rows x 64 slots). Per step
// it repacks each block the sequence holds (interleaving two rows' lanes)
// and zeroes the values of the others; per tile it multiplies the tile's
// queries by each block's keys, a tile row of 32 features at a time, into
// four 16 x 16 score tiles, and the weights (two A tiles of 32 slots) by each
// 16 features' values, accumulating in the tile. The combine kernel of the
// decode rows' ranges is the vector kernel's.
// CHECK-LABEL: func.func private @llmc_paged_attention_{{[0-9]+}}(
//  CHECK-SAME:     memref<?x64xf32>, %{{.*}}: memref<?x2x1x16x32xf32>
//       CHECK:   %[[QUERIES:.*]] = memref.alloca() : memref<64x32xbf16>
//       CHECK:   %[[KEYS:.*]] = memref.alloca() : memref<64x32xbf16>
//       CHECK:   %[[VALUES:.*]] = memref.alloca() : memref<32x64xbf16>
//       CHECK:   %[[SCORES:.*]] = memref.alloca() : memref<16x64xf32>
//       CHECK:   %[[WEIGHTS:.*]] = memref.alloca() : memref<16x64xbf16>
//       CHECK:   %[[SUMS:.*]] = memref.alloca() : memref<16x32xf32>
//       CHECK:   scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c4
//       CHECK:   scf.if
//       CHECK:   vector.interleave %{{.*}}, %{{.*}} : vector<16xi16> -> vector<32xi16>
//       CHECK:   vector.store %{{.*}}, %[[KEYS]]
//       CHECK:   } else {
//       CHECK:   vector.store %{{.*}}, %[[VALUES]]
//       CHECK:   scf.for %[[TILE:.*]] = %{{.*}} to
//       CHECK:   %[[FIRST:.*]] = arith.muli %[[TILE]], %c16
//       CHECK:   %[[Z0:.*]] = amx.tile_zero : !amx.tile<16x16xf32>
//  CHECK-NEXT:   amx.tile_zero : !amx.tile<16x16xf32>
//  CHECK-NEXT:   amx.tile_zero : !amx.tile<16x16xf32>
//  CHECK-NEXT:   %[[Z3:.*]] = amx.tile_zero : !amx.tile<16x16xf32>
//       CHECK:   %[[A:.*]] = amx.tile_load %[[QUERIES]][%[[FIRST]], %{{.*}}] : memref<64x32xbf16> into !amx.tile<16x32xbf16>
//       CHECK:   %[[B:.*]] = amx.tile_load %[[KEYS]][%{{.*}}, %{{.*}}] : memref<64x32xbf16> into !amx.tile<16x32xbf16>
//       CHECK:   %[[S:.*]] = amx.tile_mulf %[[A]], %[[B]], %[[Z0]] : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
//       CHECK:   %[[B3:.*]] = amx.tile_load %[[KEYS]][%c48, %{{.*}}] : memref<64x32xbf16> into !amx.tile<16x32xbf16>
//       CHECK:   amx.tile_mulf %[[A]], %[[B3]], %[[Z3]]
//       CHECK:   amx.tile_store %[[SCORES]][%{{.*}}, %{{.*}}], %[[S]] : memref<16x64xf32>, !amx.tile<16x16xf32>
//       CHECK:   %[[P0:.*]] = amx.tile_load %[[WEIGHTS]][%{{.*}}, %{{.*}}] : memref<16x64xbf16> into !amx.tile<16x32xbf16>
//       CHECK:   %[[P1:.*]] = amx.tile_load %[[WEIGHTS]][%{{.*}}, %c32{{.*}}] : memref<16x64xbf16> into !amx.tile<16x32xbf16>
//       CHECK:   %[[ZERO:.*]] = amx.tile_zero : !amx.tile<16x16xf32>
//       CHECK:   %[[V0:.*]] = amx.tile_load %[[VALUES]][%{{.*}}, %{{.*}}] : memref<32x64xbf16> into !amx.tile<16x32xbf16>
//       CHECK:   %[[O0:.*]] = amx.tile_mulf %[[P0]], %[[V0]], %[[ZERO]] : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
//       CHECK:   %[[V1:.*]] = amx.tile_load %[[VALUES]][%c16{{.*}}, %{{.*}}] : memref<32x64xbf16> into !amx.tile<16x32xbf16>
//       CHECK:   %[[O:.*]] = amx.tile_mulf %[[P1]], %[[V1]], %[[O0]]
//       CHECK:   amx.tile_store %[[SUMS]][%{{.*}}, %{{.*}}], %[[O]]
//       CHECK:   amx.tile_load %[[VALUES]][%{{.*}}, %c32{{.*}}] : memref<32x64xbf16> into !amx.tile<16x32xbf16>
//       CHECK: func.func private @llmc_paged_attention_combine_{{[0-9]+}}(
//   CHECK-NOT:   amx.
//       CHECK: func.func private @llmc_
func.func @tiles(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x32xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 9216 : i64} {
  %1 = llm.constant dense<3.000000e-01> : tensor<64x64xf32>
  %2 = llm.constant dense<1.000000e+00> : tensor<16xf32>
  %3 = llm.constant dense<1.000000e-01> : tensor<64x64xf32>
  %4 = llm.constant dense<2.000000e-01> : tensor<64x32xf32>
  %5 = llm.embedding %1, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
  %6 = llm.linear %5, %3 {llmc.workspace_offsets = array<i64: 2048>} : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %7 = llm.linear %5, %4 {llmc.workspace_offsets = array<i64: 4096>} : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  %8 = llm.split_heads %6 {num_heads = 2 : i64} : (tensor<?x64xf32>) -> tensor<?x2x32xf32>
  %9 = llm.split_heads %7 {num_heads = 1 : i64} : (tensor<?x32xf32>) -> tensor<?x1x32xf32>
  %10 = llm.rope %8, %arg1, %2 {llmc.workspace_offsets = array<i64: 6144>} : (tensor<?x2x32xf32>, tensor<?xi32>, tensor<16xf32>) -> tensor<?x2x32xf32>
  %11 = llm.rope %9, %arg1, %2 {llmc.workspace_offsets = array<i64: 8192>} : (tensor<?x1x32xf32>, tensor<?xi32>, tensor<16xf32>) -> tensor<?x1x32xf32>
  %12 = llm.paged_kv_write %arg7, %11, %9, %arg5 {layer = 0 : i64} : (tensor<1x?x2x1x16x32xf32>, tensor<?x1x32xf32>, tensor<?x1x32xf32>, tensor<?xi32>) -> tensor<1x?x2x1x16x32xf32>
  %13 = llm.paged_attention %10, %12, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 0>, scale = 0.176776695 : f32} : (tensor<?x2x32xf32>, tensor<1x?x2x1x16x32xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x32xf32>
  %14 = llm.merge_heads %13 : (tensor<?x2x32xf32>) -> tensor<?x64xf32>
  %15 = llm.gather_rows %14, %arg6 {llmc.workspace_offsets = array<i64: 2048>} : (tensor<?x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
  %16 = llm.logits %15, %3 : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %16 : tensor<?x64xf32>
}

// -----

// A head_dim of 16 does not fill an A tile's 32 values: attention keeps the
// vector kernel (its products f32), while the matmuls take the tiles.
// CHECK-LABEL: func.func private @llmc_paged_attention_{{[0-9]+}}(
//   CHECK-NOT:   amx.
//       CHECK: func.func private @llmc_paged_attention_combine_{{[0-9]+}}(
func.func @vectors(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %1 = llm.constant dense<3.000000e-01> : tensor<64x32xf32>
  %2 = llm.constant dense<1.000000e+00> : tensor<8xf32>
  %3 = llm.constant dense<1.000000e-01> : tensor<32x32xf32>
  %4 = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %5 = llm.embedding %1, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %6 = llm.linear %5, %3 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %7 = llm.split_heads %6 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %8 = llm.split_heads %5 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %9 = llm.rope %7, %arg1, %2 {llmc.workspace_offsets = array<i64: 2048>} : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %10 = llm.rope %8, %arg1, %2 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %11 = llm.paged_kv_write %arg7, %10, %8, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %9, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 0>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %15 = llm.logits %14, %4 : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}
