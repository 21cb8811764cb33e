//===- OnnxOps.td - ONNX operators that LLM exports use ----*- tablegen -*-===//
//
// Attributes keep ONNX's names. ONNX attribute kinds map to MLIR as:
// INT -> Onnx_IntAttr, FLOAT -> F32Attr, STRING -> StrAttr, INTS -> DenseI64ArrayAttr,
// FLOATS -> DenseF32ArrayAttr, TENSOR -> ElementsAttr, GRAPH -> a region.
//
//===----------------------------------------------------------------------===//

#ifndef LLMC_DIALECT_ONNX_OPS
#define LLMC_DIALECT_ONNX_OPS

include "OnnxBase.td"

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

def Onnx_NoneOp : Op<Onnx_Dialect, "None", [Pure, ConstantLike]> {
  let summary = "the value of an omitted optional input";
  let results = (outs Onnx_NoneType:$none);
  let assemblyFormat = "attr-dict";
  let hasFolder = 1;
}

def Onnx_ConstantOp : Onnx_PureOp<"Constant", [ConstantLike,
    AllTypesMatch<["value", "output"]>]> {
  let summary = "a constant tensor (ONNX Constant nodes and initializers)";
  let description = [{
    Holds its value as an `ElementsAttr`: a `dense` attribute for small
    tensors, and a `dense_resource` blob for weights. A blob keeps ONNX's raw
    little-endian layout; int4/uint4 blobs pack two elements per byte, low
    nibble first, as ONNX does.
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Onnx_Tensor:$output);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

def Onnx_NegOp : Onnx_UnaryOp<"Neg"> { let hasFolder = 1; }
def Onnx_SqrtOp : Onnx_UnaryOp<"Sqrt"> { let hasFolder = 1; }
def Onnx_ReciprocalOp : Onnx_UnaryOp<"Reciprocal">;
def Onnx_ExpOp : Onnx_UnaryOp<"Exp">;
def Onnx_LogOp : Onnx_UnaryOp<"Log">;
def Onnx_AbsOp : Onnx_UnaryOp<"Abs">;
def Onnx_FloorOp : Onnx_UnaryOp<"Floor">;
def Onnx_CeilOp : Onnx_UnaryOp<"Ceil">;
def Onnx_CosOp : Onnx_UnaryOp<"Cos">;
def Onnx_SinOp : Onnx_UnaryOp<"Sin">;
def Onnx_SigmoidOp : Onnx_UnaryOp<"Sigmoid">;
def Onnx_TanhOp : Onnx_UnaryOp<"Tanh">;
def Onnx_ErfOp : Onnx_UnaryOp<"Erf">;
def Onnx_ReluOp : Onnx_UnaryOp<"Relu">;
def Onnx_SoftplusOp : Onnx_UnaryOp<"Softplus">;
def Onnx_NotOp : Onnx_UnaryOp<"Not"> { let hasFolder = 1; }
def Onnx_IsNaNOp : Onnx_UnaryOp<"IsNaN">;
def Onnx_IdentityOp : Onnx_UnaryOp<"Identity"> { let hasFolder = 1; }

def Onnx_IsInfOp : Onnx_UnaryOp<"IsInf"> {
  let arguments = (ins Onnx_Tensor:$X,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$detect_negative,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$detect_positive);
}

def Onnx_GeluOp : Onnx_UnaryOp<"Gelu"> {
  let arguments = (ins Onnx_Tensor:$X,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$approximate);
}

def Onnx_AddOp : Onnx_BinaryOp<"Add"> { let hasFolder = 1; }
def Onnx_SubOp : Onnx_BinaryOp<"Sub"> { let hasFolder = 1; }
def Onnx_MulOp : Onnx_BinaryOp<"Mul"> { let hasFolder = 1; }
def Onnx_DivOp : Onnx_BinaryOp<"Div"> { let hasFolder = 1; }
def Onnx_PowOp : Onnx_BinaryOp<"Pow">;
def Onnx_ModOp : Onnx_BinaryOp<"Mod"> {
  let arguments = (ins Onnx_Tensor:$A, Onnx_Tensor:$B,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$fmod);
  let hasFolder = 1;
}
def Onnx_EqualOp : Onnx_BinaryOp<"Equal"> { let hasFolder = 1; }
def Onnx_LessOp : Onnx_BinaryOp<"Less">;
def Onnx_LessOrEqualOp : Onnx_BinaryOp<"LessOrEqual">;
def Onnx_GreaterOp : Onnx_BinaryOp<"Greater">;
def Onnx_GreaterOrEqualOp : Onnx_BinaryOp<"GreaterOrEqual">;
def Onnx_AndOp : Onnx_BinaryOp<"And"> { let hasFolder = 1; }
def Onnx_OrOp : Onnx_BinaryOp<"Or"> { let hasFolder = 1; }
def Onnx_XorOp : Onnx_BinaryOp<"Xor">;
def Onnx_MaxOp : Onnx_VariadicOp<"Max">;
def Onnx_MinOp : Onnx_VariadicOp<"Min">;
def Onnx_SumOp : Onnx_VariadicOp<"Sum">;

def Onnx_ClipOp : Onnx_PureOp<"Clip"> {
  let summary = "input limited to [min, max]; an omitted bound does not limit";
  let description = [{
    min and max are scalars (rank 0). As numpy.clip: max(input, min), then
    min(that, max), so that max wins where min > max; a NaN stays NaN.
  }];
  let arguments = (ins Onnx_Tensor:$input, Onnx_OptTensor:$min, Onnx_OptTensor:$max);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_WhereOp : Onnx_PureOp<"Where"> {
  let summary = "select X where condition else Y, broadcasting";
  let arguments = (ins Onnx_Tensor:$condition, Onnx_Tensor:$X, Onnx_Tensor:$Y);
  let results = (outs Onnx_Tensor:$output);
  let hasFolder = 1;
}

def Onnx_CastOp : Onnx_PureOp<"Cast"> {
  let summary = "convert to the element type `to` (an ONNX TensorProto.DataType)";
  let arguments = (ins Onnx_Tensor:$input, Onnx_IntAttr:$to,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$saturate);
  let results = (outs Onnx_Tensor:$output);
  let hasFolder = 1;
}

def Onnx_CastLikeOp : Onnx_PureOp<"CastLike"> {
  let summary = "convert to the element type of target_type";
  let arguments = (ins Onnx_Tensor:$input, Onnx_Tensor:$target_type,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$saturate);
  let results = (outs Onnx_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Reductions and normalisation
//===----------------------------------------------------------------------===//

def Onnx_ReduceMeanOp : Onnx_ReduceOp<"ReduceMean">;
def Onnx_ReduceSumOp : Onnx_ReduceOp<"ReduceSum">;
def Onnx_ReduceMaxOp : Onnx_ReduceOp<"ReduceMax">;
def Onnx_ReduceMinOp : Onnx_ReduceOp<"ReduceMin">;
def Onnx_ReduceProdOp : Onnx_ReduceOp<"ReduceProd">;
// The L2 norm along the axes (sentence-transformers' Normalize module).
def Onnx_ReduceL2Op : Onnx_ReduceOp<"ReduceL2">;

def Onnx_ArgMaxOp : Onnx_PureOp<"ArgMax"> {
  let summary = "indices of the maxima along an axis";
  let arguments = (ins Onnx_Tensor:$data, DefaultValuedAttr<Onnx_IntAttr, "0">:$axis,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$keepdims,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$select_last_index);
  let results = (outs Onnx_Tensor:$reduced);
}

def Onnx_CumSumOp : Onnx_PureOp<"CumSum"> {
  let summary = "cumulative sum along the axis given as a scalar operand";
  let arguments = (ins Onnx_Tensor:$x, Onnx_Tensor:$axis,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$exclusive,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$reverse);
  let results = (outs Onnx_Tensor:$y);
}

def Onnx_SoftmaxOp : Onnx_PureOp<"Softmax"> {
  let summary = "softmax along one axis";
  let arguments = (ins Onnx_Tensor:$input, DefaultValuedAttr<Onnx_IntAttr, "-1">:$axis);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_LayerNormalizationOp : Onnx_PureOp<"LayerNormalization"> {
  let summary = "layer normalisation over the axes from `axis` on";
  let arguments = (ins Onnx_Tensor:$X, Onnx_Tensor:$Scale, Onnx_OptTensor:$B,
                   DefaultValuedAttr<Onnx_IntAttr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$stash_type);
  let results = (outs Onnx_Tensor:$Y, Onnx_Tensor:$Mean, Onnx_Tensor:$InvStdDev);
}

def Onnx_RMSNormalizationOp : Onnx_PureOp<"RMSNormalization"> {
  let summary = "RMS normalisation (opset 23)";
  let arguments = (ins Onnx_Tensor:$X, Onnx_Tensor:$scale,
                   DefaultValuedAttr<Onnx_IntAttr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$stash_type);
  let results = (outs Onnx_Tensor:$Y);
}

def Onnx_SimplifiedLayerNormalizationOp : Onnx_PureOp<"SimplifiedLayerNormalization"> {
  let summary = "onnxruntime's RMS normalisation (registered in the default domain)";
  let arguments = (ins Onnx_Tensor:$X, Onnx_Tensor:$scale,
                   DefaultValuedAttr<Onnx_IntAttr, "-1">:$axis,
                   DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$stash_type);
  let results = (outs Onnx_Tensor:$Y, Onnx_Tensor:$inv_std_var);
}

def Onnx_SkipSimplifiedLayerNormalizationOp
    : Onnx_PureOp<"SkipSimplifiedLayerNormalization"> {
  let summary = "com.microsoft: residual add (+ bias) then RMS normalisation";
  let description = [{
    Outputs: the normalised sum, mean and inv_std_var (unused by exports),
    and the sum itself (input + skip + bias), which feeds the next residual.
  }];
  let arguments = (ins Onnx_Tensor:$input, Onnx_Tensor:$skip, Onnx_Tensor:$gamma,
                   Onnx_OptTensor:$bias,
                   DefaultValuedAttr<F32Attr, "1.0e-12">:$epsilon);
  let results = (outs Onnx_Tensor:$output, Onnx_Tensor:$mean,
                      Onnx_Tensor:$inv_std_var, Onnx_Tensor:$input_skip_bias_sum);
}

def Onnx_SkipLayerNormalizationOp : Onnx_PureOp<"SkipLayerNormalization"> {
  let summary = "com.microsoft: residual add (+ bias) then layer normalisation";
  let arguments = (ins Onnx_Tensor:$input, Onnx_Tensor:$skip, Onnx_Tensor:$gamma,
                   Onnx_OptTensor:$beta, Onnx_OptTensor:$bias,
                   DefaultValuedAttr<F32Attr, "1.0e-12">:$epsilon);
  let results = (outs Onnx_Tensor:$output, Onnx_Tensor:$mean,
                      Onnx_Tensor:$inv_std_var, Onnx_Tensor:$input_skip_bias_sum);
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Onnx_ShapeOp : Onnx_PureOp<"Shape"> {
  let summary = "the shape of a tensor as int64[rank], sliced by start/end";
  let arguments = (ins Onnx_Tensor:$data, DefaultValuedAttr<Onnx_IntAttr, "0">:$start,
                   OptionalAttr<Onnx_IntAttr>:$end);
  let results = (outs Onnx_Tensor:$shape);
  let hasFolder = 1;
}

def Onnx_SizeOp : Onnx_PureOp<"Size"> {
  let summary = "the number of elements as an int64 scalar";
  let arguments = (ins Onnx_Tensor:$data);
  let results = (outs Onnx_Tensor:$size);
  let hasFolder = 1;
}

def Onnx_ReshapeOp : Onnx_PureOp<"Reshape"> {
  let summary = "reshape to `shape` (0 copies a dim unless allowzero, -1 infers one)";
  let arguments = (ins Onnx_Tensor:$data, Onnx_Tensor:$shape,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$allowzero);
  let results = (outs Onnx_Tensor:$reshaped);
  let hasFolder = 1;
}

def Onnx_FlattenOp : Onnx_PureOp<"Flatten"> {
  let summary = "flatten to 2-D at `axis`";
  let arguments = (ins Onnx_Tensor:$input, DefaultValuedAttr<Onnx_IntAttr, "1">:$axis);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_TransposeOp : Onnx_PureOp<"Transpose"> {
  let summary = "permute dims (reverse them when perm is absent)";
  let arguments = (ins Onnx_Tensor:$data, OptionalAttr<DenseI64ArrayAttr>:$perm);
  let results = (outs Onnx_Tensor:$transposed);
}

def Onnx_UnsqueezeOp : Onnx_PureOp<"Unsqueeze"> {
  let summary = "insert unit dims at `axes` (of the output)";
  let arguments = (ins Onnx_Tensor:$data, Onnx_Tensor:$axes);
  let results = (outs Onnx_Tensor:$expanded);
  let hasFolder = 1;
}

def Onnx_SqueezeOp : Onnx_PureOp<"Squeeze"> {
  let summary = "remove unit dims at `axes` (all unit dims when absent)";
  let arguments = (ins Onnx_Tensor:$data, Onnx_OptTensor:$axes);
  let results = (outs Onnx_Tensor:$squeezed);
  let hasFolder = 1;
}

def Onnx_ExpandOp : Onnx_PureOp<"Expand"> {
  let summary = "broadcast to `shape`";
  let arguments = (ins Onnx_Tensor:$input, Onnx_Tensor:$shape);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_TileOp : Onnx_PureOp<"Tile"> {
  let summary = "repeat along each dim";
  let arguments = (ins Onnx_Tensor:$input, Onnx_Tensor:$repeats);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_ConcatOp : Onnx_PureOp<"Concat"> {
  let summary = "concatenate along `axis`";
  let arguments = (ins Variadic<Onnx_Tensor>:$inputs, Onnx_IntAttr:$axis);
  let results = (outs Onnx_Tensor:$concat_result);
  let hasFolder = 1;
}

def Onnx_SplitOp : Onnx_PureOp<"Split"> {
  let summary = "split along `axis` by `split` sizes or into equal parts";
  let arguments = (ins Onnx_Tensor:$input, Onnx_OptTensor:$split,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$axis,
                   OptionalAttr<Onnx_IntAttr>:$num_outputs);
  let results = (outs Variadic<Onnx_Tensor>:$outputs);
}

def Onnx_SliceOp : Onnx_PureOp<"Slice"> {
  let summary = "numpy-style slice with starts/ends/axes/steps operands";
  let arguments = (ins Onnx_Tensor:$data, Onnx_Tensor:$starts, Onnx_Tensor:$ends,
                   Onnx_OptTensor:$axes, Onnx_OptTensor:$steps);
  let results = (outs Onnx_Tensor:$output);
  let hasFolder = 1;
}

def Onnx_GatherOp : Onnx_PureOp<"Gather"> {
  let summary = "take entries along `axis` at `indices` (negative indices wrap)";
  let arguments = (ins Onnx_Tensor:$data, Onnx_Tensor:$indices,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$axis);
  let results = (outs Onnx_Tensor:$output);
  let hasFolder = 1;
}

def Onnx_GatherElementsOp : Onnx_PureOp<"GatherElements"> {
  let summary = "elementwise gather along `axis`";
  let arguments = (ins Onnx_Tensor:$data, Onnx_Tensor:$indices,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$axis);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_GatherNDOp : Onnx_PureOp<"GatherND"> {
  let summary = "gather slices of data at index tuples (the last dim of indices)";
  let description = [{
    The first `batch_dims` dims of data and indices are batch dims; each
    index tuple of length k addresses the next k dims of data, and the
    result is indices' leading dims followed by data's dims after them.
    torch.onnx's dynamo exporter writes advanced indexing this way (the
    attention mask's `padding_mask[batch, kv]`).
  }];
  let arguments = (ins Onnx_Tensor:$data, Onnx_Tensor:$indices,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$batch_dims);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_ScatterNDOp : Onnx_PureOp<"ScatterND"> {
  let summary = "write updates at index tuples";
  let arguments = (ins Onnx_Tensor:$data, Onnx_Tensor:$indices, Onnx_Tensor:$updates,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_TensorScatterOp : Onnx_PureOp<"TensorScatter"> {
  let summary = "opset 24: write `update` into a KV cache at per-batch write indices";
  let arguments = (ins Onnx_Tensor:$past_cache, Onnx_Tensor:$update,
                   Onnx_OptTensor:$write_indices,
                   DefaultValuedAttr<Onnx_IntAttr, "-2">:$axis,
                   DefaultValuedAttr<StrAttr, "\"linear\"">:$mode);
  let results = (outs Onnx_Tensor:$present_cache);
}

//===----------------------------------------------------------------------===//
// Routing ops. Exports write a mixture of experts' token routing with these
// (optimum's Qwen3-MoE: TopK over the router's softmax, OneHot and NonZero
// to list each expert's tokens, ScatterElements to add its outputs back).
// The raising folds them into llm.moe; they have no lowering of their own
// (onnx-lower-to-linalg names them), since NonZero's result shape depends on
// the data and llmc compiles fixed shapes.
//===----------------------------------------------------------------------===//

def Onnx_TopKOp : Onnx_PureOp<"TopK"> {
  let summary = "the k largest (or smallest) entries along an axis, and their indices";
  let arguments = (ins Onnx_Tensor:$x, Onnx_Tensor:$k,
                   DefaultValuedAttr<Onnx_IntAttr, "-1">:$axis,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$largest,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$sorted);
  let results = (outs Onnx_Tensor:$values, Onnx_Tensor:$indices);
}

def Onnx_OneHotOp : Onnx_PureOp<"OneHot"> {
  let summary = "values[1] where the new axis equals the index, values[0] elsewhere";
  let arguments = (ins Onnx_Tensor:$indices, Onnx_Tensor:$depth, Onnx_Tensor:$values,
                   DefaultValuedAttr<Onnx_IntAttr, "-1">:$axis);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_NonZeroOp : Onnx_PureOp<"NonZero"> {
  let summary = "the indices of the non-zero entries, one column per entry";
  let arguments = (ins Onnx_Tensor:$x);
  let results = (outs Onnx_Tensor:$y);
}

def Onnx_ScatterElementsOp : Onnx_PureOp<"ScatterElements"> {
  let summary = "write updates at per-element indices along `axis`";
  let arguments = (ins Onnx_Tensor:$data, Onnx_Tensor:$indices, Onnx_Tensor:$updates,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$axis,
                   DefaultValuedAttr<StrAttr, "\"none\"">:$reduction);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_ConstantOfShapeOp : Onnx_PureOp<"ConstantOfShape"> {
  let summary = "a tensor of the given shape filled with `value` (0.0f when absent)";
  let arguments = (ins Onnx_Tensor:$input, OptionalAttr<ElementsAttr>:$value);
  let results = (outs Onnx_Tensor:$output);
  let hasFolder = 1;
}

def Onnx_RangeOp : Onnx_PureOp<"Range"> {
  let summary = "start, start+delta, ... below limit";
  let arguments = (ins Onnx_Tensor:$start, Onnx_Tensor:$limit, Onnx_Tensor:$delta);
  let results = (outs Onnx_Tensor:$output);
  let hasFolder = 1;
}

def Onnx_TriluOp : Onnx_PureOp<"Trilu"> {
  let summary = "upper (upper=1) or lower triangle of the last two dims, offset by k";
  let arguments = (ins Onnx_Tensor:$input, Onnx_OptTensor:$k,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$upper);
  let results = (outs Onnx_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Linear algebra and attention
//===----------------------------------------------------------------------===//

def Onnx_MatMulOp : Onnx_PureOp<"MatMul"> {
  let summary = "numpy matmul";
  let arguments = (ins Onnx_Tensor:$A, Onnx_Tensor:$B);
  let results = (outs Onnx_Tensor:$Y);
}

def Onnx_GemmOp : Onnx_PureOp<"Gemm"> {
  let summary = "alpha * op(A) * op(B) + beta * C";
  let arguments = (ins Onnx_Tensor:$A, Onnx_Tensor:$B, Onnx_OptTensor:$C,
                   DefaultValuedAttr<F32Attr, "1.0">:$alpha,
                   DefaultValuedAttr<F32Attr, "1.0">:$beta,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$transA,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$transB);
  let results = (outs Onnx_Tensor:$Y);
}

def Onnx_MatMulNBitsOp : Onnx_PureOp<"MatMulNBits"> {
  let summary = "com.microsoft: A times block-quantised B (packed [N][K/block][block*bits/8])";
  let arguments = (ins Onnx_Tensor:$A, Onnx_Tensor:$B, Onnx_Tensor:$scales,
                   Onnx_OptTensor:$zero_points, Onnx_OptTensor:$g_idx,
                   Onnx_OptTensor:$bias,
                   Onnx_IntAttr:$K, Onnx_IntAttr:$N, DefaultValuedAttr<Onnx_IntAttr, "4">:$bits,
                   Onnx_IntAttr:$block_size,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$accuracy_level);
  let results = (outs Onnx_Tensor:$Y);
}

def Onnx_DequantizeLinearOp : Onnx_PureOp<"DequantizeLinear"> {
  let summary = "(x - zero_point) * scale, per tensor, per axis or blocked";
  let arguments = (ins Onnx_Tensor:$x, Onnx_Tensor:$x_scale,
                   Onnx_OptTensor:$x_zero_point,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$axis,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$block_size,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$output_dtype);
  let results = (outs Onnx_Tensor:$y);
}

def Onnx_GatherBlockQuantizedOp : Onnx_PureOp<"GatherBlockQuantized"> {
  let summary = "com.microsoft: Gather from a block-quantised table, dequantised";
  let arguments = (ins Onnx_Tensor:$data, Onnx_Tensor:$indices, Onnx_Tensor:$scales,
                   Onnx_OptTensor:$zero_points,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$gather_axis,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$quantize_axis,
                   DefaultValuedAttr<Onnx_IntAttr, "128">:$block_size,
                   DefaultValuedAttr<Onnx_IntAttr, "4">:$bits);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_AttentionOp : Onnx_PureOp<"Attention"> {
  let summary = "opset 23/24 scaled dot-product attention with optional KV cache";
  let description = [{
    Q/K/V are 4-D [batch, heads, seq, head_size] or 3-D [batch, seq,
    heads*head_size] (then q_num_heads/kv_num_heads give the split).
    past_key/past_value are concatenated in front of K/V and returned as
    present_key/present_value. Opset 24 adds nonpad_kv_seqlen, opset 25 a
    sliding window (left/right_window_size, -1 for unbounded).
  }];
  let arguments = (ins Onnx_Tensor:$Q, Onnx_Tensor:$K, Onnx_Tensor:$V,
                   Onnx_OptTensor:$attn_mask, Onnx_OptTensor:$past_key,
                   Onnx_OptTensor:$past_value, Onnx_OptTensor:$nonpad_kv_seqlen,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$is_causal,
                   OptionalAttr<Onnx_IntAttr>:$q_num_heads,
                   OptionalAttr<Onnx_IntAttr>:$kv_num_heads,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$qk_matmul_output_mode,
                   OptionalAttr<F32Attr>:$scale,
                   DefaultValuedAttr<F32Attr, "0.0">:$softcap,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$softmax_precision,
                   DefaultValuedAttr<Onnx_IntAttr, "-1">:$left_window_size,
                   DefaultValuedAttr<Onnx_IntAttr, "-1">:$right_window_size);
  let results = (outs Onnx_Tensor:$Y, Onnx_Tensor:$present_key,
                      Onnx_Tensor:$present_value, Onnx_Tensor:$qk_matmul_output);
}

def Onnx_GroupQueryAttentionOp : Onnx_PureOp<"GroupQueryAttention"> {
  let summary = "com.microsoft: attention with kv_num_heads <= num_heads and a KV cache";
  let description = [{
    query is [batch, seq, num_heads*head_size] (or packed QKV when key and
    value are none); past_key/past_value are [batch, kv_num_heads, past,
    head_size]. seqlens_k holds each sequence's total length minus one, so
    the true length comes from it, not from the past tensor's shape.
    With local_window_size L > 0 the query at position p sees the L keys
    p - L + 1 .. p; sliding_window_cache = 1 keeps that layer's past as a ring
    of the last L keys (onnxruntime-genai's Gemma-2), a storage choice only.
  }];
  let arguments = (ins Onnx_Tensor:$query, Onnx_OptTensor:$key, Onnx_OptTensor:$value,
                   Onnx_OptTensor:$past_key, Onnx_OptTensor:$past_value,
                   Onnx_Tensor:$seqlens_k, Onnx_Tensor:$total_sequence_length,
                   Onnx_OptTensor:$cos_cache, Onnx_OptTensor:$sin_cache,
                   Onnx_OptTensor:$position_ids, Onnx_OptTensor:$attention_bias,
                   Onnx_OptTensor:$head_sink,
                   Onnx_IntAttr:$num_heads, Onnx_IntAttr:$kv_num_heads,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$do_rotary,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$rotary_interleaved,
                   DefaultValuedAttr<F32Attr, "0.0">:$scale,
                   DefaultValuedAttr<F32Attr, "0.0">:$softcap,
                   DefaultValuedAttr<Onnx_IntAttr, "-1">:$local_window_size,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$smooth_softmax,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$sliding_window_cache,
                   DefaultValuedAttr<Onnx_IntAttr, "-1">:$qk_output);
  let results = (outs Onnx_Tensor:$output, Onnx_Tensor:$present_key,
                      Onnx_Tensor:$present_value, Onnx_Tensor:$output_qk);
}

def Onnx_MoEOp : Onnx_PureOp<"MoE"> {
  let summary = "com.microsoft: a mixture of experts, top k of them per token";
  let description = [{
    input is [tokens, hidden] or [batch, seq, hidden]; router_probs holds one
    row of logits per token, [tokens, experts]. Each token takes the top k
    experts of softmax(router_probs), their weights divided by their sum
    when normalize_routing_weights. fc1_experts_weights is [experts, fusion *
    inter, hidden] ([out, in] per expert), fc2 [experts, hidden, inter], fc3
    (the up projection when fc1 is not fused) [experts, inter, hidden];
    biases are [experts, out]. swiglu is G * sigmoid(activation_alpha * G) *
    (L + activation_beta) with G = min(g, swiglu_limit), L = clamp(l,
    -limit, limit); swiglu_fusion 1 interleaves g and l on fc1's outputs, 2
    concatenates them, 0 takes l from fc3.
  }];
  let arguments = (ins Onnx_Tensor:$input, Onnx_Tensor:$router_probs,
                   Onnx_Tensor:$fc1_experts_weights, Onnx_OptTensor:$fc1_experts_bias,
                   Onnx_Tensor:$fc2_experts_weights, Onnx_OptTensor:$fc2_experts_bias,
                   Onnx_OptTensor:$fc3_experts_weights, Onnx_OptTensor:$fc3_experts_bias,
                   DefaultValuedAttr<StrAttr, "\"relu\"">:$activation_type,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$k,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$normalize_routing_weights,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$use_sparse_mixer,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$swiglu_fusion,
                   OptionalAttr<F32Attr>:$swiglu_limit,
                   DefaultValuedAttr<F32Attr, "1.0">:$activation_alpha,
                   DefaultValuedAttr<F32Attr, "0.0">:$activation_beta);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_QMoEOp : Onnx_PureOp<"QMoE"> {
  let summary = "com.microsoft: MoE over block-quantized expert weights";
  let description = [{
    MoE's routing and experts (see onnx.MoE), each expert weight stored as
    unsigned codes of expert_weight_bits (4: two a byte, the even element in
    the low nibble; 8: one a byte), [experts, out, in / pack], and a scale per
    block of block_size inputs ([experts, out, ceil(in / block_size)]), or per
    row when block_size is 0 ([experts, out]). A weight is (code - zero point)
    * scale, the zero point 2^(bits - 1) when the zero_points input is absent.
    quant_type "fp4"/"nvfp4" (e2m1 codes, e8m0/e4m3 scales and the global
    scales of inputs 15 and 16) and weights_prepacked layouts other than 0
    (CUTLASS's for the CUDA kernel) are encodings of their own.
  }];
  let arguments = (ins Onnx_Tensor:$input, Onnx_Tensor:$router_probs,
                   Onnx_Tensor:$fc1_experts_weights, Onnx_Tensor:$fc1_scales,
                   Onnx_OptTensor:$fc1_experts_bias,
                   Onnx_Tensor:$fc2_experts_weights, Onnx_Tensor:$fc2_scales,
                   Onnx_OptTensor:$fc2_experts_bias,
                   Onnx_OptTensor:$fc3_experts_weights, Onnx_OptTensor:$fc3_scales,
                   Onnx_OptTensor:$fc3_experts_bias,
                   Onnx_OptTensor:$fc1_zero_points, Onnx_OptTensor:$fc2_zero_points,
                   Onnx_OptTensor:$fc3_zero_points, Onnx_OptTensor:$router_weights,
                   Onnx_OptTensor:$fc1_global_scales, Onnx_OptTensor:$fc2_global_scales,
                   Onnx_IntAttr:$expert_weight_bits,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$block_size,
                   DefaultValuedAttr<StrAttr, "\"int\"">:$quant_type,
                   OptionalAttr<Onnx_IntAttr>:$weights_prepacked,
                   OptionalAttr<Onnx_IntAttr>:$fc1_expert_weight_bits,
                   OptionalAttr<Onnx_IntAttr>:$fc2_expert_weight_bits,
                   OptionalAttr<Onnx_IntAttr>:$fc3_expert_weight_bits,
                   DefaultValuedAttr<StrAttr, "\"relu\"">:$activation_type,
                   DefaultValuedAttr<Onnx_IntAttr, "1">:$k,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$normalize_routing_weights,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$use_sparse_mixer,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$swiglu_fusion,
                   OptionalAttr<F32Attr>:$swiglu_limit,
                   DefaultValuedAttr<F32Attr, "1.0">:$activation_alpha,
                   DefaultValuedAttr<F32Attr, "0.0">:$activation_beta);
  let results = (outs Onnx_Tensor:$output);
}

def Onnx_MultiHeadAttentionOp : Onnx_PureOp<"MultiHeadAttention"> {
  let summary = "com.microsoft: multi-head attention with an optional KV cache";
  let arguments = (ins Onnx_Tensor:$query, Onnx_OptTensor:$key, Onnx_OptTensor:$value,
                   Onnx_OptTensor:$bias, Onnx_OptTensor:$key_padding_mask,
                   Onnx_OptTensor:$attention_bias, Onnx_OptTensor:$past_key,
                   Onnx_OptTensor:$past_value, Onnx_OptTensor:$past_sequence_length,
                   Onnx_OptTensor:$cache_indirection,
                   Onnx_IntAttr:$num_heads,
                   DefaultValuedAttr<F32Attr, "0.0">:$scale,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$unidirectional,
                   DefaultValuedAttr<F32Attr, "-10000.0">:$mask_filter_value);
  let results = (outs Onnx_Tensor:$output, Onnx_Tensor:$present_key,
                      Onnx_Tensor:$present_value, Onnx_Tensor:$qk);
}

def Onnx_RotaryEmbeddingOp : Onnx_PureOp<"RotaryEmbedding"> {
  let summary = "opset 23 rotary embedding; cos/sin caches are [max_pos, rotary_dim/2]";
  let arguments = (ins Onnx_Tensor:$X, Onnx_Tensor:$cos_cache, Onnx_Tensor:$sin_cache,
                   Onnx_OptTensor:$position_ids,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$interleaved,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$rotary_embedding_dim,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$num_heads);
  let results = (outs Onnx_Tensor:$Y);
}

def Onnx_MsRotaryEmbeddingOp : Onnx_PureOp<"com.microsoft.RotaryEmbedding"> {
  let summary = "com.microsoft rotary embedding: input, position_ids, cos, sin";
  let description = [{
    Operand order differs from the standard op: position_ids comes second.
    cos/sin caches are [max_pos, rotary_dim/2].
  }];
  let arguments = (ins Onnx_Tensor:$input, Onnx_Tensor:$position_ids,
                   Onnx_Tensor:$cos_cache, Onnx_Tensor:$sin_cache,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$interleaved,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$rotary_embedding_dim,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$num_heads,
                   DefaultValuedAttr<F32Attr, "1.0">:$scale,
                   DefaultValuedAttr<Onnx_IntAttr, "0">:$is_packed_batching);
  let results = (outs Onnx_Tensor:$output);
}

//===----------------------------------------------------------------------===//
// Control flow
//===----------------------------------------------------------------------===//

def Onnx_IfOp : Onnx_Op<"If", [RecursiveMemoryEffects, NoRegionArguments]> {
  let summary = "run then_branch or else_branch on a scalar boolean";
  let description = [{
    optimum's merged decoders wrap the with-past and no-past graphs in one If
    on `use_cache_branch`; the importer binds that input to true so the If
    folds to its with-past branch.
  }];
  let arguments = (ins Onnx_Tensor:$cond);
  let results = (outs Variadic<Onnx_Tensor>:$outputs);
  let regions = (region SizedRegion<1>:$then_branch, SizedRegion<1>:$else_branch);
  let assemblyFormat = "$cond attr-dict `:` type($cond) `->` type($outputs) $then_branch `else` $else_branch";
  let hasCanonicalizer = 1;
}

def Onnx_YieldOp : Op<Onnx_Dialect, "Yield", [Pure, Terminator, ReturnLike,
    ParentOneOf<["IfOp"]>]> {
  let summary = "the outputs of an If branch";
  let arguments = (ins Variadic<AnyType>:$operands);
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
}

#endif // LLMC_DIALECT_ONNX_OPS
