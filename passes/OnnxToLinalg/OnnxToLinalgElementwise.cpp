//===- OnnxToLinalgElementwise.cpp - elementwise onnx ops to linalg -------===//
//
// Every elementwise op becomes one broadcasting linalg.generic; what differs
// is the scalar body, given per op as a function of the operand elements.
// Integer ops pick their signed or unsigned form from the onnx operand types.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxToLinalg/OnnxToLinalg.h"

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>
#include <functional>

using namespace mlir;

namespace llmc::onnx_to_linalg {
namespace {

/// Where a scalar body is built, and the onnx element types it works on.
struct Scalars {
  OpBuilder &b;
  Location loc;
  SmallVector<Type> operandTypes; // with signedness
  Type resultType;                // with signedness

  Type operandType() const { return operandTypes.front(); }
  bool isFloat() const { return isa<FloatType>(operandType()); }
  bool isUnsigned() const { return isUnsignedInteger(operandType()); }
  Value constant(double value) const { return scalarConstant(b, loc, signless(operandType()), value); }
};

template <typename OpTy>
using ScalarFn = std::function<Value(OpTy, Scalars &, ValueRange)>;

/// Lowers an op whose every operand is read elementwise, with broadcasting.
template <typename OpTy>
struct LowerElementwise : OpConversionPattern<OpTy> {
  LowerElementwise(TypeConverter &converter, MLIRContext *context, ScalarFn<OpTy> fn)
      : OpConversionPattern<OpTy>(converter, context), fn(std::move(fn)) {}

  LogicalResult matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = staticResultType(rewriter, *this->getTypeConverter(), op, op->getResult(0));
    if (failed(type)) return failure();
    Scalars scalars{rewriter, op.getLoc(), {}, getElementTypeOrSelf(op->getResult(0).getType())};
    for (Value operand : op->getOperands())
      scalars.operandTypes.push_back(getElementTypeOrSelf(operand.getType()));
    Value result = buildElementwise(rewriter, op.getLoc(), *type, adaptor.getOperands(),
                                    [&](OpBuilder &b, Location loc, ValueRange args) {
                                      Scalars nested{b, loc, scalars.operandTypes,
                                                     scalars.resultType};
                                      return fn(op, nested, args);
                                    });
    rewriter.replaceOp(op, result);
    return success();
  }

