// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu{matmul=blas})' | FileCheck %s
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llm-lower-to-cpu)' | FileCheck %s --check-prefix=GENERATED

// The planned ragged step becomes llmc_step of the step ABI: activations are
// views of the workspace at the planned offsets, weights views of weights.bin
// at the offsets listed in llmc.weights, ops calls of kernels; the logits
// head writes the step's output.
// The manifest's record of the model and the step (llmc/Artifact/StepInfo.h).
// CHECK:       module attributes {llmc.activations = "f32", llmc.kv_dtype = "f32", llmc.matmul = "blas", llmc.step_info = {attention_window = 0 : i64, block_size = 16 : i64, head_dim = 16 : i64, hidden_size = 32 : i64, kv_rows = 2 : i64, max_num_batched_tokens = 8 : i64, max_num_seqs = 2 : i64, max_positions = 0 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, num_labels = 0 : i64, num_layers = 1 : i64, vocab_size = 64 : i64, workspace_bytes = 4224 : i64}
//  CHECK-SAME:   llmc.weights = [{name = "weight0", offset = 0 : i64, value = dense<5.000000e-01> : tensor<64x32xf32>}, {name = "weight1", offset = 8192 : i64
// CHECK-LABEL: func.func @llmc_step
//  CHECK-SAME:   (%[[API:.*]]: !llvm.ptr, %[[TOK:[^:]*]]: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?x?xi32>, %{{[^:]*}}: memref<?xi32>, %{{[^:]*}}: memref<?xi32>, %[[POOL:[^:]*]]: memref<1x?x2x2x16x16xf32>, %[[W:[^:]*]]: memref<?xi8>, %[[WS:[^:]*]]: memref<?xi8>, %[[LOGITS:[^:]*]]: memref<?x64xf32>)
//  CHECK-SAME:   attributes {llvm.emit_c_interface}
//       CHECK:   %[[TABLE:.*]] = memref.view %[[W]][%{{.*}}][] : memref<?xi8> to memref<64x32xf32>
//       CHECK:   %[[E:.*]] = memref.view %[[WS]][%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?x32xf32>
//       CHECK:   call @llmc_embedding_{{[0-9]+}}(%[[TABLE]], %[[TOK]], %[[E]])
// The linear layer calls sgemm (field 3 of the host API) with its context (field 2).
//       CHECK:   llvm.getelementptr %[[API]][0, 3]
//       CHECK:   llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, i64, i64, i64, !llvm.ptr, i64, !llvm.ptr, i64, i32, !llvm.ptr, i64) -> ()
//       CHECK:   call @llmc_rope_
// Each layer's kernels take a view of its blocks (see @two_layers).
//       CHECK:   memref.extract_aligned_pointer_as_index %[[POOL]]
//       CHECK:   %[[LAYER:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x2x2x16x16xf32>
//       CHECK:   call @llmc_paged_kv_write_{{[0-9]+}}(%[[LAYER]],
// Attention runs on the runtime's threads: parallel_for (field 4 of the
// API) calls its task function over (sequence, run of KV heads, split)
// tasks, then the combine kernel's over (sequence, run of KV heads); both KV
// heads make one run here. A decode row's key ranges leave their partial
// states in the scratch past the planned 3072 bytes: 2 sequences x 1 run x
// 4 ranges x 2 query heads x (16 + 2) floats.
//       CHECK:   %[[PARTS:.*]] = memref.view %[[WS]][%c3072][%{{.*}}] : memref<?xi8> to memref<?x144xf32>
//       CHECK:   %[[ATTENTION:.*]] = constant @llmc_paged_attention_task_{{[0-9]+}}
//       CHECK:   llvm.getelementptr %[[API]][0, 4]
//       CHECK:   llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, i64, !llvm.ptr, !llvm.ptr) -> ()
//       CHECK:   constant @llmc_paged_attention_combine_task_{{[0-9]+}}
//       CHECK:   llvm.getelementptr %[[API]][0, 4]
//       CHECK:   llvm.call %{{.*}} : !llvm.ptr, (!llvm.ptr, i64, !llvm.ptr, !llvm.ptr) -> ()
//       CHECK:   call @llmc_gather_rows_
//       CHECK:   %[[HEADPTR:.*]] = memref.extract_aligned_pointer_as_index %[[LOGITS]]
//       CHECK:   llvm.call
//       CHECK:   return
// Kernels are private loop nests with internal linkage.
//       CHECK:   func.func private @llmc_embedding_{{[0-9]+}}({{.*}}) attributes {llvm.linkage = #llvm.linkage<internal>}
//       CHECK:     scf.for
// A block's keys are written transposed: feature d of slot s at d * 16 + s
// of the block's flat [16, 16] tile; values stay rows.
//       CHECK:   func.func private @llmc_paged_kv_write_{{[0-9]+}}(%[[KVPOOL:[^:]*]]: memref<?x2x2x16x16xf32>
//       CHECK:     %[[KTILES:.*]] = memref.collapse_shape %[[KVPOOL]] {{\[}}[0], [1], [2], [3, 4]] : memref<?x2x2x16x16xf32> into memref<?x2x2x256xf32>
//       CHECK:     %[[KEY:.*]] = memref.load %{{.*}} : memref<?x32xf32>
//       CHECK:     %[[AT:.*]] = arith.muli %{{.*}}, %c16{{.*}} : index
//       CHECK:     %[[AT2:.*]] = arith.addi %[[AT]], %{{.*}} : index
//       CHECK:     memref.store %[[KEY]], %[[KTILES]][%{{.*}}, %{{.*}}, %{{.*}}, %[[AT2]]]
//       CHECK:     memref.store %{{.*}}, %[[KVPOOL]]
//       CHECK:   func.func private @llmc_paged_attention_{{[0-9]+}}({{.*}}, %[[FIRST:.*]]: index, %[[LAST:.*]]: index)
//       CHECK:     memref.alloca() : memref<2x16xf32>
//       CHECK:     scf.for %{{.*}} = %[[FIRST]] to %[[LAST]]
// A decode task carries the state of both KV heads' query heads through the
// blocks, and reads a block in address order: head 0's key tile, head 1's,
// then head 0's value rows, head 1's.
//       CHECK:     %[[HEAD0:.*]] = arith.addi %[[FIRSTHEAD:.*]], %c0{{.*}} : index
//       CHECK:     %[[HEAD1:.*]] = arith.addi %[[FIRSTHEAD]], %c1{{.*}} : index
//       CHECK:     scf.for {{.*}} -> (f32, f32, f32, f32, vector<16xf32>, vector<16xf32>)
// A block's 16 scores are one vector: per feature, the keys' row of the
// transposed tile times the query's feature, in 4 interleaved sums (one
// query head per KV head).
//       CHECK:       scf.for %{{.*}} step %c4{{.*}} iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
//       CHECK:         vector.load %[[TILES:.*]][%[[BLOCK:.*]], %c0, %[[HEAD0]], %{{.*}}] : memref<?x2x2x256xf32>, vector<16xf32>
//       CHECK:         vector.fma
//       CHECK:       scf.for %{{.*}} step %c4{{.*}} iter_args
//       CHECK:         vector.load %[[TILES]][%[[BLOCK]], %c0, %[[HEAD1]], %{{.*}}] : memref<?x2x2x256xf32>, vector<16xf32>
// A block's weights, a vector of its 16 scores at a time: slots outside the
// visible range masked (-inf for the max, 0 for the weight), the max and the
// sum reduced across lanes, exp as a polynomial (no libm call), 2^n from its
// bits.
//       CHECK:     %[[VISIBLE:.*]] = arith.andi %{{.*}}, %{{.*}} : vector<16xi1>
//       CHECK:     %[[MASKED:.*]] = arith.select %[[VISIBLE]], %{{.*}}, %{{.*}} : vector<16xi1>, vector<16xf32>
//       CHECK:     vector.reduction <maximumf>, %[[MASKED]] : vector<16xf32> into f32
//   CHECK-NOT:     math.exp
//       CHECK:     math.roundeven %{{.*}} : vector<16xf32>
//       CHECK:     math.fma
//       CHECK:     arith.shli %{{.*}} : vector<16xi32>
//       CHECK:     arith.bitcast %{{.*}} : vector<16xi32> to vector<16xf32>
//       CHECK:     %[[WEIGHT:.*]] = arith.select %[[VISIBLE]], %{{.*}}, %{{.*}} : vector<16xi1>, vector<16xf32>
//       CHECK:     vector.store %[[WEIGHT]], %{{.*}} : memref<2x16xf32>, vector<16xf32>
//       CHECK:     vector.reduction <add>, %[[WEIGHT]] fastmath<reassoc,contract> : vector<16xf32> into f32
//       CHECK:       scf.for
//       CHECK:         vector.load %{{.*}}[%[[BLOCK]], %c1{{(_[0-9]+)?}}, %[[HEAD0]], %{{.*}}, %{{.*}}] : memref<?x2x2x16x16xf32>, vector<16xf32>
//       CHECK:       scf.for
//       CHECK:         vector.load %{{.*}}[%[[BLOCK]], %c1{{(_[0-9]+)?}}, %[[HEAD1]], %{{.*}}, %{{.*}}] : memref<?x2x2x16x16xf32>, vector<16xf32>
// A prefill task takes every 4th row, one KV head of the run after the
// other, with the state of that head's query heads.
//       CHECK:     arith.xori
//       CHECK:     scf.for %{{.*}} = %c0{{.*}} to %c2
//       CHECK:       scf.for %{{.*}} step %c4
//       CHECK:         scf.for {{.*}} -> (f32, f32, vector<16xf32>)
//       CHECK:   func.func private @llmc_paged_attention_task_{{[0-9]+}}(%{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
//       CHECK:     call @llmc_paged_attention_
// The combine kernel folds a decode row's stored range states: vector.fma
// with no fast-math flags, then the division by the sum.
//       CHECK:   func.func private @llmc_paged_attention_combine_{{[0-9]+}}({{.*}}, %{{.*}}: memref<?x144xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:     vector.load %{{.*}} : memref<?x144xf32>, vector<16xf32>
//       CHECK:     vector.fma %{{.*}} : vector<16xf32>
//       CHECK:     arith.divf %{{.*}} : vector<16xf32>
//       CHECK:     vector.store
// The generated matmul runs over column tiles on the runtime's threads: the
// step passes a task function and a closure to parallel_for (field 4 of the
// host API); the task rebuilds the memrefs from the closure's pointers.
// GENERATED-LABEL: func.func @llmc_step
//       GENERATED:   %[[TASK:.*]] = constant @llmc_matmul_task_{{[0-9]+}} : (!llvm.ptr, i64, i64) -> ()
//       GENERATED:   %[[TASKPTR:.*]] = builtin.unrealized_conversion_cast %[[TASK]] : (!llvm.ptr, i64, i64) -> () to !llvm.ptr
//       GENERATED:   llvm.getelementptr %{{.*}}[0, 4]
//       GENERATED:   llvm.call %{{.*}}(%{{.*}}, %{{.*}}, %[[TASKPTR]], %{{.*}}) : !llvm.ptr, (!llvm.ptr, i64, !llvm.ptr, !llvm.ptr) -> ()
// The weight only the matmul reads is packed in panels (1-D).
//       GENERATED:   func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x32xf32>, %{{.*}}: memref<1024xf32>, %{{.*}}: index, %{{.*}}: index)
//       GENERATED:   func.func private @llmc_matmul_task_{{[0-9]+}}(%{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64)
//       GENERATED:     builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<?x32xf32>
//       GENERATED:     call @llmc_matmul_
func.func @paged(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
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

// -----

// The logits head's bias and epilogue (Granite's division by logits_scaling)
// run in the matmul that writes the step's output.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_epilogue_{{[0-9]+}}(%{{.*}}: memref<?x64xf32>, %{{.*}}: memref<64xf32>)
//       CHECK:     arith.divf %{{.*}}, %{{.*}} : f32
// GENERATED-LABEL: func.func @llmc_step
//       GENERATED:   func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x64xf32>, %{{.*}}: memref<2048xf32>, %{{.*}}: memref<64xf32>, %{{.*}}: index, %{{.*}}: index)
//       GENERATED:     arith.divf %{{.*}}, %{{.*}} : vector<16xf32>
func.func @scaled_logits(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
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
  %b = llm.constant dense<1.000000e-01> : tensor<64xf32>
  %15 = llm.logits %14, %4 bias(%b) : (tensor<?x32xf32>, tensor<32x64xf32>, tensor<64xf32>) -> tensor<?x64xf32> {
  ^bb0(%logit: f32):
    %c = arith.constant 8.000000e+00 : f32
    %d = arith.divf %logit, %c : f32
    llm.yield %d : f32
  }
  return %15 : tensor<?x64xf32>
}

// -----

// A sliding window starts each row's walk over the blocks at the window's
// first key (a max with 0 of position + 1 - window); a softcap caps each
// score with tanh before the online softmax. Every layer (the one) has a
// window: the manifest's attention_window says the widest, so the runtime
// gives back the blocks out of it.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   llmc.step_info = {attention_window = 4 : i64,
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_paged_attention_
//       CHECK:     arith.maxsi
//       CHECK:     math.tanh
// GENERATED-LABEL: func.func @llmc_step
func.func @windowed_softcapped(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
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
  %12 = llm.paged_attention %9, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 0>, scale = 2.500000e-01 : f32, sliding_window = 4 : i64, softcap = 3.000000e+01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %15 = llm.logits %14, %4 : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}

// -----

// ALiBi: a vector of the slopes, one read at each query head, times each score
// vector's slots from the block's first key less the row's position, added
// to the scores as they are loaded for the block's max.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_paged_attention_
//       CHECK:     arith.constant dense<[2.500000e-01, 6.250000e-02]> : vector<2xf32>
//       CHECK:     arith.constant dense<[0.000000e+00, 1.000000e+00, {{.*}}, 1.500000e+01]> : vector<16xf32>
//       CHECK:     vector.extract %{{.*}}[%{{.*}}] : f32 from vector<2xf32>
//       CHECK:     vector.fma
// GENERATED-LABEL: func.func @llmc_step
func.func @alibi(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
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
  %12 = llm.paged_attention %9, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 0>, alibi_slopes = array<f32: 2.500000e-01, 6.250000e-02>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %15 = llm.logits %14, %4 : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}

// -----

// One layer sees every key: no block is out of every window, and
// attention_window is 0.
// CHECK-LABEL: module attributes
//  CHECK-SAME:   llmc.step_info = {attention_window = 0 : i64,
// CHECK-LABEL: func.func @llmc_step
// GENERATED-LABEL: func.func @llmc_step
func.func @one_layer_unwindowed(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<2x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %2 = llm.constant dense<1.000000e+00> : tensor<8xf32>
  %3 = llm.constant dense<1.000000e-01> : tensor<32x32xf32>
  %4 = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %5 = llm.embedding %1, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %6 = llm.linear %5, %3 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %7 = llm.split_heads %6 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %8 = llm.split_heads %5 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %9 = llm.rope %7, %arg1, %2 {llmc.workspace_offsets = array<i64: 2048>} : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %10 = llm.rope %8, %arg1, %2 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %11 = llm.paged_kv_write %arg7, %10, %8, %arg5 {layer = 0 : i64} : (tensor<2x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<2x?x2x2x16x16xf32>
  %12 = llm.paged_attention %9, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 0>, scale = 2.500000e-01 : f32, sliding_window = 4 : i64, softcap = 3.000000e+01 : f32} : (tensor<?x2x16xf32>, tensor<2x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %16 = llm.paged_attention %9, %11, %arg4, %arg3, %arg2 {layer = 1 : i64, llmc.workspace_offsets = array<i64: 0>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<2x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %13 = llm.merge_heads %16 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %15 = llm.logits %14, %4 : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}

// -----

// Every layer calls the same KV-write and attention kernels, each on its own
// [blocks, 2, kv_heads, 16, 16] view of the pool, layer x blocks x 4096 bytes
// in: one kernel of each, whatever the number of layers.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   llvm.mlir.constant(0 : i64)
//       CHECK:   %[[LAYER0:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<5 x i64>, array<5 x i64>)> to memref<?x2x2x16x16xf32>
//       CHECK:   call @llmc_paged_kv_write_[[WRITE:[0-9]+]](%[[LAYER0]],
//       CHECK:   constant @llmc_paged_attention_task_[[ATTENTION:[0-9]+]]
//       CHECK:   llvm.mlir.constant(4096 : i64)
//       CHECK:   %[[LAYER1:.*]] = builtin.unrealized_conversion_cast %{{.*}} : !llvm.struct<(ptr, ptr, i64, array<5 x i64>, array<5 x i64>)> to memref<?x2x2x16x16xf32>
//       CHECK:   call @llmc_paged_kv_write_[[WRITE]](%[[LAYER1]],
//       CHECK:   constant @llmc_paged_attention_task_[[ATTENTION]]
//       CHECK:   func.func private @llmc_paged_kv_write_
//   CHECK-NOT:   func.func private @llmc_paged_kv_write_
func.func @two_layers(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<2x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %q = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool0 = llm.paged_kv_write %arg7, %q, %q, %arg5 {layer = 0 : i64} : (tensor<2x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<2x?x2x2x16x16xf32>
  %a0 = llm.paged_attention %q, %pool0, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 1024>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<2x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %pool1 = llm.paged_kv_write %pool0, %a0, %a0, %arg5 {layer = 1 : i64} : (tensor<2x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<2x?x2x2x16x16xf32>
  %a1 = llm.paged_attention %a0, %pool1, %arg4, %arg3, %arg2 {layer = 1 : i64, llmc.workspace_offsets = array<i64: 2048>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<2x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %m = llm.merge_heads %a1 : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %g = llm.gather_rows %m, %arg6 {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %logits = llm.logits %g, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
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

module {
  // expected-error @+1 {{has no memory plan: run llm-plan-memory first}}
  func.func @unplanned(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}) -> tensor<?xi32> {
    return %arg0 : tensor<?xi32>
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

// A task reads as many KV heads as its query heads' accumulators allow (64
// vectors): here each KV head has 48 query heads of one vector, so a run is
// one KV head, and the 2 KV heads make 2 runs: (sequence, run, split) tasks
// and a block's scores in a [48, 16] buffer. The parts hold 2 runs x 4
// ranges x 48 heads x (16 + 2) floats a sequence.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   memref.view %{{.*}} : memref<?xi8> to memref<?x6912xf32>
//       CHECK:   arith.muli %{{.*}}, %c8{{.*}} : index
//       CHECK:   constant @llmc_paged_attention_task_{{[0-9]+}}
//       CHECK:   arith.muli %{{.*}}, %c2{{.*}} : index
//       CHECK:   constant @llmc_paged_attention_combine_task_{{[0-9]+}}
//       CHECK:   func.func private @llmc_paged_attention_
//       CHECK:     memref.alloca() : memref<48x16xf32>
//       CHECK:     scf.for {{.*}} -> (f32, {{.*}}, vector<16xf32>)
//   CHECK-NOT:     memref.alloca
//       CHECK:     vector.load %{{.*}} : memref<?x2x2x256xf32>, vector<16xf32>
//   CHECK-NOT:     vector.load %{{.*}} : memref<?x2x2x256xf32>, vector<16xf32>
//       CHECK:     vector.load %{{.*}} : memref<?x2x2x16x16xf32>, vector<16xf32>
//       CHECK:   func.func private @llmc_paged_attention_task_
// GENERATED-LABEL: func.func @llmc_step
func.func @many_query_heads(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 100352 : i64} {
  %1 = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %3 = llm.constant dense<1.000000e-01> : tensor<32x1536xf32>
  %4 = llm.constant dense<2.000000e-01> : tensor<1536x64xf32>
  %5 = llm.embedding %1, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %6 = llm.linear %5, %3 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x32xf32>, tensor<32x1536xf32>) -> tensor<?x1536xf32>
  %7 = llm.split_heads %6 {num_heads = 96 : i64} : (tensor<?x1536xf32>) -> tensor<?x96x16xf32>
  %8 = llm.split_heads %5 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %11 = llm.paged_kv_write %arg7, %8, %8, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %7, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 50176>, scale = 2.500000e-01 : f32} : (tensor<?x96x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x96x16xf32>
  %13 = llm.merge_heads %12 : (tensor<?x96x16xf32>) -> tensor<?x1536xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x1536xf32>, tensor<?xi32>) -> tensor<?x1536xf32>
  %15 = llm.logits %14, %4 : (tensor<?x1536xf32>, tensor<1536x64xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}

// -----

// A mixture of experts is five kernels, with the picks, their plan, the
// activations and the down products in the scratch: route (on the runtime's
// threads: a pass over the 4 experts per pick, carrying the best logit and
// expert), plan (on the calling thread: a counting sort of the picks by
// expert), experts (a task per run of intermediate features and expert:
// here one run of 8, 4 tasks, each reading its expert's run of picks), down
// (a task per run of output columns and expert: one run of 32, 4 tasks,
// tiled by picks as experts is) and sum (each row's down products added
// slot by slot). The weights are read as [experts * out, in] rows, by the
// matmul's dot tiles.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   constant @llmc_moe_route_task_{{[0-9]+}}
//       CHECK:   call @llmc_moe_plan_{{[0-9]+}}
//       CHECK:   constant @llmc_moe_experts_task_{{[0-9]+}}
//  CHECK-NEXT:   builtin.unrealized_conversion_cast
//  CHECK-NEXT:   arith.index_cast %c4{{.*}} : index to i64
//       CHECK:   constant @llmc_moe_down_task_{{[0-9]+}}
//  CHECK-NEXT:   builtin.unrealized_conversion_cast
//  CHECK-NEXT:   arith.index_cast %c4{{.*}} : index to i64
//       CHECK:   constant @llmc_moe_sum_task_{{[0-9]+}}
//       CHECK:   func.func private @llmc_moe_route_{{[0-9]+}}(%[[LOGITS:[^:]*]]: memref<?x4xf32>, %[[PICKS:[^:]*]]: memref<?x2xi32>, %{{[^:]*}}: memref<?x2xf32>,
//       CHECK:       scf.for %{{.*}} = %{{.*}} to %c4{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f32, index)
//       CHECK:         memref.load %[[LOGITS]]
//       CHECK:       memref.store %{{.*}}, %[[PICKS]]
// The plan counts each expert's picks, turns the counts into offsets, then
// puts each pick in its expert's run and records where.
//       CHECK:   func.func private @llmc_moe_plan_{{[0-9]+}}(%[[CHOSEN:[^:]*]]: memref<?x2xi32>, %{{[^:]*}}: memref<?x2xf32>, %[[ORDER:[^:]*]]: memref<?x1xi32>, %[[POSITION:[^:]*]]: memref<?x1xi32>, %[[OFFSETS:[^:]*]]: memref<?x5xi32>, %[[CURSOR:[^:]*]]: memref<?x4xi32>, %{{[^:]*}}: memref<?x8xf32>, %{{[^:]*}}: memref<?x32xf32>)
//       CHECK:     memref.store %{{.*}}, %[[OFFSETS]]
//       CHECK:     memref.load %[[CHOSEN]]
//       CHECK:     memref.store %{{.*}}, %[[CURSOR]]
//       CHECK:     memref.store %{{.*}}, %[[ORDER]][%[[AT:.*]], %{{.*}}]
//  CHECK-NEXT:     %[[AT32:.*]] = arith.index_cast %[[AT]] : index to i32
//  CHECK-NEXT:     memref.store %[[AT32]], %[[POSITION]]
//       CHECK:   func.func private @llmc_moe_experts_{{[0-9]+}}(%{{[^:]*}}: memref<?x2xi32>, %{{[^:]*}}: memref<?x2xf32>, %[[ORDER:[^:]*]]: memref<?x1xi32>, %{{[^:]*}}: memref<?x1xi32>, %[[OFFSETS:[^:]*]]: memref<?x5xi32>, %{{[^:]*}}: memref<?x4xi32>, %{{[^:]*}}: memref<?x8xf32>, %{{[^:]*}}: memref<?x32xf32>, %[[X:[^:]*]]: memref<?x32xf32>, %[[GATE:[^:]*]]: memref<32x32xf32>, %{{[^:]*}}: memref<32x32xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:     %[[EXPERT:.*]] = arith.remsi %{{.*}}, %c4
//       CHECK:     memref.load %[[OFFSETS]][%{{.*}}, %[[EXPERT]]]
// Tiles of 4 picks by 4 features: 16 accumulators, each 16 values of a
// pick's row and of a weight row loaded once.
//       CHECK:       memref.load %[[ORDER]]
//       CHECK:           scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
//       CHECK:             vector.load %[[X]]
//       CHECK:             vector.load %[[GATE]][%{{.*}}, %{{.*}}] : memref<32x32xf32>, vector<16xf32>
// Down: the expert's picks from its offset, tiles of 4 picks by 4 columns,
// each product stored in the pick's row of the products.
//       CHECK:   func.func private @llmc_moe_down_{{[0-9]+}}(%{{[^:]*}}: memref<?x2xi32>, %{{[^:]*}}: memref<?x2xf32>, %{{[^:]*}}: memref<?x1xi32>, %{{[^:]*}}: memref<?x1xi32>, %[[OFFSETS:[^:]*]]: memref<?x5xi32>, %{{[^:]*}}: memref<?x4xi32>, %[[ACTIVATIONS:[^:]*]]: memref<?x8xf32>, %[[PRODUCTS:[^:]*]]: memref<?x32xf32>, %[[DOWN:[^:]*]]: memref<128x8xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:     %[[EXPERT:.*]] = arith.remsi %{{.*}}, %c4
//       CHECK:     memref.load %[[OFFSETS]][%{{.*}}, %[[EXPERT]]]
//       CHECK:           scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
//       CHECK:             vector.load %[[ACTIVATIONS]]
//       CHECK:             vector.load %[[DOWN]]
//       CHECK:         memref.store %{{.*}}, %[[PRODUCTS]]
// Sum: the positions of the row's two picks, then per column their product
// rows added to zero and the sum stored once.
//       CHECK:   func.func private @llmc_moe_sum_{{[0-9]+}}(%{{[^:]*}}: memref<?x2xi32>, %{{[^:]*}}: memref<?x2xf32>, %{{[^:]*}}: memref<?x1xi32>, %[[POSITION:[^:]*]]: memref<?x1xi32>, %{{[^:]*}}: memref<?x5xi32>, %{{[^:]*}}: memref<?x4xi32>, %{{[^:]*}}: memref<?x8xf32>, %[[PRODUCTS:[^:]*]]: memref<?x32xf32>, %[[OUT:[^:]*]]: memref<?x32xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:       memref.load %[[POSITION]]
//       CHECK:       memref.load %[[POSITION]]
//       CHECK:         memref.load %[[PRODUCTS]]
//       CHECK:         memref.load %[[PRODUCTS]]
//       CHECK:         memref.store %{{.*}}, %[[OUT]]
func.func @moe(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %router = llm.constant dense<1.000000e-01> : tensor<32x4xf32>
  %gate = llm.constant dense<1.000000e-01> : tensor<4x8x32xf32>
  %up = llm.constant dense<2.000000e-01> : tensor<4x8x32xf32>
  %down = llm.constant dense<3.000000e-01> : tensor<4x32x8xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %heads = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %heads, %heads, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %attention = llm.paged_attention %heads, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 1024>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %merged = llm.merge_heads %attention : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %logits = llm.linear %merged, %router {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<32x4xf32>) -> tensor<?x4xf32>
  %y = llm.moe %merged, %logits, %gate, %up, %down {llmc.workspace_offsets = array<i64: 2048>, normalize_top_k, top_k = 2 : i64} : (tensor<?x32xf32>, tensor<?x4xf32>, tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<4x32x8xf32>) -> tensor<?x32xf32>
  %last = llm.gather_rows %y, %arg6 {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %out = llm.logits %last, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// PhiMoE's sparsemixer in the route kernel: each slot's weight is 1 over a
// sum of exp(r - m) (the inline polynomial) over the experts it sees, those
// with (m - r) / max(|r|, m) not above the threshold; the second slot leaves
// the first's expert out.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_moe_route_{{[0-9]+}}(%[[LOGITS:[^:]*]]: memref<?x4xf32>, %[[PICKS:[^:]*]]: memref<?x2xi32>, %[[WEIGHTS:[^:]*]]: memref<?x2xf32>,
//       CHECK:       memref.store %{{.*}}, %[[PICKS]]
//       CHECK:         math.absf
//       CHECK:         %[[THRESHOLD:.*]] = arith.constant 2.000000e-02 : f32
//       CHECK:         arith.cmpf ogt, %{{.*}}, %[[THRESHOLD]] : f32
//       CHECK:         math.roundeven
//       CHECK:       memref.store %{{.*}}, %[[PICKS]]
//       CHECK:         math.absf
//       CHECK:         arith.cmpf ogt
//       CHECK:         arith.cmpi eq
//       CHECK:         arith.ori
//       CHECK:       memref.store %{{.*}}, %[[WEIGHTS]]
func.func @moe_sparse_mixer(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %router = llm.constant dense<1.000000e-01> : tensor<32x4xf32>
  %gate = llm.constant dense<1.000000e-01> : tensor<4x8x32xf32>
  %up = llm.constant dense<2.000000e-01> : tensor<4x8x32xf32>
  %down = llm.constant dense<3.000000e-01> : tensor<4x32x8xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %heads = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %heads, %heads, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %attention = llm.paged_attention %heads, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 1024>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %merged = llm.merge_heads %attention : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %logits = llm.linear %merged, %router {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<32x4xf32>) -> tensor<?x4xf32>
  %y = llm.moe %merged, %logits, %gate, %up, %down {llmc.workspace_offsets = array<i64: 2048>, sparse_mixer_threshold = 2.0e-02 : f32, top_k = 2 : i64} : (tensor<?x32xf32>, tensor<?x4xf32>, tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<4x32x8xf32>) -> tensor<?x32xf32>
  %last = llm.gather_rows %y, %arg6 {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %out = llm.logits %last, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// DeepSeek-V3's routing in the route kernel: the selection bias is one more
// argument; each of the 2 groups scores its two best choices (sigmoid plus
// bias) into a group table, the best group is marked kept, and the experts
// of the other group choose 0. The weights are the chosen sigmoids over
// their sum plus epsilon, times the routed scale.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_moe_route_{{[0-9]+}}(%[[LOGITS:[^:]*]]: memref<?x4xf32>, %[[PICKS:[^:]*]]: memref<?x2xi32>, %[[WEIGHTS:[^:]*]]: memref<?x2xf32>, %[[BIAS:[^:]*]]: memref<4xf32>,
//       CHECK:     %[[GROUPS:.*]] = memref.alloca() : memref<2xf32>
//       CHECK:     %[[KEPT:.*]] = memref.alloca() : memref<2xf32>
//       CHECK:           memref.load %[[BIAS]]
//       CHECK:         memref.store %{{.*}}, %[[GROUPS]]
//       CHECK:         memref.store %{{.*}}, %[[KEPT]]
//       CHECK:         memref.load %[[GROUPS]]
//       CHECK:       memref.store %{{.*}}, %[[KEPT]]
//       CHECK:         memref.load %[[KEPT]]
//       CHECK:         memref.load %[[BIAS]]
//       CHECK:         arith.select
//       CHECK:       memref.store %{{.*}}, %[[PICKS]]
//       CHECK:       arith.constant 9.99999968E-21 : f32
//       CHECK:       arith.constant 2.500000e+00 : f32
//       CHECK:       memref.store %{{.*}}, %[[WEIGHTS]]
func.func @moe_scored_routing(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %router = llm.constant dense<1.000000e-01> : tensor<32x4xf32>
  %gate = llm.constant dense<1.000000e-01> : tensor<4x8x32xf32>
  %up = llm.constant dense<2.000000e-01> : tensor<4x8x32xf32>
  %down = llm.constant dense<3.000000e-01> : tensor<4x32x8xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %bias = llm.constant dense<[1.000000e-01, -1.000000e-01, 2.000000e-01, 0.000000e+00]> : tensor<4xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %heads = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %heads, %heads, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %attention = llm.paged_attention %heads, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 1024>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %merged = llm.merge_heads %attention : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %logits = llm.linear %merged, %router {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<32x4xf32>) -> tensor<?x4xf32>
  %y = llm.moe %merged, %logits, %gate, %up, %down selection_bias(%bias) {expert_groups = 2 : i64, llmc.workspace_offsets = array<i64: 2048>, normalize_epsilon = 1.0e-20 : f32, normalize_top_k, routed_scale = 2.5 : f32, sigmoid_scores, top_k = 2 : i64, top_k_groups = 1 : i64} : (tensor<?x32xf32>, tensor<?x4xf32>, tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<4x32x8xf32>, tensor<4xf32>) -> tensor<?x32xf32>
  %last = llm.gather_rows %y, %arg6 {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %out = llm.logits %last, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// With exclude_hidden_groups the experts of the groups not kept choose -inf
// (transformers 5's masked_fill), not 0.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_moe_route_{{[0-9]+}}({{.*}}, %[[BIAS:[^:]*]]: memref<4xf32>,
//       CHECK:       memref.store %{{.*}}, %[[KEPT:.*]][%{{.*}}] : memref<2xf32>
//       CHECK:         memref.load %[[KEPT]]
//       CHECK:         memref.load %[[BIAS]]
//  CHECK-NEXT:         arith.addf
//  CHECK-NEXT:         %[[HIDDEN:.*]] = arith.constant 0xFF800000 : f32
//  CHECK-NEXT:         arith.select %{{.*}}, %{{.*}}, %[[HIDDEN]] : f32
func.func @moe_groups_excluded(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %router = llm.constant dense<1.000000e-01> : tensor<32x4xf32>
  %gate = llm.constant dense<1.000000e-01> : tensor<4x8x32xf32>
  %up = llm.constant dense<2.000000e-01> : tensor<4x8x32xf32>
  %down = llm.constant dense<3.000000e-01> : tensor<4x32x8xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %bias = llm.constant dense<[1.000000e-01, -1.000000e-01, 2.000000e-01, 0.000000e+00]> : tensor<4xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %heads = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %heads, %heads, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %attention = llm.paged_attention %heads, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 1024>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %merged = llm.merge_heads %attention : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %logits = llm.linear %merged, %router {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<32x4xf32>) -> tensor<?x4xf32>
  %y = llm.moe %merged, %logits, %gate, %up, %down selection_bias(%bias) {exclude_hidden_groups, expert_groups = 2 : i64, llmc.workspace_offsets = array<i64: 2048>, normalize_epsilon = 1.0e-20 : f32, normalize_top_k, routed_scale = 2.5 : f32, sigmoid_scores, top_k = 2 : i64, top_k_groups = 1 : i64} : (tensor<?x32xf32>, tensor<?x4xf32>, tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<4x32x8xf32>, tensor<4xf32>) -> tensor<?x32xf32>
  %last = llm.gather_rows %y, %arg6 {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %out = llm.logits %last, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}


// -----

// ERNIE 4.5's routing in the route kernel: softmax scores (exp, expanded
// to its polynomial, over the row's largest logit) plus the selection bias
// choose the experts, and the chosen scores' sum is floored at
// normalize_min before it divides them.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_moe_route_{{[0-9]+}}(%[[LOGITS:[^:]*]]: memref<?x4xf32>, %[[PICKS:[^:]*]]: memref<?x2xi32>, %[[WEIGHTS:[^:]*]]: memref<?x2xf32>, %[[BIAS:[^:]*]]: memref<4xf32>,
//   CHECK-NOT:     memref.alloca
//       CHECK:         memref.load %[[LOGITS]]
//       CHECK:         arith.maximumf
//       CHECK:         math.roundeven
//       CHECK:         memref.load %[[BIAS]]
//       CHECK:       memref.store %{{.*}}, %[[PICKS]]
//       CHECK:       %[[FLOOR:.*]] = arith.constant 1.000000e-03 : f32
//       CHECK:       arith.maximumf %{{.*}}, %[[FLOOR]] : f32
//       CHECK:       arith.divf
//       CHECK:       memref.store %{{.*}}, %[[WEIGHTS]]
func.func @moe_softmax_selection_bias(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %router = llm.constant dense<1.000000e-01> : tensor<32x4xf32>
  %gate = llm.constant dense<1.000000e-01> : tensor<4x8x32xf32>
  %up = llm.constant dense<2.000000e-01> : tensor<4x8x32xf32>
  %down = llm.constant dense<3.000000e-01> : tensor<4x32x8xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %bias = llm.constant dense<[1.000000e-01, -1.000000e-01, 2.000000e-01, 0.000000e+00]> : tensor<4xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %heads = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %heads, %heads, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %attention = llm.paged_attention %heads, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 1024>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %merged = llm.merge_heads %attention : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %logits = llm.linear %merged, %router {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<32x4xf32>) -> tensor<?x4xf32>
  %y = llm.moe %merged, %logits, %gate, %up, %down selection_bias(%bias) {llmc.workspace_offsets = array<i64: 2048>, normalize_min = 1.0e-3 : f32, normalize_top_k, top_k = 2 : i64} : (tensor<?x32xf32>, tensor<?x4xf32>, tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<4x32x8xf32>, tensor<4xf32>) -> tensor<?x32xf32>
  %last = llm.gather_rows %y, %arg6 {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %out = llm.logits %last, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// gpt-oss's layer: attention sinks, a constant per query head that the
// softmax's final sum takes in (a vector of them, read at the head), and
// experts with biases and the clamped swiglu: the gate and up kernels read
// their biases and clamp, the down kernel reads its bias.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_paged_attention_
//       CHECK:     arith.constant dense<[5.000000e-01, -1.000000e+00]> : vector<2xf32>
//       CHECK:     vector.extract %{{.*}}[%{{.*}}] : f32 from vector<2xf32>
//       CHECK:   func.func private @llmc_moe_experts_{{[0-9]+}}(
//  CHECK-SAME:     %[[GATE_BIAS:[^:]*]]: memref<4x8xf32>, %[[UP_BIAS:[^:]*]]: memref<4x8xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:     memref.load %[[GATE_BIAS]]
//       CHECK:     memref.load %[[UP_BIAS]]
//       CHECK:     arith.minimumf
//       CHECK:     arith.maximumf
//       CHECK:   func.func private @llmc_moe_down_{{[0-9]+}}(
//  CHECK-SAME:     %[[DOWN_BIAS:[^:]*]]: memref<4x32xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:     memref.load %[[DOWN_BIAS]]
func.func @sinks_and_biased_experts(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %router = llm.constant dense<1.000000e-01> : tensor<32x4xf32>
  %gate = llm.constant dense<1.000000e-01> : tensor<4x8x32xf32>
  %up = llm.constant dense<2.000000e-01> : tensor<4x8x32xf32>
  %down = llm.constant dense<3.000000e-01> : tensor<4x32x8xf32>
  %inter_bias = llm.constant dense<1.000000e-01> : tensor<4x8xf32>
  %hidden_bias = llm.constant dense<2.000000e-01> : tensor<4x32xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<32x64xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %heads = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %heads, %heads, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %attention = llm.paged_attention %heads, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 1024>, scale = 2.500000e-01 : f32, sinks = array<f32: 0.5, -1.0>} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %merged = llm.merge_heads %attention : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %logits = llm.linear %merged, %router {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<32x4xf32>) -> tensor<?x4xf32>
  %y = llm.moe %merged, %logits, %gate, %up, %down gate_bias(%inter_bias) up_bias(%inter_bias) down_bias(%hidden_bias) {llmc.workspace_offsets = array<i64: 2048>, normalize_top_k, swiglu_alpha = 1.702 : f32, swiglu_limit = 7.0 : f32, top_k = 2 : i64} : (tensor<?x32xf32>, tensor<?x4xf32>, tensor<4x8x32xf32>, tensor<4x8x32xf32>, tensor<4x32x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x32xf32>) -> tensor<?x32xf32>
  %last = llm.gather_rows %y, %arg6 {llmc.workspace_offsets = array<i64: 0>} : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %out = llm.logits %last, %head : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
  return %out : tensor<?x64xf32>
}

// -----

// Multi-head latent attention: concat_heads copies each head's lhs features
// and then the rhs's (the one rotary head for every head); the values are
// narrower (8) than the keys (16): the write fills the first 8 of a value
// row, and attention accumulates and stores 8 features a head (2 heads, a
// result row of 16).
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_concat_heads_{{[0-9]+}}(%[[L:[^:]*]]: memref<?x24xf32>, %[[R:[^:]*]]: memref<?x4xf32>, %[[O:[^:]*]]: memref<?x32xf32>)
//       CHECK:     memref.load %[[L]]
//       CHECK:     memref.store %{{.*}}, %[[O]]
//       CHECK:     memref.load %[[R]]
//       CHECK:     memref.store %{{.*}}, %[[O]]
//       CHECK:   func.func private @llmc_paged_kv_write_{{[0-9]+}}(%{{[^:]*}}: memref<?x2x2x16x16xf32>, %{{[^:]*}}: memref<?x32xf32>, %[[V:[^:]*]]: memref<?x16xf32, strided<[20, 1]>>,
//       CHECK:       scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %c1
//       CHECK:         memref.load %[[V]]
//       CHECK:   func.func private @llmc_paged_attention_{{[0-9]+}}(%{{[^:]*}}: memref<?x32xf32>, {{.*}}, %{{[^:]*}}: memref<?x16xf32>, %{{[^:]*}}: memref<?x{{[0-9]+}}xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:       vector.store %{{.*}} : memref<?x16xf32>, vector<8xf32>
func.func @latent_attention(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 3072 : i64} {
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
  %11 = llm.paged_kv_write %arg7, %kk, %nope, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x8xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %12 = llm.paged_attention %qh, %11, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 0>, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x8xf32>
  %13 = llm.merge_heads %12 : (tensor<?x2x8xf32>) -> tensor<?x16xf32>
  %14 = llm.gather_rows %13, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  %15 = llm.logits %14, %4 : (tensor<?x16xf32>, tensor<16x64xf32>) -> tensor<?x64xf32>
  return %15 : tensor<?x64xf32>
}

// -----

// llm.head_linear (multi-head latent attention's per-head up-projections):
// each task of rows runs, for each head, each row of the head's weight
// ([2, 8, 4]) scaled by the row's feature into the head's 4 results.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_head_linear_{{[0-9]+}}(%[[X:[^:]*]]: memref<?x16xf32>, %[[W:[^:]*]]: memref<2x8x4xf32>, %[[O:[^:]*]]: memref<?x8xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:     memref.load %[[X]]
//       CHECK:     memref.load %[[W]]
//       CHECK:     memref.load %[[O]]
//       CHECK:     memref.store %{{.*}}, %[[O]]
//       CHECK:   func.func private @llmc_head_linear_task
func.func @head_linear(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x4xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 2048 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x16xf32>
  %w = llm.constant dense<2.500000e-01> : tensor<2x8x4xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<8x64xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  %h = llm.split_heads %x {num_heads = 2 : i64} : (tensor<?x16xf32>) -> tensor<?x2x8xf32>
  %o = llm.head_linear %h, %w {llmc.workspace_offsets = array<i64: 512>} : (tensor<?x2x8xf32>, tensor<2x8x4xf32>) -> tensor<?x2x4xf32>
  %a = llm.paged_attention %o, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 768>, scale = 5.0e-01 : f32} : (tensor<?x2x4xf32>, tensor<1x?x2x1x16x4xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x4xf32>
  %m = llm.merge_heads %a : (tensor<?x2x4xf32>) -> tensor<?x8xf32>
  %rows = llm.gather_rows %m, %arg6 {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x8xf32>, tensor<?xi32>) -> tensor<?x8xf32>
  %logits = llm.logits %rows, %head : (tensor<?x8xf32>, tensor<8x64xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// A norm whose weight has a row per head (Cohere's q/k LayerNorm): each run
// of 8 features is normalised on its own and scaled by its row of the
// [2, 8] weight.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_layer_norm_{{[0-9]+}}(%[[X:[^:]*]]: memref<?x16xf32>, %[[W:[^:]*]]: memref<2x8xf32>, %[[O:[^:]*]]: memref<?x16xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:     scf.for %{{[^ ]*}} =
//       CHECK:       scf.for %[[G:[^ ]*]] =
//       CHECK:         memref.load %[[W]][%[[G]], %{{.*}}] : memref<2x8xf32>
//       CHECK:       memref.store %{{.*}}, %[[O]]
func.func @layer_norm_per_head(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x4xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 2048 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x16xf32>
  %w = llm.constant dense<2.500000e-01> : tensor<2x8xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<16x64xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  %n = llm.layer_norm %x, %w {epsilon = 1.0e-5 : f32, llmc.workspace_offsets = array<i64: 512>} : (tensor<?x16xf32>, tensor<2x8xf32>) -> tensor<?x16xf32>
  %h = llm.split_heads %n {num_heads = 4 : i64} : (tensor<?x16xf32>) -> tensor<?x4x4xf32>
  %a = llm.paged_attention %h, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 1024>, scale = 5.0e-01 : f32} : (tensor<?x4x4xf32>, tensor<1x?x2x1x16x4xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x4xf32>
  %m = llm.merge_heads %a : (tensor<?x4x4xf32>) -> tensor<?x16xf32>
  %rows = llm.gather_rows %m, %arg6 {llmc.workspace_offsets = array<i64: 1536>} : (tensor<?x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  %logits = llm.logits %rows, %head : (tensor<?x16xf32>, tensor<16x64xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// An elementwise input with one value per row (Qwen2-MoE's sigmoid gate
// scaling its shared expert's rows): every column of a row reads the row's
// single value, at column 0.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_elementwise_{{[0-9]+}}(%[[X:[^:]*]]: memref<?x16xf32>, %[[G:[^:]*]]: memref<?x1xf32>, %[[O:[^:]*]]: memref<?x16xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:     scf.for %[[ROW:[^ ]*]] =
//       CHECK:       scf.for %[[COL:[^ ]*]] =
//       CHECK:         memref.load %[[X]][%[[ROW]], %[[COL]]] : memref<?x16xf32>
//       CHECK:         %[[ZERO:.*]] = arith.constant 0 : index
//  CHECK-NEXT:         memref.load %[[G]][%[[ROW]], %[[ZERO]]] : memref<?x1xf32>
//       CHECK:         arith.mulf
//       CHECK:         memref.store %{{.*}}, %[[O]][%[[ROW]], %[[COL]]]
func.func @per_row_input(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x1x16x4xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> attributes {llmc.max_num_batched_tokens = 8 : i64, llmc.max_num_seqs = 2 : i64, llmc.workspace_bytes = 2048 : i64} {
  %table = llm.constant dense<5.000000e-01> : tensor<64x16xf32>
  %wg = llm.constant dense<2.500000e-01> : tensor<16x1xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<16x64xf32>
  %x = llm.embedding %table, %arg0 {llmc.workspace_offsets = array<i64: 0>} : (tensor<64x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  %g = llm.linear %x, %wg {llmc.workspace_offsets = array<i64: 512>} : (tensor<?x16xf32>, tensor<16x1xf32>) -> tensor<?x1xf32>
  %y = llm.elementwise %x, %g {llmc.workspace_offsets = array<i64: 1024>} : (tensor<?x16xf32>, tensor<?x1xf32>) -> tensor<?x16xf32> {
  ^bb0(%v: f32, %s: f32):
    %p = arith.mulf %v, %s : f32
    llm.yield %p : f32
  }
  %h = llm.split_heads %y {num_heads = 4 : i64} : (tensor<?x16xf32>) -> tensor<?x4x4xf32>
  %a = llm.paged_attention %h, %arg7, %arg4, %arg3, %arg2 {layer = 0 : i64, llmc.workspace_offsets = array<i64: 0>, scale = 5.0e-01 : f32} : (tensor<?x4x4xf32>, tensor<1x?x2x1x16x4xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x4xf32>
  %m = llm.merge_heads %a : (tensor<?x4x4xf32>) -> tensor<?x16xf32>
  %rows = llm.gather_rows %m, %arg6 {llmc.workspace_offsets = array<i64: 1536>} : (tensor<?x16xf32>, tensor<?xi32>) -> tensor<?x16xf32>
  %logits = llm.logits %rows, %head : (tensor<?x16xf32>, tensor<16x64xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}
