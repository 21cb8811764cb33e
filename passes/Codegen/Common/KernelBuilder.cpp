//===- KernelBuilder.cpp - loops and arithmetic for generated kernels ----===//
#include "passes/Codegen/Common/KernelBuilder.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace llmc::codegen {

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

void KernelBuilder::forEach(Value lower, Value upper, function_ref<void(Value)> body,
                            int64_t step) {
  scf::ForOp::create(b, loc, lower, upper, index(step), ValueRange{},
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
Value KernelBuilder::expPolynomial(Value a) {
  // Scalars or vectors alike: constants take the shape of `a`.
  auto vectorType = dyn_cast<VectorType>(a.getType());
  auto shaped = [&](Type element) -> Type {
    return vectorType ? VectorType::get(vectorType.getShape(), element) : element;
  };
  Type f32 = shaped(b.getF32Type()), i32 = shaped(b.getI32Type());
  auto constantOf = [&](Type type, Attribute value) -> Value {
    if (auto vector = dyn_cast<VectorType>(type))
      return arith::ConstantOp::create(b, loc, vector, DenseElementsAttr::get(vector, value));
    return arith::ConstantOp::create(b, loc, cast<TypedAttr>(value));
  };
  auto constant = [&](float value) { return constantOf(f32, b.getF32FloatAttr(value)); };
  auto integer = [&](int32_t value) { return constantOf(i32, b.getI32IntegerAttr(value)); };
  auto fma = [&](Value x, Value y, Value z) { return math::FmaOp::create(b, loc, x, y, z); };
  Value x = arith::MinimumFOp::create(
      b, loc, arith::MaximumFOp::create(b, loc, a, constant(-87.33654f)), constant(88.37626f));
  // x = n ln2 + r, |r| <= ln2 / 2; ln2 split in two so that n * the first is exact.
  Value n = math::RoundEvenOp::create(b, loc, arith::MulFOp::create(b, loc, x, constant(1.44269504f)));
  Value r = fma(n, constant(-0.693359375f), x);
  r = fma(n, constant(2.12194440e-4f), r);
  Value p = constant(1.9875691500e-4f);
  for (float c : {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f,
                  5.0000001201e-1f})
    p = fma(p, r, constant(c));
  // e^r = 1 + r + r^2 p(r).
  Value y = arith::AddFOp::create(b, loc, fma(arith::MulFOp::create(b, loc, r, r), p, r),
                                  constant(1.0f));
  // 2^n from its exponent bits.
  Value exponent = arith::AddIOp::create(b, loc, arith::FPToSIOp::create(b, loc, i32, n), integer(127));
  Value bits = arith::ShLIOp::create(b, loc, exponent, integer(23));
  return arith::MulFOp::create(b, loc, y, arith::BitcastOp::create(b, loc, f32, bits));
}

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
Value KernelBuilder::maxIndex(Value a, Value c) { return arith::MaxSIOp::create(b, loc, a, c); }
Value KernelBuilder::lessThan(Value a, Value c) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, a, c);
}

std::string kernelKey(StringRef name, TypeRange argTypes) {
  std::string key = name.str();
  llvm::raw_string_ostream os(key);
  for (Type type : argTypes) os << "," << type;
  return key;
}

std::string kernelKey(StringRef name, ValueRange args) { return kernelKey(name, args.getTypes()); }

namespace {
/// The scalar body of an op, written so that two bodies print the same iff
/// they compute the same: every value is named by the block argument or
/// the op (in order) that defines it.
void describeBody(Region &region, llvm::raw_ostream &os) {
  if (region.empty()) return; // an op's optional region left out (a logits head's epilogue)
  DenseMap<Value, std::string> names;
  for (BlockArgument argument : region.front().getArguments())
    names[argument] = "a" + std::to_string(argument.getArgNumber());
  unsigned index = 0;
  for (Operation &op : region.front()) {
    os << "{" << op.getName() << op.getPropertiesAsAttribute() << op.getAttrDictionary() << "(";
    for (Value operand : op.getOperands()) os << names.lookup(operand) << ",";
    os << ")";
    for (Value result : op.getResults()) {
      names[result] = "v" + std::to_string(index++);
      os << result.getType();
    }
    os << "}";
  }
}
} // namespace

std::string kernelKey(Operation *op, TypeRange argTypes, ArrayRef<StringRef> ignored) {
  std::string name;
  llvm::raw_string_ostream os(name);
  // Inherent attributes only: the planned offsets do not change the code.
  Attribute properties = op->getPropertiesAsAttribute();
  if (auto dictionary = dyn_cast_or_null<DictionaryAttr>(properties); dictionary && !ignored.empty()) {
    SmallVector<NamedAttribute> kept;
    for (NamedAttribute attribute : dictionary)
      if (!llvm::is_contained(ignored, attribute.getName().strref())) kept.push_back(attribute);
    properties = DictionaryAttr::get(op->getContext(), kept);
  }
  os << op->getName() << properties;
  for (Region &region : op->getRegions()) describeBody(region, os);
  return kernelKey(name, argTypes);
}

std::string kernelKey(Operation *op, ValueRange args, ArrayRef<StringRef> ignored) {
  return kernelKey(op, args.getTypes(), ignored);
}

} // namespace llmc::codegen
