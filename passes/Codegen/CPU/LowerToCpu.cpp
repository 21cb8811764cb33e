//===- LowerToCpu.cpp - the step function for the host CPU ----------------===//
//
// Turns the planned, ragged llm step into `llmc_step` (the step ABI of
// include/llmc/Runtime/StepABI.h) on memrefs: every activation a view of the
// workspace at its planned offset, every weight a view of weights.bin at an
// offset recorded for the artifact writer, and every op a call of a kernel.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"
#include "passes/Codegen/Common/StepWalker.h"
#include "passes/Serving/StepFunction.h"

#include "llmc/Support/ElementsData.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
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

/// A memref type with the tensor's shape (dynamic dims stay dynamic).
MemRefType memrefLike(Type tensor) {
  auto shaped = cast<ShapedType>(tensor);
  return MemRefType::get(shaped.getShape(), shaped.getElementType());
}

/// The CPU's places: every value is a memref in `llmc_step`, and every
/// compute op a call of a kernel.
class CpuStepWalker final : public codegen::StepWalker<Value, Value> {
public:
  /// `packQuantized`: keep quantised weights packed (the generated matmul
  /// only); `int8Products`: multiply those with int8-quantised rows, by
  /// these instructions.
  /// `weightDtype`: how the generated matmul stores its f32 weights, f32,
  /// rounded to bf16 or f16, or auto (storageOf); `bf16Products`: multiply
  /// bf16 ones by activations rounded to bf16, those in panels by AMX
  /// tiles with `amxTiles`; `codeTables`: read packed 4-bit codes through
  /// their block's values (AVX-512F).
  CpuStepWalker(cpu::StepLowering &step, Value weights, Value workspace, Value logits,
                bool packQuantized, std::optional<cpu::Int8Products> int8Products,
                StringRef weightDtype, bool bf16Products, bool amxTiles, bool codeTables)
      : step(step), weightsArg(weights), workspaceArg(workspace), logits(logits),
        packQuantized(packQuantized && step.generatedMatmul),
        int8Products(int8Products),
        weightDtype(step.generatedMatmul ? weightDtype.str() : "f32"),
        bf16Products(bf16Products), amxTiles(amxTiles), codeTables(codeTables) {}

  /// Gives the step's input `value` the memref `memref`.
  void setInput(Value value, Value memref) { refs[value] = memref; }

