//===- LowerToCuda.cpp - the step as GPU kernels and a launch plan --------===//
//
// Walks the planned, ragged llm step in order and gives every value a place
// (TensorRef): a step input, a view of the workspace at its planned offset,
// or a weight in weights.bin. Every op becomes launches or a GEMM in the
// plan (docs/cuda.md); the step function itself is erased.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CUDA/CudaLowering.h"
#include "passes/Codegen/Common/StepWalker.h"
#include "passes/Serving/StepFunction.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Regex.h"

#define DEBUG_TYPE "llm-lower-to-cuda"

namespace llmc {
#define GEN_PASS_DEF_LLMLOWERTOCUDAPASS
#include "passes/Codegen/CUDA/Passes.h.inc"
} // namespace llmc

using namespace mlir;
using namespace llmc::stepplan; // the plan's keys, symbols and buffers

namespace llmc {
namespace {

constexpr int64_t kWeightAlignment = 256;

/// Bytes of one element of `type`.
int64_t elementBytes(Type type) { return llvm::divideCeil(type.getIntOrFloatBitWidth(), 8); }

/// True when `body` is `llm.yield(acc)` or `llm.yield(acc + extra0)`;
/// `withExtra` tells which.
bool isPlainBody(Region &body, bool &withExtra) {
  Block &block = body.front();
  Value yielded = block.getTerminator()->getOperand(0);
  if (yielded == block.getArgument(0) && block.getNumArguments() == 1) {
    withExtra = false;
    return true;
  }
  auto add = yielded.getDefiningOp<arith::AddFOp>();
  if (!add || block.getNumArguments() != 2 || &block.front() != add.getOperation()) return false;
  withExtra = true;
  return (add.getLhs() == block.getArgument(0) && add.getRhs() == block.getArgument(1)) ||
         (add.getRhs() == block.getArgument(0) && add.getLhs() == block.getArgument(1));
}

/// CUDA's places: every value is a TensorRef into one of the plan's
/// buffers, and every compute op launches or a GEMM in the plan.
class CudaStepWalker final : public codegen::StepWalker<cuda::TensorRef> {
public:
  CudaStepWalker(cuda::StepContext &step, StringRef dtype, std::string &attentionSource)
      : step(step), dtype(dtype), attentionSource(attentionSource) {}

  /// The step ABI's inputs as the runtime's device buffers (docs/cuda.md).
  LogicalResult placeInputs(func::FuncOp model) {
    MLIRContext *context = model.getContext();
    Builder b(context);
    auto sym = [&](StringRef name) { return cuda::planDim(context, name); };
    auto dim = [&](int64_t value) { return cuda::planDim(context, value); };
    struct Input {
      StringRef role;
      SmallVector<Attribute> shape;
    };
    Input inputs[] = {{abi::kTokens, {sym(kTokensSymbol)}},
                      {abi::kPositions, {sym(kTokensSymbol)}},
                      // N + 1 entries; the attention kernels take it as a pointer.
                      {abi::kCuSeqlensQ, {sym(kSeqsSymbol)}},
                      {abi::kContextLens, {sym(kSeqsSymbol)}},
                      {abi::kBlockTables, {sym(kSeqsSymbol), sym(kBlockTableWidthSymbol)}},
                      {abi::kSlotMapping, {sym(kTokensSymbol)}},
                      {abi::kLogitsIndices, {sym(kSeqsSymbol)}}};
    for (Input &input : inputs) {
      BlockArgument argument = abi::findInput(model, input.role);
      if (!argument) return model.emitError("has no '") << input.role << "' input";
      refs[argument] = cuda::contiguousTensor(context, input.role, 0, b.getI32Type(), input.shape);
    }
    BlockArgument pool = abi::findInput(model, abi::kKvPool);
    if (!pool) return model.emitError("has no '") << abi::kKvPool << "' input";
    auto poolType = cast<ShapedType>(pool.getType());
    if (!poolType.getElementType().isF32())
      return model.emitError("has a non-f32 KV cache; the model must be f32 before lowering");
    auto shape = poolType.getShape();
    refs[pool] = cuda::contiguousTensor(context, abi::kKvPool, 0, step.storageType,
                                        {dim(shape[0]), sym(kNumBlocksSymbol), dim(shape[2]),
                                         dim(shape[3]), dim(shape[4]), dim(shape[5])});
    auto logits = cast<ShapedType>(model.getResultTypes().front());
    logitsRef = cuda::contiguousTensor(context, kLogitsBuffer, 0, b.getF32Type(),
                                       {sym(kSeqsSymbol), dim(logits.getDimSize(1))});
    return success();
  }

