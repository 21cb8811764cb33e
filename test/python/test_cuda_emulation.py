"""The host emulation of CUDA that runs the attention kernels in the tests
(llmc/testing/cuda_emulation.h): it must compute what a GPU computes for correct kernels,
and expose the mistakes a GPU may forgive only sometimes."""
from __future__ import annotations

import numpy as np
import pytest

from llmc.testing.cuda_emulation import EmulatedKernels

REDUCE = r"""
/// Sums `values` (blockDim.x of them per block) into sums[blockIdx.x].
extern "C" __global__ void __launch_bounds__(128)
block_sum(const float *values, float *sums) {
  __shared__ float partial[4];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  float v = values[blockIdx.x * blockDim.x + threadIdx.x];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if (lane == 0) partial[warp] = v;
  SYNC;
  if (threadIdx.x == 0) sums[blockIdx.x] = partial[0] + partial[1] + partial[2] + partial[3];
}
"""

DIVERGENT = r"""
/// Half of each warp at the block barrier, half at the warp barrier: neither can complete.
extern "C" __global__ void divergent(float *out) {
  if (threadIdx.x % 32 < 16) __syncthreads(); else __syncwarp();
  out[threadIdx.x] = 1.f;
}
"""

WMMA = r"""
namespace wmma = nvcuda::wmma;
/// c = a b for 16x16 bf16 a (row-major) and b (column-major when COL_B), at `shift` elements in.
extern "C" __global__ void product(const storage_t *a, const storage_t *b, float *c, int shift) {
  __shared__ __align__(128) storage_t s_a[16 * 16 + 16], s_b[16 * 16 + 16];
  __shared__ __align__(128) float s_c[16 * 16];
  for (int i = threadIdx.x; i < 256; i += 32) {
    s_a[shift + i] = a[i];
    s_b[shift + i] = b[i];
  }
  __syncwarp();
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.f);
  wmma::load_matrix_sync(fa, reinterpret_cast<const __nv_bfloat16 *>(s_a + shift), 16);
  wmma::load_matrix_sync(fb, reinterpret_cast<const __nv_bfloat16 *>(s_b + shift), 16);
  wmma::mma_sync(fc, fa, fb, fc);
  wmma::store_matrix_sync(s_c, fc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int i = threadIdx.x; i < 256; i += 32) c[i] = s_c[i];
}
"""


def bf16_bits(values: np.ndarray) -> np.ndarray:
    return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bf16_value(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("emulation")


def block_sums(build_dir, sync: str) -> tuple[np.ndarray, np.ndarray]:
    kernels = EmulatedKernels(REDUCE.replace("SYNC", sync), build_dir)
    values = np.random.default_rng(0).standard_normal(4 * 128).astype(np.float32)
    sums = np.zeros(4, np.float32)
    kernels.launch("block_sum", (4, 1, 1), (128, 1, 1), values, sums)
    return sums, values.reshape(4, 128).sum(axis=1)


def test_barriers_and_shuffles_compute_what_a_gpu_does(build_dir):
    sums, expected = block_sums(build_dir, "__syncthreads()")
    np.testing.assert_allclose(sums, expected, rtol=1e-5)


def test_a_missing_barrier_gives_a_wrong_result(build_dir):
    # Without the barrier thread 0 (or, in odd blocks, another warp's lane 0) reads the
    # partial sums before every warp wrote its own.
    sums, expected = block_sums(build_dir, "(void)0")
    assert not np.allclose(sums, expected, rtol=1e-5)


def test_threads_at_different_barriers_are_a_fault(build_dir):
    kernels = EmulatedKernels(DIVERGENT, build_dir)
    with pytest.raises(RuntimeError, match="different barriers"):
        kernels.launch("divergent", (1, 1, 1), (64, 1, 1), np.zeros(64, np.float32))


def test_wmma_multiplies_row_by_column_major_tiles(build_dir):
    kernels = EmulatedKernels(WMMA, build_dir)
    rng = np.random.default_rng(1)
    a, b = bf16_bits(rng.standard_normal((16, 16))), bf16_bits(rng.standard_normal((16, 16)))
    c = np.zeros((16, 16), np.float32)
    kernels.launch("product", (1, 1, 1), (32, 1, 1), a, b, c, 0)
    # b's bits read column-major are the transpose of the row-major array.
    expected = bf16_value(a).astype(np.float64) @ bf16_value(b).astype(np.float64).T
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


def test_a_misaligned_wmma_load_is_a_fault(build_dir):
    kernels = EmulatedKernels(WMMA, build_dir)
    tile = np.zeros((16, 16), np.uint16)
    with pytest.raises(RuntimeError, match="not 32-byte aligned"):
        kernels.launch("product", (1, 1, 1), (32, 1, 1), tile, tile, np.zeros((16, 16), np.float32), 8)
