//===- OnnxToLinalgAttention.cpp ----------------------------------------------===//
#include "passes/OnnxToLinalg.h"

using namespace mlir;

namespace llmc::onnx_to_linalg {

void populateAttentionPatterns(TypeConverter &, RewritePatternSet &) {}

} // namespace llmc::onnx_to_linalg
