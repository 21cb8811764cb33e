// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(onnx-lower-to-linalg)' | FileCheck %s
// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(llmc-graph)' | FileCheck %s --check-prefix=LOOPS

// A reduction over the middle dim: the generic drops it, the reshape keeps it as size 1.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[KEPT:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @reduce_sum_keepdims
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x3x4xf32>)
//       CHECK:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
//       CHECK:   %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x4xf32>)
//       CHECK:   %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[KEPT]]], iterator_types = ["parallel", "reduction", "parallel"]}
//  CHECK-SAME:     ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<2x4xf32>)
//       CHECK:     arith.addf
//       CHECK:   %[[KEEP:.*]] = tensor.reshape %[[SUM]]({{.*}}) : (tensor<2x4xf32>, tensor<3xi64>) -> tensor<2x1x4xf32>
//       CHECK:   return %[[KEEP]]
func.func @reduce_sum_keepdims(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %0 = onnx.ReduceSum %x, %axes : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<2x1x4xf32>
  return %0 : tensor<2x1x4xf32>
}

// -----

// Omitted axes reduce every dim; an f16 sum accumulates in f32 and the mean is
// divided there, then truncated.
// CHECK-LABEL: func.func @reduce_mean_all_f16
//       CHECK:   %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
//  CHECK-SAME:     outs(%{{.*}} : tensor<f32>)
//       CHECK:     %[[WIDE:.*]] = arith.extf %{{.*}} : f16 to f32
//       CHECK:     arith.addf %[[WIDE]]
//       CHECK:   %[[MEAN:.*]] = linalg.generic {{.*}} ins(%[[SUM]] : tensor<f32>) outs(%{{.*}} : tensor<f16>)
//       CHECK:     %[[COUNT:.*]] = arith.constant 6.000000e+00 : f32
//       CHECK:     %[[QUOTIENT:.*]] = arith.divf %{{.*}}, %[[COUNT]] : f32
//       CHECK:     arith.truncf %[[QUOTIENT]] : f32 to f16
//       CHECK:   return %[[MEAN]] : tensor<f16>
func.func @reduce_mean_all_f16(%x: tensor<2x3xf16>) -> tensor<f16> {
  %none = onnx.None
  %0 = onnx.ReduceMean %x, %none {keepdims = 0 : i64} : (tensor<2x3xf16>, none) -> tensor<f16>
  return %0 : tensor<f16>
}

// -----

