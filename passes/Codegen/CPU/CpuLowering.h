//===- CpuLowering.h - shared state of llm-lower-to-cpu ---------*- C++ -*-===//
//
// llm-lower-to-cpu builds `llmc_step` op by op. Each llm op becomes a call of
// a private kernel function (one per distinct op and shape), whose body is
// scf loops over memrefs, written with the KernelBuilder both targets share
// (passes/Codegen/Common). Activations are 2-D memrefs [rows, features]
// (heads are `heads * head_dim` features), so split/merge of heads costs
// nothing.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CODEGEN_CPU_CPULOWERING_H
#define LLMC_PASSES_CODEGEN_CPU_CPULOWERING_H

#include "passes/Codegen/CPU/Passes.h"
#include "dialects/llm/BlockQuantized.h"
#include "passes/Codegen/Common/KernelBuilder.h"
#include "passes/Codegen/Common/LoweredOperands.h"
#include "passes/Codegen/Common/RowMath.h"
#include "passes/Codegen/Common/StepData.h"
#include "passes/Codegen/Common/WeightLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include <optional>

namespace llmc::cpu {

// The CPU kernels are written in the shared vocabulary.
using codegen::emitRotatedPair;
using codegen::KernelBuilder;
using codegen::kernelKey;
using codegen::normKind;
using codegen::Rotation;
using codegen::staticDim;

/// Lanes of the f32 vectors the generated matmul computes in (one AVX-512
/// register).
constexpr int64_t kLanes = 16;

/// An input's rows quantised to int8 for the int8-activation matmuls
/// (CpuInt8Matmul.cpp): codes [rows, K padded], scales and code sums
/// [rows, blocks], views of the scratch.
struct QuantizedRows {
  mlir::Value codes, scales, sums;
};

/// The step function under construction and what its ops need.
class StepLowering {
public:
  using KernelBody = llvm::function_ref<void(KernelBuilder &, mlir::ValueRange)>;

  StepLowering(mlir::ModuleOp module, mlir::OpBuilder &builder) : module(module), b(builder) {}

  mlir::ModuleOp module;
  mlir::OpBuilder &b;      // positioned in the step function's body
  mlir::Value api;         // !llvm.ptr to LlmcCpuHostApi
  mlir::Value numTokens;   // index: rows of per-token activations
  mlir::Value numSeqs;     // index: rows of gathered activations
  bool generatedMatmul = false;
  /// Attention's products on AMX tiles (CpuTileAttention.cpp) where an op
  /// fits them: with bf16-products=amx.
  bool tileAttention = false;
  /// The workspace (i8). Kernels' scratch lies past the planned part, from
  /// `scratchOffset`; `scratchBytes` is the most any kernel uses, which the
  /// manifest's workspace size includes.
  mlir::Value workspace;
  int64_t scratchOffset = 0;
  int64_t scratchBytes = 0;
  /// The most rows an activation has (max_num_batched_tokens, max_num_seqs).
  int64_t maxRows = 0;
  /// The most sequences a step has (max_num_seqs).
  int64_t maxSeqs = 0;

  /// A [rows, cols] view of `element`s of the scratch at byte `offset`.
  mlir::Value scratchView(mlir::Location loc, mlir::Type element, int64_t cols, mlir::Value rows,
                          int64_t offset);
  /// Records that a kernel uses the first `bytes` of the scratch.
  void useScratch(int64_t bytes) { scratchBytes = std::max(scratchBytes, bytes); }
  /// Records that a kernel overwrites the first `bytes` of the scratch with
  /// data of its own: the quantised rows it held are gone.
  void clobberScratch(int64_t bytes) {
    useScratch(bytes);
    scratchHolds = {};
  }
  /// The int8 rows of `input` the scratch holds, quantised by blocks of
  /// `blockSize`; null views when it holds another input's.
  QuantizedRows quantizedRows(mlir::Value input, int64_t blockSize, int64_t blocks) const;
  /// Records that the scratch now holds `rows`, `input` quantised.
  void rememberQuantizedRows(mlir::Value input, int64_t blockSize, int64_t blocks,
                             QuantizedRows rows);

