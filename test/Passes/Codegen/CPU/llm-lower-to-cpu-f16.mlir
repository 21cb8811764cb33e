// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{weight-dtype=f16})' | FileCheck %s
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{weight-dtype=auto})' | FileCheck %s --check-prefix=AUTO
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{weight-dtype=auto matmul=blas})' | FileCheck %s --check-prefix=BLAS
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(llm-lower-to-cpu{weight-dtype=f8})' 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// weight-dtype=f16: the generated matmul's weights go to weights.bin as f16
// (2 bytes each: the [32, 32] linear's panels at 4096, the next weight 2048
// bytes on), viewed as f16, and a loaded vector is converted to f32
// (vcvtph2ps) before the same f32 fmas. The embedding table, whose 0.5 f16
// holds exactly, is stored as f16 too (4096 bytes), and the embedding widens
// each value it gathers; the rope frequencies stay f32.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   {dtype = "f16", name = "weight0", offset = 0 : i64, value = dense<5.000000e-01> : tensor<64x32xf32>}
//  CHECK-SAME:   {dtype = "f16", name = "weight1", offset = 4096 : i64, value = dense_resource<panels> : tensor<1024xf32>}
//  CHECK-SAME:   {name = "weight2", offset = 6144 : i64
//  CHECK-SAME:   {dtype = "f16", name = "weight3"
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   %[[TABLE:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<64x32xf16>
//       CHECK:   call @llmc_embedding_{{[0-9]+}}(%[[TABLE]],
//       CHECK:   memref.view %{{.*}}[%c4096][] : memref<?xi8> to memref<1024xf16>
//       CHECK:   func.func private @llmc_embedding_{{[0-9]+}}(%[[T:.*]]: memref<64x32xf16>
//       CHECK:     %[[H:.*]] = memref.load %[[T]]
//       CHECK:     arith.extf %[[H]] : f16 to f32
//       CHECK:   func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x32xf32>, %[[W:.*]]: memref<1024xf16>
//       CHECK:     %[[HALVES:.*]] = vector.load %[[W]][%{{.*}}] : memref<1024xf16>, vector<16xf16>
//       CHECK:     %[[VALUES:.*]] = arith.extf %[[HALVES]] : vector<16xf16> to vector<16xf32>
//       CHECK:     vector.fma %{{.*}}, %[[VALUES]], %{{.*}} : vector<16xf32>

// weight-dtype=auto: each weight in the half type that holds all its values
// exactly, f16 first: the linear's 0.0999755859375 is an f16 (not a bf16),
// the head's 2^-26 a bf16 (below f16's smallest subnormal), the embedding
// table's 0.5 an f16. With sgemm every weight stays f32.
// AUTO-LABEL: module attributes
//  AUTO-SAME:   {dtype = "f16", name = "weight0", offset = 0 : i64, value = dense<5.000000e-01> : tensor<64x32xf32>}
//  AUTO-SAME:   {dtype = "f16", name = "weight1"
//  AUTO-SAME:   {dtype = "bf16", name = "weight3"
// AUTO-LABEL: func.func @llmc_step
//       AUTO:   memref<1024xf16>
//       AUTO:   memref<2048xi16>
// BLAS-NOT: dtype = "{{b?f16}}"
// UNKNOWN: error: weight-dtype must be f32, bf16, f16 or auto, not 'f8'
func.func @paged(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %2 = llm.constant dense<1.000000e+00> : tensor<8xf32>
  %3 = llm.constant dense<0.0999755859375> : tensor<32x32xf32>
  %4 = llm.constant dense<1.4901161193847656E-8> : tensor<32x64xf32>
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

// -----

// A tied table that f16 does not hold exactly: weight-dtype=f16 rounds it
// (a table is a weight), once, in the head's f16 panels, which the embedding
// gathers from. auto keeps it in f32 panels, shared the same way.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   [{dtype = "f16", name = "weight0", offset = 0 : i64, value = dense_resource<panels> : tensor<2048xf32>}
//   CHECK-NOT:   name = "weight1"
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   call @llmc_panel_embedding_{{[0-9]+}}({{.*}}) : (memref<2048xf16>
//   CHECK-NOT:   call @llmc_embedding_
// AUTO-LABEL: module attributes
//  AUTO-SAME:   [{name = "weight0", offset = 0 : i64, value = dense_resource<panels> : tensor<2048xf32>}
//   AUTO-NOT:   name = "weight1"
// AUTO-LABEL: func.func @llmc_step
//       AUTO:   call @llmc_panel_embedding_{{[0-9]+}}({{.*}}) : (memref<2048xf32>
func.func @tied_rounded(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<1.000000e-01> : tensor<64x32xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %h, %h, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %h, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 1024>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 {llmc.workspace_offsets = array<i64: 2048>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %logits = llm.logits %rows, %table {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}
