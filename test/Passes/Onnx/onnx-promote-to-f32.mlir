// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-promote-to-f32))' -verify-diagnostics | FileCheck %s

// An f16 model computes in f32: the signature, the results, every constant
// (f16's largest, smallest subnormal, -0 and inf included, exactly) and the
// casts to f16 around what the exporter computed in f32, which become no-op
// casts to f32.
// CHECK-LABEL: func.func @half_model
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x6xf32>) -> tensor<2x6xf32>
//       CHECK:   onnx.Constant dense<[1.000000e+00, -2.500000e+00, 6.550400e+04, 5.96046448E-8, -0.000000e+00, 0x7F800000]> : tensor<6xf32>
//       CHECK:   %[[UP:.*]] = onnx.Cast %[[X]] {to = 1 : i64} : (tensor<2x6xf32>) -> tensor<2x6xf32>
//       CHECK:   %[[SUM:.*]] = onnx.Add %[[UP]], %{{.*}} : (tensor<2x6xf32>, tensor<6xf32>) -> tensor<2x6xf32>
//       CHECK:   onnx.Cast %[[SUM]] {to = 1 : i64} : (tensor<2x6xf32>) -> tensor<2x6xf32>
//       CHECK:   onnx.ConstantOfShape %{{.*}} {value = dense<-6.550400e+04> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<2x6xf32>
func.func @half_model(%x: tensor<2x6xf16>) -> tensor<2x6xf16> {
  %c = onnx.Constant dense<[1.0, -2.5, 65504.0, 5.9604645E-8, -0.0, 0x7C00]> : tensor<6xf16>
  %up = onnx.Cast %x {to = 1 : i64} : (tensor<2x6xf16>) -> tensor<2x6xf32>
  %cf = onnx.Cast %c {to = 1 : i64} : (tensor<6xf16>) -> tensor<6xf32>
  %sum = onnx.Add %up, %cf : (tensor<2x6xf32>, tensor<6xf32>) -> tensor<2x6xf32>
  %down = onnx.Cast %sum {to = 10 : i64} : (tensor<2x6xf32>) -> tensor<2x6xf16>
  %shape = onnx.Constant dense<[2, 6]> : tensor<2xi64>
  %lowest = onnx.ConstantOfShape %shape {value = dense<-65504.0> : tensor<1xf16>} : (tensor<2xi64>) -> tensor<2x6xf16>
  %out = onnx.Add %down, %lowest : (tensor<2x6xf16>, tensor<2x6xf16>) -> tensor<2x6xf16>
  return %out : tensor<2x6xf16>
}

// -----

// bf16 widens by its bits; weights held as resource blobs stay blobs; a
// DequantizeLinear to bf16 dequantizes to f32.
// CHECK-LABEL: func.func @bf16_and_blobs
//       CHECK:   onnx.Constant dense<[1.000000e+00, -3.140625]> : tensor<2xf32>
//       CHECK:   onnx.Constant dense_resource<{{.*}}> : tensor<2xf32>
//       CHECK:   onnx.DequantizeLinear {{.*}} {output_dtype = 1 : i64} : (tensor<2xi8>, tensor<f32>, none) -> tensor<2xf32>
//       CHECK:   "0x04000000{{0000803F000000C0}}"
func.func @bf16_and_blobs(%q: tensor<2xi8>) -> (tensor<2xbf16>, tensor<2xf16>, tensor<2xbf16>) {
  %none = onnx.None
  %a = onnx.Constant dense<[1.0, -3.140625]> : tensor<2xbf16>
  %b = onnx.Constant dense_resource<weight> : tensor<2xf16>
  %s = onnx.Constant dense<0.5> : tensor<bf16>
  %d = onnx.DequantizeLinear %q, %s, %none {output_dtype = 16 : i64} : (tensor<2xi8>, tensor<bf16>, none) -> tensor<2xbf16>
  return %a, %b, %d : tensor<2xbf16>, tensor<2xf16>, tensor<2xbf16>
}
{-#
  dialect_resources: {
    builtin: {
      weight: "0x02000000003C00C0"
    }
  }
#-}

// -----

// An f32 model is left as it is, casts to other types included.
// CHECK-LABEL: func.func @f32_model
//  CHECK-SAME:   (%{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<2x4xi64>) -> tensor<2x4xf32>
//       CHECK:   onnx.Constant dense<2.000000e+00> : tensor<4xf32>
//       CHECK:   onnx.Cast %{{.*}} {to = 1 : i64} : (tensor<2x4xi64>) -> tensor<2x4xf32>
func.func @f32_model(%x: tensor<2x4xf32>, %ids: tensor<2x4xi64>) -> tensor<2x4xf32> {
  %w = onnx.Constant dense<2.0> : tensor<4xf32>
  %f = onnx.Cast %ids {to = 1 : i64} : (tensor<2x4xi64>) -> tensor<2x4xf32>
  %m = onnx.Mul %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %s = onnx.Add %m, %f : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %s : tensor<2x4xf32>
}

// -----

// A half-precision weight whose blob is gone cannot be widened: one error.
func.func @missing_blob() -> tensor<2xf16> {
  // expected-error @+1 {{holds a half-precision constant without readable data}}
  %b = onnx.Constant dense_resource<gone> : tensor<2xf16>
  return %b : tensor<2xf16>
}
