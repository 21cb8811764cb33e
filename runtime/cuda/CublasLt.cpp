//===- CublasLt.cpp - dlopen libcublasLt and resolve its entry points -----===//
#include "runtime/cuda/CublasLt.h"

#include "runtime/core/Error.h"

#include <dlfcn.h>

#include <algorithm>
#include <type_traits>
#include <vector>

namespace llmc::runtime::cuda {

CublasLt::CublasLt(int driverMajor) {
  std::vector<std::string> names;
  for (std::string name :
       {"libcublasLt.so." + std::to_string(driverMajor), std::string("libcublasLt.so.13"),
        std::string("libcublasLt.so.12"), std::string("libcublasLt.so")})
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  std::vector<std::string> candidates = names;
  for (const std::string &name : names)
    candidates.push_back("/usr/local/cuda/lib64/" + name);

  void *library = nullptr;
  std::string libraryName, firstError;
  for (const std::string &candidate : candidates) {
    library = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library) {
      libraryName = candidate;
      break;
    }
    if (firstError.empty()) firstError = ::dlerror();
  }
  if (!library)
    throw Error("cuBLASLt is not on this machine (" + firstError +
                "): install CUDA's cuBLAS or add its lib64 directory to LD_LIBRARY_PATH");
  auto resolve = [&](auto &entryPoint, const char *symbol) {
    void *address = ::dlsym(library, symbol);
    if (!address) {
      ::dlclose(library);
      throw Error(libraryName + " lacks " + symbol + ": it is too old for this runtime");
    }
    entryPoint = reinterpret_cast<std::remove_reference_t<decltype(entryPoint)>>(address);
  };
#define LLMC_CUBLASLT_RESOLVE_ENTRY_POINT(name) resolve(name, #name);
  LLMC_CUBLASLT_FUNCTIONS(LLMC_CUBLASLT_RESOLVE_ENTRY_POINT)
#undef LLMC_CUBLASLT_RESOLVE_ENTRY_POINT
}

const CublasLt &CublasLt::get(int driverMajor) {
  // A failed load throws out of the initialisation, so the next call retries.
  static const CublasLt cublasLt(driverMajor);
  return cublasLt;
}

std::string CublasLt::describe(cublasStatus_t status) const {
  const char *name = cublasLtGetStatusName(status);
  const char *text = cublasLtGetStatusString(status);
  std::string description = name ? name : "cuBLAS status " + std::to_string(int(status));
  return text ? description + ": " + text : description;
}

void CublasLt::check(cublasStatus_t status, const std::string &what) const {
  if (status != CUBLAS_STATUS_SUCCESS) throw Error(what + ": " + describe(status));
}

} // namespace llmc::runtime::cuda
