// RUN: llmc-opt %s --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cpu)' | FileCheck %s
// RUN: not llmc-opt %s --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cpu{matmul=blas})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BLAS

// sgemm writes the whole product: no room for a gated epilogue.
// BLAS: error: a gated epilogue needs the generated matmul

// The fused ops of a planned step: llm.split parts are strided views of
// the joined product (no copy); rope + KV write is one kernel that gets the
// views; the gated fused_linear's epilogue runs inside the matmul's tiles;
// add_rms_norm writes its two results.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   %[[QKV:.*]] = memref.view %{{.*}} : memref<?xi8> to memref<?x64xf32>
//       CHECK:   %[[Q:.*]] = memref.subview %[[QKV]][0, 0] [%{{.*}}, 32] [1, 1] : memref<?x64xf32> to memref<?x32xf32, strided<[64, 1]>>
//       CHECK:   %[[K:.*]] = memref.subview %[[QKV]][0, 32] [%{{.*}}, 16] [1, 1] : memref<?x64xf32> to memref<?x16xf32, strided<[64, 1], offset: 32>>
//       CHECK:   %[[V:.*]] = memref.subview %[[QKV]][0, 48] [%{{.*}}, 16]
// Rope + KV write runs over token rows on the runtime's threads: the views
// reach the tasks as their base pointers (the layout is in the type).
//       CHECK:   memref.extract_aligned_pointer_as_index %[[Q]]
//       CHECK:   memref.extract_aligned_pointer_as_index %[[K]]
//       CHECK:   memref.extract_aligned_pointer_as_index %[[V]]
//       CHECK:   constant @llmc_rope_paged_kv_write_task_
//       CHECK:   constant @llmc_paged_attention_task_
//       CHECK:   constant @llmc_add_rms_norm_task_
// The gated GEMM reads the normed rows through the host API's parallel_for.
//       CHECK:   llvm.getelementptr %{{.*}}[0, 4]
//       CHECK:   call @llmc_gather_rows_
//       CHECK:   return
// The rope task rebuilds each view from its base pointer with the offset
// and strides of its type.
//       CHECK:   func.func private @llmc_rope_paged_kv_write_task_
//       CHECK:     builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<?x16xf32, strided<[64, 1], offset: 32>>
// Its tile kernel computes two sums per output (gate and up rows of the
// weight) and applies silu(gate) * up before the store; the exp is the
// inline polynomial (no libm call).
//       CHECK:   func.func private @llmc_matmul_{{[0-9]+}}
//       CHECK:     vector.fma
//   CHECK-NOT:     math.exp
//       CHECK:     math.roundeven
//       CHECK:     arith.divf
//       CHECK:     arith.mulf
//       CHECK:     memref.store
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
