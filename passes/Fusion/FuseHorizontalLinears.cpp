//===- FuseHorizontalLinears.cpp - one GEMM for linears of one input ------===//
//
// Q, K and V (and gate and up) projections read the same normalised rows.
// Joined into one linear, the rows are read once, one kernel runs instead
// of three, and the GEMM is wide enough to keep every thread busy at
// batch 1.
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

/// What linears must share to be joined: the weight layout and types.
struct LinearKind {
  Type weightElement;
  bool transposed;
  bool hasBias;
  bool operator==(const LinearKind &other) const {
    return weightElement == other.weightElement && transposed == other.transposed &&
           hasBias == other.hasBias;
  }
};

/// The linear's kind, or nothing when it cannot be joined: weights (and
/// bias) must be 2-D (1-D) constants with a static output dim.
std::optional<LinearKind> joinableKind(llm::LinearOp linear) {
  ElementsAttr weight = fusion::constantOf(linear.getWeight());
  bool hasBias = static_cast<bool>(linear.getBias());
  if (!weight || weight.getShapedType().getRank() != 2) return std::nullopt;
  if (hasBias && !fusion::constantOf(linear.getBias())) return std::nullopt;
  if (!isa<RankedTensorType>(linear.getType())) return std::nullopt;
  return LinearKind{weight.getElementType(), linear.getTransposeWeight(), hasBias};
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
    SmallVector<ElementsAttr> weights, biases;
    SmallVector<int64_t> sizes;
    for (llm::LinearOp linear : group) {
      weights.push_back(fusion::constantOf(linear.getWeight()));
      if (kind.hasBias) biases.push_back(fusion::constantOf(linear.getBias()));
      sizes.push_back(dimOf(linear, -1));
    }
    rewriter.setInsertionPoint(first);
    Location loc = rewriter.getFusedLoc(llvm::map_to_vector(group, [](llm::LinearOp op) {
      return op.getLoc();
    }));
    auto weight = fusion::concatConstants(rewriter, loc, weights, kind.transposed ? 0 : 1);
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
      for (Value old : {oldWeight, oldBias})
        if (old && old.use_empty() && old.getDefiningOp<llm::ConstantOp>())
          rewriter.eraseOp(old.getDefiningOp());
    }
    return success();
  }
};

} // namespace
} // namespace llmc
