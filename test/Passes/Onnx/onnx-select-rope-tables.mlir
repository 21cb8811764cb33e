// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables,onnx-shape-inference))' | FileCheck %s --check-prefixes=CHECK,DEFAULT
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables{max-positions=4},onnx-shape-inference))' | FileCheck %s --check-prefixes=CHECK,SHORT
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables{max-positions=8},onnx-shape-inference))' | FileCheck %s --check-prefixes=CHECK,LONG
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables{traced-switch=6}))' | FileCheck %s --check-prefix=TRACED
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables{traced-switch=6 max-positions=8 traced-short-factors=1,2 long-factors=2,8}))' | FileCheck %s --check-prefix=TRACED-LONG
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables))' -debug-only=onnx-select-rope-tables -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables{traced-switch=6 max-positions=8 traced-short-factors=1,2 long-factors=2,8}))' -debug-only=onnx-select-rope-tables -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY-TRACED
// RUN: llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables{traced-switch=6 max-positions=8}))' -debug-only=onnx-select-rope-tables -o /dev/null 2>&1 | FileCheck %s --check-prefix=WHY-NO-FACTORS
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables{max-positions=-1}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// RUN: not llmc-opt %s -split-input-file --pass-pipeline='builtin.module(func.func(onnx-select-rope-tables{traced-switch=-1}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=NEGATIVE-TRACED
// NEGATIVE: max-positions must not be negative
// NEGATIVE-TRACED: traced-switch must not be negative

// The genai builder's LongRoPE: short tables (ones, 4 rows) up to a total length of 4, long
// ones (twos, 8 rows) past it. Unset or at most 4, max-positions keeps the short tables;
// past 4, the long ones.
// CHECK-LABEL: func.func @longrope_switch
//  DEFAULT-SAME:   llmc.max_positions = 4 : i64
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

// Short tables longer than the switch's length: without max-positions the function is
// bounded by the switch (4), not by the 6 rows the short tables hold.
// CHECK-LABEL: func.func @short_tables_past_the_switch
//  DEFAULT-SAME:   llmc.max_positions = 4 : i64
//    SHORT-NOT:    llmc.max_positions
//     LONG-NOT:    llmc.max_positions
//     DEFAULT:   onnx.RotaryEmbedding {{.*}} tensor<6x2xf32>, tensor<6x2xf32>
//       SHORT:   onnx.RotaryEmbedding {{.*}} tensor<6x2xf32>, tensor<6x2xf32>
//        LONG:   onnx.RotaryEmbedding {{.*}} tensor<8x2xf32>, tensor<8x2xf32>
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
// WHY: [onnx-select-rope-tables] {{.*}}: left: its left side is neither dim 1 of the graph input attention_mask nor the largest position_ids plus one
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

// -----

