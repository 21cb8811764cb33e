//===- StepPlan.h - step_plan.json: what one CUDA step runs -----*- C++ -*-===//
//
// The step of a cuda artifact as data (docs/cuda.md): kernel launches and
// cuBLASLt GEMMs over locations in a handful of device buffers, with
// dimensions that name a few per-step symbols. Parsing, checking, resolving
// dimensions and packing kernel parameters are plain C++, so all of it is
// tested without a GPU.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CUDA_STEPPLAN_H
#define LLMC_RUNTIME_CUDA_STEPPLAN_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace llmc::runtime::cuda {

/// The per-step values a dimension can name.
enum class Symbol { Tokens, Seqs, MaxQueryLen, BlockTableWidth, NumBlocks, PrefillTokens };

/// The symbols' values for one step.
struct SymbolValues {
  int64_t tokens = 0;          // T
  int64_t seqs = 0;            // N
  int64_t maxQueryLen = 0;     // the longest query of the step
  int64_t blockTableWidth = 0; // columns of the device block table
  int64_t numBlocks = 0;       // blocks in the KV pool

  int64_t operator[](Symbol symbol) const;
};

/// An integer of the plan: a constant, or ceil(symbol x mul / div) + add.
struct Dim {
  int64_t constant = 0;
  std::optional<Symbol> symbol;
  int64_t mul = 1;
  int64_t div = 1;
  int64_t add = 0;

  int64_t resolve(const SymbolValues &values) const;
};

/// The device buffers a location points into.
enum class Buffer {
  Weights,
  Workspace,
  Tokens,
  Positions,
  CuSeqlensQ,
  ContextLens,
  BlockTables,
  SlotMapping,
  LogitsIndices,
  KvPool,
  Logits,
};
constexpr size_t kNumBuffers = 11;
/// The name step_plan.json gives a buffer ("cu_seqlens_q").
const char *bufferName(Buffer buffer);

/// One thing per buffer, indexed by Buffer.
template <typename T> using PerBuffer = std::array<T, kNumBuffers>;
template <typename T> T &at(PerBuffer<T> &values, Buffer buffer) {
  return values[static_cast<size_t>(buffer)];
}
template <typename T> const T &at(const PerBuffer<T> &values, Buffer buffer) {
  return values[static_cast<size_t>(buffer)];
}

/// A byte offset into a buffer.
struct Location {
  Buffer buffer = Buffer::Workspace;
  int64_t offset = 0;
  /// Where the plan says it ("steps[3].args[1].memref"), for errors.
  std::string where;
};

/// One argument of a kernel launch.
struct KernelArg {
  enum class Kind { Memref, Ptr, Index, I64, I32, F32 };
  Kind kind = Kind::Index;
  Location location;               // Memref, Ptr
  std::vector<Dim> sizes, strides; // Memref
  Dim value;                       // Index, I64, I32
  float number = 0;                // F32
  std::string where;
};

/// The modules a kernel comes from: kernels.{ptx,cubin} and attention.{ptx,cubin}.
enum class Module { Kernels, Attention };
/// "kernels" or "attention", the modules' file stem.
const char *moduleName(Module module);

/// Element types of GEMM operands.
enum class DType { BF16, F16, F32 };
const char *dtypeName(DType dtype);
/// "bf16", "f16" or "f32"; nothing otherwise.
std::optional<DType> parseDType(const std::string &name);

/// `{"op": "launch", ...}`: cuLaunchKernel of `kernel` in `module`.
struct LaunchStep {
  Module module = Module::Kernels;
  std::string kernel;
  std::array<Dim, 3> grid, block;
  int64_t sharedBytes = 0;
  std::vector<KernelArg> args;
};

/// `{"op": "gemm", ...}`: row-major D[m, n] = A[m, k] . B (+ bias) (+ beta C),
/// B being [k, n] (b_layout "kn") or [n, k] ("nk"). A, B and C are the
/// storage dtype, D is dDtype.
struct GemmStep {
  Dim m;
  int64_t n = 0, k = 0;
  Location a, b, d;
  int64_t lda = 0, ldb = 0, ldd = 0;
  bool bIsNByK = false; // b_layout "nk"
  DType dDtype = DType::BF16;
  std::optional<Location> bias, c;
  int64_t ldc = 0;
  float beta = 0;
};

/// One entry of `steps`.
struct PlanStep {
  std::variant<LaunchStep, GemmStep> op;
  /// "steps[3]", for errors.
  std::string where;
};

/// step_plan.json, parsed and checked.
struct StepPlan {
  int64_t workspaceBytes = 0;
  int64_t scratchBytes = 0;
  std::vector<PlanStep> steps;

  /// Bytes of the device workspace: the planned activations then the
  /// scratch, each rounded up to 256 bytes, so that the scratch fits whether
  /// the plan addresses it at workspace_bytes or at the next 256 bytes.
  int64_t workspaceAllocationBytes() const;
  /// Whether a launch takes a kernel from `module`.
  bool launchesFrom(Module module) const;
};

/// Parses step_plan.json. `storageDtype` is the artifact's (bf16 or f16).
/// Throws Error "step_plan.json: <path>: <fault>" for anything malformed: an
/// unknown op, buffer, symbol or dtype, a missing or mistyped field, GEMM
/// leading dimensions too small for their matrices.
StepPlan parseStepPlan(const std::string &text, DType storageDtype);

/// Refuses a location that starts past the end of its buffer.
void checkLocations(const StepPlan &plan, const PerBuffer<int64_t> &bufferBytes);

/// A kernel's parameters for cuLaunchKernel: each value naturally aligned in
/// one byte buffer, and a pointer to each. A memref argument is MLIR's
/// descriptor, expanded: allocated pointer, aligned pointer, offset 0, the
/// sizes, the strides, 8 bytes each; ptr, index and i64 take 8 bytes, i32
/// and f32 4.
class KernelParams {
public:
  /// Throws Error when an i32 argument does not fit in 32 bits.
  KernelParams(const std::vector<KernelArg> &args, const SymbolValues &symbols,
               const PerBuffer<uint64_t> &addresses);
  KernelParams(KernelParams &&) = default;
  KernelParams &operator=(KernelParams &&) = default;
  KernelParams(const KernelParams &) = delete;
  KernelParams &operator=(const KernelParams &) = delete;

  /// cuLaunchKernel's kernelParams: one pointer per parameter.
  void **pointers() { return parameterPointers.data(); }
  size_t count() const { return parameterOffsets.size(); }
  /// Each parameter's byte offset in bytes().
  const std::vector<size_t> &offsets() const { return parameterOffsets; }
  const unsigned char *bytes() const {
    return reinterpret_cast<const unsigned char *>(storage.data());
  }

private:
  template <typename T> void append(T value);

  // 8-byte words, so that every value is aligned in memory as in offsets().
  std::vector<uint64_t> storage;
  size_t used = 0;
  std::vector<size_t> parameterOffsets;
  std::vector<void *> parameterPointers;
};

} // namespace llmc::runtime::cuda

#endif // LLMC_RUNTIME_CUDA_STEPPLAN_H