  /// Calls the kernel identified by `key`, built by `body` the first time.
  /// Kernel arguments are `args`, in order.
  void callKernel(mlir::Location loc, llvm::StringRef name, const std::string &key,
                  mlir::ValueRange args, KernelBody body);
  /// The kernel identified by `key`, taking `argTypes`, built by `body` the
  /// first time.
  mlir::func::FuncOp getOrCreateKernel(mlir::Location loc, llvm::StringRef name,
                                       const std::string &key, mlir::TypeRange argTypes,
                                       KernelBody body);

private:
  llvm::StringMap<mlir::func::FuncOp> kernels;
  struct {
    mlir::Value input;
    int64_t blockSize = 0, blocks = 0;
    QuantizedRows rows;
  } scratchHolds;
};

/// Rotates one head of one row at `position`: `read(i)` gives feature i of
/// the head, `write(i, value)` stores feature i of the result.
void emitRotatedHead(KernelBuilder &kb, const Rotation &rotation, mlir::Value position,
                     llvm::function_ref<mlir::Value(mlir::Value)> read,
                     llvm::function_ref<void(mlir::Value, mlir::Value)> write);

/// What every head of one token rotates by. With inverse frequencies, a
/// token's cos and sin are computed once, into one-row tables that its heads
/// read as a cached rotation's row 0 (the same arithmetic, so the same bits
/// as computing them per head); cos/sin caches are read as they are.
class TokenRotation {
public:
  /// Makes the tables (allocas) where `given` has inverse frequencies.
  TokenRotation(KernelBuilder &kb, const Rotation &given);
  /// Prepares the token at `position`; returns the position its heads pass
  /// to emitRotatedHead with `rotation`.
  mlir::Value at(KernelBuilder &kb, mlir::Value position);

