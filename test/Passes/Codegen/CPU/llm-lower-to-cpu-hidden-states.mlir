// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cpu)' | FileCheck %s

// A step of hidden states (an embedding model's, llmc.step_output): the rows
// it returns are computed into the workspace, then copied to the step's
// output (the last argument); the module says what the manifest records.
// CHECK:       module attributes {{{.*}}llmc.step_output = "hidden_states"
// CHECK-LABEL: func.func @llmc_step
//  CHECK-SAME:   %arg11: memref<?x32xf32>
//       CHECK:   call @llmc_gather_rows_{{[0-9]+}}(
//       CHECK:   %[[NORMED:.*]] = memref.view %arg10
//       CHECK:   call @llmc_copy_rows_{{[0-9]+}}(%[[NORMED]], %arg11)
//  CHECK-NEXT:   return
func.func @hidden_states(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x32xf32> attributes {llmc.step_output = "hidden_states"} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %scale = llm.constant dense<1.0> : tensor<32xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %p = llm.paged_kv_write %arg7, %h, %h, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %h, %p, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %n = llm.rms_norm %rows, %scale {epsilon = 1.0e-6 : f32} : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  return %n : tensor<?x32xf32>
}

// -----

// A step of logits returns them from the head, which writes the output.
// CHECK:       module attributes {{{.*}}llmc.step_output = "logits"
// CHECK-LABEL: func.func @llmc_step
//   CHECK-NOT:   llmc_copy_rows
func.func @logits(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %p = llm.paged_kv_write %arg7, %h, %h, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %h, %p, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %l = llm.logits %rows, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %l : tensor<?x64xf32>
}

// -----

// Near miss: hidden states of another width than the model's are not its
// final hidden states.
// expected-error @+1 {{returns hidden states of 16 features, not the model's 32}}
func.func @wrong_width(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x16xf32> attributes {llmc.step_output = "hidden_states"} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %p = llm.paged_kv_write %arg7, %h, %h, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %h, %p, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %half:2 = llm.split %rows {sizes = array<i64: 16, 16>} : (tensor<?x32xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>)
  return %half#0 : tensor<?x16xf32>
}
