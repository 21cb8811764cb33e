//===- CublasLt.h - cuBLASLt, loaded at run time ----------------*- C++ -*-===//
//
// Like the driver (CudaDriver.h), cuBLASLt is opened with dlopen when a cuda
// artifact is run, so that the runtime loads on machines without it.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDA_CUBLASLT_H
#define LLMC_RUNTIME_CUDA_CUBLASLT_H

#include <cublasLt.h>

#include <string>

namespace llmc::runtime::cuda {

// Every cuBLASLt entry point the runtime calls.
#define LLMC_CUBLASLT_FUNCTIONS(X)                                                                 \
  X(cublasLtGetVersion)                                                                            \
  X(cublasLtGetStatusName)                                                                         \
  X(cublasLtGetStatusString)                                                                       \
  X(cublasLtCreate)                                                                                \
  X(cublasLtDestroy)                                                                               \
  X(cublasLtMatmulDescCreate)                                                                      \
  X(cublasLtMatmulDescDestroy)                                                                     \
  X(cublasLtMatmulDescSetAttribute)                                                                \
  X(cublasLtMatrixLayoutCreate)                                                                    \
  X(cublasLtMatrixLayoutDestroy)                                                                   \
  X(cublasLtMatrixLayoutSetAttribute)                                                              \
  X(cublasLtMatmulPreferenceCreate)                                                                \
  X(cublasLtMatmulPreferenceDestroy)                                                               \
  X(cublasLtMatmulPreferenceSetAttribute)                                                          \
  X(cublasLtMatmulAlgoGetHeuristic)                                                                \
  X(cublasLtMatmul)

/// libcublasLt's entry points. One per process, loaded on first use and
/// never unloaded.
class CublasLt {
public:
  /// cuBLASLt, trying libcublasLt.so.<driverMajor> first (the one the driver
  /// runs for certain), then .13, .12 and libcublasLt.so, by the loader's
  /// search and in /usr/local/cuda/lib64. `driverMajor` is the CUDA major
  /// version of the driver (cuDriverGetVersion / 1000). Throws Error naming
  /// the library when none loads.
  static const CublasLt &get(int driverMajor);

#define LLMC_CUBLASLT_DECLARE_ENTRY_POINT(name) decltype(&::name) name = nullptr;
  LLMC_CUBLASLT_FUNCTIONS(LLMC_CUBLASLT_DECLARE_ENTRY_POINT)
#undef LLMC_CUBLASLT_DECLARE_ENTRY_POINT

  /// "CUBLAS_STATUS_NOT_SUPPORTED: operation not supported".
  std::string describe(cublasStatus_t status) const;
  /// Throws Error "<what>: <describe(status)>" unless status is CUBLAS_STATUS_SUCCESS.
  void check(cublasStatus_t status, const std::string &what) const;

private:
  explicit CublasLt(int driverMajor);
};

} // namespace llmc::runtime::cuda

#endif // LLMC_RUNTIME_CUDA_CUBLASLT_H
