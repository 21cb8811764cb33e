//===- TensorImport.cpp - ONNX TensorProto to MLIR attributes -------------===//
//
// Small tensors become `dense` attributes (folding reads them); large ones
// become `dense_resource` blobs in ONNX's raw layout. External data is
// mapped, not copied.
//
//===----------------------------------------------------------------------===//
#include "TensorImport.h"

#include "dialects/onnx/ShapeHelpers.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/BuiltinDialect.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/Path.h"

#include "onnx.pb.h"

using namespace mlir;

namespace llmc::import {

namespace {
/// Bytes of `count` elements of `type` in ONNX's raw layout.
int64_t rawByteSize(Type type, int64_t count) {
  unsigned bits = type.getIntOrFloatBitWidth();
  if (bits == 4) return (count + 1) / 2;
  if (bits == 1) return count; // ONNX stores bool as one byte.
  return count * (bits / 8);
}

/// Little-endian raw bytes of the typed repeated fields ONNX may use instead
/// of raw_data. Nullopt when the field's element count is not `count`.
std::optional<std::vector<char>> typedFieldBytes(const ::onnx::TensorProto &tensor, Type type,
                                                 int64_t count) {
  std::vector<char> bytes;
  auto copyAs = [&](const auto &field, auto element) -> bool {
    using T = decltype(element);
    // Check the length before allocating: the dims may be absurd.
    if (int64_t(field.size()) != count) return false;
    bytes.resize(count * sizeof(T));
    for (int64_t i = 0; i < count; ++i) {
      T v = static_cast<T>(field.Get(i));
      std::memcpy(bytes.data() + i * sizeof(T), &v, sizeof(T));
    }
    return true;
  };
  bool ok = false;
  unsigned bits = type.getIntOrFloatBitWidth();
  if (type.isF32()) ok = copyAs(tensor.float_data(), float());
  else if (type.isF64()) ok = copyAs(tensor.double_data(), double());
  else if (type.isInteger(64) && !type.isUnsignedInteger()) ok = copyAs(tensor.int64_data(), int64_t());
  else if (type.isUnsignedInteger(64) || type.isUnsignedInteger(32)) {
    ok = bits == 64 ? copyAs(tensor.uint64_data(), uint64_t()) : copyAs(tensor.uint64_data(), uint32_t());
  } else if (type.isInteger(32)) ok = copyAs(tensor.int32_data(), int32_t());
  else if (type.isInteger(16) || type.isF16() || type.isBF16()) ok = copyAs(tensor.int32_data(), uint16_t());
  else if (bits == 8) ok = copyAs(tensor.int32_data(), uint8_t());
  else if (bits == 1) ok = copyAs(tensor.int32_data(), uint8_t());
  else if (bits == 4) {
    // int32_data holds the packed bytes of sub-byte types.
    int64_t packed = (count + 1) / 2;
    if (int64_t(tensor.int32_data_size()) != packed) return std::nullopt;
    bytes.resize(packed);
    for (int64_t i = 0; i < packed; ++i) bytes[i] = char(tensor.int32_data(i));
    ok = true;
  }
  if (!ok) return std::nullopt;
  return bytes;
}

/// A dense attribute from raw ONNX bytes (which `rawByteSize` has checked).
DenseElementsAttr denseFromRaw(RankedTensorType type, ArrayRef<char> raw) {
  Type element = type.getElementType();
  unsigned bits = element.getIntOrFloatBitWidth();
  if (bits == 1) {
    SmallVector<bool> values(raw.begin(), raw.end());
    return DenseElementsAttr::get(type, values);
  }
  if (bits == 4) {
    SmallVector<APInt> values;
    for (int64_t i = 0; i < type.getNumElements(); ++i) {
      uint8_t byte = uint8_t(raw[i / 2]);
      values.push_back(APInt(4, i % 2 ? byte >> 4 : byte & 0xF));
    }
    return DenseElementsAttr::get(type, values);
  }
  return DenseElementsAttr::getFromRawBuffer(type, raw);
}

/// A blob key from the tensor's name (the blob manager makes it unique).
std::string blobNameFor(const ::onnx::TensorProto &tensor) {
  std::string name = tensor.name().empty() ? "tensor" : tensor.name();
  for (char &c : name)
    if (!llvm::isAlnum(c) && c != '_' && c != '.') c = '_';
  return name;
}
} // namespace

llvm::Expected<ArrayRef<char>> TensorImporter::readExternal(const ::onnx::TensorProto &tensor,
                                                      std::shared_ptr<llvm::MemoryBuffer> &owner) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    if (entry.key() == "location") location = entry.value();
    else if (entry.key() == "offset" || entry.key() == "length") {
      int64_t value;
      if (llvm::StringRef(entry.value()).getAsInteger(10, value) || value < 0)
        return llvm::createStringError("invalid external data " + entry.key() + " '" +
                                       entry.value() + "'");
      (entry.key() == "offset" ? offset : length) = value;
    }
  }
  if (location.empty()) return llvm::createStringError("external data has no location");
  // Keep reads inside the model's directory.
  if (llvm::sys::path::is_absolute(location) || llvm::StringRef(location).contains(".."))
    return llvm::createStringError("external data location '" + location +
                                   "' must be a relative path inside the model's directory");
  llvm::SmallString<256> path(baseDir);
  llvm::sys::path::append(path, location);
  auto &file = externalFiles[path];
  if (!file) {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return llvm::createStringError("cannot open external data file '" + std::string(path) +
                                     "': " + buffer.getError().message());
    file = std::move(*buffer);
  }
  int64_t size = file->getBufferSize();
  if (length < 0) length = size - offset;
  if (offset > size || length > size - offset)
    return llvm::createStringError("external data of '" + tensor.name() + "' (offset " +
                                   std::to_string(offset) + ", length " + std::to_string(length) +
                                   ") lies beyond the end of '" + location + "' (" +
                                   std::to_string(size) + " bytes)");
  owner = file;
  return ArrayRef<char>(file->getBufferStart() + offset, length);
}