  Rotation rotation;

private:
  /// The given inverse frequencies; null for cos/sin caches.
  mlir::Value invFreq;
  /// What their cos and sin are multiplied by.
  double scale;
};

/// Lowers one llm op, given the memrefs of its operands (null for none) and
/// of its result. Fails with an error on the op for what is not supported.
mlir::LogicalResult lowerScalarFunction(StepLowering &step, llm::ScalarFunctionOpInterface op,
                                        llvm::ArrayRef<mlir::Value> operands, mlir::Value output);
mlir::LogicalResult lowerNorm(StepLowering &step, mlir::Operation *op,
                              llvm::ArrayRef<mlir::Value> operands, mlir::Value output);
/// llm.add_rms_norm / llm.add_layer_norm: outputs are the sum and the norm.
mlir::LogicalResult lowerAddNorm(StepLowering &step, mlir::Operation *op,
                                 llvm::ArrayRef<mlir::Value> operands,
                                 llvm::ArrayRef<mlir::Value> outputs);
mlir::LogicalResult lowerEmbedding(StepLowering &step, llm::EmbeddingOp op,
                                   llvm::ArrayRef<mlir::Value> operands, mlir::Value output);
mlir::LogicalResult lowerRope(StepLowering &step, mlir::Operation *op,
                              llvm::ArrayRef<mlir::Value> operands, mlir::Value output);
mlir::LogicalResult lowerGatherRows(StepLowering &step, llm::GatherRowsOp op,
                                    llvm::ArrayRef<mlir::Value> operands, mlir::Value output);
/// out[r, c] = in[r, c]: the rows a step of hidden states returns, from the
/// workspace to the step's output.
void lowerCopyRows(StepLowering &step, mlir::Location loc, mlir::Value input, mlir::Value output);
/// output = base + the runtime's LoRA product of input at the op's site
/// (api->lora); rows are sequences when `perSequenceRows` (CpuLora.cpp).
mlir::LogicalResult lowerLora(StepLowering &step, llm::LoraOp op, mlir::Value input,
                              mlir::Value base, mlir::Value output, bool perSequenceRows);
/// out[r, i] = in[r, indices[i]].
mlir::LogicalResult lowerPermuteFeatures(StepLowering &step, llm::PermuteFeaturesOp op,
                                         llvm::ArrayRef<mlir::Value> operands, mlir::Value output);
/// Each head's lhs features, then its rhs ones (the rhs's one head for all).
mlir::LogicalResult lowerConcatHeads(StepLowering &step, llm::ConcatHeadsOp op,
                                     llvm::ArrayRef<mlir::Value> operands, mlir::Value output);
/// Each head's row times that head's weight ([heads, in, out]).
mlir::LogicalResult lowerHeadLinear(StepLowering &step, llm::HeadLinearOp op,
                                    llvm::ArrayRef<mlir::Value> operands, mlir::Value output);
mlir::LogicalResult lowerSplitQkv(StepLowering &step, llm::SplitQkvOp op,
                                  llvm::ArrayRef<mlir::Value> operands,
                                  llvm::ArrayRef<mlir::Value> outputs);
mlir::LogicalResult lowerPagedKvWrite(StepLowering &step, llm::PagedKvWriteOp op,
                                      llvm::ArrayRef<mlir::Value> operands);
/// Writes the rotated keys and the values into the pool and the rotated
/// query into `rotatedQuery`.
mlir::LogicalResult lowerRopePagedKvWrite(StepLowering &step, llm::RopePagedKvWriteOp op,
                                          llvm::ArrayRef<mlir::Value> operands,
                                          mlir::Value rotatedQuery);
mlir::LogicalResult lowerPagedAttention(StepLowering &step, llm::PagedAttentionOp op,
                                        llvm::ArrayRef<mlir::Value> operands, mlir::Value output);
/// What a GEMM does with its accumulators before storing them. Without a
/// body (an unfused llm.linear) the bias, if any, is added by a kernel of
/// its own after the product. With the body of an llm.fused_linear
/// (accumulators, then one scalar per extra) the bias is added to the
/// accumulators in registers, then the body runs on them and the extras
/// (memrefs [rows, columns] or [columns]) at the same element.
struct Epilogue {
  mlir::Region *body = nullptr;
  bool gated = false;
  mlir::Value bias;
  llvm::SmallVector<mlir::Value> extras;
};

/// The epilogue's operands, in kernel-argument order: bias then extras
/// (none without a body: the bias is then added by addBias).
llvm::SmallVector<mlir::Value> epilogueOperands(const Epilogue &epilogue);
/// The epilogue's operands among a kernel's parameters.
struct EpilogueParams {
  mlir::Value bias;
  mlir::ValueRange extras;
  /// Those of `epilogue` at the front of `params` (epilogueOperands' order).
  static EpilogueParams in(const Epilogue &epilogue, mlir::ValueRange params);
};
/// Stores output element (row, col) from its sums, one per part (two when
/// gated, the second from weight row col + partStride), through the
/// epilogue's body when there is one (CpuEpilogue.cpp).
void storeOutput(KernelBuilder &kb, const Epilogue &epilogue, const EpilogueParams &params,
                 mlir::Value out, mlir::Value row, mlir::Value col,
                 llvm::ArrayRef<mlir::Value> sums, int64_t partStride);
/// storeOutput of the elements (row, col + lane) of the first `lanes` lanes
/// of vector sums: the body runs on vectors when all 16 lanes are stored
/// and every op of it is elementwise (the same arithmetic lane by lane),
/// else once per lane.
void storeOutputVector(KernelBuilder &kb, const Epilogue &epilogue, const EpilogueParams &params,
                       mlir::Value out, mlir::Value row, mlir::Value col,
                       llvm::ArrayRef<mlir::Value> sums, int64_t partStride, int64_t lanes);
/// out[r, :] += bias, by a kernel of its own.
void addBias(StepLowering &step, mlir::Location loc, mlir::Value bias, mlir::Value output);

/// A weight [out, in] as the generated kernels read it: f32, bf16 or f16 rows, or
/// block-quantised codes that stay packed in weights.bin and are dequantised
/// in registers (CpuQuantized.cpp has the layout).
struct MatmulWeight {
  /// f32 [out, in], or rounded to f16 or bf16 (its bit patterns, i16),
  /// widened as loaded (widenWeight); or the codes, i8 [out, bytes per row].
  mlir::Value values;
  /// f32 [out, blocks]; null for an f32 weight.
  mlir::Value scales;
  /// i8 [out, blocks], one unsigned zero point per byte; null for an f32
  /// weight and for symmetric codes (zero point 2^(bits-1)).
  mlir::Value zeroPoints;
  int64_t bits = 32;
  int64_t blockSize = 0;
  /// With bf16 `values`: products of bf16 pairs (AVX512_BF16 vdpbf16ps, f32
  /// accumulation) with the activations rounded to bf16, 32 of k a step.
  bool bf16Products = false;
  /// With bf16Products and panels: AMX tiles (TDPBF16PS) multiply 16 rows
  /// at a time, for every row count (CpuPanelMatmul.cpp).
  bool amxTiles = false;
  /// `values` is in panels (packPanels), 1-D, of its element type (in pairs
  /// of k with `bf16Products`): the outer-product
  /// matmul of CpuPanelMatmul.cpp reads it.
  bool panels = false;
  /// 4-bit codes dequantised by a lookup in their block's 16 values,
  /// (c - zero_point) * scale for c = 0..15 computed once per block, with
  /// AVX-512F's vpermps: one instruction where the conversion, subtraction
  /// and scaling take three, and the same values.
  bool codeTable = false;
  /// 8-bit codes without zero points stored as code - 128, signed: each
  /// converts to its offset value directly, one subtraction fewer, the same
  /// values.
  bool offsetCodes = false;

