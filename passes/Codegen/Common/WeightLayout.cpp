//===- WeightLayout.cpp - where each weight lives in weights.bin ----------===//
#include "passes/Codegen/Common/WeightLayout.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace llmc::codegen {

int64_t WeightLayout::place(Operation *holder, ElementsAttr data, int64_t bytes, StringRef dtype) {
  int64_t offset = llvm::alignTo(end, alignment);
  std::string name = "weight" + std::to_string(entries.size());
  if (auto nameLoc = dyn_cast<NameLoc>(holder->getLoc())) name = nameLoc.getName().str();
  Builder b(holder->getContext());
  SmallVector<NamedAttribute> fields{b.getNamedAttr("name", b.getStringAttr(name)),
                                     b.getNamedAttr("offset", b.getI64IntegerAttr(offset)),
                                     b.getNamedAttr("value", cast<TypedAttr>(data))};
  if (!dtype.empty()) fields.push_back(b.getNamedAttr("dtype", b.getStringAttr(dtype)));
  entries.push_back(b.getDictionaryAttr(fields));
  end = offset + bytes;
  return offset;
}

void WeightLayout::record(ModuleOp module) const {
  Builder b(module.getContext());
  module->setAttr("llmc.weights", b.getArrayAttr(entries));
  module->setAttr("llmc.weights_bytes", b.getI64IntegerAttr(end));
}

} // namespace llmc::codegen
