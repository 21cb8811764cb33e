//===- FusionReport.cpp - what fusion did to a model, per layer kind ------===//
#include "passes/Fusion/FusionReport.h"

#include "passes/Serving/StepFunction.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

using namespace mlir;

namespace llmc {
namespace {

/// Ops that become no kernel: data, views, the return.
bool isKernel(Operation *op) {
  return !op->hasTrait<llm::OpTrait::View>() &&
         !isa<llm::ConstantOp, llm::DequantizeOp, func::ReturnOp>(op);
}

bool isNorm(Operation *op) {
  return isa<llm::RmsNormOp, llm::LayerNormOp, llm::AddRmsNormOp, llm::AddLayerNormOp>(op);
}

/// Bytes of one row of `value` if it has a row per token (or per sequence:
/// the same in a decode step), else 0: weights and the KV pool are not
/// activations.
int64_t rowBytes(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || type.getRank() == 0 || !type.isDynamicDim(0) || type.getRank() > 3) return 0;
  int64_t elements = 1;
  for (int64_t dim : type.getShape().drop_front()) {
    if (ShapedType::isDynamic(dim)) return 0;
    elements *= dim;
  }
  return elements * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// Activation bytes `op` reads and writes per decode token. A KV write
/// also writes its keys and values into the pool; attention's reads of the
/// cache depend on the context length and are left out.
int64_t bytesPerToken(Operation *op) {
  int64_t bytes = 0;
  for (Value operand : op->getOperands()) bytes += rowBytes(operand);
  for (Value result : op->getResults()) bytes += rowBytes(result);
  if (auto write = dyn_cast<llm::PagedKvWriteOp>(op))
    bytes += rowBytes(write.getKey()) + (write.getValue() ? rowBytes(write.getValue()) : 0);
  if (auto write = dyn_cast<llm::RopePagedKvWriteOp>(op))
    bytes += rowBytes(write.getKey()) + rowBytes(write.getValue());
  return bytes;
}

/// The layer of a KV write, or -1.
int64_t kvWriteLayer(Operation *op) {
  if (auto write = dyn_cast<llm::PagedKvWriteOp>(op)) return write.getLayer();
  if (auto write = dyn_cast<llm::RopePagedKvWriteOp>(op)) return write.getLayer();
  return -1;
}

} // namespace

FailureOr<std::vector<StepSegment>> segmentStep(ModuleOp module) {
  func::FuncOp step = abi::findRaggedStep(module);
  if (!step) return module.emitError("no ragged step function to report on"), failure();

  SmallVector<Operation *> ops;
  for (Operation &op : step.getBody().front()) ops.push_back(&op);
  // Segment starts: each layer's input norm, then the head's norm.
  SmallVector<size_t> starts;
  size_t lastNorm = 0;
  bool seenNorm = false;
  for (auto [index, op] : llvm::enumerate(ops)) {
    if (isNorm(op)) lastNorm = index, seenNorm = true;
    if (kvWriteLayer(op) >= 0 && seenNorm && (starts.empty() || starts.back() != lastNorm))
      starts.push_back(lastNorm);
    if (isa<llm::LogitsOp>(op) && seenNorm && (starts.empty() || starts.back() < lastNorm))
      starts.push_back(lastNorm);
  }
  std::vector<StepSegment> segments;
  auto addSegment = [&](StringRef kind, size_t begin, size_t end) {
    StepSegment segment{kind.str(), "", 0, 0};
    for (Operation *op : ArrayRef<Operation *>(ops).slice(begin, end - begin)) {
      if (!isKernel(op)) continue;
      ++segment.kernels;
      segment.bytesPerToken += bytesPerToken(op);
      segment.signature += op->getName().getStringRef().str() + ";";
    }
    segments.push_back(std::move(segment));
  };
  size_t first = starts.empty() ? ops.size() : starts.front();
  addSegment("embedding", 0, first);
  for (size_t index = 0; index < starts.size(); ++index) {
    bool head = index + 1 == starts.size();
    addSegment(head ? "head" : "layer", starts[index], head ? ops.size() : starts[index + 1]);
  }
  return segments;
}

void printFusionReport(ArrayRef<StepSegment> before, ArrayRef<StepSegment> after,
                       unsigned optLevel, raw_ostream &os, bool json) {
  // Rows: runs of layers whose kernels are the same before and after.
  struct Row {
    std::string label;
    int64_t count, kernelsBefore, kernelsAfter, bytesBefore, bytesAfter;
  };
  std::vector<Row> rows;
  size_t segments = std::min(before.size(), after.size());
  int64_t layer = 0;
  for (size_t index = 0; index < segments; ++index) {
    const StepSegment &b = before[index], &a = after[index];
    bool isLayer = a.kind == "layer";
    bool sameAsLast = isLayer && !rows.empty() && index > 0 && after[index - 1].kind == "layer" &&
                      after[index - 1].signature == a.signature &&
                      before[index - 1].signature == b.signature;
    if (sameAsLast) {
      ++rows.back().count;
    } else {
      rows.push_back({a.kind, 1, b.kernels, a.kernels, b.bytesPerToken, a.bytesPerToken});
    }
    if (isLayer) {
      Row &row = rows.back();
      int64_t firstLayer = layer - row.count + 1;
      row.label = row.count == 1 ? llvm::formatv("layer {0}", layer).str()
                                 : llvm::formatv("layers {0}-{1}", firstLayer, layer).str();
      ++layer;
    }
  }
  int64_t kernelsBefore = 0, kernelsAfter = 0, bytesBefore = 0, bytesAfter = 0;
  for (const Row &row : rows) {
    kernelsBefore += row.count * row.kernelsBefore;
    kernelsAfter += row.count * row.kernelsAfter;
    bytesBefore += row.count * row.bytesBefore;
    bytesAfter += row.count * row.bytesAfter;
  }
  if (json) {
    llvm::json::Array kinds;
    for (const Row &row : rows)
      kinds.push_back(llvm::json::Object{{"kind", row.label},
                                         {"count", row.count},
                                         {"kernels_before", row.kernelsBefore},
                                         {"kernels_after", row.kernelsAfter},
                                         {"bytes_per_token_before", row.bytesBefore},
                                         {"bytes_per_token_after", row.bytesAfter}});
    llvm::json::Object report{{"opt_level", static_cast<int64_t>(optLevel)},
                              {"kinds", std::move(kinds)},
                              {"kernels_before", kernelsBefore},
                              {"kernels_after", kernelsAfter},
                              {"bytes_per_token_before", bytesBefore},
                              {"bytes_per_token_after", bytesAfter}};
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(report))) << "\n";
    return;
  }
  auto kib = [](int64_t bytes) { return llvm::formatv("{0:f1} KiB", bytes / 1024.0).str(); };
  os << llvm::formatv("fusion report: -O0 -> -O{0}; kernels and activation bytes read and "
                      "written per decode token (weights and KV-cache reads left out)\n",
                      optLevel);
  os << llvm::formatv("  {0,-16} {1,-16} {2}\n", "layer kind", "kernels", "bytes/token");
  for (const Row &row : rows)
    os << llvm::formatv("  {0,-16} {1,-16} {2} -> {3}\n", row.label,
                        llvm::formatv("{0} -> {1}", row.kernelsBefore, row.kernelsAfter).str(),
                        kib(row.bytesBefore), kib(row.bytesAfter));
  double saved = bytesBefore ? 100.0 * (bytesBefore - bytesAfter) / bytesBefore : 0.0;
  os << llvm::formatv("  {0,-16} {1,-16} {2} -> {3} ({4:f0}% less)\n", "whole step",
                      llvm::formatv("{0} -> {1}", kernelsBefore, kernelsAfter).str(),
                      kib(bytesBefore), kib(bytesAfter), saved);
}

} // namespace llmc
