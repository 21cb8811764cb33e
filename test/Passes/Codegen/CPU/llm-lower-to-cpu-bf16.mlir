// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{weight-dtype=bf16})' | FileCheck %s
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(llm-lower-to-cpu{weight-dtype=bf16 matmul=blas})' 2>&1 | FileCheck %s --check-prefix=BLAS
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{weight-dtype=bf16 bf16-activations=true})' | FileCheck %s --check-prefix=PRODUCTS
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(llm-lower-to-cpu{bf16-activations=true})' 2>&1 | FileCheck %s --check-prefix=NOWEIGHTS

// weight-dtype=bf16: the generated matmul's weights go to weights.bin as
// bf16 (2 bytes each: the [32, 32] linear's panels at 4096, the next weight
// 2048 bytes on) and the kernels view them as i16; a loaded vector is
// widened to f32 (the bf16 bits are the high half of the f32's) before the
// same f32 fmas. The embedding table is a weight too: its 0.3, which bf16
// does not hold exactly, is rounded (4096 bytes at 0). The rope frequencies
// stay f32.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   {dtype = "bf16", name = "weight0", offset = 0 : i64, value = dense<3.000000e-01> : tensor<64x32xf32>}
//  CHECK-SAME:   {dtype = "bf16", name = "weight1", offset = 4096 : i64, value = dense_resource<panels> : tensor<1024xf32>}
//  CHECK-SAME:   {name = "weight2", offset = 6144 : i64
//  CHECK-SAME:   {dtype = "bf16", name = "weight3"
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   memref.view %{{.*}}[%c0{{.*}}][] : memref<?xi8> to memref<64x32xi16>
//       CHECK:   memref.view %{{.*}}[%c4096][] : memref<?xi8> to memref<1024xi16>
//       CHECK:   func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x32xf32>, %[[W:.*]]: memref<1024xi16>
//       CHECK:     %[[BITS:.*]] = vector.load %[[W]][%{{.*}}] : memref<1024xi16>, vector<16xi16>
//       CHECK:     %[[WIDE:.*]] = arith.extui %[[BITS]] : vector<16xi16> to vector<16xi32>
//       CHECK:     %[[HIGH:.*]] = arith.shli %[[WIDE]], %{{.*}} : vector<16xi32>
//       CHECK:     %[[VALUES:.*]] = arith.bitcast %[[HIGH]] : vector<16xi32> to vector<16xf32>
//       CHECK:     vector.fma %{{.*}}, %[[VALUES]], %{{.*}} : vector<16xf32>

// bf16-activations: a matmul's input rows are rounded to bf16 once, into the
// scratch past the planned 3072 bytes (round_rows_bf16: vcvtne2ps2bf16 on
// 32 values, its second operand, k..k+15, the low half); the weight's
// panels hold pairs of k (each column's k and k + 1 side by side), and each
// step of the tiles broadcasts a row's pair of x to every lane and adds the
// products of the bf16 pairs into f32 lanes (vdpbf16ps), k a multiple of 32.
//       PRODUCTS: module attributes {llmc.activations = "bf16"
//       PRODUCTS: %[[ROUNDED:.*]] = memref.view %{{.*}}[%c3072][%{{.*}}] : memref<?xi8> to memref<?x32xi16>
//       PRODUCTS: constant @llmc_round_rows_bf16_task_{{[0-9]+}}
//       PRODUCTS: func.func private @llmc_round_rows_bf16_{{[0-9]+}}(%[[IN:.*]]: memref<?x32xf32>, %[[OUT:.*]]: memref<?x32xi16>
//       PRODUCTS:   %[[LOW:.*]] = vector.load %[[IN]][%{{.*}}, %{{.*}}] : memref<?x32xf32>, vector<16xf32>
//       PRODUCTS:   %[[HIGH:.*]] = vector.load %[[IN]][%{{.*}}, %{{.*}}] : memref<?x32xf32>, vector<16xf32>
//       PRODUCTS:   %[[PAIRED:.*]] = llvm.call_intrinsic "llvm.x86.avx512bf16.cvtne2ps2bf16.512"(%[[HIGH]], %[[LOW]]) : (vector<16xf32>, vector<16xf32>) -> vector<32xbf16>
//       PRODUCTS:   %[[STORED:.*]] = arith.bitcast %[[PAIRED]] : vector<32xbf16> to vector<32xi16>
//       PRODUCTS:   vector.store %[[STORED]], %[[OUT]]
//       PRODUCTS: func.func private @llmc_matmul_{{[0-9]+}}(%[[X:.*]]: memref<?x32xi16>, %{{.*}}: memref<?x32xf32>, %[[W:.*]]: memref<1024xi16>
//       PRODUCTS:   %[[BITS:.*]] = vector.load %[[W]][%{{.*}}] : memref<1024xi16>, vector<32xi16>
//       PRODUCTS:   %[[PAIRS:.*]] = arith.bitcast %[[BITS]] : vector<32xi16> to vector<32xbf16>
//       PRODUCTS:   %[[XPAIR:.*]] = vector.load %[[X]][%{{.*}}, %{{.*}}] : memref<?x32xi16>, vector<2xi16>
//       PRODUCTS:   %[[XWORD:.*]] = vector.bitcast %[[XPAIR]] : vector<2xi16> to vector<1xi32>
//       PRODUCTS:   %[[XSCALAR:.*]] = vector.extract %[[XWORD]][0] : i32 from vector<1xi32>
//       PRODUCTS:   %[[XWORDS:.*]] = vector.broadcast %[[XSCALAR]] : i32 to vector<16xi32>
//       PRODUCTS:   %[[XPAIRS:.*]] = vector.bitcast %[[XWORDS]] : vector<16xi32> to vector<32xbf16>
//       PRODUCTS:   llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"(%{{.*}}, %[[XPAIRS]], %[[PAIRS]]) : (vector<16xf32>, vector<32xbf16>, vector<32xbf16>) -> vector<16xf32>

// sgemm reads f32 weights; bf16 products need bf16 weights.
// NOWEIGHTS: error: bf16-activations multiplies bf16 weights: add weight-dtype=bf16
// BLAS: error: weight-dtype=bf16 needs the generated matmul: sgemm reads f32 weights
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
