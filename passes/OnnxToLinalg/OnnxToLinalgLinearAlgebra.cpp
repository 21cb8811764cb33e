//===- OnnxToLinalgLinearAlgebra.cpp - MatMul, Gemm, DequantizeLinear ----===//
//
// Matrix products become contraction generics (a reduction dim for the inner
// dimension), numpy's batch broadcasting included; DequantizeLinear is an
// elementwise generic whose scale and zero point are read per tensor, per
// axis or per block through their indexing maps.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxToLinalg/OnnxToLinalg.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/ShapeHelpers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace llmc::onnx_to_linalg {
namespace {

/// acc + lhs * rhs, in float or integer arithmetic.
Value multiplyAccumulate(OpBuilder &b, Location loc, Value lhs, Value rhs, Value acc) {
  if (isa<FloatType>(acc.getType()))
    return arith::AddFOp::create(b, loc, acc, arith::MulFOp::create(b, loc, lhs, rhs));
  return arith::AddIOp::create(b, loc, acc, arith::MulIOp::create(b, loc, lhs, rhs));
}

/// The product of [batch..., M, K] and [batch..., K, N] operands whose batch
/// dims broadcast (numpy rules) to `batchShape`: [batchShape..., M, N].
/// `transposeLhs`/`transposeRhs` read the operands as [K, M] / [N, K].
Value buildContraction(OpBuilder &b, Location loc, Value lhs, Value rhs,
                       ArrayRef<int64_t> batchShape, bool transposeLhs = false,
                       bool transposeRhs = false) {
  MLIRContext *context = b.getContext();
  auto lhsType = cast<RankedTensorType>(lhs.getType());
  auto rhsType = cast<RankedTensorType>(rhs.getType());
  int64_t batchRank = batchShape.size();
  int64_t m = batchRank, n = batchRank + 1, k = batchRank + 2, numDims = batchRank + 3;
  auto dim = [&](int64_t d) { return getAffineDimExpr(d, context); };

  /// An operand's map: its batch dims broadcast against batchShape, then the
  /// two matrix dims.
  auto operandMap = [&](RankedTensorType type, int64_t row, int64_t column) {
    int64_t operandBatchRank = type.getRank() - 2, offset = batchRank - operandBatchRank;
    SmallVector<AffineExpr> exprs;
    for (int64_t i = 0; i < operandBatchRank; ++i)
      exprs.push_back(type.getDimSize(i) == 1 && batchShape[offset + i] != 1
                          ? getAffineConstantExpr(0, context)
                          : dim(offset + i));
    exprs.push_back(dim(row));
    exprs.push_back(dim(column));
    return AffineMap::get(numDims, 0, exprs, context);
  };
  SmallVector<AffineExpr> resultExprs;
  for (int64_t i = 0; i < batchRank; ++i) resultExprs.push_back(dim(i));
  resultExprs.push_back(dim(m));
  resultExprs.push_back(dim(n));
  SmallVector<AffineMap> maps{
      transposeLhs ? operandMap(lhsType, k, m) : operandMap(lhsType, m, k),
      transposeRhs ? operandMap(rhsType, n, k) : operandMap(rhsType, k, n),
      AffineMap::get(numDims, 0, resultExprs, context)};
  SmallVector<utils::IteratorType> iterators(numDims - 1, utils::IteratorType::parallel);
  iterators.push_back(utils::IteratorType::reduction);

  SmallVector<int64_t> resultShape(batchShape);
  int64_t rows = lhsType.getDimSize(lhsType.getRank() - (transposeLhs ? 1 : 2));
  int64_t columns = rhsType.getDimSize(rhsType.getRank() - (transposeRhs ? 2 : 1));
  resultShape.append({rows, columns});
  // Half-precision products accumulate in f32 and round once, as numpy
  // (ml_dtypes for bf16) and onnxruntime do.
  Type element = lhsType.getElementType();
  Type accumulator = isa<FloatType>(element) && element.getIntOrFloatBitWidth() < 32
                         ? b.getF32Type()
                         : element;
  auto accumulatorType = RankedTensorType::get(resultShape, accumulator);
  Value zero = scalarConstant(b, loc, accumulator, 0);
  auto generic = linalg::GenericOp::create(
      b, loc, accumulatorType, ValueRange{lhs, rhs}, filledTensor(b, loc, accumulatorType, zero),
      maps, iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value lhsElement = castScalar(nested, nestedLoc, args[0], element, accumulator);
        Value rhsElement = castScalar(nested, nestedLoc, args[1], element, accumulator);
        linalg::YieldOp::create(
            nested, nestedLoc,
            multiplyAccumulate(nested, nestedLoc, lhsElement, rhsElement, args[2]));
      });
  return castElements(b, loc, generic.getResult(0), accumulator, element);
}

