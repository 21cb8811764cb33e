//===- StepExecutor.h - what runs a step on one target ----------*- C++ -*-===//
//
// Model validates a step's batch and owns the artifact; a StepExecutor runs
// the validated step where the artifact was compiled for, and owns what that
// target needs: its copy of the weights (or a view of the mapped file), the
// step's workspace and the KV cache's memory. CpuExecutor (runtime/cpu/)
// calls the generated step function; CudaExecutor (runtime/cuda/) replays the
// step plan on a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CORE_STEPEXECUTOR_H
#define LLMC_RUNTIME_CORE_STEPEXECUTOR_H

#include "runtime/core/KvBlockPool.h"
#include "runtime/core/StepBatch.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace llmc::runtime {

class StepExecutor {
public:
  virtual ~StepExecutor() = default;

  /// The KV cache: its shape, and block copies in whatever memory holds it.
  virtual KvBlockPool &kvPool() = 0;
  /// Host threads a step runs on.
  virtual unsigned numThreads() const = 0;
  /// Runs body(i) for i in [0, n) on those threads, between steps (the
  /// engine's per-sequence work); in any order, so body(i) must not depend
  /// on another i. Here one after the other.
  virtual void parallelFor(int64_t n, const std::function<void(int64_t)> &body) {
    for (int64_t i = 0; i < n; ++i) body(i);
  }
  /// The most positions one sequence of a step may have beyond the KV
  /// cache's own limit (a GPU's block tables); 0 when there is none.
  virtual int64_t maxSequenceLength() const = 0;
  /// Runs a batch Model::validate accepted and writes [numSeqs, vocabSize]
  /// f32 logits to host memory. Not reentrant: one step at a time.
  virtual void step(const StepBatch &batch, float *logits) = 0;
  /// Runs a batch as step() does and writes each sequence's greedy token
  /// (runtime/core/Argmax.h's argmax of its [vocabSize] logits row) to
  /// `tokens`. Here from host logits, the rows over the threads.
  virtual void stepGreedy(const StepBatch &batch, int64_t vocabSize, int32_t *tokens);
  /// Whether stepGreedy picks the tokens where the logits are (a GPU), so
  /// that only [numSeqs] ids come back.
  virtual bool greedyOnDevice() const { return false; }

private:
  /// stepGreedy's logits on the host.
  std::vector<float> greedyLogits;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CORE_STEPEXECUTOR_H
