//===- LoraSites.cpp - where a LoRA adapter's products join the step ------===//
//
// An adapter is a set of low-rank products keyed by module path. The step
// cannot hold them (they are chosen per request, loaded while serving), so
// each linear an adapter may target is followed by an llm.lora, and the
// target lowering asks the runtime for the product there. The sites are
// numbered in program order and listed on the function for the manifest.
//
//===----------------------------------------------------------------------===//
#include "passes/Serving/Passes.h"

#include "llmc/Artifact/StepInfo.h"
#include "llmc/Support/TensorShape.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

#define DEBUG_TYPE "llm-lora-sites"

namespace llmc {
#define GEN_PASS_DEF_LLMLORASITESPASS
#include "passes/Serving/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

/// The ONNX node name `loc` carries (a NameLoc, possibly inside a fused or
/// call-site location), or "".
StringRef nodeNameOf(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc)) return name.getName().getValue();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location part : fused.getLocations())
      if (StringRef name = nodeNameOf(part); !name.empty()) return name;
  if (auto callSite = dyn_cast<CallSiteLoc>(loc)) return nodeNameOf(callSite.getCallee());
  return "";
}

/// The module path of a decoder layer's linear from its MatMul node's name:
/// `/model/layers.0/self_attn/q_proj/MatMul` -> `model.layers.0.self_attn.q_proj`;
/// "" when the name is not a module path inside an indexed block (`layers.0`,
/// GPT-2's `h.0`).
std::string modulePathOf(StringRef nodeName) {
  if (!nodeName.consume_front("/")) return "";
  size_t op = nodeName.rfind('/');
  if (op == StringRef::npos) return "";
  std::string path = nodeName.take_front(op).str();
  std::replace(path.begin(), path.end(), '/', '.');
  // A module inside a block: a list's name, the block's index, then more.
  SmallVector<StringRef> parts;
  StringRef(path).split(parts, '.');
  for (size_t i = 1; i + 1 < parts.size(); ++i)
    if (!parts[i].empty() && llvm::all_of(parts[i], [](char c) { return llvm::isDigit(c); }))
      return path;
  return "";
}

struct LlmLoraSitesPass : impl::LlmLoraSitesPassBase<LlmLoraSitesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(addSites(getOperation()))) signalPassFailure();
  }

  LogicalResult addSites(func::FuncOp func) {
    SmallVector<std::pair<llm::LinearOp, std::string>> linears;
    llvm::StringSet<> modules;
    WalkResult walk = func.walk([&](llm::LinearOp linear) {
      std::string module = modulePathOf(nodeNameOf(linear.getLoc()));
      if (module.empty()) return WalkResult::advance();
      if (!modules.insert(module).second) {
        linear.emitOpError("computes part of module '")
            << module << "', as another linear does (a projection split at raising); "
            << "a LoRA site needs the module's whole product";
        return WalkResult::interrupt();
      }
      if (rankOf(linear.getInput()) != 2 || rankOf(linear.getOutput()) != 2) {
        linear.emitOpError("of module '")
            << module << "' does not map [tokens, features] rows: run llm-ragged-batching "
            << "before llm-lora-sites";
        return WalkResult::interrupt();
      }
      linears.emplace_back(linear, std::move(module));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted()) return failure();
    if (linears.empty())
      return func.emitOpError("has no linear layer whose ONNX node names a decoder layer's "
                              "module (as optimum's `/model/layers.0/self_attn/q_proj/MatMul`): "
                              "LoRA adapters name the layers they change by these paths");

    OpBuilder b(func.getContext());
    SmallVector<Attribute> sites;
    for (auto [site, entry] : llvm::enumerate(linears)) {
      auto &[linear, module] = entry;
      b.setInsertionPointAfter(linear);
      Value product = linear.getOutput();
      auto lora = llm::LoraOp::create(b, linear.getLoc(), product.getType(), linear.getInput(),
                                      product, b.getI64IntegerAttr(int64_t(site)),
                                      b.getStringAttr(module));
      product.replaceAllUsesExcept(lora.getOutput(), lora);
      sites.push_back(b.getDictionaryAttr(
          {b.getNamedAttr("module", b.getStringAttr(module)),
           b.getNamedAttr("in", b.getI64IntegerAttr(dimOf(linear.getInput(), -1))),
           b.getNamedAttr("out", b.getI64IntegerAttr(dimOf(linear.getOutput(), -1)))}));
    }
    func->setAttr(kLoraSitesAttr, b.getArrayAttr(sites));
    return success();
  }
};

} // namespace
} // namespace llmc
