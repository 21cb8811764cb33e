// A host emulation of the CUDA features the generated attention kernels use,
// so that their source runs on a CPU in the tests: the same text NVRTC
// compiles, the same indexing, masking and synchronisation.
//
// Each thread of a block is a fiber (ucontext) on one OS thread. A fiber
// runs until it reaches a barrier, so a read of shared memory that another
// thread writes without a barrier between sees the old value, and the test
// fails, as it might on a GPU. Between block barriers one warp at a time
// runs as far as it can, so warps race as they may on a GPU; even blocks
// run their threads first to last, odd ones last to first. Barriers are checked: a block whose threads
// wait at different barriers is a divergence error. Blocks run one after
// another, so __shared__ is a static. A fault (a divergent barrier, a
// misaligned WMMA access) ends the launch with a message.
//
// WMMA fragments hold the whole 16x16 tile in every lane (their layout is
// opaque, so a kernel cannot tell). A store writes each element from one
// lane only, so reading another lane's elements without __syncwarp() fails.
// Products accumulate in float, as the tensor cores do.
#ifndef LLMC_CUDA_EMULATION_H
#define LLMC_CUDA_EMULATION_H

#define LLMC_CUDA_EMULATION 1

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <ucontext.h>

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(threads)
#define __shared__ static
#define __align__(bytes) __attribute__((aligned(bytes)))

using std::max;
using std::min;

typedef unsigned short storage_t;

template <bool BF16> inline float to_f32(storage_t v) {
  if (BF16) {
    uint32_t bits = static_cast<uint32_t>(v) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  _Float16 h;
  std::memcpy(&h, &v, 2);
  return static_cast<float>(h);
}

/// Round to nearest even, as cvt.rn does.
template <bool BF16> inline storage_t from_f32(float f) {
  if (BF16) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if (std::isnan(f)) return 0x7fc0;
    bits += 0x7fff + ((bits >> 16) & 1);
    return static_cast<storage_t>(bits >> 16);
  }
  _Float16 h = static_cast<_Float16>(f);
  storage_t v;
  std::memcpy(&v, &h, 2);
  return v;
}

struct __nv_bfloat16 {
  storage_t bits;
  float value() const { return to_f32<true>(bits); }
};
struct __half {
  storage_t bits;
  float value() const { return to_f32<false>(bits); }
};

namespace llmc_emulation {

struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};

/// One launch: the block being run and its threads.
class Launch {
public:
  enum class State { Runnable, AtBlockBarrier, AtWarpBarrier, Done };
  struct Thread {
    ucontext_t context;
    std::unique_ptr<char[]> stack;
    uint3 index;
    State state = State::Runnable;
  };

  Launch(uint3 grid, uint3 block, std::function<void()> kernel)
      : grid(grid), block(block), kernel(std::move(kernel)) {}

  /// Runs every block; the first fault's message, or "" when none.
  std::string run() {
    const unsigned size = block.x * block.y * block.z;
    if (size % 32) return "a block that is not whole warps";
    threads.resize(size);
    exchangeSlots.assign(size, {});
    for (Thread &thread : threads) thread.stack.reset(new char[kStackBytes]);
    for (blockIdx.z = 0; blockIdx.z < grid.z; ++blockIdx.z)
      for (blockIdx.y = 0; blockIdx.y < grid.y; ++blockIdx.y)
        for (blockIdx.x = 0; blockIdx.x < grid.x && error.empty(); ++blockIdx.x) runBlock();
    return error;
  }

  static Launch *&active() {
    static Launch *launch = nullptr;
    return launch;
  }
  Thread &current() { return threads[currentThread]; }

  /// Ends the launch with `what`: a thread's fault leaves it for good (the
  /// other threads are abandoned with it).
  void fault(const char *what) {
    if (error.empty()) error = what;
    if (inThread) swapcontext(&current().context, &scheduler);
  }
  unsigned lane() const { return currentThread % 32; }

  /// Waits until every live thread of the block (or of the warp) is here.
  void barrier(State kind) {
    current().state = kind;
    swapcontext(&current().context, &scheduler);
  }

  /// Every lane of the warp gets every lane's `mine` in `all` (a warp-wide
  /// operation such as mma.sync reads the whole warp's fragments).
  template <typename T> void exchange(const T &mine, T (&all)[32]) {
    static_assert(sizeof(T) <= kExchangeBytes, "an exchanged value is at most 64 bytes");
    const unsigned warpBase = currentThread - lane();
    std::memcpy(exchangeSlots[currentThread].data(), &mine, sizeof(T));
    barrier(State::AtWarpBarrier);
    for (unsigned l = 0; l < 32; ++l)
      std::memcpy(&all[l], exchangeSlots[warpBase + l].data(), sizeof(T));
    barrier(State::AtWarpBarrier);
  }