  codegen::WeightLayout weightLayout{kWeightAlignment};

private:
  using Operand = std::optional<cuda::TensorRef>;

  LogicalResult lowerCompute(Operation *op, ArrayRef<Operand> operands,
                             ArrayRef<cuda::TensorRef> outputs) override {
    return TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](llm::LinearOp linear) {
          return lowerMatmul(op, linear.getWeight(), linear.getTransposeWeight(), *operands[0],
                             codegen::loweredOperand(linear.getBiasMutable(), operands),
                             outputs[0]);
        })
        .Case([&](llm::FusedLinearOp linear) {
          return lowerFusedLinear(linear, operands, outputs[0]);
        })
        .Case([&](llm::LogitsOp head) {
          auto bias = codegen::loweredOperand(head.getBiasMutable(), operands);
          if (head.getEpilogue().empty())
            return lowerMatmul(op, head.getWeight(), head.getTransposeWeight(), *operands[0],
                               bias, logitsRef);
          return lowerThroughScratch(op, head.getWeight(), head.getTransposeWeight(),
                                     cast<ShapedType>(head.getType()).getShape().back(),
                                     *operands[0],
                                     {&head.getEpilogue(), 1, bias, {}}, logitsRef);
        })
        .Case<llm::PagedKvWriteOp, llm::RopePagedKvWriteOp>([&](Operation *write) {
          return cuda::lowerPagedKvWrite(step, write, operands, outputs);
        })
        .Case([&](llm::PagedAttentionOp attention) {
          return cuda::lowerPagedAttention(step, attention, operands, outputs[0], attentionSource);
        })
        .Case([&](llm::MoeOp moe) {
          return cuda::lowerMoe(step, moe, operands, outputs[0], attentionSource);
        })
        .Case([&](llm::EmbeddingOp embedding) {
          return cuda::lowerEmbedding(step, embedding, operands, outputs[0]);
        })
        .Case([&](llm::GatherRowsOp gather) {
          return cuda::lowerGatherRows(step, gather, operands, outputs[0]);
        })
        .Case([&](llm::SplitQkvOp split) {
          return cuda::lowerSplitQkv(step, split, operands, outputs);
        })
        .Case([&](llm::ConcatHeadsOp concat) {
          return cuda::lowerConcatHeads(step, concat, operands, outputs[0]);
        })
        .Case([&](llm::HeadLinearOp linear) {
          return linear.emitOpError(
              "(multi-head latent attention's per-head up-projection) has no CUDA lowering; "
              "the CUDA attention kernels take one head_dim, the CPU target runs it");
        })
        .Case<llm::RmsNormOp, llm::LayerNormOp, llm::AddRmsNormOp, llm::AddLayerNormOp>(
            [&](Operation *norm) { return cuda::lowerNorm(step, norm, operands, outputs); })
        .Case<llm::RopeOp, llm::RopeCachedOp>(
            [&](Operation *rope) { return cuda::lowerRope(step, rope, operands, outputs[0]); })
        .Case([&](llm::ScalarFunctionOpInterface elementwise) {
          return cuda::lowerScalarFunction(step, elementwise, operands, outputs[0]);
        })
        .Default([&](Operation *other) { return other->emitOpError("has no CUDA lowering"); });
  }

  /// Rotary frequencies and cos/sin tables stay f32: positions far into a
  /// long context need their precision. So does a mixture of experts'
  /// selection bias, which ranks the experts as the router logits do.
  static bool keptF32(Operation *op, unsigned operand) {
    if (isa<llm::RopeOp, llm::RopeCachedOp>(op)) return operand >= 2;
    if (isa<llm::RopePagedKvWriteOp>(op)) return operand >= 6;
    if (auto moe = dyn_cast<llm::MoeOp>(op))
      return moe.getSelectionBias() &&
             operand == moe.getSelectionBiasMutable().begin()->getOperandNumber();
    return false;
  }

