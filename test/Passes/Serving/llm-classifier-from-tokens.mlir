// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-classifier-from-tokens{token-ids=1,2}))' -verify-diagnostics | FileCheck %s
// One token: llm-classifier-from-token.mlir.

// Two tokens: the head's one column is token 2's minus token 1's (0.3 - 0.2
// in every row), the bias's likewise, and the step will return class logits.
// CHECK-LABEL: func.func @yes_minus_no
//  CHECK-SAME:   -> (tensor<2x5x1xf32> {onnx.name = "logits"}) attributes {llmc.pooled_at_last_token}
//       CHECK:   %[[W:.*]] = llm.constant dense<0.10000{{[0-9]*}}> : tensor<4x1xf32>
//       CHECK:   %[[B:.*]] = llm.constant dense<5.000000e-01> : tensor<1xf32>
//       CHECK:   %[[S:.*]] = llm.logits %{{.*}}, %[[W]] bias(%[[B]]) : (tensor<2x5x4xf32>, tensor<4x1xf32>, tensor<1xf32>) -> tensor<2x5x1xf32>
//       CHECK:   return %[[S]]
func.func @yes_minus_no(%h: tensor<2x5x4xf32>) -> (tensor<2x5x6xf32> {onnx.name = "logits"}) {
  %w = llm.constant dense<[[0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]]> : tensor<4x6xf32>
  %b = llm.constant dense<[0.0, 0.5, 1.0, 2.0, 0.0, 0.0]> : tensor<6xf32>
  %l = llm.logits %h, %w bias(%b) : (tensor<2x5x4xf32>, tensor<4x6xf32>, tensor<6xf32>) -> tensor<2x5x6xf32>
  return %l : tensor<2x5x6xf32>
}

// -----

// A tied head reads the embedding table as [vocab, hidden]: its row is the
// column; the table stays for the embedding.
// CHECK-LABEL: func.func @tied
//       CHECK:   %[[TABLE:.*]] = llm.constant dense<{{.*}}> : tensor<6x4xf32>
//       CHECK:   llm.embedding %[[TABLE]]
//       CHECK:   %[[W:.*]] = llm.constant dense<1.000000e+00> : tensor<1x4xf32>
//       CHECK:   llm.logits %{{.*}}, %[[W]] {transpose_weight} : (tensor<?x?x4xf32>, tensor<1x4xf32>) -> tensor<?x?x1xf32>
func.func @tied(%ids: tensor<?x?xi64>) -> (tensor<?x?x6xf32> {onnx.name = "logits"}) {
  %table = llm.constant dense<[[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0], [4.0, 4.0, 4.0, 4.0], [5.0, 5.0, 5.0, 5.0]]> : tensor<6x4xf32>
  %e = llm.embedding %table, %ids : (tensor<6x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4xf32>
  %l = llm.logits %e, %table {transpose_weight} : (tensor<?x?x4xf32>, tensor<6x4xf32>) -> tensor<?x?x6xf32>
  return %l : tensor<?x?x6xf32>
}

// -----

// A softcap does not commute with the difference of two logits.
func.func @softcapped(%h: tensor<?x?x4xf32>) -> (tensor<?x?x6xf32> {onnx.name = "logits"}) {
  %w = llm.constant dense<0.5> : tensor<4x6xf32>
  // expected-error @+1 {{maps each logit through an epilogue (a softcap, a scaling), which does not commute with the difference of two tokens' logits}}
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

// A head whose weight is not known at compile time.
func.func @runtime_weight(%h: tensor<?x?x4xf32>, %w: tensor<4x6xf32>) -> tensor<?x?x6xf32> {
  // expected-error @+1 {{has a weight that is not known at compile time as f32}}
  %l = llm.logits %h, %w : (tensor<?x?x4xf32>, tensor<4x6xf32>) -> tensor<?x?x6xf32>
  return %l : tensor<?x?x6xf32>
}

// -----

// An embedding model has no LM head to score by.
// expected-error @+1 {{has 0 LM heads (llm.logits); scoring by tokens needs the one of a causal LM}}
func.func @no_head(%ids: tensor<?x?xi64>) -> (tensor<?x?x4xf32> {onnx.name = "last_hidden_state"}) {
  %table = llm.constant dense<0.5> : tensor<6x4xf32>
  %e = llm.embedding %table, %ids : (tensor<6x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4xf32>
  return %e : tensor<?x?x4xf32>
}

// -----

// A classifier already.
// expected-error @+1 {{is a sequence classifier already}}
func.func @classifier(%h: tensor<?x?x4xf32>) -> (tensor<?x?x3xf32> {onnx.name = "logits"}) attributes {llmc.pooled_at_last_token} {
  %w = llm.constant dense<0.5> : tensor<4x3xf32>
  %l = llm.logits %h, %w : (tensor<?x?x4xf32>, tensor<4x3xf32>) -> tensor<?x?x3xf32>
  return %l : tensor<?x?x3xf32>
}

// -----

// A token the head does not have.
func.func @small_vocabulary(%h: tensor<?x?x4xf32>) -> (tensor<?x?x2xf32> {onnx.name = "logits"}) {
  %w = llm.constant dense<0.5> : tensor<4x2xf32>
  // expected-error @+1 {{has 2 logits; token id 2 is not one of them}}
  %l = llm.logits %h, %w : (tensor<?x?x4xf32>, tensor<4x2xf32>) -> tensor<?x?x2xf32>
  return %l : tensor<?x?x2xf32>
}
