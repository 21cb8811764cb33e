// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cuda{arch=sm_90})' | FileCheck %s
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cuda{dtype=f16})' | FileCheck %s --check-prefix=F16

// The step becomes data: llmc.cuda_plan lists launches of the gpu.module's
// kernels and of the NVRTC attention kernels, and cuBLASLt GEMMs, over
// (buffer, offset) locations; the step function is gone.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   gpu.container_module
//  CHECK-SAME:   llmc.cuda_arch = "sm_90"
// The attention source is specialised: head dim 16, 2 query heads per KV head, 1 KV head, blocks of 16.
//  CHECK-SAME:   llmc.cuda_attention_source = "{{[^"]*}}attention_d16_g2_kv1_bs16_bf16_{{[^"]*}}"
// Launches in step order: embedding, QKV GEMM, rope + KV write, attention
// (tensor-core prefill tiles, split-KV decode, combine), o-proj GEMM, add + norm, the gated
// GEMM into f32 scratch and its epilogue kernel, the elementwise kernel, the
// row gather and the logits GEMM into the logits buffer.
//  CHECK-SAME:   llmc.cuda_plan = [{args = [{memref = {buffer = "weights", offset = 0 : i64}, sizes = [64, 32], strides = [32, 1]}, {memref = {buffer = "tokens", offset = 0 : i64}, sizes = ["tokens"], strides = [1]}, {memref = {buffer = "workspace"
//  CHECK-SAME:   kernel = "embedding_0", module = "kernels", op = "launch"
// Every matmul weight is stored [n, k], whatever its layout in the graph: ldb is k.
//  CHECK-SAME:   b_layout = "nk", beta = 0 : i64, bias, c, d = {buffer = "workspace"
//  CHECK-SAME:   d_dtype = "bf16", k = 32 : i64, lda = {{[0-9]+}} : i64, ldb = 32 : i64
//  CHECK-SAME:   m = "tokens", n = 64 : i64, op = "gemm"
// The query part of the fused QKV product is a strided view: row stride 64.
//  CHECK-SAME:   {memref = {buffer = "workspace", offset = {{[0-9]+}} : i64}, sizes = ["tokens", 32], strides = [64, 1]}
// The KV write takes its layer as an argument, so all layers share one kernel.
//  CHECK-SAME:   {i32 = 0 : i64}], block = [256, 1, 1], grid = ["tokens", 1, 1], kernel = "rope_paged_kv_write_1"
// The prefill kernel's grid is 0 blocks wide in decode steps, which skip it.
//  CHECK-SAME:   grid = ["prefill_tokens", 1, 1], kernel = "attention_d16_g2_kv1_bs16_bf16_{{.*}}_prefill", module = "attention"
//  CHECK-SAME:   grid = ["seqs", 1, 32], kernel = "attention_d16_g2_kv1_bs16_bf16_{{.*}}_decode", module = "attention"
//  CHECK-SAME:   grid = ["seqs", 2, 1], kernel = "attention_d16_g2_kv1_bs16_bf16_{{.*}}_combine", module = "attention"
//  CHECK-SAME:   op = "gemm"
//  CHECK-SAME:   kernel = "add_rms_norm_2"
//  CHECK-SAME:   d_dtype = "f32"
//  CHECK-SAME:   n = 128 : i64, op = "gemm"
//  CHECK-SAME:   kernel = "epilogue_3"
//  CHECK-SAME:   kernel = "elementwise_4"
//  CHECK-SAME:   kernel = "gather_rows_5"
//  CHECK-SAME:   d = {buffer = "logits", offset = 0 : i64}, d_dtype = "f32"
//  CHECK-SAME:   m = "seqs"
//  CHECK-SAME:   llmc.dtype = "bf16"
//  CHECK-SAME:   llmc.weights = [{dtype = "bf16", name = "weight0"
// The rotary frequencies stay f32.
//  CHECK-SAME:   {dtype = "f32", name = "weight{{[0-9]+}}"
//   CHECK-NOT:   func.func
// CHECK-LABEL: gpu.module @llmc_kernels [#nvvm.target<O = 3, chip = "sm_90">]
// One block per row; bf16 is widened to f32 for arithmetic and narrowed when stored.
//       CHECK:   gpu.func @embedding_0(%{{.*}}: memref<64x32xbf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x32xbf16>) kernel attributes {known_block_size = array<i32: 256, 1, 1>}
//       CHECK:     gpu.block_id  x
//       CHECK:     gpu.thread_id  x
// 32 features over 256 threads: a thread past the row loads the last feature and skips its store.
//       CHECK:     arith.minsi
//       CHECK:     memref.load
//       CHECK:     arith.cmpi slt
//       CHECK:     scf.if
//  CHECK-NEXT:       memref.store
//       CHECK:   gpu.func @rope_paged_kv_write_1(%{{.*}}: memref<1x?x2x1x16x16xbf16>, %{{.*}}: memref<?x32xbf16, strided<[64, 1], offset: ?>>
//  CHECK-SAME:     %[[LAYER:[^:]*]]: i32) kernel
//       CHECK:     arith.index_cast %[[LAYER]] : i32 to index
//       CHECK:     math.cos
//       CHECK:     arith.truncf %{{.*}} : f32 to bf16
//       CHECK:   gpu.func @add_rms_norm_2
//       CHECK:     arith.extf %{{.*}} : bf16 to f32
//       CHECK:     gpu.all_reduce  add %{{.*}} uniform
//       CHECK:     math.sqrt
// The gated epilogue reads gate and up from the f32 product, [gate | up].
//       CHECK:   gpu.func @epilogue_3(%{{.*}}: memref<?x128xf32>, %{{.*}}: memref<?x64xbf16>)
//       CHECK:     math.exp
//       CHECK:   gpu.func @elementwise_4
//       CHECK:   gpu.func @gather_rows_5