  bool isQuantized() const { return static_cast<bool>(scales); }
  /// The memrefs a kernel takes for the weight, in argument order.
  llvm::SmallVector<mlir::Value> buffers() const;
  /// The same weight over a kernel's parameters `params` (buffers() order).
  MatmulWeight withBuffers(mlir::ValueRange params) const;
  /// What distinguishes kernels over this weight beyond its buffers' types.
  std::string key() const;
};

/// Elements [col, col + 32) of row `row` of a [rows, cols] i16 memref of
/// bf16 bit patterns, as a vdpbf16ps operand (vector<32xbf16>).
mlir::Value loadBf16Pairs(mlir::OpBuilder &b, mlir::Location loc, mlir::Value bits,
                          mlir::Value row, mlir::Value col);

/// acc (vector<16xf32>) + the products of the bf16 pairs in each lane of
/// `x` and `w` (vector<32xbf16>): AVX512_BF16 vdpbf16ps.
mlir::Value dotPairs(mlir::OpBuilder &b, mlir::Location loc, mlir::Value acc, mlir::Value x,
                     mlir::Value w);

/// The lane sums of `vectors` (of one f32 vector type, a power of two
/// lanes), each a fixed tree: halves added, then halves of those, without
/// fast-math flags. Up to as many vectors as they have lanes are packed
/// together: at each width the halves of two vectors (or of the groups of
/// lanes each already holds) are shuffled into one vector of low halves and
/// one of high halves and added, so 16 sums take 4 levels of shuffles and
/// adds instead of 16 times 4. A vector's sum does not depend on the others.
llvm::SmallVector<mlir::Value> sumLanesOfEach(mlir::OpBuilder &b, mlir::Location loc,
                                              llvm::ArrayRef<mlir::Value> vectors);
/// Up to as many vectors as they have lanes reduced across their lanes
/// together, as sumLanesOfEach packs them, by `combine` (an add, a max):
/// lane i of the result is vector i's.
mlir::Value reduceLanesPacked(mlir::OpBuilder &b, mlir::Location loc,
                              llvm::ArrayRef<mlir::Value> vectors,
                              llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> combine);

/// f32 values from bf16 bit patterns (i16, scalar or vector): the pattern
/// is the high half of the f32's.
mlir::Value widenBf16(mlir::OpBuilder &b, mlir::Location loc, mlir::Value bits);

/// Whether an f32 value is one of f16's (finite), so storing it as f16 is
/// exact.
bool isF16Value(float value);
/// Whether an f32 value is one of bf16's (finite): its low 16 bits are 0.
bool isBf16Value(float value);

/// f32 values from the loaded elements of a weight (scalar or vector),
/// exactly: f32 as they are, bf16 bit patterns (i16) by widenBf16, f16 by
/// conversion (vcvtph2ps).
mlir::Value widenWeight(mlir::OpBuilder &b, mlir::Location loc, mlir::Value loaded);

/// An f32 (scalar or vector) rounded to bf16, to nearest even (a NaN stays
/// a quiet NaN), in integer arithmetic: any x86-64 CPU, with or without
/// AVX512_BF16.
mlir::Value roundToBf16(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value);

/// Two vectors of 16 f32 rounded to bf16 by one AVX512_BF16 vcvtne2ps2bf16,
/// `low`'s in lanes 0-15 of the vector<32xbf16> and `high`'s after them.
mlir::Value roundPairToBf16(mlir::OpBuilder &b, mlir::Location loc, mlir::Value low,
                            mlir::Value high);

/// The weight values of a MatmulWeight inside a kernel. Reads whole vectors
/// of 16 along a row and single values; a quantised read dequantises as
/// (code - zero_point) * scale in f32, rounded once, which is the value the
/// weight had when it was widened at compile time.
class WeightReader {
public:
  WeightReader(KernelBuilder &kb, const MatmulWeight &weight) : kb(kb), weight(weight) {}