  /// The same rows, `size` columns from `column`: a strided view.
  cuda::TensorRef columnSlice(Location loc, const cuda::TensorRef &input, int64_t column,
                              int64_t size) override {
    cuda::TensorRef part = input.shifted(column * elementBytes(input.elementType));
    part.sizes[1] = cuda::planDim(loc.getContext(), size);
    part.contiguous = false;
    return part;
  }

  /// A bias rides on cuBLASLt's epilogue and `acc + residual` on beta = 1;
  /// other epilogues run as a kernel over the f32 product in scratch.
  LogicalResult lowerFusedLinear(llm::FusedLinearOp linear,
                                 ArrayRef<Operand> operands,
                                 const cuda::TensorRef &output) {
    bool withExtra = false;
    if (!linear.getGated() && isPlainBody(linear.getEpilogue(), withExtra)) {
      std::optional<cuda::TensorRef> residual;
      if (withExtra) {
        residual = codegen::loweredOperands(linear.getExtras(), operands).front();
        if (residual->sizes.size() != 2)
          return lowerGeneralEpilogue(linear, operands, output);
      }
      return lowerMatmul(linear, linear.getWeight(), linear.getTransposeWeight(),
                         *operands[0], codegen::loweredOperand(linear.getBiasMutable(), operands),
                         output, residual);
    }
    return lowerGeneralEpilogue(linear, operands, output);
  }

  LogicalResult lowerGeneralEpilogue(llm::FusedLinearOp linear,
                                     ArrayRef<Operand> operands,
                                     const cuda::TensorRef &output) {
    cuda::EpilogueRefs epilogue{&linear.getEpilogue(), linear.getNumAccumulators(),
                                codegen::loweredOperand(linear.getBiasMutable(), operands), {}};
    for (const Operand &extra : codegen::loweredOperands(linear.getExtras(), operands)) {
      if (!extra) return linear.emitOpError("has an extra operand without a place");
      epilogue.extras.push_back(*extra);
    }
    return lowerThroughScratch(linear, linear.getWeight(), linear.getTransposeWeight(),
                               linear.getProductColumns(), *operands[0], epilogue, output);
  }

  /// The product of `columns` columns into f32 scratch, then the epilogue
  /// kernel from there into `output`.
  LogicalResult lowerThroughScratch(Operation *op, Value weight, bool transposed, int64_t columns,
                                    const cuda::TensorRef &input,
                                    const cuda::EpilogueRefs &epilogue,
                                    const cuda::TensorRef &output) {
    MLIRContext *context = op->getContext();
    bool perSeq = isa<llm::LogitsOp>(op) || perSequence.contains(op->getResult(0));
    int64_t rows = perSeq ? step.maxSeqs : step.maxTokens;
    int64_t offset = step.scratch(rows * columns * 4);
    cuda::TensorRef product = cuda::contiguousTensor(
        context, kWorkspaceBuffer, offset, Float32Type::get(context),
        {input.sizes[0], cuda::planDim(context, columns)});
    if (failed(lowerMatmul(op, weight, transposed, input, std::nullopt, product)))
      return failure();
    return cuda::lowerEpilogue(step, op, epilogue, product, output);
  }

