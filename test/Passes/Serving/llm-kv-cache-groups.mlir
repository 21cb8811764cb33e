// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-kv-cache-groups))' | FileCheck %s
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-kv-cache-groups))' -debug-only=llm-kv-cache-groups -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY

// Gemma-2's layers: local (a window of 16 keys) and global in turn. Two
// layers of each: groups of two, the global ones first. The pool holds two
// layers' rows a block, and each op names its group and its slot.
// WHY: [llm-kv-cache-groups] alternating: group 0: window 0, 2 layers
// WHY: [llm-kv-cache-groups] alternating: group 1: window 16, 2 layers
// CHECK-LABEL: func.func @alternating
//  CHECK-SAME:   tensor<2x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}
//  CHECK-SAME:   attributes {llmc.kv_groups = [{layers = array<i64: 1, 3>, window = 0 : i64}, {layers = array<i64: 0, 2>, window = 16 : i64}]}
//       CHECK:   llm.paged_kv_write {{.*}} {kv_group = 1 : i64, layer = 0 : i64} : {{.*}} -> tensor<2x?x2x2x16x16xf32>
//       CHECK:   llm.paged_attention {{.*}} {kv_group = 1 : i64, layer = 0 : i64, scale = 2.500000e-01 : f32, sliding_window = 16 : i64}
//       CHECK:   llm.paged_kv_write {{.*}} {kv_group = 0 : i64, layer = 0 : i64}
//       CHECK:   llm.paged_attention {{.*}} {kv_group = 0 : i64, layer = 0 : i64, scale = 2.500000e-01 : f32}
//       CHECK:   llm.paged_kv_write {{.*}} {kv_group = 1 : i64, layer = 1 : i64}
//       CHECK:   llm.paged_attention {{.*}} {kv_group = 1 : i64, layer = 1 : i64, scale = 2.500000e-01 : f32, sliding_window = 16 : i64}
//       CHECK:   llm.paged_kv_write {{.*}} {kv_group = 0 : i64, layer = 1 : i64}
//       CHECK:   llm.paged_attention {{.*}} {kv_group = 0 : i64, layer = 1 : i64, scale = 2.500000e-01 : f32}
func.func @alternating(%pool: tensor<4x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %slots: tensor<?xi32> {llmc.abi = "slot_mapping"}, %tables: tensor<?x?xi32> {llmc.abi = "block_tables"}, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x16xf32> {
  %p0 = llm.paged_kv_write %pool, %k, %v, %slots {layer = 0 : i64} : (tensor<4x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<4x?x2x2x16x16xf32>
  %a0 = llm.paged_attention %q, %p0, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32, sliding_window = 16 : i64} : (tensor<?x4x16xf32>, tensor<4x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %p1 = llm.paged_kv_write %p0, %k, %v, %slots {layer = 1 : i64} : (tensor<4x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<4x?x2x2x16x16xf32>
  %a1 = llm.paged_attention %q, %p1, %tables, %lens, %cu {layer = 1 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<4x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %p2 = llm.paged_kv_write %p1, %k, %v, %slots {layer = 2 : i64} : (tensor<4x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<4x?x2x2x16x16xf32>
  %a2 = llm.paged_attention %q, %p2, %tables, %lens, %cu {layer = 2 : i64, scale = 0.25 : f32, sliding_window = 16 : i64} : (tensor<?x4x16xf32>, tensor<4x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %p3 = llm.paged_kv_write %p2, %k, %v, %slots {layer = 3 : i64} : (tensor<4x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<4x?x2x2x16x16xf32>
  %a3 = llm.paged_attention %q, %p3, %tables, %lens, %cu {layer = 3 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<4x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %a3 : tensor<?x4x16xf32>
}

// -----

// Gemma-3's five local layers to one global (here two to one): groups of
// the one global layer's size, so each local layer is a group of its own.
// CHECK-LABEL: func.func @mostly_local
//  CHECK-SAME:   tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}
//  CHECK-SAME:   llmc.kv_groups = [{layers = array<i64: 2>, window = 0 : i64}, {layers = array<i64: 0>, window = 16 : i64}, {layers = array<i64: 1>, window = 16 : i64}]
func.func @mostly_local(%pool: tensor<3x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %slots: tensor<?xi32> {llmc.abi = "slot_mapping"}, %tables: tensor<?x?xi32> {llmc.abi = "block_tables"}, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x16xf32> {
  %p0 = llm.paged_kv_write %pool, %k, %v, %slots {layer = 0 : i64} : (tensor<3x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<3x?x2x2x16x16xf32>
  %a0 = llm.paged_attention %q, %p0, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32, sliding_window = 16 : i64} : (tensor<?x4x16xf32>, tensor<3x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %p1 = llm.paged_kv_write %p0, %k, %v, %slots {layer = 1 : i64} : (tensor<3x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<3x?x2x2x16x16xf32>
  %a1 = llm.paged_attention %q, %p1, %tables, %lens, %cu {layer = 1 : i64, scale = 0.25 : f32, sliding_window = 16 : i64} : (tensor<?x4x16xf32>, tensor<3x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %p2 = llm.paged_kv_write %p1, %k, %v, %slots {layer = 2 : i64} : (tensor<3x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<3x?x2x2x16x16xf32>
  %a2 = llm.paged_attention %q, %p2, %tables, %lens, %cu {layer = 2 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<3x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %a2 : tensor<?x4x16xf32>
}

// -----

// Windows of two widths and none: groups by width, in width order, each of
// the fewest layers one width has (here the one of 32 keys).
// CHECK-LABEL: func.func @three_windows
//  CHECK-SAME:   tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}
//  CHECK-SAME:   llmc.kv_groups = [{layers = array<i64: 0>, window = 0 : i64}, {layers = array<i64: 3>, window = 0 : i64}, {layers = array<i64: 1>, window = 8 : i64}, {layers = array<i64: 4>, window = 8 : i64}, {layers = array<i64: 2>, window = 32 : i64}]
func.func @three_windows(%pool: tensor<5x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %slots: tensor<?xi32> {llmc.abi = "slot_mapping"}, %tables: tensor<?x?xi32> {llmc.abi = "block_tables"}, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x16xf32> {
  %p0 = llm.paged_kv_write %pool, %k, %v, %slots {layer = 0 : i64} : (tensor<5x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<5x?x2x2x16x16xf32>
  %a0 = llm.paged_attention %q, %p0, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<5x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %p1 = llm.paged_kv_write %p0, %k, %v, %slots {layer = 1 : i64} : (tensor<5x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<5x?x2x2x16x16xf32>
  %a1 = llm.paged_attention %q, %p1, %tables, %lens, %cu {layer = 1 : i64, scale = 0.25 : f32, sliding_window = 8 : i64} : (tensor<?x4x16xf32>, tensor<5x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %p2 = llm.paged_kv_write %p1, %k, %v, %slots {layer = 2 : i64} : (tensor<5x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<5x?x2x2x16x16xf32>
  %a2 = llm.paged_attention %q, %p2, %tables, %lens, %cu {layer = 2 : i64, scale = 0.25 : f32, sliding_window = 32 : i64} : (tensor<?x4x16xf32>, tensor<5x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %p3 = llm.paged_kv_write %p2, %k, %v, %slots {layer = 3 : i64} : (tensor<5x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<5x?x2x2x16x16xf32>
  %a3 = llm.paged_attention %q, %p3, %tables, %lens, %cu {layer = 3 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<5x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %p4 = llm.paged_kv_write %p3, %k, %v, %slots {layer = 4 : i64} : (tensor<5x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<5x?x2x2x16x16xf32>
  %a4 = llm.paged_attention %q, %p4, %tables, %lens, %cu {layer = 4 : i64, scale = 0.25 : f32, sliding_window = 8 : i64} : (tensor<?x4x16xf32>, tensor<5x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %a4 : tensor<?x4x16xf32>
}

// -----

// Every layer with the same window (or none): one group, nothing changes.
// WHY: [llm-kv-cache-groups] uniform: every layer has the same window: one group
// CHECK-LABEL: func.func @uniform
//  CHECK-SAME:   tensor<2x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}
//   CHECK-NOT:   kv_group
//   CHECK-NOT:   llmc.kv_groups
func.func @uniform(%pool: tensor<2x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %slots: tensor<?xi32> {llmc.abi = "slot_mapping"}, %tables: tensor<?x?xi32> {llmc.abi = "block_tables"}, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x16xf32> {
  %p0 = llm.paged_kv_write %pool, %k, %v, %slots {layer = 0 : i64} : (tensor<2x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<2x?x2x2x16x16xf32>
  %a0 = llm.paged_attention %q, %p0, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32, sliding_window = 16 : i64} : (tensor<?x4x16xf32>, tensor<2x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  %p1 = llm.paged_kv_write %p0, %k, %v, %slots {layer = 1 : i64} : (tensor<2x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<2x?x2x2x16x16xf32>
  %a1 = llm.paged_attention %q, %p1, %tables, %lens, %cu {layer = 1 : i64, scale = 0.25 : f32, sliding_window = 16 : i64} : (tensor<?x4x16xf32>, tensor<2x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %a1 : tensor<?x4x16xf32>
}

// -----

func.func @mixed_windows(%pool: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %slots: tensor<?xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x16xf32> {
  %p = llm.paged_kv_write %pool, %k, %v, %slots {layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %q, %p, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32, sliding_window = 16 : i64} : (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  // expected-error @+1 {{attends over layer 0 with a window of 0 keys where another op of the layer has 16: one block table cannot serve both}}
  %b = llm.paged_attention %q, %p, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %b : tensor<?x4x16xf32>
}

// -----

func.func @unread_layer(%pool: tensor<2x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %slots: tensor<?xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x16xf32> {
  %p = llm.paged_kv_write %pool, %k, %v, %slots {layer = 0 : i64} : (tensor<2x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<2x?x2x2x16x16xf32>
  // expected-error @+1 {{writes layer 1 of the KV pool, which no llm.paged_attention reads}}
  %p1 = llm.paged_kv_write %p, %k, %v, %slots {layer = 1 : i64} : (tensor<2x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<2x?x2x2x16x16xf32>
  %a = llm.paged_attention %q, %p1, %tables, %lens, %cu {layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<2x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %a : tensor<?x4x16xf32>
}

// -----

func.func @grouped_already(%pool: tensor<1x?x2x2x16x16xf32> {llmc.abi = "kv_pool"}, %q: tensor<?x4x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %slots: tensor<?xi32>, %tables: tensor<?x?xi32>, %lens: tensor<?xi32>, %cu: tensor<?xi32>) -> tensor<?x4x16xf32> {
  // expected-error @+1 {{is in KV cache group 1 already}}
  %p = llm.paged_kv_write %pool, %k, %v, %slots {kv_group = 1 : i64, layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  %a = llm.paged_attention %q, %p, %tables, %lens, %cu {kv_group = 1 : i64, layer = 0 : i64, scale = 0.25 : f32} : (tensor<?x4x16xf32>, tensor<1x?x2x2x16x16xf32>, tensor<?x?xi32>, tensor<?xi32>, tensor<?xi32>) -> tensor<?x4x16xf32>
  return %a : tensor<?x4x16xf32>
}

// -----

// A negative group is not one.
func.func @negative_group(%pool: tensor<1x?x2x2x16x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %slots: tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32> {
  // expected-error @+1 {{kv_group -1 is negative}}
  %p = llm.paged_kv_write %pool, %k, %v, %slots {kv_group = -1 : i64, layer = 0 : i64} : (tensor<1x?x2x2x16x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<?xi32>) -> tensor<1x?x2x2x16x16xf32>
  return %p : tensor<1x?x2x2x16x16xf32>
}
