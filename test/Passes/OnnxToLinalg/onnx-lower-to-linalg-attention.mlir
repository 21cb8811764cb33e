// RUN: llmc-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(onnx-lower-to-linalg)' | FileCheck %s

// Attention without mask: Q and K scaled by sqrt(1/sqrt(4)), QK^T as a contraction over the
// channel (d4), softmax as max/exp/sum/divide over the keys, then P * V over the keys (d4).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
// CHECK-DAG: #[[QUERY:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG: #[[KEY:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3, d4)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[VALUE:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>
// CHECK-LABEL: func.func @attention_4d
//  CHECK-SAME:   (%[[Q:.*]]: tensor<1x2x3x4xf32>, %[[K:.*]]: tensor<1x2x5x4xf32>, %[[V:.*]]: tensor<1x2x5x6xf32>)
//       CHECK:   %[[ROOT:.*]] = arith.constant 0.707106769 : f32
//       CHECK:   %[[QS:.*]] = linalg.generic {{.*}} ins(%[[Q]] :
//       CHECK:     arith.mulf %{{.*}}, %[[ROOT]]
//       CHECK:   %[[KS:.*]] = linalg.generic {{.*}} ins(%[[K]] :
//       CHECK:     arith.mulf %{{.*}}, %[[ROOT]]
//       CHECK:   %[[SCORES:.*]] = linalg.generic {indexing_maps = [#[[QUERY]], #[[KEY]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
//  CHECK-SAME:     ins(%[[QS]], %[[KS]] : tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>) outs(%{{.*}} : tensor<1x2x3x5xf32>)
//       CHECK:     arith.mulf
//       CHECK:     arith.addf
//       CHECK:   %[[BIAS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x2x3x5xf32>)
//       CHECK:   %[[LOGITS:.*]] = linalg.generic {{.*}} ins(%[[SCORES]], %[[BIAS]] :
//       CHECK:   %[[MAX:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROWS]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[LOGITS]] :
//       CHECK:     arith.maximumf
//       CHECK:   %[[MAX1:.*]] = tensor.reshape %[[MAX]]
//       CHECK:   %[[EXP:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], {{.*}} ins(%[[LOGITS]], %[[MAX1]] :
//       CHECK:     math.exp
//       CHECK:   %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[EXP]] :
//       CHECK:     arith.addf
//       CHECK:   %[[SUM1:.*]] = tensor.reshape %[[SUM]]
//       CHECK:   %[[BIASMAX:.*]] = linalg.generic {{.*}} ins(%[[BIAS]] :
//       CHECK:   %[[BIASMAX1:.*]] = tensor.reshape %[[BIASMAX]]
//       CHECK:   %[[P:.*]] = linalg.generic {{.*}} ins(%[[EXP]], %[[SUM1]], %[[BIASMAX1]] :
//       CHECK:     arith.divf
//       CHECK:     arith.select
//       CHECK:   %[[Y:.*]] = linalg.generic {indexing_maps = [#[[QUERY]], #[[VALUE]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
//  CHECK-SAME:     ins(%[[P]], %[[V]] : tensor<1x2x3x5xf32>, tensor<1x2x5x6xf32>) outs(%{{.*}} : tensor<1x2x3x6xf32>)
//       CHECK:   return %[[Y]]
func.func @attention_4d(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x6xf32>) -> tensor<1x2x3x6xf32> {
  %none = onnx.None
  %y, %present_key, %present_value, %qk = onnx.Attention %q, %k, %v, %none, %none, %none, %none : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x6xf32>, none, none, none, none) -> (tensor<1x2x3x6xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x6xf32>, tensor<1x2x3x5xf32>)
  return %y : tensor<1x2x3x6xf32>
}

// -----

