//===- LowerToCpu.cpp - the step function for the host CPU ----------------===//
//
// Turns the planned, ragged llm step into `llmc_step` (the step ABI of
// include/llmc/Runtime/StepABI.h) on memrefs: every activation a view of the
// workspace at its planned offset, every weight a view of weights.bin at an
// offset recorded for the artifact writer, and every op a call of a kernel.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"
#include "passes/Serving/StepFunction.h"

#include "llmc/Support/ElementsData.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

#define DEBUG_TYPE "llm-lower-to-cpu"

namespace llmc {
#define GEN_PASS_DEF_LLMLOWERTOCPUPASS
#include "passes/Codegen/CPU/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {

namespace {

constexpr int64_t kWeightAlignment = 64;

/// The step ABI's arguments after `api`, in order.
constexpr llvm::StringLiteral kStepInputs[] = {abi::kTokens,       abi::kPositions,
                                               abi::kCuSeqlensQ,   abi::kContextLens,
                                               abi::kBlockTables,  abi::kSlotMapping,
                                               abi::kLogitsIndices, abi::kKvPool};

/// A memref type with the tensor's shape (dynamic dims stay dynamic).
MemRefType memrefLike(Type tensor) {
  auto shaped = cast<ShapedType>(tensor);
  return MemRefType::get(shaped.getShape(), shaped.getElementType());
}

struct LlmLowerToCpuPass : impl::LlmLowerToCpuPassBase<LlmLowerToCpuPass> {
  using LlmLowerToCpuPassBase::LlmLowerToCpuPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (matmul != "blas" && matmul != "generated") {
      module.emitError("matmul must be blas or generated, not '") << matmul << "'";
      return signalPassFailure();
    }
    func::FuncOp model = abi::findPlannedStep(module);
    if (!model || failed(lower(module, model))) return signalPassFailure();
  }

  LogicalResult lower(ModuleOp module, func::FuncOp model) {
    MLIRContext *context = module.getContext();
    OpBuilder b(context);
    Location loc = model.getLoc();

    // The step function's signature: api, the ABI inputs, weights, workspace, logits.
    SmallVector<Type> types{LLVM::LLVMPointerType::get(context)};
    SmallVector<BlockArgument> modelInputs;
    for (StringRef role : kStepInputs) {
      BlockArgument input = abi::findInput(model, role);
      if (!input) return model.emitError("has no '") << role << "' input";
      auto tensor = cast<RankedTensorType>(input.getType());
      if (role == abi::kKvPool && !tensor.getElementType().isF32())
        return model.emitError("has a non-f32 KV cache; only f32 models are lowered");
      modelInputs.push_back(input);
      types.push_back(memrefLike(tensor));
    }
    auto bytes = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    types.append({bytes, bytes, memrefLike(model.getResultTypes().front())});

    b.setInsertionPoint(model);
    auto stepFunc = func::FuncOp::create(b, loc, "llmc_step", b.getFunctionType(types, {}));
    stepFunc->setAttr("llvm.emit_c_interface", b.getUnitAttr());
    Block *body = stepFunc.addEntryBlock();
    b.setInsertionPointToStart(body);

    cpu::StepLowering step(module, b);
    perSequence = abi::perSequenceValues(model);
    builderForViews = &b;
    step.generatedMatmul = matmul == "generated";
    step.api = body->getArgument(0);
    for (auto [index, input] : llvm::enumerate(modelInputs))
      memrefs[input] = body->getArgument(index + 1);
    weightsArg = body->getArgument(types.size() - 3);
    workspaceArg = body->getArgument(types.size() - 2);
    Value logits = body->getArgument(types.size() - 1);
    step.numTokens = memref::DimOp::create(b, loc, body->getArgument(1), 0);
    step.numSeqs = memref::DimOp::create(b, loc, body->getArgument(7), 0);

    for (Operation &op : model.getBody().front())
      if (failed(lowerOp(step, &op, logits))) return failure();
    func::ReturnOp::create(b, loc);

    if (failed(recordArtifactAttributes(module, model))) return failure();
    model.erase();
    return success();
  }

