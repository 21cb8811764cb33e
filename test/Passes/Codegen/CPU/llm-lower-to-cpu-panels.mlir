// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cpu)' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-plan-memory{max-num-batched-tokens=8 max-num-seqs=2}),llm-lower-to-cpu{weight-dtype=auto})' | FileCheck %s --check-prefix=AUTO

// A weight only its matmul reads is stored in panels of 48 columns (1-D)
// and multiplied as outer products: each k loads the panel's 3 vectors,
// prefetches 3 lines of the next panel (at progress x 16 / rows of the
// block, the division a multiply by 2^32 / rows and a shift, so the block's
// tiles share the panel) and broadcasts x[r, k] of 8 rows into 24
// accumulators; one tile of 1 to 7 rows takes the rows left over (with 2
// rows, a 2-row tile reads the panel once where two 1-row tiles read it
// twice). The tied table of the
// embedding and the logits head is stored once, in panels: the embedding
// gathers a token's column from them.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   %[[TABLE:.*]] = memref.view %{{.*}} : memref<?xi8> to memref<2048xf32>
//       CHECK:   call @llmc_panel_embedding_{{[0-9]+}}(%[[TABLE]],
//       CHECK:   memref.view %{{.*}} : memref<?xi8> to memref<3072xf32>
//       CHECK:   func.func private @llmc_panel_embedding_{{[0-9]+}}(%[[PANELS:.*]]: memref<2048xf32>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x32xf32>)
//       CHECK:     memref.load %[[PANELS]]
//       CHECK:   func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x96xf32>, %[[W:.*]]: memref<3072xf32>, %{{.*}}: index, %{{.*}}: index)
//       CHECK:     scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
//   CHECK-COUNT-3:   vector.load %[[W]][%{{.*}}] : memref<3072xf32>, vector<16xf32>
//       CHECK:       arith.shrui %{{.*}}, %c32
//       CHECK:       memref.prefetch %[[W]][%{{.*}}], read, locality<2>, data : memref<3072xf32>
//       CHECK:       arith.shrui %{{.*}}, %c32
//       CHECK:       memref.prefetch %[[W]][%{{.*}}], read, locality<2>, data : memref<3072xf32>
//       CHECK:       arith.shrui %{{.*}}, %c32
//       CHECK:       memref.prefetch %[[W]][%{{.*}}], read, locality<2>, data : memref<3072xf32>
//   CHECK-NOT:       memref.prefetch
//       CHECK:       %[[X:.*]] = memref.load %{{.*}} : memref<?x32xf32>
//       CHECK:       %[[B:.*]] = vector.broadcast %[[X]] : f32 to vector<16xf32>
//       CHECK:       vector.fma %[[B]], %{{.*}} : vector<16xf32>
//       CHECK:     vector.store %{{.*}} : memref<?x96xf32>, vector<16xf32>
//       CHECK:     scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
//       CHECK:     scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
//       CHECK:     scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>)
// The logits head reads the table's panels.
//       CHECK:   func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x64xf32>, %{{.*}}: memref<2048xf32>
//   CHECK-NOT:     vector.shuffle
//       CHECK:     vector.broadcast
// A table that f16 holds exactly (weight-dtype=auto) is kept once too, in f16
// panels, which the embedding widens as it reads them; the linear's 0.1,
// not an f16 value, stays f32.
// AUTO-LABEL: func.func @llmc_step
//       AUTO:   %[[TABLE:.*]] = memref.view %{{.*}} : memref<?xi8> to memref<2048xf16>
//       AUTO:   call @llmc_panel_embedding_{{[0-9]+}}(%[[TABLE]],
//       AUTO:   memref.view %{{.*}} : memref<?xi8> to memref<3072xf32>
//       AUTO:   func.func private @llmc_panel_embedding_{{[0-9]+}}(%[[PANELS:.*]]: memref<2048xf16>, %{{.*}}: memref<?xi32>, %{{.*}}: memref<?x32xf32>)
//       AUTO:     %[[HALF:.*]] = memref.load %[[PANELS]]
//       AUTO:     arith.extf %[[HALF]] : f16 to f32
func.func @panels(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %w = llm.constant dense<1.000000e-01> : tensor<32x96xf32>
  %x0 = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x0 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %h, %h, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %h, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %x = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %y = llm.linear %x, %w : (tensor<?x32xf32>, tensor<32x96xf32>) -> tensor<?x96xf32>
  %w2 = llm.constant dense<1.000000e-01> : tensor<96x32xf32>
  %z = llm.linear %y, %w2 : (tensor<?x96xf32>, tensor<96x32xf32>) -> tensor<?x32xf32>
  %rows = llm.gather_rows %z, %arg6 : (tensor<?x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %logits = llm.logits %rows, %table {transpose_weight} : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// 80 columns: one panel of 48 and a last one of 32 (2 vectors), which a
// task of its own takes through the narrower tiles.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x80xf32>, %{{.*}}: memref<2560xf32>
//       CHECK:     %[[WHOLE:.*]] = arith.cmpi eq, %{{.*}}, %c48
//       CHECK:     scf.if %[[WHOLE]]
//       CHECK:       scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
//       CHECK:     } else {
//       CHECK:       scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
func.func @last_panel(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %w = llm.constant dense<1.000000e-01> : tensor<32x80xf32>
  %x0 = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x0 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %h, %h, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %h, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %x = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %y = llm.linear %x, %w : (tensor<?x32xf32>, tensor<32x80xf32>) -> tensor<?x80xf32>
  %rows = llm.gather_rows %y, %arg6 : (tensor<?x80xf32>, tensor<?xi32>) -> tensor<?x80xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<80x64xf32>
  %logits = llm.logits %rows, %head : (tensor<?x80xf32>, tensor<80x64xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// A gated product: its panels are 16 columns, each k the 16 gate then the
// 16 up columns, a tile 8 rows x 1 vector x 2 parts; silu(gate) * up runs on
// the vectors (the exp as the inline polynomial).
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x48xf32>, %{{.*}}: memref<3072xf32>
//       CHECK:     scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
//   CHECK-COUNT-2:   vector.load
//   CHECK-NOT:     math.exp
//       CHECK:     math.roundeven %{{.*}} : vector<16xf32>
//       CHECK:     arith.divf %{{.*}} : vector<16xf32>
//       CHECK:     arith.mulf %{{.*}} : vector<16xf32>
//       CHECK:     vector.store
func.func @gated(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %wgu = llm.constant dense<1.000000e-01> : tensor<32x96xf32>
  %x0 = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x0 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %h, %h, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %h, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %x = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %mlp = llm.fused_linear %x, %wgu {gated} : (tensor<?x32xf32>, tensor<32x96xf32>) -> tensor<?x48xf32> {
  ^bb0(%gate: f32, %up: f32):
    %one = arith.constant 1.0 : f32
    %n = arith.negf %gate : f32
    %e = math.exp %n : f32
    %d = arith.addf %one, %e : f32
    %s = arith.divf %gate, %d : f32
    %y = arith.mulf %s, %up : f32
    llm.yield %y : f32
  }
  %rows = llm.gather_rows %mlp, %arg6 : (tensor<?x48xf32>, tensor<?xi32>) -> tensor<?x48xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<48x64xf32>
  %logits = llm.logits %rows, %head : (tensor<?x48xf32>, tensor<48x64xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// 40 columns: one panel of 3 vectors padded with zeros to 48 columns (1536
// values); the last vector's 8 outputs are stored one by one.
// CHECK-LABEL: func.func @llmc_step
//       CHECK:   func.func private @llmc_matmul_{{[0-9]+}}(%{{.*}}: memref<?x32xf32>, %{{.*}}: memref<?x40xf32>, %{{.*}}: memref<1536xf32>
//       CHECK:     vector.store %{{.*}} : memref<?x40xf32>, vector<16xf32>
//       CHECK:     vector.store %{{.*}} : memref<?x40xf32>, vector<16xf32>
//   CHECK-COUNT-8:   memref.store %{{.*}} : memref<?x40xf32>
//       CHECK:     vector.store %{{.*}} : memref<?x40xf32>, vector<16xf32>
func.func @not_whole_vectors(%arg0: tensor<?xi32> {llmc.abi = "tokens"}, %arg1: tensor<?xi32> {llmc.abi = "positions"}, %arg2: tensor<?xi32> {llmc.abi = "cu_seqlens_q"}, %arg3: tensor<?xi32> {llmc.abi = "context_lens"}, %arg4: tensor<?x?xi32> {llmc.abi = "block_tables"}, %arg5: tensor<?xi32> {llmc.abi = "slot_mapping"}, %arg6: tensor<?xi32> {llmc.abi = "logits_indices"}, %arg7: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}) -> tensor<?x64xf32> {
  %table = llm.constant dense<5.000000e-01> : tensor<64x32xf32>
  %w = llm.constant dense<1.000000e-01> : tensor<32x40xf32>
  %x0 = llm.embedding %table, %arg0 : (tensor<64x32xf32>, tensor<?xi32>) -> tensor<?x32xf32>
  %h = llm.split_heads %x0 {num_heads = 2 : i64} : (tensor<?x32xf32>) -> tensor<?x2x16xf32>
  %pool = llm.paged_kv_write %arg7, %h, %h, %arg5 {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %h, %pool, %arg4, %arg3, %arg2 {layer = 0 : i64, scale = 2.500000e-01 : f32} : (tensor<?x2x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x2x16xf32>
  %x = llm.merge_heads %a : (tensor<?x2x16xf32>) -> tensor<?x32xf32>
  %y = llm.linear %x, %w : (tensor<?x32xf32>, tensor<32x40xf32>) -> tensor<?x40xf32>
  %rows = llm.gather_rows %y, %arg6 : (tensor<?x40xf32>, tensor<?xi32>) -> tensor<?x40xf32>
  %head = llm.constant dense<2.000000e-01> : tensor<40x64xf32>
  %logits = llm.logits %rows, %head : (tensor<?x40xf32>, tensor<40x64xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}
