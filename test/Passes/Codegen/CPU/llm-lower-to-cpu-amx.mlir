// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{weight-dtype=bf16 bf16-activations=true bf16-products=amx})' | FileCheck %s
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(llm-lower-to-cpu{weight-dtype=bf16 bf16-products=amx})' 2>&1 | FileCheck %s --check-prefix=NOACTIVATIONS
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(llm-lower-to-cpu{weight-dtype=bf16 bf16-activations=true bf16-products=avx512})' 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// bf16-products=amx: a matmul over panels multiplies with AMX tiles. Its
// input rows are rounded into the scratch as with vdpbf16ps, but the view
// holds the rows padded to whole tiles of 16, and the rounding kernel writes
// zeros past the input's rows. The matmul kernel keeps its sums' scratch
// (16 rows x 48 columns) on entry; per tile of 16 rows from the block's
// first, it zeroes one accumulator tile per 16 columns, loads the rows' 32
// rounded values (16 pairs of k) and each 16 columns' pairs straight from
// the panel (a tile row every 32 values x tiles: 96 for a panel of 48
// columns, 64 for the narrower last panel of 32), adds their products
// (TDPBF16PS), stores the sums and finishes only the rows before the
// block's end. No vdpbf16ps is left: every row count takes the tiles.
// CHECK-LABEL: module attributes {llmc.activations = "bf16", llmc.bf16_products = "amx"
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   %[[ROWS:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?x32xf32>
//       CHECK:   %[[UP:.*]] = arith.addi %[[ROWS]], %c15 : index
//       CHECK:   %[[TILES:.*]] = arith.divsi %[[UP]], %c16 : index
//       CHECK:   %[[PADDED:.*]] = arith.muli %[[TILES]], %c16 : index
//       CHECK:   memref.view %{{.*}}[%c3072][%[[PADDED]]] : memref<?xi8> to memref<?x32xi16>
//       CHECK: func.func private @llmc_round_rows_bf16_{{[0-9]+}}(%[[IN:.*]]: memref<?x32xf32>, %[[OUT:.*]]: memref<?x32xi16>
//       CHECK:   %[[INROWS:.*]] = memref.dim %[[IN]]
//       CHECK:   %[[ZEROS:.*]] = arith.constant dense<0> : vector<16xi16>
//       CHECK:   %[[FROM:.*]] = arith.maxsi %{{.*}}, %[[INROWS]] : index
//       CHECK:   scf.for %[[PAD:.*]] = %[[FROM]] to
//       CHECK:     vector.store %[[ZEROS]], %[[OUT]][%[[PAD]], %{{.*}}] : memref<?x32xi16>, vector<16xi16>
//       CHECK: func.func private @llmc_matmul_{{[0-9]+}}(%[[X:.*]]: memref<?x32xi16>, %[[Y:.*]]: memref<?x32xf32>, %[[W:.*]]: memref<1024xi16>
//  CHECK-NEXT:   %[[SUMS:.*]] = memref.alloca() : memref<16x48xf32>
//       CHECK:   scf.for %[[ROW:.*]] = %{{.*}} to %[[END:.*]] step %c16
//       CHECK:     %[[ACC:.*]] = amx.tile_zero : !amx.tile<16x16xf32>
//       CHECK:     %[[A:.*]] = amx.tile_load %[[X]][%[[ROW]], %{{.*}}] : memref<?x32xi16> into !amx.tile<16x32xbf16>
//       CHECK:     %[[B:.*]] = amx.tile_load %[[W]][%{{.*}}], %c96 : memref<1024xi16> into !amx.tile<16x32xbf16>
//       CHECK:     %[[C:.*]] = amx.tile_mulf %[[A]], %[[B]], %[[ACC]] : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
//       CHECK:     amx.tile_store %[[SUMS]][%{{.*}}, %{{.*}}], %[[C]] : memref<16x48xf32>, !amx.tile<16x16xf32>
//       CHECK:     %[[LEFT:.*]] = arith.subi %[[END]], %[[ROW]] : index
//       CHECK:     %[[FINISHED:.*]] = arith.minsi %[[LEFT]], %{{.*}} : index
//       CHECK:     scf.for %[[R:.*]] = %{{.*}} to %[[FINISHED]]
//       CHECK:       vector.load %[[SUMS]][%[[R]], %{{.*}}] : memref<16x48xf32>, vector<16xf32>
//       CHECK:   amx.tile_load %[[W]][%{{.*}}], %c64 : memref<1024xi16> into !amx.tile<16x32xbf16>
//   CHECK-NOT: dpbf16ps

// NOACTIVATIONS: error: bf16-products=amx multiplies activations rounded to bf16: add bf16-activations
// UNKNOWN: error: bf16-products must be avx512-bf16 or amx, not 'avx512'
func.func @paged(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
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
