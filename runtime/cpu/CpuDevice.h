//===- CpuDevice.h - the host CPU as the step function sees it --*- C++ -*-===//
#ifndef LLMC_RUNTIME_CPU_CPUDEVICE_H
#define LLMC_RUNTIME_CPU_CPUDEVICE_H

#include "llmc/Runtime/StepABI.h"
#include "runtime/core/Artifact.h"
#include "runtime/core/StepBatch.h"
#include "runtime/cpu/ThreadPool.h"

#include <functional>

namespace llmc::runtime {

/// The host CPU: a thread pool, and the LlmcCpuHostApi table that lends it,
/// OpenBLAS's sgemm and the running step's LoRA products to the generated
/// step function.
class CpuDevice {
public:
  /// numThreads = 0 means one per hardware thread. OpenBLAS's own thread
  /// count is set to the same number; it is process-wide, so the last device
  /// created decides it.
  explicit CpuDevice(unsigned numThreads = 0);
  CpuDevice(const CpuDevice &) = delete;
  CpuDevice &operator=(const CpuDevice &) = delete;

  unsigned numThreads() const { return pool.numThreads(); }
  /// body(i) for i in [0, n) over the pool.
  void parallelFor(int64_t n, const std::function<void(int64_t)> &body);
  /// The table to pass to the step function; valid while the device lives.
  const LlmcCpuHostApi *hostApi() const { return &api; }
  /// The step the table's `lora` serves while the step function runs (an
  /// artifact with LoRA sites `sites`); null between steps.
  void setRunningStep(const StepBatch *batch, const std::vector<LoraSite> *sites) {
    context.batch = batch;
    context.loraSites = sites;
  }

  /// What the table's functions receive as their context.
  struct HostContext {
    ThreadPool *pool = nullptr;
    const StepBatch *batch = nullptr;
    const std::vector<LoraSite> *loraSites = nullptr;
  };

private:
  ThreadPool pool;
  HostContext context;
  LlmcCpuHostApi api;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CPU_CPUDEVICE_H
