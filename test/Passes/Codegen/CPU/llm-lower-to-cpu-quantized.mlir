// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu)' | FileCheck %s
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{pack-quantized=false})' | FileCheck %s --check-prefix=WIDENED
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{matmul=blas})' | FileCheck %s --check-prefix=WIDENED
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{avx512=true})' | FileCheck %s --check-prefix=TABLE
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{int8-activations=true})' | FileCheck %s --check-prefix=INT8
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{int8-activations=true int8-products=avx2})' | FileCheck %s --check-prefix=AVX2
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(llm-lower-to-cpu{int8-activations=true int8-products=sse4})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD-PRODUCTS
// BAD-PRODUCTS: error: int8-products must be avx512-vnni or avx2, not 'sse4'

// Block-quantised weights stay packed for the generated kernels: weights.bin
// holds each one's codes (u8) and scales (and zero points), and the kernels
// take them as i8 memrefs. An int4 embedding table [64, 32] keeps 16 bytes a
// row; the gather dequantises each value it copies. The int8 projection with
// zero points loads 16 codes a vector; the int4 head loads 8 bytes and
// concatenates their low and high nibbles.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   {dtype = "u8", name = "weight0", offset = 0 : i64, value = dense_resource<{{[a-z_0-9]+}}> : tensor<64x16xi8>}
//  CHECK-SAME:   {name = "weight1", offset = 1024 : i64, value = dense_resource<{{[a-z_0-9]+}}> : tensor<64x2xf32>}
//  CHECK-SAME:   {dtype = "u8", name = "weight2", offset = 1536 : i64, value = dense_resource<{{[a-z_0-9]+}}> : tensor<32x32xi8>}
//  CHECK-SAME:   {name = "weight3", offset = 2560 : i64, value = dense_resource<{{[a-z_0-9]+}}> : tensor<32x2xf32>}
//  CHECK-SAME:   {dtype = "u8", name = "weight4", offset = 2816 : i64, value = dense_resource<{{[a-z_0-9]+}}> : tensor<32x2xi8>}
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   call @llmc_embedding_{{[0-9]+}}(%{{.*}}, %{{.*}}, %arg1, %{{.*}}) : (memref<64x16xi8>, memref<64x2xf32>, memref<?xi32>, memref<?x32xf32>) -> ()
//       CHECK: func.func private @llmc_embedding_{{[0-9]+}}(
//       CHECK:   arith.shrui %{{.*}}, %{{.*}} : i8
//       CHECK:   arith.uitofp %{{.*}} : i8 to f32
//       CHECK:   arith.subf
//   CHECK-NOT:   fastmath
//  CHECK-SAME:   : f32
//       CHECK: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x32xf32>, %{{.*}}: memref<32x32xi8>, %{{.*}}: memref<32x2xf32>, %{{.*}}: memref<32x2xi8>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:   vector.load %{{.*}} : memref<32x32xi8>, vector<16xi8>
//       CHECK:   arith.uitofp %{{.*}} : vector<16xi8> to vector<16xf32>
//       CHECK:   vector.fma
//       CHECK: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x64xf32>, %{{.*}}: memref<64x16xi8>, %{{.*}}: memref<64x2xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:   vector.load %{{.*}} : memref<64x16xi8>, vector<8xi8>
//       CHECK:   vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15] : vector<8xi8>, vector<8xi8>
// With avx512 the 8-bit codes convert as before, and each block of 4-bit
// codes computes its 16 values once ((c - zero_point) * scale for c = 0..15,
// the same arithmetic); a vector of codes is its run's 8 bytes twice,
// widened, the second half shifted to the high nibbles, and looked up
// (vpermps reads an index's low 4 bits).
//       TABLE: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x32xf32>, %{{.*}}: memref<32x32xi8>,
//   TABLE-NOT:   llvm.call_intrinsic
//       TABLE:   arith.uitofp %{{.*}} : vector<16xi8> to vector<16xf32>
//       TABLE: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x64xf32>, %{{.*}}: memref<64x16xi8>,
//       TABLE:   %[[CODES:.*]] = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]> : vector<16xi32>
//       TABLE:   %[[WIDE:.*]] = arith.uitofp %[[CODES]] : vector<16xi32> to vector<16xf32>
//       TABLE:   %[[OFFSET:.*]] = arith.subf %[[WIDE]], %{{.*}} : vector<16xf32>
//       TABLE:   %[[VALUES:.*]] = arith.mulf %[[OFFSET]], %{{.*}} : vector<16xf32>
//       TABLE:   %[[PACKED:.*]] = vector.load %{{.*}} : memref<64x16xi8>, vector<8xi8>
//       TABLE:   %[[TWICE:.*]] = vector.shuffle %[[PACKED]], %[[PACKED]] [0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7]
//       TABLE:   %[[BYTES:.*]] = arith.extui %[[TWICE]] : vector<16xi8> to vector<16xi32>
//       TABLE:   %[[SHIFTS:.*]] = arith.constant dense<[0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4, 4, 4, 4, 4]> : vector<16xi32>
//       TABLE:   %[[INDEX:.*]] = arith.shrui %[[BYTES]], %[[SHIFTS]] : vector<16xi32>
//       TABLE:   %[[W:.*]] = llvm.call_intrinsic "llvm.x86.avx512.permvar.sf.512"(%[[VALUES]], %[[INDEX]])
//       TABLE:   vector.fma %{{.*}}, %[[W]], %{{.*}} : vector<16xf32>
// The table's codes alternate 1, 2 (bytes 0x21); repacked, byte j holds codes
// j and j + 8, which are alike: 0x11, 0x22, ...
//       CHECK: {-#
//       CHECK:   codes: "0x0100000011221122112211221122112211221122
// Without packing (pack-quantized=false, or matmul=blas) the weights are
// widened to f32 at compile time.
// WIDENED-LABEL: module attributes
//   WIDENED-NOT:   dtype = "u8"
//       WIDENED: func.func @llmc_step
//   WIDENED-NOT:   memref<{{[0-9]+}}x{{[0-9]+}}xi8>
//       WIDENED:   call @llmc_embedding_{{[0-9]+}}(%{{.*}}, %arg1, %{{.*}}) : (memref<64x32xf32>, memref<?xi32>, memref<?x32xf32>) -> ()
// With int8-activations the matmuls' weights are packed per tile of 16
// columns ([tiles, blocks, 16 * block * bits / 8] codes, [tiles, blocks, 16]
// scales and zero points; the gather keeps its own layout), each input's rows
// are quantised into scratch past the planned workspace of 3072 bytes (which
// attention's decode states, larger, size here), and the products are vpdpbusd.
// INT8-LABEL: module attributes {llmc.activations = "int8"
//  INT8-SAME:   workspace_bytes = 4224
//  INT8-SAME:   value = dense_resource<{{[a-z_0-9]+}}> : tensor<64x16xi8>
//  INT8-SAME:   value = dense_resource<{{[a-z_0-9]+}}> : tensor<2x2x256xi8>
//  INT8-SAME:   value = dense_resource<{{[a-z_0-9]+}}> : tensor<2x2x16xf32>
//  INT8-SAME:   value = dense_resource<{{[a-z_0-9]+}}> : tensor<2x2x16xi8>
//  INT8-SAME:   value = dense_resource<{{[a-z_0-9]+}}> : tensor<4x2x128xi8>
//       INT8: call @llmc_quantize_rows_{{[0-9]+}}(%{{.*}}) : (memref<?x32xf32>, memref<?x32xi8>, memref<?x2xf32>, memref<?x2xi32>) -> ()
//       INT8: func.func private @llmc_quantize_rows_
//       INT8:   vector.reduction <maximumf>
//       INT8:   math.roundeven
//       INT8: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xi8>, %{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x2xf32>, %{{.*}}: memref<?x2xi32>, %{{.*}}: memref<2x2x256xi8>, %{{.*}}: memref<2x2x16xf32>, %{{.*}}: memref<2x2x16xi8>, %{{.*}}: index, %{{.*}}: index)
//       INT8:   llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// With int8-products=avx2 each half of the 64 bytes goes through vpmaddubsw and
// vpmaddwd; 8-bit codes as their two nibbles, the high one's pair sums times 16.
// AVX2-LABEL: module attributes
//       AVX2: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xi8>, %{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x2xf32>, %{{.*}}: memref<?x2xi32>, %{{.*}}: memref<2x2x256xi8>, %{{.*}}: memref<2x2x16xf32>, %{{.*}}: memref<2x2x16xi8>, %{{.*}}: index, %{{.*}}: index)
//   AVX2-NOT:   vpdpbusd
//       AVX2:   %[[LOW:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%{{.*}}) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
//  AVX2-NEXT:   %[[ONES:.*]] = arith.constant dense<1> : vector<16xi16>
//  AVX2-NEXT:   llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%[[LOW]], %[[ONES]]) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
//  AVX2-NEXT:   %[[HIGH:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%{{.*}}) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
//  AVX2-NEXT:   %[[SIXTEENS:.*]] = arith.constant dense<16> : vector<16xi16>
//  AVX2-NEXT:   llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%[[HIGH]], %[[SIXTEENS]]) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
// The head's codes alternate 4, 3 (bytes 0x34); a group holds 4 consecutive
// codes of each column, the high nibbles the group half a block on: 0x44, 0x33, ...
//       INT8: {-#
//       INT8:   int8_matmul_codes_1: "0x0100000044334433443344334433
func.func @packed(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %tq = llm.constant dense<33> : tensor<64x2x8xui8>
  %ts = llm.constant dense<5.000000e-01> : tensor<64x2xf32>
  %table = llm.dequantize %tq, %ts {bits = 4 : i64, block_size = 16 : i64} : (tensor<64x2x8xui8>, tensor<64x2xf32>) -> tensor<64x32xf32>
  %pq = llm.constant dense<130> : tensor<32x2x16xui8>
  %ps = llm.constant dense<2.500000e-01> : tensor<32x2xf32>
  %pz = llm.constant dense<128> : tensor<32x2xui8>
  %proj = llm.dequantize %pq, %ps, %pz {bits = 8 : i64, block_size = 16 : i64} : (tensor<32x2x16xui8>, tensor<32x2xf32>, tensor<32x2xui8>) -> tensor<32x32xf32>
  %hq = llm.constant dense<52> : tensor<64x2x8xui8>
  %hs = llm.constant dense<1.250000e-01> : tensor<64x2xf32>
  %head = llm.dequantize %hq, %hs {bits = 4 : i64, block_size = 16 : i64} : (tensor<64x2x8xui8>, tensor<64x2xf32>) -> tensor<64x32xf32>
  %5 = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %6 = llm.linear %5, %proj {llmc.workspace_offsets = array<i64: 1024>, transpose_weight} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %7 = llm.split_heads %6 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %8 = llm.split_heads %5 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %11 = llm.paged_kv_write %arg7, %8, %8, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %7, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 2048>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %15 = llm.logits %14, %head {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}

// -----

// A block of 24 values is not whole vectors: that weight is widened to f32,
// the others stay packed.
// CHECK-LABEL: module attributes
//       CHECK: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x32xf32>, %{{.*}}: memref<32x32xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x64xf32>, %{{.*}}: memref<64x16xi8>, %{{.*}}: memref<64x2xf32>, %{{.*}}: index, %{{.*}}: index)
// WIDENED-LABEL: module attributes
// INT8-LABEL: module attributes
//       INT8: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x32xf32>, %{{.*}}: memref<32x32xf32>, %{{.*}}: index, %{{.*}}: index)
//       INT8: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xi8>, %{{.*}}: memref<?x64xf32>, %{{.*}}: memref<?x2xf32>, %{{.*}}: memref<?x2xi32>, %{{.*}}: memref<4x2x128xi8>, %{{.*}}: memref<4x2x16xf32>, %{{.*}}: index, %{{.*}}: index)
// 4-bit codes are nibbles already: one vpmaddubsw and one vpmaddwd by ones a half.
// AVX2-LABEL: module attributes
//       AVX2: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xi8>, %{{.*}}: memref<?x64xf32>, %{{.*}}: memref<?x2xf32>, %{{.*}}: memref<?x2xi32>, %{{.*}}: memref<4x2x128xi8>, %{{.*}}: memref<4x2x16xf32>, %{{.*}}: index, %{{.*}}: index)
//   AVX2-NOT:   dense<16> : vector<16xi16>
//       AVX2:   %[[PAIRS:.*]] = llvm.call_intrinsic "llvm.x86.avx2.pmadd.ub.sw"(%{{.*}}) : (vector<32xi8>, vector<32xi8>) -> vector<16xi16>
//  AVX2-NEXT:   %[[ONES:.*]] = arith.constant dense<1> : vector<16xi16>
//  AVX2-NEXT:   llvm.call_intrinsic "llvm.x86.avx2.pmadd.wd"(%[[PAIRS]], %[[ONES]]) : (vector<16xi16>, vector<16xi16>) -> vector<8xi32>
func.func @odd_block(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %pq = llm.constant dense<130> : tensor<32x2x12xui8>
  %ps = llm.constant dense<2.500000e-01> : tensor<32x2xf32>
  %proj = llm.dequantize %pq, %ps {bits = 4 : i64, block_size = 24 : i64} : (tensor<32x2x12xui8>, tensor<32x2xf32>) -> tensor<32x32xf32>
  %hq = llm.constant dense<52> : tensor<64x2x8xui8>
  %hs = llm.constant dense<1.250000e-01> : tensor<64x2xf32>
  %head = llm.dequantize %hq, %hs {bits = 4 : i64, block_size = 16 : i64} : (tensor<64x2x8xui8>, tensor<64x2xf32>) -> tensor<64x32xf32>
  %5 = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %6 = llm.linear %5, %proj {llmc.workspace_offsets = array<i64: 1024>, transpose_weight} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %7 = llm.split_heads %6 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %8 = llm.split_heads %5 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %11 = llm.paged_kv_write %arg7, %8, %8, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %7, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 2048>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %15 = llm.logits %14, %head {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}

// -----

func.func @two_bit(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %pq = llm.constant dense<130> : tensor<32x2x4xui8>
  %ps = llm.constant dense<2.500000e-01> : tensor<32x2xf32>
  // expected-error @+1 {{'llm.dequantize' op is only lowered for 4- and 8-bit blocks}}
  %proj = llm.dequantize %pq, %ps {bits = 2 : i64, block_size = 16 : i64} : (tensor<32x2x4xui8>, tensor<32x2xf32>) -> tensor<32x32xf32>
  %head = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %5 = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %6 = llm.linear %5, %proj {llmc.workspace_offsets = array<i64: 1024>, transpose_weight} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %7 = llm.split_heads %6 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %8 = llm.split_heads %5 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %11 = llm.paged_kv_write %arg7, %8, %8, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %7, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 2048>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %15 = llm.logits %14, %head {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}

// -----

func.func @f16_scales(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %pq = llm.constant dense<130> : tensor<32x2x8xui8>
  %ps = llm.constant dense<2.500000e-01> : tensor<32x2xf16>
  // expected-error @+1 {{'llm.dequantize' op has non-f32 scales; only f32 models are lowered}}
  %proj = llm.dequantize %pq, %ps {bits = 4 : i64, block_size = 16 : i64} : (tensor<32x2x8xui8>, tensor<32x2xf16>) -> tensor<32x32xf32>
  %head = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %5 = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %6 = llm.linear %5, %proj {llmc.workspace_offsets = array<i64: 1024>, transpose_weight} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %7 = llm.split_heads %6 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %8 = llm.split_heads %5 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %11 = llm.paged_kv_write %arg7, %8, %8, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %7, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 2048>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %15 = llm.logits %14, %head {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}

// -----

// Act-order (llm.permute_features before a packed matmul): the i32 indices
// go to weights.bin as they are, and a kernel reorders each row's features.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   {dtype = "i32", name = "{{.*}}", offset = {{[0-9]+}} : i64, value = dense<[1, 0, 3, 2, {{.*}}]> : tensor<32xi32>}
//       CHECK: call @llmc_permute_features_{{[0-9]+}}(%{{.*}}, %{{.*}}, %{{.*}}) : (memref<?x32xf32>, memref<32xi32>, memref<?x32xf32>) -> ()
//       CHECK: func.func private @llmc_permute_features_{{[0-9]+}}(%[[IN:.*]]: memref<?x32xf32>, %[[INDICES:.*]]: memref<32xi32>, %[[OUT:.*]]: memref<?x32xf32>)
//       CHECK:   %[[INDEX:.*]] = memref.load %[[INDICES]][%{{.*}}] : memref<32xi32>
//       CHECK:   %[[SOURCE:.*]] = arith.index_cast %[[INDEX]] : i32 to index
//       CHECK:   memref.load %[[IN]][%{{.*}}, %[[SOURCE]]]
// Its 8-bit codes have no zero points: stored less the default 128 as signed
// bytes (130 -> 2), they convert to their offset values with no subtraction.
//       CHECK: func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x32xf32>, %{{.*}}: memref<32x32xi8>, %{{.*}}: memref<32x2xf32>, %{{.*}}: index, %{{.*}}: index)
//   CHECK-NOT:   arith.subf
//       CHECK:   %[[OFFSET:.*]] = arith.sitofp %{{.*}} : vector<16xi8> to vector<16xf32>
//  CHECK-NEXT:   %[[W:.*]] = arith.mulf %[[OFFSET]], %{{.*}} : vector<16xf32>
//       CHECK:   vector.fma %{{.*}}, %[[W]], %{{.*}} : vector<16xf32>
//       CHECK:   codes: "0x0100000002020202
// WIDENED-LABEL: module attributes
//       WIDENED: call @llmc_permute_features_
// INT8-LABEL: module attributes
//       INT8: call @llmc_permute_features_
func.func @act_order(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %order = llm.constant dense<[1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14, 17, 16, 19, 18, 21, 20, 23, 22, 25, 24, 27, 26, 29, 28, 31, 30]> : tensor<32xi32>
  %pq = llm.constant dense<130> : tensor<32x2x16xui8>
  %ps = llm.constant dense<2.500000e-01> : tensor<32x2xf32>
  %proj = llm.dequantize %pq, %ps {bits = 8 : i64, block_size = 16 : i64} : (tensor<32x2x16xui8>, tensor<32x2xf32>) -> tensor<32x32xf32>
  %head = llm.constant dense<1.250000e-01> : tensor<64x32xf32>
  %5 = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %p = llm.permute_features %5, %order {llmc.workspace_offsets = array<i64: 2048>} : (tensor<?x32xf32>, tensor<32xi32>) -> tensor<?x32xf32>
  %6 = llm.linear %p, %proj {llmc.workspace_offsets = array<i64: 1024>, transpose_weight} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %7 = llm.split_heads %6 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %8 = llm.split_heads %5 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %11 = llm.paged_kv_write %arg7, %8, %8, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %7, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 2048>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %15 = llm.logits %14, %head {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}

// -----

// A mixture of experts' quantised experts (4-bit codes in blocks of 16, zero
// points for the gate and up, stacked by expert) stay packed: the experts
// and down kernels take each weight's codes, scales and zero points as
// [experts * out, ...] rows and dequantise 16 codes at a time in registers.
// Widened, they are f32 rows. With int8-activations, x and then the picks'
// activations are quantised by rows (quantize_rows, on the calling thread),
// and the weights are in the int8 layout: tiles of 16 rows (2 per expert's
// gate: 32 rows, 16 features) that vpdpbusd multiplies.
// CHECK-LABEL: func.func private @llmc_moe_route_
//       CHECK:   func.func private @llmc_moe_experts_{{[0-9]+}}({{.*}}, %{{[^:]*}}: memref<?x32xf32>, %[[CODES:[^:]*]]: memref<64x16xi8>, %{{[^:]*}}: memref<64x2xf32>, %{{[^:]*}}: memref<64x2xi8>, %{{[^:]*}}: memref<64x16xi8>, %{{[^:]*}}: memref<64x2xf32>, %{{[^:]*}}: memref<64x2xi8>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:               vector.load %[[CODES]][%{{.*}}, %{{.*}}] : memref<64x16xi8>, vector<8xi8>
//       CHECK:               arith.uitofp %{{.*}} : vector<16xi8> to vector<16xf32>
//       CHECK:   func.func private @llmc_moe_down_{{[0-9]+}}({{.*}}, %{{[^:]*}}: memref<?x32xf32>, %{{[^:]*}}: memref<128x8xi8>, %{{[^:]*}}: memref<128x1xf32>, %{{.*}}: index, %{{.*}}: index)
// WIDENED-LABEL: func.func private @llmc_moe_route_
//       WIDENED:   func.func private @llmc_moe_experts_{{[0-9]+}}({{.*}}, %{{[^:]*}}: memref<?x32xf32>, %{{[^:]*}}: memref<64x32xf32>, %{{[^:]*}}: memref<64x32xf32>, %{{.*}}: index, %{{.*}}: index)
// INT8-LABEL: module attributes
//       INT8:   call @llmc_quantize_rows_{{[0-9]+}}(%{{.*}}) : (memref<?x32xf32>, memref<?x32xi8>, memref<?x2xf32>, memref<?x2xi32>) -> ()
//       INT8:   constant @llmc_moe_experts_task_{{[0-9]+}}
//       INT8:   call @llmc_quantize_rows_{{[0-9]+}}(%{{.*}}) : (memref<?x16xf32>, memref<?x16xi8>, memref<?x1xf32>, memref<?x1xi32>) -> ()
//       INT8:   constant @llmc_moe_down_task_{{[0-9]+}}
//       INT8:   func.func private @llmc_moe_experts_{{[0-9]+}}({{.*}}, %{{[^:]*}}: memref<?x32xi8>, %{{[^:]*}}: memref<?x2xf32>, %{{[^:]*}}: memref<?x2xi32>, %[[GATE:[^:]*]]: memref<4x2x128xi8>, %{{[^:]*}}: memref<4x2x16xf32>, %{{[^:]*}}: memref<4x2x16xi8>, %{{[^:]*}}: memref<4x2x128xi8>, %{{[^:]*}}: memref<4x2x16xf32>, %{{[^:]*}}: memref<4x2x16xi8>, %{{.*}}: index, %{{.*}}: index)
//       INT8:     vector.load %[[GATE]]
//       INT8:     llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"
func.func @moe_quantized(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %router = llm.constant dense<1.000000e-01> : tensor<32x4xf32>
  %codes = llm.constant dense<33> : tensor<4x16x2x8xui8>
  %scales = llm.constant dense<2.500000e-01> : tensor<4x16x2xf32>
  %zeros = llm.constant dense<119> : tensor<4x16x1xui8>
  %down_codes = llm.constant dense<33> : tensor<4x32x1x8xui8>
  %down_scales = llm.constant dense<5.000000e-01> : tensor<4x32x1xf32>
  %gate = llm.dequantize %codes, %scales, %zeros {bits = 4 : i64, block_size = 16 : i64} : (tensor<4x16x2x8xui8>, tensor<4x16x2xf32>, tensor<4x16x1xui8>) -> tensor<4x16x32xf32>
  %up = llm.dequantize %codes, %scales, %zeros {bits = 4 : i64, block_size = 16 : i64} : (tensor<4x16x2x8xui8>, tensor<4x16x2xf32>, tensor<4x16x1xui8>) -> tensor<4x16x32xf32>
  %down = llm.dequantize %down_codes, %down_scales {bits = 4 : i64, block_size = 16 : i64} : (tensor<4x32x1x8xui8>, tensor<4x32x1xf32>) -> tensor<4x32x16xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %heads = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %heads, %heads, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %attention = llm.paged_attention %heads, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 1024>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %merged = llm.merge_heads %attention : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %logits = llm.linear %merged, %router {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<32x4xf32>) -> tensor<?x4xf32>
  %y = llm.moe %merged, %logits, %gate, %up, %down {llmc.workspace_offsets = array<i64: 2048>, normalize_top_k, top_k = 2 : i64} : (tensor<?x32xf32>, tensor<?x4xf32>, tensor<4x16x32xf32>, tensor<4x16x32xf32>, tensor<4x32x16xf32>) -> tensor<?x32xf32>
  %last = llm.gather_rows %y, %arg6 {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %out = llm.logits %last, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}
