// -debug-only=raise-onnx-to-llm says why a near miss was not raised; without
// it the pass is silent. The leftover is then reported by name (the Pow on
// the activation is raised to llm.elementwise; the rest of the norm is not).
// RUN: llmc-opt %s --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' -debug-only=raise-onnx-to-llm -o /dev/null 2>&1 | FileCheck %s --check-prefix=DEBUG
// RUN: llmc-opt %s --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=QUIET
// RUN: not llmc-opt %s --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=STRICT

// DEBUG: no match: ReduceMean is not over the last axis with keepdims
// QUIET-NOT: no match
// QUIET: warning: onnx ops not raised to llm: onnx.ReduceMean x1, onnx.Mul x1
// STRICT: error: onnx ops not raised to llm: onnx.ReduceMean x1, onnx.Mul x1
// STRICT: note: first onnx.ReduceMean
func.func @rms_norm_wrong_axis(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %two = onnx.Constant dense<2.0> : tensor<f32>
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %eps = onnx.Constant dense<1.0e-5> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %w = onnx.Constant dense<0.5> : tensor<16xf32>
  %sq = onnx.Pow %x, %two : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8x16xf32>
  %mean = onnx.ReduceMean %sq, %axes : (tensor<2x8x16xf32>, tensor<1xi64>) -> tensor<2x1x16xf32>
  %sum = onnx.Add %mean, %eps : (tensor<2x1x16xf32>, tensor<f32>) -> tensor<2x1x16xf32>
  %root = onnx.Sqrt %sum : (tensor<2x1x16xf32>) -> tensor<2x1x16xf32>
  %inv = onnx.Div %one, %root : (tensor<f32>, tensor<2x1x16xf32>) -> tensor<2x1x16xf32>
  %normed = onnx.Mul %x, %inv : (tensor<2x8x16xf32>, tensor<2x1x16xf32>) -> tensor<2x8x16xf32>
  %y = onnx.Mul %w, %normed : (tensor<16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}