  codegen::WeightLayout weightLayout{kWeightAlignment};

private:
  LogicalResult lowerCompute(Operation *op, ArrayRef<Value> operands,
                             ArrayRef<Value> outputs) override {
    return TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](llm::LinearOp linear) {
          cpu::Epilogue epilogue;
          epilogue.bias = codegen::loweredOperand<Value>(linear.getBiasMutable(), operands);
          return lowerMatmul(op, linear.getWeight(), linear.getTransposeWeight(), operands[0],
                             outputs[0], epilogue);
        })
        .Case([&](llm::FusedLinearOp linear) {
          cpu::Epilogue epilogue{
              &linear.getEpilogue(), linear.getGated(),
              codegen::loweredOperand<Value>(linear.getBiasMutable(), operands),
              SmallVector<Value>(codegen::loweredOperands<Value>(linear.getExtras(), operands))};
          return lowerMatmul(op, linear.getWeight(), linear.getTransposeWeight(), operands[0],
                             outputs[0], epilogue);
        })
        .Case([&](llm::LogitsOp head) {
          cpu::Epilogue epilogue;
          if (!head.getEpilogue().empty()) epilogue.body = &head.getEpilogue();
          epilogue.bias = codegen::loweredOperand<Value>(head.getBiasMutable(), operands);
          return lowerMatmul(op, head.getWeight(), head.getTransposeWeight(), operands[0], logits,
                             epilogue);
        })
        .Case([&](llm::PagedKvWriteOp write) {
          return cpu::lowerPagedKvWrite(step, write, operands);
        })
        .Case([&](llm::RopePagedKvWriteOp write) {
          return cpu::lowerRopePagedKvWrite(step, write, operands, outputs[0]);
        })
        .Case([&](llm::PagedAttentionOp attention) {
          return cpu::lowerPagedAttention(step, attention, operands, outputs[0]);
        })
        .Case([&](llm::EmbeddingOp embedding) -> LogicalResult {
          if (sharesPanels(embedding.getTable())) {
            auto panels = panelWeightOf(embedding.getTable(), !embedding.getTransposeTable(), 1,
                                        /*pairs=*/false);
            if (failed(panels)) return failure();
            if (!*panels) return embedding.emitOpError("has a table without 2-D f32 data");
            return cpu::lowerPanelEmbedding(step, embedding, *panels, operands[1], outputs[0]);
          }
          if (halfTable(embedding)) {
            Value &table = halfTables[embedding.getTable()];
            if (!table) {
              auto constant = embedding.getTable().getDefiningOp<llm::ConstantOp>();
              table = weightView(constant, cast<ElementsAttr>(constant.getValue()),
                                 storageOf(embedding.getTable()));
            }
            return cpu::lowerEmbedding(step, embedding, {table, operands[1]}, outputs[0]);
          }
          if (!placesOwnOperand(op, 0))
            return cpu::lowerEmbedding(step, embedding, operands, outputs[0]);
          auto table = packedWeightOf(embedding.getTable());
          if (failed(table)) return failure();
          if (table->isQuantized())
            return cpu::lowerQuantizedEmbedding(step, embedding, *table, operands[1], outputs[0]);
          SmallVector<Value> widened{table->values, operands[1]};
          return cpu::lowerEmbedding(step, embedding, widened, outputs[0]);
        })
        .Case([&](llm::LoraOp lora) {
          return cpu::lowerLora(step, lora, operands[0], operands[1], outputs[0],
                                perSequence.contains(lora.getOutput()));
        })
        .Case([&](llm::GatherRowsOp gather) {
          return cpu::lowerGatherRows(step, gather, operands, outputs[0]);
        })
        .Case([&](llm::SplitQkvOp split) {
          return cpu::lowerSplitQkv(step, split, operands, outputs);
        })
        .Case([&](llm::ConcatHeadsOp concat) {
          return cpu::lowerConcatHeads(step, concat, operands, outputs[0]);
        })
        .Case([&](llm::HeadLinearOp linear) {
          return cpu::lowerHeadLinear(step, linear, operands, outputs[0]);
        })
        .Case([&](llm::PermuteFeaturesOp permute) -> LogicalResult {
          auto constant = permute.getIndices().getDefiningOp<llm::ConstantOp>();
          auto indices = constant ? dyn_cast<ElementsAttr>(constant.getValue()) : nullptr;
          if (!indices) return op->emitOpError("has indices that are not a constant");
          Value &placed = refs[permute.getIndices()];
          if (!placed) placed = weightView(constant, indices, "i32");
          return cpu::lowerPermuteFeatures(step, permute, {operands[0], placed}, outputs[0]);
        })
        .Case([&](llm::MoeOp moe) -> LogicalResult {
          auto experts = expertWeightsOf(moe, operands);
          if (failed(experts)) return failure();
          return cpu::lowerMoe(step, moe, operands[0], operands[1], (*experts)[0],
                               (*experts)[1], (*experts)[2],
                               codegen::loweredOperand<Value>(moe.getGateBiasMutable(), operands),
                               codegen::loweredOperand<Value>(moe.getUpBiasMutable(), operands),
                               codegen::loweredOperand<Value>(moe.getDownBiasMutable(), operands),
                               codegen::loweredOperand<Value>(moe.getSelectionBiasMutable(),
                                                              operands),
                               outputs[0]);
        })
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

  /// A strided view of the rows' columns.
  Value columnSlice(Location loc, const Value &input, int64_t column, int64_t size) override {
    OpBuilder &b = step.b;
    Value rows = memref::DimOp::create(b, loc, input, 0);
    SmallVector<OpFoldResult> offsets{b.getIndexAttr(0), b.getIndexAttr(column)};
    SmallVector<OpFoldResult> sizes{rows, b.getIndexAttr(size)};
    SmallVector<OpFoldResult> strides{b.getIndexAttr(1), b.getIndexAttr(1)};
    return memref::SubViewOp::create(b, loc, input, offsets, sizes, strides);
  }

  /// The generated kernels read a quantised embedding table packed, a
  /// shared or half one as they place it, and a permutation's i32 indices as
  /// they are.
  bool placesOwnOperand(Operation *op, unsigned operandNumber) override {
    if (isa<llm::PermuteFeaturesOp>(op)) return operandNumber == 1;
    if (isa<llm::MoeOp>(op)) { // the experts' weights, not their biases
      Value weight = op->getOperand(operandNumber);
      return operandNumber >= 2 && operandNumber <= 4 &&
             (isPackedExpert(weight) || storageOf(weight) != "f32");
    }
    if (auto embedding = dyn_cast<llm::EmbeddingOp>(op))
      return operandNumber == 0 &&
             ((packQuantized && !embedding.getTransposeTable() &&
               embedding.getTable().getDefiningOp<llm::DequantizeOp>()) ||
              sharesPanels(embedding.getTable()) || halfTable(embedding));
    return StepWalker::placesOwnOperand(op, operandNumber);
  }

  /// Whether `embedding` gathers from its own table stored in a half type (a
  /// table the head does not share panels with), as storageOf says: one that
  /// holds it exactly under auto, the one asked for otherwise (a table is a
  /// weight: `--dtype f16` rounds it, as vLLM's and llama.cpp's f16 do).
  bool halfTable(llm::EmbeddingOp embedding) {
    Value table = embedding.getTable();
    if (!step.generatedMatmul || !table.getDefiningOp<llm::ConstantOp>() || sharesPanels(table))
      return false;
    return storageOf(table) != "f32";
  }

  /// Whether `weight` is read only by `matmul` (as its weight) and by
  /// embeddings (as their table): a tied embedding table and its logits
  /// head.
  static bool onlyEmbeddingsBeside(Value weight, Operation *matmul) {
    return llvm::all_of(weight.getUses(), [&](OpOperand &use) {
      Operation *user = use.getOwner();
      if (user == matmul) return use.getOperandNumber() == 1;
      return isa<llm::EmbeddingOp>(user) && use.getOperandNumber() == 0;
    });
  }

  /// Whether `table` is kept once, in panels, for one matmul and the
  /// embeddings alike (a tied logits head), in its storageOf type: any but
  /// bf16 in pairs of k, which the embeddings cannot gather from.
  bool sharesPanels(Value table) {
    if (!step.generatedMatmul || table.getDefiningOp<llm::DequantizeOp>()) return false;
    if (storageOf(table) == "bf16" && bf16Products) return false;
    auto type = dyn_cast<RankedTensorType>(table.getType());
    if (!type || type.getRank() != 2 || !type.getElementType().isF32()) return false;
    Operation *head = nullptr;
    for (Operation *user : table.getUsers()) {
      if (isa<llm::EmbeddingOp>(user)) continue;
      if (head || !isa<llm::LinearOp, llm::LogitsOp>(user)) return false;
      head = user;
    }
    return head && onlyEmbeddingsBeside(table, head);
  }

  /// A linear layer or the logits head. The generated matmul takes a weight
  /// only it reads in panels, others [out, in]: an [in, out] weight is
  /// transposed at compile time, and a quantised [out, in] one is kept
  /// packed.
  LogicalResult lowerMatmul(Operation *op, Value weightValue, bool transposed, Value input,
                            Value output, const cpu::Epilogue &epilogue) {
    cpu::MatmulWeight weight;
    bool flip = step.generatedMatmul && !transposed;
    bool quantized = packQuantized && transposed && weightValue.getDefiningOp<llm::DequantizeOp>();
    // A gated int8 matmul reads the up half a whole tile of 16 columns on.
    int64_t columns = cast<MemRefType>(output.getType()).getDimSize(1);
    if (quantized && int8Products && (!epilogue.gated || columns % 16 == 0)) {
      auto int8Weight = int8WeightOf(weightValue);
      if (failed(int8Weight)) return failure();
      if (*int8Weight)
        return cpu::lowerInt8Matmul(step, op->getLoc(), input, **int8Weight, output, epilogue);
    }
    if (quantized) {
      auto packed = packedWeightOf(weightValue);
      if (failed(packed)) return failure();
      weight = *packed;
    } else {
      int64_t k = cast<MemRefType>(input.getType()).getDimSize(1);
      StringRef storage = storageOf(weightValue);
      weight.bf16Products = storage == "bf16" && bf16Products && k % 32 == 0;
      // Panels where only embeddings read the weight beside this matmul (a
      // tied table: sharesPanels), in pairs of k for products of bf16 pairs;
      // a widened quantised weight keeps the rows of its packed form, whose
      // sums it equals.
      FailureOr<Value> values = Value();
      if (step.generatedMatmul && onlyEmbeddingsBeside(weightValue, op) &&
          !weightValue.getDefiningOp<llm::DequantizeOp>())
        values = panelWeightOf(weightValue, transposed, epilogue.gated ? 2 : 1,
                               weight.bf16Products);
      if (failed(values)) return failure();
      weight.panels = static_cast<bool>(*values);
      weight.amxTiles = weight.panels && weight.bf16Products && amxTiles;
      if (!weight.panels)
        values = storage != "f32" ? halfWeightOf(weightValue, flip)
                 : flip             ? transposedWeightOf(weightValue)
                                    : refOf(weightValue, op, 1);
      if (failed(values)) return failure();
      weight.values = *values;
    }
    return cpu::lowerMatmul(step, op->getLoc(), input, weight, transposed || flip, output,
                            epilogue);
  }

  /// A quantised weight [out, in] in the int8-activation matmul's layout,
  /// or nullopt where that matmul cannot read it.
  FailureOr<std::optional<cpu::Int8Weight>> int8WeightOf(Value value) {
    if (auto known = int8Refs.find(value); known != int8Refs.end()) return known->second;
    auto dequantize = value.getDefiningOp<llm::DequantizeOp>();
    auto quantized = llm::BlockQuantized::read(dequantize);
    if (failed(quantized)) return failure();
    std::optional<cpu::Int8Weight> weight;
    if (auto packed = cpu::packForInt8Matmul(*quantized, value.getContext())) {
      weight.emplace();
      std::tie(weight->codes, weight->scales, weight->zeroPoints) = place(dequantize, *packed);
      weight->bits = packed->bits;
      weight->blockSize = packed->blockSize;
      weight->inFeatures = quantized->cols;
      weight->products = *int8Products;
    }
    return int8Refs[value] = weight;
  }

  /// A quantised weight [out, in] in the generated kernels' packed layout,
  /// or widened to f32 where they cannot read it packed.
  FailureOr<cpu::MatmulWeight> packedWeightOf(Value value) {
    if (auto known = packedRefs.find(value); known != packedRefs.end()) return known->second;
    auto dequantize = value.getDefiningOp<llm::DequantizeOp>();
    auto quantized = llm::BlockQuantized::read(dequantize);
    if (failed(quantized)) return failure();
    cpu::MatmulWeight weight;
    std::optional<cpu::PackedWeight> packed = cpu::packForCpu(*quantized, value.getContext());
    if (!packed) {
      auto widened = refOf(value, dequantize, 0);
      if (failed(widened)) return failure();
      weight.values = *widened;
    } else {
      std::tie(weight.values, weight.scales, weight.zeroPoints) = place(dequantize, *packed);
      weight.bits = packed->bits;
      weight.blockSize = packed->blockSize;
      weight.codeTable = codeTables && packed->bits == 4;
      weight.offsetCodes = packed->offsetCodes;
    }
    return packedRefs[value] = weight;
  }

  /// Whether a mixture of experts' weight is quantised codes kept packed.
  bool isPackedExpert(Value weight) {
    return packQuantized && weight.getDefiningOp<llm::DequantizeOp>();
  }

  /// Whether a mixture of experts' weight has an int8-activation layout:
  /// packed codes in blocks of a multiple of 16, whose in and out sizes are
  /// multiples of 16 (tiles of 16 rows within an expert), without float
  /// zero points.
  bool hasInt8Layout(Value weight) {
    auto dequantize = weight.getDefiningOp<llm::DequantizeOp>();
    if (!isPackedExpert(weight) || dequantize.getBlockSize() % 16 != 0) return false;
    ArrayRef<int64_t> shape = cast<RankedTensorType>(weight.getType()).getShape();
    Value zeroPoints = dequantize.getZeroPoints();
    return shape[1] % 16 == 0 && shape[2] % 16 == 0 &&
           !(zeroPoints && cast<ShapedType>(zeroPoints.getType()).getElementType().isF32());
  }

  /// A mixture of experts' gate, up and down weights as its kernels read
  /// them: with --int8-activations and where all three have int8 layouts
  /// (and the gate and up share a block size), those; else each as
  /// expertWeightOf places it.
  FailureOr<SmallVector<cpu::ExpertWeight>> expertWeightsOf(llm::MoeOp moe,
                                                           ArrayRef<Value> operands) {
    SmallVector<cpu::ExpertWeight> experts(3);
    Value gate = moe.getGateWeight(), up = moe.getUpWeight(), down = moe.getDownWeight();
    if (int8Products && hasInt8Layout(gate) && hasInt8Layout(up) && hasInt8Layout(down) &&
        gate.getDefiningOp<llm::DequantizeOp>().getBlockSize() ==
            up.getDefiningOp<llm::DequantizeOp>().getBlockSize()) {
      for (auto [expert, weight] : llvm::zip(experts, ValueRange{gate, up, down})) {
        auto int8 = int8WeightOf(weight);
        if (failed(int8)) return failure();
        if (!*int8) return moe.emitOpError("has an expert weight without an int8 layout");
        expert.int8 = **int8;
      }
      return experts;
    }
    for (unsigned i : {2u, 3u, 4u}) {
      auto weight = expertWeightOf(moe, i, operands[i]);
      if (failed(weight)) return failure();
      experts[i - 2].exact = *weight;
    }
    return experts;
  }

  /// A mixture of experts' stacked weight [experts, out, in] (operand
  /// `operandNumber` of `moe`, placed as `placed` unless the lowering
  /// places it) as the [experts * out, in] rows its kernels read: quantised
  /// codes kept packed, or values in their storageOf type.
  FailureOr<cpu::MatmulWeight> expertWeightOf(llm::MoeOp moe, unsigned operandNumber,
                                              Value placed) {
    Value value = moe->getOperand(operandNumber);
    cpu::MatmulWeight weight;
    if (isPackedExpert(value)) {
      auto packed = packedWeightOf(value);
      if (failed(packed)) return failure();
      weight = *packed;
    } else if (placesOwnOperand(moe, operandNumber)) {
      auto half = halfWeightOf(value, /*flip=*/false);
      if (failed(half)) return failure();
      weight.values = *half;
    } else {
      weight.values = placed;
    }
    if (cast<MemRefType>(weight.values.getType()).getRank() == 3)
      weight.values = memref::CollapseShapeOp::create(
          step.b, moe.getLoc(), weight.values, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    return weight;
  }

  /// Places a packed weight's codes, scales and zero points (null when it
  /// has none) in weights.bin and views them from the step.
  std::tuple<Value, Value, Value> place(Operation *def, const cpu::PackedWeight &packed) {
    Value codes = weightView(def, packed.codes, "u8");
    Value scales = weightView(def, packed.scales);
    Value zeroPoints = packed.zeroPoints ? weightView(def, packed.zeroPoints, "u8") : Value();
    return {codes, scales, zeroPoints};
  }

  FailureOr<Value> placeWeight(Value value, Operation *, unsigned) override {
    auto data = codegen::weightConstant(value, "CPU");
    if (failed(data)) return failure();
    return refs[value] = weightView(value.getDefiningOp(), *data);
  }

  /// The [out, in] view of an [in, out] weight: the generated matmul reads
  /// one contiguous weight row per output, so weights.bin stores them so.
  FailureOr<Value> transposedWeightOf(Value value) {
    if (Value known = transposedRefs.lookup(value)) return known;
    auto data = codegen::transposedWeightConstant(value, "CPU");
    if (failed(data)) return failure();
    return transposedRefs[value] = weightView(value.getDefiningOp(), *data);
  }

  /// An f32 weight [out, in] (`outIn`) or [in, out] that only its matmul
  /// reads, stored in panels (cpu::packPanels) for the outer-product matmul,
  /// in its storageOf type, in pairs of k for `pairs`; null if its data is
  /// not 2-D f32.
  FailureOr<Value> panelWeightOf(Value value, bool outIn, int64_t parts, bool pairs) {
    if (Value known = panelRefs.lookup(value)) return known;
    auto data = codegen::weightConstant(value, "CPU");
    if (failed(data)) return failure();
    auto type = cast<ShapedType>(data->getType());
    std::vector<char> storage;
    auto bytes = elementsBytes(*data, storage);
    if (failed(bytes) || type.getRank() != 2 || !type.getElementType().isF32()) return Value();
    int64_t out = type.getDimSize(outIn ? 0 : 1), in = type.getDimSize(outIn ? 1 : 0);
    std::vector<float> panels = cpu::packPanels(reinterpret_cast<const float *>(bytes->data()),
                                                out, in, outIn, parts, pairs);
    auto panelsType = RankedTensorType::get({static_cast<int64_t>(panels.size())},
                                            type.getElementType());
    return panelRefs[value] = weightView(value.getDefiningOp(),
                      cast<ElementsAttr>(DenseResourceElementsAttr::get(
                          panelsType, "panels",
                          HeapAsmResourceBlob::allocateAndCopyInferAlign(ArrayRef<float>(panels)))),
                      storageOf(value));
  }

  /// An [out, in] f32 weight (`flip`: transposed from [in, out]) stored in
  /// its storageOf type, a half type.
  FailureOr<Value> halfWeightOf(Value value, bool flip) {
    if (Value known = halfRefs.lookup(value)) return known;
    auto data = flip ? codegen::transposedWeightConstant(value, "CPU")
                     : codegen::weightConstant(value, "CPU");
    if (failed(data)) return failure();
    auto type = cast<ShapedType>(data->getType());
    if (!type.getElementType().isF32())
      return value.getDefiningOp()->emitOpError("is a matmul weight of ")
                 << type.getElementType() << "; " << storageOf(value)
                 << " storage rounds f32 weights",
             failure();
    return halfRefs[value] = weightView(value.getDefiningOp(), *data, storageOf(value));
  }

  /// Places `data` in weights.bin (its bytes as they are, or for `dtype`
  /// bf16 or f16 rounded by the artifact writer; the manifest calls them
  /// `dtype`) and views it from the step.
  Value weightView(Operation *def, ElementsAttr data, StringRef dtype = {}) {
    auto type = cast<ShapedType>(data.getType());
    if (dtype == "f32") dtype = {};
    // f32 data stored as bf16 or f16: the writer rounds it, the kernels read
    // bf16's bits (i16) or the f16 values.
    Type element = dtype == "bf16" ? step.b.getI16Type()
                   : dtype == "f16" ? step.b.getF16Type()
                                    : type.getElementType();
    int64_t bytes = type.getNumElements() * element.getIntOrFloatBitWidth() / 8;
    int64_t placed = weightLayout.place(def, data, bytes, dtype);
    Value offset = arith::ConstantIndexOp::create(step.b, def->getLoc(), placed);
    return memref::ViewOp::create(step.b, def->getLoc(), MemRefType::get(type.getShape(), element),
                                  weightsArg, offset, ValueRange{});
  }

  FailureOr<Value> workspaceView(Operation *op, Value result, int64_t offset, int64_t features,
                                 bool perSequenceRows) override {
    Type element = cast<ShapedType>(result.getType()).getElementType();
    if (!element.isF32() && !isa<llm::GatherRowsOp>(op))
      return op->emitOpError("computes ") << element << "; only f32 models are lowered";
    auto type = MemRefType::get({ShapedType::kDynamic, features}, element);
    Value rows = perSequenceRows ? step.numSeqs : step.numTokens;
    Value start = arith::ConstantIndexOp::create(step.b, op->getLoc(), offset);
    return memref::ViewOp::create(step.b, op->getLoc(), type, workspaceArg, start,
                                  ValueRange{rows})
        .getResult();
  }

  /// How the generated matmul stores `weight`: weightDtype, or for auto the
  /// half type that holds it exactly (f16 first), else f32. Exact either
  /// way: a half-precision export, which onnx-promote-to-f32 widened,
  /// narrows back, even where its exporter left a weight f32 that holds f16
  /// values (optimum's fp16 attention output projections).
  StringRef storageOf(Value weight) {
    if (weightDtype != "auto") return weightDtype;
    if (holdsExactly(weight, "f16")) return "f16";
    return holdsExactly(weight, "bf16") ? "bf16" : "f32";
  }

  /// Whether every value of `weight`, an f32 constant, is one of `dtype`'s
  /// (f32: any weight).
  bool holdsExactly(Value weight, StringRef dtype) {
    if (dtype == "f32") return true;
    auto known = halfValued.find(weight);
    if (known == halfValued.end()) {
      HalfValued found;
      auto constant = weight.getDefiningOp<llm::ConstantOp>();
      auto data = constant ? dyn_cast<ElementsAttr>(constant.getValue()) : ElementsAttr();
      std::vector<char> buffer;
      FailureOr<ArrayRef<char>> bytes = failure();
      if (data && data.getElementType().isF32()) bytes = elementsBytes(data, buffer);
      if (succeeded(bytes)) {
        ArrayRef<float> values(reinterpret_cast<const float *>(bytes->data()),
                               bytes->size() / 4);
        found.f16 = llvm::all_of(values, cpu::isF16Value);
        found.bf16 = llvm::all_of(values, cpu::isBf16Value);
      }
      known = halfValued.try_emplace(weight, found).first;
    }
    return dtype == "f16" ? known->second.f16 : known->second.bf16;
  }

  cpu::StepLowering &step;
  Value weightsArg, workspaceArg, logits;
  bool packQuantized;
  std::optional<cpu::Int8Products> int8Products;
  std::string weightDtype;
  bool bf16Products;
  bool amxTiles;
  bool codeTables;
  DenseMap<Value, Value> transposedRefs, halfRefs, panelRefs, halfTables;
  /// Per f32 constant weight, whether f16 and bf16 hold all its values.
  struct HalfValued {
    bool f16 = false, bf16 = false;
  };
  DenseMap<Value, HalfValued> halfValued;
  DenseMap<Value, cpu::MatmulWeight> packedRefs;
  DenseMap<Value, std::optional<cpu::Int8Weight>> int8Refs;
};

