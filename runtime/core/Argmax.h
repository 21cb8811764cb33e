//===- Argmax.h - the greedy token of a logits row --------------*- C++ -*-===//
//
// The one definition of greedy decoding's choice, which the sampler and
// Model::stepGreedy's host path use, and the GPU's argmax kernel
// (passes/Codegen/CUDA/attention/Argmax.cuh) reproduces.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CORE_ARGMAX_H
#define LLMC_RUNTIME_CORE_ARGMAX_H

#include <cstdint>

namespace llmc::runtime {

/// The index of the largest of `values`; the lowest such index on ties. A
/// NaN is never the largest, unless values[0] is NaN: then the answer is 0.
int32_t argmax(const float *values, int64_t count);

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CORE_ARGMAX_H
