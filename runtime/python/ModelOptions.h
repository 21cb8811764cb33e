//===- ModelOptions.h - a model's options from Python keywords --*- C++ -*-===//
#ifndef LLMC_RUNTIME_PYTHON_MODELOPTIONS_H
#define LLMC_RUNTIME_PYTHON_MODELOPTIONS_H

#include "runtime/core/Error.h"
#include "runtime/core/Model.h"

namespace llmc::python {

/// ModelOptions from the keywords Model and LLMEngine take (0: the default);
/// throws Error on a negative one or a fraction outside (0, 1].
inline runtime::ModelOptions modelOptions(int64_t numThreads, int64_t numKvBlocks,
                                          int64_t kvCacheBytes, double memoryFraction,
                                          int64_t maxModelLen) {
  if (numThreads < 0 || numKvBlocks < 0 || kvCacheBytes < 0 || maxModelLen < 0)
    throw runtime::Error("num_threads, num_kv_blocks, kv_cache_memory and max_model_len must "
                         "not be negative");
  if (memoryFraction < 0 || memoryFraction > 1)
    throw runtime::Error("the memory fraction must be in (0, 1], got " +
                         std::to_string(memoryFraction));
  runtime::ModelOptions options;
  options.numThreads = static_cast<unsigned>(numThreads);
  options.numKvBlocks = numKvBlocks;
  options.kvCacheBytes = kvCacheBytes;
  options.memoryFraction = memoryFraction;
  options.maxModelLen = maxModelLen;
  return options;
}

} // namespace llmc::python

#endif // LLMC_RUNTIME_PYTHON_MODELOPTIONS_H
