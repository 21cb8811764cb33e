//===- OpSummary.cpp - per-layer op counts of a compiled module -----------===//
#include "OpSummary.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Regex.h"

#include <map>

using namespace mlir;

namespace llmc {

namespace {
using OpCounts = std::map<std::string, int>;
constexpr int kNoLayer = -1;

/// The decoder layer an op came from, read off the node names in its location.
int layerOf(Location loc) {
  static const llvm::Regex layerName("layers?[._/]([0-9]+)([/._]|$)");
  int layer = kNoLayer;
  loc->walk([&](Location inner) {
    auto name = dyn_cast<NameLoc>(inner);
    SmallVector<StringRef> groups;
    if (name && layerName.match(name.getName().getValue(), &groups)) {
      groups[1].getAsInteger(10, layer);
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return layer;
}

std::string formatCounts(const OpCounts &counts) {
  std::string text;
  for (const auto &[name, count] : counts)
    text += (text.empty() ? "" : ", ") + name + " x" + std::to_string(count);
  return text;
}
} // namespace

void printOpSummary(ModuleOp module, llvm::raw_ostream &os, bool json) {
  std::map<int, OpCounts> perLayer;
  module.walk([&](Operation *op) {
    if (isa<func::FuncOp, func::ReturnOp, ModuleOp>(op) || op->hasTrait<OpTrait::ConstantLike>())
      return;
    ++perLayer[layerOf(op->getLoc())][op->getName().getStringRef().str()];
  });

  if (json) {
    llvm::json::Array layers;
    for (const auto &[layer, counts] : perLayer) {
      llvm::json::Object ops;
      for (const auto &[name, count] : counts) ops[name] = count;
      layers.push_back(llvm::json::Object{
          {"layer", layer == kNoLayer ? llvm::json::Value(nullptr) : llvm::json::Value(layer)},
          {"ops", std::move(ops)}});
    }
    os << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{{"layers", std::move(layers)}}))
       << "\n";
    return;
  }
  // Consecutive layers with the same ops share one row.
  os << "op summary (constants not counted)\n";
  auto it = perLayer.begin();
  while (it != perLayer.end()) {
    if (it->first == kNoLayer) { ++it; continue; }
    auto run = it;
    while (std::next(run) != perLayer.end() && std::next(run)->first == run->first + 1 &&
           std::next(run)->second == it->second)
      ++run;
    std::string label = run == it ? "layer " + std::to_string(it->first)
                                  : "layers " + std::to_string(it->first) + "-" +
                                        std::to_string(run->first);
    os << llvm::formatv("  {0,-14} {1}\n", label, formatCounts(it->second));
    it = std::next(run);
  }
  if (perLayer.count(kNoLayer))
    os << llvm::formatv("  {0,-14} {1}\n", "outside layers", formatCounts(perLayer[kNoLayer]));
}

} // namespace llmc
