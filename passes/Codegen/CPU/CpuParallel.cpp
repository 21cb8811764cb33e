//===- CpuParallel.cpp - kernels over the runtime's threads ---------------===//
//
// A kernel that splits its work into independent tasks runs them through
// the host API's parallel_for: the step stores the kernel's buffers (each
// one's address and dynamic sizes) in a closure on its stack, and a task
// function that parallel_for calls with a range of tasks rebuilds the
// memrefs from it and calls the kernel on that range. Tasks must not depend
// on which thread runs them or in what order, so results do not either.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

using namespace mlir;

namespace llmc::cpu {

LLVM::LLVMPointerType llvmPointerType(OpBuilder &b) {
  return LLVM::LLVMPointerType::get(b.getContext());
}

Value constantI64(OpBuilder &b, Location loc, int64_t value) {
  return LLVM::ConstantOp::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(value));
}

Value hostApiField(StepLowering &step, Location loc, int32_t index) {
  OpBuilder &b = step.b;
  auto ptr = llvmPointerType(b);
  auto apiType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), {b.getI32Type(), b.getI32Type(), ptr, ptr, ptr, ptr});
  Value address =
      LLVM::GEPOp::create(b, loc, ptr, apiType, step.api, ArrayRef<LLVM::GEPArg>{0, index});
  return LLVM::LoadOp::create(b, loc, ptr, address);
}

Value pointerTo(OpBuilder &b, Location loc, Value memref) {
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, b.getIndexType(), memref);
  Value integer = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  return LLVM::IntToPtrOp::create(b, loc, llvmPointerType(b), ValueRange{integer});
}

Value memrefAt(OpBuilder &b, Location loc, MemRefType type, Value pointer, ValueRange sizes) {
  auto i64 = b.getI64Type();
  int64_t rank = type.getRank();
  auto dims = LLVM::LLVMArrayType::get(i64, rank);
  auto descriptorType = LLVM::LLVMStructType::getLiteral(
      b.getContext(), {llvmPointerType(b), llvmPointerType(b), i64, dims, dims});
  Value descriptor = LLVM::PoisonOp::create(b, loc, descriptorType);
  auto insert = [&](Value value, ArrayRef<int64_t> position) {
    descriptor = LLVM::InsertValueOp::create(b, loc, descriptor, value, position);
  };
  insert(pointer, {0});
  insert(pointer, {1});
  SmallVector<Value> extents;
  for (int64_t dim = 0, dynamic = 0; dim < rank; ++dim) {
    int64_t size = type.getDimSize(dim);
    extents.push_back(ShapedType::isDynamic(size) ? sizes[dynamic++] : constantI64(b, loc, size));
  }
  for (int64_t dim = 0; dim < rank; ++dim) insert(extents[dim], {3, dim});
  if (!type.getLayout().isIdentity()) {
    // A view with a static layout: its offset and strides from the type.
    auto [strides, offset] = type.getStridesAndOffset();
    insert(constantI64(b, loc, offset), {2});
    for (int64_t dim = 0; dim < rank; ++dim) insert(constantI64(b, loc, strides[dim]), {4, dim});
    return UnrealizedConversionCastOp::create(b, loc, type, descriptor).getResult(0);
  }
  insert(constantI64(b, loc, 0), {2});
  Value stride = constantI64(b, loc, 1);
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    insert(stride, {4, dim});
    stride = LLVM::MulOp::create(b, loc, stride, extents[dim]);
  }
  return UnrealizedConversionCastOp::create(b, loc, type, descriptor).getResult(0);
}

bool isContiguous(Value memref) {
  return cast<MemRefType>(memref.getType()).getLayout().isIdentity();
}

bool isAddressable(Value memref) {
  auto type = cast<MemRefType>(memref.getType());
  if (type.getLayout().isIdentity()) return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset))) return false;
  return !ShapedType::isDynamic(offset) && llvm::none_of(strides, ShapedType::isDynamic);
}