  /// D = input * weight (+ bias) (+ residual), through cuBLASLt.
  LogicalResult lowerMatmul(Operation *op, Value weightValue,
                            bool transposed, const cuda::TensorRef &input,
                            std::optional<cuda::TensorRef> bias, const cuda::TensorRef &output,
                            std::optional<cuda::TensorRef> residual = std::nullopt) {
    auto weightShape = cast<ShapedType>(weightValue.getType()).getShape();
    if (weightShape.size() != 2) return op->emitOpError("has a weight that is not 2-D");
    int64_t k = transposed ? weightShape[1] : weightShape[0];
    int64_t n = transposed ? weightShape[0] : weightShape[1];
    // cuBLASLt's bias is D's type, where ours is stored in the storage type: an
    // f32 result (logits, router logits) adds its bias in the epilogue kernel.
    if (bias && output.elementType.isF32() && !residual)
      return lowerThroughScratch(op, weightValue, transposed, n, input,
                                 {&noEpilogue, 1, bias, {}}, output);
    auto weight = refOf(weightValue, op, 1);
    if (failed(weight)) return failure();
    auto lda = input.rowStride(), ldd = output.rowStride();
    if (!lda || !ldd) return op->emitOpError("has an operand that is not a matrix of unit column stride");
    if (input.elementType != step.storageType)
      return op->emitOpError("multiplies ")
             << input.elementType << "; the GEMM takes " << step.storageType;
    cuda::PlanBuilder::Gemm gemm;
    gemm.m = input.sizes[0];
    gemm.n = n;
    gemm.k = k;
    gemm.a = input;
    gemm.lda = *lda;
    gemm.b = **weight;
    gemm.ldb = k; // placeWeight stored it [n, k]
    gemm.bTransposed = true;
    gemm.d = output;
    gemm.ldd = *ldd;
    gemm.bias = bias;
    if (residual) {
      auto ldc = residual->rowStride();
      if (!ldc) return op->emitOpError("has a residual that is not a matrix of unit column stride");
      gemm.c = residual;
      gemm.ldc = *ldc;
    }
    step.plan.gemm(gemm);
    return success();
  }

  /// Whether `operand` of `user` is an [in, out] matmul weight, which is
  /// stored transposed: every GEMM's B is [n, k] (b_layout "nk"), so that the
  /// GEMV kernel of decode steps (attention/Gemv.cuh) reads one output's
  /// weights as one contiguous row, and cuBLASLt runs its TN products.
  static bool storedTransposed(Operation *user, unsigned operand) {
    if (operand != 1) return false; // (input, weight, ...)
    return TypeSwitch<Operation *, bool>(user)
        .Case<llm::LinearOp, llm::FusedLinearOp, llm::LogitsOp>(
            [](auto matmul) { return !matmul.getTransposeWeight(); })
        .Default([](Operation *) { return false; });
  }

  /// Weights are stored in the storage type, rotary tables in f32; matmul
  /// weights [n, k] (storedTransposed).
  FailureOr<cuda::TensorRef> placeWeight(Value value, Operation *user,
                                         unsigned operandNumber) override {
    if (isa<llm::PermuteFeaturesOp>(user))
      return user->emitOpError("(GPTQ act-order) has no CUDA kernel yet; the CPU target runs it"),
             failure();
    bool transpose = storedTransposed(user, operandNumber);
    auto data = transpose ? codegen::transposedWeightConstant(value, "CUDA")
                          : codegen::weightConstant(value, "CUDA");
    if (failed(data)) return failure();
    auto type = cast<ShapedType>(data->getType());
    Type stored = keptF32(user, operandNumber) ? type.getElementType() : step.storageType;
    auto &slot = weightRefs[{value, stored, unsigned(transpose)}];
    if (!slot) slot = placeWeight(value.getDefiningOp(), *data, stored);
    return *slot;
  }

  /// Places `data` in weights.bin as `stored` (converted when written).
  cuda::TensorRef placeWeight(Operation *def, ElementsAttr data, Type stored) {
    MLIRContext *context = def->getContext();
    auto type = cast<ShapedType>(data.getType());
    std::string dtypeName = stored.isF32() ? "f32" : dtype.str();
    int64_t offset =
        weightLayout.place(def, data, type.getNumElements() * elementBytes(stored), dtypeName);
    SmallVector<Attribute> shape;
    for (int64_t dim : type.getShape()) shape.push_back(cuda::planDim(context, dim));
    return cuda::contiguousTensor(context, kWeightsBuffer, offset, stored, shape);
  }

  /// Whether every use of `value` is a mixture of experts' router logits.
  static bool onlyRoutes(Value value) {
    return !value.use_empty() && llvm::all_of(value.getUses(), [](OpOperand &use) {
      auto moe = dyn_cast<llm::MoeOp>(use.getOwner());
      return moe && use.get() == moe.getRouterLogits();
    });
  }

