// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(onnx-lower-to-linalg)' | FileCheck %s

// Shape and Size are constants of the static input shape; start/end clamp as
// ONNX does (end -1 drops the last dim).
// CHECK-LABEL: func.func @shape_and_size
//   CHECK-DAG:   %[[SHAPE:.*]] = arith.constant dense<[3, 4]> : tensor<2xi64>
//   CHECK-DAG:   %[[SIZE:.*]] = arith.constant dense<120> : tensor<i64>
//       CHECK:   return %[[SHAPE]], %[[SIZE]]
func.func @shape_and_size(%x: tensor<2x3x4x5xf32>) -> (tensor<2xi64>, tensor<i64>) {
  %0 = onnx.Shape %x {start = 1 : i64, end = -1 : i64} : (tensor<2x3x4x5xf32>) -> tensor<2xi64>
  %1 = onnx.Size %x : (tensor<2x3x4x5xf32>) -> tensor<i64>
  return %0, %1 : tensor<2xi64>, tensor<i64>
}

// -----

// Reshape, Flatten, Unsqueeze and Squeeze keep the element order: each is a
// tensor.reshape to its static result shape.
// CHECK-LABEL: func.func @reshapes
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x3x4xf32>)
//       CHECK:   %[[R:.*]] = tensor.reshape %[[X]](%{{.*}}) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
//       CHECK:   %[[F:.*]] = tensor.reshape %[[X]](%{{.*}}) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<2x12xf32>
//       CHECK:   %[[U:.*]] = tensor.reshape %[[X]](%{{.*}}) : (tensor<2x3x4xf32>, tensor<4xi64>) -> tensor<1x2x3x4xf32>
//       CHECK:   %[[S:.*]] = tensor.reshape %[[U]](%{{.*}}) : (tensor<1x2x3x4xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
//       CHECK:   return %[[R]], %[[F]], %[[U]], %[[S]]
func.func @reshapes(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x12xf32>, tensor<1x2x3x4xf32>, tensor<2x3x4xf32>) {
  %shape = onnx.Constant dense<[-1, 4]> : tensor<2xi64>
  %axes = onnx.Constant dense<[0]> : tensor<1xi64>
  %0 = onnx.Reshape %x, %shape : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %1 = onnx.Flatten %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
  %2 = onnx.Unsqueeze %x, %axes : (tensor<2x3x4xf32>, tensor<1xi64>) -> tensor<1x2x3x4xf32>
  %3 = onnx.Squeeze %2, %axes : (tensor<1x2x3x4xf32>, tensor<1xi64>) -> tensor<2x3x4xf32>
  return %0, %1, %2, %3 : tensor<6x4xf32>, tensor<2x12xf32>, tensor<1x2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// Transpose without perm reverses the dims.
// CHECK-LABEL: func.func @transpose
//       CHECK:   linalg.transpose ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<4x3x2xf32>) permutation = [2, 1, 0]
//       CHECK:   linalg.transpose ins(%{{.*}} : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<3x2x4xf32>) permutation = [1, 0, 2]
func.func @transpose(%x: tensor<2x3x4xf32>) -> (tensor<4x3x2xf32>, tensor<3x2x4xf32>) {
  %0 = onnx.Transpose %x : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  %1 = onnx.Transpose %x {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  return %0, %1 : tensor<4x3x2xf32>, tensor<3x2x4xf32>
}

// -----

// Expand broadcasts with numpy's rules, aligned to the right.
// CHECK-DAG: #[[BCAST:.*]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-LABEL: func.func @expand
//  CHECK-SAME:   (%[[X:.*]]: tensor<3x1xf32>)
//       CHECK:   linalg.generic {indexing_maps = [#[[BCAST]], #{{.*}}]
//  CHECK-SAME:     ins(%[[X]] : tensor<3x1xf32>) outs(%{{.*}} : tensor<2x3x4xf32>)
//  CHECK-NEXT:   ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
//  CHECK-NEXT:     linalg.yield %[[IN]]
func.func @expand(%x: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %shape = onnx.Constant dense<[2, 1, 4]> : tensor<3xi64>
  %0 = onnx.Expand %x, %shape : (tensor<3x1xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Tile reads the input at i mod (input dim) on the repeated dims.
// CHECK-LABEL: func.func @tile
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x3xi32>)
//       CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<4x3xi32>)
//       CHECK:     %[[ROW:.*]] = linalg.index 0
//       CHECK:     %[[C2:.*]] = arith.constant 2 : index
//       CHECK:     %[[WRAPPED:.*]] = arith.remui %[[ROW]], %[[C2]]
//       CHECK:     %[[COL:.*]] = linalg.index 1
//       CHECK:     %[[E:.*]] = tensor.extract %[[X]][%[[WRAPPED]], %[[COL]]]
//       CHECK:     linalg.yield %[[E]]
func.func @tile(%x: tensor<2x3xi32>) -> tensor<4x3xi32> {
  %repeats = onnx.Constant dense<[2, 1]> : tensor<2xi64>
  %0 = onnx.Tile %x, %repeats : (tensor<2x3xi32>, tensor<2xi64>) -> tensor<4x3xi32>
  return %0 : tensor<4x3xi32>
}

// -----

// Concat copies each input into its slot of the result; the empty input is
// skipped, and the next one starts after it (offset 3).
// CHECK-LABEL: func.func @concat
//  CHECK-SAME:   (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x0xf32>, %[[C:.*]]: tensor<2x2xf32>)
//       CHECK:   %[[EMPTY:.*]] = tensor.empty() : tensor<2x5xf32>
//       CHECK:   %[[SLOT_A:.*]] = tensor.extract_slice %[[EMPTY]][0, 0] [2, 3] [1, 1]
//       CHECK:   %[[COPY_A:.*]] = linalg.copy ins(%[[A]] : tensor<2x3xf32>) outs(%[[SLOT_A]] : tensor<2x3xf32>)
//       CHECK:   %[[WITH_A:.*]] = tensor.insert_slice %[[COPY_A]] into %[[EMPTY]][0, 0] [2, 3] [1, 1]
//   CHECK-NOT:   %[[B]]
//       CHECK:   %[[SLOT_C:.*]] = tensor.extract_slice %[[WITH_A]][0, 3] [2, 2] [1, 1]
//       CHECK:   %[[COPY_C:.*]] = linalg.copy ins(%[[C]] : tensor<2x2xf32>) outs(%[[SLOT_C]] : tensor<2x2xf32>)
//       CHECK:   %[[RESULT:.*]] = tensor.insert_slice %[[COPY_C]] into %[[WITH_A]][0, 3] [2, 2] [1, 1]
//       CHECK:   return %[[RESULT]]
func.func @concat(%a: tensor<2x3xf32>, %b: tensor<2x0xf32>, %c: tensor<2x2xf32>) -> tensor<2x5xf32> {
  %0 = onnx.Concat %a, %b, %c {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x0xf32>, tensor<2x2xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// Split copies consecutive ranges of the axis; a zero-size part is empty.
// CHECK-LABEL: func.func @split
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x7xf32>)
//       CHECK:   %[[FIRST:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4xf32>)
//       CHECK:     %[[I0:.*]] = linalg.index 0
//       CHECK:     %[[I1:.*]] = linalg.index 1
//       CHECK:     tensor.extract %[[X]][%[[I0]], %[[I1]]]
//       CHECK:   %[[EMPTY:.*]] = tensor.empty() : tensor<2x0xf32>
//       CHECK:   %[[LAST:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x3xf32>)
//       CHECK:     %[[J0:.*]] = linalg.index 0
//       CHECK:     %[[J1:.*]] = linalg.index 1
//       CHECK:     %[[C4:.*]] = arith.constant 4 : index
//       CHECK:     %[[SHIFTED:.*]] = arith.addi %[[J1]], %[[C4]]
//       CHECK:     tensor.extract %[[X]][%[[J0]], %[[SHIFTED]]]
//       CHECK:   return %[[FIRST]], %[[EMPTY]], %[[LAST]]
func.func @split(%x: tensor<2x7xf32>) -> (tensor<2x4xf32>, tensor<2x0xf32>, tensor<2x3xf32>) {
  %split = onnx.Constant dense<[4, 0, 3]> : tensor<3xi64>
  %0:3 = onnx.Split %x, %split {axis = 1 : i64} : (tensor<2x7xf32>, tensor<3xi64>) -> (tensor<2x4xf32>, tensor<2x0xf32>, tensor<2x3xf32>)
  return %0#0, %0#1, %0#2 : tensor<2x4xf32>, tensor<2x0xf32>, tensor<2x3xf32>
}

// -----

// Slice reads at start + step * i: axis 0 from the last row backwards by 2
// (the huge negative end clamps to -1), the last axis from 1 by 3 (the end
// clamps to 6).
// CHECK-LABEL: func.func @slice_negative_step
//  CHECK-SAME:   (%[[X:.*]]: tensor<5x6xf32>)
//       CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<3x2xf32>)
//       CHECK:     %[[I0:.*]] = linalg.index 0
//       CHECK:     %[[STEP0:.*]] = arith.constant -2 : index
//       CHECK:     %[[SCALED0:.*]] = arith.muli %[[I0]], %[[STEP0]]
//       CHECK:     %[[START0:.*]] = arith.constant 4 : index
//       CHECK:     %[[ROW:.*]] = arith.addi %[[SCALED0]], %[[START0]]
//       CHECK:     %[[I1:.*]] = linalg.index 1
//       CHECK:     %[[STEP1:.*]] = arith.constant 3 : index
//       CHECK:     %[[SCALED1:.*]] = arith.muli %[[I1]], %[[STEP1]]
//       CHECK:     %[[START1:.*]] = arith.constant 1 : index
//       CHECK:     %[[COL:.*]] = arith.addi %[[SCALED1]], %[[START1]]
//       CHECK:     tensor.extract %[[X]][%[[ROW]], %[[COL]]]
func.func @slice_negative_step(%x: tensor<5x6xf32>) -> tensor<3x2xf32> {
  %starts = onnx.Constant dense<[-1, 1]> : tensor<2xi64>
  %ends = onnx.Constant dense<[-9223372036854775807, 1000]> : tensor<2xi64>
  %axes = onnx.Constant dense<[0, -1]> : tensor<2xi64>
  %steps = onnx.Constant dense<[-2, 3]> : tensor<2xi64>
  %0 = onnx.Slice %x, %starts, %ends, %axes, %steps : (tensor<5x6xf32>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// Gather on axis 1: the indices are read through the result dims they fill,
// and a negative index wraps by the axis size.
// CHECK-DAG: #[[INDICES:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @gather
//  CHECK-SAME:   (%[[DATA:.*]]: tensor<5x4xf32>, %[[IDS:.*]]: tensor<2x3xi32>)
//       CHECK:   linalg.generic {indexing_maps = [#[[INDICES]], #{{.*}}]
//  CHECK-SAME:     ins(%[[IDS]] : tensor<2x3xi32>) outs(%{{.*}} : tensor<5x2x3xf32>)
//  CHECK-NEXT:   ^bb0(%[[ID:.*]]: i32, %{{.*}}: f32):
//       CHECK:     %[[OUTER:.*]] = linalg.index 0
//       CHECK:     %[[INDEX:.*]] = arith.index_cast %[[ID]] : i32 to index
//       CHECK:     %[[NEGATIVE:.*]] = arith.cmpi slt, %[[INDEX]], %{{.*}}
//       CHECK:     %[[C4:.*]] = arith.constant 4 : index
//       CHECK:     %[[PLUS:.*]] = arith.addi %[[INDEX]], %[[C4]]
//       CHECK:     %[[WRAPPED:.*]] = arith.select %[[NEGATIVE]], %[[PLUS]], %[[INDEX]]
//       CHECK:     tensor.extract %[[DATA]][%[[OUTER]], %[[WRAPPED]]]
func.func @gather(%data: tensor<5x4xf32>, %indices: tensor<2x3xi32>) -> tensor<5x2x3xf32> {
  %0 = onnx.Gather %data, %indices {axis = 1 : i64} : (tensor<5x4xf32>, tensor<2x3xi32>) -> tensor<5x2x3xf32>
  return %0 : tensor<5x2x3xf32>
}

// -----

// GatherElements replaces the axis coordinate by the (wrapped) index.
// CHECK-LABEL: func.func @gather_elements
//  CHECK-SAME:   (%[[DATA:.*]]: tensor<3x4xf32>, %[[IDS:.*]]: tensor<2x4xi64>)
//       CHECK:   linalg.generic {{.*}} ins(%[[IDS]] : tensor<2x4xi64>) outs(%{{.*}} : tensor<2x4xf32>)
//       CHECK:     %[[COL:.*]] = linalg.index 1
//       CHECK:     %[[INDEX:.*]] = arith.index_cast %{{.*}} : i64 to index
//       CHECK:     %[[C3:.*]] = arith.constant 3 : index
//       CHECK:     arith.addi %[[INDEX]], %[[C3]]
//       CHECK:     %[[ROW:.*]] = arith.select
//       CHECK:     tensor.extract %[[DATA]][%[[ROW]], %[[COL]]]
func.func @gather_elements(%data: tensor<3x4xf32>, %indices: tensor<2x4xi64>) -> tensor<2x4xf32> {
  %0 = onnx.GatherElements %data, %indices : (tensor<3x4xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// ScatterND applies the updates in order on a copy of the data (not in the
// caller's buffer); max on ui8 compares unsigned, in the row's own slot.
// CHECK-LABEL: func.func @scatter_nd_max
//  CHECK-SAME:   (%[[DATA:.*]]: tensor<4x5xi8>, %[[IDS:.*]]: tensor<3x1xi64>, %[[UPDATES:.*]]: tensor<3x5xi8>)
//       CHECK:   %[[COPY:.*]] = linalg.copy ins(%[[DATA]] : tensor<4x5xi8>)
//       CHECK:   %[[RESULT:.*]] = scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[COPY]]) -> (tensor<4x5xi8>)
//       CHECK:     %[[ID:.*]] = tensor.extract %[[IDS]][%[[T]], %{{.*}}] : tensor<3x1xi64>
//       CHECK:     %[[ROW:.*]] = arith.select
//       CHECK:     %[[UPDATE:.*]] = tensor.extract_slice %[[UPDATES]][%[[T]], 0] [1, 5] [1, 1] : tensor<3x5xi8> to tensor<5xi8>
//       CHECK:     %[[SLOT:.*]] = tensor.extract_slice %[[ACC]][%[[ROW]], 0] [1, 5] [1, 1] : tensor<4x5xi8> to tensor<5xi8>
//       CHECK:     %[[NEW:.*]] = linalg.generic {{.*}} ins(%[[UPDATE]] : tensor<5xi8>) outs(%[[SLOT]] : tensor<5xi8>)
//  CHECK-NEXT:     ^bb0(%[[IN:.*]]: i8, %[[OUT:.*]]: i8):
//  CHECK-NEXT:       %[[MAX:.*]] = arith.maxui %[[OUT]], %[[IN]] : i8
//  CHECK-NEXT:       linalg.yield %[[MAX]]
//       CHECK:     %[[WRITTEN:.*]] = tensor.insert_slice %[[NEW]] into %[[ACC]][%[[ROW]], 0] [1, 5] [1, 1]
//       CHECK:     scf.yield %[[WRITTEN]]
//       CHECK:   return %[[RESULT]]
func.func @scatter_nd_max(%data: tensor<4x5xui8>, %indices: tensor<3x1xi64>, %updates: tensor<3x5xui8>) -> tensor<4x5xui8> {
  %0 = onnx.ScatterND %data, %indices, %updates {reduction = "max"} : (tensor<4x5xui8>, tensor<3x1xi64>, tensor<3x5xui8>) -> tensor<4x5xui8>
  return %0 : tensor<4x5xui8>
}

// -----

// TensorScatter, circular: position p of the cache takes update
// (p - write_indices[b]) mod 8 when that is below the update's length 2.
// CHECK-LABEL: func.func @tensor_scatter_circular
//  CHECK-SAME:   (%[[PAST:.*]]: tensor<2x3x8x4xf32>, %[[UPDATE:.*]]: tensor<2x3x2x4xf32>, %[[WRITE:.*]]: tensor<2xi64>)
//       CHECK:   linalg.generic {{.*}} ins(%[[PAST]] : tensor<2x3x8x4xf32>) outs(%{{.*}} : tensor<2x3x8x4xf32>)
//  CHECK-NEXT:   ^bb0(%[[OLD:.*]]: f32, %{{.*}}: f32):
//       CHECK:     %[[B:.*]] = linalg.index 0
//       CHECK:     %[[H:.*]] = linalg.index 1
//       CHECK:     %[[P:.*]] = linalg.index 2
//       CHECK:     %[[D:.*]] = linalg.index 3
//       CHECK:     %[[START:.*]] = tensor.extract %[[WRITE]][%[[B]]]
//       CHECK:     %[[START_INDEX:.*]] = arith.index_cast %[[START]]
//       CHECK:     %[[DELTA:.*]] = arith.subi %[[P]], %[[START_INDEX]]
//       CHECK:     %[[C8:.*]] = arith.constant 8 : index
//       CHECK:     arith.remsi %[[DELTA]], %[[C8]]
//       CHECK:     %[[OFFSET:.*]] = arith.select
//       CHECK:     %[[C2:.*]] = arith.constant 2 : index
//       CHECK:     arith.cmpi slt, %[[OFFSET]], %[[C2]]
//       CHECK:     %[[WRITTEN:.*]] = arith.andi
//       CHECK:     %[[SAFE:.*]] = arith.select %[[WRITTEN]], %[[OFFSET]], %{{.*}} : index
//       CHECK:     %[[NEW:.*]] = tensor.extract %[[UPDATE]][%[[B]], %[[H]], %[[SAFE]], %[[D]]]
//       CHECK:     %[[VALUE:.*]] = arith.select %[[WRITTEN]], %[[NEW]], %[[OLD]] : f32
//       CHECK:     linalg.yield %[[VALUE]]
func.func @tensor_scatter_circular(%past: tensor<2x3x8x4xf32>, %update: tensor<2x3x2x4xf32>, %write: tensor<2xi64>) -> tensor<2x3x8x4xf32> {
  %0 = onnx.TensorScatter %past, %update, %write {mode = "circular"} : (tensor<2x3x8x4xf32>, tensor<2x3x2x4xf32>, tensor<2xi64>) -> tensor<2x3x8x4xf32>
  return %0 : tensor<2x3x8x4xf32>
}

// -----

// ConstantOfShape is a splat of its value (f32 zero when absent).
// CHECK-LABEL: func.func @constant_of_shape
//   CHECK-DAG:   %[[ZEROS:.*]] = arith.constant dense<0.000000e+00> : tensor<2x3xf32>
//   CHECK-DAG:   %[[SEVENS:.*]] = arith.constant dense<7> : tensor<4xi32>
//       CHECK:   return %[[ZEROS]], %[[SEVENS]]
func.func @constant_of_shape() -> (tensor<2x3xf32>, tensor<4xi32>) {
  %s0 = onnx.Constant dense<[2, 3]> : tensor<2xi64>
  %s1 = onnx.Constant dense<[4]> : tensor<1xi64>
  %0 = onnx.ConstantOfShape %s0 : (tensor<2xi64>) -> tensor<2x3xf32>
  %1 = onnx.ConstantOfShape %s1 {value = dense<7> : tensor<1xi32>} : (tensor<1xi64>) -> tensor<4xi32>
  return %0, %1 : tensor<2x3xf32>, tensor<4xi32>
}

// -----

// Range: element i is start + i * delta; the limit only fixed the length.
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @range
//  CHECK-SAME:   (%[[START:.*]]: tensor<f32>, %{{.*}}: tensor<f32>, %[[DELTA:.*]]: tensor<f32>)
//       CHECK:   linalg.generic {indexing_maps = [#[[SCALAR]], #[[SCALAR]], #{{.*}}]
//  CHECK-SAME:     ins(%[[START]], %[[DELTA]] : tensor<f32>, tensor<f32>) outs(%{{.*}} : tensor<5xf32>)
//  CHECK-NEXT:   ^bb0(%[[S:.*]]: f32, %[[D:.*]]: f32, %{{.*}}: f32):
//  CHECK-NEXT:     %[[I:.*]] = linalg.index 0
//  CHECK-NEXT:     %[[I64:.*]] = arith.index_cast %[[I]] : index to i64
//  CHECK-NEXT:     %[[IF:.*]] = arith.sitofp %[[I64]] : i64 to f32
//  CHECK-NEXT:     %[[STEP:.*]] = arith.mulf %[[IF]], %[[D]]
//  CHECK-NEXT:     %[[VALUE:.*]] = arith.addf %[[S]], %[[STEP]]
//  CHECK-NEXT:     linalg.yield %[[VALUE]]
func.func @range(%start: tensor<f32>, %limit: tensor<f32>, %delta: tensor<f32>) -> tensor<5xf32> {
  %0 = onnx.Range %start, %limit, %delta : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// Trilu (upper by default) keeps column - row >= k, with k read at run time.
// CHECK-LABEL: func.func @trilu_upper
//  CHECK-SAME:   (%[[X:.*]]: tensor<2x3x4xf32>, %[[K:.*]]: tensor<i64>)
//       CHECK:   %[[KV:.*]] = tensor.extract %[[K]][] : tensor<i64>
//       CHECK:   %[[DIAGONAL:.*]] = arith.index_cast %[[KV]] : i64 to index
//       CHECK:   linalg.generic {{.*}} ins(%[[X]] : tensor<2x3x4xf32>)
//  CHECK-NEXT:   ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
//  CHECK-NEXT:     %[[ROW:.*]] = linalg.index 1
//  CHECK-NEXT:     %[[COL:.*]] = linalg.index 2
//  CHECK-NEXT:     %[[OFFSET:.*]] = arith.subi %[[COL]], %[[ROW]]
//  CHECK-NEXT:     %[[KEEP:.*]] = arith.cmpi sge, %[[OFFSET]], %[[DIAGONAL]]
//  CHECK-NEXT:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
//  CHECK-NEXT:     arith.select %[[KEEP]], %[[IN]], %[[ZERO]]
func.func @trilu_upper(%x: tensor<2x3x4xf32>, %k: tensor<i64>) -> tensor<2x3x4xf32> {
  %0 = onnx.Trilu %x, %k : (tensor<2x3x4xf32>, tensor<i64>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// Trilu lower without k keeps column - row <= 0.
// CHECK-LABEL: func.func @trilu_lower
//       CHECK:   %[[DIAGONAL:.*]] = arith.constant 0 : index
//       CHECK:   linalg.generic
//       CHECK:     arith.cmpi sle, %{{.*}}, %[[DIAGONAL]]
func.func @trilu_lower(%x: tensor<3x3xi64>) -> tensor<3x3xi64> {
  %none = onnx.None
  %0 = onnx.Trilu %x, %none {upper = 0 : i64} : (tensor<3x3xi64>, none) -> tensor<3x3xi64>
  return %0 : tensor<3x3xi64>
}

// -----

// A result without elements is an empty tensor whatever the op.
// CHECK-LABEL: func.func @empty_result
//       CHECK:   %[[EMPTY:.*]] = tensor.empty() : tensor<0x4xf32>
//       CHECK:   return %[[EMPTY]]
func.func @empty_result(%x: tensor<3x4xf32>) -> tensor<0x4xf32> {
  %starts = onnx.Constant dense<[5]> : tensor<1xi64>
  %ends = onnx.Constant dense<[9]> : tensor<1xi64>
  %none = onnx.None
  %0 = onnx.Slice %x, %starts, %ends, %none, %none : (tensor<3x4xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<0x4xf32>
  return %0 : tensor<0x4xf32>
}

// -----

// Negative: Slice's starts must be constants to fix the result.
func.func @slice_runtime_starts(%x: tensor<4x4xf32>, %starts: tensor<1xi64>) -> tensor<2x4xf32> {
  %ends = onnx.Constant dense<[4]> : tensor<1xi64>
  %none = onnx.None
  // expected-error @+1 {{failed to legalize operation 'onnx.Slice'}}
  %0 = onnx.Slice %x, %starts, %ends, %none, %none : (tensor<4x4xf32>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Negative: "sum" is not one of ScatterND's reductions.
func.func @scatter_nd_unknown_reduction(%data: tensor<4xf32>, %indices: tensor<2x1xi64>, %updates: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to legalize operation 'onnx.ScatterND'}}
  %0 = onnx.ScatterND %data, %indices, %updates {reduction = "sum"} : (tensor<4xf32>, tensor<2x1xi64>, tensor<2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Negative: TensorScatter's write indices are per batch (dim 0), so the
// sequence axis cannot be dim 0.
func.func @tensor_scatter_batch_axis(%past: tensor<4x3xf32>, %update: tensor<2x3xf32>) -> tensor<4x3xf32> {
  %none = onnx.None
  // expected-error @+1 {{failed to legalize operation 'onnx.TensorScatter'}}
  %0 = onnx.TensorScatter %past, %update, %none {axis = 0 : i64} : (tensor<4x3xf32>, tensor<2x3xf32>, none) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Negative: a perm that repeats a dim is no transpose.
func.func @transpose_not_a_permutation(%x: tensor<3x3xf32>) -> tensor<3x3xf32> {
  // expected-error @+1 {{failed to legalize operation 'onnx.Transpose'}}
  %0 = onnx.Transpose %x {perm = array<i64: 0, 0>} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}
