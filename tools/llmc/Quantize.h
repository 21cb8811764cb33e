//===- Quantize.h - `llmc quantize` ---------------------------*- C++ -*-===//
#ifndef LLMC_TOOLS_LLMC_QUANTIZE_H
#define LLMC_TOOLS_LLMC_QUANTIZE_H

#include <string>
#include <vector>

namespace llmc {

/// `llmc quantize MODEL.onnx -o OUT.onnx [--method rtn|awq|gptq] ...`: runs the Python
/// quantizer (python/llmc/quantize) with `args`; its exit status.
int runQuantize(const std::vector<std::string> &args);

} // namespace llmc

#endif // LLMC_TOOLS_LLMC_QUANTIZE_H
