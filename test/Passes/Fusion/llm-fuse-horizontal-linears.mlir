// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-horizontal-linears))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-fuse-horizontal-linears{max-columns=48}))' | FileCheck %s --check-prefix=NARROW

// Q, K and V of one input become one linear over the joined weights (their
// columns side by side), split back into the three results.
// CHECK-LABEL: func.func @qkv
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x32xf32>)
//       CHECK:   %[[W:.*]] = llm.constant dense_resource<fused> : tensor<32x64xf32>
//       CHECK:   %[[P:.*]] = llm.linear %[[X]], %[[W]] : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32>
//       CHECK:   %[[S:.*]]:3 = llm.split %[[P]] {sizes = array<i64: 32, 16, 16>}
//       CHECK:   return %[[S]]#0, %[[S]]#1, %[[S]]#2
//   CHECK-NOT:   llm.linear
// Past max-columns the third linear stays on its own.
// NARROW-LABEL: func.func @qkv
//       NARROW:   llm.split %{{.*}} {sizes = array<i64: 32, 16>}
//       NARROW:   llm.linear %{{.*}} -> tensor<?x16xf32>
func.func @qkv(%x: tensor<?x32xf32>) -> (tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>) {
  %wq = llm.constant dense<1.0> : tensor<32x32xf32>
  %wk = llm.constant dense<2.0> : tensor<32x16xf32>
  %wv = llm.constant dense<3.0> : tensor<32x16xf32>
  %q = llm.linear %x, %wq : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %k = llm.linear %x, %wk : (tensor<?x32xf32>, tensor<32x16xf32>) -> tensor<?x16xf32>
  %v = llm.linear %x, %wv : (tensor<?x32xf32>, tensor<32x16xf32>) -> tensor<?x16xf32>
  return %q, %k, %v : tensor<?x32xf32>, tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// Transposed ([out, in]) weights join along their rows, biases too.
// CHECK-LABEL: func.func @transposed_with_bias
//       CHECK:   %[[W:.*]] = llm.constant dense_resource<fused> : tensor<24x8xf32>
//       CHECK:   %[[B:.*]] = llm.constant dense_resource<fused{{.*}}> : tensor<24xf32>
//       CHECK:   llm.linear %{{.*}}, %[[W]], %[[B]] {transpose_weight}
//       CHECK:   llm.split {{.*}} {sizes = array<i64: 16, 8>}
func.func @transposed_with_bias(%x: tensor<?x8xf32>) -> (tensor<?x16xf32>, tensor<?x8xf32>) {
  %wg = llm.constant dense<1.0> : tensor<16x8xf32>
  %wu = llm.constant dense<2.0> : tensor<8x8xf32>
  %bg = llm.constant dense<0.5> : tensor<16xf32>
  %bu = llm.constant dense<0.25> : tensor<8xf32>
  %g = llm.linear %x, %wg, %bg {transpose_weight} : (tensor<?x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %u = llm.linear %x, %wu, %bu {transpose_weight} : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %g, %u : tensor<?x16xf32>, tensor<?x8xf32>
}

// -----

// Not joined: different inputs, one with a bias and one without, one
// transposed and one not, a weight that is not a constant.
// CHECK-LABEL: func.func @not_joinable
//   CHECK-NOT:   llm.split
//   CHECK-COUNT-5: llm.linear
//   CHECK-NOT:   llm.split
func.func @not_joinable(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>, %w: tensor<8x8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %c = llm.constant dense<1.0> : tensor<8x8xf32>
  %b = llm.constant dense<1.0> : tensor<8xf32>
  %0 = llm.linear %x, %c : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %1 = llm.linear %y, %c : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %2 = llm.linear %x, %c, %b : (tensor<?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %3 = llm.linear %x, %c {transpose_weight} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %4 = llm.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  return %0, %1, %2, %3, %4 : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// Quantised weights (MatMulNBits' form: codes [out, blocks, bytes], scales
// [out, blocks], zero points [out, bytes]) join by rows under one
// llm.dequantize; the parts' dequantizes and constants go.
// CHECK-LABEL: func.func @quantized
//   CHECK-DAG:   %[[C:.*]] = llm.constant dense_resource<fused{{.*}}> : tensor<48x2x16xui8>
//   CHECK-DAG:   %[[S:.*]] = llm.constant dense_resource<fused{{.*}}> : tensor<48x2xf32>
//   CHECK-DAG:   %[[Z:.*]] = llm.constant dense_resource<fused{{.*}}> : tensor<48x1xui8>
//       CHECK:   %[[W:.*]] = llm.dequantize %[[C]], %[[S]], %[[Z]] {bits = 4 : i64, block_size = 32 : i64} : (tensor<48x2x16xui8>, tensor<48x2xf32>, tensor<48x1xui8>) -> tensor<48x64xf32>
//       CHECK:   llm.linear %{{.*}}, %[[W]] {transpose_weight} : (tensor<?x64xf32>, tensor<48x64xf32>) -> tensor<?x48xf32>
//       CHECK:   llm.split {{.*}} {sizes = array<i64: 32, 16>}
//   CHECK-NOT:   llm.dequantize
//   CHECK-NOT:   llm.constant
func.func @quantized(%x: tensor<?x64xf32>) -> (tensor<?x32xf32>, tensor<?x16xf32>) {
  %qg = llm.constant dense<17> : tensor<32x2x16xui8>
  %sg = llm.constant dense<0.5> : tensor<32x2xf32>
  %zg = llm.constant dense<136> : tensor<32x1xui8>
  %qu = llm.constant dense<34> : tensor<16x2x16xui8>
  %su = llm.constant dense<0.25> : tensor<16x2xf32>
  %zu = llm.constant dense<119> : tensor<16x1xui8>
  %wg = llm.dequantize %qg, %sg, %zg {bits = 4 : i64, block_size = 32 : i64} : (tensor<32x2x16xui8>, tensor<32x2xf32>, tensor<32x1xui8>) -> tensor<32x64xf32>
  %wu = llm.dequantize %qu, %su, %zu {bits = 4 : i64, block_size = 32 : i64} : (tensor<16x2x16xui8>, tensor<16x2xf32>, tensor<16x1xui8>) -> tensor<16x64xf32>
  %g = llm.linear %x, %wg {transpose_weight} : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
  %u = llm.linear %x, %wu {transpose_weight} : (tensor<?x64xf32>, tensor<16x64xf32>) -> tensor<?x16xf32>
  return %g, %u : tensor<?x32xf32>, tensor<?x16xf32>
}

// -----

// Not joined: other bits, another block size, zero points on one only, a
// quantised and an f32 weight, codes that are not whole bytes (a uint4
// tensor).
// CHECK-LABEL: func.func @quantized_not_joinable
//   CHECK-NOT:   llm.split
//   CHECK-COUNT-6: llm.linear
//   CHECK-NOT:   llm.split
func.func @quantized_not_joinable(%x: tensor<?x64xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>) {
  %q4 = llm.constant dense<17> : tensor<16x2x16xui8>
  %q8 = llm.constant dense<17> : tensor<16x2x32xui8>
  %q4b = llm.constant dense<17> : tensor<16x4x8xui8>
  %s2 = llm.constant dense<0.5> : tensor<16x2xf32>
  %s4 = llm.constant dense<0.5> : tensor<16x4xf32>
  %z = llm.constant dense<8> : tensor<16x1xui8>
  %u4 = llm.constant dense<3> : tensor<16x64xui4>
  %f = llm.constant dense<1.0> : tensor<16x64xf32>
  %w0 = llm.dequantize %q4, %s2 {bits = 4 : i64, block_size = 32 : i64} : (tensor<16x2x16xui8>, tensor<16x2xf32>) -> tensor<16x64xf32>
  %w1 = llm.dequantize %q8, %s2 {bits = 8 : i64, block_size = 32 : i64} : (tensor<16x2x32xui8>, tensor<16x2xf32>) -> tensor<16x64xf32>
  %w2 = llm.dequantize %q4b, %s4 {bits = 4 : i64, block_size = 16 : i64} : (tensor<16x4x8xui8>, tensor<16x4xf32>) -> tensor<16x64xf32>
  %w3 = llm.dequantize %q4, %s2, %z {bits = 4 : i64, block_size = 32 : i64} : (tensor<16x2x16xui8>, tensor<16x2xf32>, tensor<16x1xui8>) -> tensor<16x64xf32>
  %w5 = llm.dequantize %u4, %s2 {bits = 4 : i64, block_size = 32 : i64} : (tensor<16x64xui4>, tensor<16x2xf32>) -> tensor<16x64xf32>
  %0 = llm.linear %x, %w0 {transpose_weight} : (tensor<?x64xf32>, tensor<16x64xf32>) -> tensor<?x16xf32>
  %1 = llm.linear %x, %w1 {transpose_weight} : (tensor<?x64xf32>, tensor<16x64xf32>) -> tensor<?x16xf32>
  %2 = llm.linear %x, %w2 {transpose_weight} : (tensor<?x64xf32>, tensor<16x64xf32>) -> tensor<?x16xf32>
  %3 = llm.linear %x, %w3 {transpose_weight} : (tensor<?x64xf32>, tensor<16x64xf32>) -> tensor<?x16xf32>
  %4 = llm.linear %x, %f {transpose_weight} : (tensor<?x64xf32>, tensor<16x64xf32>) -> tensor<?x16xf32>
  %5 = llm.linear %x, %w5 {transpose_weight} : (tensor<?x64xf32>, tensor<16x64xf32>) -> tensor<?x16xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x16xf32>
}

// -----

// A mixture of experts' router stays a product of its own beside the shared
// expert's gate and up projections of the same rows (Qwen2-MoE): its logits
// rank the experts, and a joined product may be stored narrower.
// CHECK-LABEL: func.func @router_apart
//       CHECK:   %[[GU:.*]] = llm.linear %{{.*}} -> tensor<?x32xf32>
//       CHECK:   llm.split %[[GU]] {sizes = array<i64: 16, 16>}
//       CHECK:   %[[R:.*]] = llm.linear %{{.*}} -> tensor<?x4xf32>
//       CHECK:   llm.moe %{{.*}}, %[[R]]
func.func @router_apart(%x: tensor<?x8xf32>, %experts: tensor<4x16x8xf32>, %down: tensor<4x8x16xf32>) -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x8xf32>) {
  %wg = llm.constant dense<1.0> : tensor<16x8xf32>
  %wu = llm.constant dense<2.0> : tensor<16x8xf32>
  %wr = llm.constant dense<3.0> : tensor<4x8xf32>
  %g = llm.linear %x, %wg {transpose_weight} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %u = llm.linear %x, %wu {transpose_weight} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  %r = llm.linear %x, %wr {transpose_weight} : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  %y = llm.moe %x, %r, %experts, %experts, %down {top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<4x16x8xf32>, tensor<4x16x8xf32>, tensor<4x8x16xf32>) -> tensor<?x8xf32>
  return %g, %u, %y : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x8xf32>
}
