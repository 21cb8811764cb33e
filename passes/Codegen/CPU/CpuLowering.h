//===- CpuLowering.h - shared state of llm-lower-to-cpu ---------*- C++ -*-===//
//
// llm-lower-to-cpu builds `llmc_step` op by op. Each llm op becomes a call of
// a private kernel function (one per distinct op and shape), whose body is
// scf loops over memrefs; KernelBuilder is the small vocabulary those bodies
// are written in. Activations are 2-D memrefs [rows, features] (heads are
// `heads * head_dim` features), so split/merge of heads costs nothing.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_PASSES_CPULOWERING_H
#define LLMC_PASSES_CPULOWERING_H

#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace llmc {
/// Unpacks an llm.dequantize of constants into f32 [rows, cols] at compile
/// time (every target's weights start as this).
mlir::FailureOr<mlir::ElementsAttr> dequantizeConstant(llm::DequantizeOp op);
/// The f32 constant data of a weight operand, dequantised if packed; an
/// error naming `target` ("CPU", "CUDA") for anything else.
mlir::FailureOr<mlir::ElementsAttr> weightConstant(mlir::Value value, llvm::StringRef target);
/// Copies what the manifest needs from the planned step `model` onto
/// `module` (llmc.workspace_bytes, step limits, hidden size, heads, positions).
void recordStepAttributes(mlir::ModuleOp module, mlir::func::FuncOp model);
} // namespace llmc

namespace llmc::cpu {

/// Builds loop nests and scalar arithmetic inside a kernel. Float arithmetic
/// carries reassoc+contract fast-math flags so that LLVM vectorises
/// reductions; every row is computed by the same code whatever the batch, so
/// results stay independent of the batch composition.
class KernelBuilder {
public:
  KernelBuilder(mlir::OpBuilder &builder, mlir::Location loc) : b(builder), loc(loc) {}

  mlir::OpBuilder &builder() { return b; }
  mlir::Location location() const { return loc; }

  mlir::Value index(int64_t value);
  mlir::Value f32(double value);
  mlir::Value dim(mlir::Value memref, int64_t dim);
  /// An i32 (or other integer) value as an index.
  mlir::Value toIndex(mlir::Value integer);
  mlir::Value toF32(mlir::Value integer);

  /// for (iv = lower; iv < upper; ++iv) body(iv)
  void forEach(mlir::Value lower, mlir::Value upper, llvm::function_ref<void(mlir::Value)> body);
  /// acc = init; for (iv...) acc = body(iv, acc); returns acc.
  mlir::Value reduce(mlir::Value lower, mlir::Value upper, mlir::Value init,
                     llvm::function_ref<mlir::Value(mlir::Value, mlir::Value)> body);
  /// if (condition) then()
  void ifThen(mlir::Value condition, llvm::function_ref<void()> then);

  mlir::Value load(mlir::Value memref, mlir::ValueRange indices);
  void store(mlir::Value value, mlir::Value memref, mlir::ValueRange indices);

  mlir::Value add(mlir::Value a, mlir::Value c);
  mlir::Value sub(mlir::Value a, mlir::Value c);
  mlir::Value mul(mlir::Value a, mlir::Value c);
  mlir::Value div(mlir::Value a, mlir::Value c);
  mlir::Value max(mlir::Value a, mlir::Value c);
  mlir::Value neg(mlir::Value a);
  mlir::Value exp(mlir::Value a);
  mlir::Value sqrt(mlir::Value a);
  mlir::Value cos(mlir::Value a);
  mlir::Value sin(mlir::Value a);
  mlir::Value erf(mlir::Value a);
  mlir::Value tanh(mlir::Value a);

  mlir::Value addIndex(mlir::Value a, mlir::Value c);
  mlir::Value subIndex(mlir::Value a, mlir::Value c);
  mlir::Value mulIndex(mlir::Value a, mlir::Value c);
  mlir::Value divIndex(mlir::Value a, mlir::Value c);
  mlir::Value remIndex(mlir::Value a, mlir::Value c);
  mlir::Value minIndex(mlir::Value a, mlir::Value c);
  mlir::Value lessThan(mlir::Value a, mlir::Value c);

private:
  mlir::OpBuilder &b;
  mlir::Location loc;
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
};

/// What identifies a kernel: the op's name and attributes and the types it
/// is called with.
std::string kernelKey(mlir::Operation *op, mlir::ValueRange args);
/// The same for kernels that are not one op's: a name and the argument types.
std::string kernelKey(llvm::StringRef name, mlir::ValueRange args);
/// The same from argument types (kernels that are not called from IR).
std::string kernelKey(mlir::Operation *op, mlir::TypeRange argTypes);
std::string kernelKey(llvm::StringRef name, mlir::TypeRange argTypes);

/// A norm op's (rms_norm, layer_norm, add_rms_norm, add_layer_norm) epsilon
/// and whether it centres (layer norm); both targets' norm kernels read it.
std::pair<double, bool> normKind(mlir::Operation *op);

/// What a rotary embedding rotates by: frequencies, or cos/sin tables.
struct Rotation {
  int64_t headDim = 0;
  int64_t halfRotary = 0; // rotary_dim / 2
  bool interleaved = false;
  mlir::Value invFreq, cosCache, sinCache; // one form or the other
};

/// Rotates rotary pair `i` of one head at `position`: features (i, i +
/// rotary/2), or (2i, 2i + 1) when interleaved.
void emitRotatedPair(KernelBuilder &kb, const Rotation &rotation, mlir::Value position,
                     mlir::Value i, llvm::function_ref<mlir::Value(mlir::Value)> read,
                     llvm::function_ref<void(mlir::Value, mlir::Value)> write);
/// Rotates one head of one row at `position`: `read(i)` gives feature i of
/// the head, `write(i, value)` stores feature i of the result.
void emitRotatedHead(KernelBuilder &kb, const Rotation &rotation, mlir::Value position,
                     llvm::function_ref<mlir::Value(mlir::Value)> read,
                     llvm::function_ref<void(mlir::Value, mlir::Value)> write);

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

/// output = epilogue(input * weight); weight [in, out], or [out, in] if
/// `transposed`. The one place that chooses between BLAS and generated loops;
/// the generated ones read weights [out, in] only (llm-lower-to-cpu lays
/// weights out so when they are the strategy).
mlir::LogicalResult lowerMatmul(StepLowering &step, mlir::Location loc, mlir::Value input,
                                mlir::Value weight, bool transposed, mlir::Value output,
                                const Epilogue &epilogue);

} // namespace llmc::cpu

#endif // LLMC_PASSES_CPULOWERING_H
