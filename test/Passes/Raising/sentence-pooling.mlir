// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(raise-onnx-to-llm{allow-leftovers=true}))' -verify-diagnostics | FileCheck %s

// A sentence-transformers embedding model as optimum exports it: the token
// embeddings times the expanded attention mask, gathered (GatherElements) at
// indices computed from the mask, squeezed, then divided by their L2 norm
// (Normalize). The gather proves to pick each row's last token and the mask
// to be ones on real rows, so the function returns the token embeddings as
// the final hidden states, once: the runtime pools and normalises them.
// CHECK-LABEL: func.func @last_token_pooling
//  CHECK-SAME:   -> (tensor<?x?x4xf32> {onnx.name = "last_hidden_state"})
//   CHECK-NOT:   onnx.GatherElements
//   CHECK-NOT:   onnx.ReduceL2
//       CHECK:   %[[TOKENS:.*]] = llm.embedding
//       CHECK:   return %[[TOKENS]] : tensor<?x?x4xf32>
func.func @last_token_pooling(%ids: tensor<?x?xi64> {onnx.name = "input_ids"},
                              %am: tensor<?x?xi64> {onnx.name = "attention_mask"})
    -> (tensor<?x?x4xf32> {onnx.name = "token_embeddings"}, tensor<?x4xf32> {onnx.name = "sentence_embedding"}) {
  %table = onnx.Constant dense<0.5> : tensor<64x4xf32>
  %one = onnx.Constant dense<1> : tensor<i64>
  %axis1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %axis2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %last_axis = onnx.Constant dense<[-1]> : tensor<1xi64>
  %width = onnx.Constant dense<[1, 4]> : tensor<2xi64>
  %eps = onnx.Constant dense<1.0e-12> : tensor<f32>
  %tokens = onnx.Gather %table, %ids : (tensor<64x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4xf32>
  %mask3 = onnx.Unsqueeze %am, %axis2 : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?x1xi64>
  %maskf = onnx.Cast %mask3 {to = 1 : i64} : (tensor<?x?x1xi64>) -> tensor<?x?x1xf32>
  %masked = onnx.Mul %tokens, %maskf : (tensor<?x?x4xf32>, tensor<?x?x1xf32>) -> tensor<?x?x4xf32>
  %lengths = onnx.ReduceSum %am, %axis1 {keepdims = 0 : i64} : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %last = onnx.Sub %lengths, %one : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %last2 = onnx.Unsqueeze %last, %axis1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %last3 = onnx.Unsqueeze %last2, %axis2 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?x1x1xi64>
  %batch = onnx.Shape %am {end = 1 : i64} : (tensor<?x?xi64>) -> tensor<1xi64>
  %shape = onnx.Concat %batch, %width {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  %indices = onnx.Expand %last3, %shape : (tensor<?x1x1xi64>, tensor<3xi64>) -> tensor<?x1x4xi64>
  %gathered = onnx.GatherElements %masked, %indices {axis = 1 : i64} : (tensor<?x?x4xf32>, tensor<?x1x4xi64>) -> tensor<?x1x4xf32>
  %pooled = onnx.Squeeze %gathered, %axis1 : (tensor<?x1x4xf32>, tensor<1xi64>) -> tensor<?x4xf32>
  %norm = onnx.ReduceL2 %pooled, %last_axis {keepdims = 1 : i64} : (tensor<?x4xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %none = onnx.None
  %clipped = onnx.Clip %norm, %eps, %none : (tensor<?x1xf32>, tensor<f32>, none) -> tensor<?x1xf32>
  %normalized = onnx.Div %pooled, %clipped : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  return %tokens, %normalized : tensor<?x?x4xf32>, tensor<?x4xf32>
}

// -----

// Near miss: indices of each row's first token (CLS pooling) are not proven
// to be the last token's, and the export is refused by name.
// expected-error @+1 {{pools its sentence_embedding at rows not proven to be each sequence's last token}}
func.func @first_token_pooling(%ids: tensor<?x?xi64> {onnx.name = "input_ids"},
                               %am: tensor<?x?xi64> {onnx.name = "attention_mask"})
    -> (tensor<?x4xf32> {onnx.name = "sentence_embedding"}) {
  %table = onnx.Constant dense<0.5> : tensor<64x4xf32>
  %zero = onnx.Constant dense<0> : tensor<i64>
  %axis1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %axis2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %width = onnx.Constant dense<[1, 4]> : tensor<2xi64>
  %tokens = onnx.Gather %table, %ids : (tensor<64x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4xf32>
  %lengths = onnx.ReduceSum %am, %axis1 {keepdims = 0 : i64} : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?xi64>
  %first = onnx.Mul %lengths, %zero : (tensor<?xi64>, tensor<i64>) -> tensor<?xi64>
  %first2 = onnx.Unsqueeze %first, %axis1 : (tensor<?xi64>, tensor<1xi64>) -> tensor<?x1xi64>
  %first3 = onnx.Unsqueeze %first2, %axis2 : (tensor<?x1xi64>, tensor<1xi64>) -> tensor<?x1x1xi64>
  %batch = onnx.Shape %am {end = 1 : i64} : (tensor<?x?xi64>) -> tensor<1xi64>
  %shape = onnx.Concat %batch, %width {axis = 0 : i64} : (tensor<1xi64>, tensor<2xi64>) -> tensor<3xi64>
  %indices = onnx.Expand %first3, %shape : (tensor<?x1x1xi64>, tensor<3xi64>) -> tensor<?x1x4xi64>
  %gathered = onnx.GatherElements %tokens, %indices {axis = 1 : i64} : (tensor<?x?x4xf32>, tensor<?x1x4xi64>) -> tensor<?x1x4xf32>
  %pooled = onnx.Squeeze %gathered, %axis1 : (tensor<?x1x4xf32>, tensor<1xi64>) -> tensor<?x4xf32>
  return %pooled : tensor<?x4xf32>
}

// -----

// Mean pooling (the masked token embeddings summed, over the mask's sum) is
// not served: refused by name.
// expected-error @+1 {{pools its sentence_embedding in a way llmc does not serve: only sentence-transformers' last-token pooling is}}
func.func @mean_pooling(%ids: tensor<?x?xi64> {onnx.name = "input_ids"},
                        %am: tensor<?x?xi64> {onnx.name = "attention_mask"})
    -> (tensor<?x4xf32> {onnx.name = "sentence_embedding"}) {
  %table = onnx.Constant dense<0.5> : tensor<64x4xf32>
  %axis1 = onnx.Constant dense<[1]> : tensor<1xi64>
  %axis2 = onnx.Constant dense<[2]> : tensor<1xi64>
  %tokens = onnx.Gather %table, %ids : (tensor<64x4xf32>, tensor<?x?xi64>) -> tensor<?x?x4xf32>
  %mask3 = onnx.Unsqueeze %am, %axis2 : (tensor<?x?xi64>, tensor<1xi64>) -> tensor<?x?x1xi64>
  %maskf = onnx.Cast %mask3 {to = 1 : i64} : (tensor<?x?x1xi64>) -> tensor<?x?x1xf32>
  %masked = onnx.Mul %tokens, %maskf : (tensor<?x?x4xf32>, tensor<?x?x1xf32>) -> tensor<?x?x4xf32>
  %sum = onnx.ReduceSum %masked, %axis1 {keepdims = 0 : i64} : (tensor<?x?x4xf32>, tensor<1xi64>) -> tensor<?x4xf32>
  %count = onnx.ReduceSum %maskf, %axis1 {keepdims = 0 : i64} : (tensor<?x?x1xf32>, tensor<1xi64>) -> tensor<?x1xf32>
  %mean = onnx.Div %sum, %count : (tensor<?x4xf32>, tensor<?x1xf32>) -> tensor<?x4xf32>
  return %mean : tensor<?x4xf32>
}
