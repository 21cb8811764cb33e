// RUN: llmc-opt %s -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cpu)' | FileCheck %s

// KV cache groups (llm-kv-cache-groups): a local layer (group 1) and a global
// one (group 0), one slot each in the pool. A kernel gets its group's run of
// the step's inputs as a memref over the same memory: slot_mapping's from
// group x tokens x 4 bytes, block_tables' rows from group x seqs x width x 4
// bytes. The kernels are those of one table: both writes call one.
// The manifest's groups go from the step function to the module.
// CHECK:       module attributes {{{.*}}llmc.kv_groups = [{layers = array<i64: 1>, window = 0 : i64}, {layers = array<i64: 0>, window = 16 : i64}]
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   %[[TOKENS:.*]] = memref.dim %arg1, %c0
//       CHECK:   %[[SEQS:.*]] = memref.dim %arg7, %c0
//       CHECK:   %[[T:.*]] = arith.index_cast %[[TOKENS]] : index to i64
//       CHECK:   %[[FOUR:.*]] = llvm.mlir.constant(4 : i64) : i64
//       CHECK:   %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
//       CHECK:   %[[SPAN:.*]] = llvm.mul %[[T]], %[[FOUR]] : i64
//       CHECK:   %[[SLOTS1:.*]] = llvm.mul %[[SPAN]], %[[ONE]] : i64
//       CHECK:   memref.extract_aligned_pointer_as_index %arg6
//       CHECK:   llvm.getelementptr %{{.*}}[%[[SLOTS1]]]
//       CHECK:   call @[[WRITE:llmc_paged_kv_write_[0-9]+]](
//       CHECK:   %[[S:.*]] = arith.index_cast %[[SEQS]] : index to i64
//       CHECK:   %[[WIDTH:.*]] = memref.dim %arg5, %c1
//       CHECK:   %[[W:.*]] = arith.index_cast %[[WIDTH]] : index to i64
//       CHECK:   %[[ROW:.*]] = llvm.mul %{{.*}}, %[[W]] : i64
//       CHECK:   %[[GROUPROWS:.*]] = llvm.mul %[[S]], %[[ROW]] : i64
//       CHECK:   %[[TABLES1:.*]] = llvm.mul %[[GROUPROWS]], %{{.*}} : i64
//       CHECK:   memref.extract_aligned_pointer_as_index %arg5
//       CHECK:   llvm.getelementptr %{{.*}}[%[[TABLES1]]]
//       CHECK:   constant @llmc_paged_attention_task_{{[0-9]+}}
//       CHECK:   call @[[WRITE]](
func.func @grouped(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.kv_groups = [{layers = array<i64: 1>, window = 0 : i64}, {layers = array<i64: 0>, window = 16 : i64}]} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %p0 = llm.paged_kv_write %arg7, %h, %h, %arg5 {kv_group = 1 : i64, layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a0 = llm.paged_attention %h, %p0, %arg4, %arg3, %arg2 {kv_group = 1 : i64, layer = 0 : i64, scale = 2.500000e-01 : f32, sliding_window = 16 : i64} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %p1 = llm.paged_kv_write %p0, %a0, %a0, %arg5 {kv_group = 0 : i64, layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a1 = llm.paged_attention %a0, %p1, %arg4, %arg3, %arg2 {kv_group = 0 : i64, layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a1 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %l = llm.logits %rows, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %l : tensor<?x64xf32>
}
