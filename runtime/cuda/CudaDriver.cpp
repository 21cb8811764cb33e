//===- CudaDriver.cpp - dlopen libcuda.so.1 and resolve its entry points ---===//
#include "runtime/cuda/CudaDriver.h"

#include "runtime/core/Error.h"

#include <dlfcn.h>

#include <type_traits>

// Two steps, so that a name cuda.h maps is spelled as mapped ("cuMemAlloc_v2").
#define LLMC_CUDA_SPELL(name) #name
#define LLMC_CUDA_SYMBOL(name) LLMC_CUDA_SPELL(name)

namespace llmc::runtime::cuda {

CudaDriver::CudaDriver() {
  void *library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!library) throw Error("no NVIDIA driver on this machine (" + std::string(::dlerror()) + ")");
  auto resolve = [&](auto &entryPoint, const char *symbol) {
    void *address = ::dlsym(library, symbol);
    if (!address) {
      ::dlclose(library);
      throw Error(std::string("the NVIDIA driver (libcuda.so.1) lacks ") + symbol +
                  ": it is too old for this runtime, update it");
    }
    entryPoint = reinterpret_cast<std::remove_reference_t<decltype(entryPoint)>>(address);
  };
#define LLMC_CUDA_RESOLVE_ENTRY_POINT(name) resolve(name, LLMC_CUDA_SYMBOL(name));
  LLMC_CUDA_DRIVER_FUNCTIONS(LLMC_CUDA_RESOLVE_ENTRY_POINT)
#undef LLMC_CUDA_RESOLVE_ENTRY_POINT
}

const CudaDriver &CudaDriver::get() {
  // A failed load throws out of the initialisation, so the next call retries.
  static const CudaDriver driver;
  return driver;
}

std::string CudaDriver::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    return "CUDA error " + std::to_string(static_cast<int>(result));
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || !text) return name;
  return std::string(name) + ": " + text;
}

void CudaDriver::check(CUresult result, const std::string &what) const {
  if (result != CUDA_SUCCESS) throw Error(what + ": " + describe(result));
}

ScopedContext::ScopedContext(const CudaDriver &driver, CUcontext context) : driver(driver) {
  driver.check(driver.cuCtxPushCurrent(context), "cuCtxPushCurrent");
}

ScopedContext::~ScopedContext() {
  CUcontext popped = nullptr;
  driver.cuCtxPopCurrent(&popped);
}

PrimaryContext::PrimaryContext(const CudaDriver &driver, CUdevice device)
    : driver(driver), device(device) {
  driver.check(driver.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
}

PrimaryContext::~PrimaryContext() { driver.cuDevicePrimaryCtxRelease(device); }

} // namespace llmc::runtime::cuda
