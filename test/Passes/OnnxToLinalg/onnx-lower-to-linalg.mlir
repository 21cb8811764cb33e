// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(onnx-lower-to-linalg)' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(llmc-graph)' | FileCheck %s --check-prefix=LOOPS

// Broadcasting: the [4] operand is read along the last dim; unsigned ints lose their sign
// in the signature and pick the unsigned ops.
// CHECK-LABEL: func.func @add_broadcast
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x4xi8>, %[[Y:.*]]: tensor<4xi8>) -> tensor<2x4xi8>
//       CHECK:   %[[EMPTY:.*]] = tensor.empty() : tensor<2x4xi8>
//       CHECK:   %[[SUM:.*]] = linalg.generic
//  CHECK-SAME:     ins(%[[X]], %[[Y]] : tensor<2x4xi8>, tensor<4xi8>) outs(%[[EMPTY]] : tensor<2x4xi8>)
//       CHECK:     arith.addi
//       CHECK:   %[[QUOTIENT:.*]] = linalg.generic
//  CHECK-SAME:     ins(%[[SUM]], %[[Y]]
//       CHECK:     arith.divui
//       CHECK:   return %[[QUOTIENT]]
// LOOPS-LABEL: func.func @add_broadcast
//  LOOPS-SAME:   (%{{.*}}: memref<2x4xi8>, %{{.*}}: memref<4xi8>, %{{.*}}: memref<2x4xi8>)
//       LOOPS:   scf.for
//   LOOPS-NOT:   linalg.
func.func @add_broadcast(%x: tensor<2x4xui8>, %y: tensor<4xui8>) -> tensor<2x4xui8> {
  %0 = onnx.Add %x, %y : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  %1 = onnx.Div %0, %y : (tensor<2x4xui8>, tensor<4xui8>) -> tensor<2x4xui8>
  return %1 : tensor<2x4xui8>
}

// -----