  template <typename T> T shuffleXor(T value, int laneMask) {
    T all[32];
    exchange(value, all);
    return all[lane() ^ laneMask];
  }

  uint3 grid, block, blockIdx;

private:
  static constexpr size_t kExchangeBytes = 64;
  static constexpr size_t kStackBytes = 512 * 1024;

  static void entry() {
    Launch &launch = *active();
    launch.kernel();
    launch.current().state = State::Done;
    swapcontext(&launch.current().context, &launch.scheduler);
  }

  void runBlock() {
    for (unsigned i = 0; i < threads.size(); ++i) {
      Thread &thread = threads[i];
      thread.index = {i % block.x, i / block.x % block.y, i / (block.x * block.y)};
      thread.state = State::Runnable;
      getcontext(&thread.context);
      thread.context.uc_stack.ss_sp = thread.stack.get();
      thread.context.uc_stack.ss_size = kStackBytes;
      thread.context.uc_link = nullptr;
      makecontext(&thread.context, &Launch::entry, 0);
    }
    // Odd blocks run their threads last to first, so a missing barrier shows
    // whichever of writer and reader has the lower index.
    const bool reversed = (blockIdx.x + blockIdx.y + blockIdx.z) % 2;
    for (;;) {
      for (unsigned i = 0; i < threads.size(); ++i) {
        currentThread = reversed ? threads.size() - 1 - i : i;
        if (current().state != State::Runnable) continue;
        inThread = true;
        swapcontext(&scheduler, &current().context);
        inThread = false;
        if (!error.empty()) return;
      }
      if (!release(reversed)) return;
    }
  }

  /// Releases one warp whose live threads all wait at a warp barrier (the
  /// first in this block's order, so it runs as far ahead of the others as
  /// it can), else the block when all its live threads wait at the block
  /// barrier. False when every thread is done.
  bool release(bool reversed) {
    const unsigned warps = threads.size() / 32;
    bool anyLive = false, allAtBlock = true;
    for (unsigned w = 0; w < warps; ++w) {
      const unsigned warp = (reversed ? warps - 1 - w : w) * 32;
      bool live = false, allAtWarp = true;
      for (unsigned i = warp; i < warp + 32; ++i) {
        State state = threads[i].state;
        if (state == State::Done) continue;
        live = true;
        allAtWarp &= state == State::AtWarpBarrier;
        allAtBlock &= state == State::AtBlockBarrier;
      }
      anyLive |= live;
      if (live && allAtWarp) {
        for (unsigned i = warp; i < warp + 32; ++i)
          if (threads[i].state == State::AtWarpBarrier) threads[i].state = State::Runnable;
        return true;
      }
    }
    if (!anyLive) return false;
    if (!allAtBlock) {
      fault("threads wait at different barriers (divergent __syncthreads or __syncwarp)");
      return false;
    }
    for (Thread &thread : threads)
      if (thread.state == State::AtBlockBarrier) thread.state = State::Runnable;
    return true;
  }

  std::function<void()> kernel;
  std::vector<Thread> threads;
  std::vector<std::array<unsigned char, kExchangeBytes>> exchangeSlots;
  unsigned currentThread = 0;
  bool inThread = false;
  std::string error;
  ucontext_t scheduler;
};

/// Runs `kernel` (a call of a __global__ function) over grid x block; the
/// fault that ended it, or "".
inline std::string launch(uint3 grid, uint3 block, std::function<void()> kernel) {
  Launch run(grid, block, std::move(kernel));
  Launch::active() = &run;
  std::string error = run.run();
  Launch::active() = nullptr;
  return error;
}

inline void fault(const char *what) { Launch::active()->fault(what); }

} // namespace llmc_emulation

#define threadIdx (::llmc_emulation::Launch::active()->current().index)
#define blockIdx (::llmc_emulation::Launch::active()->blockIdx)
#define blockDim (::llmc_emulation::Launch::active()->block)
#define gridDim (::llmc_emulation::Launch::active()->grid)

inline void __syncthreads() {
  ::llmc_emulation::Launch::active()->barrier(::llmc_emulation::Launch::State::AtBlockBarrier);
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  ::llmc_emulation::Launch::active()->barrier(::llmc_emulation::Launch::State::AtWarpBarrier);
}
/// Fibers switch only at barriers, so a plain read-modify-write is atomic.
template <typename T> T atomicAdd(T *address, T value) {
  T old = *address;
  *address = old + value;
  return old;
}
template <typename T> T __shfl_xor_sync(unsigned, T value, int laneMask) {
  return ::llmc_emulation::Launch::active()->shuffleXor(value, laneMask);
}