/// Every f32 math.exp of the kernels, scalar or vector, (SiLU and GELU bodies, softcaps)
/// as KernelBuilder::expPolynomial: inline arithmetic the vectoriser widens,
/// where LLVM would call libm's expf once per value. Attention's weights use
/// it already; one exp everywhere keeps every fused form computing the same
/// bits.
void expandExp(ModuleOp module) {
  SmallVector<math::ExpOp> exps;
  module.walk([&](math::ExpOp exp) {
    if (getElementTypeOrSelf(exp.getType()).isF32()) exps.push_back(exp);
  });
  for (math::ExpOp exp : exps) {
    OpBuilder b(exp);
    codegen::KernelBuilder kb(b, exp.getLoc());
    exp.replaceAllUsesWith(kb.expPolynomial(exp.getOperand()));
    exp.erase();
  }
}

struct LlmLowerToCpuPass : impl::LlmLowerToCpuPassBase<LlmLowerToCpuPass> {
  using LlmLowerToCpuPassBase::LlmLowerToCpuPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (matmul != "blas" && matmul != "generated") {
      module.emitError("matmul must be blas or generated, not '") << matmul << "'";
      return signalPassFailure();
    }
    if (!llvm::is_contained({"f32", "bf16", "f16", "auto"}, weightDtype)) {
      module.emitError("weight-dtype must be f32, bf16, f16 or auto, not '")
          << weightDtype << "'";
      return signalPassFailure();
    }
    if (int8Products != "avx512-vnni" && int8Products != "avx2") {
      module.emitError("int8-products must be avx512-vnni or avx2, not '") << int8Products << "'";
      return signalPassFailure();
    }
    if (bf16Products != "avx512-bf16" && bf16Products != "amx") {
      module.emitError("bf16-products must be avx512-bf16 or amx, not '") << bf16Products << "'";
      return signalPassFailure();
    }
    if (bf16Products == "amx" && !bf16Activations) {
      module.emitError("bf16-products=amx multiplies activations rounded to bf16: add "
                       "bf16-activations");
      return signalPassFailure();
    }
    if (bf16Activations && weightDtype != "bf16") {
      module.emitError("bf16-activations multiplies bf16 weights: add weight-dtype=bf16");
      return signalPassFailure();
    }
    if (weightDtype != "f32" && weightDtype != "auto" && matmul != "generated") {
      module.emitError("weight-dtype=")
          << weightDtype << " needs the generated matmul: sgemm reads f32 weights";
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
    StringRef kvDtype = "f32";
    for (StringRef role : abi::kStepInputs) {
      BlockArgument input = abi::findInput(model, role);
      if (!input) return model.emitError("has no '") << role << "' input";
      auto tensor = cast<RankedTensorType>(input.getType());
      if (role == abi::kKvPool) {
        Type element = tensor.getElementType();
        if (!element.isF32() && !element.isBF16() && !llm::isInt8KvPool(tensor))
          return model.emitError("has a ")
                 << element << " KV cache; the CPU target caches f32, bf16 or int8";
        if (element.isBF16()) kvDtype = "bf16";
        if (llm::isInt8KvPool(tensor)) kvDtype = "int8";
      }
      modelInputs.push_back(input);
      types.push_back(memrefLike(tensor));
    }
    // What the artifact writer needs from the planned step.
    auto info = codegen::plannedStepInfo(model);
    if (failed(info)) return failure();
    auto bytes = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    types.append({bytes, bytes, memrefLike(model.getResultTypes().front())});

    b.setInsertionPoint(model);
    auto stepFunc = func::FuncOp::create(b, loc, "llmc_step", b.getFunctionType(types, {}));
    stepFunc->setAttr("llvm.emit_c_interface", b.getUnitAttr());
    Block *body = stepFunc.addEntryBlock();
    b.setInsertionPointToStart(body);

    cpu::StepLowering step(module, b);
    step.generatedMatmul = matmul == "generated";
    step.tileAttention = bf16Activations && bf16Products == "amx";
    step.api = body->getArgument(0);
    step.numTokens = memref::DimOp::create(b, loc, body->getArgument(1), 0);
    step.numSeqs = memref::DimOp::create(b, loc, body->getArgument(7), 0);
    step.workspace = body->getArgument(types.size() - 2);
    step.scratchOffset = llvm::alignTo(info->workspaceBytes, 64);
    step.maxRows = std::max(info->maxNumBatchedTokens, info->maxNumSeqs);
    step.maxSeqs = info->maxNumSeqs;
    CpuStepWalker walker(step, body->getArgument(types.size() - 3), step.workspace,
                         body->getArgument(types.size() - 1), packQuantized,
                         int8Activations ? std::optional(int8Products == "avx2"
                                                             ? cpu::Int8Products::Avx2
                                                             : cpu::Int8Products::Avx512Vnni)
                                         : std::nullopt,
                         weightDtype, bf16Activations, bf16Products == "amx", avx512);
    for (auto [index, input] : llvm::enumerate(modelInputs))
      walker.setInput(input, body->getArgument(index + 1));
    if (failed(walker.walk(model))) return failure();
    // The hidden states a step returns were computed into the workspace.
    if (codegen::hiddenStatesStep(model)) {
      Value returned = model.getBody().front().getTerminator()->getOperand(0);
      std::optional<Value> computed = walker.placeOf(returned);
      if (!computed)
        return model.emitError("returns hidden states that were not computed into the workspace");
      cpu::lowerCopyRows(step, loc, *computed, body->getArgument(types.size() - 1));
    }
    func::ReturnOp::create(b, loc);

    if (step.scratchBytes) info->workspaceBytes = step.scratchOffset + step.scratchBytes;
    setStepInfo(module, *info);
    walker.weightLayout.record(module);
    module->setAttr("llmc.matmul", b.getStringAttr(matmul));
    module->setAttr("llmc.kv_dtype", b.getStringAttr(kvDtype));
    module->setAttr("llmc.activations", b.getStringAttr(int8Activations   ? "int8"
                                                        : bf16Activations ? "bf16"
                                                                          : "f32"));
    if (bf16Activations) module->setAttr("llmc.bf16_products", b.getStringAttr(bf16Products));
    if (Attribute groups = model->getAttr(kKvGroupsAttr)) module->setAttr(kKvGroupsAttr, groups);
    if (Attribute sites = model->getAttr(kLoraSitesAttr)) module->setAttr(kLoraSitesAttr, sites);
    module->setAttr(kStepOutputAttr, b.getStringAttr(codegen::stepOutput(model)));
    model.erase();
    expandExp(module);
    return success();
  }
};

} // namespace
} // namespace llmc
