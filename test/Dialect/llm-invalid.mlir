// RUN: llmc-opt %s -split-input-file -verify-diagnostics

func.func @attention_heads(%q: tensor<1x6x3x16xf32>, %kv: tensor<1x4x3x16xf32>) -> tensor<1x6x3x16xf32> {
  %none = onnx.None
  // expected-error @+1 {{query heads (6) are not a multiple of KV heads (4)}}
  %a = llm.attention %q, %kv, %kv, %none {scale = 0.25 : f32} : (tensor<1x6x3x16xf32>, tensor<1x4x3x16xf32>, tensor<1x4x3x16xf32>, none) -> tensor<1x6x3x16xf32>
  return %a : tensor<1x6x3x16xf32>
}

// -----

func.func @attention_head_size(%q: tensor<1x4x3x16xf32>, %kv: tensor<1x2x3x8xf32>) -> tensor<1x4x3x8xf32> {
  %none = onnx.None
  // expected-error @+1 {{query and key head sizes differ}}
  %a = llm.attention %q, %kv, %kv, %none {scale = 0.25 : f32} : (tensor<1x4x3x16xf32>, tensor<1x2x3x8xf32>, tensor<1x2x3x8xf32>, none) -> tensor<1x4x3x8xf32>
  return %a : tensor<1x4x3x8xf32>
}

// -----

func.func @split_heads_size(%x: tensor<1x3x60xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{hidden size 60 is not 4 heads of 16}}
  %h = llm.split_heads %x {num_heads = 4 : i64} : (tensor<1x3x60xf32>) -> tensor<1x4x3x16xf32>
  return %h : tensor<1x4x3x16xf32>
}

// -----

func.func @rope_width(%x: tensor<1x4x3x16xf32>, %pos: tensor<1x3xi64>, %inv: tensor<16xf32>) -> tensor<1x4x3x16xf32> {
  // expected-error @+1 {{rotates 32 features of a head of 16}}
  %r = llm.rope %x, %pos, %inv : (tensor<1x4x3x16xf32>, tensor<1x3xi64>, tensor<16xf32>) -> tensor<1x4x3x16xf32>
  return %r : tensor<1x4x3x16xf32>
}

// -----

func.func @kv_concat_heads(%past: tensor<1x2x5x16xf32>, %new: tensor<1x4x1x16xf32>) -> tensor<1x2x6x16xf32> {
  // expected-error @+1 {{past and current differ in dim 1}}
  %c = llm.kv_concat %past, %new : (tensor<1x2x5x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x2x6x16xf32>
  return %c : tensor<1x2x6x16xf32>
}

// -----

func.func @linear_weight(%x: tensor<1x3x64xf32>, %w: tensor<32x16xf32>) -> tensor<1x3x16xf32> {
  %none = onnx.None
  // expected-error @+1 {{weight's input dim differs from the input's last dim}}
  %y = llm.linear %x, %w, %none : (tensor<1x3x64xf32>, tensor<32x16xf32>, none) -> tensor<1x3x16xf32>
  return %y : tensor<1x3x16xf32>
}

// -----

func.func @rms_norm_weight(%x: tensor<1x3x64xf32>, %w: tensor<32xf32>) -> tensor<1x3x64xf32> {
  // expected-error @+1 {{weight length differs from the normalised dim}}
  %y = llm.rms_norm %x, %w {epsilon = 1.0e-5 : f32} : (tensor<1x3x64xf32>, tensor<32xf32>) -> tensor<1x3x64xf32>
  return %y : tensor<1x3x64xf32>
}

// -----

func.func @repeat_kv(%x: tensor<1x2x3x16xf32>) -> tensor<1x6x3x16xf32> {
  // expected-error @+1 {{result heads are not input heads * repeats}}
  %y = llm.repeat_kv %x {repeats = 4 : i64} : (tensor<1x2x3x16xf32>) -> tensor<1x6x3x16xf32>
  return %y : tensor<1x6x3x16xf32>
}