  FailureOr<cuda::TensorRef> workspaceView(Operation *op, Value result, int64_t offset,
                                           int64_t features, bool perSequenceRows) override {
    Type element = cast<ShapedType>(result.getType()).getElementType();
    // Planned as f32, activations fit in the narrower storage type. Router
    // logits stay f32: a rounding of theirs may swap two experts' ranks.
    if (element.isF32()) {
      if (!onlyRoutes(result)) element = step.storageType;
    } else if (!element.isInteger(32) && !element.isInteger(64)) {
      return op->emitOpError("computes ") << element << "; the model must be f32 before lowering";
    }
    MLIRContext *context = op->getContext();
    StringRef rows = perSequenceRows ? kSeqsSymbol : kTokensSymbol;
    return cuda::contiguousTensor(context, kWorkspaceBuffer, offset, element,
                                  {cuda::planDim(context, rows), cuda::planDim(context, features)});
  }

  cuda::StepContext &step;
  StringRef dtype;
  std::string &attentionSource;
  cuda::TensorRef logitsRef;
  /// The epilogue of a product that only adds its bias.
  Region noEpilogue;
  /// Per (weight, stored type, stored transposed): where weights.bin holds it.
  DenseMap<std::tuple<Value, Type, unsigned>, std::optional<cuda::TensorRef>> weightRefs;
};

struct LlmLowerToCudaPass : impl::LlmLowerToCudaPassBase<LlmLowerToCudaPass> {
  using LlmLowerToCudaPassBase::LlmLowerToCudaPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!llvm::Regex("^sm_[0-9]+a?$").match(arch)) {
      module.emitError("arch must be sm_XX (sm_80, sm_90, ...), not '") << arch << "'";
      return signalPassFailure();
    }
    if (dtype != "bf16" && dtype != "f16") {
      module.emitError("dtype must be bf16 or f16, not '") << dtype << "'";
      return signalPassFailure();
    }
    func::FuncOp model = abi::findPlannedStep(module);
    if (!model || failed(lower(module, model))) return signalPassFailure();
  }

  LogicalResult lower(ModuleOp module, func::FuncOp model) {
    // The runtime's device inputs hold one block table a sequence.
    if (model->hasAttr(kKvGroupsAttr))
      return model.emitError("has KV cache groups (llm-kv-cache-groups); the CUDA target keeps "
                             "one block table for every layer");
    if (codegen::hiddenStatesStep(model))
      return model.emitError("returns hidden states (a model exported without its LM head); the "
                             "CUDA target serves generation only");
    if (codegen::stepOutput(model) == kClassLogitsOutput)
      return model.emitError("returns a sequence classifier's logits; the CUDA target serves "
                             "generation only");
    MLIRContext *context = module.getContext();
    Builder b(context);
    Type storageType = dtype == "bf16" ? Type(b.getBF16Type()) : Type(b.getF16Type());
    cuda::PlanBuilder plan(context);
    cuda::KernelModule kernels(module, arch);
    cuda::StepContext step{plan, kernels, storageType};
    std::string attentionSource;
    CudaStepWalker walker(step, dtype, attentionSource);
    if (failed(walker.placeInputs(model))) return failure();
    // The planned step's limits size the scratch of the ops that need it.
    auto info = codegen::plannedStepInfo(model);
    if (failed(info)) return failure();
    step.scratchOffset = llvm::alignTo(info->workspaceBytes, cuda::kScratchAlignment);
    step.maxTokens = info->maxNumBatchedTokens;
    step.maxSeqs = info->maxNumSeqs;
    if (failed(walker.walk(model))) return failure();

    // The device workspace: the planned activations, then the ops' scratch.
    info->workspaceBytes = step.scratchOffset + step.scratchBytes;
    setStepInfo(module, *info);
    module->setAttr("llmc.cuda_plan", plan.steps());
    module->setAttr("llmc.cuda_attention_source", b.getStringAttr(attentionSource));
    module->setAttr("llmc.cuda_scratch_bytes", b.getI64IntegerAttr(step.scratchBytes));
    module->setAttr("llmc.cuda_workspace_bytes", b.getI64IntegerAttr(step.scratchOffset));
    module->setAttr("llmc.cuda_arch", b.getStringAttr(arch));
    module->setAttr("llmc.dtype", b.getStringAttr(dtype));
    walker.weightLayout.record(module);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), b.getUnitAttr());
    model.erase();
    return success();
  }
};

} // namespace
} // namespace llmc
