//===- OpRegistry.cpp - ONNX operators llmc imports, keyed by opset -------===//
#include "OpRegistry.h"

#include "llvm/ADT/ArrayRef.h"

namespace llmc::import {

namespace {
constexpr llvm::StringLiteral kMs = "com.microsoft";

// clang-format off
/// Each row: domain, op_type, dialect op, since opset, inputs, outputs.
/// Rows of one op are ordered by sinceVersion; lookups take the newest form
/// not newer than the model's opset.
const OpSchema kSchemas[] = {
  // Elementwise.
  {"", "Neg", "onnx.Neg", 1, 1, 1},
  {"", "Sqrt", "onnx.Sqrt", 1, 1, 1},
  {"", "Reciprocal", "onnx.Reciprocal", 1, 1, 1},
  {"", "Exp", "onnx.Exp", 1, 1, 1},
  {"", "Log", "onnx.Log", 1, 1, 1},
  {"", "Abs", "onnx.Abs", 1, 1, 1},
  {"", "Floor", "onnx.Floor", 1, 1, 1},
  {"", "Ceil", "onnx.Ceil", 1, 1, 1},
  {"", "Cos", "onnx.Cos", 7, 1, 1},
  {"", "Sin", "onnx.Sin", 7, 1, 1},
  {"", "Sigmoid", "onnx.Sigmoid", 1, 1, 1},
  {"", "Tanh", "onnx.Tanh", 1, 1, 1},
  {"", "Erf", "onnx.Erf", 9, 1, 1},
  {"", "Relu", "onnx.Relu", 1, 1, 1},
  {"", "Softplus", "onnx.Softplus", 1, 1, 1},
  {"", "Not", "onnx.Not", 1, 1, 1},
  {"", "IsNaN", "onnx.IsNaN", 9, 1, 1},
  {"", "IsInf", "onnx.IsInf", 10, 1, 1},
  {"", "Identity", "onnx.Identity", 1, 1, 1},
  {"", "Gelu", "onnx.Gelu", 20, 1, 1},
  {"", "Add", "onnx.Add", 7, 2, 1},
  {"", "Sub", "onnx.Sub", 7, 2, 1},
  {"", "Mul", "onnx.Mul", 7, 2, 1},
  {"", "Div", "onnx.Div", 7, 2, 1},
  {"", "Pow", "onnx.Pow", 7, 2, 1},
  {"", "Mod", "onnx.Mod", 10, 2, 1},
  {"", "Equal", "onnx.Equal", 7, 2, 1},
  {"", "Less", "onnx.Less", 7, 2, 1},
  {"", "LessOrEqual", "onnx.LessOrEqual", 12, 2, 1},
  {"", "Greater", "onnx.Greater", 7, 2, 1},
  {"", "GreaterOrEqual", "onnx.GreaterOrEqual", 12, 2, 1},
  {"", "And", "onnx.And", 7, 2, 1},
  {"", "Or", "onnx.Or", 7, 2, 1},
  {"", "Xor", "onnx.Xor", 7, 2, 1},
  {"", "Max", "onnx.Max", 8, -1, 1},
  {"", "Min", "onnx.Min", 8, -1, 1},
  {"", "Sum", "onnx.Sum", 8, -1, 1},
  {"", "Clip", "onnx.Clip", 11, 3, 1},
  {"", "Where", "onnx.Where", 9, 3, 1},
  {"", "Cast", "onnx.Cast", 6, 1, 1},
  {"", "CastLike", "onnx.CastLike", 15, 2, 1},
  // Reductions and normalisation.
  {"", "ReduceMean", "onnx.ReduceMean", 1, 2, 1, OpsetRewrite::AxesAttributeToInput},
  {"", "ReduceMean", "onnx.ReduceMean", 18, 2, 1},
  {"", "ReduceMax", "onnx.ReduceMax", 1, 2, 1, OpsetRewrite::AxesAttributeToInput},
  {"", "ReduceMax", "onnx.ReduceMax", 18, 2, 1},
  {"", "ReduceMin", "onnx.ReduceMin", 1, 2, 1, OpsetRewrite::AxesAttributeToInput},
  {"", "ReduceMin", "onnx.ReduceMin", 18, 2, 1},
  {"", "ReduceProd", "onnx.ReduceProd", 1, 2, 1, OpsetRewrite::AxesAttributeToInput},
  {"", "ReduceProd", "onnx.ReduceProd", 18, 2, 1},
  {"", "ReduceL2", "onnx.ReduceL2", 1, 2, 1, OpsetRewrite::AxesAttributeToInput},
  {"", "ReduceL2", "onnx.ReduceL2", 18, 2, 1},
  {"", "ReduceSum", "onnx.ReduceSum", 13, 2, 1},
  {"", "ArgMax", "onnx.ArgMax", 1, 1, 1},
  {"", "CumSum", "onnx.CumSum", 11, 2, 1},
  {"", "Softmax", "onnx.Softmax", 13, 1, 1},
  {"", "LayerNormalization", "onnx.LayerNormalization", 1, 3, 3},
  {"", "RMSNormalization", "onnx.RMSNormalization", 23, 2, 1},
  // onnxruntime registers SimplifiedLayerNormalization in the default domain.
  {"", "SimplifiedLayerNormalization", "onnx.SimplifiedLayerNormalization", 1, 2, 2},
  {kMs, "SimplifiedLayerNormalization", "onnx.SimplifiedLayerNormalization", 1, 2, 2},
  {kMs, "SkipSimplifiedLayerNormalization", "onnx.SkipSimplifiedLayerNormalization", 1, 4, 4},
  {kMs, "SkipLayerNormalization", "onnx.SkipLayerNormalization", 1, 5, 4},
  // Shapes.
  {"", "Shape", "onnx.Shape", 1, 1, 1},
  {"", "Size", "onnx.Size", 1, 1, 1},
  {"", "Reshape", "onnx.Reshape", 5, 2, 1},
  {"", "Flatten", "onnx.Flatten", 1, 1, 1},
  {"", "Transpose", "onnx.Transpose", 1, 1, 1},
  {"", "Unsqueeze", "onnx.Unsqueeze", 13, 2, 1},
  {"", "Squeeze", "onnx.Squeeze", 13, 2, 1},
  {"", "Expand", "onnx.Expand", 8, 2, 1},
  {"", "Tile", "onnx.Tile", 6, 2, 1},
  {"", "Concat", "onnx.Concat", 4, -1, 1},
  {"", "Split", "onnx.Split", 13, 2, -1},
  {"", "Slice", "onnx.Slice", 10, 5, 1},
  {"", "Gather", "onnx.Gather", 1, 2, 1},
  {"", "GatherElements", "onnx.GatherElements", 11, 2, 1},
  {"", "GatherND", "onnx.GatherND", 11, 2, 1},
  {"", "ScatterND", "onnx.ScatterND", 11, 3, 1},
  {"", "TensorScatter", "onnx.TensorScatter", 24, 3, 1},
  // A mixture of experts' routing (OnnxOps.td): imported for the raising only.
  {"", "TopK", "onnx.TopK", 11, 2, 2},
  {"", "OneHot", "onnx.OneHot", 11, 3, 1},
  {"", "NonZero", "onnx.NonZero", 13, 1, 1},
  {"", "ScatterElements", "onnx.ScatterElements", 11, 3, 1},
  {"", "ConstantOfShape", "onnx.ConstantOfShape", 9, 1, 1},
  {"", "Range", "onnx.Range", 11, 3, 1},
  {"", "Trilu", "onnx.Trilu", 14, 2, 1},
  // Linear algebra, quantisation, attention.
  {"", "MatMul", "onnx.MatMul", 1, 2, 1},
  {"", "Gemm", "onnx.Gemm", 1, 3, 1},
  {"", "DequantizeLinear", "onnx.DequantizeLinear", 10, 3, 1},
  {kMs, "MatMulNBits", "onnx.MatMulNBits", 1, 6, 1},
  {kMs, "GatherBlockQuantized", "onnx.GatherBlockQuantized", 1, 4, 1},
  {"", "Attention", "onnx.Attention", 23, 7, 4},
  {kMs, "GroupQueryAttention", "onnx.GroupQueryAttention", 1, 12, 4},
  {kMs, "MultiHeadAttention", "onnx.MultiHeadAttention", 1, 10, 4},
  {kMs, "MoE", "onnx.MoE", 1, 8, 1},
  {kMs, "QMoE", "onnx.QMoE", 1, 17, 1},
  {"", "RotaryEmbedding", "onnx.RotaryEmbedding", 23, 4, 1},
  {kMs, "RotaryEmbedding", "onnx.com.microsoft.RotaryEmbedding", 1, 4, 1},
  // Control flow (If's branches are imported as regions by the importer).
  {"", "If", "onnx.If", 1, 1, -1},
};
// clang-format on
} // namespace

const OpSchema *lookupOpSchema(llvm::StringRef domain, llvm::StringRef opType, int64_t opset) {
  const OpSchema *best = nullptr;
  for (const OpSchema &schema : kSchemas)
    if (schema.domain == domain && schema.opType == opType && schema.sinceVersion <= opset &&
        (!best || schema.sinceVersion > best->sinceVersion))
      best = &schema;
  return best;
}

int64_t firstKnownOpset(llvm::StringRef domain, llvm::StringRef opType) {
  int64_t first = -1;
  for (const OpSchema &schema : kSchemas)
    if (schema.domain == domain && schema.opType == opType &&
        (first < 0 || schema.sinceVersion < first))
      first = schema.sinceVersion;
  return first;
}

} // namespace llmc::import
