// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-rope-kv-write))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-rope-kv-write))' -debug-only=llm-fuse-rope-kv-write -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// A miss says why under -debug-only:
// WHY: [llm-fuse-rope-kv-write] {{.*}}: no match: the query is not rotated with the keys' angles
// WHY: [llm-fuse-rope-kv-write] {{.*}}: no match: its values are its keys' first features

// Rope of q and k with the same angles, the KV write and the attention of
// layer 0: the rotations and the write become one op that hands the
// rotated query to the attention and the updated pool to what follows.
// CHECK-LABEL: func.func @layer
//  CHECK-SAME:   (%[[POOL:[^:]*]]: {{.*}}, %[[Q:[^:]*]]: {{.*}}, %[[K:[^:]*]]: {{.*}}, %[[V:[^:]*]]: {{.*}}, %[[POS:[^:]*]]: {{.*}}, %[[SLOTS:[^:]*]]: {{.*}}, %[[TABLES:[^:]*]]: {{.*}}, %[[LENS:[^:]*]]: {{.*}}, %[[CU:[^:]*]]: {{.*}})
//       CHECK:   %[[ROTATED:.*]], %[[UPDATED:.*]] = llm.rope_paged_kv_write %[[POOL]], %[[Q]], %[[K]], %[[V]], %[[SLOTS]], %[[POS]] inv_freq(%{{.*}}) {layer = 0 : i64}
//   CHECK-NOT:   llm.rope
//   CHECK-NOT:   llm.paged_kv_write
//       CHECK:   llm.paged_attention %[[ROTATED]], %[[UPDATED]]
//       CHECK:   return %{{.*}}, %[[UPDATED]]
func.func @layer(%pool: tensor<1x?x2x2x16x16xf32>, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %pos: tensor<?xi32>, %slots: tensor<?xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>) {
  %freq = llm.constant dense<1.0> : tensor<8xf32>
  %qr = llm.rope %q, %pos, %freq : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x4x16xf32>
  %kr = llm.rope %k, %pos, %freq : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %p = llm.paged_kv_write %pool, %kr, %v, %slots {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %qr, %p, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %a, %p : tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>
}

// -----

// Cached cos/sin tables are carried over; interleaving too.
// CHECK-LABEL: func.func @cached
//       CHECK:   llm.rope_paged_kv_write {{.*}} cos_sin(%{{.*}}, %{{.*}}) {interleaved, layer = 0 : i64} : ({{.*}}, tensor<?xi32>, tensor<64x8xf32>, tensor<64x8xf32>)
func.func @cached(%pool: tensor<1x?x2x2x16x16xf32>, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %pos: tensor<?xi32>, %slots: tensor<?xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x16xf32> {
  %cos = llm.constant dense<1.0> : tensor<64x8xf32>
  %sin = llm.constant dense<0.0> : tensor<64x8xf32>
  %qr = llm.rope_cached %q, %pos, %cos, %sin {interleaved} : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<?x4x16xf32>
  %kr = llm.rope_cached %k, %pos, %cos, %sin {interleaved} : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<64x8xf32>, tensor<64x8xf32>) -> tensor<?x2x16xf32>
  %p = llm.paged_kv_write %pool, %kr, %v, %slots {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %qr, %p, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %a : tensor<?x4x16xf32>
}

// -----

// Not fused: q rotated with other frequencies than k; rotated keys read by
// something else; keys not rotated at all.
// CHECK-LABEL: func.func @not_fused
//   CHECK-NOT:   llm.rope_paged_kv_write
//       CHECK:   llm.paged_kv_write
//       CHECK:   llm.paged_kv_write
//       CHECK:   llm.paged_kv_write
//   CHECK-NOT:   llm.rope_paged_kv_write
func.func @not_fused(%pool: tensor<3x?x2x2x16x16xf32>, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %pos: tensor<?xi32>, %slots: tensor<?xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> (tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x2x16xf32>) {
  %freq = llm.constant dense<1.0> : tensor<8xf32>
  %other = llm.constant dense<2.0> : tensor<8xf32>
  %qr = llm.rope %q, %pos, %other : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x4x16xf32>
  %kr = llm.rope %k, %pos, %freq : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %p0 = llm.paged_kv_write %pool, %kr, %v, %slots {layer = 0 : i64} : (tensor<3x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<3x?x2x2x16x16xf32>
  %a0 = llm.paged_attention %qr, %p0, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<3x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %qr1 = llm.rope %q, %pos, %freq : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x4x16xf32>
  %kr1 = llm.rope %k, %pos, %freq : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %p1 = llm.paged_kv_write %p0, %kr1, %v, %slots {layer = 1 : i64} : (tensor<3x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<3x?x2x2x16x16xf32>
  %a1 = llm.paged_attention %qr1, %p1, %tables, %lens, %cu {layer = 1 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<3x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %qr2 = llm.rope %q, %pos, %freq : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x4x16xf32>
  %p2 = llm.paged_kv_write %p1, %k, %v, %slots {layer = 2 : i64} : (tensor<3x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<3x?x2x2x16x16xf32>
  %a2 = llm.paged_attention %qr2, %p2, %tables, %lens, %cu {layer = 2 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<3x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %a0, %a1, %a2, %kr1 : tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>, tensor<?x2x16xf32>
}

// -----

// Not fused: a scaled rope (YaRN's, LongRoPE's attention factor), which the
// fused op does not carry, stays as it is.
// CHECK-LABEL: func.func @scaled
//   CHECK-NOT:   llm.rope_paged_kv_write
//       CHECK:   llm.rope %{{.*}} {scale = 1.250000e+00 : f32}
//       CHECK:   llm.paged_kv_write
func.func @scaled(%pool: tensor<1x?x2x2x16x16xf32>, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %pos: tensor<?xi32>, %slots: tensor<?xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x16xf32> {
  %freq = llm.constant dense<1.0> : tensor<8xf32>
  %qr = llm.rope %q, %pos, %freq {scale = 1.25 : f32} : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x4x16xf32>
  %kr = llm.rope %k, %pos, %freq {scale = 1.25 : f32} : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %p = llm.paged_kv_write %pool, %kr, %v, %slots {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %qr, %p, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %a : tensor<?x4x16xf32>
}

// -----

// A pool of one row per token takes no values: rope_paged_kv_write writes a
// key row and a value row, so the write stays apart.
// CHECK-LABEL: func.func @values_in_keys
//   CHECK-NOT:   llm.rope_paged_kv_write
//       CHECK:   llm.paged_kv_write
func.func @values_in_keys(%pool: tensor<1x?x1x2x16x16xf32>, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %pos: tensor<?xi32>, %slots: tensor<?xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x8xf32> {
  %freq = llm.constant dense<1.0> : tensor<8xf32>
  %qr = llm.rope %q, %pos, %freq : (tensor<?x4x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x4x16xf32>
  %kr = llm.rope %k, %pos, %freq : (tensor<?x2x16xf32>, tensor<?xi32>, tensor<8xf32>) -> tensor<?x2x16xf32>
  %p = llm.paged_kv_write %pool, %kr, %slots {layer = 0 : i64} : (tensor<1x?x1x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x1x2x16x16xf32>
  %a = llm.paged_attention %qr, %p, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<1x?x1x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x8xf32>
  return %a : tensor<?x4x8xf32>
}