/// numpy matmul: a 1-D operand is a row (lhs) or column (rhs) vector whose
/// unit dim the result drops, and batch dims broadcast.
struct LowerMatMul : OpConversionPattern<onnx::MatMulOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::MatMulOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = staticResultType(rewriter, *getTypeConverter(), op, op.getY());
    if (failed(type)) return failure();
    Location loc = op.getLoc();
    Value lhs = adaptor.getA(), rhs = adaptor.getB();
    auto lhsShape = cast<RankedTensorType>(lhs.getType()).getShape();
    auto rhsShape = cast<RankedTensorType>(rhs.getType()).getShape();
    if (lhsShape.empty() || rhsShape.empty())
      return rewriter.notifyMatchFailure(op, "a MatMul operand is a scalar");
    if (lhsShape.size() == 1) lhs = reshapeTo(rewriter, loc, lhs, {1, lhsShape[0]});
    if (rhsShape.size() == 1) rhs = reshapeTo(rewriter, loc, rhs, {rhsShape[0], 1});
    auto lhsBatch = cast<RankedTensorType>(lhs.getType()).getShape().drop_back(2);
    auto rhsBatch = cast<RankedTensorType>(rhs.getType()).getShape().drop_back(2);
    auto batchShape = onnx::broadcastShapes({lhsBatch, rhsBatch});
    if (failed(batchShape)) return rewriter.notifyMatchFailure(op, "batch dims do not broadcast");
    Value product = buildContraction(rewriter, loc, lhs, rhs, *batchShape);
    rewriter.replaceOp(op, reshapeTo(rewriter, loc, product, type->getShape()));
    return success();
  }
};

/// alpha * op(A) * op(B) + beta * C, C broadcast to [M, N].
struct LowerGemm : OpConversionPattern<onnx::GemmOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::GemmOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = staticResultType(rewriter, *getTypeConverter(), op, op.getY());
    if (failed(type)) return failure();
    if (!isa<FloatType>(type->getElementType()))
      return rewriter.notifyMatchFailure(op, "alpha and beta scale floats only");
    Location loc = op.getLoc();
    Value product = buildContraction(rewriter, loc, adaptor.getA(), adaptor.getB(), {},
                                     op.getTransA() != 0, op.getTransB() != 0);
    double alpha = op.getAlpha().convertToDouble(), beta = op.getBeta().convertToDouble();
    SmallVector<Value> inputs{product};
    bool withC = !isa<NoneType>(adaptor.getC().getType()) && beta != 0;
    if (withC) inputs.push_back(adaptor.getC());
    Value result = buildElementwise(rewriter, loc, *type, inputs,
                                    [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
                                      Type element = args[0].getType();
                                      Value scaled = arith::MulFOp::create(
                                          b, nestedLoc, scalarConstant(b, nestedLoc, element, alpha),
                                          args[0]);
                                      if (!withC) return scaled;
                                      Value bias = arith::MulFOp::create(
                                          b, nestedLoc, scalarConstant(b, nestedLoc, element, beta),
                                          args[1]);
                                      return Value(arith::AddFOp::create(b, nestedLoc, scaled, bias));
                                    });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// y = (x - zero_point) * scale, computed in f32 (f64 for an f64 scale) as