  /// Columns that share a block's scale and zero point: whole vectors are
  /// read a span at a time. 16 (one vector) for an f32 weight.
  int64_t span() const;
  /// What every vector read of the block holding column `col` of row `row`
  /// shares (its scale and zero point, broadcast, or with `codeTable` its
  /// 16 values); nothing for f32.
  llvm::SmallVector<mlir::Value> blockState(mlir::Value row, mlir::Value col);
  /// Columns [col, col + 16) of row `row`, col a multiple of 16, with the
  /// blockState of their block.
  mlir::Value vector(mlir::Value row, mlir::Value col, llvm::ArrayRef<mlir::Value> state);
  /// Columns [col, col + 32) of row `row` of a bf16Products weight as the
  /// vdpbf16ps operand (32 bf16, lane i the pair 2i, 2i + 1).
  mlir::Value pairs(mlir::Value row, mlir::Value col);
  /// The value at (row, col).
  mlir::Value scalar(mlir::Value row, mlir::Value col);
  /// Whether products take bf16 pairs (MatmulWeight::bf16Products).
  bool productsOfPairs() const { return weight.bf16Products; }

private:
  /// vector() of a `codeTable` weight: each code's value looked up in the
  /// block's `table`.
  mlir::Value lookUpCodes(mlir::Value row, mlir::Value col, mlir::Value table);

  KernelBuilder &kb;
  const MatmulWeight &weight;
};

/// What to do with the sums of one output element (row, col): one sum per
/// part (two when gated).
using FinishOutput = llvm::function_ref<void(mlir::Value row, mlir::Value col,
                                             llvm::ArrayRef<mlir::Value> sums)>;

/// The sums of `rows` x `cols` outputs starting at (row, col), handed to
/// `finish` (CpuMatmul.cpp): every output accumulates x[r, i:i+16] *
/// w[c, i:i+16] in one vector register over i = 0, 16, ... (fused
/// multiply-adds), sums its lanes as a fixed tree, then adds the k % 16
/// remaining products one at a time. A tile shares each loaded x and w
/// vector among its outputs; the arithmetic of an output is the same
/// whatever the tile it is in. With `parts` = 2 an output has two sums,
/// over weight rows c and c + partStride (the gate and up halves of a gated
/// product). The vectors are read a WeightReader span at a time (a
/// quantised block, whose scale every vector of it shares), which does not
/// change the order of the sums. A bf16Products weight takes 32 of k a step
/// instead: each lane adds the products of a pair of bf16 activations and
/// weights (vdpbf16ps); `x` is then rows rounded to bf16 and k a multiple
/// of 32.
void emitDotTile(KernelBuilder &kb, mlir::Value x, WeightReader &w, mlir::Value row,
                 mlir::Value col, int64_t rows, int64_t cols, int64_t parts, int64_t partStride,
                 int64_t k, FinishOutput finish);
/// What to do with the sums of output (xRows[r], col) of emitDotTileOfRows.
using FinishTileOutput =
    llvm::function_ref<void(int64_t r, mlir::Value col, llvm::ArrayRef<mlir::Value> sums)>;
/// emitDotTile over the rows `xRows` of x, in any order (a mixture of
/// experts' rows that chose one expert), with the same arithmetic.
void emitDotTileOfRows(KernelBuilder &kb, mlir::Value x, llvm::ArrayRef<mlir::Value> xRows,
                       WeightReader &w, mlir::Value col, int64_t cols, int64_t parts,
                       int64_t partStride, int64_t k, FinishTileOutput finish);

/// The packed form of a quantised weight for the generated kernels, or
/// nullopt when they cannot read it packed (a block size that is not a
/// multiple of 16, float zero points): the caller widens it to f32.
struct PackedWeight {
  mlir::ElementsAttr codes, scales, zeroPoints;
  int64_t bits, blockSize;
  /// The codes are stored less their zero point, as signed bytes: 8-bit
  /// codes without zero points (MatmulWeight::offsetCodes).
  bool offsetCodes = false;
};
std::optional<PackedWeight> packForCpu(const llm::BlockQuantized &weight,
                                       mlir::MLIRContext *context);
/// A packed weight's codes or zero points (i8) or scales (f32), of `shape`,
/// as a blob for weights.bin.
mlir::ElementsAttr packedBlob(const std::vector<int8_t> &values, llvm::ArrayRef<int64_t> shape,
                              llvm::StringRef name, mlir::MLIRContext *context);
mlir::ElementsAttr packedBlob(const std::vector<float> &values, llvm::ArrayRef<int64_t> shape,
                              llvm::StringRef name, mlir::MLIRContext *context);

/// Field indices of LlmcCpuHostApi (include/llmc/Runtime/StepABI.h).
constexpr int32_t kApiContext = 2;
constexpr int32_t kApiSgemm = 3;
constexpr int32_t kApiParallelFor = 4;
constexpr int32_t kApiLora = 5;

/// Host services and memrefs as the LLVM dialect sees them (CpuParallel.cpp).
mlir::LLVM::LLVMPointerType llvmPointerType(mlir::OpBuilder &b);
mlir::Value constantI64(mlir::OpBuilder &b, mlir::Location loc, int64_t value);
/// Loads field `index` (a pointer) of the step's LlmcCpuHostApi.
mlir::Value hostApiField(StepLowering &step, mlir::Location loc, int32_t index);
/// The address of a memref's first element as an !llvm.ptr. Views of the
/// workspace and of the weights, and the step's inputs, have offset 0, so the
/// aligned pointer is it.
mlir::Value pointerTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value memref);
/// A memref of `type` over the row-major data at `pointer`, its dynamic dims
/// `sizes` (i64) in order: the descriptor the LLVM lowering of memrefs uses,
/// built by hand because the data arrives as a raw pointer.
mlir::Value memrefAt(mlir::OpBuilder &b, mlir::Location loc, mlir::MemRefType type,
                     mlir::Value pointer, mlir::ValueRange sizes);