  LogicalResult lowerOp(cpu::StepLowering &step, Operation *op, Value logits) {
    if (isa<llm::ConstantOp, llm::DequantizeOp, func::ReturnOp>(op))
      return success(); // weights become views where they are used
    if (isa<llm::SplitHeadsOp, llm::MergeHeadsOp>(op)) {
      memrefs[op->getResult(0)] = memrefs.lookup(op->getOperand(0));
      return success();
    }
    if (auto split = dyn_cast<llm::SplitOp>(op)) return lowerSplit(split);
    SmallVector<Value> operands;
    for (OpOperand &operand : op->getOpOperands()) {
      // Matmul weights are placed by lowerMatmul, in the layout it reads.
      if (isa<llm::LinearOp, llm::LogitsOp, llm::FusedLinearOp>(op) &&
          operand.getOperandNumber() == 1) {
        operands.push_back(nullptr);
        continue;
      }
      auto memref = memrefOf(operand.get());
      if (failed(memref)) return failure();
      operands.push_back(*memref);
    }
    SmallVector<Value> outputs;
    if (!isa<llm::PagedKvWriteOp, llm::LogitsOp>(op))
      if (failed(workspaceViews(step, op, outputs))) return failure();

    return TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](llm::LinearOp linear) {
          cpu::Epilogue epilogue;
          epilogue.bias = codegen::loweredOperand<Value>(linear.getBiasMutable(), operands);
          return lowerMatmul(step, op, linear.getWeight(), linear.getTransposeWeight(), operands[0],
                             outputs[0], epilogue);
        })
        .Case([&](llm::FusedLinearOp linear) {
          cpu::Epilogue epilogue{
              &linear.getEpilogue(), linear.getGated(),
              codegen::loweredOperand<Value>(linear.getBiasMutable(), operands),
              SmallVector<Value>(codegen::loweredOperands<Value>(linear.getExtras(), operands))};
          return lowerMatmul(step, op, linear.getWeight(), linear.getTransposeWeight(), operands[0],
                             outputs[0], epilogue);
        })
        .Case([&](llm::LogitsOp head) {
          return lowerMatmul(step, op, head.getWeight(), head.getTransposeWeight(), operands[0],
                             logits, {});
        })
        .Case([&](llm::PagedKvWriteOp write) {
          memrefs[write.getResult()] = operands[0];
          return cpu::lowerPagedKvWrite(step, write, operands);
        })
        .Case([&](llm::RopePagedKvWriteOp write) {
          memrefs[write.getUpdatedPool()] = operands[0];
          return cpu::lowerRopePagedKvWrite(step, write, operands, outputs[0]);
        })
        .Case([&](llm::PagedAttentionOp attention) {
          return cpu::lowerPagedAttention(step, attention, operands, outputs[0]);
        })
        .Case([&](llm::EmbeddingOp embedding) {
          return cpu::lowerEmbedding(step, embedding, operands, outputs[0]);
        })
        .Case([&](llm::GatherRowsOp gather) {
          return cpu::lowerGatherRows(step, gather, operands, outputs[0]);
        })
        .Case([&](llm::SplitQkvOp split) { return cpu::lowerSplitQkv(step, split, operands, outputs); })
        .Case<llm::RmsNormOp, llm::LayerNormOp>(
            [&](Operation *norm) { return cpu::lowerNorm(step, norm, operands, outputs[0]); })
        .Case<llm::AddRmsNormOp, llm::AddLayerNormOp>(
            [&](Operation *norm) { return cpu::lowerAddNorm(step, norm, operands, outputs); })
        .Case<llm::RopeOp, llm::RopeCachedOp>(
            [&](Operation *rope) { return cpu::lowerRope(step, rope, operands, outputs[0]); })
        .Case([&](llm::ScalarFunctionOpInterface elementwise) {
          return cpu::lowerScalarFunction(step, elementwise, operands, outputs[0]);
        })
        .Default([&](Operation *other) { return other->emitOpError("has no CPU lowering"); });
  }

  /// The parts of an llm.split are strided views of its input's rows.
  LogicalResult lowerSplit(llm::SplitOp split) {
    Value input = memrefs.lookup(split.getInput());
    if (!input) return split.emitOpError("splits a value that has no memory");
    OpBuilder &b = *builderForViews;
    Location loc = split.getLoc();
    Value rows = memref::DimOp::create(b, loc, input, 0);
    int64_t column = 0;
    for (auto [result, size] : llvm::zip(split.getResults(), split.getSizes())) {
      SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(column)};
      SmallVector<OpFoldResult> sizes{rows, b.getIndexAttr(size)};
      SmallVector<OpFoldResult> strides{b.getIndexAttr(1), b.getIndexAttr(1)};
      memrefs[result] = memref::SubViewOp::create(b, loc, input, offsets, sizes, strides);
      column += size;
    }
    return success();
  }

  /// A linear layer or the logits head. The generated matmul takes its
  /// weights [out, in]: an [in, out] weight is transposed at compile time.
  LogicalResult lowerMatmul(cpu::StepLowering &step, Operation *op, Value weightValue,
                            bool transposed, Value input, Value output,
                            const cpu::Epilogue &epilogue) {
    bool flip = step.generatedMatmul && !transposed;
    auto weight = flip ? transposedWeightOf(weightValue) : memrefOf(weightValue);
    if (failed(weight)) return failure();
    return cpu::lowerMatmul(step, op->getLoc(), input, *weight, transposed || flip, output,
                            epilogue);
  }

  /// The memref of an operand: a step input, an earlier result, a weight
  /// view, or null for an omitted optional operand.
  FailureOr<Value> memrefOf(Value value) {
    if (!value) return Value();
    if (Value known = memrefs.lookup(value)) return known;
    Operation *def = value.getDefiningOp();
    auto data = codegen::weightConstant(value, "CPU");
    if (failed(data)) return failure();
    return memrefs[value] = weightView(def, *data);
  }

  /// The [out, in] view of an [in, out] weight: the generated matmul reads
  /// one contiguous weight row per output, so weights.bin stores them so.
  FailureOr<Value> transposedWeightOf(Value value) {
    if (Value known = transposedMemrefs.lookup(value)) return known;
    auto data = codegen::weightConstant(value, "CPU");
    if (failed(data)) return failure();
    auto type = cast<ShapedType>(data->getType());
    std::vector<char> storage;
    auto bytes = elementsBytes(*data, storage);
    if (failed(bytes) || type.getRank() != 2)
      return value.getDefiningOp()->emitOpError("is a matmul weight without 2-D data"), failure();
    int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
    const auto *source = reinterpret_cast<const float *>(bytes->data());
    std::vector<float> transposed(rows * cols);
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t col = 0; col < cols; ++col) transposed[col * rows + row] = source[row * cols + col];
    auto transposedType = RankedTensorType::get({cols, rows}, type.getElementType());
    auto attr = cast<ElementsAttr>(DenseResourceElementsAttr::get(
        transposedType, "transposed",
        HeapAsmResourceBlob::allocateAndCopyInferAlign(ArrayRef<float>(transposed))));
    return transposedMemrefs[value] = weightView(value.getDefiningOp(), attr);
  }

  /// Places `data` in weights.bin and views it from the step.
  Value weightView(Operation *def, ElementsAttr data) {
    auto type = cast<ShapedType>(data.getType());
    int64_t placed = weightLayout.place(def, data, type.getNumElements() * 4);
    OpBuilder &b = *builderForViews;
    Value offset = arith::ConstantIndexOp::create(b, def->getLoc(), placed);
    return memref::ViewOp::create(b, def->getLoc(), memrefLike(type), weightsArg, offset,
                                  ValueRange{});
  }

  /// Views of the workspace at the planned offsets for `op`'s results.
  LogicalResult workspaceViews(cpu::StepLowering &step, Operation *op,
                               SmallVectorImpl<Value> &outputs) {
    auto offsets = op->getAttrOfType<DenseI64ArrayAttr>("llmc.workspace_offsets");
    if (!offsets || offsets.size() != static_cast<int64_t>(op->getNumResults()))
      return op->emitOpError("has no planned workspace offsets: run llm-plan-memory first");
    for (auto [result, offset] : llvm::zip(op->getResults(), offsets.asArrayRef())) {
      if (offset < 0) continue; // the pool a fused KV write updates in place
      auto tensor = cast<RankedTensorType>(result.getType());
      if (!tensor.getElementType().isF32() && !isa<llm::GatherRowsOp>(op))
        return op->emitOpError("computes ") << tensor.getElementType()
                                            << "; only f32 models are lowered";
      // Activations are [rows, features], heads included in the features.
      int64_t features = 1;
      for (int64_t dim : tensor.getShape().drop_front()) features *= dim;
      auto type = MemRefType::get({ShapedType::kDynamic, features}, tensor.getElementType());
      Value rows = perSequence.contains(result) ? step.numSeqs : step.numTokens;
      Value start = arith::ConstantIndexOp::create(step.b, op->getLoc(), offset);
      Value view = memref::ViewOp::create(step.b, op->getLoc(), type, workspaceArg, start,
                                          ValueRange{rows});
      memrefs[result] = view;
      outputs.push_back(view);
    }
    return success();
  }

  /// What the artifact writer needs: the weight layout and the step's config.
  LogicalResult recordArtifactAttributes(ModuleOp module, func::FuncOp model) {
    auto info = codegen::plannedStepInfo(model);
    if (failed(info)) return failure();
    setStepInfo(module, *info);
    Builder b(module.getContext());
    weightLayout.record(module);
    module->setAttr("llmc.matmul", b.getStringAttr(matmul));
    return success();
  }

  DenseMap<Value, Value> memrefs;
  DenseMap<Value, Value> transposedMemrefs;
  DenseSet<Value> perSequence; // abi::perSequenceValues of the step
  codegen::WeightLayout weightLayout{kWeightAlignment};
  Value weightsArg, workspaceArg;
  OpBuilder *builderForViews = nullptr;
};

} // namespace
} // namespace llmc
