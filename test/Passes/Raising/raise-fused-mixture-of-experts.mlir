// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' 2>/dev/null | FileCheck %s
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERROR

// onnxruntime-genai's gpt-oss experts (2 experts of 3 features on 8, top 1): the router's
// [batch, seq, experts] product feeds llm.moe (the Reshape to [tokens, experts] goes), fc1's
// interleaved rows split into the gate (even rows) and the up (odd rows), each bias with its
// rows, fc2 and its bias kept, and the swiglu attributes become gpt-oss's clamped form.
// CHECK-LABEL: func.func @genai_gpt_oss_experts
//  CHECK-SAME:   (%[[X:.*]]: tensor<1x3x8xf32>)
//   CHECK-DAG:   %[[GATE:.*]] = llm.constant dense<{{\[}}{{\[}}[0.000000e+00, {{.*}}]]]> : tensor<2x3x8xf32>
//   CHECK-DAG:   %[[UP:.*]] = llm.constant dense<{{\[}}{{\[}}[1.000000e+00, {{.*}}]]]> : tensor<2x3x8xf32>
//   CHECK-DAG:   %[[GATE_BIAS:.*]] = llm.constant dense<{{\[}}[0.000000e+00, 2.000000e+00, 4.000000e+00], [1.000000e+01, 1.200000e+01, 1.400000e+01]]> : tensor<2x3xf32>
//   CHECK-DAG:   %[[UP_BIAS:.*]] = llm.constant dense<{{\[}}[1.000000e+00, 3.000000e+00, 5.000000e+00], [1.100000e+01, 1.300000e+01, 1.500000e+01]]> : tensor<2x3xf32>
//   CHECK-DAG:   %[[DOWN:.*]] = llm.constant dense<5.000000e-01> : tensor<2x8x3xf32>
//   CHECK-DAG:   %[[DOWN_BIAS:.*]] = llm.constant dense<7.500000e-01> : tensor<2x8xf32>
//       CHECK:   %[[LOGITS:.*]] = llm.linear %[[X]], %{{.*}}, %{{.*}} : (tensor<1x3x8xf32>, tensor<8x2xf32>, tensor<2xf32>) -> tensor<1x3x2xf32>
//       CHECK:   %[[Y:.*]] = llm.moe %[[X]], %[[LOGITS]], %[[GATE]], %[[UP]], %[[DOWN]] gate_bias(%[[GATE_BIAS]]) up_bias(%[[UP_BIAS]]) down_bias(%[[DOWN_BIAS]]) {normalize_top_k, swiglu_alpha = 1.702000e+00 : f32, swiglu_limit = 7.000000e+00 : f32, top_k = 1 : i64}
//  CHECK-SAME:     -> tensor<1x3x8xf32>
//   CHECK-NOT:   onnx.
//       CHECK:   return %[[Y]]
func.func @genai_gpt_oss_experts(%x: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  %router = onnx.Constant dense<0.25> : tensor<8x2xf32>
  %router_bias = onnx.Constant dense<[0.5, -0.5]> : tensor<2xf32>
  %flat_shape = onnx.Constant dense<[-1, 2]> : tensor<2xi64>
  %fc1 = onnx.Constant dense<[[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0], [3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0], [4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0], [5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0, 5.0]], [[10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0], [11.0, 11.0, 11.0, 11.0, 11.0, 11.0, 11.0, 11.0], [12.0, 12.0, 12.0, 12.0, 12.0, 12.0, 12.0, 12.0], [13.0, 13.0, 13.0, 13.0, 13.0, 13.0, 13.0, 13.0], [14.0, 14.0, 14.0, 14.0, 14.0, 14.0, 14.0, 14.0], [15.0, 15.0, 15.0, 15.0, 15.0, 15.0, 15.0, 15.0]]]> : tensor<2x6x8xf32>
  %fc1_bias = onnx.Constant dense<[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]]> : tensor<2x6xf32>
  %fc2 = onnx.Constant dense<0.5> : tensor<2x8x3xf32>
  %fc2_bias = onnx.Constant dense<0.75> : tensor<2x8xf32>
  %none = onnx.None
  %product = onnx.MatMul %x, %router : (tensor<1x3x8xf32>, tensor<8x2xf32>) -> tensor<1x3x2xf32>
  %biased = onnx.Add %product, %router_bias : (tensor<1x3x2xf32>, tensor<2xf32>) -> tensor<1x3x2xf32>
  %logits = onnx.Reshape %biased, %flat_shape : (tensor<1x3x2xf32>, tensor<2xi64>) -> tensor<3x2xf32>
  %y = onnx.MoE %x, %logits, %fc1, %fc1_bias, %fc2, %fc2_bias, %none, %none {activation_alpha = 1.702 : f32, activation_beta = 1.0 : f32, activation_type = "swiglu", k = 1 : i64, normalize_routing_weights = 1 : i64, swiglu_fusion = 1 : i64, swiglu_limit = 7.0 : f32} : (tensor<1x3x8xf32>, tensor<3x2xf32>, tensor<2x6x8xf32>, tensor<2x6xf32>, tensor<2x8x3xf32>, tensor<2x8xf32>, none, none) -> tensor<1x3x8xf32>
  return %y : tensor<1x3x8xf32>
}

