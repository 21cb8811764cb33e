// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(llm-promote-to-f32))' -verify-diagnostics | FileCheck %s

// An f16 model computes in f32: the signature, the results, the body of an
// elementwise op and every constant are f32, with the same values (f16's
// largest, smallest subnormal, -0 and inf included).
// CHECK-LABEL: func.func @half_model
//  CHECK-SAME:   (%{{.*}}: tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
//       CHECK:   llm.constant dense<[1.000000e+00, -2.500000e+00, 6.550400e+04, 5.96046448E-8, -0.000000e+00, 0x7F800000]> : tensor<6xf32>
//       CHECK:   %[[W:.*]] = llm.constant dense<1.500000e+00> : tensor<4xf32>
//       CHECK:   %[[N:.*]] = llm.rms_norm %{{.*}}, %[[W]] {{.*}} : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
//       CHECK:   llm.elementwise %[[N]] : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
//       CHECK:   ^bb0(%[[X:.*]]: f32):
//       CHECK:     %[[C:.*]] = arith.constant 1.702{{.*}} : f32
//       CHECK:     arith.mulf %[[X]], %[[C]] : f32
func.func @half_model(%x: tensor<2x3x4xf16>) -> tensor<2x3x4xf16> {
  %table = llm.constant dense<[1.0, -2.5, 65504.0, 5.9604645E-8, -0.0, 0x7C00]> : tensor<6xf16>
  %w = llm.constant dense<1.5> : tensor<4xf16>
  %n = llm.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<2x3x4xf16>, tensor<4xf16>) -> tensor<2x3x4xf16>
  %s = llm.elementwise %n : (tensor<2x3x4xf16>) -> tensor<2x3x4xf16> {
  ^bb0(%e: f16):
    %c = arith.constant 1.702 : f16
    %m = arith.mulf %e, %c : f16
    llm.yield %m : f16
  }
  return %s : tensor<2x3x4xf16>
}

// -----

// bf16 widens by its bits; weights held as resource blobs stay blobs.
// CHECK-LABEL: func.func @bf16_and_blobs
//       CHECK:   llm.constant dense<[1.000000e+00, -3.140625]> : tensor<2xf32>
//       CHECK:   llm.constant dense_resource<{{.*}}> : tensor<2xf32>
//       CHECK:   "0x04000000{{0000803F000000C0}}"
func.func @bf16_and_blobs() -> (tensor<2xbf16>, tensor<2xf16>) {
  %a = llm.constant dense<[1.0, -3.140625]> : tensor<2xbf16>
  %b = llm.constant dense_resource<weight> : tensor<2xf16>
  return %a, %b : tensor<2xbf16>, tensor<2xf16>
}
{-#
  dialect_resources: {
    builtin: {
      weight: "0x02000000003C00C0"
    }
  }
#-}

// -----

// An f32 model is left as it is.
// CHECK-LABEL: func.func @f32_model
//  CHECK-SAME:   (%{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<2x4xi64>) -> tensor<2x4xf32>
//       CHECK:   llm.constant dense<2.000000e+00> : tensor<4xf32>
func.func @f32_model(%x: tensor<2x4xf32>, %ids: tensor<2x4xi64>) -> tensor<2x4xf32> {
  %w = llm.constant dense<2.0> : tensor<4xf32>
  %n = llm.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %n : tensor<2x4xf32>
}

// -----

// A half-precision weight whose blob is gone cannot be widened: one error.
func.func @missing_blob() -> tensor<2xf16> {
  // expected-error @+1 {{holds a half-precision constant without readable data}}
  %b = llm.constant dense_resource<gone> : tensor<2xf16>
  return %b : tensor<2xf16>
}
