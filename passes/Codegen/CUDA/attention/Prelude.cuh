// Prelude.cuh - what only the GPU build of the attention kernels needs: the
// WMMA header, storage conversions and the tensor-core mma in PTX. The host
// emulation the tests run the kernels with (python/llmc/testing/
// cuda_emulation.h) defines LLMC_CUDA_EMULATION and gives its own. Embedded into llm-lower-to-cuda
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

/// d += a b for one m16n8k16 tile on tensor cores, f32 accumulation, in the
/// PTX fragment layout (python/llmc/testing/cuda_emulation.h spells it out).
template <bool BF16>
__device__ __forceinline__ void mma_16816(float d[4], const unsigned a[4], const unsigned b[2]) {
  if (BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <bool BF16> __device__ __forceinline__ storage_t from_f32(float f) {
  storage_t h;
  if (BF16) asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#endif
