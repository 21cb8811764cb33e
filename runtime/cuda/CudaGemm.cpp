//===- CudaGemm.cpp - the step plan's GEMMs on cuBLASLt -------------------===//
#include "runtime/cuda/CudaGemm.h"

#include "llmc/Runtime/StepPlanSchema.h"
#include "runtime/core/Error.h"

#include <string>

namespace llmc::runtime::cuda {
namespace {
using MatmulDesc =
    std::unique_ptr<cublasLtMatmulDescOpaque_t, decltype(&::cublasLtMatmulDescDestroy)>;
using Layout =
    std::unique_ptr<cublasLtMatrixLayoutOpaque_t, decltype(&::cublasLtMatrixLayoutDestroy)>;
using Preference =
    std::unique_ptr<cublasLtMatmulPreferenceOpaque_t, decltype(&::cublasLtMatmulPreferenceDestroy)>;

cudaDataType_t cudaType(DType dtype) {
  switch (dtype) {
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F16:
    return CUDA_R_16F;
  case DType::F32:
    return CUDA_R_32F;
  }
  return CUDA_R_32F;
}

/// The largest power of two up to 256 that divides `address`: what
/// cuBLASLt's heuristics may assume of an operand (they assume 256 unless told).
uint32_t alignmentOf(uint64_t address) {
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0)
    alignment /= 2;
  return alignment;
}

int64_t nextPowerOfTwo(int64_t value) {
  int64_t power = 1;
  while (power < value)
    power *= 2;
  return power;
}

} // namespace

/// One gemm step, ready to run: its descriptors and operand addresses.
struct CudaGemms::Prepared {
  const GemmStep *gemm = nullptr;
  std::string where;
  MatmulDesc desc{nullptr, nullptr};
  // first = B, second = A (CudaGemm.h); c is null when the step has no C.
  Layout first{nullptr, nullptr}, second{nullptr, nullptr}, c{nullptr, nullptr},
      d{nullptr, nullptr};
  uint64_t firstAddress = 0, secondAddress = 0, cAddress = 0, dAddress = 0, biasAddress = 0;
  /// Whether the GEMV kernel can take it (up to kGemvMaxRows rows): B is
  /// [n, k], and A and B are rows of whole 16-byte vectors.
  bool gemvFits = false;
  AlgorithmKey key{};
  /// The m the layouts were last set for.
  int64_t m = 0;

  /// Sets the column count of the m-wide layouts (A^T, C^T, D^T).
  void setM(const CublasLt &lt, int64_t newM) {
    if (newM == m) return;
    uint64_t columns = static_cast<uint64_t>(newM);
    for (const Layout *layout : {&second, &c, &d}) {
      if (!*layout) continue;
      cublasStatus_t status = lt.cublasLtMatrixLayoutSetAttribute(
          layout->get(), CUBLASLT_MATRIX_LAYOUT_COLS, &columns, sizeof(columns));
      if (status != CUBLAS_STATUS_SUCCESS)
        lt.check(status, where + ": cublasLtMatrixLayoutSetAttribute");
    }
    m = newM;
  }
};

CudaGemms::CudaGemms(const CudaDriver &driver, const CublasLt &cublasLt, const StepPlan &plan,
                     DType storageDtype, const PerBuffer<uint64_t> &addresses,
                     CUdeviceptr workspace, const SymbolValues &limits, CUfunction gemv)
    : driver(driver), lt(cublasLt), gemv(gemv), handle(nullptr, cublasLt.cublasLtDestroy),
      workspace(workspace) {
  cublasLtHandle_t created = nullptr;
  lt.check(lt.cublasLtCreate(&created), "cublasLtCreate");
  handle.reset(created);

  auto address = [&](const Location &location) {
    return at(addresses, location.buffer) + static_cast<uint64_t>(location.offset);
  };
  auto makeLayout = [&](const std::string &where, DType dtype, int64_t rows, int64_t columns,
                        int64_t ld) {
    cublasLtMatrixLayout_t layout = nullptr;
    lt.check(lt.cublasLtMatrixLayoutCreate(&layout, cudaType(dtype), uint64_t(rows),
                                           uint64_t(columns), ld),
             where + ": cublasLtMatrixLayoutCreate");
    return Layout(layout, lt.cublasLtMatrixLayoutDestroy);
  };

  byStep.resize(plan.steps.size());
  for (size_t index = 0; index < plan.steps.size(); ++index) {
    const auto *gemm = std::get_if<GemmStep>(&plan.steps[index].op);
    if (!gemm) continue;
    auto prepared = std::make_unique<Prepared>();
    Prepared &p = *prepared;
    p.gemm = gemm;
    p.where = plan.steps[index].where + " (gemm)";

    cublasLtMatmulDesc_t desc = nullptr;
    lt.check(lt.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
             p.where + ": cublasLtMatmulDescCreate");
    p.desc = MatmulDesc(desc, lt.cublasLtMatmulDescDestroy);
    auto setDesc = [&](cublasLtMatmulDescAttributes_t attribute, const void *value, size_t size) {
      lt.check(lt.cublasLtMatmulDescSetAttribute(desc, attribute, value, size),
               p.where + ": cublasLtMatmulDescSetAttribute");
    };
    int32_t transposeFirst = gemm->bIsNByK ? CUBLAS_OP_T : CUBLAS_OP_N;
    int32_t transposeSecond = CUBLAS_OP_N;
    setDesc(CUBLASLT_MATMUL_DESC_TRANSA, &transposeFirst, sizeof(transposeFirst));
    setDesc(CUBLASLT_MATMUL_DESC_TRANSB, &transposeSecond, sizeof(transposeSecond));
    uint64_t &biasAddress = p.biasAddress;
    if (gemm->bias) {
      uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
      biasAddress = address(*gemm->bias);
      const void *biasPointer = reinterpret_cast<const void *>(biasAddress);
      int32_t biasType = cudaType(storageDtype);
      setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
      setDesc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &biasPointer, sizeof(biasPointer));
      setDesc(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof(biasType));
    }

    // The m-wide layouts start one column wide; run() sets the step's m.
    p.m = 1;
    p.first = gemm->bIsNByK ? makeLayout(p.where, storageDtype, gemm->k, gemm->n, gemm->ldb)
                            : makeLayout(p.where, storageDtype, gemm->n, gemm->k, gemm->ldb);
    p.second = makeLayout(p.where, storageDtype, gemm->k, 1, gemm->lda);
    p.d = makeLayout(p.where, gemm->dDtype, gemm->n, 1, gemm->ldd);
    if (gemm->c) p.c = makeLayout(p.where, storageDtype, gemm->n, 1, gemm->ldc);
    p.firstAddress = address(gemm->b);
    p.secondAddress = address(gemm->a);
    p.dAddress = address(gemm->d);
    // Without C, beta is 0 and cuBLASLt reads nothing; D stands in for it.
    p.cAddress = gemm->c ? address(*gemm->c) : p.dAddress;
    p.gemvFits = gemm->bIsNByK && gemm->k % 8 == 0 && gemm->lda % 8 == 0 &&
                 gemm->ldb % 8 == 0 && p.firstAddress % 16 == 0 && p.secondAddress % 16 == 0;

    p.key = AlgorithmKey{0,
                         gemm->n,
                         gemm->k,
                         gemm->lda,
                         gemm->ldb,
                         gemm->c ? gemm->ldc : gemm->ldd,
                         gemm->ldd,
                         gemm->bIsNByK,
                         gemm->bias.has_value(),
                         gemm->c.has_value(),
                         gemm->dDtype,
                         alignmentOf(p.firstAddress),
                         alignmentOf(p.secondAddress),
                         alignmentOf(p.cAddress),
                         alignmentOf(p.dAddress),
                         alignmentOf(biasAddress)};
    // Choose now for every bucket the step can reach, not in the first steps.
    int64_t largest = nextPowerOfTwo(gemm->m.resolve(limits));
    for (int64_t bucket = 1; bucket <= largest; bucket *= 2)
      algorithm(p, bucket);
    byStep[index] = std::move(prepared);
  }
}

CudaGemms::~CudaGemms() = default;

