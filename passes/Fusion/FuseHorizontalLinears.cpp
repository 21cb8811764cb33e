//===- FuseHorizontalLinears.cpp - one GEMM for linears of one input ------===//
//
// Q, K and V (and gate and up) projections read the same normalised rows.
// Joined into one linear, the rows are read once, one kernel runs instead
// of three, and the GEMM is wide enough to keep every thread busy at
// batch 1. Block-quantised weights (MatMulNBits) join too, their codes,
// scales and zero points stacked by rows under one llm.dequantize.
//
//===----------------------------------------------------------------------===//
#include "passes/Fusion/FusionUtils.h"

#include "llvm/ADT/MapVector.h"

#define DEBUG_TYPE "llm-fuse-horizontal-linears"

namespace llmc {
#define GEN_PASS_DEF_LLMFUSEHORIZONTALLINEARSPASS
#include "passes/Fusion/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// What linears must share to be joined: the weight layout and types, and
/// for a block-quantised weight (`llm.dequantize` of constants) its
/// quantisation and operands' types.
struct LinearKind {
  Type weightElement;
  bool transposed;
  bool hasBias;
  // Block-quantised weights: bits, block size, input features; the codes',
  // scales' and zero points' element types (null: no zero points).
  int64_t bits = 0, blockSize = 0, inFeatures = 0;
  Type codes, scales, zeroPoints;
  bool operator==(const LinearKind &other) const {
    return weightElement == other.weightElement && transposed == other.transposed &&
           hasBias == other.hasBias && bits == other.bits && blockSize == other.blockSize &&
           inFeatures == other.inFeatures && codes == other.codes && scales == other.scales &&
           zeroPoints == other.zeroPoints;
  }
};

/// The quantised weight's dequantize, when it can be joined: constant
/// operands of whole bytes (MatMulNBits' uint8 container, whose rows are
/// independent), stored [out, in].
llm::DequantizeOp joinableDequantize(llm::LinearOp linear) {
  auto dequantize = linear.getWeight().getDefiningOp<llm::DequantizeOp>();
  if (!dequantize || !linear.getTransposeWeight()) return nullptr;
  for (Value operand : dequantize->getOperands()) {
    ElementsAttr data = fusion::constantOf(operand);
    if (!data || data.getElementType().getIntOrFloatBitWidth() % 8) return nullptr;
  }
  return dequantize;
}

/// Whether `linear` computes a mixture of experts' router logits. They rank
/// the experts, so they stay a product of their own: joined, they would be
/// stored as the joined product is (in bf16 on the CUDA target), and a
/// rounding may swap two experts' ranks.
bool routesExperts(llm::LinearOp linear) {
  return llvm::any_of(linear->getUses(), [](OpOperand &use) {
    auto moe = dyn_cast<llm::MoeOp>(use.getOwner());
    return moe && use.get() == moe.getRouterLogits();
  });
}

/// The linear's kind, or nothing when it cannot be joined: weights (and
/// bias) must be 2-D (1-D) constants, or quantised weights of constants,
/// with a static output dim; router logits are not joined.
std::optional<LinearKind> joinableKind(llm::LinearOp linear) {
  if (routesExperts(linear)) return std::nullopt;
  bool hasBias = static_cast<bool>(linear.getBias());
  if (hasBias && !fusion::constantOf(linear.getBias())) return std::nullopt;
  if (!isa<RankedTensorType>(linear.getType())) return std::nullopt;
  if (auto dequantize = joinableDequantize(linear)) {
    auto type = cast<RankedTensorType>(dequantize.getType());
    LinearKind kind{type.getElementType(), true, hasBias};
    kind.bits = dequantize.getBits();
    kind.blockSize = dequantize.getBlockSize();
    kind.inFeatures = type.getDimSize(1);
    kind.codes = dequantize.getData().getType();
    kind.scales = getElementTypeOrSelf(dequantize.getScales());
    if (dequantize.getZeroPoints()) kind.zeroPoints = getElementTypeOrSelf(dequantize.getZeroPoints());
    // Rows beyond the first dim (blocks, bytes) must match to stack.
    kind.codes = RankedTensorType::get(
        cast<RankedTensorType>(kind.codes).getShape().drop_front(), getElementTypeOrSelf(kind.codes));
    return kind;
  }
  ElementsAttr weight = fusion::constantOf(linear.getWeight());
  if (!weight || weight.getShapedType().getRank() != 2) return std::nullopt;
  return LinearKind{weight.getElementType(), linear.getTransposeWeight(), hasBias};
}

/// The joined weight of `group`: the constants side by side (their columns,
/// or rows when stored [out, in]), or for quantised weights one dequantize
/// of the codes, scales and zero points stacked by rows.
FailureOr<Value> joinWeights(RewriterBase &rewriter, Location loc, ArrayRef<llm::LinearOp> group,
                             const LinearKind &kind, int64_t outFeatures) {
  if (!kind.bits) {
    auto weights = llvm::map_to_vector(
        group, [](llm::LinearOp linear) { return fusion::constantOf(linear.getWeight()); });
    return fusion::concatConstants(rewriter, loc, weights, kind.transposed ? 0 : 1);
  }
  auto dequantizes = llvm::map_to_vector(group, [](llm::LinearOp linear) {
    return linear.getWeight().getDefiningOp<llm::DequantizeOp>();
  });
  auto stack = [&](function_ref<Value(llm::DequantizeOp)> operand) {
    auto parts = llvm::map_to_vector(
        dequantizes, [&](llm::DequantizeOp op) { return fusion::constantOf(operand(op)); });
    return fusion::concatConstants(rewriter, loc, parts, 0);
  };
  auto codes = stack([](llm::DequantizeOp op) { return op.getData(); });
  auto scales = stack([](llm::DequantizeOp op) { return op.getScales(); });
  FailureOr<Value> zeroPoints = Value();
  if (kind.zeroPoints) zeroPoints = stack([](llm::DequantizeOp op) { return op.getZeroPoints(); });
  if (failed(codes) || failed(scales) || failed(zeroPoints)) return failure();
  auto type = RankedTensorType::get({outFeatures, kind.inFeatures}, kind.weightElement);
  llm::DequantizeOp first = dequantizes.front();
  return llm::DequantizeOp::create(rewriter, loc, type, *codes, *scales, *zeroPoints,
                                   first.getBitsAttr(), first.getBlockSizeAttr())
      .getResult();
}

struct LlmFuseHorizontalLinearsPass
    : impl::LlmFuseHorizontalLinearsPassBase<LlmFuseHorizontalLinearsPass> {
  using LlmFuseHorizontalLinearsPassBase::LlmFuseHorizontalLinearsPassBase;

  void runOnOperation() override {
    // Linears by input, then by kind, in program order.
    llvm::MapVector<Value, SmallVector<llm::LinearOp>> byInput;
    getOperation().walk([&](llm::LinearOp linear) { byInput[linear.getInput()].push_back(linear); });
    IRRewriter rewriter(&getContext());
    for (auto &[input, linears] : byInput) {
      while (!linears.empty()) {
        std::optional<LinearKind> kind = joinableKind(linears.front());
        SmallVector<llm::LinearOp> group{linears.front()};
        SmallVector<llm::LinearOp> rest;
        int64_t columns = dimOf(linears.front(), -1);
        for (llm::LinearOp other : llvm::drop_begin(linears)) {
          int64_t width = dimOf(other, -1);
          if (kind && joinableKind(other) == kind && columns + width <= maxColumns) {
            group.push_back(other);
            columns += width;
          } else {
            rest.push_back(other);
          }
        }
        linears = std::move(rest);
        if (!kind || group.size() < 2) continue;
        if (failed(join(rewriter, group, *kind))) return signalPassFailure();
      }
    }
  }

  /// Replaces `group` with one linear over the joined weights, split back.
  LogicalResult join(IRRewriter &rewriter, ArrayRef<llm::LinearOp> group, LinearKind kind) {
    llm::LinearOp first = group.front();
    SmallVector<ElementsAttr> biases;
    SmallVector<int64_t> sizes;
    for (llm::LinearOp linear : group) {
      if (kind.hasBias) biases.push_back(fusion::constantOf(linear.getBias()));
      sizes.push_back(dimOf(linear, -1));
    }
    rewriter.setInsertionPoint(first);
    Location loc = rewriter.getFusedLoc(llvm::map_to_vector(group, [](llm::LinearOp op) {
      return op.getLoc();
    }));
    auto weight = joinWeights(rewriter, loc, group, kind, llvm::sum_of(sizes));
    FailureOr<Value> bias = first.getBias();
    if (kind.hasBias) bias = fusion::concatConstants(rewriter, loc, biases, 0);
    if (failed(weight) || failed(bias))
      return first.emitOpError("has a weight whose bytes cannot be read to join it");

    auto firstType = cast<RankedTensorType>(first.getType());
    SmallVector<int64_t> shape(firstType.getShape());
    shape.back() = 0;
    for (int64_t size : sizes) shape.back() += size;
    auto joinedType = RankedTensorType::get(shape, firstType.getElementType());
    auto joined = llm::LinearOp::create(rewriter, loc, joinedType, first.getInput(), *weight, *bias,
                                        kind.transposed);
    SmallVector<Type> resultTypes =
        llvm::map_to_vector(group, [](llm::LinearOp op) { return op.getType(); });
    auto split = llm::SplitOp::create(rewriter, loc, resultTypes, joined.getResult(),
                                      rewriter.getDenseI64ArrayAttr(sizes));
    // Users of a later linear come after it, hence after the joined one.
    for (auto [linear, part] : llvm::zip(SmallVector<llm::LinearOp>(group), split.getResults())) {
      Value oldWeight = linear.getWeight(), oldBias = linear.getBias();
      rewriter.replaceOp(linear, part);
      // The joined constants replace the parts: do not keep both in memory.
      fusion::eraseIfUnused(rewriter, oldBias);
      if (auto dequantize = oldWeight.getDefiningOp<llm::DequantizeOp>();
          dequantize && dequantize->use_empty()) {
        SmallVector<Value> operands(dequantize->getOperands());
        rewriter.eraseOp(dequantize);
        for (Value operand : operands) fusion::eraseIfUnused(rewriter, operand);
      } else {
        fusion::eraseIfUnused(rewriter, oldWeight);
      }
    }
    return success();
  }
};

} // namespace
} // namespace llmc
