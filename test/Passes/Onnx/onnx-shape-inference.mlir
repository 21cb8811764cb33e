// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-shape-inference))' | FileCheck %s
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-shape-inference))' -debug-only=onnx-shape-inference -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// A miss says why under -debug-only:
// WHY: [onnx-shape-inference] {{.*}}: no match: condition is not a constant scalar

// The Shape -> Gather -> Unsqueeze -> Concat chain exports compute the head
// split with: the dynamic dims stay symbolic, the static ones give the
// Reshape its type, and the static part of the chain folds.
// CHECK-LABEL: func.func @reshape_from_shape_chain
//  CHECK-SAME:   -> tensor<?x?x4x16xf32>
//       CHECK:   onnx.Reshape {{.*}} -> tensor<?x?x4x16xf32>
func.func @reshape_from_shape_chain(%x: tensor<?x?x64xf32>) -> tensor<*xf32> {
  %shape = onnx.Shape %x : (tensor<?x?x64xf32>) -> tensor<*xi64>
  %i0 = onnx.Constant dense<0> : tensor<i64>
  %i1 = onnx.Constant dense<1> : tensor<i64>
  %axes = onnx.Constant dense<[0]> : tensor<1xi64>
  %heads = onnx.Constant dense<[4]> : tensor<1xi64>
  %dim = onnx.Constant dense<[16]> : tensor<1xi64>
  %b = onnx.Gather %shape, %i0 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %s = onnx.Gather %shape, %i1 : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %b1 = onnx.Unsqueeze %b, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %s1 = onnx.Unsqueeze %s, %axes : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %target = onnx.Concat %b1, %s1, %heads, %dim {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xi64>
  %y = onnx.Reshape %x, %target : (tensor<?x?x64xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// With static dims the whole chain folds to a constant.
// CHECK-LABEL: func.func @static_shape_folds
//       CHECK:   %[[C:.*]] = onnx.Constant dense<[2, 3]> : tensor<2xi64>
//       CHECK:   return %[[C]]
func.func @static_shape_folds(%x: tensor<2x3xf32>) -> tensor<*xi64> {
  %shape = onnx.Shape %x : (tensor<2x3xf32>) -> tensor<*xi64>
  return %shape : tensor<*xi64>
}

// -----

// A dynamic dim cannot fold: the Shape stays, typed as a 2-vector.
// CHECK-LABEL: func.func @dynamic_shape_stays
//       CHECK:   onnx.Shape {{.*}} -> tensor<2xi64>
func.func @dynamic_shape_stays(%x: tensor<?x3xf32>) -> tensor<*xi64> {
  %shape = onnx.Shape %x : (tensor<?x3xf32>) -> tensor<*xi64>
  return %shape : tensor<*xi64>
}

// -----

// An If on a constant condition becomes its chosen branch.
// CHECK-LABEL: func.func @constant_if
//   CHECK-NOT:   onnx.If
//       CHECK:   onnx.Neg
func.func @constant_if(%x: tensor<4xf32>) -> tensor<*xf32> {
  %cond = onnx.Constant dense<true> : tensor<i1>
  %y = onnx.If %cond : tensor<i1> -> tensor<*xf32> {
    %n = onnx.Neg %x : (tensor<4xf32>) -> tensor<4xf32>
    onnx.Yield %n : tensor<4xf32>
  } else {
    onnx.Yield %x : tensor<4xf32>
  }
  return %y : tensor<*xf32>
}

// -----

// An If on an input stays, its result typed from both branches.
// CHECK-LABEL: func.func @dynamic_if
//       CHECK:   onnx.If {{.*}} -> tensor<4xf32>
func.func @dynamic_if(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<*xf32> {
  %y = onnx.If %c : tensor<i1> -> tensor<*xf32> {
    %n = onnx.Neg %x : (tensor<4xf32>) -> tensor<4xf32>
    onnx.Yield %n : tensor<4xf32>
  } else {
    onnx.Yield %x : tensor<4xf32>
  }
  return %y : tensor<*xf32>
}