// 3-D GQA (4 query heads over 2 KV heads) with a past: the inputs are split into heads, the
// present keys are the past followed by the new ones, query head h reads KV head h floordiv 2.
// The bool mask covers 2 of the 3 keys (the last is padded as masked out), the causal frontier
// is offset by the past length, and qk_matmul_output (mode 3) is the softmax.
// CHECK-DAG: #[[GROUPED:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 2, d3, d4)>
// CHECK-DAG: #[[GROUPEDV:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 floordiv 2, d4, d3)>
// CHECK-LABEL: func.func @attention_3d_gqa_past_mask
//  CHECK-SAME:   (%[[Q:.*]]: tensor<1x2x8xf32>, %[[K:.*]]: tensor<1x2x4xf32>, %[[V:.*]]: tensor<1x2x4xf32>, %[[MASK:.*]]: tensor<2x2xi1>, %[[PK:.*]]: tensor<1x2x1x2xf32>, %[[PV:.*]]: tensor<1x2x1x2xf32>)
//       CHECK:   %[[Q3:.*]] = tensor.reshape %[[Q]]({{.*}}) : (tensor<1x2x8xf32>, tensor<4xi64>) -> tensor<1x2x4x2xf32>
//       CHECK:   %[[Q4:.*]] = linalg.transpose ins(%[[Q3]] : tensor<1x2x4x2xf32>) outs(%{{.*}} : tensor<1x4x2x2xf32>) permutation = [0, 2, 1, 3]
//       CHECK:   %[[K4:.*]] = linalg.transpose
//       CHECK:   %[[V4:.*]] = linalg.transpose
//       CHECK:   %[[PRESENT:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x2xf32>)
//       CHECK:     %[[SEQ:.*]] = linalg.index 2
//       CHECK:     %[[INPAST:.*]] = arith.cmpi ult, %[[SEQ]], %[[ONE:.*]] : index
//       CHECK:     scf.if %[[INPAST]] -> (f32)
//       CHECK:       tensor.extract %[[PK]]
//       CHECK:     } else {
//       CHECK:       %[[NEW:.*]] = arith.subi %[[SEQ]], %[[ONE]]
//       CHECK:       tensor.extract %[[K4]][%{{.*}}, %{{.*}}, %[[NEW]], %{{.*}}]
//       CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x3x2xf32>)
//       CHECK:     tensor.extract %[[PV]]
//       CHECK:   linalg.generic {indexing_maps = [#{{.*}}, #[[GROUPED]], #{{.*}}]
//  CHECK-SAME:     tensor<1x4x2x2xf32>, tensor<1x2x3x2xf32>) outs(%{{.*}} : tensor<1x4x2x3xf32>)
//       CHECK:   %[[BIAS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x4x2x3xf32>)
//   CHECK-DAG:     %[[QUERY:.*]] = linalg.index 2
//   CHECK-DAG:     %[[KEY:.*]] = linalg.index 3
//   CHECK-DAG:     %[[LAST:.*]] = arith.constant 1 : index
//       CHECK:     %[[CLAMPED:.*]] = arith.minsi %[[KEY]], %[[LAST]]
//       CHECK:     %[[BIT:.*]] = tensor.extract %[[MASK]][%{{.*}}, %[[CLAMPED]]] : tensor<2x2xi1>
//       CHECK:     %[[MASKED:.*]] = arith.select %[[BIT]]
//       CHECK:     %[[INMASK:.*]] = arith.cmpi slt, %[[KEY]], %{{.*}} : index
//       CHECK:     %[[PADDED:.*]] = arith.select %[[INMASK]], %[[MASKED]]
//       CHECK:     %[[POSITION:.*]] = arith.addi %[[QUERY]], %{{.*}} : index
//       CHECK:     %[[CAUSAL:.*]] = arith.cmpi sle, %[[KEY]], %[[POSITION]]
//       CHECK:     %[[CUT:.*]] = arith.select %[[CAUSAL]]
//       CHECK:     %[[SUM:.*]] = arith.addf %[[PADDED]], %[[CUT]]
//       CHECK:     linalg.yield %[[SUM]]
//       CHECK:     arith.divf
//       CHECK:   %[[Y4:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[GROUPEDV]], #{{.*}}]
//  CHECK-SAME:     ins(%[[P:[^,]*]], %{{.*}} : tensor<1x4x2x3xf32>, tensor<1x2x3x2xf32>)
//       CHECK:   %[[Y3:.*]] = linalg.transpose ins(%[[Y4]] : tensor<1x4x2x2xf32>) outs(%{{.*}} : tensor<1x2x4x2xf32>) permutation = [0, 2, 1, 3]
//       CHECK:   %[[Y:.*]] = tensor.reshape %[[Y3]]({{.*}}) : (tensor<1x2x4x2xf32>, tensor<3xi64>) -> tensor<1x2x8xf32>
//       CHECK:   return %[[Y]], %[[PRESENT]], %[[P]]
func.func @attention_3d_gqa_past_mask(%q: tensor<1x2x8xf32>, %k: tensor<1x2x4xf32>, %v: tensor<1x2x4xf32>, %mask: tensor<2x2xi1>, %pk: tensor<1x2x1x2xf32>, %pv: tensor<1x2x1x2xf32>) -> (tensor<1x2x8xf32>, tensor<1x2x3x2xf32>, tensor<1x4x2x3xf32>) {
  %none = onnx.None
  %y, %present_key, %present_value, %qk = onnx.Attention %q, %k, %v, %mask, %pk, %pv, %none {is_causal = 1 : i64, q_num_heads = 4 : i64, kv_num_heads = 2 : i64, qk_matmul_output_mode = 3 : i64} : (tensor<1x2x8xf32>, tensor<1x2x4xf32>, tensor<1x2x4xf32>, tensor<2x2xi1>, tensor<1x2x1x2xf32>, tensor<1x2x1x2xf32>, none) -> (tensor<1x2x8xf32>, tensor<1x2x3x2xf32>, tensor<1x2x3x2xf32>, tensor<1x4x2x3xf32>)
  return %y, %present_key, %qk : tensor<1x2x8xf32>, tensor<1x2x3x2xf32>, tensor<1x4x2x3xf32>
}

