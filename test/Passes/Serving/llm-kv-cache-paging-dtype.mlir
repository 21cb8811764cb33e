// RUN: llmc-opt %s --pass-pipeline='builtin.module(func.func(llm-kv-cache-paging))' | FileCheck %s
// RUN: not llmc-opt %s --pass-pipeline='builtin.module(func.func(llm-kv-cache-paging{kv-cache-dtype=bf16}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=BF16
// RUN: not llmc-opt %s --pass-pipeline='builtin.module(func.func(llm-kv-cache-paging{kv-cache-dtype=int8}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=INT8

// A model that computes in f16 (as the CUDA target casts it) caches f16
// rows with kv-cache-dtype=auto; bf16 and int8 caches store f32 keys and
// values, so they refuse it by name.
// CHECK-LABEL: func.func @half
//  CHECK-SAME:   tensor<1x?x2x2x16x16xf16> {llmc.abi = "kv_pool"}
// BF16: error: 'llm.attention' op caches 'f16' keys; the bf16 KV cache stores f32 keys and values
// INT8: error: 'llm.attention' op caches 'f16' keys; the int8 KV cache stores f32 keys and values
func.func @half(%ids: tensor<?x?xi64> {onnx.name = "input_ids"}, %mask: tensor<?x?xi64> {onnx.name = "attention_mask"},
                  %positions: tensor<?x?xi64> {onnx.name = "position_ids"},
                  %past_k: tensor<?x2x?x16xf16>, %past_v: tensor<?x2x?x16xf16>)
    -> (tensor<?x?x64xf16>, tensor<?x2x?x16xf16>, tensor<?x2x?x16xf16>) {
  %table = llm.constant dense<0.5> : tensor<64x32xf16>
  %inv_freq = llm.constant dense<[1.0, 0.1, 0.01, 0.001, 0.0001, 0.00001, 0.000001, 0.0000001]> : tensor<8xf16>
  %wq = llm.constant dense<0.1> : tensor<32x32xf16>
  %wkv = llm.constant dense<0.1> : tensor<32x32xf16>
  %head = llm.constant dense<0.2> : tensor<32x64xf16>
  %e = llm.embedding %table, %ids : (tensor<64x32xf16>, tensor<?x?xi64>) -> tensor<?x?x32xf16>
  %q = llm.linear %e, %wq : (tensor<?x?x32xf16>, tensor<32x32xf16>) -> tensor<?x?x32xf16>
  %k = llm.split_heads %q {num_heads = 2 : i64} : (tensor<?x?x32xf16>) -> tensor<?x2x?x16xf16>
  %v = llm.split_heads %e {num_heads = 2 : i64} : (tensor<?x?x32xf16>) -> tensor<?x2x?x16xf16>
  %qr = llm.rope %k, %positions, %inv_freq : (tensor<?x2x?x16xf16>, tensor<?x?xi64>, tensor<8xf16>) -> tensor<?x2x?x16xf16>
  %kr = llm.rope %v, %positions, %inv_freq : (tensor<?x2x?x16xf16>, tensor<?x?xi64>, tensor<8xf16>) -> tensor<?x2x?x16xf16>
  %kc = llm.kv_concat %past_k, %kr : (tensor<?x2x?x16xf16>, tensor<?x2x?x16xf16>) -> tensor<?x2x?x16xf16>
  %vc = llm.kv_concat %past_v, %v : (tensor<?x2x?x16xf16>, tensor<?x2x?x16xf16>) -> tensor<?x2x?x16xf16>
  %a = llm.attention %qr, %kc, %vc, %mask {causal, scale = 0.25 : f32} : (tensor<?x2x?x16xf16>, tensor<?x2x?x16xf16>, tensor<?x2x?x16xf16>, tensor<?x?xi64>) -> tensor<?x2x?x16xf16>
  %m = llm.merge_heads %a : (tensor<?x2x?x16xf16>) -> tensor<?x?x32xf16>
  %l = llm.logits %m, %head : (tensor<?x?x32xf16>, tensor<32x64xf16>) -> tensor<?x?x64xf16>
  return %l, %kc, %vc : tensor<?x?x64xf16>, tensor<?x2x?x16xf16>, tensor<?x2x?x16xf16>
}