  ScalarFn<OpTy> fn;
};

template <typename OpTy>
void add(TypeConverter &converter, RewritePatternSet &patterns, ScalarFn<OpTy> fn) {
  patterns.add<LowerElementwise<OpTy>>(converter, patterns.getContext(), std::move(fn));
}

/// An arithmetic op in its float, signed or unsigned form.
template <typename FloatOp, typename SignedOp, typename UnsignedOp = SignedOp>
Value arithmetic(Scalars &s, Value lhs, Value rhs) {
  if (s.isFloat()) return FloatOp::create(s.b, s.loc, lhs, rhs);
  if (s.isUnsigned()) return UnsignedOp::create(s.b, s.loc, lhs, rhs);
  return SignedOp::create(s.b, s.loc, lhs, rhs);
}

/// Folds a variadic op's operands left to right with a binary op.
template <typename FloatOp, typename SignedOp, typename UnsignedOp = SignedOp>
Value foldOperands(Scalars &s, ValueRange args) {
  Value acc = args.front();
  for (Value next : args.drop_front()) acc = arithmetic<FloatOp, SignedOp, UnsignedOp>(s, acc, next);
  return acc;
}

/// A comparison in its float (ordered), signed or unsigned form.
Value compare(Scalars &s, arith::CmpFPredicate floatPredicate,
              arith::CmpIPredicate signedPredicate, arith::CmpIPredicate unsignedPredicate,
              ValueRange args) {
  if (s.isFloat()) return arith::CmpFOp::create(s.b, s.loc, floatPredicate, args[0], args[1]);
  bool unsignedCompare = s.isUnsigned() || isBool(s.operandType());
  return arith::CmpIOp::create(s.b, s.loc, unsignedCompare ? unsignedPredicate : signedPredicate,
                               args[0], args[1]);
}

/// A math op that exists for floats only.
template <typename OpTy, typename MathOp>
void addFloatMath(TypeConverter &converter, RewritePatternSet &patterns) {
  add<OpTy>(converter, patterns,
            [](OpTy, Scalars &s, ValueRange args) -> Value { return MathOp::create(s.b, s.loc, args[0]); });
}

/// ONNX Mod: with fmod=1 the remainder takes the dividend's sign (C fmod);
/// otherwise (integers only) the divisor's, as Python's %.
Value modulo(onnx::ModOp op, Scalars &s, ValueRange args) {
  if (s.isFloat()) return arith::RemFOp::create(s.b, s.loc, args[0], args[1]);
  if (s.isUnsigned()) return arith::RemUIOp::create(s.b, s.loc, args[0], args[1]);
  Value remainder = arith::RemSIOp::create(s.b, s.loc, args[0], args[1]);
  if (op.getFmod()) return remainder;
  Value zero = s.constant(0);
  Value nonZero = arith::CmpIOp::create(s.b, s.loc, arith::CmpIPredicate::ne, remainder, zero);
  Value remainderNegative =
      arith::CmpIOp::create(s.b, s.loc, arith::CmpIPredicate::slt, remainder, zero);
  Value divisorNegative = arith::CmpIOp::create(s.b, s.loc, arith::CmpIPredicate::slt, args[1], zero);
  Value signsDiffer = arith::XOrIOp::create(s.b, s.loc, remainderNegative, divisorNegative);
  Value adjust = arith::AndIOp::create(s.b, s.loc, nonZero, signsDiffer);
  Value adjusted = arith::AddIOp::create(s.b, s.loc, remainder, args[1]);
  return arith::SelectOp::create(s.b, s.loc, adjust, adjusted, remainder);
}

/// ONNX Pow: the result has the base's type; an integer power is computed in
/// double precision and truncated, as the reference does.
Value power(onnx::PowOp, Scalars &s, ValueRange args) {
  Type base = s.operandTypes[0], exponent = s.operandTypes[1];
  if (isa<FloatType>(base))
    return math::PowFOp::create(s.b, s.loc, args[0],
                                castScalar(s.b, s.loc, args[1], exponent, base));
  Type f64 = s.b.getF64Type();
  Value result = math::PowFOp::create(s.b, s.loc, castScalar(s.b, s.loc, args[0], base, f64),
                                      castScalar(s.b, s.loc, args[1], exponent, f64));
  return castScalar(s.b, s.loc, result, f64, base);
}

/// Gelu, exact (erf) or with the tanh approximation.
Value gelu(onnx::GeluOp op, Scalars &s, ValueRange args) {
  Value x = args[0];
  Value half = s.constant(0.5), one = s.constant(1.0);
  Value inner;
  if (op.getApproximate() == "tanh") {
    Value cube = arith::MulFOp::create(s.b, s.loc, arith::MulFOp::create(s.b, s.loc, x, x), x);
    Value poly = arith::AddFOp::create(
        s.b, s.loc, x, arith::MulFOp::create(s.b, s.loc, s.constant(0.044715), cube));
    inner = math::TanhOp::create(
        s.b, s.loc, arith::MulFOp::create(s.b, s.loc, s.constant(std::sqrt(2.0 / M_PI)), poly));
  } else {
    inner = math::ErfOp::create(s.b, s.loc,
                                arith::MulFOp::create(s.b, s.loc, x, s.constant(M_SQRT1_2)));
  }
  Value scaled = arith::MulFOp::create(s.b, s.loc, half, x);
  return arith::MulFOp::create(s.b, s.loc, scaled, arith::AddFOp::create(s.b, s.loc, one, inner));
}

Value isInf(onnx::IsInfOp op, Scalars &s, ValueRange args) {
  Value result = scalarConstant(s.b, s.loc, s.b.getI1Type(), 0);
  auto check = [&](double infinity) {
    Value hit = arith::CmpFOp::create(s.b, s.loc, arith::CmpFPredicate::OEQ, args[0],
                                      s.constant(infinity));
    result = arith::OrIOp::create(s.b, s.loc, result, hit);
  };
  if (op.getDetectPositive()) check(INFINITY);
  if (op.getDetectNegative()) check(-INFINITY);
  return result;
}

/// CastLike reads only its first operand elementwise; the second gives the type.
struct LowerCastLike : OpConversionPattern<onnx::CastLikeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::CastLikeOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = staticResultType(rewriter, *getTypeConverter(), op, op.getOutput());
    if (failed(type)) return failure();
    Type from = getElementTypeOrSelf(op.getInput().getType());
    Type to = getElementTypeOrSelf(op.getOutput().getType());
    rewriter.replaceOp(op, buildElementwise(rewriter, op.getLoc(), *type, adaptor.getInput(),
                                            [&](OpBuilder &b, Location loc, ValueRange args) {
                                              return castScalar(b, loc, args[0], from, to);
                                            }));
    return success();
  }
};

