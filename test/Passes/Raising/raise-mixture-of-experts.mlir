// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' 2>/dev/null | FileCheck %s
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=ERROR

// optimum's Qwen3-MoE block (its model patcher's loop over every expert,
// here 2 experts of 4 features on 8, top_k 1, norm_topk_prob): the router
// stays a linear layer and the rest becomes llm.moe, with each expert's
// weights transposed to [out, in] and stacked.
// CHECK-LABEL: func.func @qwen3_moe_block
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x?x8xf32>)
//   CHECK-DAG:   %[[ROUTER:.*]] = llm.constant dense<5.000000e-01> : tensor<8x2xf32>
//   CHECK-DAG:   %[[GATE:.*]] = llm.constant dense<1.000000e-01> : tensor<2x4x8xf32>
//   CHECK-DAG:   %[[UP:.*]] = llm.constant dense<2.000000e-01> : tensor<2x4x8xf32>
//   CHECK-DAG:   %[[DOWN:.*]] = llm.constant dense<3.000000e-01> : tensor<2x8x4xf32>
//       CHECK:   %[[LOGITS:.*]] = llm.linear %[[X]], %[[ROUTER]] : (tensor<?x?x8xf32>, tensor<8x2xf32>) -> tensor<?x?x2xf32>
//       CHECK:   %[[Y:.*]] = llm.moe %[[X]], %[[LOGITS]], %[[GATE]], %[[UP]], %[[DOWN]] {normalize_top_k, top_k = 1 : i64}
//   CHECK-NOT:   onnx.
//       CHECK:   return %[[Y]]
func.func @qwen3_moe_block(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %flat_shape = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %k = onnx.Constant dense<1> : tensor<1xi64>
  %last = onnx.Constant dense<[-1]> : tensor<1xi64>
  %depth = onnx.Constant dense<2> : tensor<i64>
  %onoff = onnx.Constant dense<[0, 1]> : tensor<2xi64>
  %ax0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %ax2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %halves = onnx.Constant dense<[1, 1]> : tensor<2xi64>
  %router = onnx.Constant dense<5.000000e-01> : tensor<8x2xf32>
  %xf = onnx.Reshape %x, %flat_shape : (tensor<?x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %scores = onnx.MatMul %xf, %router : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32>
  %p = onnx.Softmax %scores {axis = 1 : i64} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %w, %ids = onnx.TopK %p, %k : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %sum = onnx.ReduceSum %w, %last : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %wn = onnx.Div %w, %sum : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %hot = onnx.OneHot %ids, %depth, %onoff : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x2xi64>
  %mask = onnx.Transpose %hot {perm = array<i64: 2, 1, 0>} : (tensor<?x1x2xi64>) -> tensor<2x1x?xi64>
  %xb = onnx.Unsqueeze %xf, %ax0 : (tensor<?x8xf32>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %wcol = onnx.Unsqueeze %wn, %ax2 : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1x1xf32>
  %wflat = onnx.Flatten %wcol {axis = 2 : i64} : (tensor<?x1x1xf32>) -> tensor<?x1xf32>
  %xf_shape = onnx.Shape %xf : (tensor<?x8xf32>) -> tensor<2xi64>
  %zeros = onnx.ConstantOfShape %xf_shape {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<?x8xf32>
  %e0 = onnx.Constant dense<0> : tensor<i64>
  %gate0 = onnx.Constant dense<1.000000e-01> : tensor<8x4xf32>
  %up0 = onnx.Constant dense<2.000000e-01> : tensor<8x4xf32>
  %down0 = onnx.Constant dense<3.000000e-01> : tensor<4x8xf32>
  %m0 = onnx.Gather %mask, %e0 : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b0 = onnx.Cast %m0 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz0 = onnx.NonZero %b0 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t0 = onnx.Transpose %nz0 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s0:2 = onnx.Split %t0, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot0 = onnx.Squeeze %s0#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok0 = onnx.Squeeze %s0#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows0 = onnx.Gather %xb, %tok0 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in0 = onnx.Reshape %rows0, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g0 = onnx.MatMul %in0, %gate0 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %sig0 = onnx.Sigmoid %g0 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %a0 = onnx.Mul %g0, %sig0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %u0 = onnx.MatMul %in0, %up0 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %h0 = onnx.Mul %a0, %u0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y0 = onnx.MatMul %h0, %down0 : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %fm0 = onnx.Mul %tok0, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi0 = onnx.Add %slot0, %fm0 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws0 = onnx.Gather %wflat, %fi0 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw0 = onnx.Mul %y0, %ws0 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti0 = onnx.Unsqueeze %tok0, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys0 = onnx.Shape %yw0 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix0 = onnx.Expand %ti0, %ys0 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc0 = onnx.ScatterElements %zeros, %ix0, %yw0 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc0 = onnx.Add %zeros, %sc0 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %e1 = onnx.Constant dense<1> : tensor<i64>
  %gate1 = onnx.Constant dense<1.000000e-01> : tensor<8x4xf32>
  %up1 = onnx.Constant dense<2.000000e-01> : tensor<8x4xf32>
  %down1 = onnx.Constant dense<3.000000e-01> : tensor<4x8xf32>
  %m1 = onnx.Gather %mask, %e1 : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b1 = onnx.Cast %m1 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz1 = onnx.NonZero %b1 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t1 = onnx.Transpose %nz1 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s1:2 = onnx.Split %t1, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot1 = onnx.Squeeze %s1#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok1 = onnx.Squeeze %s1#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows1 = onnx.Gather %xb, %tok1 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in1 = onnx.Reshape %rows1, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g1 = onnx.MatMul %in1, %gate1 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %sig1 = onnx.Sigmoid %g1 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %a1 = onnx.Mul %g1, %sig1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %u1 = onnx.MatMul %in1, %up1 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %h1 = onnx.Mul %a1, %u1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y1 = onnx.MatMul %h1, %down1 : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %fm1 = onnx.Mul %tok1, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi1 = onnx.Add %slot1, %fm1 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws1 = onnx.Gather %wflat, %fi1 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw1 = onnx.Mul %y1, %ws1 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti1 = onnx.Unsqueeze %tok1, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys1 = onnx.Shape %yw1 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix1 = onnx.Expand %ti1, %ys1 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc1 = onnx.ScatterElements %zeros, %ix1, %yw1 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc1 = onnx.Add %acc0, %sc1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %x_shape = onnx.Shape %x : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %out = onnx.Reshape %acc1, %x_shape : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  return %out : tensor<?x?x8xf32>
}

// -----

// The same block quantised by onnxruntime's quantizer (MatMulNBits, 4 bits
// in blocks of 16, zero points): the router is a linear layer over its
// llm.dequantize, and each projection's codes, scales and zero points are
// stacked by expert under one llm.dequantize [experts, out, in], the codes
// as the export packed them.
// CHECK-LABEL: func.func @quantized_experts
//  CHECK-SAME:   (%[[X:.*]]: tensor<?x?x8xf32>)
//   CHECK-DAG:   %[[ROUTER:.*]] = llm.dequantize %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x1x8xui8>, tensor<2x1xf32>) -> tensor<2x8xf32>
//   CHECK-DAG:   %[[GATE:.*]] = llm.dequantize %{{.*}}, %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x4x1x8xui8>, tensor<2x4x1xf32>, tensor<2x4x1xui8>) -> tensor<2x4x8xf32>
//   CHECK-DAG:   %[[UP:.*]] = llm.dequantize {{.*}} -> tensor<2x4x8xf32>
//   CHECK-DAG:   %[[DOWN:.*]] = llm.dequantize %{{.*}}, %{{.*}}, %{{.*}} {bits = 4 : i64, block_size = 16 : i64} : (tensor<2x8x1x8xui8>, tensor<2x8x1xf32>, tensor<2x8x1xui8>) -> tensor<2x8x4xf32>
//       CHECK:   %[[LOGITS:.*]] = llm.linear %[[X]], %[[ROUTER]] {transpose_weight} : (tensor<?x?x8xf32>, tensor<2x8xf32>) -> tensor<?x?x2xf32>
//       CHECK:   %[[Y:.*]] = llm.moe %[[X]], %[[LOGITS]], %[[GATE]], %[[UP]], %[[DOWN]] {normalize_top_k, top_k = 1 : i64}
//   CHECK-NOT:   onnx.
//       CHECK:   return %[[Y]]
func.func @quantized_experts(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %flat_shape = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %k = onnx.Constant dense<1> : tensor<1xi64>
  %last = onnx.Constant dense<[-1]> : tensor<1xi64>
  %depth = onnx.Constant dense<2> : tensor<i64>
  %onoff = onnx.Constant dense<[0, 1]> : tensor<2xi64>
  %ax0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %ax2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %halves = onnx.Constant dense<[1, 1]> : tensor<2xi64>
  %none = onnx.None
  %rcodes = onnx.Constant dense<136> : tensor<2x1x8xui8>
  %rscales = onnx.Constant dense<5.000000e-01> : tensor<2x1xf32>
  %xf = onnx.Reshape %x, %flat_shape : (tensor<?x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %scores = onnx.MatMulNBits %xf, %rcodes, %rscales, %none, %none, %none {K = 8 : i64, N = 2 : i64, bits = 4 : i64, block_size = 16 : i64}
      : (tensor<?x8xf32>, tensor<2x1x8xui8>, tensor<2x1xf32>, none, none, none) -> tensor<?x2xf32>
  %p = onnx.Softmax %scores {axis = 1 : i64} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %w, %ids = onnx.TopK %p, %k : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %sum = onnx.ReduceSum %w, %last : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %wn = onnx.Div %w, %sum : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %hot = onnx.OneHot %ids, %depth, %onoff : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x2xi64>
  %mask = onnx.Transpose %hot {perm = array<i64: 2, 1, 0>} : (tensor<?x1x2xi64>) -> tensor<2x1x?xi64>
  %xb = onnx.Unsqueeze %xf, %ax0 : (tensor<?x8xf32>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %wcol = onnx.Unsqueeze %wn, %ax2 : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1x1xf32>
  %wflat = onnx.Flatten %wcol {axis = 2 : i64} : (tensor<?x1x1xf32>) -> tensor<?x1xf32>
  %xf_shape = onnx.Shape %xf : (tensor<?x8xf32>) -> tensor<2xi64>
  %zeros = onnx.ConstantOfShape %xf_shape {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<?x8xf32>
  %e0 = onnx.Constant dense<0> : tensor<i64>
  %gate0 = onnx.Constant dense<17> : tensor<4x1x8xui8>
  %up0 = onnx.Constant dense<34> : tensor<4x1x8xui8>
  %down0 = onnx.Constant dense<51> : tensor<8x1x8xui8>
  %scales0 = onnx.Constant dense<2.500000e-01> : tensor<4xf32>
  %dscales0 = onnx.Constant dense<1.250000e+00> : tensor<8xf32>
  %zeros0 = onnx.Constant dense<8> : tensor<4xui8>
  %dzeros0 = onnx.Constant dense<8> : tensor<8xui8>
  %m0 = onnx.Gather %mask, %e0 : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b0 = onnx.Cast %m0 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz0 = onnx.NonZero %b0 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t0 = onnx.Transpose %nz0 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s0:2 = onnx.Split %t0, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot0 = onnx.Squeeze %s0#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok0 = onnx.Squeeze %s0#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows0 = onnx.Gather %xb, %tok0 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in0 = onnx.Reshape %rows0, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g0 = onnx.MatMulNBits %in0, %gate0, %scales0, %zeros0, %none, %none {K = 8 : i64, N = 4 : i64, bits = 4 : i64, block_size = 16 : i64}
      : (tensor<?x8xf32>, tensor<4x1x8xui8>, tensor<4xf32>, tensor<4xui8>, none, none) -> tensor<?x4xf32>
  %sig0 = onnx.Sigmoid %g0 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %a0 = onnx.Mul %g0, %sig0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %u0 = onnx.MatMulNBits %in0, %up0, %scales0, %zeros0, %none, %none {K = 8 : i64, N = 4 : i64, bits = 4 : i64, block_size = 16 : i64}
      : (tensor<?x8xf32>, tensor<4x1x8xui8>, tensor<4xf32>, tensor<4xui8>, none, none) -> tensor<?x4xf32>
  %h0 = onnx.Mul %a0, %u0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y0 = onnx.MatMulNBits %h0, %down0, %dscales0, %dzeros0, %none, %none {K = 4 : i64, N = 8 : i64, bits = 4 : i64, block_size = 16 : i64}
      : (tensor<?x4xf32>, tensor<8x1x8xui8>, tensor<8xf32>, tensor<8xui8>, none, none) -> tensor<?x8xf32>
  %fm0 = onnx.Mul %tok0, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi0 = onnx.Add %slot0, %fm0 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws0 = onnx.Gather %wflat, %fi0 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw0 = onnx.Mul %y0, %ws0 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti0 = onnx.Unsqueeze %tok0, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys0 = onnx.Shape %yw0 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix0 = onnx.Expand %ti0, %ys0 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc0 = onnx.ScatterElements %zeros, %ix0, %yw0 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc0 = onnx.Add %zeros, %sc0 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %e1 = onnx.Constant dense<1> : tensor<i64>
  %gate1 = onnx.Constant dense<18> : tensor<4x1x8xui8>
  %up1 = onnx.Constant dense<34> : tensor<4x1x8xui8>
  %down1 = onnx.Constant dense<51> : tensor<8x1x8xui8>
  %scales1 = onnx.Constant dense<1.250000e+00> : tensor<4xf32>
  %dscales1 = onnx.Constant dense<1.250000e+00> : tensor<8xf32>
  %zeros1 = onnx.Constant dense<8> : tensor<4xui8>
  %dzeros1 = onnx.Constant dense<8> : tensor<8xui8>
  %m1 = onnx.Gather %mask, %e1 : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b1 = onnx.Cast %m1 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz1 = onnx.NonZero %b1 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t1 = onnx.Transpose %nz1 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s1:2 = onnx.Split %t1, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot1 = onnx.Squeeze %s1#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok1 = onnx.Squeeze %s1#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows1 = onnx.Gather %xb, %tok1 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in1 = onnx.Reshape %rows1, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g1 = onnx.MatMulNBits %in1, %gate1, %scales1, %zeros1, %none, %none {K = 8 : i64, N = 4 : i64, bits = 4 : i64, block_size = 16 : i64}
      : (tensor<?x8xf32>, tensor<4x1x8xui8>, tensor<4xf32>, tensor<4xui8>, none, none) -> tensor<?x4xf32>
  %sig1 = onnx.Sigmoid %g1 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %a1 = onnx.Mul %g1, %sig1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %u1 = onnx.MatMulNBits %in1, %up1, %scales1, %zeros1, %none, %none {K = 8 : i64, N = 4 : i64, bits = 4 : i64, block_size = 16 : i64}
      : (tensor<?x8xf32>, tensor<4x1x8xui8>, tensor<4xf32>, tensor<4xui8>, none, none) -> tensor<?x4xf32>
  %h1 = onnx.Mul %a1, %u1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y1 = onnx.MatMulNBits %h1, %down1, %dscales1, %dzeros1, %none, %none {K = 4 : i64, N = 8 : i64, bits = 4 : i64, block_size = 16 : i64}
      : (tensor<?x4xf32>, tensor<8x1x8xui8>, tensor<8xf32>, tensor<8xui8>, none, none) -> tensor<?x8xf32>
  %fm1 = onnx.Mul %tok1, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi1 = onnx.Add %slot1, %fm1 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws1 = onnx.Gather %wflat, %fi1 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw1 = onnx.Mul %y1, %ws1 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti1 = onnx.Unsqueeze %tok1, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys1 = onnx.Shape %yw1 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix1 = onnx.Expand %ti1, %ys1 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc1 = onnx.ScatterElements %zeros, %ix1, %yw1 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc1 = onnx.Add %acc0, %sc1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %x_shape = onnx.Shape %x : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %out = onnx.Reshape %acc1, %x_shape : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  return %out : tensor<?x?x8xf32>
}

// -----

// Experts whose gates are quantised for one and f32 for the other cannot
// share one stacked weight: not raised, and the error says why.
// CHECK-LABEL: func.func @mixed_expert_forms
//   CHECK-NOT:   llm.moe
// ERROR: a mixture of experts is not supported in this form: the experts' gate projections are not all in one form (4 bits in blocks of 16, f32)
func.func @mixed_expert_forms(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %flat_shape = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %k = onnx.Constant dense<1> : tensor<1xi64>
  %last = onnx.Constant dense<[-1]> : tensor<1xi64>
  %depth = onnx.Constant dense<2> : tensor<i64>
  %onoff = onnx.Constant dense<[0, 1]> : tensor<2xi64>
  %ax0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %ax2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %halves = onnx.Constant dense<[1, 1]> : tensor<2xi64>
  %router = onnx.Constant dense<5.000000e-01> : tensor<8x2xf32>
  %xf = onnx.Reshape %x, %flat_shape : (tensor<?x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %scores = onnx.MatMul %xf, %router : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32>
  %p = onnx.Softmax %scores {axis = 1 : i64} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %w, %ids = onnx.TopK %p, %k : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %sum = onnx.ReduceSum %w, %last : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %wn = onnx.Div %w, %sum : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %hot = onnx.OneHot %ids, %depth, %onoff : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x2xi64>
  %mask = onnx.Transpose %hot {perm = array<i64: 2, 1, 0>} : (tensor<?x1x2xi64>) -> tensor<2x1x?xi64>
  %xb = onnx.Unsqueeze %xf, %ax0 : (tensor<?x8xf32>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %wcol = onnx.Unsqueeze %wn, %ax2 : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1x1xf32>
  %wflat = onnx.Flatten %wcol {axis = 2 : i64} : (tensor<?x1x1xf32>) -> tensor<?x1xf32>
  %xf_shape = onnx.Shape %xf : (tensor<?x8xf32>) -> tensor<2xi64>
  %zeros = onnx.ConstantOfShape %xf_shape {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<?x8xf32>
  %e0 = onnx.Constant dense<0> : tensor<i64>
  %none = onnx.None
  %gate0 = onnx.Constant dense<17> : tensor<4x1x8xui8>
  %scales0 = onnx.Constant dense<2.500000e-01> : tensor<4xf32>
  %up0 = onnx.Constant dense<2.000000e-01> : tensor<8x4xf32>
  %down0 = onnx.Constant dense<3.000000e-01> : tensor<4x8xf32>
  %m0 = onnx.Gather %mask, %e0 : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b0 = onnx.Cast %m0 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz0 = onnx.NonZero %b0 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t0 = onnx.Transpose %nz0 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s0:2 = onnx.Split %t0, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot0 = onnx.Squeeze %s0#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok0 = onnx.Squeeze %s0#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows0 = onnx.Gather %xb, %tok0 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in0 = onnx.Reshape %rows0, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g0 = onnx.MatMulNBits %in0, %gate0, %scales0, %none, %none, %none {K = 8 : i64, N = 4 : i64, bits = 4 : i64, block_size = 16 : i64}
      : (tensor<?x8xf32>, tensor<4x1x8xui8>, tensor<4xf32>, none, none, none) -> tensor<?x4xf32>
  %sig0 = onnx.Sigmoid %g0 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %a0 = onnx.Mul %g0, %sig0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %u0 = onnx.MatMul %in0, %up0 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %h0 = onnx.Mul %a0, %u0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y0 = onnx.MatMul %h0, %down0 : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %fm0 = onnx.Mul %tok0, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi0 = onnx.Add %slot0, %fm0 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws0 = onnx.Gather %wflat, %fi0 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw0 = onnx.Mul %y0, %ws0 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti0 = onnx.Unsqueeze %tok0, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys0 = onnx.Shape %yw0 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix0 = onnx.Expand %ti0, %ys0 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc0 = onnx.ScatterElements %zeros, %ix0, %yw0 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc0 = onnx.Add %zeros, %sc0 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %e1 = onnx.Constant dense<1> : tensor<i64>
  %gate1 = onnx.Constant dense<1.000000e-01> : tensor<8x4xf32>
  %up1 = onnx.Constant dense<2.000000e-01> : tensor<8x4xf32>
  %down1 = onnx.Constant dense<3.000000e-01> : tensor<4x8xf32>
  %m1 = onnx.Gather %mask, %e1 : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b1 = onnx.Cast %m1 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz1 = onnx.NonZero %b1 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t1 = onnx.Transpose %nz1 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s1:2 = onnx.Split %t1, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot1 = onnx.Squeeze %s1#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok1 = onnx.Squeeze %s1#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows1 = onnx.Gather %xb, %tok1 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in1 = onnx.Reshape %rows1, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g1 = onnx.MatMul %in1, %gate1 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %sig1 = onnx.Sigmoid %g1 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %a1 = onnx.Mul %g1, %sig1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %u1 = onnx.MatMul %in1, %up1 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %h1 = onnx.Mul %a1, %u1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y1 = onnx.MatMul %h1, %down1 : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %fm1 = onnx.Mul %tok1, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi1 = onnx.Add %slot1, %fm1 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws1 = onnx.Gather %wflat, %fi1 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw1 = onnx.Mul %y1, %ws1 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti1 = onnx.Unsqueeze %tok1, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys1 = onnx.Shape %yw1 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix1 = onnx.Expand %ti1, %ys1 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc1 = onnx.ScatterElements %zeros, %ix1, %yw1 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc1 = onnx.Add %acc0, %sc1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %x_shape = onnx.Shape %x : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %out = onnx.Reshape %acc1, %x_shape : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  return %out : tensor<?x?x8xf32>
}

// -----

// Experts gated by another activation are not raised; the error says why.
// CHECK-LABEL: func.func @relu_experts
//       CHECK:   onnx.TopK
//   CHECK-NOT:   llm.moe
// ERROR: onnx ops not raised to llm: {{.*}}onnx.TopK x1{{.*}}; a mixture of experts is not supported in this form: an expert is not silu(gate(x)) * up(x) of two projections: only silu-gated experts are raised
func.func @relu_experts(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %flat_shape = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %k = onnx.Constant dense<1> : tensor<1xi64>
  %last = onnx.Constant dense<[-1]> : tensor<1xi64>
  %depth = onnx.Constant dense<1> : tensor<i64>
  %onoff = onnx.Constant dense<[0, 1]> : tensor<2xi64>
  %ax0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %ax2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %halves = onnx.Constant dense<[1, 1]> : tensor<2xi64>
  %router = onnx.Constant dense<5.000000e-01> : tensor<8x1xf32>
  %xf = onnx.Reshape %x, %flat_shape : (tensor<?x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %scores = onnx.MatMul %xf, %router : (tensor<?x8xf32>, tensor<8x1xf32>) -> tensor<?x1xf32>
  %p = onnx.Softmax %scores {axis = 1 : i64} : (tensor<?x1xf32>) -> tensor<?x1xf32>
  %w, %ids = onnx.TopK %p, %k : (tensor<?x1xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %sum = onnx.ReduceSum %w, %last : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %wn = onnx.Div %w, %sum : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %hot = onnx.OneHot %ids, %depth, %onoff : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x1xi64>
  %mask = onnx.Transpose %hot {perm = array<i64: 2, 1, 0>} : (tensor<?x1x1xi64>) -> tensor<1x1x?xi64>
  %xb = onnx.Unsqueeze %xf, %ax0 : (tensor<?x8xf32>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %wcol = onnx.Unsqueeze %wn, %ax2 : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1x1xf32>
  %wflat = onnx.Flatten %wcol {axis = 2 : i64} : (tensor<?x1x1xf32>) -> tensor<?x1xf32>
  %xf_shape = onnx.Shape %xf : (tensor<?x8xf32>) -> tensor<2xi64>
  %zeros = onnx.ConstantOfShape %xf_shape {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<?x8xf32>
  %e0 = onnx.Constant dense<0> : tensor<i64>
  %gate0 = onnx.Constant dense<1.000000e-01> : tensor<8x4xf32>
  %up0 = onnx.Constant dense<2.000000e-01> : tensor<8x4xf32>
  %down0 = onnx.Constant dense<3.000000e-01> : tensor<4x8xf32>
  %m0 = onnx.Gather %mask, %e0 : (tensor<1x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b0 = onnx.Cast %m0 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz0 = onnx.NonZero %b0 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t0 = onnx.Transpose %nz0 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s0:2 = onnx.Split %t0, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot0 = onnx.Squeeze %s0#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok0 = onnx.Squeeze %s0#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows0 = onnx.Gather %xb, %tok0 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in0 = onnx.Reshape %rows0, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g0 = onnx.MatMul %in0, %gate0 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %a0 = onnx.Relu %g0 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %u0 = onnx.MatMul %in0, %up0 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %h0 = onnx.Mul %a0, %u0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y0 = onnx.MatMul %h0, %down0 : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %fm0 = onnx.Mul %tok0, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi0 = onnx.Add %slot0, %fm0 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws0 = onnx.Gather %wflat, %fi0 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw0 = onnx.Mul %y0, %ws0 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti0 = onnx.Unsqueeze %tok0, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys0 = onnx.Shape %yw0 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix0 = onnx.Expand %ti0, %ys0 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc0 = onnx.ScatterElements %zeros, %ix0, %yw0 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc0 = onnx.Add %zeros, %sc0 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %x_shape = onnx.Shape %x : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %out = onnx.Reshape %acc0, %x_shape : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  return %out : tensor<?x?x8xf32>
}

// -----

// A router over 2 experts whose block adds the output of one: not the
// router's mixture, so it stays unraised.
// CHECK-LABEL: func.func @missing_expert
//   CHECK-NOT:   llm.moe
// ERROR: a mixture of experts is not supported in this form: the router has 2 experts, the block computes 1 (an export traced with inputs that reached only those leaves the others out)
func.func @missing_expert(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %flat_shape = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %k = onnx.Constant dense<1> : tensor<1xi64>
  %last = onnx.Constant dense<[-1]> : tensor<1xi64>
  %depth = onnx.Constant dense<2> : tensor<i64>
  %onoff = onnx.Constant dense<[0, 1]> : tensor<2xi64>
  %ax0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %ax2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %halves = onnx.Constant dense<[1, 1]> : tensor<2xi64>
  %router = onnx.Constant dense<5.000000e-01> : tensor<8x2xf32>
  %xf = onnx.Reshape %x, %flat_shape : (tensor<?x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %scores = onnx.MatMul %xf, %router : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32>
  %p = onnx.Softmax %scores {axis = 1 : i64} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %w, %ids = onnx.TopK %p, %k : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %sum = onnx.ReduceSum %w, %last : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %wn = onnx.Div %w, %sum : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %hot = onnx.OneHot %ids, %depth, %onoff : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x2xi64>
  %mask = onnx.Transpose %hot {perm = array<i64: 2, 1, 0>} : (tensor<?x1x2xi64>) -> tensor<2x1x?xi64>
  %xb = onnx.Unsqueeze %xf, %ax0 : (tensor<?x8xf32>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %wcol = onnx.Unsqueeze %wn, %ax2 : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1x1xf32>
  %wflat = onnx.Flatten %wcol {axis = 2 : i64} : (tensor<?x1x1xf32>) -> tensor<?x1xf32>
  %xf_shape = onnx.Shape %xf : (tensor<?x8xf32>) -> tensor<2xi64>
  %zeros = onnx.ConstantOfShape %xf_shape {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<?x8xf32>
  %e1 = onnx.Constant dense<1> : tensor<i64>
  %gate1 = onnx.Constant dense<1.000000e-01> : tensor<8x4xf32>
  %up1 = onnx.Constant dense<2.000000e-01> : tensor<8x4xf32>
  %down1 = onnx.Constant dense<3.000000e-01> : tensor<4x8xf32>
  %m1 = onnx.Gather %mask, %e1 : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b1 = onnx.Cast %m1 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz1 = onnx.NonZero %b1 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t1 = onnx.Transpose %nz1 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s1:2 = onnx.Split %t1, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot1 = onnx.Squeeze %s1#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok1 = onnx.Squeeze %s1#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows1 = onnx.Gather %xb, %tok1 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in1 = onnx.Reshape %rows1, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g1 = onnx.MatMul %in1, %gate1 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %sig1 = onnx.Sigmoid %g1 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %a1 = onnx.Mul %g1, %sig1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %u1 = onnx.MatMul %in1, %up1 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %h1 = onnx.Mul %a1, %u1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y1 = onnx.MatMul %h1, %down1 : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %fm1 = onnx.Mul %tok1, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi1 = onnx.Add %slot1, %fm1 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws1 = onnx.Gather %wflat, %fi1 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw1 = onnx.Mul %y1, %ws1 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti1 = onnx.Unsqueeze %tok1, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys1 = onnx.Shape %yw1 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix1 = onnx.Expand %ti1, %ys1 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc1 = onnx.ScatterElements %zeros, %ix1, %yw1 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc1 = onnx.Add %zeros, %sc1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %x_shape = onnx.Shape %x : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %out = onnx.Reshape %acc1, %x_shape : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  return %out : tensor<?x?x8xf32>
}

// -----

// Near miss: a TopK of the softmax scaled by a TopK before it is neither a
// softmax's top k nor DeepSeek-V3's scored routing; it is refused by name.
// CHECK-LABEL: func.func @rescaled_routing
//   CHECK-NOT:   llm.moe
// ERROR: a mixture of experts is not supported in this form: the experts are chosen by something other than the sigmoid or the softmax of the router's logits, or that plus a bias
func.func @rescaled_routing(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %flat_shape = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %k = onnx.Constant dense<1> : tensor<1xi64>
  %last = onnx.Constant dense<[-1]> : tensor<1xi64>
  %depth = onnx.Constant dense<2> : tensor<i64>
  %onoff = onnx.Constant dense<[0, 1]> : tensor<2xi64>
  %ax0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %ax2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %halves = onnx.Constant dense<[1, 1]> : tensor<2xi64>
  %router = onnx.Constant dense<5.000000e-01> : tensor<8x2xf32>
  %xf = onnx.Reshape %x, %flat_shape : (tensor<?x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %scores = onnx.MatMul %xf, %router : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32>
  %soft = onnx.Softmax %scores {axis = 1 : i64} : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %group, %group_ids = onnx.TopK %soft, %k : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %p = onnx.Mul %soft, %group : (tensor<?x2xf32>, tensor<?x1xf32>) -> tensor<?x2xf32>
  %w, %ids = onnx.TopK %p, %k : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %sum = onnx.ReduceSum %w, %last : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %wn = onnx.Div %w, %sum : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %hot = onnx.OneHot %ids, %depth, %onoff : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x2xi64>
  %mask = onnx.Transpose %hot {perm = array<i64: 2, 1, 0>} : (tensor<?x1x2xi64>) -> tensor<2x1x?xi64>
  %xb = onnx.Unsqueeze %xf, %ax0 : (tensor<?x8xf32>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %wcol = onnx.Unsqueeze %wn, %ax2 : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1x1xf32>
  %wflat = onnx.Flatten %wcol {axis = 2 : i64} : (tensor<?x1x1xf32>) -> tensor<?x1xf32>
  %xf_shape = onnx.Shape %xf : (tensor<?x8xf32>) -> tensor<2xi64>
  %zeros = onnx.ConstantOfShape %xf_shape {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<?x8xf32>
  %e0 = onnx.Constant dense<0> : tensor<i64>
  %gate0 = onnx.Constant dense<1.000000e-01> : tensor<8x4xf32>
  %up0 = onnx.Constant dense<2.000000e-01> : tensor<8x4xf32>
  %down0 = onnx.Constant dense<3.000000e-01> : tensor<4x8xf32>
  %m0 = onnx.Gather %mask, %e0 : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b0 = onnx.Cast %m0 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz0 = onnx.NonZero %b0 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t0 = onnx.Transpose %nz0 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s0:2 = onnx.Split %t0, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot0 = onnx.Squeeze %s0#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok0 = onnx.Squeeze %s0#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows0 = onnx.Gather %xb, %tok0 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in0 = onnx.Reshape %rows0, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g0 = onnx.MatMul %in0, %gate0 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %sig0 = onnx.Sigmoid %g0 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %a0 = onnx.Mul %g0, %sig0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %u0 = onnx.MatMul %in0, %up0 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %h0 = onnx.Mul %a0, %u0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y0 = onnx.MatMul %h0, %down0 : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %fm0 = onnx.Mul %tok0, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi0 = onnx.Add %slot0, %fm0 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws0 = onnx.Gather %wflat, %fi0 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw0 = onnx.Mul %y0, %ws0 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti0 = onnx.Unsqueeze %tok0, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys0 = onnx.Shape %yw0 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix0 = onnx.Expand %ti0, %ys0 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc0 = onnx.ScatterElements %zeros, %ix0, %yw0 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc0 = onnx.Add %zeros, %sc0 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %e1 = onnx.Constant dense<1> : tensor<i64>
  %gate1 = onnx.Constant dense<1.000000e-01> : tensor<8x4xf32>
  %up1 = onnx.Constant dense<2.000000e-01> : tensor<8x4xf32>
  %down1 = onnx.Constant dense<3.000000e-01> : tensor<4x8xf32>
  %m1 = onnx.Gather %mask, %e1 : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b1 = onnx.Cast %m1 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz1 = onnx.NonZero %b1 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t1 = onnx.Transpose %nz1 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s1:2 = onnx.Split %t1, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot1 = onnx.Squeeze %s1#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok1 = onnx.Squeeze %s1#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows1 = onnx.Gather %xb, %tok1 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in1 = onnx.Reshape %rows1, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g1 = onnx.MatMul %in1, %gate1 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %sig1 = onnx.Sigmoid %g1 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %a1 = onnx.Mul %g1, %sig1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %u1 = onnx.MatMul %in1, %up1 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %h1 = onnx.Mul %a1, %u1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y1 = onnx.MatMul %h1, %down1 : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %fm1 = onnx.Mul %tok1, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi1 = onnx.Add %slot1, %fm1 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws1 = onnx.Gather %wflat, %fi1 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw1 = onnx.Mul %y1, %ws1 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti1 = onnx.Unsqueeze %tok1, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys1 = onnx.Shape %yw1 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix1 = onnx.Expand %ti1, %ys1 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc1 = onnx.ScatterElements %zeros, %ix1, %yw1 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc1 = onnx.Add %acc0, %sc1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %x_shape = onnx.Shape %x : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %out = onnx.Reshape %acc1, %x_shape : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  return %out : tensor<?x?x8xf32>
}

// -----

// Near miss: sigmoid scores plus a bias choose the experts, but the weights
// are the biased choices (TopK's values), not the chosen experts' scores.
// CHECK-LABEL: func.func @biased_routing_weights
//   CHECK-NOT:   llm.moe
// ERROR: a mixture of experts is not supported in this form: the routing weights are not the chosen experts' scores (GatherElements of the TopK's ids)
func.func @biased_routing_weights(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %flat_shape = onnx.Constant dense<[-1, 8]> : tensor<2xi64>
  %k = onnx.Constant dense<1> : tensor<1xi64>
  %last = onnx.Constant dense<[-1]> : tensor<1xi64>
  %depth = onnx.Constant dense<2> : tensor<i64>
  %onoff = onnx.Constant dense<[0, 1]> : tensor<2xi64>
  %ax0 = onnx.Constant dense<[0]> : tensor<1xi64>
  %ax1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %ax2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %halves = onnx.Constant dense<[1, 1]> : tensor<2xi64>
  %router = onnx.Constant dense<5.000000e-01> : tensor<8x2xf32>
  %xf = onnx.Reshape %x, %flat_shape : (tensor<?x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %scores = onnx.MatMul %xf, %router : (tensor<?x8xf32>, tensor<8x2xf32>) -> tensor<?x2xf32>
  %sig = onnx.Sigmoid %scores : (tensor<?x2xf32>) -> tensor<?x2xf32>
  %bias = onnx.Constant dense<[[1.000000e-01, -1.000000e-01]]> : tensor<1x2xf32>
  %choice = onnx.Add %sig, %bias : (tensor<?x2xf32>, tensor<1x2xf32>) -> tensor<?x2xf32>
  %w, %ids = onnx.TopK %choice, %k : (tensor<?x2xf32>, tensor<1xi64>) -> (tensor<?x1xf32>, tensor<?x1xi64>)
  %sum = onnx.ReduceSum %w, %last : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %wn = onnx.Div %w, %sum : (tensor<?x1xf32>, tensor<?x1xf32>) -> tensor<?x1xf32>
  %hot = onnx.OneHot %ids, %depth, %onoff : (tensor<?x1xi64>, tensor<i64>, tensor<2xi64>) -> tensor<?x1x2xi64>
  %mask = onnx.Transpose %hot {perm = array<i64: 2, 1, 0>} : (tensor<?x1x2xi64>) -> tensor<2x1x?xi64>
  %xb = onnx.Unsqueeze %xf, %ax0 : (tensor<?x8xf32>, tensor<1xi64>) -> tensor<1x?x8xf32>
  %wcol = onnx.Unsqueeze %wn, %ax2 : (tensor<?x1xf32>, tensor<1xi64>) -> tensor<?x1x1xf32>
  %wflat = onnx.Flatten %wcol {axis = 2 : i64} : (tensor<?x1x1xf32>) -> tensor<?x1xf32>
  %xf_shape = onnx.Shape %xf : (tensor<?x8xf32>) -> tensor<2xi64>
  %zeros = onnx.ConstantOfShape %xf_shape {value = dense<0.000000e+00> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<?x8xf32>
  %e0 = onnx.Constant dense<0> : tensor<i64>
  %gate0 = onnx.Constant dense<1.000000e-01> : tensor<8x4xf32>
  %up0 = onnx.Constant dense<2.000000e-01> : tensor<8x4xf32>
  %down0 = onnx.Constant dense<3.000000e-01> : tensor<4x8xf32>
  %m0 = onnx.Gather %mask, %e0 : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b0 = onnx.Cast %m0 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz0 = onnx.NonZero %b0 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t0 = onnx.Transpose %nz0 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s0:2 = onnx.Split %t0, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot0 = onnx.Squeeze %s0#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok0 = onnx.Squeeze %s0#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows0 = onnx.Gather %xb, %tok0 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in0 = onnx.Reshape %rows0, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g0 = onnx.MatMul %in0, %gate0 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %sig0 = onnx.Sigmoid %g0 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %a0 = onnx.Mul %g0, %sig0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %u0 = onnx.MatMul %in0, %up0 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %h0 = onnx.Mul %a0, %u0 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y0 = onnx.MatMul %h0, %down0 : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %fm0 = onnx.Mul %tok0, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi0 = onnx.Add %slot0, %fm0 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws0 = onnx.Gather %wflat, %fi0 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw0 = onnx.Mul %y0, %ws0 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti0 = onnx.Unsqueeze %tok0, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys0 = onnx.Shape %yw0 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix0 = onnx.Expand %ti0, %ys0 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc0 = onnx.ScatterElements %zeros, %ix0, %yw0 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc0 = onnx.Add %zeros, %sc0 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %e1 = onnx.Constant dense<1> : tensor<i64>
  %gate1 = onnx.Constant dense<1.000000e-01> : tensor<8x4xf32>
  %up1 = onnx.Constant dense<2.000000e-01> : tensor<8x4xf32>
  %down1 = onnx.Constant dense<3.000000e-01> : tensor<4x8xf32>
  %m1 = onnx.Gather %mask, %e1 : (tensor<2x1x?xi64>, tensor<i64>) -> tensor<1x?xi64>
  %b1 = onnx.Cast %m1 {to = 9 : i64} : (tensor<1x?xi64>) -> tensor<1x?xi1>
  %nz1 = onnx.NonZero %b1 : (tensor<1x?xi1>) -> tensor<2x?xi64>
  %t1 = onnx.Transpose %nz1 {perm = array<i64: 1, 0>} : (tensor<2x?xi64>) -> tensor<?x2xi64>
  %s1:2 = onnx.Split %t1, %halves {axis = 1 : i64} : (tensor<?x2xi64>, tensor<2xi64>) -> (tensor<?x1xi64>, tensor<?x1xi64>)
  %slot1 = onnx.Squeeze %s1#0, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %tok1 = onnx.Squeeze %s1#1, %ax1 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?xi64>
  %rows1 = onnx.Gather %xb, %tok1 {axis = 1 : i64} : (tensor<1x?x8xf32>, tensor<?xi64>) -> tensor<1x?x8xf32>
  %in1 = onnx.Reshape %rows1, %flat_shape : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
  %g1 = onnx.MatMul %in1, %gate1 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %sig1 = onnx.Sigmoid %g1 : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %a1 = onnx.Mul %g1, %sig1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %u1 = onnx.MatMul %in1, %up1 : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %h1 = onnx.Mul %a1, %u1 : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
  %y1 = onnx.MatMul %h1, %down1 : (tensor<?x4xf32>, tensor<4x8xf32>) -> tensor<?x8xf32>
  %fm1 = onnx.Mul %tok1, %k : (tensor<?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %fi1 = onnx.Add %slot1, %fm1 : (tensor<?xi64>, tensor<?xi64>) -> tensor<?xi64>
  %ws1 = onnx.Gather %wflat, %fi1 : (tensor<?x1xf32>, tensor<?xi64>) -> tensor<?x1xf32>
  %yw1 = onnx.Mul %y1, %ws1 : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  %ti1 = onnx.Unsqueeze %tok1, %ax1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %ys1 = onnx.Shape %yw1 : (tensor<?x8xf32>) -> tensor<2xi64>
  %ix1 = onnx.Expand %ti1, %ys1 : (tensor<?x1xi64>, tensor<2xi64>) -> tensor<?x8xi64>
  %sc1 = onnx.ScatterElements %zeros, %ix1, %yw1 : (tensor<?x8xf32>, tensor<?x8xi64>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %acc1 = onnx.Add %acc0, %sc1 : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %x_shape = onnx.Shape %x : (tensor<?x?x8xf32>) -> tensor<3xi64>
  %out = onnx.Reshape %acc1, %x_shape : (tensor<?x8xf32>, tensor<3xi64>) -> tensor<?x?x8xf32>
  return %out : tensor<?x?x8xf32>
}