/// the reference does, then cast to the output type. The scale (and zero
/// point) is a scalar, a vector along `axis`, or one value per block of
/// `block_size` elements along `axis`.
struct LowerDequantizeLinear : OpConversionPattern<onnx::DequantizeLinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::DequantizeLinearOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = staticResultType(rewriter, *getTypeConverter(), op, op.getY());
    if (failed(type)) return failure();
    MLIRContext *context = rewriter.getContext();
    auto inputType = cast<RankedTensorType>(adaptor.getX().getType());
    int64_t rank = inputType.getRank();
    auto scaleType = cast<RankedTensorType>(adaptor.getXScale().getType());
    // Per-tensor parameters ignore the axis, which may then be out of range.
    std::optional<int64_t> axis = onnx::normalizeAxis(op.getAxis(), rank);
    int64_t blockSize = op.getBlockSize();

    /// How a scale or zero point of `paramType` is read at each element of x.
    auto paramMap = [&](RankedTensorType paramType) -> FailureOr<AffineMap> {
      if (paramType.getNumElements() == 1 && blockSize == 0)
        return AffineMap::get(rank, 0,
                              SmallVector<AffineExpr>(paramType.getRank(),
                                                      getAffineConstantExpr(0, context)),
                              context);
      if (!axis) return failure();
      if (paramType.getRank() == 1 && blockSize == 0)
        return AffineMap::get(rank, 0, getAffineDimExpr(*axis, context));
      if (paramType.getRank() == rank && blockSize > 0) {
        SmallVector<AffineExpr> exprs;
        for (int64_t d = 0; d < rank; ++d)
          exprs.push_back(d == *axis ? getAffineDimExpr(d, context).floorDiv(blockSize)
                                    : getAffineDimExpr(d, context));
        return AffineMap::get(rank, 0, exprs, context);
      }
      return failure();
    };
    auto scaleMap = paramMap(scaleType);
    if (failed(scaleMap))
      return rewriter.notifyMatchFailure(op, "the scale is neither per tensor, per axis (with a valid axis) nor blocked");

    bool withZeroPoint = !isa<NoneType>(adaptor.getXZeroPoint().getType());
    SmallVector<Value> inputs{adaptor.getX(), adaptor.getXScale()};
    SmallVector<AffineMap> maps{rewriter.getMultiDimIdentityMap(rank), *scaleMap};
    if (withZeroPoint) {
      auto zeroPointMap = paramMap(cast<RankedTensorType>(adaptor.getXZeroPoint().getType()));
      if (failed(zeroPointMap))
        return rewriter.notifyMatchFailure(op, "the zero point's shape does not fit the scale's");
      inputs.push_back(adaptor.getXZeroPoint());
      maps.push_back(*zeroPointMap);
    }
    maps.push_back(rewriter.getMultiDimIdentityMap(rank));
    Type quantized = getElementTypeOrSelf(op.getX().getType());
    Type scaleElement = scaleType.getElementType();
    Type resultElement = type->getElementType();
    Type compute = scaleElement.isF64() ? scaleElement : rewriter.getF32Type();
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, op.getLoc(), *type, inputs, emptyTensor(rewriter, op.getLoc(), *type), maps,
        iterators, [&](OpBuilder &b, Location loc, ValueRange args) {
          Value x = castScalar(b, loc, args[0], quantized, compute);
          if (withZeroPoint)
            x = arith::SubFOp::create(b, loc, x, castScalar(b, loc, args[2], quantized, compute));
          Value scale = castScalar(b, loc, args[1], scaleElement, compute);
          Value y = arith::MulFOp::create(b, loc, x, scale);
          linalg::YieldOp::create(b, loc, castScalar(b, loc, y, compute, resultElement));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateLinearAlgebraPatterns(TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<LowerMatMul, LowerGemm, LowerDequantizeLinear>(converter, patterns.getContext());
}

} // namespace llmc::onnx_to_linalg
