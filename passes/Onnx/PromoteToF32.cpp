//===- PromoteToF32.cpp - compute an f16 or bf16 model in f32 -------------===//
//
// Exporters write half-precision models (optimum's --dtype fp16, the genai
// builder's -p fp16), with Casts to f32 and back around the parts they
// compute in f32. llmc computes in f32 whatever the model stores: every
// f16/bf16 type becomes f32, every half-precision constant is widened once,
// and casts to a half type cast to f32, so raising and both targets see an
// f32 model. The CUDA target narrows again to its --dtype on the way to the
// GPU.
//
//===----------------------------------------------------------------------===//
#include "passes/Onnx/Passes.h"

#include "dialects/onnx/OnnxDialect.h"

#include "llmc/Support/ElementsData.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/bit.h"

#include <cstring>

#define DEBUG_TYPE "onnx-promote-to-f32"

namespace llmc {
#define GEN_PASS_DEF_ONNXPROMOTETOF32PASS
#include "passes/Onnx/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc {
namespace {

bool isHalf(Type type) { return isa<Float16Type, BFloat16Type>(type); }

/// ONNX's TensorProto element type codes of the float types.
constexpr int64_t kOnnxFloat = 1, kOnnxFloat16 = 10, kOnnxBFloat16 = 16;

/// The name of the attribute that holds the ONNX element type `op` produces
/// (Cast's `to`, DequantizeLinear's `output_dtype`), or an empty name.
StringRef elementTypeCodeAttribute(Operation *op) {
  if (isa<onnx::CastOp>(op)) return "to";
  if (isa<onnx::DequantizeLinearOp>(op)) return "output_dtype";
  return {};
}

/// `type` with f16/bf16 elements (or itself a half scalar) made f32.
Type promoted(Type type) {
  Type f32 = Float32Type::get(type.getContext());
  if (isHalf(type)) return f32;
  if (auto shaped = dyn_cast<ShapedType>(type))
    if (isHalf(shaped.getElementType())) return shaped.clone(f32);
  return type;
}

/// IEEE binary16 bits as the f32 of the same value (exact: every f16 is an f32).
float halfBitsToFloat(uint16_t half) {
  uint32_t sign = uint32_t(half & 0x8000) << 16;
  uint32_t exponent = (half >> 10) & 0x1f, mantissa = half & 0x3ff;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000 | (mantissa << 13); // inf, NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;
  } else {
    // A subnormal m * 2^-24: shift the leading one into the implicit bit.
    int shift = 0;
    while (!(mantissa & 0x400)) mantissa <<= 1, ++shift;
    bits = sign | (uint32_t(127 - 14 - shift) << 23) | ((mantissa & 0x3ff) << 13);
  }
  return llvm::bit_cast<float>(bits);
}

/// The f32 values of a half-precision constant, in the attribute kind it came in
/// (a dense_resource blob stays a blob, a dense attribute dense).
FailureOr<ElementsAttr> promotedElements(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  std::vector<char> storage;
  FailureOr<ArrayRef<char>> bytes = elementsBytes(attr, storage);
  if (failed(bytes)) return failure();
  bool bf16 = type.getElementType().isBF16();
  std::vector<float> values(type.getNumElements());
  const char *data = bytes->data();
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t half;
    std::memcpy(&half, data + 2 * i, 2);
    values[i] = bf16 ? llvm::bit_cast<float>(uint32_t(half) << 16) : halfBitsToFloat(half);
  }
  auto f32Type = cast<ShapedType>(promoted(type));
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr))
    return cast<ElementsAttr>(DenseResourceElementsAttr::get(
        f32Type, resource.getRawHandle().getKey(),
        HeapAsmResourceBlob::allocateAndCopyInferAlign(ArrayRef<float>(values))));
  return cast<ElementsAttr>(DenseElementsAttr::get(f32Type, ArrayRef<float>(values)));
}

/// The attribute with its half-precision value widened, or null if it has none.
FailureOr<Attribute> promotedAttribute(Attribute attr) {
  if (auto scalar = dyn_cast<FloatAttr>(attr); scalar && isHalf(scalar.getType()))
    return Attribute(FloatAttr::get(promoted(scalar.getType()), scalar.getValueAsDouble()));
  if (auto elements = dyn_cast<ElementsAttr>(attr); elements && isHalf(elements.getElementType())) {
    FailureOr<ElementsAttr> widened = promotedElements(elements);
    if (failed(widened)) return failure();
    return Attribute(*widened);
  }
  return Attribute();
}

struct OnnxPromoteToF32Pass : impl::OnnxPromoteToF32PassBase<OnnxPromoteToF32Pass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    WalkResult walk = func.walk([&](Operation *op) {
      for (NamedAttribute named : op->getAttrs()) {
        FailureOr<Attribute> widened = promotedAttribute(named.getValue());
        if (failed(widened)) {
          op->emitOpError("holds a half-precision constant without readable data");
          return WalkResult::interrupt();
        }
        if (*widened) op->setAttr(named.getName(), *widened);
      }
      if (StringRef name = elementTypeCodeAttribute(op); !name.empty())
        if (auto code = op->getAttrOfType<IntegerAttr>(name);
            code && (code.getInt() == kOnnxFloat16 || code.getInt() == kOnnxBFloat16))
          op->setAttr(name, IntegerAttr::get(code.getType(), kOnnxFloat));
      for (Value result : op->getResults()) result.setType(promoted(result.getType()));
      for (Region &region : op->getRegions())
        for (Block &block : region)
          for (BlockArgument arg : block.getArguments()) arg.setType(promoted(arg.getType()));
      return WalkResult::advance();
    });
    if (walk.wasInterrupted()) return signalPassFailure();
    SmallVector<Type> inputs, results;
    for (Type type : func.getArgumentTypes()) inputs.push_back(promoted(type));
    for (Type type : func.getResultTypes()) results.push_back(promoted(type));
    func.setType(FunctionType::get(&getContext(), inputs, results));
  }
};

} // namespace
} // namespace llmc
