//===- LoraProducts.h - a step's LoRA products, row by row ------*- C++ -*-===//
//
// What the host API's `lora` does for a CPU step (StepABI.h): each row
// adds the product of the adapter its sequence runs with at one site.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_LORA_LORAPRODUCTS_H
#define LLMC_RUNTIME_LORA_LORAPRODUCTS_H

#include "runtime/core/Artifact.h"
#include "runtime/core/StepBatch.h"
#include "runtime/cpu/ThreadPool.h"

#include <cstdint>

namespace llmc::runtime {

/// out[r] = base[r] + the LoRA product of x[r] at `site` (of `shape`), for the `rows`
/// rows of `batch` (its tokens, or with `perSequence` the rows its
/// logitsIndices pick), on `pool`'s threads. A row whose token has no
/// adapter (batch.loraIndices null, or -1) or whose adapter leaves the site
/// be is copied.
void addLoraProducts(ThreadPool &pool, const StepBatch &batch, int64_t site,
                     const LoraSite &shape, bool perSequence, int64_t rows, const float *x,
                     int64_t ldx, const float *base, int64_t ldbase, float *out, int64_t ldout);

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_LORA_LORAPRODUCTS_H