// A unit dim broadcast against a wider one reads element 0.
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @mul_unit_dim
//       CHECK:   linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]]
//       CHECK:     arith.mulf
func.func @mul_unit_dim(%x: tensor<3x4xf32>, %y: tensor<1x4xf32>) -> tensor<3x4xf32> {
  %0 = onnx.Mul %x, %y : (tensor<3x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Python's modulo for signed integers: the remainder moves to the divisor's sign.
// CHECK-LABEL: func.func @mod_python
//       CHECK:   arith.remsi
//       CHECK:   arith.xori
//       CHECK:   arith.select
func.func @mod_python(%x: tensor<6xi32>, %y: tensor<6xi32>) -> tensor<6xi32> {
  %0 = onnx.Mod %x, %y : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi32>
  return %0 : tensor<6xi32>
}

// -----

// C's fmod keeps the dividend's sign.
// CHECK-LABEL: func.func @mod_fmod
//       CHECK:   arith.remf
//   CHECK-NOT:   arith.select
func.func @mod_fmod(%x: tensor<6xf32>, %y: tensor<6xf32>) -> tensor<6xf32> {
  %0 = onnx.Mod %x, %y {fmod = 1 : i64} : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// Comparisons give i1; unsigned operands compare unsigned; Where selects.
// CHECK-LABEL: func.func @compare_select
//       CHECK:   arith.cmpi ult
//       CHECK:   arith.select
func.func @compare_select(%a: tensor<4xui32>, %b: tensor<4xui32>, %x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %c = onnx.Less %a, %b : (tensor<4xui32>, tensor<4xui32>) -> tensor<4xi1>
  %0 = onnx.Where %c, %x, %y : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Cast: float to unsigned truncates with fptoui; f16 to bf16 goes through f32.
// CHECK-LABEL: func.func @casts
//       CHECK:   arith.fptoui %{{.*}} : f32 to i8
//       CHECK:   arith.extf %{{.*}} : f16 to f32
//       CHECK:   arith.truncf %{{.*}} : f32 to bf16
func.func @casts(%x: tensor<3xf32>, %h: tensor<3xf16>) -> (tensor<3xui8>, tensor<3xbf16>) {
  %0 = onnx.Cast %x {to = 2 : i64} : (tensor<3xf32>) -> tensor<3xui8>
  %1 = onnx.Cast %h {to = 16 : i64} : (tensor<3xf16>) -> tensor<3xbf16>
  return %0, %1 : tensor<3xui8>, tensor<3xbf16>
}

// -----

// Gelu with the tanh approximation; Max of three operands folds pairwise.
// CHECK-LABEL: func.func @gelu_max
//       CHECK:   math.tanh
//       CHECK:   arith.maximumf
//       CHECK:   arith.maximumf
func.func @gelu_max(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %g = onnx.Gelu %x {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
  %0 = onnx.Max %g, %x, %y : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Constants keep their bits with signless types (ui8 255 is i8 -1); Identity forwards its
// operand.
// CHECK-LABEL: func.func @constant_identity
//       CHECK:   %[[C:.*]] = arith.constant dense<[1, 2, -1]> : tensor<3xi8>
//       CHECK:   return %[[C]]
func.func @constant_identity() -> tensor<3xui8> {
  %c = onnx.Constant dense<[1, 2, 255]> : tensor<3xui8>
  %0 = onnx.Identity %c : (tensor<3xui8>) -> tensor<3xui8>
  return %0 : tensor<3xui8>
}

// -----

// If becomes scf.if on the condition's element; the branches move with it.
// CHECK-LABEL: func.func @if_branches
//  CHECK-SAME:   (%[[COND:.*]]: tensor<i1>
//       CHECK:   %[[C:.*]] = tensor.extract %[[COND]][]
//       CHECK:   scf.if %[[C]] -> (tensor<2xf32>)
//       CHECK:     scf.yield %{{.*}} : tensor<2xf32>
//       CHECK:   } else {
//       CHECK:     linalg.generic
//       CHECK:     scf.yield %{{.*}} : tensor<2xf32>
func.func @if_branches(%cond: tensor<i1>, %x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = onnx.If %cond : tensor<i1> -> tensor<2xf32> {
    onnx.Yield %x : tensor<2xf32>
  } else {
    %n = onnx.Neg %x : (tensor<2xf32>) -> tensor<2xf32>
    onnx.Yield %n : tensor<2xf32>
  }
  return %0 : tensor<2xf32>
}

// -----

// MatMul with a broadcast batch: the [4,5] rhs is shared by both batches; k reduces.
// CHECK-DAG: #[[LHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[RHS:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @matmul_batch
//       CHECK:   linalg.fill
//       CHECK:   linalg.generic {indexing_maps = [#[[LHS]], #[[RHS]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
//       CHECK:     arith.mulf
//       CHECK:     arith.addf
func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = onnx.MatMul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// A vector times a matrix: the vector becomes a [1, K] row and the result drops it again.
// CHECK-LABEL: func.func @matmul_vector
//       CHECK:   tensor.reshape %{{.*}} : (tensor<4xf32>, tensor<2xi64>) -> tensor<1x4xf32>
//       CHECK:   linalg.generic
//       CHECK:   tensor.reshape %{{.*}} : (tensor<1x5xf32>, tensor<1xi64>) -> tensor<5xf32>
func.func @matmul_vector(%a: tensor<4xf32>, %b: tensor<4x5xf32>) -> tensor<5xf32> {
  %0 = onnx.MatMul %a, %b : (tensor<4xf32>, tensor<4x5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// Gemm with transB reads B as [N, K]; alpha and beta scale in the epilogue.
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @gemm_trans_b
//       CHECK:   linalg.generic {indexing_maps = [#{{.*}}, #[[BT]], #{{.*}}]
//       CHECK:   linalg.generic
//       CHECK:     arith.constant 2.500000e-01 : f32
//       CHECK:     arith.constant 2.000000e+00 : f32
func.func @gemm_trans_b(%a: tensor<3x4xf32>, %b: tensor<5x4xf32>, %c: tensor<5xf32>) -> tensor<3x5xf32> {
  %0 = onnx.Gemm %a, %b, %c {alpha = 0.25 : f32, beta = 2.0 : f32, transB = 1 : i64} : (tensor<3x4xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// Blocked dequantization reads one scale per 2 elements along axis 1.
// CHECK-DAG: #[[BLOCK:.*]] = affine_map<(d0, d1) -> (d0, d1 floordiv 2)>
// CHECK-LABEL: func.func @dequantize_blocked
//       CHECK:   linalg.generic {indexing_maps = [#{{.*}}, #[[BLOCK]], #[[BLOCK]], #{{.*}}]
//       CHECK:     arith.sitofp %{{.*}} : i4 to f32
//       CHECK:     arith.subf
//       CHECK:     arith.mulf
func.func @dequantize_blocked(%x: tensor<3x4xi4>, %s: tensor<3x2xf32>, %z: tensor<3x2xi4>) -> tensor<3x4xf32> {
  %0 = onnx.DequantizeLinear %x, %s, %z {axis = 1 : i64, block_size = 2 : i64} : (tensor<3x4xi4>, tensor<3x2xf32>, tensor<3x2xi4>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
