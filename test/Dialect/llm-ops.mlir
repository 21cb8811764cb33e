// RUN: llmc-opt %s | llmc-opt | FileCheck %s
// The llm ops print and parse back (round trip), unknown dims allowed.

// CHECK-LABEL: func.func @decoder_layer
func.func @decoder_layer(%h: tensor<?x?x64xf32>, %pos: tensor<?x?xi64>, %mask: tensor<?x?xi64>,
                         %past_k: tensor<?x2x?x16xf32>, %past_v: tensor<?x2x?x16xf32>,
                         %w: tensor<64xf32>, %wq: tensor<64x64xf32>, %wkv: tensor<32x64xf32>,
                         %inv_freq: tensor<8xf32>) -> tensor<?x?x64xf32> {
  %none = onnx.None
  // CHECK: llm.rms_norm %{{.*}} {epsilon = 9.99999974E-6 : f32}
  %n = llm.rms_norm %h, %w {epsilon = 1.0e-5 : f32} : (tensor<?x?x64xf32>, tensor<64xf32>) -> tensor<?x?x64xf32>
  %q = llm.linear %n, %wq, %none : (tensor<?x?x64xf32>, tensor<64x64xf32>, none) -> tensor<?x?x64xf32>
  // CHECK: llm.linear %{{.*}} {transpose_weight}
  %k = llm.linear %n, %wkv, %none {transpose_weight} : (tensor<?x?x64xf32>, tensor<32x64xf32>, none) -> tensor<?x?x32xf32>
  %qh = llm.split_heads %q {num_heads = 4 : i64} : (tensor<?x?x64xf32>) -> tensor<?x4x?x16xf32>
  %kh = llm.split_heads %k {num_heads = 2 : i64} : (tensor<?x?x32xf32>) -> tensor<?x2x?x16xf32>
  // CHECK: llm.rope
  %qr = llm.rope %qh, %pos, %inv_freq : (tensor<?x4x?x16xf32>, tensor<?x?xi64>, tensor<8xf32>) -> tensor<?x4x?x16xf32>
  %kr = llm.rope %kh, %pos, %inv_freq : (tensor<?x2x?x16xf32>, tensor<?x?xi64>, tensor<8xf32>) -> tensor<?x2x?x16xf32>
  // CHECK: llm.kv_concat
  %kc = llm.kv_concat %past_k, %kr : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  %vc = llm.kv_concat %past_v, %kh : (tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32>
  // CHECK: llm.attention %{{.*}} {causal, scale = 2.500000e-01 : f32}
  %a = llm.attention %qr, %kc, %vc, %mask {causal, scale = 0.25 : f32} : (tensor<?x4x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x2x?x16xf32>, tensor<?x?xi64>) -> tensor<?x4x?x16xf32>
  %o = llm.merge_heads %a : (tensor<?x4x?x16xf32>) -> tensor<?x?x64xf32>
  %r = llm.add %h, %o : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %g = llm.swiglu %r, %r : (tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  return %g : tensor<?x?x64xf32>
}
