// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm))' -o /dev/null 2>&1 | FileCheck %s

// ALiBi's per-head slopes (2^-2, 2^-4) times positions that are no model input
// (so no probe shows them to be the keys'), added to the scores. The leftovers
// are refused with the feature named.
// CHECK: attention with linear biases per head (ALiBi) that are not proven to be slope * the key's position is not supported
func.func @alibi(%q: tensor<1x2x3x4xf32>, %kT: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>, %positions: tensor<1x1x1x3xf32>) -> tensor<1x2x3x4xf32> {
  %slopes = onnx.Constant dense<[[[0.25]], [[0.0625]]]> : tensor<2x1x1xf32>
  %scores = onnx.MatMul %q, %kT : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %bias = onnx.Mul %slopes, %positions : (tensor<2x1x1xf32>, tensor<1x1x1x3xf32>) -> tensor<1x2x1x3xf32>
  %biased = onnx.Add %scores, %bias : (tensor<1x2x3x3xf32>, tensor<1x2x1x3xf32>) -> tensor<1x2x3x3xf32>
  %p = onnx.Softmax %biased {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = onnx.MatMul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// The scores selected where a mask allows, elsewhere a constant that does not
// hide a key (GPT-Neo's finfo.min would be an added mask).
// CHECK: attention masked by selecting its scores against a constant that does not hide a key (Where(mask, scores, constant)) is not supported
func.func @selected_scores(%q: tensor<1x2x3x4xf32>, %kT: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>, %keep: tensor<1x1x3x3xi1>) -> tensor<1x2x3x4xf32> {
  %lowest = onnx.Constant dense<-1.0> : tensor<f32>
  %scores = onnx.MatMul %q, %kT : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %masked = onnx.Where %keep, %scores, %lowest : (tensor<1x1x3x3xi1>, tensor<1x2x3x3xf32>, tensor<f32>) -> tensor<1x2x3x3xf32>
  %p = onnx.Softmax %masked {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = onnx.MatMul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}

// -----

// Near miss: one bias for every head (no slopes; the rows are alike) is not
// called ALiBi; the mask it adds is what fails.
// CHECK: attention mask:
// CHECK-NOT: ALiBi
func.func @same_bias_per_head(%q: tensor<1x2x3x4xf32>, %kT: tensor<1x2x4x3xf32>, %v: tensor<1x2x3x4xf32>, %positions: tensor<1x1x1x3xf32>) -> tensor<1x2x3x4xf32> {
  %slopes = onnx.Constant dense<[[[0.25]], [[0.25]]]> : tensor<2x1x1xf32>
  %scores = onnx.MatMul %q, %kT : (tensor<1x2x3x4xf32>, tensor<1x2x4x3xf32>) -> tensor<1x2x3x3xf32>
  %bias = onnx.Mul %slopes, %positions : (tensor<2x1x1xf32>, tensor<1x1x1x3xf32>) -> tensor<1x2x1x3xf32>
  %biased = onnx.Add %scores, %bias : (tensor<1x2x3x3xf32>, tensor<1x2x1x3xf32>) -> tensor<1x2x3x3xf32>
  %p = onnx.Softmax %biased {axis = -1 : i64} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %o = onnx.MatMul %p, %v : (tensor<1x2x3x3xf32>, tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %o : tensor<1x2x3x4xf32>
}
