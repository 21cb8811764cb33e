// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(onnx-lower-to-linalg)'

// The lowering compiles fixed shapes and names the op whose shape is not.
func.func @dynamic_shape(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{cannot lower 'onnx.Neg': its result type 'tensor<?x4xf32>' is not a static shape}}
  %0 = onnx.Neg %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// MatMul of a scalar is not numpy's matmul.
func.func @matmul_scalar(%a: tensor<f32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to legalize operation 'onnx.MatMul'}}
  %0 = onnx.MatMul %a, %b : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Gemm's alpha and beta are floats: an integer Gemm is refused, not truncated.
func.func @gemm_integer(%a: tensor<2x3xi32>, %b: tensor<3x2xi32>) -> tensor<2x2xi32> {
  %none = onnx.None
  // expected-error @+1 {{failed to legalize operation 'onnx.Gemm'}}
  %0 = onnx.Gemm %a, %b, %none : (tensor<2x3xi32>, tensor<3x2xi32>, none) -> tensor<2x2xi32>
  return %0 : tensor<2x2xi32>
}

// -----

// A 2-D scale without a block size is neither per axis nor blocked.
func.func @dequantize_bad_scale(%x: tensor<3x4xi8>, %s: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %none = onnx.None
  // expected-error @+1 {{failed to legalize operation 'onnx.DequantizeLinear'}}
  %0 = onnx.DequantizeLinear %x, %s, %none : (tensor<3x4xi8>, tensor<3x4xf32>, none) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
