// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' 2>/dev/null | FileCheck %s

// QuickGELU(gate) * up: no pattern names it, so each onnx op becomes an
// llm.elementwise with its arithmetic, the scalar constant inlined.
// CHECK-LABEL: func.func @quick_gelu
//  CHECK-SAME:   (%[[G:.*]]: tensor<2x8x16xf32>, %[[U:.*]]: tensor<2x8x16xf32>)
//       CHECK:   %[[S:.*]] = llm.elementwise %[[G]] : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
//       CHECK:     arith.constant 1.702
//       CHECK:     arith.mulf
//       CHECK:   %[[SIG:.*]] = llm.elementwise %[[S]]
//       CHECK:     math.exp
//       CHECK:     arith.divf
//       CHECK:   %[[ACT:.*]] = llm.elementwise %[[G]], %[[SIG]]
//       CHECK:   llm.elementwise %[[ACT]], %[[U]]
//   CHECK-NOT:   onnx.
func.func @quick_gelu(%gate: tensor<2x8x16xf32>, %up: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %c = onnx.Constant dense<1.702> : tensor<f32>
  %s = onnx.Mul %gate, %c : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8x16xf32>
  %sig = onnx.Sigmoid %s : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %act = onnx.Mul %gate, %sig : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %y = onnx.Mul %act, %up : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Left alone: ops on tensors that are not [batch, seq, features] f32
// activations (a mask), and ops with an operand that is neither an
// activation nor a constant.
// CHECK-LABEL: func.func @not_activations
//   CHECK-NOT:   llm.elementwise
//       CHECK:   onnx.Sigmoid
//       CHECK:   onnx.Mul
func.func @not_activations(%mask: tensor<2x1x8x8xf32>, %x: tensor<2x8x16xf32>, %row: tensor<16xf32>) -> (tensor<2x1x8x8xf32>, tensor<2x8x16xf32>) {
  %m = onnx.Sigmoid %mask : (tensor<2x1x8x8xf32>) -> tensor<2x1x8x8xf32>
  %y = onnx.Mul %x, %row : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  return %m, %y : tensor<2x1x8x8xf32>, tensor<2x8x16xf32>
}

// -----

// A clamp (gpt-oss-style limits, one of them omitted): max by the lower
// bound, then min by the upper one, the constants inlined.
// CHECK-LABEL: func.func @clip
//       CHECK:   llm.elementwise %{{.*}} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
//       CHECK:     %[[LO:.*]] = arith.constant -7.000000e+00
//       CHECK:     %[[HI:.*]] = arith.constant 7.000000e+00
//       CHECK:     %[[X:.*]] = arith.maximumf %{{.*}}, %[[LO]]
//       CHECK:     arith.minimumf %[[X]], %[[HI]]
//       CHECK:   llm.elementwise %{{.*}} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
//   CHECK-NOT:     arith.maximumf
//       CHECK:     arith.minimumf
//   CHECK-NOT:   onnx.
func.func @clip(%x: tensor<2x8x16xf32>) -> (tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %lo = onnx.Constant dense<-7.0> : tensor<f32>
  %hi = onnx.Constant dense<7.0> : tensor<f32>
  %none = onnx.None
  %both = onnx.Clip %x, %lo, %hi : (tensor<2x8x16xf32>, tensor<f32>, tensor<f32>) -> tensor<2x8x16xf32>
  %upper = onnx.Clip %x, %none, %hi : (tensor<2x8x16xf32>, none, tensor<f32>) -> tensor<2x8x16xf32>
  return %both, %upper : tensor<2x8x16xf32>, tensor<2x8x16xf32>
}

// -----

// A bound that is not a constant leaves the Clip alone.
// CHECK-LABEL: func.func @clip_by_a_tensor
//   CHECK-NOT:   llm.elementwise
//       CHECK:   onnx.Clip
func.func @clip_by_a_tensor(%x: tensor<2x8x16xf32>, %lo: tensor<f32>) -> tensor<2x8x16xf32> {
  %none = onnx.None
  %y = onnx.Clip %x, %lo, %none : (tensor<2x8x16xf32>, tensor<f32>, none) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Squared ReLU as the genai builder writes it (Nemotron): Pow's exponent an
// int32 constant, inlined as the float 2.
// CHECK-LABEL: func.func @relu_squared_by_an_integer_power
//       CHECK:   llm.elementwise %{{.*}} : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
//       CHECK:     %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
//       CHECK:     math.powf %{{.*}}, %[[TWO]]
//   CHECK-NOT:   onnx.
func.func @relu_squared_by_an_integer_power(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %two = onnx.Constant dense<2> : tensor<1xi32>
  %r = onnx.Relu %x : (tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %y = onnx.Pow %r, %two : (tensor<2x8x16xf32>, tensor<1xi32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Qwen2-MoE's shared expert scaled by sigmoid of its [hidden, 1] gate: the
// Mul reads one value per token ([batch, seq, 1]) beside the activation.
// CHECK-LABEL: func.func @scaled_by_a_value_per_token
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x?x16xf32>, %[[G:.*]]: tensor<?x?x1xf32>)
//       CHECK:   %[[S:.*]] = llm.elementwise %[[G]] : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
//       CHECK:   llm.elementwise %[[S]], %[[X]] : (tensor<?x?x1xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
//       CHECK:     arith.mulf
//   CHECK-NOT:   onnx.
func.func @scaled_by_a_value_per_token(%x: tensor<?x?x16xf32>, %gate: tensor<?x?x1xf32>) -> tensor<?x?x16xf32> {
  %s = onnx.Sigmoid %gate : (tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %y = onnx.Mul %s, %x : (tensor<?x?x1xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// Left alone: one value per position shared by the batch ([1, seq, 1]
// against [2, seq, features]) is not one value per row of the result.
// CHECK-LABEL: func.func @not_a_value_per_token
//   CHECK-NOT:   llm.elementwise
//       CHECK:   onnx.Mul
func.func @not_a_value_per_token(%x: tensor<2x8x16xf32>, %shared: tensor<1x8x1xf32>) -> tensor<2x8x16xf32> {
  %y = onnx.Mul %x, %shared : (tensor<2x8x16xf32>, tensor<1x8x1xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}