void runParallel(StepLowering &step, Location loc, StringRef name, const std::string &key,
                 ArrayRef<Value> buffers, Value numTasks, TasksBody body) {
  assert(llvm::all_of(buffers, isAddressable) && "a kernel buffer's layout is not static");
  OpBuilder &b = step.b;
  auto ptr = llvmPointerType(b);
  Type i64 = b.getI64Type(), index = b.getIndexType();
  SmallVector<Type> kernelTypes = llvm::map_to_vector(buffers, [](Value v) { return v.getType(); });
  kernelTypes.append({index, index});
  func::FuncOp kernel = step.getOrCreateKernel(
      loc, name, key, kernelTypes, [&](KernelBuilder &kb, ValueRange params) {
        body(kb, params.drop_back(2), params[params.size() - 2], params.back());
      });

  // The closure: each buffer's address, then each one's dynamic sizes.
  SmallVector<Type> closureFields(buffers.size(), ptr);
  for (Value buffer : buffers)
    closureFields.append(cast<MemRefType>(buffer.getType()).getNumDynamicDims(), i64);
  auto closureType = LLVM::LLVMStructType::getLiteral(b.getContext(), closureFields);
  func::FuncOp task = step.getOrCreateKernel(
      loc, (name + "_task").str(), key + "/task", {ptr, i64, i64},
      [&](KernelBuilder &kb, ValueRange params) {
        OpBuilder &tb = kb.builder();
        auto field = [&](int32_t position, Type type) -> Value {
          Value address = LLVM::GEPOp::create(tb, loc, ptr, closureType, params[0],
                                              ArrayRef<LLVM::GEPArg>{0, position});
          return LLVM::LoadOp::create(tb, loc, type, address);
        };
        SmallVector<Value> args;
        auto sizeField = static_cast<int32_t>(buffers.size());
        for (auto [position, buffer] : llvm::enumerate(buffers)) {
          auto type = cast<MemRefType>(buffer.getType());
          SmallVector<Value> sizes;
          for (int64_t i = 0, n = type.getNumDynamicDims(); i < n; ++i) sizes.push_back(field(sizeField++, i64));
          args.push_back(memrefAt(tb, loc, type, field(position, ptr), sizes));
        }
        args.push_back(arith::IndexCastOp::create(tb, loc, index, params[1]));
        args.push_back(arith::IndexCastOp::create(tb, loc, index, params[2]));
        func::CallOp::create(tb, loc, kernel, args);
      });

  Value closure = LLVM::AllocaOp::create(b, loc, ptr, closureType, constantI64(b, loc, 1));
  SmallVector<Value> fields = llvm::map_to_vector(buffers, [&](Value buffer) {
    return pointerTo(b, loc, buffer);
  });
  for (Value buffer : buffers) {
    auto type = cast<MemRefType>(buffer.getType());
    for (int64_t dim = 0; dim < type.getRank(); ++dim)
      if (type.isDynamicDim(dim))
        fields.push_back(
            arith::IndexCastOp::create(b, loc, i64, memref::DimOp::create(b, loc, buffer, dim)));
  }
  for (auto [position, value] : llvm::enumerate(fields)) {
    Value address = LLVM::GEPOp::create(b, loc, ptr, closureType, closure,
                                        ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(position)});
    LLVM::StoreOp::create(b, loc, value, address);
  }
  Value taskValue = func::ConstantOp::create(b, loc, task.getFunctionType(),
                                             FlatSymbolRefAttr::get(task.getSymNameAttr()));
  Value taskPointer = UnrealizedConversionCastOp::create(b, loc, ptr, taskValue).getResult(0);
  auto parallelForType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                                     {ptr, i64, ptr, ptr});
  Value tasks = numTasks.getType().isIndex() ? arith::IndexCastOp::create(b, loc, i64, numTasks)
                                             : numTasks;
  LLVM::CallOp::create(b, loc, parallelForType,
                       ValueRange{hostApiField(step, loc, kApiParallelFor),
                                  hostApiField(step, loc, kApiContext), tasks, taskPointer,
                                  closure});
}

void runOverRows(StepLowering &step, Location loc, StringRef name, const std::string &key,
                 ArrayRef<Value> buffers, unsigned rowsOf, TasksBody body) {
  auto addressable = [](Value buffer) {
    return isAddressable(buffer) && cast<MemRefType>(buffer.getType()).getRank() > 0;
  };
  if (!llvm::all_of(buffers, addressable)) {
    // A view with a dynamic layout is not addressable from a bare pointer,
    // nor is a scalar (rank 0) through memrefAt's descriptor.
    step.callKernel(loc, name, key, buffers, [&](KernelBuilder &kb, ValueRange params) {
      body(kb, params, kb.index(0), kb.dim(params[rowsOf], 0));
    });
    return;
  }
  auto chunks = [](KernelBuilder &kb, Value rows) {
    return kb.divIndex(kb.addIndex(rows, kb.index(kRowsPerRowTask - 1)), kb.index(kRowsPerRowTask));
  };
  KernelBuilder stepBuilder(step.b, loc);
  Value tasks = chunks(stepBuilder, memref::DimOp::create(step.b, loc, buffers[rowsOf], 0));
  runParallel(step, loc, name, key, buffers, tasks,
              [&](KernelBuilder &kb, ValueRange params, Value firstTask, Value lastTask) {
                Value rows = kb.dim(params[rowsOf], 0);
                Value end = kb.minIndex(kb.mulIndex(lastTask, kb.index(kRowsPerRowTask)), rows);
                body(kb, params, kb.mulIndex(firstTask, kb.index(kRowsPerRowTask)), end);
              });
}

} // namespace llmc::cpu
