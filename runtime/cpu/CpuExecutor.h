//===- CpuExecutor.h - steps on the host CPU --------------------*- C++ -*-===//
#ifndef LLMC_RUNTIME_CPU_CPUEXECUTOR_H
#define LLMC_RUNTIME_CPU_CPUEXECUTOR_H

#include "runtime/core/AlignedBuffer.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/StepExecutor.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/HostKvStorage.h"

namespace llmc::runtime {

/// A cpu artifact's step: the generated step function (kernels.so), called
/// with the CPU device's host API, the mapped weights, a workspace of the
/// planned size and the f32 KV cache in host memory.
class CpuExecutor final : public StepExecutor {
public:
  /// `artifact` outlives the executor. numThreads = 0: one per hardware
  /// thread.
  CpuExecutor(const Artifact &artifact, unsigned numThreads, const KvCacheShape &kvShape);

  KvBlockPool &kvPool() override { return pool; }
  unsigned numThreads() const override { return cpu.numThreads(); }
  void parallelFor(int64_t n, const std::function<void(int64_t)> &body) override {
    cpu.parallelFor(n, body);
  }
  int64_t maxSequenceLength() const override { return 0; }
  void step(const StepBatch &batch, float *logits) override;

private:
  const Artifact &artifact;
  CpuDevice cpu;
  AlignedBuffer workspace;
  HostKvStorage kvStorage;
  KvBlockPool pool;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CPU_CPUEXECUTOR_H
