//===- CudaMoe.cpp - llm.moe through the NVRTC module's kernels -----------===//
//
// A mixture of experts becomes five launches of attention/Moe.cuh's kernels
// (route, plan, experts, down, sum) over scratch: the picks' experts and
// weights, the plan's order of picks by expert in tiles, the picks'
// activations h (storage type) and down products (f32). Every grid is a
// plan dimension of the step's rows, so a decode step of a given batch is
// the same list every time (CUDA graphs); an expert's tiles come from the
// plan kernel on the GPU, never from the host.
//
// The experts' weights are stored as the op holds them, [experts, out, in]
// (each expert's rows [n, k], as every GEMM weight), in the storage type; a
// block-quantised expert weight is dequantised at compile time.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CUDA/CudaLowering.h"

using namespace mlir;
using namespace llmc::stepplan; // the plan's keys, symbols and buffers

namespace llmc::cuda {
namespace {

/// Lays out one op's scratch regions back to back, each aligned.
class ScratchLayout {
public:
  /// The byte offset (from the op's scratch) of a new region of `bytes`.
  int64_t add(int64_t bytes) {
    int64_t offset = size;
    size = llvm::alignTo(size + bytes, kScratchAlignment);
    return offset;
  }
  int64_t size = 0;
};

/// Whether `ref` is rows of unit feature stride whose every row starts 16
/// bytes aligned (the kernels load 8 storage elements at a time); its row
/// stride in elements.
std::optional<int64_t> alignedRowStride(const TensorRef &ref) {
  auto stride = ref.rowStride();
  if (!stride || *stride % 8 || ref.offset % 16) return std::nullopt;
  return stride;
}

} // namespace

LogicalResult lowerMoe(StepContext &step, llm::MoeOp op,
                       ArrayRef<std::optional<TensorRef>> operands, const TensorRef &output,
                       std::string &source) {
  auto downShape = cast<ShapedType>(op.getDownWeight().getType()).getShape();
  int64_t experts = downShape[0], hidden = downShape[1], inter = downShape[2];
  int64_t topK = op.getTopK();
  if (experts > kMoeMaxExperts)
    return op.emitOpError("has ") << experts << " experts; the CUDA kernels take at most "
                                  << kMoeMaxExperts;
  if (op.getExpertGroups() && *op.getExpertGroups() > kMoeMaxGroups)
    return op.emitOpError("has ") << *op.getExpertGroups()
                                  << " groups of experts; the CUDA route kernel takes at most "
                                  << kMoeMaxGroups;
  if (hidden % 8 || inter % 8)
    return op.emitOpError("has hidden size ")
           << hidden << " and expert size " << inter
           << "; the CUDA kernels need multiples of 8 (16-byte loads)";
  const TensorRef &input = *operands[0], &logits = *operands[1];
  auto inputStride = alignedRowStride(input), outputStride = alignedRowStride(output);
  if (!inputStride || !outputStride)
    return op.emitOpError("has an input or result whose rows are not 16-byte aligned rows of "
                          "unit feature stride");
  auto logitsStride = logits.rowStride();
  if (!logitsStride || !logits.elementType.isF32())
    return op.emitOpError("has router logits that are not f32 rows of unit feature stride");
  auto rowsSymbol = dyn_cast<StringAttr>(input.sizes.front());
  if (!rowsSymbol) return op.emitOpError("has a fixed number of rows; a step's rows vary");

  MLIRContext *context = op.getContext();
  auto dim = [&](int64_t value) { return planDim(context, value); };
  StringRef rows = rowsSymbol.getValue();
  int64_t maxRows = rows == kSeqsSymbol ? step.maxSeqs : step.maxTokens;
  // Every expert's run of picks ends in at most one partial tile.
  Attribute tiles = planDim(context, rows, topK, kMoeTilePicks, experts);
  int64_t maxTiles = llvm::divideCeil(maxRows * topK, kMoeTilePicks) + experts;
  int64_t maxPicks = maxRows * topK, maxPositions = maxTiles * kMoeTilePicks;
  int64_t storageBytes = llvm::divideCeil(step.storageType.getIntOrFloatBitWidth(), 8);

  ScratchLayout layout;
  int64_t chosenAt = layout.add(maxPicks * 4), weightsAt = layout.add(maxPicks * 4),
          positionAt = layout.add(maxPicks * 4), orderAt = layout.add(maxPositions * 4),
          tileExpertAt = layout.add(maxTiles * 4),
          activationsAt = layout.add(maxPositions * inter * storageBytes),
          productsAt = layout.add(maxPositions * hidden * 4);
  int64_t base = step.scratch(layout.size);
  Type i32 = IntegerType::get(context, 32), f32 = Float32Type::get(context);
  auto scratch = [&](int64_t at, Type element) {
    return KernelArg::pointer(contiguousTensor(context, kWorkspaceBuffer, base + at, element,
                                               {planDim(context, rows)}));
  };
  KernelArg chosen = scratch(chosenAt, i32), weights = scratch(weightsAt, f32),
            position = scratch(positionAt, i32), order = scratch(orderAt, i32),
            tileExpert = scratch(tileExpertAt, i32),
            activations = scratch(activationsAt, step.storageType),
            products = scratch(productsAt, f32);
  auto optionalPointer = [&](OperandRange operand) {
    auto ref = codegen::loweredOperand(operand, operands);
    return ref ? KernelArg::pointer(*ref) : KernelArg::nullPointer();
  };

  addMoeSource(step, source);
  std::array<int64_t, 3> block{kMoeThreads, 1, 1};
  Attribute rowsDim = planDim(context, rows);
  step.plan.launch(kAttentionModule, "llmc_moe_route",
                   {planDim(context, rows, 1, kMoeThreads), dim(1), dim(1)}, block,
                   {KernelArg::pointer(logits), KernelArg::i32(dim(*logitsStride)),
                    KernelArg::i32(rowsDim), KernelArg::i32(dim(experts)),
                    KernelArg::i32(dim(topK)),
                    KernelArg::i32(dim(op.getNormalizeTopK() ? 1 : 0)),
                    KernelArg::i32(dim(op.getSigmoidScores() ? 1 : 0)),
                    optionalPointer(op.getSelectionBiasMutable()),
                    KernelArg::i32(dim(op.getExpertGroups().value_or(0))),
                    KernelArg::i32(dim(op.getTopKGroups().value_or(0))),
                    KernelArg::i32(dim(op.getExcludeHiddenGroups() ? 1 : 0)),
                    KernelArg::i32(dim(op.getSparseMixer() ? 1 : 0)),
                    KernelArg::f32(op.getSparseMixer().value_or(0.0f)),
                    KernelArg::f32(op.getNormalizeEpsilonOrZero()),
                    KernelArg::f32(op.getNormalizeMinOrZero()),
                    KernelArg::f32(op.getRoutedScaleOrOne()), chosen, weights});
  step.plan.launch(kAttentionModule, "llmc_moe_plan", {dim(1), dim(1), dim(1)},
                   {kMoePlanThreads, 1, 1},
                   {chosen, KernelArg::i32(planDim(context, rows, topK)),
                    KernelArg::i32(dim(experts)), KernelArg::i32(tiles), order, position,
                    tileExpert});
  std::optional<float> limit;
  if (auto attr = op.getSwigluLimit()) limit = attr->convertToFloat();
  float alpha = op.getSwigluAlpha() ? op.getSwigluAlpha()->convertToFloat() : 1.0f;
  step.plan.launch(kAttentionModule, "llmc_moe_experts",
                   {tiles, dim(llvm::divideCeil(inter, kMoeColumns)), dim(1)}, block,
                   {KernelArg::pointer(input), KernelArg::i32(dim(*inputStride)),
                    KernelArg::pointer(*operands[2]), KernelArg::pointer(*operands[3]),
                    optionalPointer(op.getGateBiasMutable()),
                    optionalPointer(op.getUpBiasMutable()), order, tileExpert, weights,
                    KernelArg::i32(dim(topK)), KernelArg::i32(dim(hidden)),
                    KernelArg::i32(dim(inter)), KernelArg::i32(dim(limit ? 1 : 0)),
                    KernelArg::f32(limit.value_or(0.0f)), KernelArg::f32(alpha), activations});
  step.plan.launch(kAttentionModule, "llmc_moe_down",
                   {tiles, dim(llvm::divideCeil(hidden, kMoeColumns)), dim(1)}, block,
                   {activations, KernelArg::pointer(*operands[4]),
                    optionalPointer(op.getDownBiasMutable()), order, tileExpert, weights,
                    KernelArg::i32(dim(inter)), KernelArg::i32(dim(hidden)), products});
  step.plan.launch(kAttentionModule, "llmc_moe_sum", {rowsDim, dim(1), dim(1)}, block,
                   {products, position, KernelArg::i32(dim(topK)), KernelArg::i32(dim(hidden)),
                    KernelArg::pointer(output), KernelArg::i32(dim(*outputStride))});
  return success();
}

} // namespace llmc::cuda
