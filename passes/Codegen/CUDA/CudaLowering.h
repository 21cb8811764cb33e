//===- CudaLowering.h - shared state of llm-lower-to-cuda -------*- C++ -*-===//
//
// llm-lower-to-cuda turns the planned step into data (docs/cuda.md): a list
// of kernel launches and GEMMs over (buffer, byte offset) locations, which
// the runtime replays on a stream. Kernels are gpu.funcs written with the
// same KernelBuilder vocabulary as the CPU kernels (passes/Codegen/Common), one thread block per
// row; attention is CUDA C++ that the target compiles with NVRTC.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_CUDA_CUDALOWERING_H
#define LLMC_PASSES_CODEGEN_CUDA_CUDALOWERING_H

#include "passes/Codegen/CUDA/Passes.h"
#include "passes/Codegen/Common/KernelBuilder.h"
#include "passes/Codegen/Common/LoweredOperands.h"
#include "passes/Codegen/Common/RowMath.h"
#include "passes/Codegen/Common/StepData.h"
#include "passes/Codegen/Common/WeightLayout.h"

#include "llmc/Runtime/StepPlanSchema.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinAttributes.h"

#include <array>

namespace llmc::cuda {

/// Threads of a row kernel's block.
inline constexpr int64_t kRowBlockSize = 256;
/// Where the ops' scratch starts in the workspace, and each region of it.
inline constexpr int64_t kScratchAlignment = 256;


/// A plan dimension: an integer, a symbol, or ceil(symbol * mul / div) + add.
mlir::Attribute planDim(mlir::MLIRContext *context, int64_t value);
mlir::Attribute planDim(mlir::MLIRContext *context, llvm::StringRef symbol, int64_t mul = 1,
                        int64_t div = 1, int64_t add = 0);

/// Where a tensor lives for the step: a buffer, a byte offset into it, and
/// its sizes and strides (in elements) as plan dimensions.
struct TensorRef {
  std::string buffer;
  int64_t offset = 0;
  mlir::Type elementType;
  llvm::SmallVector<mlir::Attribute> sizes;
  llvm::SmallVector<mlir::Attribute> strides;
  /// False for a strided view (the parts of llm.split).
  bool contiguous = true;

  /// The memref a kernel takes it as: integer sizes static, symbols dynamic.
  mlir::MemRefType memrefType() const;
  /// {"buffer", "offset"} for the plan.
  mlir::DictionaryAttr location() const;
  /// The same tensor `bytes` further into its buffer.
  TensorRef shifted(int64_t bytes) const;
  /// The row stride (in elements) of a [rows, features] view whose features
  /// are adjacent; nullopt for any other.
  std::optional<int64_t> rowStride() const;
};

/// A row-major tensor of `shape` (integers or symbols) at `offset` of `buffer`.
TensorRef contiguousTensor(mlir::MLIRContext *context, llvm::StringRef buffer, int64_t offset,
                           mlir::Type elementType, llvm::ArrayRef<mlir::Attribute> shape);

/// One kernel argument of a launch.
struct KernelArg {
  enum class Kind { Memref, Pointer, NullPointer, I32, F32 } kind = Kind::Memref;
  TensorRef tensor;    // Memref, Pointer
  mlir::Attribute dim; // I32: a plan dimension
  double number = 0;   // F32

  static KernelArg memref(TensorRef tensor) { return {Kind::Memref, std::move(tensor), {}, 0}; }
  static KernelArg pointer(TensorRef tensor) { return {Kind::Pointer, std::move(tensor), {}, 0}; }
  /// A pointer parameter left null (an absent optional operand): an i64 0.
  static KernelArg nullPointer() { return {Kind::NullPointer, {}, {}, 0}; }
  static KernelArg i32(mlir::Attribute dim) { return {Kind::I32, {}, dim, 0}; }
  static KernelArg f32(double value) { return {Kind::F32, {}, {}, value}; }
};

/// The step plan under construction (the `llmc.cuda_plan` attribute).
class PlanBuilder {
public:
  explicit PlanBuilder(mlir::MLIRContext *context) : context(context) {}

  void launch(llvm::StringRef module, llvm::StringRef kernel,
              llvm::ArrayRef<mlir::Attribute> grid, std::array<int64_t, 3> block,
              llvm::ArrayRef<KernelArg> args, int64_t sharedBytes = 0);
  /// D[m, n] = A[m, k] * B (+ bias) (+ beta * C), as docs/cuda.md's gemm.
  struct Gemm {
    mlir::Attribute m;
    int64_t n = 0, k = 0;
    TensorRef a, b, d;
    int64_t lda = 0, ldb = 0, ldd = 0, ldc = 0;
    bool bTransposed = false; // B is [n, k]
    std::optional<TensorRef> bias, c;
  };
  void gemm(const Gemm &gemm);

  mlir::ArrayAttr steps() const;

private:
  mlir::MLIRContext *context;
  llvm::SmallVector<mlir::Attribute> entries;
};

/// gpu.module @llmc_kernels and the kernels in it, one per distinct op and
/// argument types.
class KernelModule {
public:
  using KernelBody = llvm::function_ref<void(codegen::KernelBuilder &, mlir::ValueRange)>;

  KernelModule(mlir::ModuleOp module, llvm::StringRef arch);