/// Clip reads its input elementwise and each bound it has as a scalar: the
/// omitted ones are not operands of the linalg.generic.
struct LowerClip : OpConversionPattern<onnx::ClipOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::ClipOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = staticResultType(rewriter, *getTypeConverter(), op, op.getOutput());
    if (failed(type)) return failure();
    bool hasMin = !isa<NoneType>(op.getMin().getType());
    bool hasMax = !isa<NoneType>(op.getMax().getType());
    SmallVector<Value> operands{adaptor.getInput()};
    if (hasMin) operands.push_back(adaptor.getMin());
    if (hasMax) operands.push_back(adaptor.getMax());
    Type element = getElementTypeOrSelf(op.getInput().getType());
    Value result = buildElementwise(
        rewriter, op.getLoc(), *type, operands, [&](OpBuilder &b, Location loc, ValueRange args) {
          Scalars s{b, loc, {element}, element};
          Value x = args[0];
          if (hasMin)
            x = arithmetic<arith::MaximumFOp, arith::MaxSIOp, arith::MaxUIOp>(s, x, args[1]);
          if (hasMax)
            x = arithmetic<arith::MinimumFOp, arith::MinSIOp, arith::MinUIOp>(s, x, args.back());
          return x;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateElementwisePatterns(TypeConverter &converter, RewritePatternSet &patterns) {
  using namespace arith;
  auto &c = converter;
  auto &p = patterns;

  add<onnx::AddOp>(c, p, [](auto, Scalars &s, ValueRange a) { return arithmetic<AddFOp, AddIOp>(s, a[0], a[1]); });
  add<onnx::SubOp>(c, p, [](auto, Scalars &s, ValueRange a) { return arithmetic<SubFOp, SubIOp>(s, a[0], a[1]); });
  add<onnx::MulOp>(c, p, [](auto, Scalars &s, ValueRange a) { return arithmetic<MulFOp, MulIOp>(s, a[0], a[1]); });
  add<onnx::DivOp>(c, p, [](auto, Scalars &s, ValueRange a) {
    return arithmetic<DivFOp, DivSIOp, DivUIOp>(s, a[0], a[1]);
  });
  add<onnx::ModOp>(c, p, modulo);
  add<onnx::PowOp>(c, p, power);
  add<onnx::SumOp>(c, p, [](auto, Scalars &s, ValueRange a) { return foldOperands<AddFOp, AddIOp>(s, a); });
  add<onnx::MaxOp>(c, p, [](auto, Scalars &s, ValueRange a) {
    return foldOperands<MaximumFOp, MaxSIOp, MaxUIOp>(s, a);
  });
  add<onnx::MinOp>(c, p, [](auto, Scalars &s, ValueRange a) {
    return foldOperands<MinimumFOp, MinSIOp, MinUIOp>(s, a);
  });

  add<onnx::EqualOp>(c, p, [](auto, Scalars &s, ValueRange a) {
    return compare(s, CmpFPredicate::OEQ, CmpIPredicate::eq, CmpIPredicate::eq, a);
  });
  add<onnx::LessOp>(c, p, [](auto, Scalars &s, ValueRange a) {
    return compare(s, CmpFPredicate::OLT, CmpIPredicate::slt, CmpIPredicate::ult, a);
  });
  add<onnx::LessOrEqualOp>(c, p, [](auto, Scalars &s, ValueRange a) {
    return compare(s, CmpFPredicate::OLE, CmpIPredicate::sle, CmpIPredicate::ule, a);
  });
  add<onnx::GreaterOp>(c, p, [](auto, Scalars &s, ValueRange a) {
    return compare(s, CmpFPredicate::OGT, CmpIPredicate::sgt, CmpIPredicate::ugt, a);
  });
  add<onnx::GreaterOrEqualOp>(c, p, [](auto, Scalars &s, ValueRange a) {
    return compare(s, CmpFPredicate::OGE, CmpIPredicate::sge, CmpIPredicate::uge, a);
  });
  add<onnx::AndOp>(c, p, [](auto, Scalars &s, ValueRange a) -> Value { return AndIOp::create(s.b, s.loc, a[0], a[1]); });
  add<onnx::OrOp>(c, p, [](auto, Scalars &s, ValueRange a) -> Value { return OrIOp::create(s.b, s.loc, a[0], a[1]); });
  add<onnx::XorOp>(c, p, [](auto, Scalars &s, ValueRange a) -> Value { return XOrIOp::create(s.b, s.loc, a[0], a[1]); });
  add<onnx::NotOp>(c, p, [](auto, Scalars &s, ValueRange a) -> Value {
    return XOrIOp::create(s.b, s.loc, a[0], s.constant(1));
  });
  add<onnx::WhereOp>(c, p, [](auto, Scalars &s, ValueRange a) -> Value {
    return SelectOp::create(s.b, s.loc, a[0], a[1], a[2]);
  });
  add<onnx::CastOp>(c, p, [](auto, Scalars &s, ValueRange a) {
    return castScalar(s.b, s.loc, a[0], s.operandType(), s.resultType);
  });
  p.add<LowerCastLike, LowerClip>(c, p.getContext());

  add<onnx::NegOp>(c, p, [](auto, Scalars &s, ValueRange a) -> Value {
    if (s.isFloat()) return NegFOp::create(s.b, s.loc, a[0]);
    return SubIOp::create(s.b, s.loc, s.constant(0), a[0]);
  });
  add<onnx::AbsOp>(c, p, [](auto, Scalars &s, ValueRange a) -> Value {
    if (s.isFloat()) return math::AbsFOp::create(s.b, s.loc, a[0]);
    if (s.isUnsigned()) return a[0];
    return math::AbsIOp::create(s.b, s.loc, a[0]);
  });
  add<onnx::ReluOp>(c, p, [](auto, Scalars &s, ValueRange a) {
    return arithmetic<MaximumFOp, MaxSIOp, MaxUIOp>(s, a[0], s.constant(0));
  });
  add<onnx::ReciprocalOp>(c, p, [](auto, Scalars &s, ValueRange a) -> Value {
    return DivFOp::create(s.b, s.loc, s.constant(1), a[0]);
  });
  add<onnx::SigmoidOp>(c, p, [](auto, Scalars &s, ValueRange a) -> Value {
    Value negExp = math::ExpOp::create(s.b, s.loc, NegFOp::create(s.b, s.loc, a[0]));
    return DivFOp::create(s.b, s.loc, s.constant(1),
                          AddFOp::create(s.b, s.loc, s.constant(1), negExp));
  });
  add<onnx::SoftplusOp>(c, p, [](auto, Scalars &s, ValueRange a) -> Value {
    Value exp = math::ExpOp::create(s.b, s.loc, a[0]);
    return math::LogOp::create(s.b, s.loc, AddFOp::create(s.b, s.loc, exp, s.constant(1)));
  });
  add<onnx::IsNaNOp>(c, p, [](auto, Scalars &s, ValueRange a) -> Value {
    return CmpFOp::create(s.b, s.loc, CmpFPredicate::UNO, a[0], a[0]);
  });
  add<onnx::IsInfOp>(c, p, isInf);
  add<onnx::GeluOp>(c, p, gelu);
  addFloatMath<onnx::SqrtOp, math::SqrtOp>(c, p);
  addFloatMath<onnx::ExpOp, math::ExpOp>(c, p);
  addFloatMath<onnx::LogOp, math::LogOp>(c, p);
  addFloatMath<onnx::CosOp, math::CosOp>(c, p);
  addFloatMath<onnx::SinOp, math::SinOp>(c, p);
  addFloatMath<onnx::TanhOp, math::TanhOp>(c, p);
  addFloatMath<onnx::ErfOp, math::ErfOp>(c, p);
  addFloatMath<onnx::FloorOp, math::FloorOp>(c, p);
  addFloatMath<onnx::CeilOp, math::CeilOp>(c, p);
}

} // namespace llmc::onnx_to_linalg
