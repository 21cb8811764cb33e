//===- ElementsData.cpp - the bytes of a constant tensor ------------------===//
#include "llmc/Support/ElementsData.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

using namespace mlir;

namespace llmc {

FailureOr<ArrayRef<char>> elementsBytes(ElementsAttr attr, std::vector<char> &storage) {
  auto type = cast<ShapedType>(attr.getType());
  if (!type.getElementType().isIntOrFloat() || type.getElementTypeBitWidth() % 8)
    return failure();
  if (isa<DenseResourceElementsAttr>(attr)) return resourceBytes(attr);
  auto dense = dyn_cast<DenseElementsAttr>(attr);
  if (!dense) return failure();
  ArrayRef<char> raw = dense.getRawData();
  if (!dense.isSplat()) return raw;
  size_t elementBytes = type.getElementTypeBitWidth() / 8;
  storage.resize(elementBytes * type.getNumElements());
  for (size_t offset = 0; offset < storage.size(); offset += elementBytes)
    std::copy(raw.begin(), raw.begin() + elementBytes, storage.begin() + offset);
  return ArrayRef<char>(storage);
}

FailureOr<ArrayRef<char>> resourceBytes(ElementsAttr attr) {
  auto resource = dyn_cast<DenseResourceElementsAttr>(attr);
  AsmResourceBlob *blob = resource ? resource.getRawHandle().getBlob() : nullptr;
  if (!blob) return failure();
  return blob->getData();
}

} // namespace llmc