// torch.onnx's dynamo export of transformers' LongRoPE: inverse frequencies with the
// short factors (ones) up to a longest sequence (largest position plus one) of 4, with
// the long ones (twos) past it, times the positions under cos and sin.
// CHECK-LABEL: func.func @longrope_frequencies
//  DEFAULT-SAME:   llmc.max_positions = 4 : i64
//   TRACED-LABEL: func.func @longrope_frequencies
//    TRACED-SAME:   llmc.max_positions = 4 : i64
//    SHORT-NOT:    llmc.max_positions
//     LONG-NOT:    llmc.max_positions
//   CHECK-NOT:   onnx.Where
//     DEFAULT:   %[[FREQ:.*]] = onnx.Constant dense<1.000000e+00> : tensor<2xf32>
//       SHORT:   %[[FREQ:.*]] = onnx.Constant dense<1.000000e+00> : tensor<2xf32>
//        LONG:   %[[FREQ:.*]] = onnx.Constant dense<2.000000e+00> : tensor<2xf32>
//       CHECK:   onnx.Mul %{{.*}}, %[[FREQ]]
func.func @longrope_frequencies(%positions: tensor<1x?xi64> {onnx.name = "position_ids"}) -> (tensor<*xf32>, tensor<*xf32>) {
  %none = onnx.None
  %largest = onnx.ReduceMax %positions, %none {keepdims = 0 : i64} : (tensor<1x?xi64>, none) -> tensor<i64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %longest = onnx.Add %largest, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %original = onnx.Constant dense<4> : tensor<i64>
  %long = onnx.Greater %longest, %original : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %long_freq = onnx.Constant dense<2.0> : tensor<2xf32>
  %short_freq = onnx.Constant dense<1.0> : tensor<2xf32>
  %freq = onnx.Where %long, %long_freq, %short_freq : (tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %axis = onnx.Constant dense<2> : tensor<1xi64>
  %column = onnx.Unsqueeze %positions, %axis : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1x?x1xi64>
  %p = onnx.Cast %column {to = 1 : i64} : (tensor<1x?x1xi64>) -> tensor<1x?x1xf32>
  %angles = onnx.Mul %p, %freq : (tensor<1x?x1xf32>, tensor<2xf32>) -> tensor<1x?x2xf32>
  %both = onnx.Concat %angles, %angles {axis = -1 : i64} : (tensor<1x?x2xf32>, tensor<1x?x2xf32>) -> tensor<1x?x4xf32>
  %cos = onnx.Cos %both : (tensor<1x?x4xf32>) -> tensor<*xf32>
  %sin = onnx.Sin %both : (tensor<1x?x4xf32>) -> tensor<*xf32>
  return %cos, %sin : tensor<*xf32>, tensor<*xf32>
}

// -----

// The largest of another input is not the sequence's length: left alone.
// CHECK-LABEL: func.func @largest_of_another_input
//   CHECK-NOT:   llmc.max_positions
//       CHECK:   onnx.Where
// WHY: [onnx-select-rope-tables] {{.*}}: left: its left side is neither dim 1 of the graph input attention_mask nor the largest position_ids plus one
func.func @largest_of_another_input(%positions: tensor<1x?xi64> {onnx.name = "position_ids"},
                                    %ids: tensor<1x?xi64> {onnx.name = "input_ids"}) -> tensor<*xf32> {
  %none = onnx.None
  %largest = onnx.ReduceMax %ids, %none {keepdims = 0 : i64} : (tensor<1x?xi64>, none) -> tensor<i64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %longest = onnx.Add %one, %largest : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %original = onnx.Constant dense<4> : tensor<i64>
  %long = onnx.Greater %longest, %original : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %long_freq = onnx.Constant dense<2.0> : tensor<2xf32>
  %short_freq = onnx.Constant dense<1.0> : tensor<2xf32>
  %freq = onnx.Where %long, %long_freq, %short_freq : (tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %axis = onnx.Constant dense<2> : tensor<1xi64>
  %column = onnx.Unsqueeze %positions, %axis : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1x?x1xi64>
  %p = onnx.Cast %column {to = 1 : i64} : (tensor<1x?x1xi64>) -> tensor<1x?x1xf32>
  %angles = onnx.Mul %p, %freq : (tensor<1x?x1xf32>, tensor<2xf32>) -> tensor<1x?x2xf32>
  %cos = onnx.Cos %angles : (tensor<1x?x2xf32>) -> tensor<*xf32>
  return %cos : tensor<*xf32>
}

// -----

// Frequencies that reach more than cos and sin: one choice for every length would compute
// something else, so the switch is left alone.
// CHECK-LABEL: func.func @frequencies_used_elsewhere
//   CHECK-NOT:   llmc.max_positions
//       CHECK:   onnx.Where
// WHY: [onnx-select-rope-tables] {{.*}}: left: a Where result is used other than as rotary frequencies under cos and sin
func.func @frequencies_used_elsewhere(%positions: tensor<1x?xi64> {onnx.name = "position_ids"}) -> (tensor<*xf32>, tensor<*xf32>) {
  %none = onnx.None
  %largest = onnx.ReduceMax %positions, %none {keepdims = 0 : i64} : (tensor<1x?xi64>, none) -> tensor<i64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %longest = onnx.Add %largest, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %original = onnx.Constant dense<4> : tensor<i64>
  %long = onnx.Greater %longest, %original : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %long_freq = onnx.Constant dense<2.0> : tensor<2xf32>
  %short_freq = onnx.Constant dense<1.0> : tensor<2xf32>
  %freq = onnx.Where %long, %long_freq, %short_freq : (tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %axis = onnx.Constant dense<2> : tensor<1xi64>
  %column = onnx.Unsqueeze %positions, %axis : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1x?x1xi64>
  %p = onnx.Cast %column {to = 1 : i64} : (tensor<1x?x1xi64>) -> tensor<1x?x1xf32>
  %angles = onnx.Mul %p, %freq : (tensor<1x?x1xf32>, tensor<2xf32>) -> tensor<1x?x2xf32>
  %cos = onnx.Cos %angles : (tensor<1x?x2xf32>) -> tensor<*xf32>
  %scaled = onnx.Neg %angles : (tensor<1x?x2xf32>) -> tensor<*xf32>
  return %cos, %scaled : tensor<*xf32>, tensor<*xf32>
}

// -----

// A Where between computed values: left alone.
// CHECK-LABEL: func.func @computed_frequencies
//       CHECK:   onnx.Where
// WHY: [onnx-select-rope-tables] {{.*}}: left: a Where chooses between values that are not constants
func.func @computed_frequencies(%positions: tensor<1x?xi64> {onnx.name = "position_ids"},
                                %base: tensor<2xf32>) -> tensor<*xf32> {
  %none = onnx.None
  %largest = onnx.ReduceMax %positions, %none {keepdims = 0 : i64} : (tensor<1x?xi64>, none) -> tensor<i64>
  %one = onnx.Constant dense<1> : tensor<i64>
  %longest = onnx.Add %largest, %one : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %original = onnx.Constant dense<4> : tensor<i64>
  %long = onnx.Greater %longest, %original : (tensor<i64>, tensor<i64>) -> tensor<i1>
  %short_freq = onnx.Constant dense<1.0> : tensor<2xf32>
  %freq = onnx.Where %long, %base, %short_freq : (tensor<i1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %axis = onnx.Constant dense<2> : tensor<1xi64>
  %column = onnx.Unsqueeze %positions, %axis : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1x?x1xi64>
  %p = onnx.Cast %column {to = 1 : i64} : (tensor<1x?x1xi64>) -> tensor<1x?x1xf32>
  %angles = onnx.Mul %p, %freq : (tensor<1x?x1xf32>, tensor<2xf32>) -> tensor<1x?x2xf32>
  %cos = onnx.Cos %angles : (tensor<1x?x2xf32>) -> tensor<*xf32>
  return %cos : tensor<*xf32>
}

// -----

// optimum's LongRoPE export traced its short factors: no switch in the graph. Given the
// config's switch length (traced-switch), the function serves at most that many positions.
// Its constant times the short factors (1, 2) is 1, 2: not base^(-2i/d), so not inverse
// frequencies with those factors, and the long factors find nothing to rescale.
// CHECK-LABEL: func.func @traced_short_factors
//   CHECK-NOT:   llmc.max_positions
//   TRACED-LABEL: func.func @traced_short_factors
//    TRACED-SAME:   llmc.max_positions = 6 : i64
//   TRACED-LONG-LABEL: func.func @traced_short_factors
//    TRACED-LONG-SAME:   llmc.max_positions = 6 : i64
//         TRACED-LONG:   onnx.Constant dense<1.000000e+00> : tensor<2xf32>
// WHY-TRACED: [onnx-select-rope-tables] traced_short_factors: the traced short factors kept: no constant is inverse frequencies with the short factors, used only under Cos and Sin
// WHY-NO-FACTORS: [onnx-select-rope-tables] traced_short_factors: the traced short factors kept: no long factors of the short ones' length were given
func.func @traced_short_factors(%positions: tensor<1x?xi64> {onnx.name = "position_ids"}) -> tensor<*xf32> {
  %freq = onnx.Constant dense<1.0> : tensor<2xf32>
  %axis = onnx.Constant dense<2> : tensor<1xi64>
  %column = onnx.Unsqueeze %positions, %axis : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1x?x1xi64>
  %p = onnx.Cast %column {to = 1 : i64} : (tensor<1x?x1xi64>) -> tensor<1x?x1xf32>
  %angles = onnx.Mul %p, %freq : (tensor<1x?x1xf32>, tensor<2xf32>) -> tensor<1x?x2xf32>
  %cos = onnx.Cos %angles : (tensor<1x?x2xf32>) -> tensor<*xf32>
  return %cos : tensor<*xf32>
}

// -----

// optimum's traced form: inverse frequencies [1, 0.01] (base^(-2i/d) with d = 4) divided by
// the short factors (1, 2), expanded, cast, multiplied by the positions, transposed and
// duplicated under Cos and Sin. Past the switch, given the factors, they are rescaled to
// the long factors (2, 8): [0.5, 0.00125], and the function is not bounded.
// CHECK-LABEL: func.func @traced_inverse_frequencies
//   TRACED-LABEL: func.func @traced_inverse_frequencies
//    TRACED-SAME:   llmc.max_positions = 6 : i64
//         TRACED:   onnx.Constant dense<{{\[\[\[}}1.000000e+00], [5.000000e-03]]]> : tensor<1x2x1xf32>
//   TRACED-LONG-LABEL: func.func @traced_inverse_frequencies
//   TRACED-LONG-NOT:   llmc.max_positions
//         TRACED-LONG:   onnx.Constant dense<{{\[\[\[}}5.000000e-01], [1.250000e-03]]]> : tensor<1x2x1xf32>
func.func @traced_inverse_frequencies(%positions: tensor<1x?xi64> {onnx.name = "position_ids"}) -> (tensor<*xf32>, tensor<*xf32>) {
  %freq = onnx.Constant dense<[[[1.0], [0.005]]]> : tensor<1x2x1xf32>
  %shape = onnx.Constant dense<[1, 2, 1]> : tensor<3xi64>
  %expanded = onnx.Expand %freq, %shape : (tensor<1x2x1xf32>, tensor<3xi64>) -> tensor<1x2x1xf32>
  %f = onnx.Cast %expanded {to = 1 : i64} : (tensor<1x2x1xf32>) -> tensor<1x2x1xf32>
  %axis = onnx.Constant dense<1> : tensor<1xi64>
  %row = onnx.Unsqueeze %positions, %axis : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1x1x?xi64>
  %p = onnx.Cast %row {to = 1 : i64} : (tensor<1x1x?xi64>) -> tensor<1x1x?xf32>
  %product = onnx.MatMul %f, %p : (tensor<1x2x1xf32>, tensor<1x1x?xf32>) -> tensor<1x2x?xf32>
  %angles = onnx.Transpose %product {perm = array<i64: 0, 2, 1>} : (tensor<1x2x?xf32>) -> tensor<1x?x2xf32>
  %both = onnx.Concat %angles, %angles {axis = -1 : i64} : (tensor<1x?x2xf32>, tensor<1x?x2xf32>) -> tensor<1x?x4xf32>
  %cos = onnx.Cos %both : (tensor<1x?x4xf32>) -> tensor<*xf32>
  %sin = onnx.Sin %both : (tensor<1x?x4xf32>) -> tensor<*xf32>
  return %cos, %sin : tensor<*xf32>, tensor<*xf32>
}

// -----

// The same frequencies also used other than under Cos and Sin: rescaling them would change
// that use too, so the short factors are kept and the function bounded.
// CHECK-LABEL: func.func @traced_frequencies_used_elsewhere
//   TRACED-LONG-LABEL: func.func @traced_frequencies_used_elsewhere
//    TRACED-LONG-SAME:   llmc.max_positions = 6 : i64
//         TRACED-LONG:   onnx.Constant dense<[1.000000e+00, 5.000000e-03]> : tensor<2xf32>
// WHY-TRACED: [onnx-select-rope-tables] traced_frequencies_used_elsewhere: the traced short factors kept: no constant is inverse frequencies with the short factors, used only under Cos and Sin
func.func @traced_frequencies_used_elsewhere(%positions: tensor<1x?xi64> {onnx.name = "position_ids"}) -> (tensor<*xf32>, tensor<*xf32>) {
  %freq = onnx.Constant dense<[1.0, 0.005]> : tensor<2xf32>
  %axis = onnx.Constant dense<2> : tensor<1xi64>
  %column = onnx.Unsqueeze %positions, %axis : (tensor<1x?xi64>, tensor<1xi64>) -> tensor<1x?x1xi64>
  %p = onnx.Cast %column {to = 1 : i64} : (tensor<1x?x1xi64>) -> tensor<1x?x1xf32>
  %angles = onnx.Mul %p, %freq : (tensor<1x?x1xf32>, tensor<2xf32>) -> tensor<1x?x2xf32>
  %cos = onnx.Cos %angles : (tensor<1x?x2xf32>) -> tensor<*xf32>
  %other = onnx.Neg %freq : (tensor<2xf32>) -> tensor<*xf32>
  return %cos, %other : tensor<*xf32>, tensor<*xf32>
}
