// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-classifier-from-tokens{token-ids=3}))' -verify-diagnostics | FileCheck %s

// One token: the head's one column is the token's (0.4), the bias its own (2.0).
// CHECK-LABEL: func.func @yes
//  CHECK-SAME:   -> (tensor<2x5x1xf32> {onnx.name = "logits"}) attributes {llmc.pooled_at_last_token}
//       CHECK:   %[[W:.*]] = llm.constant dense<4.000000e-01> : tensor<4x1xf32>
//       CHECK:   %[[B:.*]] = llm.constant dense<2.000000e+00> : tensor<1xf32>
//       CHECK:   llm.logits %{{.*}}, %[[W]] bias(%[[B]])
func.func @yes(%h: tensor<2x5x4xf32>) -> (tensor<2x5x6xf32> {onnx.name = "logits"}) {
  %w = llm.constant dense<[[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]]> : tensor<4x6xf32>
  %b = llm.constant dense<[0.0, 0.5, 1.0, 2.0, 0.0, 0.0]> : tensor<6xf32>
  %l = llm.logits %h, %w bias(%b) : (tensor<2x5x4xf32>, tensor<4x6xf32>, tensor<6xf32>) -> tensor<2x5x6xf32>
  return %l : tensor<2x5x6xf32>
}

// -----

// A tied head: row 3 of the embedding table.
// CHECK-LABEL: func.func @tied
//       CHECK:   %[[W:.*]] = llm.constant dense<3.000000e+00> : tensor<1x4xf32>
//       CHECK:   llm.logits %{{.*}}, %[[W]] {transpose_weight}
func.func @tied(%ids: tensor<?x?xi64>) -> (tensor<?x?x6xf32> {onnx.name = "logits"}) {
  %table = llm.constant dense<[[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0], [4.0, 4.0, 4.0, 4.0], [5.0, 5.0, 5.0, 5.0]]> : tensor<6x4xf32>
  %e = llm.embedding %table, %ids : (tensor<6x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4xf32>
  %l = llm.logits %e, %table {transpose_weight} : (tensor<?x?x4xf32>, tensor<6x4xf32>) -> tensor<?x?x6xf32>
  return %l : tensor<?x?x6xf32>
}

// -----

// One token's logit keeps the head's softcap.
// CHECK-LABEL: func.func @softcapped
//       CHECK:   llm.logits {{.*}} -> tensor<?x?x1xf32> {
//       CHECK:     math.tanh
func.func @softcapped(%h: tensor<?x?x4xf32>) -> (tensor<?x?x6xf32> {onnx.name = "logits"}) {
  %w = llm.constant dense<0.5> : tensor<4x6xf32>
  %l = llm.logits %h, %w : (tensor<?x?x4xf32>, tensor<4x6xf32>) -> tensor<?x?x6xf32> {
  ^bb0(%x: f32):
    %c = arith.constant 30.0 : f32
    %d = arith.divf %x, %c : f32
    %t = math.tanh %d : f32
    %m = arith.mulf %t, %c : f32
    llm.yield %m : f32
  }
  return %l : tensor<?x?x6xf32>
}

// -----

// Logits that go on through other ops are not the head's own.
func.func @logits_used(%h: tensor<?x?x4xf32>) -> (tensor<?x?x6xf32> {onnx.name = "logits"}) {
  %w = llm.constant dense<0.5> : tensor<4x6xf32>
  // expected-error @+1 {{feeds llm.silu; scoring by tokens needs the logits returned as they are}}
  %l = llm.logits %h, %w : (tensor<?x?x4xf32>, tensor<4x6xf32>) -> tensor<?x?x6xf32>
  %s = llm.silu %l : (tensor<?x?x6xf32>) -> tensor<?x?x6xf32>
  return %s : tensor<?x?x6xf32>
}