// -----

// f16, as numpy computes it: matmul products summed in f32 and rounded once, softcap in f16;
// softmax_precision = 1 runs the softmax in f32. nonpad_kv_seqlen (read per batch) aligns the
// causal frontier at nonpad - q_seq and masks the keys past nonpad.
// CHECK-LABEL: func.func @attention_f16_nonpad_softcap
//  CHECK-SAME:   %[[NONPAD:[^:]*]]: tensor<2xi64>
//       CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x1x3xf32>)
//       CHECK:     %[[A:.*]] = arith.extf %{{.*}} : f16 to f32
//       CHECK:     %[[B:.*]] = arith.extf %{{.*}} : f16 to f32
//       CHECK:     %[[PRODUCT:.*]] = arith.mulf %[[A]], %[[B]] : f32
//       CHECK:     arith.addf %{{.*}}, %[[PRODUCT]] : f32
//       CHECK:   linalg.generic
//       CHECK:     arith.truncf %{{.*}} : f32 to f16
//       CHECK:   linalg.generic
//       CHECK:     arith.divf %{{.*}}, %[[CAP:.*]] : f16
//       CHECK:     math.tanh %{{.*}} : f16
//       CHECK:     arith.mulf %{{.*}}, %[[CAP]] : f16
//       CHECK:   linalg.generic
//   CHECK-DAG:     %[[QUERY:.*]] = linalg.index 2
//   CHECK-DAG:     %[[KEY:.*]] = linalg.index 3
//   CHECK-DAG:     %[[BATCH:.*]] = linalg.index 0
//       CHECK:     %[[LENGTH:.*]] = tensor.extract %[[NONPAD]][%[[BATCH]]]
//       CHECK:     %[[VALID:.*]] = arith.index_cast %[[LENGTH]] : i64 to index
//       CHECK:     %[[OFFSET:.*]] = arith.subi %[[VALID]], %{{.*}} : index
//       CHECK:     %[[POSITION:.*]] = arith.addi %[[QUERY]], %[[OFFSET]]
//       CHECK:     arith.cmpi sle, %[[KEY]], %[[POSITION]]
//       CHECK:     arith.cmpi slt, %[[KEY]], %[[VALID]]
//       CHECK:   linalg.generic
//       CHECK:     arith.extf %{{.*}} : f16 to f32
//       CHECK:     arith.maximumf %{{.*}}, %{{.*}} : f32
//       CHECK:     math.exp %{{.*}} : f32
//       CHECK:     arith.divf %{{.*}}, %{{.*}} : f32
//       CHECK:     arith.truncf %{{.*}} : f32 to f16
//       CHECK:   linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x1x4xf32>)
//       CHECK:   %[[Y:.*]] = linalg.generic
//       CHECK:     arith.truncf %{{.*}} : f32 to f16
//       CHECK:   return %[[Y]] : tensor<2x2x1x4xf16>
func.func @attention_f16_nonpad_softcap(%q: tensor<2x2x1x4xf16>, %k: tensor<2x2x3x4xf16>, %v: tensor<2x2x3x4xf16>, %nonpad: tensor<2xi64>) -> tensor<2x2x1x4xf16> {
  %none = onnx.None
  %y, %present_key, %present_value, %qk = onnx.Attention %q, %k, %v, %none, %none, %none, %nonpad {is_causal = 1 : i64, softcap = 2.0 : f32, softmax_precision = 1 : i64} : (tensor<2x2x1x4xf16>, tensor<2x2x3x4xf16>, tensor<2x2x3x4xf16>, none, none, none, tensor<2xi64>) -> (tensor<2x2x1x4xf16>, tensor<2x2x3x4xf16>, tensor<2x2x3x4xf16>, tensor<2x2x1x3xf16>)
  return %y : tensor<2x2x1x4xf16>
}

