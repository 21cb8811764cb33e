// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-gqa-rewrite))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-gqa-rewrite))' -debug-only=llm-gqa-rewrite -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// A miss says why under -debug-only:
// WHY: [llm-gqa-rewrite] {{.*}}: no match: K and V are repeated a different number of times

// GQA: 8 query heads over 2 KV heads widened 4x; attention reads the 2 heads.
// CHECK-LABEL: func.func @grouped
//  CHECK-SAME:   (%[[Q:[^:]*]]: tensor<1x8x3x16xf32>, %[[K:[^:]*]]: tensor<1x2x3x16xf32>, %[[V:[^:]*]]: tensor<1x2x3x16xf32>
//   CHECK-NOT:   llm.repeat_kv
//       CHECK:   %[[A:.*]] = llm.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f32} : (tensor<1x8x3x16xf32>, tensor<1x2x3x16xf32>, tensor<1x2x3x16xf32>)
//       CHECK:   return %[[A]]
func.func @grouped(%q: tensor<1x8x3x16xf32>, %k: tensor<1x2x3x16xf32>, %v: tensor<1x2x3x16xf32>) -> tensor<1x8x3x16xf32> {
  %kr = llm.repeat_kv %k {repeats = 4 : i64} : (tensor<1x2x3x16xf32>) -> tensor<1x8x3x16xf32>
  %vr = llm.repeat_kv %v {repeats = 4 : i64} : (tensor<1x2x3x16xf32>) -> tensor<1x8x3x16xf32>
  %a = llm.attention %q, %kr, %vr {causal, scale = 0.25 : f32} : (tensor<1x8x3x16xf32>, tensor<1x8x3x16xf32>, tensor<1x8x3x16xf32>) -> tensor<1x8x3x16xf32>
  return %a : tensor<1x8x3x16xf32>
}

// -----

// MQA is the same op with one KV head.
// CHECK-LABEL: func.func @multi_query
//   CHECK-NOT:   llm.repeat_kv
//       CHECK:   llm.attention %{{.*}}, %{{.*}}, %{{.*}} {{.*}} : (tensor<1x4x3x16xf32>, tensor<1x1x3x16xf32>, tensor<1x1x3x16xf32>)
func.func @multi_query(%q: tensor<1x4x3x16xf32>, %k: tensor<1x1x3x16xf32>, %v: tensor<1x1x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %kr = llm.repeat_kv %k {repeats = 4 : i64} : (tensor<1x1x3x16xf32>) -> tensor<1x4x3x16xf32>
  %vr = llm.repeat_kv %v {repeats = 4 : i64} : (tensor<1x1x3x16xf32>) -> tensor<1x4x3x16xf32>
  %a = llm.attention %q, %kr, %vr {causal, scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %a : tensor<1x4x3x16xf32>
}

// -----

// Negative: only K is widened, so V already has every head; nothing changes.
// CHECK-LABEL: func.func @only_keys_widened
//       CHECK:   %[[KR:.*]] = llm.repeat_kv
//       CHECK:   llm.attention %{{.*}}, %[[KR]], %{{.*}}
func.func @only_keys_widened(%q: tensor<1x4x3x16xf32>, %k: tensor<1x2x3x16xf32>, %v: tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %kr = llm.repeat_kv %k {repeats = 2 : i64} : (tensor<1x2x3x16xf32>) -> tensor<1x4x3x16xf32>
  %a = llm.attention %q, %kr, %v {causal, scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %a : tensor<1x4x3x16xf32>
}

// -----

// Negative: K and V widened differently is not one grouping.
// CHECK-LABEL: func.func @different_repeats
//  CHECK-COUNT-2:   llm.repeat_kv
//       CHECK:   llm.attention
func.func @different_repeats(%q: tensor<1x4x3x16xf32>, %k: tensor<1x2x3x16xf32>, %v: tensor<1x1x3x16xf32>) -> tensor<1x4x3x16xf32> {
  %kr = llm.repeat_kv %k {repeats = 2 : i64} : (tensor<1x2x3x16xf32>) -> tensor<1x4x3x16xf32>
  %vr = llm.repeat_kv %v {repeats = 4 : i64} : (tensor<1x1x3x16xf32>) -> tensor<1x4x3x16xf32>
  %a = llm.attention %q, %kr, %vr {causal, scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>) -> tensor<1x4x3x16xf32>
  return %a : tensor<1x4x3x16xf32>
}
