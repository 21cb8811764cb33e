// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm))' -o /dev/null 2>&1 | FileCheck %s

// rotate_every_two left written out, with no cos and sin that raise: the
// leftovers are refused with the feature named.
// CHECK: onnx ops not raised to llm: onnx.Slice x2, onnx.Neg x1, onnx.Unsqueeze x2, onnx.Concat x1, onnx.Reshape x1; a rotary embedding over interleaved pairs written out (rotate_every_two) whose cos and sin are not repeated pairwise from a table read at the positions, nor from angles of the positions times inv_freq is not supported
func.func @rotate_every_two(%x: tensor<1x2x3x8xf32>) -> tensor<1x2x3x8xf32> {
  %zero = onnx.Constant dense<0> : tensor<1xi64>
  %one = onnx.Constant dense<1> : tensor<1xi64>
  %two = onnx.Constant dense<2> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %shape = onnx.Constant dense<[1, 2, 3, 8]> : tensor<4xi64>
  %even = onnx.Slice %x, %zero, %end, %last, %two : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %odd = onnx.Slice %x, %one, %end, %last, %two : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %neg = onnx.Neg %odd : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  %a = onnx.Unsqueeze %neg, %last : (tensor<1x2x3x4xf32>, tensor<1xi64>) -> tensor<1x2x3x4x1xf32>
  %b = onnx.Unsqueeze %even, %last : (tensor<1x2x3x4xf32>, tensor<1xi64>) -> tensor<1x2x3x4x1xf32>
  %pairs = onnx.Concat %a, %b {axis = -1 : i64} : (tensor<1x2x3x4x1xf32>, tensor<1x2x3x4x1xf32>) -> tensor<1x2x3x4x2xf32>
  %y = onnx.Reshape %pairs, %shape : (tensor<1x2x3x4x2xf32>, tensor<4xi64>) -> tensor<1x2x3x8xf32>
  return %y : tensor<1x2x3x8xf32>
}

// -----

// Near miss: the Neg of a half (rotate_half's) left over is not called
// interleaved; the leftovers are named with no feature.
// CHECK: onnx ops not raised to llm: onnx.Slice x1, onnx.Neg x1{{$}}
func.func @negated_half(%x: tensor<1x2x3x8xf32>) -> tensor<1x2x3x4xf32> {
  %four = onnx.Constant dense<4> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %last = onnx.Constant dense<-1> : tensor<1xi64>
  %none = onnx.None
  %half = onnx.Slice %x, %four, %end, %last, %none : (tensor<1x2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<1x2x3x4xf32>
  %neg = onnx.Neg %half : (tensor<1x2x3x4xf32>) -> tensor<1x2x3x4xf32>
  return %neg : tensor<1x2x3x4xf32>
}