// -----

// RotaryEmbedding, 4-D, halves: channel c pairs with c mod 2 and c mod 2 + 2; the angle of
// token (b, s) is read at position_ids[b, s].
// CHECK-LABEL: func.func @rotary_4d
//  CHECK-SAME:   (%[[X:.*]]: tensor<1x2x3x4xf32>, %[[COS:.*]]: tensor<8x2xf32>, %[[SIN:.*]]: tensor<8x2xf32>, %[[POS:.*]]: tensor<1x3xi64>)
//       CHECK:   %[[Y:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<1x2x3x4xf32>)
//       CHECK:     %[[B:.*]] = linalg.index 0
//       CHECK:     %[[H:.*]] = linalg.index 1
//       CHECK:     %[[S:.*]] = linalg.index 2
//       CHECK:     %[[C:.*]] = linalg.index 3
//       CHECK:     %[[PAIR:.*]] = arith.remui %[[C]], %{{.*}} : index
//       CHECK:     %[[SECOND:.*]] = arith.addi %[[PAIR]], %{{.*}} : index
//       CHECK:     %[[IMAG:.*]] = arith.cmpi uge, %[[C]], %{{.*}} : index
//       CHECK:     %[[X1:.*]] = tensor.extract %[[X]][%[[B]], %[[H]], %[[S]], %[[PAIR]]]
//       CHECK:     %[[X2:.*]] = tensor.extract %[[X]][%[[B]], %[[H]], %[[S]], %[[SECOND]]]
//       CHECK:     %[[P:.*]] = tensor.extract %[[POS]][%[[B]], %[[S]]] : tensor<1x3xi64>
//       CHECK:     %[[PI:.*]] = arith.index_cast %[[P]] : i64 to index
//       CHECK:     %[[CV:.*]] = tensor.extract %[[COS]][%[[PI]], %[[PAIR]]]
//       CHECK:     %[[SV:.*]] = tensor.extract %[[SIN]][%[[PI]], %[[PAIR]]]
//       CHECK:     %[[CX1:.*]] = arith.mulf %[[CV]], %[[X1]]
//       CHECK:     %[[SX2:.*]] = arith.mulf %[[SV]], %[[X2]]
//       CHECK:     %[[REAL:.*]] = arith.subf %[[CX1]], %[[SX2]]
//       CHECK:     %[[SX1:.*]] = arith.mulf %[[SV]], %[[X1]]
//       CHECK:     %[[CX2:.*]] = arith.mulf %[[CV]], %[[X2]]
//       CHECK:     %[[IMAGV:.*]] = arith.addf %[[SX1]], %[[CX2]]
//       CHECK:     %[[R:.*]] = arith.select %[[IMAG]], %[[IMAGV]], %[[REAL]]
//       CHECK:     linalg.yield %[[R]]
//       CHECK:   return %[[Y]]
func.func @rotary_4d(%x: tensor<1x2x3x4xf32>, %cos: tensor<8x2xf32>, %sin: tensor<8x2xf32>, %positions: tensor<1x3xi64>) -> tensor<1x2x3x4xf32> {
  %0 = onnx.RotaryEmbedding %x, %cos, %sin, %positions : (tensor<1x2x3x4xf32>, tensor<8x2xf32>, tensor<8x2xf32>, tensor<1x3xi64>) -> tensor<1x2x3x4xf32>
  return %0 : tensor<1x2x3x4xf32>
}

// -----

