//===- OnnxToLinalgLinearAlgebra.cpp ----------------------------------------------===//
#include "passes/OnnxToLinalg.h"

using namespace mlir;

namespace llmc::onnx_to_linalg {

void populateLinearAlgebraPatterns(TypeConverter &, RewritePatternSet &) {}

} // namespace llmc::onnx_to_linalg