const cublasLtMatmulAlgo_t &CudaGemms::algorithm(Prepared &p, int64_t mBucket) {
  AlgorithmKey key = p.key;
  key.mBucket = mBucket;
  auto found = algorithms.find(key);
  if (found != algorithms.end()) return found->second;

  cublasLtMatmulPreference_t created = nullptr;
  lt.check(lt.cublasLtMatmulPreferenceCreate(&created),
           p.where + ": cublasLtMatmulPreferenceCreate");
  Preference preference(created, lt.cublasLtMatmulPreferenceDestroy);
  auto prefer = [&](cublasLtMatmulPreferenceAttributes_t attribute, const void *value,
                    size_t size) {
    lt.check(lt.cublasLtMatmulPreferenceSetAttribute(created, attribute, value, size),
             p.where + ": cublasLtMatmulPreferenceSetAttribute");
  };
  uint64_t workspaceBytes = kWorkspaceBytes;
  prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes, sizeof(workspaceBytes));
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &key.alignFirst, sizeof(uint32_t));
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &key.alignSecond, sizeof(uint32_t));
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &key.alignC, sizeof(uint32_t));
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &key.alignD, sizeof(uint32_t));

  p.setM(lt, mBucket);
  cublasLtMatmulHeuristicResult_t result{};
  int count = 0;
  lt.check(lt.cublasLtMatmulAlgoGetHeuristic(handle.get(), p.desc.get(), p.first.get(),
                                             p.second.get(), p.c ? p.c.get() : p.d.get(), p.d.get(),
                                             created, 1, &result, &count),
           p.where + ": cublasLtMatmulAlgoGetHeuristic");
  if (count < 1 || result.state != CUBLAS_STATUS_SUCCESS)
    throw Error(p.where + ": cuBLASLt has no algorithm for m " + str(mBucket) + ", n " +
                str(p.gemm->n) + ", k " + str(p.gemm->k) + " with b_layout " +
                (p.gemm->bIsNByK ? "nk" : "kn") + ", d_dtype " + dtypeName(p.gemm->dDtype) +
                (p.gemm->bias ? ", a bias" : "") + (p.gemm->c ? ", c" : "") + " on this GPU");
  return algorithms.emplace(key, result.algo).first->second;
}

void CudaGemms::runGemv(const Prepared &p, int64_t m, CUstream stream) {
  const GemmStep &gemm = *p.gemm;
  CUdeviceptr a = p.secondAddress, b = p.firstAddress, d = p.dAddress, bias = p.biasAddress,
              c = gemm.c ? p.cAddress : 0;
  int lda = int(gemm.lda), ldb = int(gemm.ldb), ldd = int(gemm.ldd), ldc = int(gemm.ldc);
  int dIsF32 = gemm.dDtype == DType::F32, rows = int(m), n = int(gemm.n), k = int(gemm.k);
  float beta = gemm.beta;
  void *params[] = {&a, &lda, &b, &ldb, &d, &ldd, &dIsF32, &bias, &c, &ldc, &beta, &rows, &n, &k};
  constexpr int64_t columns = stepplan::kGemvColumns;
  CUresult result = driver.cuLaunchKernel(gemv, unsigned((gemm.n + columns - 1) / columns), 1, 1,
                                          stepplan::kGemvThreads, 1, 1, 0, stream, params, nullptr);
  if (result != CUDA_SUCCESS) driver.check(result, p.where + " (GEMV, m " + str(m) + ")");
}

void CudaGemms::run(size_t stepIndex, const SymbolValues &symbols, CUstream stream) {
  Prepared &p = *byStep[stepIndex];
  int64_t m = p.gemm->m.resolve(symbols);
  if (gemv && p.gemvFits && m <= stepplan::kGemvMaxRows) {
    runGemv(p, m, stream);
    return;
  }
  const cublasLtMatmulAlgo_t &chosen = algorithm(p, nextPowerOfTwo(m));
  p.setM(lt, m);
  float alpha = 1, beta = p.gemm->beta;
  auto pointer = [](uint64_t address) { return reinterpret_cast<void *>(address); };
  cublasStatus_t status =
      lt.cublasLtMatmul(handle.get(), p.desc.get(), &alpha, pointer(p.firstAddress), p.first.get(),
                        pointer(p.secondAddress), p.second.get(), &beta, pointer(p.cAddress),
                        p.c ? p.c.get() : p.d.get(), pointer(p.dAddress), p.d.get(), &chosen,
                        pointer(workspace), kWorkspaceBytes, stream);
  if (status != CUBLAS_STATUS_SUCCESS)
    lt.check(status, p.where + ": cublasLtMatmul (m " + str(m) + ")");
}

} // namespace llmc::runtime::cuda