// -----

// The plain swiglu (alpha 1, beta 0, no limit) is silu(g) * u; rows of tokens take the
// router's rows as they are; without normalize_routing_weights the top k keep their softmax
// weights, and without biases llm.moe has none.
// CHECK-LABEL: func.func @plain_swiglu_rows
//  CHECK-SAME:   (%[[X:.*]]: tensor<3x8xf32>, %[[LOGITS:.*]]: tensor<3x2xf32>)
//       CHECK:   %[[Y:.*]] = llm.moe %[[X]], %[[LOGITS]], %{{.*}}, %{{.*}}, %{{.*}} {top_k = 2 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<2x3x8xf32>, tensor<2x3x8xf32>, tensor<2x8x3xf32>) -> tensor<3x8xf32>
//       CHECK:   return %[[Y]]
func.func @plain_swiglu_rows(%x: tensor<3x8xf32>, %logits: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %fc1 = onnx.Constant dense<0.25> : tensor<2x6x8xf32>
  %fc2 = onnx.Constant dense<0.5> : tensor<2x8x3xf32>
  %none = onnx.None
  %y = onnx.MoE %x, %logits, %fc1, %none, %fc2, %none, %none, %none {activation_type = "swiglu", k = 2 : i64, swiglu_fusion = 1 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<2x6x8xf32>, none, tensor<2x8x3xf32>, none, none, none) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// An activation llm.moe does not compute is refused by name.
// CHECK-LABEL: func.func @relu_experts
//       CHECK:   onnx.MoE
// ERROR: onnx ops not raised to llm: onnx.MoE x1; an MoE activation_type 'relu' (llm.moe computes swiglu experts) is not supported
func.func @relu_experts(%x: tensor<3x8xf32>, %logits: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %fc1 = onnx.Constant dense<0.25> : tensor<2x3x8xf32>
  %fc2 = onnx.Constant dense<0.5> : tensor<2x8x3xf32>
  %none = onnx.None
  %y = onnx.MoE %x, %logits, %fc1, %none, %fc2, %none, %none, %none {k = 1 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<2x3x8xf32>, none, tensor<2x8x3xf32>, none, none, none) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// Gate and up rows concatenated (swiglu_fusion 2), which no reference computes on the CPU:
// refused by name.
// CHECK-LABEL: func.func @concatenated_gate_up
//       CHECK:   onnx.MoE
// ERROR: an MoE with swiglu_fusion 2 (the gate and up rows not interleaved) is not supported
func.func @concatenated_gate_up(%x: tensor<3x8xf32>, %logits: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %fc1 = onnx.Constant dense<0.25> : tensor<2x6x8xf32>
  %fc2 = onnx.Constant dense<0.5> : tensor<2x8x3xf32>
  %none = onnx.None
  %y = onnx.MoE %x, %logits, %fc1, %none, %fc2, %none, %none, %none {activation_type = "swiglu", k = 1 : i64, swiglu_fusion = 2 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<2x6x8xf32>, none, tensor<2x8x3xf32>, none, none, none) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// gpt-oss's alpha and beta without its limit: neither of llm.moe's swiglus, refused by name.
// CHECK-LABEL: func.func @unclamped_scaled_swiglu
//       CHECK:   onnx.MoE
// ERROR: an MoE swiglu with activation_alpha 1.702, activation_beta 1 and no swiglu_limit (llm.moe computes silu(g) * u, or gpt-oss's clamped form: a positive limit and beta 1) is not supported
func.func @unclamped_scaled_swiglu(%x: tensor<3x8xf32>, %logits: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %fc1 = onnx.Constant dense<0.25> : tensor<2x6x8xf32>
  %fc2 = onnx.Constant dense<0.5> : tensor<2x8x3xf32>
  %none = onnx.None
  %y = onnx.MoE %x, %logits, %fc1, %none, %fc2, %none, %none, %none {activation_alpha = 1.702 : f32, activation_beta = 1.0 : f32, activation_type = "swiglu", k = 1 : i64, swiglu_fusion = 1 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<2x6x8xf32>, none, tensor<2x8x3xf32>, none, none, none) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// onnxruntime-genai's int4 gpt-oss: QMoE over 4-bit codes scaled by blocks of 4 (2 experts of
// 2 features on 8). fc1's interleaved rows split, codes and scales alike, into llm.dequantize
// in MatMulNBits' layout [experts, rows, blocks, block bytes]: the gate takes rows 0 and 2 of
// each expert (its scales 1, 2 and 5, 6 in the first), the up rows 1 and 3. fc2's rows of 2
// inputs are padded to a whole block of 4 (2 bytes).
// CHECK-LABEL: func.func @genai_int4_experts
//  CHECK-SAME:   (%[[X:.*]]: tensor<3x8xf32>, %[[LOGITS:.*]]: tensor<3x2xf32>)
//   CHECK-DAG:   %[[GATE_SCALES:.*]] = llm.constant dense<{{\[}}{{\[}}[1.000000e+00, 2.000000e+00], [5.000000e+00, 6.000000e+00]], {{\[}}[9.000000e+00, 1.000000e+01], [1.300000e+01, 1.400000e+01]]]> : tensor<2x2x2xf32>
//   CHECK-DAG:   %[[UP_SCALES:.*]] = llm.constant dense<{{\[}}{{\[}}[3.000000e+00, 4.000000e+00], [7.000000e+00, 8.000000e+00]], {{\[}}[1.100000e+01, 1.200000e+01], [1.500000e+01, 1.600000e+01]]]> : tensor<2x2x2xf32>
//   CHECK-DAG:   %[[GATE:.*]] = llm.dequantize %{{.*}}, %[[GATE_SCALES]] {bits = 4 : i64, block_size = 4 : i64} : (tensor<2x2x2x2xui8>, tensor<2x2x2xf32>) -> tensor<2x2x8xf32>
//   CHECK-DAG:   %[[UP:.*]] = llm.dequantize %{{.*}}, %[[UP_SCALES]] {bits = 4 : i64, block_size = 4 : i64} : (tensor<2x2x2x2xui8>, tensor<2x2x2xf32>) -> tensor<2x2x8xf32>
//   CHECK-DAG:   %[[DOWN:.*]] = llm.dequantize %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 4 : i64} : (tensor<2x8x1x2xui8>, tensor<2x8x1xf32>) -> tensor<2x8x2xf32>
//       CHECK:   %[[Y:.*]] = llm.moe %[[X]], %[[LOGITS]], %[[GATE]], %[[UP]], %[[DOWN]] gate_bias(%{{.*}}) up_bias(%{{.*}}) down_bias(%{{.*}}) {normalize_top_k, swiglu_alpha = 1.702000e+00 : f32, swiglu_limit = 7.000000e+00 : f32, top_k = 1 : i64}
//   CHECK-NOT:   onnx.
//       CHECK:   return %[[Y]]
func.func @genai_int4_experts(%x: tensor<3x8xf32>, %logits: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %fc1 = onnx.Constant dense<[[[1, 2, 3, 4], [17, 18, 19, 20], [33, 34, 35, 36], [49, 50, 51, 52]], [[65, 66, 67, 68], [81, 82, 83, 84], [97, 98, 99, 100], [113, 114, 115, 116]]]> : tensor<2x4x4xui8>
  %fc1_scales = onnx.Constant dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]], [[9.0, 10.0], [11.0, 12.0], [13.0, 14.0], [15.0, 16.0]]]> : tensor<2x4x2xf32>
  %fc1_bias = onnx.Constant dense<0.125> : tensor<2x4xf32>
  %fc2 = onnx.Constant dense<137> : tensor<2x8x1xui8>
  %fc2_scales = onnx.Constant dense<0.5> : tensor<2x8x1xf32>
  %fc2_bias = onnx.Constant dense<0.75> : tensor<2x8xf32>
  %none = onnx.None
  %y = onnx.QMoE %x, %logits, %fc1, %fc1_scales, %fc1_bias, %fc2, %fc2_scales, %fc2_bias, %none, %none, %none, %none, %none, %none, %none, %none, %none {activation_alpha = 1.702 : f32, activation_beta = 1.0 : f32, activation_type = "swiglu", block_size = 4 : i64, expert_weight_bits = 4 : i64, k = 1 : i64, normalize_routing_weights = 1 : i64, swiglu_fusion = 1 : i64, swiglu_limit = 7.0 : f32} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<2x4x4xui8>, tensor<2x4x2xf32>, tensor<2x4xf32>, tensor<2x8x1xui8>, tensor<2x8x1xf32>, tensor<2x8xf32>, none, none, none, none, none, none, none, none, none) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// 8-bit codes with a scale per row (block_size 0): each row is one block of its inputs.
// CHECK-LABEL: func.func @int8_row_scaled_experts
//   CHECK-DAG:   llm.dequantize %{{.*}}, %{{.*}} {bits = 8 : i64, block_size = 8 : i64} : (tensor<2x2x1x8xui8>, tensor<2x2x1xf32>) -> tensor<2x2x8xf32>
//   CHECK-DAG:   llm.dequantize %{{.*}}, %{{.*}} {bits = 8 : i64, block_size = 2 : i64} : (tensor<2x8x1x2xui8>, tensor<2x8x1xf32>) -> tensor<2x8x2xf32>
//       CHECK:   llm.moe
//   CHECK-NOT:   onnx.
func.func @int8_row_scaled_experts(%x: tensor<3x8xf32>, %logits: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %fc1 = onnx.Constant dense<130> : tensor<2x4x8xui8>
  %fc1_scales = onnx.Constant dense<0.25> : tensor<2x4xf32>
  %fc2 = onnx.Constant dense<120> : tensor<2x8x2xui8>
  %fc2_scales = onnx.Constant dense<0.5> : tensor<2x8xf32>
  %none = onnx.None
  %y = onnx.QMoE %x, %logits, %fc1, %fc1_scales, %none, %fc2, %fc2_scales, %none, %none, %none, %none, %none, %none, %none, %none, %none, %none {activation_type = "swiglu", expert_weight_bits = 8 : i64, k = 2 : i64, swiglu_fusion = 1 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<2x4x8xui8>, tensor<2x4xf32>, none, tensor<2x8x2xui8>, tensor<2x8xf32>, none, none, none, none, none, none, none, none, none, none) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// MXFP4 experts (quant_type fp4: e2m1 codes under e8m0 scales) are an encoding of their own:
// refused by name.
// CHECK-LABEL: func.func @fp4_experts
//       CHECK:   onnx.QMoE
// ERROR: onnx ops not raised to llm: onnx.QMoE x1; a QMoE of quant_type 'fp4' (llm.moe's quantized experts are integer codes) is not supported
func.func @fp4_experts(%x: tensor<3x8xf32>, %logits: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %fc1 = onnx.Constant dense<17> : tensor<2x4x4xui8>
  %fc1_scales = onnx.Constant dense<127> : tensor<2x4x1xui8>
  %fc2 = onnx.Constant dense<17> : tensor<2x8x1xui8>
  %fc2_scales = onnx.Constant dense<127> : tensor<2x8x1xui8>
  %none = onnx.None
  %y = onnx.QMoE %x, %logits, %fc1, %fc1_scales, %none, %fc2, %fc2_scales, %none, %none, %none, %none, %none, %none, %none, %none, %none, %none {activation_type = "swiglu", block_size = 32 : i64, expert_weight_bits = 4 : i64, k = 1 : i64, quant_type = "fp4", swiglu_fusion = 1 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<2x4x4xui8>, tensor<2x4x1xui8>, none, tensor<2x8x1xui8>, tensor<2x8x1xui8>, none, none, none, none, none, none, none, none, none, none) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// Codes with zero points: refused by name.
// CHECK-LABEL: func.func @zero_point_experts
//       CHECK:   onnx.QMoE
// ERROR: onnx ops not raised to llm: onnx.QMoE x1; a QMoE's zero points is not supported
func.func @zero_point_experts(%x: tensor<3x8xf32>, %logits: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %fc1 = onnx.Constant dense<17> : tensor<2x4x4xui8>
  %fc1_scales = onnx.Constant dense<0.5> : tensor<2x4xf32>
  %fc1_zeros = onnx.Constant dense<119> : tensor<2x4x1xui8>
  %fc2 = onnx.Constant dense<17> : tensor<2x8x1xui8>
  %fc2_scales = onnx.Constant dense<0.5> : tensor<2x8xf32>
  %none = onnx.None
  %y = onnx.QMoE %x, %logits, %fc1, %fc1_scales, %none, %fc2, %fc2_scales, %none, %none, %none, %none, %fc1_zeros, %none, %none, %none, %none, %none {activation_type = "swiglu", expert_weight_bits = 4 : i64, k = 1 : i64, swiglu_fusion = 1 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<2x4x4xui8>, tensor<2x4xf32>, none, tensor<2x8x1xui8>, tensor<2x8xf32>, none, none, none, none, tensor<2x4x1xui8>, none, none, none, none, none) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// Codes laid out for CUTLASS's CUDA kernel (weights_prepacked 1): refused by name.
// CHECK-LABEL: func.func @prepacked_experts
//       CHECK:   onnx.QMoE
// ERROR: onnx ops not raised to llm: onnx.QMoE x1; a QMoE's CUTLASS-prepacked expert weights (weights_prepacked 1) is not supported
func.func @prepacked_experts(%x: tensor<3x8xf32>, %logits: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %fc1 = onnx.Constant dense<17> : tensor<2x8x2xui8>
  %fc1_scales = onnx.Constant dense<0.5> : tensor<2x4xf32>
  %fc2 = onnx.Constant dense<17> : tensor<2x2x4xui8>
  %fc2_scales = onnx.Constant dense<0.5> : tensor<2x8xf32>
  %none = onnx.None
  %y = onnx.QMoE %x, %logits, %fc1, %fc1_scales, %none, %fc2, %fc2_scales, %none, %none, %none, %none, %none, %none, %none, %none, %none, %none {activation_type = "swiglu", expert_weight_bits = 4 : i64, k = 1 : i64, swiglu_fusion = 1 : i64, weights_prepacked = 1 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<2x8x2xui8>, tensor<2x4xf32>, none, tensor<2x2x4xui8>, tensor<2x8xf32>, none, none, none, none, none, none, none, none, none, none) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}

// -----

// A CUDA export's codes, CUTLASS-prepacked without weights_prepacked: fc1 [experts, hidden,
// 2 inter / 2] and fc2 [experts, inter, hidden / 2] fit only that layout. Refused by name.
// CHECK-LABEL: func.func @cutlass_layout_experts
//       CHECK:   onnx.QMoE
// ERROR: onnx ops not raised to llm: onnx.QMoE x1; a QMoE's expert weights in CUTLASS's prepacked layout [experts, in, out / pack] (a CUDA export's) is not supported
func.func @cutlass_layout_experts(%x: tensor<3x8xf32>, %logits: tensor<3x2xf32>) -> tensor<3x8xf32> {
  %fc1 = onnx.Constant dense<17> : tensor<2x8x3xui8>
  %fc1_scales = onnx.Constant dense<0.5> : tensor<2x6xf32>
  %fc2 = onnx.Constant dense<17> : tensor<2x3x4xui8>
  %fc2_scales = onnx.Constant dense<0.5> : tensor<2x8xf32>
  %none = onnx.None
  %y = onnx.QMoE %x, %logits, %fc1, %fc1_scales, %none, %fc2, %fc2_scales, %none, %none, %none, %none, %none, %none, %none, %none, %none, %none {activation_type = "swiglu", expert_weight_bits = 4 : i64, k = 1 : i64, swiglu_fusion = 1 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<2x8x3xui8>, tensor<2x6xf32>, none, tensor<2x3x4xui8>, tensor<2x8xf32>, none, none, none, none, none, none, none, none, none, none) -> tensor<3x8xf32>
  return %y : tensor<3x8xf32>
}