/// Whether `memref` is row-major with no strides of a view.
bool isContiguous(mlir::Value memref);
/// Whether the generated code can address `memref` from a bare pointer: its
/// layout (a view's offset and strides) is static.
bool isAddressable(mlir::Value memref);

/// Builds a kernel's work for tasks [begin, end) given its buffers (as the
/// kernel's memrefs).
using TasksBody = llvm::function_ref<void(KernelBuilder &, mlir::ValueRange buffers,
                                          mlir::Value begin, mlir::Value end)>;
/// Runs the kernel `name` (identified by `key`) over `numTasks` (an index)
/// independent tasks on the runtime's threads (api->parallel_for). The
/// buffers must be addressable (isAddressable); their addresses and dynamic
/// sizes reach the threads through a closure on the step's stack.
void runParallel(StepLowering &step, mlir::Location loc, llvm::StringRef name,
                 const std::string &key, llvm::ArrayRef<mlir::Value> buffers,
                 mlir::Value numTasks, TasksBody body);
/// Rows of one task of runOverRows: a decode batch of up to 8 sequences is
/// one task, run on the calling thread.
constexpr int64_t kRowsPerRowTask = 8;
/// Runs a kernel over the rows of `buffers[rowsOf]` (dim 0) on the
/// runtime's threads, in tasks of kRowsPerRowTask rows: `body` gets the
/// kernel's buffers and rows [begin, end). Rows must be independent. A
/// buffer that is not addressable runs the kernel on the calling thread.
void runOverRows(StepLowering &step, mlir::Location loc, llvm::StringRef name,
                 const std::string &key, llvm::ArrayRef<mlir::Value> buffers, unsigned rowsOf,
                 TasksBody body);

/// The output block one matmul task computes: rows [rowBegin, rowEnd) of
/// columns [begin, end).
struct OutputBlock {
  mlir::Value rowBegin, rowEnd, begin, end;
};
/// Builds a kernel's loops over one OutputBlock given its buffers
/// (runOverColumns' `buffers`, as the kernel's memrefs).
using ColumnsBody = llvm::function_ref<void(KernelBuilder &, mlir::ValueRange buffers,
                                            const OutputBlock &block)>;
