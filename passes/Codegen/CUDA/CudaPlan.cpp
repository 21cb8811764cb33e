//===- CudaPlan.cpp - the CUDA step plan and the kernel module ------------===//
#include "passes/Codegen/CUDA/CudaLowering.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace llmc::stepplan; // the plan's keys, symbols and buffers

namespace llmc::cuda {

Attribute planDim(MLIRContext *context, int64_t value) {
  return IntegerAttr::get(IntegerType::get(context, 64), value);
}

Attribute planDim(MLIRContext *context, StringRef symbol, int64_t mul, int64_t div, int64_t add) {
  Builder b(context);
  if (mul == 1 && div == 1 && add == 0) return b.getStringAttr(symbol);
  SmallVector<Attribute> dim{b.getStringAttr(symbol), b.getI64IntegerAttr(mul),
                             b.getI64IntegerAttr(div)};
  if (add) dim.push_back(b.getI64IntegerAttr(add));
  return b.getArrayAttr(dim);
}

namespace {
std::optional<int64_t> integerOf(Attribute dim) {
  if (auto integer = dyn_cast<IntegerAttr>(dim)) return integer.getInt();
  return std::nullopt;
}
} // namespace

MemRefType TensorRef::memrefType() const {
  SmallVector<int64_t> shape;
  for (Attribute size : sizes) shape.push_back(integerOf(size).value_or(ShapedType::kDynamic));
  if (contiguous) return MemRefType::get(shape, elementType);
  SmallVector<int64_t> staticStrides;
  for (Attribute stride : strides) staticStrides.push_back(integerOf(stride).value_or(ShapedType::kDynamic));
  auto layout = StridedLayoutAttr::get(elementType.getContext(), ShapedType::kDynamic, staticStrides);
  return MemRefType::get(shape, elementType, layout);
}

DictionaryAttr TensorRef::location() const {
  Builder b(elementType.getContext());
  return b.getDictionaryAttr({b.getNamedAttr(kBufferKey, b.getStringAttr(buffer)),
                              b.getNamedAttr(kOffsetKey, b.getI64IntegerAttr(offset))});
}

TensorRef TensorRef::shifted(int64_t bytes) const {
  TensorRef moved = *this;
  moved.offset += bytes;
  return moved;
}

std::optional<int64_t> TensorRef::rowStride() const {
  auto stride = dyn_cast<IntegerAttr>(strides.front());
  auto inner = dyn_cast<IntegerAttr>(strides.back());
  if (sizes.size() != 2 || !stride || !inner || inner.getInt() != 1) return std::nullopt;
  return stride.getInt();
}

TensorRef contiguousTensor(MLIRContext *context, StringRef buffer, int64_t offset, Type elementType,
                           ArrayRef<Attribute> shape) {
  TensorRef ref{buffer.str(), offset, elementType, SmallVector<Attribute>(shape), {}, true};
  // Row-major strides: a product of the sizes after each axis. A symbolic
  // size may only lead (the rows, or the pool's blocks after a static axis 0),
  // so every stride but the leading ones is an integer.
  ref.strides.resize(shape.size());
  int64_t stride = 1;
  for (int64_t axis = static_cast<int64_t>(shape.size()) - 1; axis >= 0; --axis) {
    ref.strides[axis] = planDim(context, stride);
    if (auto size = integerOf(shape[axis])) {
      stride *= *size;
    } else if (axis > 0) {
      // Strides before a symbolic axis scale with it.
      for (int64_t outer = axis - 1; outer >= 0; --outer) {
        int64_t inner = stride;
        for (int64_t between = outer + 1; between < axis; ++between)
          inner *= integerOf(shape[between]).value_or(1);
        ref.strides[outer] = planDim(context, cast<StringAttr>(shape[axis]).getValue(), inner, 1);
      }
      break;
    }
  }
  return ref;
}

void PlanBuilder::launch(StringRef module, StringRef kernel, ArrayRef<Attribute> grid,
                         std::array<int64_t, 3> block, ArrayRef<KernelArg> args,
                         int64_t sharedBytes) {
  Builder b(context);
  SmallVector<Attribute> argAttrs;
  for (const KernelArg &arg : args) {
    switch (arg.kind) {
    case KernelArg::Kind::Memref:
      argAttrs.push_back(b.getDictionaryAttr(
          {b.getNamedAttr(kMemrefArg, arg.tensor.location()),
           b.getNamedAttr(kSizesKey, b.getArrayAttr(arg.tensor.sizes)),
           b.getNamedAttr(kStridesKey, b.getArrayAttr(arg.tensor.strides))}));
      break;
    case KernelArg::Kind::Pointer:
      argAttrs.push_back(b.getDictionaryAttr({b.getNamedAttr(kPtrArg, arg.tensor.location())}));
      break;
    case KernelArg::Kind::NullPointer:
      argAttrs.push_back(b.getDictionaryAttr({b.getNamedAttr(kI64Arg, b.getI64IntegerAttr(0))}));
      break;
    case KernelArg::Kind::I32:
      argAttrs.push_back(b.getDictionaryAttr({b.getNamedAttr(kI32Arg, arg.dim)}));
      break;
    case KernelArg::Kind::F32:
      argAttrs.push_back(
          b.getDictionaryAttr({b.getNamedAttr(kF32Arg, b.getF32FloatAttr(arg.number))}));
      break;
    }
  }
  entries.push_back(b.getDictionaryAttr(
      {b.getNamedAttr(kOpKey, b.getStringAttr(kLaunchOp)),
       b.getNamedAttr(kModuleKey, b.getStringAttr(module)),
       b.getNamedAttr(kKernelKey, b.getStringAttr(kernel)),
       b.getNamedAttr(kGridKey, b.getArrayAttr(grid)),
       b.getNamedAttr(kBlockKey, b.getI64ArrayAttr(block)),
       b.getNamedAttr(kSharedBytesKey, b.getI64IntegerAttr(sharedBytes)),
       b.getNamedAttr(kArgsKey, b.getArrayAttr(argAttrs))}));
}

void PlanBuilder::gemm(const Gemm &gemm) {
  Builder b(context);
  auto dtypeName = [](Type type) { return type.isF32() ? "f32" : type.isBF16() ? "bf16" : "f16"; };
  auto optional = [&](const std::optional<TensorRef> &ref) -> Attribute {
    if (!ref) return b.getUnitAttr(); // null in the JSON
    return ref->location();
  };
  entries.push_back(b.getDictionaryAttr(
      {b.getNamedAttr(kOpKey, b.getStringAttr(kGemmOp)), b.getNamedAttr(kMKey, gemm.m),
       b.getNamedAttr(kNKey, b.getI64IntegerAttr(gemm.n)),
       b.getNamedAttr(kKKey, b.getI64IntegerAttr(gemm.k)),
       b.getNamedAttr(kAKey, gemm.a.location()),
       b.getNamedAttr(kLdaKey, b.getI64IntegerAttr(gemm.lda)),
       b.getNamedAttr(kBKey, gemm.b.location()),
       b.getNamedAttr(kLdbKey, b.getI64IntegerAttr(gemm.ldb)),
       b.getNamedAttr(kBLayoutKey, b.getStringAttr(gemm.bTransposed ? kBLayoutNK : kBLayoutKN)),
       b.getNamedAttr(kDKey, gemm.d.location()),
       b.getNamedAttr(kLddKey, b.getI64IntegerAttr(gemm.ldd)),
       b.getNamedAttr(kDDtypeKey, b.getStringAttr(dtypeName(gemm.d.elementType))),
       b.getNamedAttr(kBiasKey, optional(gemm.bias)), b.getNamedAttr(kCKey, optional(gemm.c)),
       b.getNamedAttr(kLdcKey, b.getI64IntegerAttr(gemm.c ? gemm.ldc : 0)),
       b.getNamedAttr(kBetaKey, b.getI64IntegerAttr(gemm.c ? 1 : 0))}));
}

ArrayAttr PlanBuilder::steps() const { return ArrayAttr::get(context, entries); }

KernelModule::KernelModule(ModuleOp parent, StringRef arch) {
  MLIRContext *context = parent.getContext();
  OpBuilder b(context);
  b.setInsertionPointToEnd(parent.getBody());
  auto target = NVVM::NVVMTargetAttr::get(context, /*optLevel=*/3, "nvptx64-nvidia-cuda", arch);
  module = gpu::GPUModuleOp::create(b, parent.getLoc(), "llmc_kernels", b.getArrayAttr({target}));
}

std::string KernelModule::getOrCreate(Location loc, StringRef name, const std::string &key,
                                      TypeRange argTypes, KernelBody body) {
  auto known = kernels.find(key);
  if (known != kernels.end()) return known->second;
  std::string symbol = (name + "_" + std::to_string(kernels.size())).str();
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto kernel = gpu::GPUFuncOp::create(b, loc, symbol, b.getFunctionType(argTypes, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({static_cast<int32_t>(kRowBlockSize), 1, 1}));
  b.setInsertionPointToStart(&kernel.getBody().front());
  codegen::KernelBuilder kb(b, loc);
  body(kb, kernel.getArguments());
  gpu::ReturnOp::create(b, loc);
  kernels[key] = symbol;
  return symbol;
}

void StepContext::launchRows(Location loc, StringRef name, const std::string &key, Attribute rows,
                             ArrayRef<TensorRef> args, KernelModule::KernelBody body,
                             ArrayRef<Attribute> i32Args) {
  SmallVector<Type> types;
  SmallVector<KernelArg> kernelArgs;
  for (const TensorRef &arg : args) {
    types.push_back(arg.memrefType());
    kernelArgs.push_back(KernelArg::memref(arg));
  }
  for (Attribute value : i32Args) {
    types.push_back(IntegerType::get(loc.getContext(), 32));
    kernelArgs.push_back(KernelArg::i32(value));
  }
  std::string kernel =
      kernels.getOrCreate(loc, name, codegen::kernelKey(name, types) + key, types, body);
  MLIRContext *context = loc.getContext();
  plan.launch(kKernelsModule, kernel, {rows, planDim(context, 1), planDim(context, 1)},
              {kRowBlockSize, 1, 1}, kernelArgs);
}

} // namespace llmc::cuda