std::string dataTypeName(int64_t dataType) {
  if (!::onnx::TensorProto::DataType_IsValid(int(dataType))) return std::to_string(dataType);
  return ::onnx::TensorProto::DataType_Name(::onnx::TensorProto::DataType(dataType));
}

ElementsAttr TensorImporter::convert(const ::onnx::TensorProto &tensor, Location loc) {
  Type element = onnx::elementTypeForOnnxDataType(&context, tensor.data_type());
  if (!element) {
    emitError(loc) << "tensor '" << tensor.name() << "' has unsupported data type "
                   << dataTypeName(tensor.data_type());
    return nullptr;
  }
  SmallVector<int64_t> shape;
  int64_t count = 1;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0 || dim > kMaxDim) {
      emitError(loc) << "tensor '" << tensor.name() << "' has invalid dim " << dim;
      return nullptr;
    }
    shape.push_back(dim);
    if (count > 0 && dim > 0 && count > (int64_t(1) << 40) / dim) {
      emitError(loc) << "tensor '" << tensor.name() << "' has too many elements";
      return nullptr;
    }
    count *= dim;
  }
  auto type = RankedTensorType::get(shape, element);
  int64_t expectedBytes = rawByteSize(element, count);

  std::shared_ptr<llvm::MemoryBuffer> owner;
  ArrayRef<char> raw;
  std::optional<std::vector<char>> converted;
  if (tensor.data_location() == ::onnx::TensorProto::EXTERNAL) {
    auto bytes = readExternal(tensor, owner);
    if (!bytes) {
      emitError(loc) << "tensor '" << tensor.name() << "': " << llvm::toString(bytes.takeError());
      return nullptr;
    }
    raw = *bytes;
  } else if (tensor.has_raw_data()) {
    raw = ArrayRef<char>(tensor.raw_data().data(), tensor.raw_data().size());
  } else {
    converted = typedFieldBytes(tensor, element, count);
    if (!converted) {
      emitError(loc) << "tensor '" << tensor.name() << "' holds a number of values that "
                     << "disagrees with its shape (" << count << " elements)";
      return nullptr;
    }
    raw = *converted;
  }
  if (int64_t(raw.size()) != expectedBytes) {
    emitError(loc) << "tensor '" << tensor.name() << "' has " << raw.size()
                   << " bytes of data but its shape and type need " << expectedBytes;
    return nullptr;
  }

  if (count <= inlineLimit) return denseFromRaw(type, raw);

  // A weight: a resource blob that keeps ONNX's raw layout.
  unsigned alignment = std::max(1u, element.getIntOrFloatBitWidth() / 8);
  if (reinterpret_cast<uintptr_t>(raw.data()) % alignment != 0) owner.reset();
  AsmResourceBlob blob =
      owner ? AsmResourceBlob(raw, alignment, [owner](void *, size_t, size_t) {},
                              /*dataIsMutable=*/false)
            : HeapAsmResourceBlob::allocateAndCopyWithAlign(raw, alignment);
  auto &manager = DenseResourceElementsHandle::getManagerInterface(&context);
  auto handle = manager.insert(blobNameFor(tensor), std::move(blob));
  return DenseResourceElementsAttr::get(type, handle);
}

} // namespace llmc::import
