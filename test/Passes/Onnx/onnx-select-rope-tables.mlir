// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables,onnx-shape-inference))' | FileCheck %s --check-prefixes=CHECK,DEFAULT
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables{max-positions=4},onnx-shape-inference))' | FileCheck %s --check-prefixes=CHECK,SHORT
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables{max-positions=8},onnx-shape-inference))' | FileCheck %s --check-prefixes=CHECK,LONG
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables))' -debug-only=onnx-select-rope-tables -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables{max-positions=-1}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: max-positions must not be negative

// The genai builder's LongRoPE: short tables (ones, 4 rows) up to a total length of 4, long
// ones (twos, 8 rows) past it. Unset or at most 4, max-positions keeps the short tables;
// past 4, the long ones.
// CHECK-LABEL: func.func @longrope_switch
//   CHECK-NOT:   onnx.If
//     DEFAULT:   onnx.com.microsoft.RotaryEmbedding {{.*}} tensor<4x2xf32>, tensor<4x2xf32>
//       SHORT:   onnx.com.microsoft.RotaryEmbedding {{.*}} tensor<4x2xf32>, tensor<4x2xf32>
//        LONG:   onnx.com.microsoft.RotaryEmbedding {{.*}} tensor<8x2xf32>, tensor<8x2xf32>
func.func @longrope_switch(%x: tensor<1x?x4xf32>, %positions: tensor<1x?xi64>,
                           %mask: tensor<1x?xi64> {onnx.name = "attention_mask"}) -> tensor<*xf32> {
  %shape = onnx.Shape %mask : (tensor<1x?xi64>) -> tensor<2xi64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %total = onnx.Gather %shape, %one : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %original = onnx.Constant dense<4> : tensor<i64>
  %long = onnx.Greater %total, %original : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %tables:2 = onnx.If %long : tensor<i1> -> tensor<?x2xf32>, tensor<?x2xf32> {
    %cos = onnx.Constant dense<2.0> : tensor<8x2xf32>
    %sin = onnx.Constant dense<2.5> : tensor<8x2xf32>
    onnx.Yield %cos, %sin : tensor<8x2xf32>, tensor<8x2xf32>
  } else {
    %cos = onnx.Constant dense<1.0> : tensor<4x2xf32>
    %sin = onnx.Constant dense<1.5> : tensor<4x2xf32>
    onnx.Yield %cos, %sin : tensor<4x2xf32>, tensor<4x2xf32>
  }
  %y = onnx.com.microsoft.RotaryEmbedding %x, %positions, %tables#0, %tables#1 : (tensor<1x?x4xf32>, tensor<1x?xi64>, tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// Short tables longer than the switch's length would let an unbounded artifact serve
// positions past it with them: without max-positions the switch stays (raising refuses it).
// CHECK-LABEL: func.func @short_tables_past_the_switch
//     DEFAULT:   onnx.If
//       SHORT:   onnx.RotaryEmbedding {{.*}} tensor<6x2xf32>, tensor<6x2xf32>
//        LONG:   onnx.RotaryEmbedding {{.*}} tensor<8x2xf32>, tensor<8x2xf32>
// WHY: [onnx-select-rope-tables] {{.*}}: left: without max-positions the short tables must hold at most 4 rows, to bound the positions served
func.func @short_tables_past_the_switch(%x: tensor<1x?x4xf32>, %positions: tensor<1x?xi64>,
                                        %mask: tensor<1x?xi64> {onnx.name = "attention_mask"}) -> tensor<*xf32> {
  %shape = onnx.Shape %mask : (tensor<1x?xi64>) -> tensor<2xi64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %total = onnx.Gather %shape, %one : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %original = onnx.Constant dense<4> : tensor<i64>
  %long = onnx.Greater %total, %original : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %tables:2 = onnx.If %long : tensor<i1> -> tensor<?x2xf32>, tensor<?x2xf32> {
    %cos = onnx.Constant dense<2.0> : tensor<8x2xf32>
    onnx.Yield %cos, %cos : tensor<8x2xf32>, tensor<8x2xf32>
  } else {
    %cos = onnx.Constant dense<1.0> : tensor<6x2xf32>
    onnx.Yield %cos, %cos : tensor<6x2xf32>, tensor<6x2xf32>
  }
  %y = onnx.RotaryEmbedding %x, %tables#0, %tables#1, %positions : (tensor<1x?x4xf32>, tensor<?x2xf32>, tensor<?x2xf32>, tensor<1x?xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// input_ids' dim 1 is the step's new tokens, not the sequence's length: left alone.
// CHECK-LABEL: func.func @new_tokens_are_not_the_length
//       CHECK:   onnx.If
// WHY: [onnx-select-rope-tables] {{.*}}: left: its left side is not dim 1 of the graph input attention_mask
func.func @new_tokens_are_not_the_length(%x: tensor<1x?x4xf32>, %positions: tensor<1x?xi64>,
                                         %ids: tensor<1x?xi64> {onnx.name = "input_ids"}) -> tensor<*xf32> {
  %shape = onnx.Shape %ids : (tensor<1x?xi64>) -> tensor<2xi64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %total = onnx.Gather %shape, %one : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %original = onnx.Constant dense<4> : tensor<i64>
  %long = onnx.Greater %total, %original : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %tables:2 = onnx.If %long : tensor<i1> -> tensor<?x2xf32>, tensor<?x2xf32> {
    %cos = onnx.Constant dense<2.0> : tensor<8x2xf32>
    onnx.Yield %cos, %cos : tensor<8x2xf32>, tensor<8x2xf32>
  } else {
    %cos = onnx.Constant dense<1.0> : tensor<4x2xf32>
    onnx.Yield %cos, %cos : tensor<4x2xf32>, tensor<4x2xf32>
  }
  %y = onnx.com.microsoft.RotaryEmbedding %x, %positions, %tables#0, %tables#1 : (tensor<1x?x4xf32>, tensor<1x?xi64>, tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// A switched value used other than as a rotary table: taking one branch for every length
// would compute something else, so it is left alone.
// CHECK-LABEL: func.func @switch_of_other_values
//       CHECK:   onnx.If
// WHY: [onnx-select-rope-tables] {{.*}}: left: an If result is used other than as a rotary cos/sin table
func.func @switch_of_other_values(%mask: tensor<1x?xi64> {onnx.name = "attention_mask"}) -> tensor<*xf32> {
  %shape = onnx.Shape %mask : (tensor<1x?xi64>) -> tensor<2xi64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %total = onnx.Gather %shape, %one : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %original = onnx.Constant dense<4> : tensor<i64>
  %long = onnx.Greater %total, %original : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %value = onnx.If %long : tensor<i1> -> tensor<?x2xf32> {
    %a = onnx.Constant dense<2.0> : tensor<8x2xf32>
    onnx.Yield %a : tensor<8x2xf32>
  } else {
    %b = onnx.Constant dense<1.0> : tensor<4x2xf32>
    onnx.Yield %b : tensor<4x2xf32>
  }
  %y = onnx.Neg %value : (tensor<?x2xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// A branch that computes its tables: left alone.
// CHECK-LABEL: func.func @computed_tables
//       CHECK:   onnx.If
// WHY: [onnx-select-rope-tables] {{.*}}: left: an If branch computes more than constants
func.func @computed_tables(%x: tensor<1x?x4xf32>, %positions: tensor<1x?xi64>,
                           %mask: tensor<1x?xi64> {onnx.name = "attention_mask"},
                           %table: tensor<8x2xf32>) -> tensor<*xf32> {
  %shape = onnx.Shape %mask : (tensor<1x?xi64>) -> tensor<2xi64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %total = onnx.Gather %shape, %one : (tensor<2xi64>, tensor<i64>) -> tensor<i64>
  %original = onnx.Constant dense<4> : tensor<i64>
  %long = onnx.Greater %total, %original : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %tables:2 = onnx.If %long : tensor<i1> -> tensor<?x2xf32>, tensor<?x2xf32> {
    %cos = onnx.Neg %table : (tensor<8x2xf32>) -> tensor<8x2xf32>
    onnx.Yield %cos, %cos : tensor<8x2xf32>, tensor<8x2xf32>
  } else {
    %cos = onnx.Constant dense<1.0> : tensor<4x2xf32>
    onnx.Yield %cos, %cos : tensor<4x2xf32>, tensor<4x2xf32>
  }
  %y = onnx.com.microsoft.RotaryEmbedding %x, %positions, %tables#0, %tables#1 : (tensor<1x?x4xf32>, tensor<1x?xi64>, tensor<?x2xf32>, tensor<?x2xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}
