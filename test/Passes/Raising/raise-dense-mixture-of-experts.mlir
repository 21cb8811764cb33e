// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' 2>/dev/null | FileCheck %s
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERROR

// optimum's gpt-oss block (its model patcher computes every expert on every
// token; here 2 experts of 4 features on 8, top_k 1): the router (a Gemm
// with a bias) stays a linear layer, and the rest becomes llm.moe. The
// interleaved gate/up columns are split (gate the even ones, up the odd
// ones), each bias with its columns, and the clamps and the sigmoid's scale
// become gpt-oss's clamped swiglu.
// CHECK-LABEL: func.func @gpt_oss_experts
//  CHECK-SAME:   (%[[X:.*]]: tensor<1x3x8xf32>)
//   CHECK-DAG:   %[[GATE_BIAS:.*]] = llm.constant dense<{{\[}}[0.000000e+00, 2.000000e+00, 4.000000e+00, 6.000000e+00], [1.000000e+01, 1.200000e+01, 1.400000e+01, 1.600000e+01]]> : tensor<2x4xf32>
//   CHECK-DAG:   %[[UP_BIAS:.*]] = llm.constant dense<{{\[}}[1.000000e+00, 3.000000e+00, 5.000000e+00, 7.000000e+00], [1.100000e+01, 1.300000e+01, 1.500000e+01, 1.700000e+01]]> : tensor<2x4xf32>
//       CHECK:   %[[LOGITS:.*]] = llm.linear %[[X]], %{{.*}}, %{{.*}} {transpose_weight}
//       CHECK:   llm.moe %[[X]], %[[LOGITS]], %{{.*}}, %{{.*}}, %{{.*}} gate_bias(%[[GATE_BIAS]]) up_bias(%[[UP_BIAS]]) down_bias(%{{.*}}) {normalize_top_k, swiglu_alpha = 1.702000e+00 : f32, swiglu_limit = 7.000000e+00 : f32, top_k = 1 : i64} : (tensor<1x3x8xf32>, tensor<1x3x2xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x8x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x8xf32>) -> tensor<1x3x8xf32>
//   CHECK-NOT:   onnx.
func.func @gpt_oss_experts(%x: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  %flat_shape = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %router = onnx.Constant dense<0.25> : tensor<2x8xf32>
  %router_bias = onnx.Constant dense<[0.5, -0.5]> : tensor<2xf32>
  %k = onnx.Constant dense<1> : tensor<1xi64>
  %scores_shape = onnx.Constant dense<[3, 2]> : tensor<2xi64>
  %repeats = onnx.Constant dense<[2, 1]> : tensor<2xi64>
  %rows_shape = onnx.Constant dense<[2, -1, 8]> : tensor<3xi64>
  %gate_up = onnx.Constant dense<0.125> : tensor<2x8x8xf32>
  %gate_up_bias = onnx.Constant dense<[[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]], [[10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0]]]> : tensor<2x1x8xf32>
  %c0 = onnx.Constant dense<0> : tensor<1xi64>
  %c1 = onnx.Constant dense<1> : tensor<1xi64>
  %c2 = onnx.Constant dense<2> : tensor<1xi64>
  %c3 = onnx.Constant dense<3> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %none = onnx.None
  %limit = onnx.Constant dense<7.0> : tensor<f32>
  %neg_limit = onnx.Constant dense<-7.0> : tensor<f32>
  %alpha = onnx.Constant dense<1.702> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %down = onnx.Constant dense<0.5> : tensor<2x4x8xf32>
  %down_bias = onnx.Constant dense<0.75> : tensor<2x1x8xf32>
  %y_shape = onnx.Constant dense<[2, 1, 3, 8]> : tensor<4xi64>
  %routing_shape = onnx.Constant dense<[2, 1, 3]> : tensor<3xi64>
  %xf = onnx.Reshape %x, %flat_shape : (tensor<1x3x8xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %logits = onnx.Gemm %xf, %router, %router_bias {transB = 1 : i64} : (tensor<3x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %top, %ids = onnx.TopK %logits, %k {axis = -1 : i64} : (tensor<3x2xf32>, tensor<1xi64>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
  %weights = onnx.Softmax %top {axis = 1 : i64} : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %zeros = onnx.ConstantOfShape %scores_shape : (tensor<2xi64>) -> tensor<3x2xf32>
  %scores = onnx.ScatterElements %zeros, %ids, %weights {axis = 1 : i64} : (tensor<3x2xf32>, tensor<3x1xi64>, tensor<3x1xf32>) -> tensor<3x2xf32>
  %tiled = onnx.Tile %xf, %repeats : (tensor<3x8xf32>, tensor<2xi64>) -> tensor<6x8xf32>
  %rows = onnx.Reshape %tiled, %rows_shape : (tensor<6x8xf32>, tensor<3xi64>) -> tensor<2x3x8xf32>
  %gu_product = onnx.MatMul %rows, %gate_up : (tensor<2x3x8xf32>, tensor<2x8x8xf32>) -> tensor<2x3x8xf32>
  %gu = onnx.Add %gu_product, %gate_up_bias : (tensor<2x3x8xf32>, tensor<2x1x8xf32>) -> tensor<2x3x8xf32>
  %g = onnx.Slice %gu, %c0, %end, %c2, %c2 : (tensor<2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3x4xf32>
  %u = onnx.Slice %gu, %c1, %end, %c2, %c2 : (tensor<2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3x4xf32>
  %g_clamped = onnx.Clip %g, %none, %limit : (tensor<2x3x4xf32>, none, tensor<f32>) -> tensor<2x3x4xf32>
  %u_clamped = onnx.Clip %u, %neg_limit, %limit : (tensor<2x3x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3x4xf32>
  %g_scaled = onnx.Mul %g_clamped, %alpha : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %sig = onnx.Sigmoid %g_scaled : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %glu = onnx.Mul %g_clamped, %sig : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %u_plus = onnx.Add %u_clamped, %one : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %h = onnx.Mul %u_plus, %glu : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %y_product = onnx.MatMul %h, %down : (tensor<2x3x4xf32>, tensor<2x4x8xf32>) -> tensor<2x3x8xf32>
  %y = onnx.Add %y_product, %down_bias : (tensor<2x3x8xf32>, tensor<2x1x8xf32>) -> tensor<2x3x8xf32>
  %y4 = onnx.Reshape %y, %y_shape : (tensor<2x3x8xf32>, tensor<4xi64>) -> tensor<2x1x3x8xf32>
  %by_expert = onnx.Transpose %scores {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %routing = onnx.Reshape %by_expert, %routing_shape : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x1x3xf32>
  %routing_column = onnx.Unsqueeze %routing, %c3 : (tensor<2x1x3xf32>, tensor<1xi64>) -> tensor<2x1x3x1xf32>
  %weighted = onnx.Mul %y4, %routing_column : (tensor<2x1x3x8xf32>, tensor<2x1x3x1xf32>) -> tensor<2x1x3x8xf32>
  %out = onnx.ReduceSum %weighted, %c0 {keepdims = 0 : i64} : (tensor<2x1x3x8xf32>, tensor<1xi64>) -> tensor<1x3x8xf32>
  return %out : tensor<1x3x8xf32>
}

// -----

// Clamps that are not gpt-oss's (up clamped to [-5, 7]): llm.moe computes
// only its own activations, so the block is not raised, and the error says
// why.
// CHECK-LABEL: func.func @other_clamps
//   CHECK-NOT:   llm.moe
// ERROR: a mixture of experts is not supported in this form: an expert's clamps are not gpt-oss's: min(g, L) and clamp(up, -L, L) + 1
func.func @other_clamps(%x: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  %flat_shape = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %router = onnx.Constant dense<0.25> : tensor<2x8xf32>
  %router_bias = onnx.Constant dense<[0.5, -0.5]> : tensor<2xf32>
  %k = onnx.Constant dense<1> : tensor<1xi64>
  %scores_shape = onnx.Constant dense<[3, 2]> : tensor<2xi64>
  %repeats = onnx.Constant dense<[2, 1]> : tensor<2xi64>
  %rows_shape = onnx.Constant dense<[2, -1, 8]> : tensor<3xi64>
  %gate_up = onnx.Constant dense<0.125> : tensor<2x8x8xf32>
  %gate_up_bias = onnx.Constant dense<0.5> : tensor<2x1x8xf32>
  %c0 = onnx.Constant dense<0> : tensor<1xi64>
  %c1 = onnx.Constant dense<1> : tensor<1xi64>
  %c2 = onnx.Constant dense<2> : tensor<1xi64>
  %c3 = onnx.Constant dense<3> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %none = onnx.None
  %limit = onnx.Constant dense<7.0> : tensor<f32>
  %other_limit = onnx.Constant dense<-5.0> : tensor<f32>
  %alpha = onnx.Constant dense<1.702> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %down = onnx.Constant dense<0.5> : tensor<2x4x8xf32>
  %down_bias = onnx.Constant dense<0.75> : tensor<2x1x8xf32>
  %y_shape = onnx.Constant dense<[2, 1, 3, 8]> : tensor<4xi64>
  %routing_shape = onnx.Constant dense<[2, 1, 3]> : tensor<3xi64>
  %xf = onnx.Reshape %x, %flat_shape : (tensor<1x3x8xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %logits = onnx.Gemm %xf, %router, %router_bias {transB = 1 : i64} : (tensor<3x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %top, %ids = onnx.TopK %logits, %k {axis = -1 : i64} : (tensor<3x2xf32>, tensor<1xi64>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
  %weights = onnx.Softmax %top {axis = 1 : i64} : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %zeros = onnx.ConstantOfShape %scores_shape : (tensor<2xi64>) -> tensor<3x2xf32>
  %scores = onnx.ScatterElements %zeros, %ids, %weights {axis = 1 : i64} : (tensor<3x2xf32>, tensor<3x1xi64>, tensor<3x1xf32>) -> tensor<3x2xf32>
  %tiled = onnx.Tile %xf, %repeats : (tensor<3x8xf32>, tensor<2xi64>) -> tensor<6x8xf32>
  %rows = onnx.Reshape %tiled, %rows_shape : (tensor<6x8xf32>, tensor<3xi64>) -> tensor<2x3x8xf32>
  %gu_product = onnx.MatMul %rows, %gate_up : (tensor<2x3x8xf32>, tensor<2x8x8xf32>) -> tensor<2x3x8xf32>
  %gu = onnx.Add %gu_product, %gate_up_bias : (tensor<2x3x8xf32>, tensor<2x1x8xf32>) -> tensor<2x3x8xf32>
  %g = onnx.Slice %gu, %c0, %end, %c2, %c2 : (tensor<2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3x4xf32>
  %u = onnx.Slice %gu, %c1, %end, %c2, %c2 : (tensor<2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3x4xf32>
  %g_clamped = onnx.Clip %g, %none, %limit : (tensor<2x3x4xf32>, none, tensor<f32>) -> tensor<2x3x4xf32>
  %u_clamped = onnx.Clip %u, %other_limit, %limit : (tensor<2x3x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3x4xf32>
  %g_scaled = onnx.Mul %g_clamped, %alpha : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %sig = onnx.Sigmoid %g_scaled : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %glu = onnx.Mul %g_clamped, %sig : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %u_plus = onnx.Add %u_clamped, %one : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %h = onnx.Mul %u_plus, %glu : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %y_product = onnx.MatMul %h, %down : (tensor<2x3x4xf32>, tensor<2x4x8xf32>) -> tensor<2x3x8xf32>
  %y = onnx.Add %y_product, %down_bias : (tensor<2x3x8xf32>, tensor<2x1x8xf32>) -> tensor<2x3x8xf32>
  %y4 = onnx.Reshape %y, %y_shape : (tensor<2x3x8xf32>, tensor<4xi64>) -> tensor<2x1x3x8xf32>
  %by_expert = onnx.Transpose %scores {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %routing = onnx.Reshape %by_expert, %routing_shape : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x1x3xf32>
  %routing_column = onnx.Unsqueeze %routing, %c3 : (tensor<2x1x3xf32>, tensor<1xi64>) -> tensor<2x1x3x1xf32>
  %weighted = onnx.Mul %y4, %routing_column : (tensor<2x1x3x8xf32>, tensor<2x1x3x1xf32>) -> tensor<2x1x3x8xf32>
  %out = onnx.ReduceSum %weighted, %c0 {keepdims = 0 : i64} : (tensor<2x1x3x8xf32>, tensor<1xi64>) -> tensor<1x3x8xf32>
  return %out : tensor<1x3x8xf32>
}

// -----

// The rows tiled along the features ([1, 2]) reshape to the same [2, 3, 8],
// but expert 0 then reads other rows than the tokens': not raised.
// CHECK-LABEL: func.func @tiled_along_features
//   CHECK-NOT:   llm.moe
// ERROR: a mixture of experts is not supported in this form: the experts' rows are not the input rows repeated once per expert
func.func @tiled_along_features(%x: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  %flat_shape = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %router = onnx.Constant dense<0.25> : tensor<2x8xf32>
  %router_bias = onnx.Constant dense<[0.5, -0.5]> : tensor<2xf32>
  %k = onnx.Constant dense<1> : tensor<1xi64>
  %scores_shape = onnx.Constant dense<[3, 2]> : tensor<2xi64>
  %repeats = onnx.Constant dense<[1, 2]> : tensor<2xi64>
  %rows_shape = onnx.Constant dense<[2, -1, 8]> : tensor<3xi64>
  %gate_up = onnx.Constant dense<0.125> : tensor<2x8x8xf32>
  %gate_up_bias = onnx.Constant dense<[[[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]], [[10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0]]]> : tensor<2x1x8xf32>
  %c0 = onnx.Constant dense<0> : tensor<1xi64>
  %c1 = onnx.Constant dense<1> : tensor<1xi64>
  %c2 = onnx.Constant dense<2> : tensor<1xi64>
  %c3 = onnx.Constant dense<3> : tensor<1xi64>
  %end = onnx.Constant dense<9223372036854775807> : tensor<1xi64>
  %none = onnx.None
  %limit = onnx.Constant dense<7.0> : tensor<f32>
  %neg_limit = onnx.Constant dense<-7.0> : tensor<f32>
  %alpha = onnx.Constant dense<1.702> : tensor<f32>
  %one = onnx.Constant dense<1.0> : tensor<f32>
  %down = onnx.Constant dense<0.5> : tensor<2x4x8xf32>
  %down_bias = onnx.Constant dense<0.75> : tensor<2x1x8xf32>
  %y_shape = onnx.Constant dense<[2, 1, 3, 8]> : tensor<4xi64>
  %routing_shape = onnx.Constant dense<[2, 1, 3]> : tensor<3xi64>
  %xf = onnx.Reshape %x, %flat_shape : (tensor<1x3x8xf32>, tensor<2xi64>) -> tensor<3x8xf32>
  %logits = onnx.Gemm %xf, %router, %router_bias {transB = 1 : i64} : (tensor<3x8xf32>, tensor<2x8xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %top, %ids = onnx.TopK %logits, %k {axis = -1 : i64} : (tensor<3x2xf32>, tensor<1xi64>) -> (tensor<3x1xf32>, tensor<3x1xi64>)
  %weights = onnx.Softmax %top {axis = 1 : i64} : (tensor<3x1xf32>) -> tensor<3x1xf32>
  %zeros = onnx.ConstantOfShape %scores_shape : (tensor<2xi64>) -> tensor<3x2xf32>
  %scores = onnx.ScatterElements %zeros, %ids, %weights {axis = 1 : i64} : (tensor<3x2xf32>, tensor<3x1xi64>, tensor<3x1xf32>) -> tensor<3x2xf32>
  %tiled = onnx.Tile %xf, %repeats : (tensor<3x8xf32>, tensor<2xi64>) -> tensor<3x16xf32>
  %rows = onnx.Reshape %tiled, %rows_shape : (tensor<3x16xf32>, tensor<3xi64>) -> tensor<2x3x8xf32>
  %gu_product = onnx.MatMul %rows, %gate_up : (tensor<2x3x8xf32>, tensor<2x8x8xf32>) -> tensor<2x3x8xf32>
  %gu = onnx.Add %gu_product, %gate_up_bias : (tensor<2x3x8xf32>, tensor<2x1x8xf32>) -> tensor<2x3x8xf32>
  %g = onnx.Slice %gu, %c0, %end, %c2, %c2 : (tensor<2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3x4xf32>
  %u = onnx.Slice %gu, %c1, %end, %c2, %c2 : (tensor<2x3x8xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<2x3x4xf32>
  %g_clamped = onnx.Clip %g, %none, %limit : (tensor<2x3x4xf32>, none, tensor<f32>) -> tensor<2x3x4xf32>
  %u_clamped = onnx.Clip %u, %neg_limit, %limit : (tensor<2x3x4xf32>, tensor<f32>, tensor<f32>) -> tensor<2x3x4xf32>
  %g_scaled = onnx.Mul %g_clamped, %alpha : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %sig = onnx.Sigmoid %g_scaled : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %glu = onnx.Mul %g_clamped, %sig : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %u_plus = onnx.Add %u_clamped, %one : (tensor<2x3x4xf32>, tensor<f32>) -> tensor<2x3x4xf32>
  %h = onnx.Mul %u_plus, %glu : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %y_product = onnx.MatMul %h, %down : (tensor<2x3x4xf32>, tensor<2x4x8xf32>) -> tensor<2x3x8xf32>
  %y = onnx.Add %y_product, %down_bias : (tensor<2x3x8xf32>, tensor<2x1x8xf32>) -> tensor<2x3x8xf32>
  %y4 = onnx.Reshape %y, %y_shape : (tensor<2x3x8xf32>, tensor<4xi64>) -> tensor<2x1x3x8xf32>
  %by_expert = onnx.Transpose %scores {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %routing = onnx.Reshape %by_expert, %routing_shape : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<2x1x3xf32>
  %routing_column = onnx.Unsqueeze %routing, %c3 : (tensor<2x1x3xf32>, tensor<1xi64>) -> tensor<2x1x3x1xf32>
  %weighted = onnx.Mul %y4, %routing_column : (tensor<2x1x3x8xf32>, tensor<2x1x3x1xf32>) -> tensor<2x1x3x8xf32>
  %out = onnx.ReduceSum %weighted, %c0 {keepdims = 0 : i64} : (tensor<2x1x3x8xf32>, tensor<1xi64>) -> tensor<1x3x8xf32>
  return %out : tensor<1x3x8xf32>
}