/// Runs a kernel over `columns` output columns of the rows of `buffers[1]`
/// (the output) on the runtime's threads (runParallel), in tasks of
/// `columnsPerTask` columns by 32 rows: each task's `begin` is a multiple of
/// `columnsPerTask` and its `rowBegin` of 32, and a task's neighbours share
/// its columns (its weight rows stay in cache). Tasks go in blocks of rows
/// whose inputs (`buffers[0]`, [rows, k]) fill about 512 KiB, each block's
/// column ranges in order, so a block's inputs stay in L2 while the weight
/// passes over them. Many rows of few columns (a small model's prefill)
/// still give every thread work. `key` names the kernel.
void runOverColumns(StepLowering &step, mlir::Location loc, llvm::ArrayRef<mlir::Value> buffers,
                    int64_t columns, int64_t columnsPerTask, const std::string &key,
                    ColumnsBody body);
/// Output columns of the generated matmul's tasks over [out, in] rows: enough
/// work to amortise a task, few enough that two threads share a 576-wide layer.
constexpr int64_t kColumnsPerTask = 64;

/// Output columns of a panel of a packed weight (CpuPanelMatmul.cpp): three
/// vectors, one task's columns; one vector of each part when gated (`parts`
/// 2), whose tiles take both parts of a vector at once.
constexpr int64_t panelColumns(int64_t parts) { return parts == 1 ? 48 : 16; }
/// An f32 weight [out, in] (`outIn`) or [in, out] in panels: for each run of
/// panelColumns(parts) output columns (the last may be narrower, padded
/// with zeros to whole vectors), k = 0 .. in-1 one after the other, each k
/// the run's columns of every part. With `parts` = 2 (a gated weight: gate
/// rows, then up rows) output column c has weight rows c and c + out / 2. A
/// panel's offset is its first column times in * parts. With `pairs` (for
/// products of bf16 pairs; `in` even) k advances two at a time, each column
/// its values for k and k + 1 side by side: a vector of 16 columns is the
/// vdpbf16ps operand of 32 bf16.
std::vector<float> packPanels(const float *weight, int64_t out, int64_t in, bool outIn,
                              int64_t parts, bool pairs = false);
/// Rows an AMX tile multiplies at once (MatmulWeight::amxTiles): its input
/// rows, rounded to bf16, are padded to a multiple with zeros.
constexpr int64_t kAmxRows = 16;
/// Hands the vector sums of outputs (row, col + lane), one per part, of
/// which the first `lanes` lanes are outputs.
using VectorFinish = llvm::function_ref<void(mlir::Value row, mlir::Value col,
                                             llvm::ArrayRef<mlir::Value> sums, int64_t lanes)>;
/// llm.embedding over a table kept in panels (packPanels) for the logits
/// head it is tied to: token t's row is the head's output column t (half
/// panels widened as read).
mlir::LogicalResult lowerPanelEmbedding(StepLowering &step, llm::EmbeddingOp op,
                                        mlir::Value panels, mlir::Value ids, mlir::Value output);
/// output = epilogue(input * weight) for a `panels` weight, as outer
/// products over the runtime's threads.
void generatePanelMatmul(StepLowering &step, mlir::Location loc, mlir::Value input,
                         const MatmulWeight &weight, mlir::Value output, int64_t k,
                         const Epilogue &epilogue, const std::string &key);

/// A block-quantised weight [out, in] in the int8-activation matmul's
/// layout (CpuInt8Matmul.cpp): codes per tile of 16 output columns, scales
/// and zero points per tile and block.
/// The instructions that multiply int8 activations by unsigned codes. Both
/// give the same integer sums, so the same logits.
enum class Int8Products {
  /// vpdpbusd: 64 byte products a vector, added four to an int32 lane.
  Avx512Vnni,
  /// On each 32-byte half, vpmaddubsw adds the byte products in pairs to
  /// int16 lanes, and vpmaddwd the pairs to int32 lanes (8-bit codes go as
  /// their two nibbles, so that no int16 sum saturates).
  Avx2,
};

struct Int8Weight {
  mlir::Value codes, scales, zeroPoints; // zeroPoints: null for symmetric codes
  int64_t bits = 0, blockSize = 0, inFeatures = 0;
  Int8Products products = Int8Products::Avx512Vnni;

