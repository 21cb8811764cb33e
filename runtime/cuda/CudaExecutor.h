//===- CudaExecutor.h - a cuda artifact's steps on a GPU -------*- C++ -*-===//
//
// Loads a cuda artifact (docs/cuda.md) onto the first visible GPU and runs
// its step plan there: the device memory (weights, workspace, KV pool, step
// inputs, logits), the kernel modules, the plan's executor on one stream and
// the CUDA graphs of decode steps. docs/cuda.md, "The runtime", tells the
// whole story.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDA_CUDAEXECUTOR_H
#define LLMC_RUNTIME_CUDA_CUDAEXECUTOR_H

#include "runtime/core/Artifact.h"
#include "runtime/core/KvBlockPool.h"
#include "runtime/core/StepExecutor.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/StepPlan.h"

#include <functional>
#include <memory>
#include <string>

namespace llmc::runtime::cuda {

/// A cuda artifact loaded on the GPU. Every call makes the executor's context
/// current on the calling thread for its duration, so any one thread at a
/// time may use it.
class CudaExecutor final : public StepExecutor {
public:
  /// Decides the KV cache's shape from the device memory free once
  /// everything else is allocated, and the device's name.
  using KvCacheSizer =
      std::function<KvCacheShape(int64_t freeBytes, const std::string &deviceName)>;

  /// Checks the step plan against the artifact, opens the driver and the
  /// first visible GPU, loads the modules and resolves every kernel the plan
  /// names, copies the weights to the device, allocates the workspace, the
  /// step buffers and the KV pool (sized by `sizeKvCache`) and chooses the
  /// GEMM algorithms. Block tables are as wide as `maxModelLen` positions
  /// need (0: the model's positions, else the whole pool). Throws Error with
  /// one line for each failure: "no NVIDIA driver on this machine (...)", "no
  /// CUDA device (...)", a GPU older than the artifact's architecture, a
  /// missing kernel, memory.
  CudaExecutor(const Artifact &artifact, int64_t maxModelLen, const KvCacheSizer &sizeKvCache);
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor &) = delete;
  CudaExecutor &operator=(const CudaExecutor &) = delete;

  /// The GPU an executor runs on.
  struct Gpu {
    CUdevice device = 0;
    std::string name;
    /// 10 x major + minor: 90 for sm_90.
    int computeCapability = 0;

    std::string arch() const { return "sm_" + std::to_string(computeCapability); }
  };

  /// The device KV pool; its block copies are enqueued on the executor's
  /// stream, ahead of the next step.
  KvBlockPool &kvPool() override { return *pool; }
  unsigned numThreads() const override { return 1; }
  int64_t maxSequenceLength() const override;
  /// Copies the step's inputs to the GPU in one copy, runs the plan (a decode
  /// step padded to a graph batch size, and from its size's second step on
  /// as a CUDA graph) and copies the logits back.
  void step(const StepBatch &batch, float *logits) override;
  /// step() up to the logits, then the argmax kernel over them: [numSeqs]
  /// ids come back. From host logits where the artifact's attention module
  /// has no argmax kernel (compiled by an llmc from before it).
  void stepGreedy(const StepBatch &batch, int64_t vocabSize, int32_t *tokens) override;
  bool greedyOnDevice() const override;
private:
  struct DeviceState;

  /// The device KV pool's memory, as KvBlockPool copies blocks in it.
  class DeviceKvStorage final : public KvBlockStorage {
  public:
    explicit DeviceKvStorage(CudaExecutor &executor) : executor(executor) {}
    void copyBytes(int64_t from, int64_t to, int64_t bytes) override {
      executor.copyKvBytes(from, to, bytes);
    }
    void copyToHost(int64_t from, void *host, int64_t bytes) override {
      executor.copyKvToHost(from, host, bytes);
    }
    void copyFromHost(const void *host, int64_t to, int64_t bytes) override {
      executor.copyKvFromHost(host, to, bytes);
    }

  private:
    CudaExecutor &executor;
  };

  /// Enqueues a device-to-device copy within the KV pool on the stream.
  void copyKvBytes(int64_t from, int64_t to, int64_t bytes);
  /// Copies KV pool bytes to host memory once the stream's work is done, and
  /// returns when they are there (a swap-out).
  void copyKvToHost(int64_t from, void *host, int64_t bytes);
  /// Enqueues a copy from host memory into the KV pool on the stream; the
  /// host bytes are staged before it returns (pageable memory), so they may
  /// be reused at once (a swap-in).
  void copyKvFromHost(const void *host, int64_t to, int64_t bytes);

  /// Copies the step's inputs to the GPU and enqueues the step (its graph,
  /// or the plan), leaving the logits on the device.
  void enqueueStep(const StepBatch &batch);
  /// Enqueues every step of the plan on the stream.
  void runPlan(const SymbolValues &symbols);
  /// Captures the plan for decode steps of `batchSize` sequences as a CUDA
  /// graph, kept for the steps of that size after this one.
  void captureGraph(int64_t batchSize, const SymbolValues &symbols);

  const Artifact &artifact;
  StepPlan plan;
  const CudaDriver &driver;
  Gpu gpu;
  PrimaryContext context;
  /// Everything allocated on the device, released (in order, the context
  /// current) before the context is.
  std::unique_ptr<DeviceState> state;
  DeviceKvStorage kvStorage{*this};
  std::unique_ptr<KvBlockPool> pool;
};

} // namespace llmc::runtime::cuda

#endif // LLMC_RUNTIME_CUDA_CUDAEXECUTOR_H