/// mma.sync.aligned.m16n8k16.row.col.f32 with bf16 (or f16) operands:
/// d += a b over the warp's fragments, in the PTX ISA's layout. Lane l holds
/// (g = l / 4, t = l % 4): a = A[g][2t..2t+1], A[g+8][2t..], A[g][2t+8..],
/// A[g+8][2t+8..] (two elements a register, the lower index in the low half);
/// b = B[2t..2t+1][g], B[2t+8..2t+9][g]; d = D[g][2t..2t+1], D[g+8][2t..2t+1].
template <bool BF16> void mma_16816(float d[4], const unsigned a[4], const unsigned b[2]) {
  struct Fragments {
    unsigned a[4], b[2];
  };
  Fragments mine{{a[0], a[1], a[2], a[3]}, {b[0], b[1]}}, all[32];
  ::llmc_emulation::Launch::active()->exchange(mine, all);
  auto half = [](unsigned reg, int k) { return to_f32<BF16>(static_cast<storage_t>(reg >> (16 * (k & 1)))); };
  auto aAt = [&](int row, int k) {
    return half(all[(row % 8) * 4 + (k % 8) / 2].a[(row >= 8) + 2 * (k >= 8)], k);
  };
  auto bAt = [&](int k, int col) { return half(all[col * 4 + (k % 8) / 2].b[k >= 8], k); };
  const unsigned lane = ::llmc_emulation::Launch::active()->lane();
  for (int e = 0; e < 4; ++e) {
    const int row = lane / 4 + 8 * (e / 2), col = lane % 4 * 2 + e % 2;
    float sum = d[e];
    for (int k = 0; k < 16; ++k) sum += aAt(row, k) * bAt(k, col);
    d[e] = sum;
  }
}

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

/// The whole M x N (a: M x K, b: K x N) tile, row-major, in float.
template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
  static constexpr int kRows = std::is_same_v<Use, matrix_a> ? M : std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int kCols = std::is_same_v<Use, matrix_a> ? K : N;
  float x[kRows * kCols];
};

template <typename Use, int M, int N, int K, typename T, typename Layout>
void fill_fragment(fragment<Use, M, N, K, T, Layout> &f, float value) {
  std::fill(std::begin(f.x), std::end(f.x), value);
}

template <typename Use, int M, int N, int K, typename T, typename Layout>
void load_matrix_sync(fragment<Use, M, N, K, T, Layout> &f, const T *p, unsigned ldm) {
  using F = fragment<Use, M, N, K, T, Layout>;
  if (reinterpret_cast<uintptr_t>(p) % 32) ::llmc_emulation::fault("a WMMA load from an address not 32-byte aligned");
  if (ldm % 8) ::llmc_emulation::fault("a WMMA load whose ldm is not a multiple of 8 (16-bit elements)");
  for (int r = 0; r < F::kRows; ++r)
    for (int c = 0; c < F::kCols; ++c)
      f.x[r * F::kCols + c] =
          (std::is_same_v<Layout, row_major> ? p[r * ldm + c] : p[c * ldm + r]).value();
}

template <int M, int N, int K, typename T, typename LA, typename LB>
void mma_sync(fragment<accumulator, M, N, K, float> &d, const fragment<matrix_a, M, N, K, T, LA> &a,
              const fragment<matrix_b, M, N, K, T, LB> &b,
              const fragment<accumulator, M, N, K, float> &c) {
  float result[M * N];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float sum = c.x[i * N + j];
      for (int k = 0; k < K; ++k) sum += a.x[i * K + k] * b.x[k * N + j];
      result[i * N + j] = sum;
    }
  std::copy(std::begin(result), std::end(result), d.x);
}

template <int M, int N, int K>
void store_matrix_sync(float *p, const fragment<accumulator, M, N, K, float> &f, unsigned ldm,
                       layout_t layout) {
  if (reinterpret_cast<uintptr_t>(p) % 32) ::llmc_emulation::fault("a WMMA store to an address not 32-byte aligned");
  if (ldm % 4) ::llmc_emulation::fault("a WMMA store whose ldm is not a multiple of 4 (floats)");
  const unsigned lane = ::llmc_emulation::Launch::active()->lane();
  for (int i = lane; i < M * N; i += 32) {
    const int r = i / N, c = i % N;
    p[layout == mem_row_major ? r * ldm + c : c * ldm + r] = f.x[i];
  }
}

} // namespace nvcuda::wmma

#endif // LLMC_CUDA_EMULATION_H