  int64_t blocks() const { return (inFeatures + blockSize - 1) / blockSize; }
  llvm::SmallVector<mlir::Value> buffers() const;
  std::string key() const;
};
/// `input` [rows, K] quantised to int8 per block of `blockSize` into the
/// scratch from byte `offset`, with room for `maxRows` rows, by a kernel on
/// the calling thread (CpuInt8Matmul.cpp): each block's scale is its largest
/// magnitude / 127, its codes round(x * 127 / that) (ties to even), codes
/// past K are 0, and each block's code sum is kept. Returns the views,
/// records the scratch's use and moves `offset` past them. K and blockSize
/// are multiples of 16.
QuantizedRows quantizeRowsIntoScratch(StepLowering &step, mlir::Location loc, mlir::Value input,
                                      int64_t maxRows, int64_t blockSize, int64_t &offset);
/// What to do with the sums of row xRows[r] of emitInt8TileOfRows: a
/// vector of 16 columns per part.
using FinishInt8Tile = llvm::function_ref<void(int64_t r, llvm::ArrayRef<mlir::Value> sums)>;
/// The sums of the 16 columns of tile `tile` of `weight` (its buffers the
/// kernel's) for the rows `xRows` of the quantised rows `x`, in a fixed
/// order per row (integer products by blocks, each block's integer sum scaled
/// once). Parts (2 when gated: the gate and up halves) are the tiles `tile`
/// and `tile + partTiles`.
void emitInt8TileOfRows(KernelBuilder &kb, const Int8Weight &weight, QuantizedRows x,
                        mlir::Value tile, llvm::ArrayRef<mlir::Value> xRows, int64_t parts,
                        int64_t partTiles, FinishInt8Tile finish);
/// The int8-activation layout of a quantised weight, or nullopt where that
/// matmul cannot read it (a block size or K not a multiple of 16, float zero
/// points).
std::optional<PackedWeight> packForInt8Matmul(const llm::BlockQuantized &weight,
                                              mlir::MLIRContext *context);
/// output = epilogue(input * weight) with the input's rows quantised to
/// int8 and integer products (AVX-512 VNNI).
mlir::LogicalResult lowerInt8Matmul(StepLowering &step, mlir::Location loc, mlir::Value input,
                                    const Int8Weight &weight, mlir::Value output,
                                    const Epilogue &epilogue);

/// A mixture of experts' stacked weight [experts * out, in] (expert e's
/// output i at row e * out + i) as its kernels read it: `exact` for the dot
/// tiles, or, with int8 activations, the int8 layout.
struct ExpertWeight {
  MatmulWeight exact;
  std::optional<Int8Weight> int8;
};
/// A mixture of experts (CpuMoe.cpp): each row routes itself to its top_k
/// experts. All three weights have int8 layouts, or none; a bias (or the
/// selection bias) is null where the op has none.
mlir::LogicalResult lowerMoe(StepLowering &step, llm::MoeOp op, mlir::Value input,
                             mlir::Value routerLogits, const ExpertWeight &gate,
                             const ExpertWeight &up, const ExpertWeight &down,
                             mlir::Value gateBias, mlir::Value upBias, mlir::Value downBias,
                             mlir::Value selectionBias, mlir::Value output);

/// output = epilogue(input * weight); weight [in, out], or [out, in] if
/// `transposed`. The one place that chooses between BLAS and generated loops;
/// the generated ones read weights [out, in] only (llm-lower-to-cpu lays
/// weights out so when they are the strategy), f32 or quantised.
mlir::LogicalResult lowerMatmul(StepLowering &step, mlir::Location loc, mlir::Value input,
                                const MatmulWeight &weight, bool transposed, mlir::Value output,
                                const Epilogue &epilogue);
/// llm.embedding over a quantised table [vocab, hidden] kept packed: each
/// gathered row is dequantised as the generated matmul dequantises it.
mlir::LogicalResult lowerQuantizedEmbedding(StepLowering &step, llm::EmbeddingOp op,
                                            const MatmulWeight &table, mlir::Value ids,
                                            mlir::Value output);

} // namespace llmc::cpu

#endif // LLMC_PASSES_CODEGEN_CPU_CPULOWERING_H