// F16: llmc.dtype = "f16"
// F16: gpu.func @embedding_0(%{{.*}}: memref<64x32xf16>

func.func @fused(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %freq = llm.constant dense<1.000000e+00> : tensor<8xf32>
  %g = llm.constant dense<1.000000e+00> : tensor<32xf32>
  %wqkv = llm.constant dense<1.000000e-01> : tensor<32x64xf32>
  %wo = llm.constant dense<1.000000e-01> : tensor<32x32xf32>
  %wgu = llm.constant dense<1.000000e-01> : tensor<32x128xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<64x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %qkv = llm.linear %x, %wqkv : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  %parts:3 = llm.split %qkv {sizes = array<i64: 32, 16, 16>} : (tensor<?x64xf32>) -> (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>)
  %q = llm.split_heads %parts#0 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %k = llm.split_heads %parts#1 {num_heads = 1 : i64} : (tensor<?x16xf32>) -> tensor<?x1x16xf32>
  %v = llm.split_heads %parts#2 {num_heads = 1 : i64} : (tensor<?x16xf32>) -> tensor<?x1x16xf32>
  %rq, %pool = llm.rope_paged_kv_write %arg7, %q, %k, %v, %arg5, %arg1 inv_freq(%freq) {layer = 0 : i64} : (tensor<1x?x2x1x16x16xf32>, tensor<?x2x16xf32>, tensor<?x1x16xf32>, tensor<?x1x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<8xf32>) -> (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xf32>)
  %a = llm.paged_attention %rq, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %o = llm.linear %m, %wo : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %sum, %normed = llm.add_rms_norm %x, %o, %g {epsilon = 1.0e-5 : f32} : (tensor<?x32xf32>, tensor<?x32xf32>, tensor<32xf32>) -> (tensor<?x32xf32>, tensor<?x32xf32>)
  %mlp = llm.fused_linear %normed, %wgu {gated} : (tensor<?x32xf32>, tensor<32x128xf32>) -> tensor<?x64xf32> {
  ^bb0(%gate: f32, %up: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %gate : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %s = arith.divf %gate, %d : f32
    %y = arith.mulf %s, %up : f32
    llm.yield %y : f32
  }
  %down = llm.elementwise %mlp : (tensor<?x64xf32>) -> tensor<?x64xf32> {
  ^bb0(%t: f32):
    %h = arith.constant 0.5 : f32
    %y = arith.mulf %t, %h : f32
    llm.yield %y : f32
  }
  %rows = llm.gather_rows %down, %arg6 : (tensor<?x64xf32>, tensor<?xi32>) -> tensor<?x64xf32>
  %logits = llm.logits %rows, %head : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// A row of 4096 features over 256 threads: 16 features a thread, in two unrolled groups of 8
// (a loop of two iterations); each group issues its 8 loads before its 8 stores, so that they
// are in flight together. No feature is past the row: no guard.
// CHECK-LABEL: gpu.func @embedding_0(%{{.*}}: memref<8x4096xbf16>
//       CHECK:   scf.for %{{.*}} = %thread_id_x to %{{.*}} step %c2048 {
// CHECK-COUNT-8:   memref.load %{{.*}} : memref<8x4096xbf16>
//   CHECK-NOT:     scf.if
// CHECK-COUNT-8:   memref.store
//  CHECK-NEXT:   }
// The norm's last pass: 8 loads of the row and 8 of the weight, then the maths of all 8
// features (two products each), then 8 stores.
// CHECK-LABEL: gpu.func @rms_norm_1
//       CHECK:   gpu.all_reduce
//       CHECK:   scf.for %{{.*}} = %thread_id_x to %{{.*}} step %c2048 {
// CHECK-COUNT-16:  memref.load
//   CHECK-NOT:     memref.load
// CHECK-COUNT-16:  arith.mulf
//   CHECK-NOT:     arith.mulf
// CHECK-COUNT-8:   memref.store
//  CHECK-NEXT:   }
func.func @wide(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x8xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<8x4096xf32>
  %g = llm.constant dense<1.000000e+00> : tensor<4096xf32>
  %wqkv = llm.constant dense<1.000000e-01> : tensor<4096x64xf32>
  %freq = llm.constant dense<1.000000e+00> : tensor<8xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x8xf32>
  %x = llm.embedding %table, %arg0 : (tensor<8x4096xf32>, tensor<?xi32>) -> tensor<?x4096xf32>
  %n = llm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x4096xf32>, tensor<4096xf32>) -> tensor<?x4096xf32>
  %qkv = llm.linear %n, %wqkv : (tensor<?x4096xf32>, tensor<4096x64xf32>) -> tensor<?x64xf32>
  %parts:3 = llm.split %qkv {sizes = array<i64: 32, 16, 16>} : (tensor<?x64xf32>) -> (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>)
  %q = llm.split_heads %parts#0 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %k = llm.split_heads %parts#1 {num_heads = 1 : i64} : (tensor<?x16xf32>) -> tensor<?x1x16xf32>
  %v = llm.split_heads %parts#2 {num_heads = 1 : i64} : (tensor<?x16xf32>) -> tensor<?x1x16xf32>
  %rq, %pool = llm.rope_paged_kv_write %arg7, %q, %k, %v, %arg5, %arg1 inv_freq(%freq) {layer = 0 : i64} : (tensor<1x?x2x1x16x16xf32>, tensor<?x2x16xf32>, tensor<?x1x16xf32>, tensor<?x1x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<8xf32>) -> (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xf32>)
  %a = llm.paged_attention %rq, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %logits = llm.logits %rows, %head : (tensor<?x32xf32>, tensor<32x8xf32>) -> tensor<?x8xf32>
  return %logits : tensor<?x8xf32>
}

// -----

// A logits head with a bias: cuBLASLt takes a bias in D's type, f32 for the logits, and ours is
// stored bf16, so the product goes to f32 scratch and an epilogue kernel adds the bias.
// CHECK-LABEL: module attributes
//       CHECK:   kernel = "gather_rows_3"
//  CHECK-SAME:   bias, c, d = {buffer = "workspace", offset = {{[0-9]+}} : i64}, d_dtype = "f32", k = 32 : i64
//  CHECK-SAME:   m = "seqs", n = 8 : i64, op = "gemm"
//  CHECK-SAME:   {memref = {buffer = "logits", offset = 0 : i64}, sizes = ["seqs", 8], strides = [8, 1]}], block = [256, 1, 1], grid = ["seqs", 1, 1], kernel = "epilogue_4"
//   CHECK-NOT:   op = "gemm"
//       CHECK:   gpu.func @epilogue_4(%{{.*}}: memref<?x8xf32>, %{{.*}}: memref<8xbf16>, %{{.*}}: memref<?x8xf32>)
//       CHECK:     arith.extf %{{.*}} : bf16 to f32
//       CHECK:     arith.addf
func.func @biased_head(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x8xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<8x4096xf32>
  %g = llm.constant dense<1.000000e+00> : tensor<4096xf32>
  %wqkv = llm.constant dense<1.000000e-01> : tensor<4096x64xf32>
  %freq = llm.constant dense<1.000000e+00> : tensor<8xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x8xf32>
  %bias = llm.constant dense<1.000000e+00> : tensor<8xf32>
  %x = llm.embedding %table, %arg0 : (tensor<8x4096xf32>, tensor<?xi32>) -> tensor<?x4096xf32>
  %n = llm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x4096xf32>, tensor<4096xf32>) -> tensor<?x4096xf32>
  %qkv = llm.linear %n, %wqkv : (tensor<?x4096xf32>, tensor<4096x64xf32>) -> tensor<?x64xf32>
  %parts:3 = llm.split %qkv {sizes = array<i64: 32, 16, 16>} : (tensor<?x64xf32>) -> (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>)
  %q = llm.split_heads %parts#0 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %k = llm.split_heads %parts#1 {num_heads = 1 : i64} : (tensor<?x16xf32>) -> tensor<?x1x16xf32>
  %v = llm.split_heads %parts#2 {num_heads = 1 : i64} : (tensor<?x16xf32>) -> tensor<?x1x16xf32>
  %rq, %pool = llm.rope_paged_kv_write %arg7, %q, %k, %v, %arg5, %arg1 inv_freq(%freq) {layer = 0 : i64} : (tensor<1x?x2x1x16x16xf32>, tensor<?x2x16xf32>, tensor<?x1x16xf32>, tensor<?x1x16xf32>, tensor<?xi32>, tensor<?xi32>, tensor<8xf32>) -> (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xf32>)
  %a = llm.paged_attention %rq, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %logits = llm.logits %rows, %head bias(%bias) : (tensor<?x32xf32>, tensor<32x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %logits : tensor<?x8xf32>
}

// -----

// A sliding window and a softcap (Gemma-2's local layer) name a config of their own, apart
// from the global layer's: the kernels take them as constants.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   llmc.cuda_attention_source = "{{[^"]*}}WINDOW = 8;{{[^"]*}}SOFTCAP = 0x1.9p+5f;
//  CHECK-SAME:   kernel = "attention_d32_g1_kv1_bs16_bf16_s0x{{[0-9a-f]+}}_w8_c0x42480000_prefill"
//  CHECK-SAME:   kernel = "attention_d32_g1_kv1_bs16_bf16_s0x{{[0-9a-f]+}}_w8_c0x42480000_decode"
//  CHECK-SAME:   kernel = "attention_d32_g1_kv1_bs16_bf16_s0x{{[0-9a-f]+}}_prefill"
func.func @window_and_softcap(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<2x?x2x1x16x32xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<64x32xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %q = llm.split_heads %x {num_heads = 1 : i64} : (tensor<?x32xf32>) -> tensor<?x1x32xf32>
  %local = llm.paged_attention %q, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 1.7e-01 : f32, sliding_window = 8 : i64, softcap = 5.0e+01 : f32} : (tensor<?x1x32xf32>, tensor<2x?x2x1x16x32xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x1x32xf32>
  %global = llm.paged_attention %local, %arg7, %arg4, %arg3, %arg2 {layer = 1 : i64, scale = 1.7e-01 : f32} : (tensor<?x1x32xf32>, tensor<2x?x2x1x16x32xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x1x32xf32>
  %m = llm.merge_heads %global : (tensor<?x1x32xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %logits = llm.logits %rows, %head {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// Attention sinks (gpt-oss) name a config of their own, whose table holds each layer's sinks
// by layer: layer 1's row follows layer 0's, and both layers share the config's kernels.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   llmc.cuda_attention_source = "{{[^"]*}}HAS_SINKS = true;{{[^"]*}}SINKS[] = {0x1p-1f, -0x1p+0f, 0x1p+1f, 0x0p+0f};
//  CHECK-SAME:   kernel = "attention_d16_g1_kv2_bs16_bf16_s0x3e800000_sinks_prefill"
//  CHECK-SAME:   {ptr = {buffer = "context_lens", offset = 0 : i64}}, {i32 = "seqs"}, {i32 = 1 : i64}], block = [128, 1, 1], grid = ["seqs", 2, 1], kernel = "attention_d16_g1_kv2_bs16_bf16_s0x3e800000_sinks_combine"
func.func @attention_sinks(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<2x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %heads = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %a0 = llm.paged_attention %heads, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32, sinks = array<f32: 0.5, -1.0>} : (tensor<?x2x16xf32>, tensor<2x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %a1 = llm.paged_attention %a0, %arg7, %arg4, %arg3, %arg2 {layer = 1 : i64, scale = 2.500000e-01 : f32, sinks = array<f32: 2.0, 0.0>} : (tensor<?x2x16xf32>, tensor<2x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %merged = llm.merge_heads %a1 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %last = llm.gather_rows %merged, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %out = llm.logits %last, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// ALiBi slopes (BLOOM) name a config of their own, whose table holds each layer's slopes by
// layer, as the sinks' does.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   llmc.cuda_attention_source = "{{[^"]*}}HAS_ALIBI = true;{{[^"]*}}ALIBI_SLOPES[] = {0x1p-2f, 0x1p-4f, 0x1p-2f, 0x1p-4f};
//  CHECK-SAME:   kernel = "attention_d16_g1_kv2_bs16_bf16_s0x3e800000_alibi_prefill"
//  CHECK-SAME:   kernel = "attention_d16_g1_kv2_bs16_bf16_s0x3e800000_alibi_combine"
func.func @attention_alibi(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<2x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %heads = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %a0 = llm.paged_attention %heads, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32, alibi_slopes = array<f32: 0.25, 0.0625>} : (tensor<?x2x16xf32>, tensor<2x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %a1 = llm.paged_attention %a0, %arg7, %arg4, %arg3, %arg2 {layer = 1 : i64, scale = 2.500000e-01 : f32, alibi_slopes = array<f32: 0.25, 0.0625>} : (tensor<?x2x16xf32>, tensor<2x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %merged = llm.merge_heads %a1 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %last = llm.gather_rows %merged, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %out = llm.logits %last, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// An elementwise input with one value per row (Qwen2-MoE's sigmoid gate
// scaling its shared expert): each column of a row reads the row's value at
// column 0.
// CHECK-LABEL: module attributes
//       CHECK:   gpu.func @elementwise_{{[0-9]+}}(%[[X:[^:]*]]: memref<?x32xbf16>, %[[G:[^:]*]]: memref<?x1xbf16>, %[[OUT:[^:]*]]: memref<?x32xbf16>)
//       CHECK:     memref.load %[[X]][%[[ROW:[^,]*]], %{{[^]]*}}]
//       CHECK:     %[[ZERO:.*]] = arith.constant 0 : index
//  CHECK-NEXT:     memref.load %[[G]][%[[ROW]], %[[ZERO]]] : memref<?x1xbf16>
//       CHECK:     arith.mulf
func.func @per_row_input(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %wg = llm.constant dense<2.500000e-01> : tensor<32x1xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<64x32xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %g = llm.linear %x, %wg : (tensor<?x32xf32>, tensor<32x1xf32>) -> tensor<?x1xf32>
  %y = llm.elementwise %x, %g : (tensor<?x32xf32>, tensor<?x1xf32>) -> tensor<?x32xf32> {
  ^bb0(%v: f32, %s: f32):
    %p = arith.mulf %v, %s : f32
    llm.yield %p : f32
  }
  %q = llm.split_heads %y {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %a = llm.paged_attention %q, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %logits = llm.logits %rows, %head {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// A per-head norm (Qwen3's q/k norm: a weight of one head's length): one block per (row,
// head), each normalising its head's 16 features.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   sizes = [16], strides = [1]}, {memref = {buffer = "workspace", offset = {{[0-9]+}} : i64}, sizes = ["tokens", 32], strides = [32, 1]}], block = [256, 1, 1], grid = {{\[}}["tokens", 2, 1], 1, 1], kernel = "rms_norm_1"
//       CHECK:   gpu.func @rms_norm_1(%[[X:.*]]: memref<?x32xbf16>, %{{.*}}: memref<16xbf16>, %[[OUT:.*]]: memref<?x32xbf16>)
//       CHECK:     %[[BLOCK:.*]] = gpu.block_id  x
//       CHECK:     %[[ROW:.*]] = arith.divsi %[[BLOCK]], %c2
//       CHECK:     %[[HEAD:.*]] = arith.remsi %[[BLOCK]], %c2
//       CHECK:     %[[FIRST:.*]] = arith.muli %[[HEAD]], %c16
//       CHECK:     scf.for %[[COL:.*]] = %{{.*}} to %c16
//       CHECK:       %[[AT:.*]] = arith.addi %[[FIRST]], %[[COL]]
//       CHECK:       memref.load %[[X]][%[[ROW]], %[[AT]]]
//       CHECK:     gpu.all_reduce  add
//       CHECK:     memref.store %{{.*}}, %[[OUT]][%[[ROW]], %{{.*}}]
func.func @per_head_norm(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %g = llm.constant dense<1.500000e+00> : tensor<16xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<64x32xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %n = llm.rms_norm %x, %g {epsilon = 1.0e-6 : f32} : (tensor<?x32xf32>, tensor<16xf32>) -> tensor<?x32xf32>
  %q = llm.split_heads %n {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %a = llm.paged_attention %q, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %logits = llm.logits %rows, %head {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// A scaled rotary embedding (YaRN's and LongRoPE's attention factor): cos and sin times the scale.
// CHECK-LABEL: gpu.func @rope_1
//       CHECK:   %[[COS:.*]] = math.cos
//  CHECK-NEXT:   %[[SCALE:.*]] = arith.constant 1.250000e+00 : f32
//  CHECK-NEXT:   arith.mulf %[[COS]], %[[SCALE]]
//       CHECK:   %[[SIN:.*]] = math.sin
//  CHECK-NEXT:   %[[SCALE2:.*]] = arith.constant 1.250000e+00 : f32
//  CHECK-NEXT:   arith.mulf %[[SIN]], %[[SCALE2]]
func.func @scaled_rope(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %freq = llm.constant dense<1.000000e+00> : tensor<8xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<64x32xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %q = llm.rope %h, %arg1, %freq {scale = 1.25 : f32} : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %a = llm.paged_attention %q, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x1x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %m, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %logits = llm.logits %rows, %head {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// expected-error @+1 {{no ragged step function: run llm-kv-cache-paging and llm-ragged-batching first}}
module {
  func.func @dense(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
    return %x : tensor<?x?x32xf32>
  }
}

// -----

// A mixture of experts: five launches of the NVRTC module's kernels over one scratch. The
// route writes each row's experts and weights, the plan orders the picks by expert in tiles of
// 16, and the experts, down and sum kernels read them; the tiles' grid is ceil(2 rows / 16)
// + 4 experts. No expert biases: null pointers (i64 0). The router logits stay f32, a rounding
// of theirs could swap two experts, so the router's bias (stored bf16, where cuBLASLt's would
// be D's f32) is added by an epilogue kernel.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   llmc.cuda_attention_source = "{{[^"]*}}MOE_TILE = 8 * MOE_GROUPS{{[^"]*}}llmc_moe_route(
//  CHECK-SAME:   bias, c, d = {buffer = "workspace", offset = [[PRODUCT:[0-9]+]] : i64}, d_dtype = "f32", k = 32 : i64, lda = 32 : i64, ldb = 32 : i64, ldc = 0 : i64, ldd = 4 : i64, m = "tokens", n = 4 : i64, op = "gemm"}
//  CHECK-SAME:   {args = [{memref = {buffer = "workspace", offset = [[PRODUCT]] : i64}, sizes = ["tokens", 4], strides = [4, 1]}, {memref = {buffer = "weights", offset = {{[0-9]+}} : i64}, sizes = [4], strides = [1]}, {memref = {buffer = "workspace", offset = [[LOGITS:[0-9]+]] : i64}, sizes = ["tokens", 4], strides = [4, 1]}], block = [256, 1, 1], grid = ["tokens", 1, 1], kernel = "[[EPILOGUE:epilogue_[0-9]+]]"
//  CHECK-SAME:   {args = [{ptr = {buffer = "workspace", offset = [[LOGITS]] : i64}}, {i32 = 4 : i64}, {i32 = "tokens"}, {i32 = 4 : i64}, {i32 = 2 : i64}, {i32 = 1 : i64}, {i32 = 0 : i64}, {i64 = 0 : i64}, {i32 = 0 : i64}, {i32 = 0 : i64}, {i32 = 0 : i64}, {i32 = 0 : i64}, {f32 = 0.000000e+00 : f32}, {f32 = 0.000000e+00 : f32}, {f32 = 0.000000e+00 : f32}, {f32 = 1.000000e+00 : f32}, {ptr = {buffer = "workspace", offset = [[CHOSEN:[0-9]+]] : i64}}, {ptr = {buffer = "workspace", offset = [[WEIGHTS:[0-9]+]] : i64}}], block = [128, 1, 1], grid = {{\[}}["tokens", 1, 128], 1, 1], kernel = "llmc_moe_route"
//  CHECK-SAME:   {args = [{ptr = {buffer = "workspace", offset = [[CHOSEN]] : i64}}, {i32 = ["tokens", 2, 1]}, {i32 = 4 : i64}, {i32 = ["tokens", 2, 16, 4]}, {ptr = {buffer = "workspace", offset = [[ORDER:[0-9]+]] : i64}}, {ptr = {buffer = "workspace", offset = [[POSITION:[0-9]+]] : i64}}, {ptr = {buffer = "workspace", offset = [[TILES:[0-9]+]] : i64}}], block = [256, 1, 1], grid = [1, 1, 1], kernel = "llmc_moe_plan"
//  CHECK-SAME:   {args = [{ptr = {buffer = "workspace", offset = [[X:[0-9]+]] : i64}}, {i32 = 32 : i64}, {ptr = {buffer = "weights", offset = {{[0-9]+}} : i64}}, {ptr = {buffer = "weights", offset = {{[0-9]+}} : i64}}, {i64 = 0 : i64}, {i64 = 0 : i64}, {ptr = {buffer = "workspace", offset = [[ORDER]] : i64}}, {ptr = {buffer = "workspace", offset = [[TILES]] : i64}}, {ptr = {buffer = "workspace", offset = [[WEIGHTS]] : i64}}, {i32 = 2 : i64}, {i32 = 32 : i64}, {i32 = 8 : i64}, {i32 = 0 : i64}, {f32 = 0.000000e+00 : f32}, {f32 = 1.000000e+00 : f32}, {ptr = {buffer = "workspace", offset = [[H:[0-9]+]] : i64}}], block = [128, 1, 1], grid = {{\[}}["tokens", 2, 16, 4], 1, 1], kernel = "llmc_moe_experts"
//  CHECK-SAME:   {args = [{ptr = {buffer = "workspace", offset = [[H]] : i64}}, {ptr = {buffer = "weights", offset = {{[0-9]+}} : i64}}, {i64 = 0 : i64}, {ptr = {buffer = "workspace", offset = [[ORDER]] : i64}}, {ptr = {buffer = "workspace", offset = [[TILES]] : i64}}, {ptr = {buffer = "workspace", offset = [[WEIGHTS]] : i64}}, {i32 = 8 : i64}, {i32 = 32 : i64}, {ptr = {buffer = "workspace", offset = [[Y:[0-9]+]] : i64}}], block = [128, 1, 1], grid = {{\[}}["tokens", 2, 16, 4], 2, 1], kernel = "llmc_moe_down"
//  CHECK-SAME:   {args = [{ptr = {buffer = "workspace", offset = [[Y]] : i64}}, {ptr = {buffer = "workspace", offset = [[POSITION]] : i64}}, {i32 = 2 : i64}, {i32 = 32 : i64}, {ptr = {buffer = "workspace", offset = {{[0-9]+}} : i64}}, {i32 = 32 : i64}], block = [128, 1, 1], grid = ["tokens", 1, 1], kernel = "llmc_moe_sum"
//       CHECK:   gpu.func @[[EPILOGUE]](%{{.*}}: memref<?x4xf32>, %{{.*}}: memref<4xbf16>, %{{.*}}: memref<?x4xf32>)
func.func @mixture_of_experts(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %router = llm.constant dense<1.000000e-01> : tensor<32x4xf32>
  %router_bias = llm.constant dense<2.500000e-01> : tensor<4xf32>
  %gate = llm.constant dense<1.000000e-01> : tensor<4x8x32xf32>
  %up = llm.constant dense<2.000000e-01> : tensor<4x8x32xf32>
  %down = llm.constant dense<3.000000e-01> : tensor<4x32x8xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %heads = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %heads, %heads, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %attention = llm.paged_attention %heads, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %merged = llm.merge_heads %attention : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %logits = llm.linear %merged, %router, %router_bias : (tensor<?x32xf32>, tensor<32x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    %y = llm.moe %merged, %logits, %gate, %up, %down {normalize_top_k, top_k = 2 : i64} : (tensor<?x32xf32>, tensor<?x4xf32>, tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<4x32x8xf32>) -> tensor<?x32xf32>
  %last = llm.gather_rows %y, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %out = llm.logits %last, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// Values narrower than the keys (multi-head latent attention) have no CUDA
// attention kernel; the write says so by name.
func.func @latent_attention(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %2 = llm.constant dense<1.000000e+00> : tensor<2xf32>
  %3 = llm.constant dense<1.000000e-01> : tensor<32x20xf32>
  %4 = llm.constant dense<2.000000e-01> : tensor<16x64xf32>
  %5 = llm.embedding %1, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %6 = llm.linear %5, %3 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<32x20xf32>) -> tensor<?x20xf32>
  %parts:2 = llm.split %6 {sizes = array<i64: 16, 4>} : (tensor<?x20xf32>) -> (tensor<?x16xf32>, tensor<?x4xf32>)
  %nope = llm.split_heads %parts#0 {num_heads = 2 : i64} : (tensor<?x16xf32>) -> tensor<?x2x8xf32>
  %pe = llm.split_heads %parts#1 {num_heads = 1 : i64} : (tensor<?x4xf32>) -> tensor<?x1x4xf32>
  %rot = llm.rope %pe, %arg1, %2 {llmc.workspace_offsets = array<i64: 1536>} : (tensor<?x1x4xf32>, tensor<?xi32>, tensor<2xf32>) -> tensor<?x1x4xf32>
  %k = llm.concat_heads %nope, %rot {llmc.workspace_offsets = array<i64: 2048>} : (tensor<?x2x8xf32>, tensor<?x1x4xf32>) -> tensor<?x2x12xf32>
  %kw = llm.constant dense<1.000000e-01> : tensor<32x32xf32>
  %q = llm.linear %5, %kw {llmc.workspace_offsets = array<i64: 2560>} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %qh = llm.split_heads %q {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %kk = llm.concat_heads %k, %rot {llmc.workspace_offsets = array<i64: 512>} : (tensor<?x2x12xf32>, tensor<?x1x4xf32>) -> tensor<?x2x16xf32>
  // expected-error @+1 {{writes values narrower than its keys (multi-head latent attention); the CUDA attention kernels take one head_dim, the CPU target runs it}}
  %11 = llm.paged_kv_write %arg7, %kk, %nope, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x8xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %qh, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 0>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x8xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x8xf32>) -> tensor<?x16xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  %15 = llm.logits %14, %4 : (tensor<?x16xf32>, tensor<16x64xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}
