// Prelude.cuh - what only the GPU build of the attention kernels needs: the
// WMMA header and storage conversions in PTX. The host emulation the tests
// run the kernels with (python/llmc/testing/cuda_emulation.h) defines
// LLMC_CUDA_EMULATION and gives its own. Embedded into llm-lower-to-cuda
// (CudaAttention.cpp) at build time; the artifact's attention.cu starts here.

#ifndef LLMC_CUDA_EMULATION
#include <mma.h>
#define INFINITY __int_as_float(0x7f800000)
typedef unsigned short storage_t;

template <bool BF16> __device__ __forceinline__ float to_f32(storage_t v) {
  if (BF16) return __uint_as_float(((unsigned)v) << 16);
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}

template <bool BF16> __device__ __forceinline__ storage_t from_f32(float f) {
  storage_t h;
  if (BF16) asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif
