// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-absorb-latent-attention))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-absorb-latent-attention))' -debug-only=llm-absorb-latent-attention -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// A miss says why under -debug-only, one line for each near miss below (the
// first, of the latent attention that the first case's rewrite made):
// WHY: [llm-absorb-latent-attention] {{.*}}: no match: attention reads one KV head already
// WHY: [llm-absorb-latent-attention] {{.*}}: no match: the keys are not each query head's features and one shared rotary head
// WHY: [llm-absorb-latent-attention] {{.*}}: no match: an up-projection's weight is neither an f32 constant nor dequantized ones
// WHY: [llm-absorb-latent-attention] {{.*}}: no match: an up-projection has a bias
// WHY: [llm-absorb-latent-attention] {{.*}}: no match: the cache is not a past input joined by kv_concat that only attention and the present output read

// Multi-head latent attention as DeepSeek-V3's exports raise: 2 heads, a
// latent of 2 features expanded by kv_b_proj ([2, 10]: each head's 2 key
// features, then each head's 3 values) and one rotary key feature shared by
// the heads. Attention now reads one KV head, keys [latent ; rotary key] and
// values the latent; the query's features without rotation go through each
// head's key columns transposed (head h: W[j][2h + i] at [h][i][j]), the
// output through each head's value columns (W[j][4 + 3h + i] at [h][j][i]).
// The cache and the present outputs take the latent's shapes.
// CHECK-LABEL: func.func @latent
//  CHECK-SAME:   (%{{[^:]*}}: tensor<?x?xi64>, %[[PK:[^:]*]]: tensor<?x1x?x3xf32>, %[[PV:[^:]*]]: tensor<?x1x?x2xf32>) -> (tensor<?x2x?x3xf32>, tensor<?x1x?x3xf32>, tensor<?x1x?x2xf32>)
//       CHECK:   %[[WV:.*]] = llm.constant dense<{{\[\[\[}}4.000000e+00, 5.000000e+00, 6.000000e+00], [1.400000e+01, 1.500000e+01, 1.600000e+01]], {{\[\[}}7.000000e+00, 8.000000e+00, 9.000000e+00], [1.700000e+01, 1.800000e+01, 1.900000e+01]]]> : tensor<2x2x3xf32>
//       CHECK:   %[[WK:.*]] = llm.constant dense<{{\[\[\[}}0.000000e+00, 1.000000e+01], [1.000000e+00, 1.100000e+01]], {{\[\[}}2.000000e+00, 1.200000e+01], [3.000000e+00, 1.300000e+01]]]> : tensor<2x2x2xf32>
//       CHECK:   %[[KVA:.*]]:2 = llm.split
//       CHECK:   %[[KPE:.*]] = llm.split_heads %[[KVA]]#1 {num_heads = 1 : i64}
//       CHECK:   %[[QN:.*]] = llm.split_heads %{{.*}}#0 {num_heads = 2 : i64}
//       CHECK:   %[[QPE:.*]] = llm.split_heads %{{.*}}#1 {num_heads = 2 : i64}
//       CHECK:   %[[C:.*]] = llm.split_heads %[[KVA]]#0 {num_heads = 1 : i64} : (tensor<?x?x2xf32>) -> tensor<?x1x?x2xf32>
//       CHECK:   %[[K:.*]] = llm.concat_heads %[[C]], %[[KPE]] : (tensor<?x1x?x2xf32>, tensor<?x1x?x1xf32>) -> tensor<?x1x?x3xf32>
//       CHECK:   %[[KC:.*]] = llm.kv_concat %[[PK]], %[[K]] : (tensor<?x1x?x3xf32>, tensor<?x1x?x3xf32>) -> tensor<?x1x?x3xf32>
//       CHECK:   %[[VC:.*]] = llm.kv_concat %[[PV]], %[[C]] : (tensor<?x1x?x2xf32>, tensor<?x1x?x2xf32>) -> tensor<?x1x?x2xf32>
//       CHECK:   %[[QA:.*]] = llm.head_linear %[[QN]], %[[WK]] : (tensor<?x2x?x2xf32>, tensor<2x2x2xf32>) -> tensor<?x2x?x2xf32>
//       CHECK:   %[[Q:.*]] = llm.concat_heads %[[QA]], %[[QPE]] : (tensor<?x2x?x2xf32>, tensor<?x2x?x1xf32>) -> tensor<?x2x?x3xf32>
//       CHECK:   %[[A:.*]] = llm.attention %[[Q]], %[[KC]], %[[VC]] {causal, scale = 5.000000e-01 : f32} : (tensor<?x2x?x3xf32>, tensor<?x1x?x3xf32>, tensor<?x1x?x2xf32>) -> tensor<?x2x?x2xf32>
//       CHECK:   %[[O:.*]] = llm.head_linear %[[A]], %[[WV]] : (tensor<?x2x?x2xf32>, tensor<2x2x3xf32>) -> tensor<?x2x?x3xf32>
//       CHECK:   return %[[O]], %[[KC]], %[[VC]]
func.func @latent(%ids: tensor<?x?xi64>, %pk: tensor<?x2x?x3xf32>, %pv: tensor<?x2x?x3xf32>) -> (tensor<?x2x?x3xf32>, tensor<?x2x?x3xf32>, tensor<?x2x?x3xf32>) {
  %table = llm.constant dense<0.5> : tensor<16x8xf32>
  %x = llm.embedding %table, %ids : (tensor<16x8xf32>, tensor<?x?xi64>) -> tensor<?x?x8xf32>
  %wkva = llm.constant dense<0.1> : tensor<8x3xf32>
  %kva = llm.linear %x, %wkva : (tensor<?x?x8xf32>, tensor<8x3xf32>) -> tensor<?x?x3xf32>
  %kvp:2 = llm.split %kva {sizes = array<i64: 2, 1>} : (tensor<?x?x3xf32>) -> (tensor<?x?x2xf32>, tensor<?x?x1xf32>)
  %wkvb = llm.constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0]]> : tensor<2x10xf32>
  %kv = llm.linear %kvp#0, %wkvb : (tensor<?x?x2xf32>, tensor<2x10xf32>) -> tensor<?x?x10xf32>
  %kvs:2 = llm.split %kv {sizes = array<i64: 4, 6>} : (tensor<?x?x10xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x6xf32>)
  %kn = llm.split_heads %kvs#0 {num_heads = 2 : i64} : (tensor<?x?x4xf32>) -> tensor<?x2x?x2xf32>
  %v = llm.split_heads %kvs#1 {num_heads = 2 : i64} : (tensor<?x?x6xf32>) -> tensor<?x2x?x3xf32>
  %kpe = llm.split_heads %kvp#1 {num_heads = 1 : i64} : (tensor<?x?x1xf32>) -> tensor<?x1x?x1xf32>
  %k = llm.concat_heads %kn, %kpe : (tensor<?x2x?x2xf32>, tensor<?x1x?x1xf32>) -> tensor<?x2x?x3xf32>
  %wq = llm.constant dense<0.2> : tensor<8x6xf32>
  %q = llm.linear %x, %wq : (tensor<?x?x8xf32>, tensor<8x6xf32>) -> tensor<?x?x6xf32>
  %qs:2 = llm.split %q {sizes = array<i64: 4, 2>} : (tensor<?x?x6xf32>) -> (tensor<?x?x4xf32>, tensor<?x?x2xf32>)
  %qn = llm.split_heads %qs#0 {num_heads = 2 : i64} : (tensor<?x?x4xf32>) -> tensor<?x2x?x2xf32>
  %qpe = llm.split_heads %qs#1 {num_heads = 2 : i64} : (tensor<?x?x2xf32>) -> tensor<?x2x?x1xf32>
  %qq = llm.concat_heads %qn, %qpe : (tensor<?x2x?x2xf32>, tensor<?x2x?x1xf32>) -> tensor<?x2x?x3xf32>
  %kc = llm.kv_concat %pk, %k : (tensor<?x2x?x3xf32>, tensor<?x2x?x3xf32>) -> tensor<?x2x?x3xf32>
  %vc = llm.kv_concat %pv, %v : (tensor<?x2x?x3xf32>, tensor<?x2x?x3xf32>) -> tensor<?x2x?x3xf32>
  %a = llm.attention %qq, %kc, %vc {causal, scale = 0.5 : f32} : (tensor<?x2x?x3xf32>, tensor<?x2x?x3xf32>, tensor<?x2x?x3xf32>) -> tensor<?x2x?x3xf32>
  return %a, %kc, %vc : tensor<?x2x?x3xf32>, tensor<?x2x?x3xf32>, tensor<?x2x?x3xf32>
}

