//===- CpuKernelBuilder.cpp - loops and arithmetic for CPU kernels --------===//
#include "passes/CpuLowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace llmc::cpu {

namespace {
arith::FastMathFlagsAttr fastMath(OpBuilder &b) {
  return arith::FastMathFlagsAttr::get(b.getContext(),
                                       arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
}
} // namespace

Value KernelBuilder::index(int64_t value) { return arith::ConstantIndexOp::create(b, loc, value); }

Value KernelBuilder::f32(double value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(static_cast<float>(value)));
}

Value KernelBuilder::dim(Value memref, int64_t dim) {
  return memref::DimOp::create(b, loc, memref, dim);
}

Value KernelBuilder::toIndex(Value integer) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), integer);
}

Value KernelBuilder::toF32(Value integer) {
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), integer);
}

void KernelBuilder::forEach(Value lower, Value upper, function_ref<void(Value)> body) {
  scf::ForOp::create(b, loc, lower, upper, index(1), ValueRange{},
                     [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
                       body(iv);
                       scf::YieldOp::create(b, loc);
                     });
}

Value KernelBuilder::reduce(Value lower, Value upper, Value init,
                            function_ref<Value(Value, Value)> body) {
  auto loop = scf::ForOp::create(b, loc, lower, upper, index(1), ValueRange{init},
                                 [&](OpBuilder &nested, Location, Value iv, ValueRange acc) {
                                   OpBuilder::InsertionGuard guard(b);
                                   b.setInsertionPoint(nested.getInsertionBlock(),
                                                       nested.getInsertionPoint());
                                   scf::YieldOp::create(b, loc, body(iv, acc.front()));
                                 });
  return loop.getResult(0);
}

void KernelBuilder::ifThen(Value condition, function_ref<void()> then) {
  auto ifOp = scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  then();
}

Value KernelBuilder::load(Value memref, ValueRange indices) {
  return memref::LoadOp::create(b, loc, memref, indices);
}

void KernelBuilder::store(Value value, Value memref, ValueRange indices) {
  memref::StoreOp::create(b, loc, value, memref, indices);
}

Value KernelBuilder::add(Value a, Value c) { return arith::AddFOp::create(b, loc, a, c, fastMath(b)); }
Value KernelBuilder::sub(Value a, Value c) { return arith::SubFOp::create(b, loc, a, c, fastMath(b)); }
Value KernelBuilder::mul(Value a, Value c) { return arith::MulFOp::create(b, loc, a, c, fastMath(b)); }
Value KernelBuilder::div(Value a, Value c) { return arith::DivFOp::create(b, loc, a, c, fastMath(b)); }
Value KernelBuilder::max(Value a, Value c) { return arith::MaximumFOp::create(b, loc, a, c, fastMath(b)); }
Value KernelBuilder::neg(Value a) { return arith::NegFOp::create(b, loc, a, fastMath(b)); }
Value KernelBuilder::exp(Value a) { return math::ExpOp::create(b, loc, a); }
Value KernelBuilder::sqrt(Value a) { return math::SqrtOp::create(b, loc, a); }
Value KernelBuilder::cos(Value a) { return math::CosOp::create(b, loc, a); }
Value KernelBuilder::sin(Value a) { return math::SinOp::create(b, loc, a); }
Value KernelBuilder::erf(Value a) { return math::ErfOp::create(b, loc, a); }
Value KernelBuilder::tanh(Value a) { return math::TanhOp::create(b, loc, a); }

Value KernelBuilder::addIndex(Value a, Value c) { return arith::AddIOp::create(b, loc, a, c); }
Value KernelBuilder::subIndex(Value a, Value c) { return arith::SubIOp::create(b, loc, a, c); }
Value KernelBuilder::mulIndex(Value a, Value c) { return arith::MulIOp::create(b, loc, a, c); }
Value KernelBuilder::divIndex(Value a, Value c) { return arith::DivSIOp::create(b, loc, a, c); }
Value KernelBuilder::remIndex(Value a, Value c) { return arith::RemSIOp::create(b, loc, a, c); }
Value KernelBuilder::minIndex(Value a, Value c) { return arith::MinSIOp::create(b, loc, a, c); }
Value KernelBuilder::lessThan(Value a, Value c) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a, c);
}

func::FuncOp StepLowering::getOrCreateKernel(Location loc, StringRef name, const std::string &key,
                                             TypeRange argTypes, KernelBody body) {
  func::FuncOp &kernel = kernels[key];
  if (kernel) return kernel;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  std::string symbol = ("llmc_" + name + "_" + std::to_string(kernels.size())).str();
  kernel = func::FuncOp::create(b, loc, symbol, b.getFunctionType(argTypes, {}));
  kernel.setPrivate();
  // Internal linkage: LLVM may inline kernels and drop their symbols.
  kernel->setAttr("llvm.linkage", LLVM::LinkageAttr::get(b.getContext(), LLVM::Linkage::Internal));
  Block *entry = kernel.addEntryBlock();
  b.setInsertionPointToStart(entry);
  KernelBuilder kb(b, loc);
  body(kb, entry->getArguments());
  func::ReturnOp::create(b, loc);
  return kernel;
}

void StepLowering::callKernel(Location loc, StringRef name, const std::string &key,
                              ValueRange args, KernelBody body) {
  func::CallOp::create(b, loc, getOrCreateKernel(loc, name, key, args.getTypes(), body), args);
}

} // namespace llmc::cpu
