// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(func.func(llm-lora-sites))' | FileCheck %s

// Each linear whose MatMul node names a decoder layer's module gets a site,
// numbered in program order; the LM head (no `layers.N`) gets none. The
// function lists the sites for the manifest.
// CHECK-LABEL: func.func @named_linears
//  CHECK-SAME:   attributes {llmc.lora_sites = [{in = 32 : i64, module = "model.layers.0.self_attn.q_proj", out = 16 : i64}, {in = 16 : i64, module = "model.layers.0.mlp.down_proj", out = 32 : i64}]}
//       CHECK:   %[[Q:.*]] = llm.linear %[[X:[^,]*]], %{{.*}} :
//       CHECK:   %[[QL:.*]] = llm.lora %[[X]], %[[Q]] {module = "model.layers.0.self_attn.q_proj", site = 0 : i64} : (tensor<?x32xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
//       CHECK:   %[[D:.*]] = llm.linear %[[QL]], %{{.*}} :
//       CHECK:   %[[DL:.*]] = llm.lora %[[QL]], %[[D]] {module = "model.layers.0.mlp.down_proj", site = 1 : i64}
//       CHECK:   %[[L:.*]] = llm.logits %[[DL]]
//   CHECK-NOT:   llm.lora
//       CHECK:   return %[[L]]
func.func @named_linears(%x: tensor<?x32xf32>) -> tensor<?x64xf32> {
  %wq = llm.constant dense<0.1> : tensor<32x16xf32>
  %wd = llm.constant dense<0.2> : tensor<16x32xf32>
  %wh = llm.constant dense<0.3> : tensor<32x64xf32>
  %q = llm.linear %x, %wq : (tensor<?x32xf32>, tensor<32x16xf32>) -> tensor<?x16xf32> loc("/model/layers.0/self_attn/q_proj/MatMul")
  %d = llm.linear %q, %wd : (tensor<?x16xf32>, tensor<16x32xf32>) -> tensor<?x32xf32> loc(fused["/model/layers.0/mlp/down_proj/MatMul", "/model/layers.0/mlp/down_proj/Add"])
  %l = llm.logits %d, %wh : (tensor<?x32xf32>, tensor<32x64xf32>) -> tensor<?x64xf32> loc("/lm_head/MatMul")
  return %l : tensor<?x64xf32>
}

// -----

// A linear outside the decoder layers (a projection of the embeddings) and
// one whose name is not a module path get no site; with no site at all the
// model cannot serve adapters.
// expected-error @+1 {{has no linear layer whose ONNX node names a decoder layer's module}}
func.func @no_named_linear(%x: tensor<?x32xf32>) -> tensor<?x16xf32> {
  %w = llm.constant dense<0.1> : tensor<32x16xf32>
  %a = llm.linear %x, %w : (tensor<?x32xf32>, tensor<32x16xf32>) -> tensor<?x16xf32> loc("/model/embed_proj/MatMul")
  %b = llm.linear %x, %w : (tensor<?x32xf32>, tensor<32x16xf32>) -> tensor<?x16xf32> loc("node_MatMul_12")
  %c = llm.add %a, %b : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  return %c : tensor<?x16xf32>
}

// -----

// Two linears of one module (a joint projection split at raising) would each
// need part of the adapter's product.
func.func @split_module(%x: tensor<?x32xf32>) -> tensor<?x16xf32> {
  %w = llm.constant dense<0.1> : tensor<32x16xf32>
  %a = llm.linear %x, %w : (tensor<?x32xf32>, tensor<32x16xf32>) -> tensor<?x16xf32> loc("/model/layers.3/self_attn/qkv_proj/MatMul")
  // A node's name is a location without a line: the error is reported there.
  // expected-error @unknown {{computes part of module 'model.layers.3.self_attn.qkv_proj', as another linear does}}
  %b = llm.linear %x, %w : (tensor<?x32xf32>, tensor<32x16xf32>) -> tensor<?x16xf32> loc("/model/layers.3/self_attn/qkv_proj/MatMul")
  %c = llm.add %a, %b : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>
  return %c : tensor<?x16xf32>
}

// -----

// Sites are for the ragged step's [tokens, features] rows.
func.func @dense_rows(%x: tensor<?x?x32xf32>) -> tensor<?x?x16xf32> {
  %w = llm.constant dense<0.1> : tensor<32x16xf32>
  // expected-error @unknown {{of module 'model.layers.0.self_attn.q_proj' does not map [tokens, features] rows}}
  %a = llm.linear %x, %w : (tensor<?x?x32xf32>, tensor<32x16xf32>) -> tensor<?x?x16xf32> loc("/model/layers.0/self_attn/q_proj/MatMul")
  return %a : tensor<?x?x16xf32>
}
