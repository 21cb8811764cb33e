// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cuda)'
// RUN: not llmc-opt %s --pass-pipeline='builtin.module(llm-lower-to-cuda{arch=ampere})' 2>&1 | FileCheck %s --check-prefix=ARCH
// RUN: not llmc-opt %s --pass-pipeline='builtin.module(llm-lower-to-cuda{dtype=f8})' 2>&1 | FileCheck %s --check-prefix=DTYPE

// What llm-lower-to-cuda refuses, each with one error. Options first:
// ARCH: error: arch must be sm_XX (sm_80, sm_90, ...), not 'ampere'
// DTYPE: error: dtype must be bf16 or f16, not 'f8'

module {
  // expected-error @+1 {{has no memory plan: run llm-plan-memory first}}
  func.func @unplanned(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}) -> tensor<?xi32> {
    return %arg0 : tensor<?xi32>
  }
}

// -----

module {
  // expected-error @+1 {{has a non-f32 KV cache; the model must be f32 before lowering}}
  func.func @f16_pool(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf16> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 0 : i64} {
    %0 = llm.constant dense<0.0> : tensor<2x64xf32>
    %1 = tensor.cast %0 : tensor<2x64xf32> to tensor<?x64xf32>
    return %1 : tensor<?x64xf32>
  }
}

// -----

// The manifest needs the hidden size, which the step's llm.embedding gives.
module {
  // expected-error @+1 {{has no llm.embedding: the manifest needs the model's hidden size}}
  func.func @no_embedding(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 0 : i64} {
    %0 = llm.constant dense<0.0> : tensor<2x64xf32>
    %1 = tensor.cast %0 : tensor<2x64xf32> to tensor<?x64xf32>
    return %1 : tensor<?x64xf32>
  }
}

// -----

// The CUDA runtime's device inputs hold one block table a sequence: a step
// whose layers own their blocks by window (llm-kv-cache-groups) is refused.
module {
  // expected-error @+1 {{has KV cache groups (llm-kv-cache-groups); the CUDA target keeps one block table for every layer}}
  func.func @grouped(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.kv_groups = [{layers = array<i64: 1>, window = 0 : i64}, {layers = array<i64: 0>, window = 16 : i64}], llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 0 : i64} {
    %0 = llm.constant dense<0.0> : tensor<2x64xf32>
    %1 = tensor.cast %0 : tensor<2x64xf32> to tensor<?x64xf32>
    return %1 : tensor<?x64xf32>
  }
}