  /// The symbol of the kernel identified by `key`, built by `body` the first
  /// time as a gpu.func of `argTypes` for blocks of kRowBlockSize threads.
  std::string getOrCreate(mlir::Location loc, llvm::StringRef name, const std::string &key,
                          mlir::TypeRange argTypes, KernelBody body);

private:
  mlir::gpu::GPUModuleOp module;
  llvm::StringMap<std::string> kernels;
};

/// What the op lowerings share: the plan, the kernels, the step's buffers.
struct StepContext {
  PlanBuilder &plan;
  KernelModule &kernels;
  mlir::Type storageType; // bf16 or f16
  int64_t scratchOffset = 0; // bytes into the workspace where scratch starts
  int64_t scratchBytes = 0;  // the most any op needs, grown by the lowerings
  int64_t maxTokens = 0, maxSeqs = 0;

  /// Scratch of `bytes` for one op (every op's scratch starts at the same place:
  /// ops run one after another on the stream).
  int64_t scratch(int64_t bytes) {
    scratchBytes = std::max(scratchBytes, bytes);
    return scratchOffset;
  }
  /// Launches the row kernel built by `body` over `rows` blocks; its
  /// parameters are `args` as memrefs, then `i32Args` (plan dimensions).
  void launchRows(mlir::Location loc, llvm::StringRef name, const std::string &key,
                  mlir::Attribute rows, llvm::ArrayRef<TensorRef> args,
                  KernelModule::KernelBody body, llvm::ArrayRef<mlir::Attribute> i32Args = {});
};

/// Row kernels, one block per row of the output (CudaKernels.cpp). `operands`
/// are null for omitted optional operands.
mlir::LogicalResult lowerEmbedding(StepContext &step, llm::EmbeddingOp op,
                                   llvm::ArrayRef<std::optional<TensorRef>> operands,
                                   const TensorRef &output);
mlir::LogicalResult lowerGatherRows(StepContext &step, llm::GatherRowsOp op,
                                    llvm::ArrayRef<std::optional<TensorRef>> operands,
                                    const TensorRef &output);
mlir::LogicalResult lowerNorm(StepContext &step, mlir::Operation *op,
                              llvm::ArrayRef<std::optional<TensorRef>> operands,
                              llvm::ArrayRef<TensorRef> outputs);
mlir::LogicalResult lowerScalarFunction(StepContext &step, llm::ScalarFunctionOpInterface op,
                                        llvm::ArrayRef<std::optional<TensorRef>> operands,
                                        const TensorRef &output);
mlir::LogicalResult lowerRope(StepContext &step, mlir::Operation *op,
                              llvm::ArrayRef<std::optional<TensorRef>> operands,
                              const TensorRef &output);
/// Each head's lhs features, then its rhs ones (the rhs's one head for all).
mlir::LogicalResult lowerConcatHeads(StepContext &step, llm::ConcatHeadsOp op,
                                     llvm::ArrayRef<std::optional<TensorRef>> operands,
                                     const TensorRef &output);
mlir::LogicalResult lowerSplitQkv(StepContext &step, llm::SplitQkvOp op,
                                  llvm::ArrayRef<std::optional<TensorRef>> operands,
                                  llvm::ArrayRef<TensorRef> outputs);
mlir::LogicalResult lowerPagedKvWrite(StepContext &step, mlir::Operation *op,
                                      llvm::ArrayRef<std::optional<TensorRef>> operands,
                                      llvm::ArrayRef<TensorRef> outputs);
/// What a matmul's epilogue applies to its f32 product: the bias, then
/// `body` on `accumulators` product columns per result column and the extras;
/// an empty `body` (one accumulator, no extras) passes the biased product through.
struct EpilogueRefs {
  mlir::Region *body;
  unsigned accumulators;
  std::optional<TensorRef> bias;
  llvm::SmallVector<TensorRef> extras;
};

/// The epilogue of a fused linear or the logits head whose product is in
/// `product` (f32 [rows, product columns]), into `output`.
mlir::LogicalResult lowerEpilogue(StepContext &step, mlir::Operation *op,
                                  const EpilogueRefs &epilogue, const TensorRef &product,
                                  const TensorRef &output);

/// Threads of a mixture of experts' route, experts, down and sum blocks, and
/// of its plan's one block (attention/Moe.cuh).
inline constexpr int64_t kMoeThreads = 128;
inline constexpr int64_t kMoePlanThreads = 256;
/// Picks of one experts or down tile (whole groups of 8, the MMA's columns),
/// and the output features of one block.
inline constexpr int64_t kMoeTilePicks = 16;
inline constexpr int64_t kMoeColumns = 16;
/// The most experts the plan's block counts in shared memory.
inline constexpr int64_t kMoeMaxExperts = 512;
/// The most groups of experts the route kernel ranks (a bit each in a mask).
inline constexpr int64_t kMoeMaxGroups = 64;

/// Starts the NVRTC module's source (attention.cu) with what every model
/// uses: the prelude, the constants, the helpers, the argmax and GEMV
/// kernels. Does nothing when `source` has begun.
void addModulePrelude(const StepContext &step, std::string &source);
/// Adds the mixture of experts kernels to the module's source, once: only a
/// model with experts compiles them.
void addMoeSource(const StepContext &step, std::string &source);

/// Paged attention through the NVRTC kernels (CudaAttention.cpp): adds
/// their launches and, the first time, their source to `source`.
mlir::LogicalResult lowerPagedAttention(StepContext &step, llm::PagedAttentionOp op,
                                        llvm::ArrayRef<std::optional<TensorRef>> operands,
                                        const TensorRef &output, std::string &source);

/// A mixture of experts through the NVRTC module's kernels (CudaMoe.cpp).
mlir::LogicalResult lowerMoe(StepContext &step, llm::MoeOp op,
                             llvm::ArrayRef<std::optional<TensorRef>> operands,
                             const TensorRef &output, std::string &source);

} // namespace llmc::cuda

#endif // LLMC_PASSES_CODEGEN_CUDA_CUDALOWERING_H