// RotaryEmbedding, 3-D with 2 heads, interleaved, rotating 4 of 6 channels: channel c pairs
// with 2 (c / 2) and 2 (c / 2) + 1; the caches are per token; channels 4 and 5 pass through.
// CHECK-LABEL: func.func @rotary_3d_interleaved_partial
//  CHECK-SAME:   (%[[X:.*]]: tensor<1x3x12xf32>, %[[COS:.*]]: tensor<1x3x2xf32>, %[[SIN:.*]]: tensor<1x3x2xf32>)
//       CHECK:   %[[X4:.*]] = tensor.reshape %[[X]]({{.*}}) : (tensor<1x3x12xf32>, tensor<4xi64>) -> tensor<1x3x2x6xf32>
//       CHECK:   %[[R:.*]] = linalg.generic {{.*}} ins(%[[X4]] : tensor<1x3x2x6xf32>)
//       CHECK:   ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
//       CHECK:     %[[B:.*]] = linalg.index 0
//       CHECK:     %[[S:.*]] = linalg.index 1
//       CHECK:     %[[C:.*]] = linalg.index 3
//       CHECK:     %[[ROTATED:.*]] = arith.cmpi ult, %[[C]], %{{.*}} : index
//       CHECK:     scf.if %[[ROTATED]] -> (f32)
//       CHECK:       %[[PAIR:.*]] = arith.divui %[[C]], %{{.*}} : index
//       CHECK:       %[[FIRST:.*]] = arith.muli %[[PAIR]], %{{.*}} : index
//       CHECK:       %[[SECOND:.*]] = arith.addi %[[FIRST]], %{{.*}} : index
//       CHECK:       arith.cmpi eq, %[[C]], %[[SECOND]] : index
//       CHECK:       tensor.extract %[[COS]][%[[B]], %[[S]], %[[PAIR]]]
//       CHECK:     } else {
//       CHECK:       scf.yield %[[IN]] : f32
//       CHECK:   %[[Y:.*]] = tensor.reshape %[[R]]({{.*}}) : (tensor<1x3x2x6xf32>, tensor<3xi64>) -> tensor<1x3x12xf32>
//       CHECK:   return %[[Y]]
func.func @rotary_3d_interleaved_partial(%x: tensor<1x3x12xf32>, %cos: tensor<1x3x2xf32>, %sin: tensor<1x3x2xf32>) -> tensor<1x3x12xf32> {
  %none = onnx.None
  %0 = onnx.RotaryEmbedding %x, %cos, %sin, %none {interleaved = 1 : i64, num_heads = 2 : i64, rotary_embedding_dim = 4 : i64} : (tensor<1x3x12xf32>, tensor<1x3x2xf32>, tensor<1x3x2xf32>, none) -> tensor<1x3x12xf32>
  return %0 : tensor<1x3x12xf32>
}

// -----

// Negative: 3-D inputs without q_num_heads/kv_num_heads have no head split.
func.func @attention_3d_without_heads(%q: tensor<1x2x8xf32>, %k: tensor<1x2x8xf32>, %v: tensor<1x2x8xf32>) -> tensor<1x2x8xf32> {
  %none = onnx.None
  // expected-error @+1 {{failed to legalize operation 'onnx.Attention'}}
  %y, %present_key, %present_value, %qk = onnx.Attention %q, %k, %v, %none, %none, %none, %none : (tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, none, none, none, none) -> (tensor<1x2x8xf32>, tensor<1x1x2x8xf32>, tensor<1x1x2x8xf32>, tensor<1x1x2x2xf32>)
  return %y : tensor<1x2x8xf32>
}

// -----

// Negative: 3 query heads cannot be grouped over 2 KV heads.
func.func @attention_ungroupable_heads(%q: tensor<1x3x2x4xf32>, %k: tensor<1x2x2x4xf32>, %v: tensor<1x2x2x4xf32>) -> tensor<1x3x2x4xf32> {
  %none = onnx.None
  // expected-error @+1 {{failed to legalize operation 'onnx.Attention'}}
  %y, %present_key, %present_value, %qk = onnx.Attention %q, %k, %v, %none, %none, %none, %none : (tensor<1x3x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>, none, none, none, none) -> (tensor<1x3x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x2x2x4xf32>, tensor<1x3x2x2xf32>)
  return %y : tensor<1x3x2x4xf32>
}

// -----

// Negative: the caches hold 3 angles per position, but rotary_embedding_dim 4 rotates 2 pairs.
func.func @rotary_cache_width(%x: tensor<1x2x3x8xf32>, %cos: tensor<8x3xf32>, %sin: tensor<8x3xf32>, %positions: tensor<1x3xi64>) -> tensor<1x2x3x8xf32> {
  // expected-error @+1 {{failed to legalize operation 'onnx.RotaryEmbedding'}}
  %0 = onnx.RotaryEmbedding %x, %cos, %sin, %positions {rotary_embedding_dim = 4 : i64} : (tensor<1x2x3x8xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<1x3xi64>) -> tensor<1x2x3x8xf32>
  return %0 : tensor<1x2x3x8xf32>
}
