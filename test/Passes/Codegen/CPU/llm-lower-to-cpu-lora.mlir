// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cpu)' | FileCheck %s

// Each llm.lora calls the host API's `lora` (field 5) with its site, whether its
// rows are sequences, the row count, and each array's address and row stride:
// site 0 over the tokens, reading the second part of a joined product (from
// column 32, 128 bytes into rows 48 floats apart); site 1 over the rows that
// need logits.
// The module keeps the sites for the manifest.
// CHECK:       module attributes {{{.*}}llmc.lora_sites = [{in = 32 : i64, module = "model.layers.0.self_attn.k_proj", out = 16 : i64}, {in = 32 : i64, module = "model.layers.0.mlp.down_proj", out = 32 : i64}]
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   memref.subview %{{.*}}[0, 32] [%{{.*}}, 16] [1, 1]
//       CHECK:   memref.extract_aligned_pointer_as_index %{{.*}} : memref<?x16xf32, strided<[48, 1], offset: 32>>
//       CHECK:   %[[OFFSET:.*]] = llvm.mlir.constant(128 : i64) : i64
//       CHECK:   arith.addi %{{.*}}, %[[OFFSET]] : i64
//       CHECK:   %[[LD48:.*]] = llvm.mlir.constant(48 : i64) : i64
//       CHECK:   %[[FIELD:.*]] = llvm.getelementptr %arg0[0, 5]
//       CHECK:   %[[LORA:.*]] = llvm.load %[[FIELD]]
//       CHECK:   %[[SITE0:.*]] = llvm.mlir.constant(0 : i64) : i64
//       CHECK:   %[[TOKENS:.*]] = llvm.mlir.constant(0 : i32) : i32
//       CHECK:   llvm.call %[[LORA]](%{{.*}}, %[[SITE0]], %[[TOKENS]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LD48]], %{{.*}}, %{{.*}})
//       CHECK:   llvm.getelementptr %arg0[0, 5]
//       CHECK:   %[[SITE1:.*]] = llvm.mlir.constant(1 : i64) : i64
//       CHECK:   %[[SEQS:.*]] = llvm.mlir.constant(1 : i32) : i32
//       CHECK:   llvm.call %{{.*}}(%{{.*}}, %[[SITE1]], %[[SEQS]],
func.func @sites(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.lora_sites = [{in = 32 : i64, module = "model.layers.0.self_attn.k_proj", out = 16 : i64}, {in = 32 : i64, module = "model.layers.0.mlp.down_proj", out = 32 : i64}]} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %wqk = llm.constant dense<1.000000e-01> : tensor<32x48xf32>
  %wd = llm.constant dense<3.000000e-01> : tensor<32x32xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %qk = llm.linear %x, %wqk : (tensor<?x32xf32>, tensor<32x48xf32>) -> tensor<?x48xf32>
  %parts:2 = llm.split %qk {sizes = array<i64: 32, 16>} : (tensor<?x48xf32>) -> (tensor<?x32xf32>, tensor<?x16xf32>)
  %k = llm.lora %x, %parts#1 {module = "model.layers.0.self_attn.k_proj", site = 0 : i64} : (tensor<?x32xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  %q = llm.split_heads %parts#0 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %kh = llm.split_heads %k {num_heads = 1 : i64} : (tensor<?x16xf32>) -> tensor<?x1x16xf32>
  %p = llm.paged_kv_write %arg7, %q, %q, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %q, %p, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %d = llm.linear %rows, %wd : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %dl = llm.lora %rows, %d {module = "model.layers.0.mlp.down_proj", site = 1 : i64} : (tensor<?x32xf32>, tensor<?x32xf32>) -> tensor<?x32xf32>
  %l = llm.logits %dl, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %l : tensor<?x64xf32>
}
