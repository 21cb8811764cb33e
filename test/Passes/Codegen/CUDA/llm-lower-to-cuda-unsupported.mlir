// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cuda{arch=sm_80})'

// What the generated kernels cannot serve, each one error at compile time.
// A head dim of 512: the prefill tile's K and V rows need more than the
// 48 KiB of shared memory a block has without opting in.
func.func @head_dim_512(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x512xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x512xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<64x512xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x512xf32>, tensor<?xi32>) -> tensor<?x512xf32>
  %q = llm.split_heads %x {num_heads = 1 : i64} : (tensor<?x512xf32>) -> tensor<?x1x512xf32>
  // expected-error @+1 {{needs more than 48 KiB of shared memory per block (1 query heads per KV head of dim 512)}}
  %a = llm.paged_attention %q, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 4.4e-02 : f32} : (tensor<?x1x512xf32>, tensor<1x?x2x1x16x512xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x1x512xf32>
  %m = llm.merge_heads %a : (tensor<?x1x512xf32>) -> tensor<?x512xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x512xf32>, tensor<?xi32>) -> tensor<?x512xf32>
  %logits = llm.logits %rows, %head {transpose_weight} : (tensor<?x512xf32>, tensor<64x512xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// 72 query heads per KV head: more (query row, head) pairs than one 64-row
// prefill tile holds for a single query row.
func.func @group_of_72(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x1152xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<64x1152xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x1152xf32>, tensor<?xi32>) -> tensor<?x1152xf32>
  %q = llm.split_heads %x {num_heads = 72 : i64} : (tensor<?x1152xf32>) -> tensor<?x72x16xf32>
  // expected-error @+1 {{has more than 64 query heads per KV head}}
  %a = llm.paged_attention %q, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.5e-01 : f32} : (tensor<?x72x16xf32>, tensor<1x?x2x1x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x72x16xf32>
  %m = llm.merge_heads %a : (tensor<?x72x16xf32>) -> tensor<?x1152xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x1152xf32>, tensor<?xi32>) -> tensor<?x1152xf32>
  %logits = llm.logits %rows, %head {transpose_weight} : (tensor<?x1152xf32>, tensor<64x1152xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// A per-head norm after a residual add has no CUDA kernel (raising makes none).
func.func @per_head_add_norm(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %g = llm.constant dense<1.500000e+00> : tensor<16xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<64x32xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  // expected-error @+1 {{normalises each head on its own after a residual add, which the CUDA norm kernels do not compute}}
  %s, %n = llm.add_rms_norm %x, %x, %g {epsilon = 1.0e-6 : f32} : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<16xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>)
  %q = llm.split_heads %n {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %a = llm.paged_attention %q, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %logits = llm.logits %rows, %head {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// Experts of 12 features: the kernels load 8 features at a time.
func.func @mixture_of_experts(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %router = llm.constant dense<1.000000e-01> : tensor<32x4xf32>
  %gate = llm.constant dense<1.000000e-01> : tensor<4x12x32xf32>
  %up = llm.constant dense<2.000000e-01> : tensor<4x12x32xf32>
  %down = llm.constant dense<3.000000e-01> : tensor<4x32x12xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %heads = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %heads, %heads, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %attention = llm.paged_attention %heads, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %merged = llm.merge_heads %attention : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %logits = llm.linear %merged, %router : (tensor<?x32xf32>, tensor<32x4xf32>) -> tensor<?x4xf32>
  // expected-error @+1 {{has hidden size 32 and expert size 12; the CUDA kernels need multiples of 8 (16-byte loads)}}
  %y = llm.moe %merged, %logits, %gate, %up, %down {normalize_top_k, top_k = 2 : i64} : (tensor<?x32xf32>, tensor<?x4xf32>, tensor<4x12x32xf32>, tensor<4x12x32xf32>, tensor<4x32x12xf32>) -> tensor<?x32xf32>
  %last = llm.gather_rows %y, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %out = llm.logits %last, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// Multi-head latent attention over its latent: the per-head up-projections
// (and the attention's values narrower than its keys) have no CUDA kernels.
func.func @latent_up_projection(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x4xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x16xf32>
  %w = llm.constant dense<2.500000e-01> : tensor<2x8x4xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<8x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  %h = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x16xf32>) -> tensor<?x2x8xf32>
  // expected-error @+1 {{(multi-head latent attention's per-head up-projection) has no CUDA lowering; the CUDA attention kernels take one head_dim, the CPU target runs it}}
  %o = llm.head_linear %h, %w : (tensor<?x2x8xf32>, tensor<2x8x4xf32>) -> tensor<?x2x4xf32>
  %a = llm.paged_attention %o, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 5.0e-01 : f32} : (tensor<?x2x4xf32>, tensor<1x?x2x1x16x4xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x4xf32>
  %m = llm.merge_heads %a : (tensor<?x2x4xf32>) -> tensor<?x8xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  %logits = llm.logits %rows, %head : (tensor<?x8xf32>, tensor<8x64xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// A pool of one row per token, whose values are its keys' first features:
// the CUDA attention kernels read key rows and value rows.
func.func @values_in_keys(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x1x1x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x48xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<16x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x48xf32>, tensor<?xi32>) -> tensor<?x48xf32>
  %parts:2 = llm.split %x {sizes = array<i64: 32, 16>} : (tensor<?x48xf32>) -> (tensor<?x32xf32>, tensor<?x16xf32>)
  %q = llm.split_heads %parts#0 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %k = llm.split_heads %parts#1 {num_heads = 1 : i64} : (tensor<?x16xf32>) -> tensor<?x1x16xf32>
  // expected-error @+1 {{caches one row per token whose first features are the values (multi-head latent attention over its latent); the CUDA attention kernels read key and value rows, the CPU target runs it}}
  %pool = llm.paged_kv_write %arg7, %k, %arg5 {layer = 0 : i64} : (tensor<1x?x1x1x16x16xf32>, tensor<?x1x16xf32>, tensor<?xi32>) -> tensor<1x?x1x1x16x16xf32>
  %a = llm.paged_attention %q, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.5e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x1x1x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x8xf32>
  %m = llm.merge_heads %a : (tensor<?x2x8xf32>) -> tensor<?x16xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  %logits = llm.logits %rows, %head : (tensor<?x16xf32>, tensor<16x64xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}
