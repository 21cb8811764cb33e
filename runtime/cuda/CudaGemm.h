//===- CudaGemm.h - the step plan's GEMMs on cuBLASLt -----------*- C++ -*-===//
//
// A plan gemm is row-major: D[m, n] = A[m, k] . B (+ bias) (+ beta C).
// cuBLASLt is column-major, and a row-major [r, c] matrix is a column-major
// [c, r] one, so it computes D^T[n, m] = B^T . A^T: B goes first (b_layout
// "nk", row-major [n, k], is column-major [k, n] with ld = ldb, transposed;
// "kn" is column-major [n, k], as is), A second (column-major [k, m],
// ld = lda), C and D are column-major [n, m] (ld = ldc, ldd), and the bias,
// of length n, runs along D^T's rows as cuBLASLt's bias epilogue wants.
//
// Given the attention module's GEMV kernel (attention/Gemv.cuh), a gemm of a
// decode step (m up to stepplan::kGemvMaxRows) with B [n, k] runs on it
// instead.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDA_CUDAGEMM_H
#define LLMC_RUNTIME_CUDA_CUDAGEMM_H

#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/CudaDriver.h"
#include "runtime/cuda/StepPlan.h"

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

namespace llmc::runtime::cuda {

/// The plan's GEMMs: a cuBLASLt handle, descriptors made once per gemm step
/// (its operands sit at fixed addresses; only m changes from step to step),
/// and the algorithm cublasLtMatmulAlgoGetHeuristic picks, chosen once per
/// shape and power-of-two bucket of m and cached. The context must be current
/// on the calling thread for every call, the destructor's included.
class CudaGemms {
public:
  /// cuBLASLt's workspace, shared by every GEMM of the stream.
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  /// Prepares every gemm of `plan` and chooses its algorithms for each bucket
  /// of m up to its value at `limits` (the symbols at the model's limits).
  /// `workspace` is kWorkspaceBytes of device memory. `gemv` is the GEMV
  /// kernel of `storageDtype`, or null to run every gemm on cuBLASLt.
  CudaGemms(const CudaDriver &driver, const CublasLt &cublasLt, const StepPlan &plan,
            DType storageDtype, const PerBuffer<uint64_t> &addresses, CUdeviceptr workspace,
            const SymbolValues &limits, CUfunction gemv);
  ~CudaGemms();
  CudaGemms(const CudaGemms &) = delete;
  CudaGemms &operator=(const CudaGemms &) = delete;

  /// Enqueues the gemm of plan step `stepIndex` on `stream`: the GEMV kernel
  /// where it serves the step's m, else cuBLASLt, where an m past every
  /// bucket chosen at load has its algorithm chosen now.
  void run(size_t stepIndex, const SymbolValues &symbols, CUstream stream);

private:
  struct Prepared;
  /// What decides the algorithm: the shape, layouts, types, epilogue and the
  /// operands' alignment, with m rounded up to a power of two.
  struct AlgorithmKey {
    int64_t mBucket, n, k, lda, ldb, ldc, ldd;
    bool bIsNByK, hasBias, hasC;
    DType dDtype;
    uint32_t alignFirst, alignSecond, alignC, alignD, alignBias;

    auto tie() const {
      return std::tie(mBucket, n, k, lda, ldb, ldc, ldd, bIsNByK, hasBias, hasC, dDtype, alignFirst,
                      alignSecond, alignC, alignD, alignBias);
    }
    bool operator<(const AlgorithmKey &other) const { return tie() < other.tie(); }
  };

  const cublasLtMatmulAlgo_t &algorithm(Prepared &gemm, int64_t mBucket);
  void runGemv(const Prepared &gemm, int64_t m, CUstream stream);

  const CudaDriver &driver;
  const CublasLt &lt;
  CUfunction gemv;
  std::unique_ptr<cublasLtContext, decltype(&::cublasLtDestroy)> handle;
  CUdeviceptr workspace;
  /// One per plan step; null for launches.
  std::vector<std::unique_ptr<Prepared>> byStep;
  std::map<AlgorithmKey, cublasLtMatmulAlgo_t> algorithms;
};

} // namespace llmc::runtime::cuda

#endif // LLMC_RUNTIME_CUDA_CUDAGEMM_H