// -----

// Without a cache (an export without past inputs) attention reads the new
// tokens' latent directly.
// CHECK-LABEL: func.func @latent_without_cache
//       CHECK:   %[[C:.*]] = llm.split_heads %{{.*}}#0 {num_heads = 1 : i64} : (tensor<1x4x2xf32>) -> tensor<1x1x4x2xf32>
//       CHECK:   %[[K:.*]] = llm.concat_heads %[[C]], %{{.*}} : (tensor<1x1x4x2xf32>, tensor<1x1x4x1xf32>) -> tensor<1x1x4x3xf32>
//       CHECK:   llm.head_linear
//       CHECK:   %[[A:.*]] = llm.attention %{{.*}}, %[[K]], %[[C]] {causal, scale = 5.000000e-01 : f32}
//       CHECK:   %[[O:.*]] = llm.head_linear %[[A]]
//       CHECK:   return %[[O]]
func.func @latent_without_cache(%x: tensor<1x4x8xf32>, %qn: tensor<1x2x4x2xf32>, %qpe: tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32> {
  %wkva = llm.constant dense<0.1> : tensor<8x3xf32>
  %kva = llm.linear %x, %wkva : (tensor<1x4x8xf32>, tensor<8x3xf32>) -> tensor<1x4x3xf32>
  %kvp:2 = llm.split %kva {sizes = array<i64: 2, 1>} : (tensor<1x4x3xf32>) -> (tensor<1x4x2xf32>, tensor<1x4x1xf32>)
  %wkvb = llm.constant dense<0.3> : tensor<2x10xf32>
  %kv = llm.linear %kvp#0, %wkvb : (tensor<1x4x2xf32>, tensor<2x10xf32>) -> tensor<1x4x10xf32>
  %kvs:2 = llm.split %kv {sizes = array<i64: 4, 6>} : (tensor<1x4x10xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x6xf32>)
  %kn = llm.split_heads %kvs#0 {num_heads = 2 : i64} : (tensor<1x4x4xf32>) -> tensor<1x2x4x2xf32>
  %v = llm.split_heads %kvs#1 {num_heads = 2 : i64} : (tensor<1x4x6xf32>) -> tensor<1x2x4x3xf32>
  %kpe = llm.split_heads %kvp#1 {num_heads = 1 : i64} : (tensor<1x4x1xf32>) -> tensor<1x1x4x1xf32>
  %k = llm.concat_heads %kn, %kpe : (tensor<1x2x4x2xf32>, tensor<1x1x4x1xf32>) -> tensor<1x2x4x3xf32>
  %qq = llm.concat_heads %qn, %qpe : (tensor<1x2x4x2xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32>
  %a = llm.attention %qq, %k, %v {causal, scale = 0.5 : f32} : (tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x4x3xf32>
  return %a : tensor<1x2x4x3xf32>
}

// -----

// Negative: each head has its own rotary key features (no shared head), so
// the keys are not the latent's.
// CHECK-LABEL: func.func @own_rotary_keys
//   CHECK-NOT:   llm.head_linear
//       CHECK:   llm.attention
func.func @own_rotary_keys(%x: tensor<1x4x2xf32>, %kpe: tensor<1x2x4x1xf32>, %qn: tensor<1x2x4x2xf32>, %qpe: tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32> {
  %qq = llm.concat_heads %qn, %qpe : (tensor<1x2x4x2xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32>
  %wkvb = llm.constant dense<0.3> : tensor<2x10xf32>
  %kv = llm.linear %x, %wkvb : (tensor<1x4x2xf32>, tensor<2x10xf32>) -> tensor<1x4x10xf32>
  %kvs:2 = llm.split %kv {sizes = array<i64: 4, 6>} : (tensor<1x4x10xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x6xf32>)
  %kn = llm.split_heads %kvs#0 {num_heads = 2 : i64} : (tensor<1x4x4xf32>) -> tensor<1x2x4x2xf32>
  %v = llm.split_heads %kvs#1 {num_heads = 2 : i64} : (tensor<1x4x6xf32>) -> tensor<1x2x4x3xf32>
  %k = llm.concat_heads %kn, %kpe : (tensor<1x2x4x2xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32>
  %a = llm.attention %qq, %k, %v {causal, scale = 0.5 : f32} : (tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x4x3xf32>
  return %a : tensor<1x2x4x3xf32>
}

// -----

// Negative: a weight known only at run time cannot be folded into per-head
// weights.
// CHECK-LABEL: func.func @runtime_weight
//   CHECK-NOT:   llm.head_linear
//       CHECK:   llm.attention
func.func @runtime_weight(%x: tensor<1x4x2xf32>, %wkvb: tensor<2x10xf32>, %kpe: tensor<1x1x4x1xf32>, %qn: tensor<1x2x4x2xf32>, %qpe: tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32> {
  %qq = llm.concat_heads %qn, %qpe : (tensor<1x2x4x2xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32>
  %kv = llm.linear %x, %wkvb : (tensor<1x4x2xf32>, tensor<2x10xf32>) -> tensor<1x4x10xf32>
  %kvs:2 = llm.split %kv {sizes = array<i64: 4, 6>} : (tensor<1x4x10xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x6xf32>)
  %kn = llm.split_heads %kvs#0 {num_heads = 2 : i64} : (tensor<1x4x4xf32>) -> tensor<1x2x4x2xf32>
  %v = llm.split_heads %kvs#1 {num_heads = 2 : i64} : (tensor<1x4x6xf32>) -> tensor<1x2x4x3xf32>
  %k = llm.concat_heads %kn, %kpe : (tensor<1x2x4x2xf32>, tensor<1x1x4x1xf32>) -> tensor<1x2x4x3xf32>
  %a = llm.attention %qq, %k, %v {causal, scale = 0.5 : f32} : (tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x4x3xf32>
  return %a : tensor<1x2x4x3xf32>
}

// -----

// Negative: with a bias the keys are not a product of the latent alone.
// CHECK-LABEL: func.func @biased_up_projection
//   CHECK-NOT:   llm.head_linear
//       CHECK:   llm.attention
func.func @biased_up_projection(%x: tensor<1x4x2xf32>, %kpe: tensor<1x1x4x1xf32>, %qn: tensor<1x2x4x2xf32>, %qpe: tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32> {
  %qq = llm.concat_heads %qn, %qpe : (tensor<1x2x4x2xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32>
  %wkvb = llm.constant dense<0.3> : tensor<2x10xf32>
  %bias = llm.constant dense<0.1> : tensor<10xf32>
  %kv = llm.linear %x, %wkvb, %bias : (tensor<1x4x2xf32>, tensor<2x10xf32>, tensor<10xf32>) -> tensor<1x4x10xf32>
  %kvs:2 = llm.split %kv {sizes = array<i64: 4, 6>} : (tensor<1x4x10xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x6xf32>)
  %kn = llm.split_heads %kvs#0 {num_heads = 2 : i64} : (tensor<1x4x4xf32>) -> tensor<1x2x4x2xf32>
  %v = llm.split_heads %kvs#1 {num_heads = 2 : i64} : (tensor<1x4x6xf32>) -> tensor<1x2x4x3xf32>
  %k = llm.concat_heads %kn, %kpe : (tensor<1x2x4x2xf32>, tensor<1x1x4x1xf32>) -> tensor<1x2x4x3xf32>
  %a = llm.attention %qq, %k, %v {causal, scale = 0.5 : f32} : (tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x4x3xf32>
  return %a : tensor<1x2x4x3xf32>
}

// -----

// Negative: something besides attention and the present output reads the
// expanded cache, which would then still be needed.
// CHECK-LABEL: func.func @cache_read_elsewhere
//   CHECK-NOT:   llm.head_linear
//       CHECK:   llm.attention
func.func @cache_read_elsewhere(%x: tensor<1x4x2xf32>, %kpe: tensor<1x1x4x1xf32>, %qn: tensor<1x2x4x2xf32>, %qpe: tensor<1x2x4x1xf32>, %pk: tensor<1x2x?x3xf32>, %pv: tensor<1x2x?x3xf32>) -> (tensor<1x2x4x3xf32>, tensor<1x2x?x3xf32>) {
  %qq = llm.concat_heads %qn, %qpe : (tensor<1x2x4x2xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32>
  %wkvb = llm.constant dense<0.3> : tensor<2x10xf32>
  %kv = llm.linear %x, %wkvb : (tensor<1x4x2xf32>, tensor<2x10xf32>) -> tensor<1x4x10xf32>
  %kvs:2 = llm.split %kv {sizes = array<i64: 4, 6>} : (tensor<1x4x10xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x6xf32>)
  %kn = llm.split_heads %kvs#0 {num_heads = 2 : i64} : (tensor<1x4x4xf32>) -> tensor<1x2x4x2xf32>
  %v = llm.split_heads %kvs#1 {num_heads = 2 : i64} : (tensor<1x4x6xf32>) -> tensor<1x2x4x3xf32>
  %k = llm.concat_heads %kn, %kpe : (tensor<1x2x4x2xf32>, tensor<1x1x4x1xf32>) -> tensor<1x2x4x3xf32>
  %kc = llm.kv_concat %pk, %k : (tensor<1x2x?x3xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x?x3xf32>
  %vc = llm.kv_concat %pv, %v : (tensor<1x2x?x3xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x?x3xf32>
  %a = llm.attention %qq, %kc, %vc {causal, scale = 0.5 : f32} : (tensor<1x2x4x3xf32>, tensor<1x2x?x3xf32>, tensor<1x2x?x3xf32>) -> tensor<1x2x4x3xf32>
  %twice = llm.add %kc, %kc : (tensor<1x2x?x3xf32>, tensor<1x2x?x3xf32>) -> tensor<1x2x?x3xf32>
  return %a, %twice : tensor<1x2x4x3xf32>, tensor<1x2x?x3xf32>
}

// -----

// A quantized up-projection (MatMulNBits' [out, in] codes, a block of 16
// along the 2 latent features) is widened once into the per-head weights
// (test_quantized_cpu.py checks their values against onnxruntime).
// CHECK-LABEL: func.func @quantized_up_projection
//   CHECK-NOT:   llm.dequantize
//       CHECK:   llm.head_linear %{{.*}}, %{{.*}} : (tensor<1x2x4x2xf32>, tensor<2x2x2xf32>) -> tensor<1x2x4x2xf32>
//       CHECK:   llm.attention %{{.*}} : (tensor<1x2x4x3xf32>, tensor<1x1x4x3xf32>, tensor<1x1x4x2xf32>) -> tensor<1x2x4x2xf32>
//       CHECK:   llm.head_linear %{{.*}}, %{{.*}} : (tensor<1x2x4x2xf32>, tensor<2x2x3xf32>) -> tensor<1x2x4x3xf32>
func.func @quantized_up_projection(%x: tensor<1x4x2xf32>, %kpe: tensor<1x1x4x1xf32>, %qn: tensor<1x2x4x2xf32>, %qpe: tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32> {
  %qq = llm.concat_heads %qn, %qpe : (tensor<1x2x4x2xf32>, tensor<1x2x4x1xf32>) -> tensor<1x2x4x3xf32>
  %codes = llm.constant dense<154> : tensor<10x1x8xui8>
  %scales = llm.constant dense<0.25> : tensor<10x1xf32>
  %wkvb = llm.dequantize %codes, %scales {bits = 4 : i64, block_size = 16 : i64} : (tensor<10x1x8xui8>, tensor<10x1xf32>) -> tensor<10x2xf32>
  %kv = llm.linear %x, %wkvb {transpose_weight} : (tensor<1x4x2xf32>, tensor<10x2xf32>) -> tensor<1x4x10xf32>
  %kvs:2 = llm.split %kv {sizes = array<i64: 4, 6>} : (tensor<1x4x10xf32>) -> (tensor<1x4x4xf32>, tensor<1x4x6xf32>)
  %kn = llm.split_heads %kvs#0 {num_heads = 2 : i64} : (tensor<1x4x4xf32>) -> tensor<1x2x4x2xf32>
  %v = llm.split_heads %kvs#1 {num_heads = 2 : i64} : (tensor<1x4x6xf32>) -> tensor<1x2x4x3xf32>
  %k = llm.concat_heads %kn, %kpe : (tensor<1x2x4x2xf32>, tensor<1x1x4x1xf32>) -> tensor<1x2x4x3xf32>
  %a = llm.attention %qq, %k, %v {causal, scale = 0.5 : f32} : (tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x4x3xf32>
  return %a : tensor<1x2x4x3xf32>
}
