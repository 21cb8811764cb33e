//===- CudaDriver.h - the CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// The runtime links no CUDA library, so that it loads where there is no GPU:
// libcuda.so.1 is opened with dlopen when a cuda artifact is run, and each
// entry point is typed by its cuda.h declaration. cuda.h maps some names to
// versioned symbols (cuMemAlloc to cuMemAlloc_v2); the members take the
// mapped names too, so `driver.cuMemAlloc(...)` calls the symbol the header
// means.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDA_CUDADRIVER_H
#define LLMC_RUNTIME_CUDA_CUDADRIVER_H

#include <cuda.h>

#include <string>

namespace llmc::runtime::cuda {

// Every driver entry point the runtime calls.
#define LLMC_CUDA_DRIVER_FUNCTIONS(X)                                                              \
  X(cuGetErrorName)                                                                                \
  X(cuGetErrorString)                                                                              \
  X(cuInit)                                                                                        \
  X(cuDriverGetVersion)                                                                            \
  X(cuDeviceGetCount)                                                                              \
  X(cuDeviceGet)                                                                                   \
  X(cuDeviceGetName)                                                                               \
  X(cuDeviceGetAttribute)                                                                          \
  X(cuDevicePrimaryCtxRetain)                                                                      \
  X(cuDevicePrimaryCtxRelease)                                                                     \
  X(cuCtxPushCurrent)                                                                              \
  X(cuCtxPopCurrent)                                                                               \
  X(cuStreamCreate)                                                                                \
  X(cuStreamDestroy)                                                                               \
  X(cuStreamSynchronize)                                                                           \
  X(cuStreamBeginCapture)                                                                          \
  X(cuStreamEndCapture)                                                                            \
  X(cuMemGetInfo)                                                                                  \
  X(cuMemAlloc)                                                                                    \
  X(cuMemFree)                                                                                     \
  X(cuMemHostAlloc)                                                                                \
  X(cuMemFreeHost)                                                                                 \
  X(cuMemcpyHtoD)                                                                                  \
  X(cuMemcpyHtoDAsync)                                                                             \
  X(cuMemcpyDtoHAsync)                                                                             \
  X(cuMemcpyDtoDAsync)                                                                             \
  X(cuMemsetD8)                                                                                    \
  X(cuModuleLoadDataEx)                                                                            \
  X(cuModuleUnload)                                                                                \
  X(cuModuleGetFunction)                                                                           \
  X(cuFuncSetAttribute)                                                                            \
  X(cuLaunchKernel)                                                                                \
  X(cuGraphInstantiate)                                                                            \
  X(cuGraphDestroy)                                                                                \
  X(cuGraphExecDestroy)                                                                            \
  X(cuGraphLaunch)

/// libcuda.so.1's entry points. One per process, loaded on first use and
/// never unloaded.
class CudaDriver {
public:
  /// The driver; throws Error "no NVIDIA driver on this machine (<dlerror>)"
  /// when libcuda.so.1 cannot be opened, or names the entry point an old
  /// driver lacks.
  static const CudaDriver &get();

#define LLMC_CUDA_DECLARE_ENTRY_POINT(name) decltype(&::name) name = nullptr;
  LLMC_CUDA_DRIVER_FUNCTIONS(LLMC_CUDA_DECLARE_ENTRY_POINT)
#undef LLMC_CUDA_DECLARE_ENTRY_POINT

  /// "CUDA_ERROR_OUT_OF_MEMORY: out of memory".
  std::string describe(CUresult result) const;
  /// Throws Error "<what>: <describe(result)>" unless result is CUDA_SUCCESS.
  void check(CUresult result, const std::string &what) const;

private:
  CudaDriver();
};

/// Makes a context current on the calling thread for its lifetime: the
/// driver's current context is per thread, and the model is used from
/// whichever thread calls it.
class ScopedContext {
public:
  ScopedContext(const CudaDriver &driver, CUcontext context);
  ~ScopedContext();
  ScopedContext(const ScopedContext &) = delete;
  ScopedContext &operator=(const ScopedContext &) = delete;

private:
  const CudaDriver &driver;
};

/// A device's primary context (the one the CUDA runtime, and so cuBLASLt,
/// uses too), retained for the object's lifetime.
class PrimaryContext {
public:
  PrimaryContext(const CudaDriver &driver, CUdevice device);
  ~PrimaryContext();
  PrimaryContext(const PrimaryContext &) = delete;
  PrimaryContext &operator=(const PrimaryContext &) = delete;

  CUcontext get() const { return context; }

private:
  const CudaDriver &driver;
  CUdevice device;
  CUcontext context = nullptr;
};

/// Owns one driver object (device memory, a module, a stream, a graph) and
/// releases it on destruction with the driver call given, which returns
/// CUresult; the owner of the Owned keeps the context current meanwhile.
template <typename Handle> class Owned {
public:
  using Release = CUresult (*)(Handle);

  Owned() = default;
  Owned(Handle handle, Release release) : handle(handle), release(release) {}
  ~Owned() { reset(); }
  Owned(Owned &&other) noexcept : handle(other.handle), release(other.release) {
    other.handle = Handle();
  }
  Owned &operator=(Owned &&other) noexcept {
    if (this != &other) {
      reset();
      handle = other.handle;
      release = other.release;
      other.handle = Handle();
    }
    return *this;
  }
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;

  Handle get() const { return handle; }

private:
  void reset() {
    if (handle) release(handle);
    handle = Handle();
  }

  Handle handle = Handle();
  Release release = nullptr;
};

} // namespace llmc::runtime::cuda

#endif // LLMC_RUNTIME_CUDA_CUDADRIVER_H
