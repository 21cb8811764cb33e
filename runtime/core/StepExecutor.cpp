//===- StepExecutor.cpp - what every target's executor shares -------------===//
#include "runtime/core/StepExecutor.h"

#include "runtime/core/Argmax.h"

namespace llmc::runtime {

void StepExecutor::stepGreedy(const StepBatch &batch, int64_t vocabSize, int32_t *tokens) {
  greedyLogits.resize(static_cast<size_t>(batch.numSeqs * vocabSize));
  step(batch, greedyLogits.data());
  parallelFor(batch.numSeqs, [&](int64_t seq) {
    tokens[seq] = argmax(greedyLogits.data() + seq * vocabSize, vocabSize);
  });
}

} // namespace llmc::runtime