// An integer mean divides with the operand's signedness.
// CHECK-LABEL: func.func @reduce_mean_signed
//       CHECK:   linalg.generic
//       CHECK:     arith.addi
//       CHECK:   linalg.generic
//       CHECK:     arith.divsi
func.func @reduce_mean_signed(%x: tensor<2x4xi32>) -> tensor<2xi32> {
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %0 = onnx.ReduceMean %x, %axes {keepdims = 0 : i64} : (tensor<2x4xi32>, tensor<1xi64>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

// Unsigned max starts from 0 and compares unsigned; a negative axis counts from the end.
// CHECK-LABEL: func.func @reduce_max_unsigned
//  CHECK-SAME:   (%{{.*}}: tensor<2x3xi8>) -> tensor<2xi8>
//       CHECK:   %[[LOWEST:.*]] = arith.constant 0 : i8
//       CHECK:   linalg.fill ins(%[[LOWEST]] : i8)
//       CHECK:   linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
//       CHECK:     arith.maxui
func.func @reduce_max_unsigned(%x: tensor<2x3xui8>) -> tensor<2xui8> {
  %axes = onnx.Constant dense<[-1]> : tensor<1xi64>
  %0 = onnx.ReduceMax %x, %axes {keepdims = 0 : i64} : (tensor<2x3xui8>, tensor<1xi64>) -> tensor<2xui8>
  return %0 : tensor<2xui8>
}

// -----

// Signed min starts from the type's largest value; float max/min propagate NaN.
// CHECK-LABEL: func.func @reduce_min_signed
//       CHECK:   %[[HIGHEST:.*]] = arith.constant 2147483647 : i32
//       CHECK:   linalg.fill ins(%[[HIGHEST]] : i32)
//       CHECK:     arith.minsi
//       CHECK:   %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
//       CHECK:   linalg.fill ins(%[[NEG_INF]] : f32)
//       CHECK:     arith.maximumf
func.func @reduce_min_signed(%x: tensor<2x3xi32>, %y: tensor<2x3xf32>) -> (tensor<1x3xi32>, tensor<1x3xf32>) {
  %axes = onnx.Constant dense<[0]> : tensor<1xi64>
  %0 = onnx.ReduceMin %x, %axes : (tensor<2x3xi32>, tensor<1xi64>) -> tensor<1x3xi32>
  %1 = onnx.ReduceMax %y, %axes : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<1x3xf32>
  return %0, %1 : tensor<1x3xi32>, tensor<1x3xf32>
}

// -----

// noop_with_empty_axes with no axes is the identity.
// CHECK-LABEL: func.func @reduce_min_noop
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x3xi32>)
//   CHECK-NOT:   linalg.generic
//       CHECK:   return %[[X]]
func.func @reduce_min_noop(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %none = onnx.None
  %0 = onnx.ReduceMin %x, %none {noop_with_empty_axes = 1 : i64} : (tensor<2x3xi32>, none) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// A product over an empty dim is its identity, 1: the filled init, never combined.
// CHECK-LABEL: func.func @reduce_prod_empty
//       CHECK:   %[[ONE:.*]] = arith.constant 1 : i64
//       CHECK:   %[[INIT:.*]] = linalg.fill ins(%[[ONE]] : i64) outs(%{{.*}} : tensor<2xi64>)
//       CHECK:   linalg.generic {{.*}} ins(%{{.*}} : tensor<2x0xi64>) outs(%[[INIT]] : tensor<2xi64>)
//       CHECK:     arith.muli
func.func @reduce_prod_empty(%x: tensor<2x0xi64>) -> tensor<2x1xi64> {
  %axes = onnx.Constant dense<[1]> : tensor<1xi64>
  %0 = onnx.ReduceProd %x, %axes : (tensor<2x0xi64>, tensor<1xi64>) -> tensor<2x1xi64>
  return %0 : tensor<2x1xi64>
}

// -----

// ArgMax reduces to the best value and its index together; the first maximum wins
// (strictly greater), and the index is the reduced dim's iteration index.
// CHECK-LABEL: func.func @argmax_first
//  CHECK-SAME:   (%[[X:.*]]: tensor<3x5xi8>) -> tensor<3xi64>
//       CHECK:   %[[LOWEST:.*]] = arith.constant -128 : i8
//       CHECK:   %[[VALUES:.*]] = linalg.fill ins(%[[LOWEST]] : i8)
//       CHECK:   %[[INDICES:.*]] = linalg.fill ins(%{{.*}} : i64)
//       CHECK:   %[[BEST:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
//  CHECK-SAME:     ins(%[[X]] : tensor<3x5xi8>) outs(%[[VALUES]], %[[INDICES]] : tensor<3xi8>, tensor<3xi64>)
//       CHECK:     ^bb0(%[[ELEMENT:.*]]: i8, %[[MAX:.*]]: i8, %[[AT:.*]]: i64):
//       CHECK:     %[[I:.*]] = linalg.index 1 : index
//       CHECK:     %[[INDEX:.*]] = arith.index_cast %[[I]] : index to i64
//       CHECK:     %[[GREATER:.*]] = arith.cmpi sgt, %[[ELEMENT]], %[[MAX]] : i8
//       CHECK:     %[[NEW_MAX:.*]] = arith.select %[[GREATER]], %[[ELEMENT]], %[[MAX]]
//       CHECK:     %[[NEW_AT:.*]] = arith.select %[[GREATER]], %[[INDEX]], %[[AT]]
//       CHECK:     linalg.yield %[[NEW_MAX]], %[[NEW_AT]]
//       CHECK:   return %[[BEST]]#1 : tensor<3xi64>
func.func @argmax_first(%x: tensor<3x5xi8>) -> tensor<3xi64> {
  %0 = onnx.ArgMax %x {axis = 1 : i64, keepdims = 0 : i64} : (tensor<3x5xi8>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// select_last_index: an equal element wins too, and so does a NaN (numpy's argmax).
// CHECK-LABEL: func.func @argmax_last
//       CHECK:   linalg.generic
//       CHECK:     ^bb0(%[[ELEMENT:.*]]: f32, %[[MAX:.*]]: f32, %{{.*}}: i64):
//       CHECK:     %[[GREATER:.*]] = arith.cmpf oge, %[[ELEMENT]], %[[MAX]] : f32
//       CHECK:     %[[NAN:.*]] = arith.cmpf uno, %[[ELEMENT]], %[[ELEMENT]] : f32
//       CHECK:     arith.ori %[[GREATER]], %[[NAN]] : i1
//       CHECK:   tensor.reshape {{.*}} -> tensor<3x1xi64>
func.func @argmax_last(%x: tensor<3x5xf32>) -> tensor<3x1xi64> {
  %0 = onnx.ArgMax %x {axis = -1 : i64, select_last_index = 1 : i64} : (tensor<3x5xf32>) -> tensor<3x1xi64>
  return %0 : tensor<3x1xi64>
}

// -----

// CumSum walks every element, the axis from its end (reverse); the exclusive sum adds
// the input one step back, and nothing at the first step. It stays one buffer of
// scalar loads and stores, without strided copies of slices.
// CHECK-LABEL: func.func @cumsum_reverse_exclusive
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x3xi32>)
//       CHECK:   %[[ZEROS:.*]] = linalg.fill
//       CHECK:   %[[ROWS:.*]] = scf.for %[[R:.*]] = {{.*}} iter_args(%[[OUTER:.*]] = %[[ZEROS]])
//       CHECK:     scf.for %[[C:.*]] = {{.*}} iter_args(%[[ACC:.*]] = %[[OUTER]])
//       CHECK:       %[[FIRST:.*]] = arith.cmpi eq, %[[C]]
//       CHECK:       %[[HERE:.*]] = arith.subi %{{.*}}, %[[C]] : index
//       CHECK:       %[[BACK:.*]] = arith.addi %[[HERE]]
//       CHECK:       %[[PREVIOUS:.*]] = arith.select %[[FIRST]], %[[HERE]], %[[BACK]] : index
//       CHECK:       %[[RUNNING:.*]] = tensor.extract %[[ACC]][%[[R]], %[[PREVIOUS]]]
//       CHECK:       %[[INPUT:.*]] = tensor.extract %[[X]][%[[R]], %[[PREVIOUS]]]
//       CHECK:       %[[ADDEND:.*]] = arith.select %[[FIRST]], %{{.*}}, %[[INPUT]] : i32
//       CHECK:       %[[SUM:.*]] = arith.addi %[[RUNNING]], %[[ADDEND]] : i32
//       CHECK:       tensor.insert %[[SUM]] into %[[ACC]][%[[R]], %[[HERE]]]
//       CHECK:   return %[[ROWS]]
// LOOPS-LABEL: func.func @cumsum_reverse_exclusive
//   LOOPS-NOT:   memref.subview
//       LOOPS:   memref.load
//       LOOPS:   memref.load
//       LOOPS:   memref.store
//   LOOPS-NOT:   memref.subview
//       LOOPS:   return
func.func @cumsum_reverse_exclusive(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %axis = onnx.Constant dense<1> : tensor<i32>
  %0 = onnx.CumSum %x, %axis {exclusive = 1 : i64, reverse = 1 : i64} : (tensor<2x3xi32>, tensor<i32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

// Softmax subtracts the row's max before exp, then divides by the sum of the exps.
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @softmax
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x4xf32>)
//       CHECK:   %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<2x4xf32>) outs(%{{.*}} : tensor<2xf32>)
//       CHECK:     arith.maximumf
//       CHECK:   %[[MAX_ROW:.*]] = tensor.reshape %[[MAX]]({{.*}}) : (tensor<2xf32>, tensor<2xi64>) -> tensor<2x1xf32>
//       CHECK:   %[[EXPS:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[ROW]], #{{.*}}]
//  CHECK-SAME:     ins(%[[X]], %[[MAX_ROW]] : tensor<2x4xf32>, tensor<2x1xf32>)
//       CHECK:     %[[SHIFTED:.*]] = arith.subf
//       CHECK:     math.exp %[[SHIFTED]]
//       CHECK:   %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[EXPS]] : tensor<2x4xf32>)
//       CHECK:     arith.addf
//       CHECK:   %[[SUM_ROW:.*]] = tensor.reshape %[[SUM]]
//       CHECK:   %[[Y:.*]] = linalg.generic {{.*}} ins(%[[EXPS]], %[[SUM_ROW]] : tensor<2x4xf32>, tensor<2x1xf32>)
//       CHECK:     arith.divf
//       CHECK:   return %[[Y]]
func.func @softmax(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %0 = onnx.Softmax %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// LayerNormalization of f16 over the last two dims: mean and variance in f32
// (stash_type 1), the normalised value truncated to f16 before the scale and bias.
// Mean and InvStdDev keep the normalised dims as size 1.
// CHECK-LABEL: func.func @layer_norm
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x3x4xf16>, %[[SCALE:.*]]: tensor<3x4xf16>, %[[BIAS:.*]]: tensor<3x4xf16>)
//       CHECK:   %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "reduction"]
//  CHECK-SAME:     ins(%[[X]] : tensor<2x3x4xf16>) outs(%{{.*}} : tensor<2xf32>)
//       CHECK:     arith.extf
//       CHECK:   linalg.generic {{.*}} ins(%[[SUM]] : tensor<2xf32>)
//       CHECK:     arith.constant 1.200000e+01 : f32
//       CHECK:   %[[MEAN:.*]] = tensor.reshape {{.*}} -> tensor<2x1x1xf32>
//       CHECK:   %[[CENTERED:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[MEAN]] : tensor<2x3x4xf16>, tensor<2x1x1xf32>) outs(%{{.*}} : tensor<2x3x4xf32>)
//       CHECK:     arith.subf
//       CHECK:   %[[SQUARES:.*]] = linalg.generic {{.*}} ins(%[[CENTERED]] : tensor<2x3x4xf32>)
//       CHECK:     arith.mulf
//       CHECK:   linalg.generic {{.*}} ins(%[[SQUARES]] : tensor<2xf32>)
//       CHECK:     arith.constant 1.000000e-03 : f32
//       CHECK:     math.sqrt
//       CHECK:   %[[INV:.*]] = tensor.reshape {{.*}} -> tensor<2x1x1xf32>
//       CHECK:   %[[Y:.*]] = linalg.generic {{.*}} ins(%[[CENTERED]], %[[INV]], %[[SCALE]], %[[BIAS]] : tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<3x4xf16>, tensor<3x4xf16>) outs(%{{.*}} : tensor<2x3x4xf16>)
//       CHECK:     %[[NORMALIZED:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
//       CHECK:     %[[NARROW:.*]] = arith.truncf %[[NORMALIZED]] : f32 to f16
//       CHECK:     %[[SCALED:.*]] = arith.mulf %[[NARROW]], %{{.*}} : f16
//       CHECK:     arith.addf %[[SCALED]], %{{.*}} : f16
//       CHECK:   return %[[Y]], %[[MEAN]], %[[INV]]
func.func @layer_norm(%x: tensor<2x3x4xf16>, %scale: tensor<3x4xf16>, %bias: tensor<3x4xf16>) -> (tensor<2x3x4xf16>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) {
  %y, %mean, %inv = onnx.LayerNormalization %x, %scale, %bias {axis = 1 : i64, epsilon = 1.0e-3 : f32} : (tensor<2x3x4xf16>, tensor<3x4xf16>, tensor<3x4xf16>) -> (tensor<2x3x4xf16>, tensor<2x1x1xf32>, tensor<2x1x1xf32>)
  return %y, %mean, %inv : tensor<2x3x4xf16>, tensor<2x1x1xf32>, tensor<2x1x1xf32>
}

// -----

// Without B the normalised value is only scaled.
// CHECK-LABEL: func.func @layer_norm_without_bias
//  CHECK-SAME:   (%{{.*}}: tensor<2x8xf32>, %[[SCALE:.*]]: tensor<8xf32>)
//       CHECK:   %[[Y:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %[[SCALE]] : tensor<2x8xf32>, tensor<2x1xf32>, tensor<8xf32>)
//       CHECK:     %[[NORMALIZED:.*]] = arith.mulf
//       CHECK:     %[[SCALED:.*]] = arith.mulf %[[NORMALIZED]]
//       CHECK:     linalg.yield %[[SCALED]]
//       CHECK:   return %[[Y]]
func.func @layer_norm_without_bias(%x: tensor<2x8xf32>, %scale: tensor<8xf32>) -> tensor<2x8xf32> {
  %none = onnx.None
  %y, %mean, %inv = onnx.LayerNormalization %x, %scale, %none : (tensor<2x8xf32>, tensor<8xf32>, none) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %y : tensor<2x8xf32>
}

// -----

// RMSNormalization: x / sqrt(mean(x^2) + epsilon), then scaled.
// CHECK-LABEL: func.func @rms_norm
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x8xf32>, %[[SCALE:.*]]: tensor<8xf32>)
//       CHECK:   %[[SQUARES:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<2x8xf32>) outs(%{{.*}} : tensor<2xf32>)
//       CHECK:     %[[SQUARE:.*]] = arith.mulf %[[E:.*]], %[[E]] : f32
//       CHECK:     arith.addf %[[SQUARE]]
//       CHECK:   linalg.generic {{.*}} ins(%[[SQUARES]] : tensor<2xf32>)
//       CHECK:     arith.constant 8.000000e+00 : f32
//       CHECK:     math.sqrt
//       CHECK:   %[[INV:.*]] = tensor.reshape {{.*}} -> tensor<2x1xf32>
//       CHECK:   %[[Y:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[INV]], %[[SCALE]] : tensor<2x8xf32>, tensor<2x1xf32>, tensor<8xf32>)
//       CHECK:   return %[[Y]]
func.func @rms_norm(%x: tensor<2x8xf32>, %scale: tensor<8xf32>) -> tensor<2x8xf32> {
  %0 = onnx.RMSNormalization %x, %scale : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Negative: Softmax is defined for floats only.
func.func @softmax_integer(%x: tensor<2x4xi32>) -> tensor<2x4xi32> {
  // expected-error @+1 {{failed to legalize operation 'onnx.Softmax'}}
  %0 = onnx.Softmax %x : (tensor<2x4xi32>) -> tensor<2x4xi32>
  return %0 : tensor<2x4xi32>
}

// -----

// Negative: statistics are not computed in an integer stash type (7 is INT64).
func.func @layer_norm_integer_stash(%x: tensor<2x8xf32>, %scale: tensor<8xf32>) -> tensor<2x8xf32> {
  %none = onnx.None
  // expected-error @+1 {{failed to legalize operation 'onnx.LayerNormalization'}}
  %y, %mean, %inv = onnx.LayerNormalization %x, %scale, %none {stash_type = 7 : i64} : (tensor<2x8xf32>, tensor<8xf32>, none) -> (tensor<2x8xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  return %y : tensor<2x8xf32>
}

// -----

// Negative: CumSum's axis must be known when compiling.
func.func @cumsum_runtime_axis(%x: tensor<2x3xf32>, %axis: tensor<i64>) -> tensor<2x3xf32> {
  // expected-error @+1 {{failed to legalize operation 'onnx.CumSum'}}
  %0 = onnx.CumSum %x, %axis : (tensor<2x3xf32>, tensor<i64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
