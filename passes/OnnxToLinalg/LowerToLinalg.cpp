//===- LowerToLinalg.cpp - onnx ops to linalg, tensor, arith, math --------===//
//
// The pass, the type converter, the shared builders of OnnxToLinalg.h and the
// patterns that belong to no op family: constants, If and Identity. The
// families live in OnnxToLinalg*.cpp.
//
//===----------------------------------------------------------------------===//
#include "passes/OnnxToLinalg/OnnxToLinalg.h"
#include "passes/OnnxToLinalg/Passes.h"

#include "dialects/onnx/ShapeHelpers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#define DEBUG_TYPE "onnx-lower-to-linalg"

namespace llmc {
#define GEN_PASS_DEF_ONNXLOWERTOLINALGPASS
#include "passes/OnnxToLinalg/Passes.h.inc"
} // namespace llmc

using namespace mlir;

namespace llmc::onnx_to_linalg {

//===----------------------------------------------------------------------===//
// Types and scalars
//===----------------------------------------------------------------------===//

Type signless(Type elementType) {
  auto integer = dyn_cast<IntegerType>(elementType);
  if (!integer || integer.isSignless()) return elementType;
  return IntegerType::get(elementType.getContext(), integer.getWidth());
}

bool isUnsignedInteger(Type elementType) { return elementType.isUnsignedInteger(); }

bool isBool(Type elementType) { return elementType.isInteger(1); }

OnnxTypeConverter::OnnxTypeConverter() {
  addConversion([](Type type) { return type; });
  addConversion([](RankedTensorType type) -> Type {
    return type.clone(signless(type.getElementType()));
  });
}

FailureOr<RankedTensorType> staticResultType(ConversionPatternRewriter &rewriter,
                                             const TypeConverter &converter, Operation *op,
                                             Value value) {
  auto type = dyn_cast_or_null<RankedTensorType>(converter.convertType(value.getType()));
  if (!type || !type.hasStaticShape())
    return rewriter.notifyMatchFailure(op, "a result shape is not static");
  return type;
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto floatType = dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, FloatAttr::get(floatType, value));
  if (type.isIndex()) return arith::ConstantIndexOp::create(b, loc, int64_t(value));
  return arith::ConstantOp::create(b, loc, IntegerAttr::get(type, int64_t(value)));
}

Value castScalar(OpBuilder &b, Location loc, Value value, Type from, Type to) {
  if (from == to) return value;
  Type target = signless(to);
  if (isBool(to)) {
    if (isa<FloatType>(from))
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, value,
                                   scalarConstant(b, loc, from, 0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, value,
                                 scalarConstant(b, loc, signless(from), 0));
  }
  bool fromUnsigned = isUnsignedInteger(from) || isBool(from);
  if (auto fromFloat = dyn_cast<FloatType>(from)) {
    if (auto toFloat = dyn_cast<FloatType>(to)) {
      if (fromFloat.getWidth() == toFloat.getWidth()) // f16 <-> bf16
        value = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
      if (cast<FloatType>(value.getType()).getWidth() < toFloat.getWidth())
        return arith::ExtFOp::create(b, loc, toFloat, value);
      return arith::TruncFOp::create(b, loc, toFloat, value);
    }
    if (isUnsignedInteger(to)) return arith::FPToUIOp::create(b, loc, target, value);
    return arith::FPToSIOp::create(b, loc, target, value);
  }
  if (isa<FloatType>(to)) {
    if (fromUnsigned) return arith::UIToFPOp::create(b, loc, target, value);
    return arith::SIToFPOp::create(b, loc, target, value);
  }
  unsigned fromWidth = from.getIntOrFloatBitWidth(), toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth == toWidth) return value;
  if (fromWidth > toWidth) return arith::TruncIOp::create(b, loc, target, value);
  if (fromUnsigned) return arith::ExtUIOp::create(b, loc, target, value);
  return arith::ExtSIOp::create(b, loc, target, value);
}

//===----------------------------------------------------------------------===//
// Tensor builders
//===----------------------------------------------------------------------===//

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type, Value value) {
  return linalg::FillOp::create(b, loc, value, emptyTensor(b, loc, type)).getResult(0);
}

AffineMap broadcastMap(MLIRContext *context, RankedTensorType inputType,
                       RankedTensorType resultType) {
  int64_t rank = resultType.getRank(), offset = rank - inputType.getRank();
  SmallVector<AffineExpr> exprs;
  for (auto [i, size] : llvm::enumerate(inputType.getShape())) {
    int64_t dim = offset + int64_t(i);
    exprs.push_back(size == 1 && resultType.getDimSize(dim) != 1
                        ? getAffineConstantExpr(0, context)
                        : getAffineDimExpr(dim, context));
  }
  return AffineMap::get(rank, 0, exprs, context);
}

Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
                       ScalarBuilder body) {
  MLIRContext *context = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(broadcastMap(context, cast<RankedTensorType>(input.getType()), resultType));
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(), utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, inputs, emptyTensor(b, loc, resultType), maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args.drop_back());
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

Value castElements(OpBuilder &b, Location loc, Value value, Type from, Type to) {
  if (from == to) return value;
  auto type = cast<RankedTensorType>(value.getType());
  return buildElementwise(b, loc, type.clone(signless(to)), value,
                          [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
                            return castScalar(nested, nestedLoc, args[0], from, to);
                          });
}

Value reshapeTo(OpBuilder &b, Location loc, Value value, ArrayRef<int64_t> shape) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape) return value;
  auto shapeType = RankedTensorType::get({int64_t(shape.size())}, b.getI64Type());
  Value shapeValue = arith::ConstantOp::create(b, loc, DenseIntElementsAttr::get(shapeType, shape));
  return tensor::ReshapeOp::create(b, loc, type.clone(shape), value, shapeValue);
}

Value buildReduction(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> reducedDims,
                     Value init,
                     function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  auto inputType = cast<RankedTensorType>(input.getType());
  MLIRContext *context = b.getContext();
  SmallVector<int64_t> keptShape;
  SmallVector<AffineExpr> keptExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t dim = 0; dim < inputType.getRank(); ++dim) {
    bool reduced = llvm::is_contained(reducedDims, dim);
    iterators.push_back(reduced ? utils::IteratorType::reduction : utils::IteratorType::parallel);
    if (reduced) continue;
    keptShape.push_back(inputType.getDimSize(dim));
    keptExprs.push_back(getAffineDimExpr(dim, context));
  }
  auto resultType = RankedTensorType::get(keptShape, init.getType());
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(inputType.getRank()),
                              AffineMap::get(inputType.getRank(), 0, keptExprs, context)};
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, input, filledTensor(b, loc, resultType, init), maps, iterators,
      [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc, combine(nested, nestedLoc, args[0], args[1]));
      });
  return generic.getResult(0);
}

namespace {

//===----------------------------------------------------------------------===//
// Constants, If, Identity
//===----------------------------------------------------------------------===//

/// The value of a constant as a dense attribute of the signless `type`.
/// dense_resource blobs are read into dense attributes, because the LLVM
/// lowering of globals wants dense data; int4/uint4 blobs are unpacked
/// (ONNX packs two per byte, low nibble first), since LLVM stores an i4
/// array element in a byte of its own.
FailureOr<DenseElementsAttr> denseValue(ElementsAttr value, RankedTensorType type) {
  if (auto dense = dyn_cast<DenseElementsAttr>(value))
    return dense.getElementType() == type.getElementType() ? dense
                                                           : dense.bitcast(type.getElementType());
  auto resource = dyn_cast<DenseResourceElementsAttr>(value);
  AsmResourceBlob *blob = resource ? resource.getRawHandle().getBlob() : nullptr;
  if (!blob) return failure();
  ArrayRef<char> bytes = blob->getData();
  unsigned width = type.getElementTypeBitWidth();
  int64_t count = type.getNumElements();
  if (width == 1) {
    SmallVector<bool> bits;
    for (int64_t i = 0; i < count; ++i) bits.push_back(bytes[i] != 0);
    return DenseElementsAttr::get(type, bits);
  }
  if (width == 4) {
    SmallVector<APInt> nibbles;
    for (int64_t i = 0; i < count; ++i)
      nibbles.push_back(APInt(4, (uint8_t(bytes[i / 2]) >> (i % 2 ? 4 : 0)) & 0xF));
    return DenseElementsAttr::get(type, nibbles);
  }
  if (int64_t(bytes.size()) != count * int64_t(width / 8)) return failure();
  return DenseElementsAttr::getFromRawBuffer(type, bytes);
}

struct LowerConstant : OpConversionPattern<onnx::ConstantOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::ConstantOp op, OpAdaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto type = staticResultType(rewriter, *getTypeConverter(), op, op.getOutput());
    if (failed(type)) return failure();
    auto value = denseValue(op.getValue(), *type);
    if (failed(value)) return rewriter.notifyMatchFailure(op, "the constant's data is not readable");
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, *type, *value);
    return success();
  }
};

struct LowerIdentity : OpConversionPattern<onnx::IdentityOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::IdentityOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getX());
    return success();
  }
};

/// onnx.If -> scf.if on the condition's single element; the branches move.
struct LowerIf : OpConversionPattern<onnx::IfOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::IfOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    SmallVector<Type> resultTypes;
    for (Value result : op.getOutputs()) {
      auto type = staticResultType(rewriter, *getTypeConverter(), op, result);
      if (failed(type)) return failure();
      resultTypes.push_back(*type);
    }
    Location loc = op.getLoc();
    auto condType = cast<RankedTensorType>(adaptor.getCond().getType());
    if (condType.getNumElements() != 1)
      return rewriter.notifyMatchFailure(op, "the condition has more than one element");
    SmallVector<Value> zeros(condType.getRank(), arith::ConstantIndexOp::create(rewriter, loc, 0));
    Value cond = tensor::ExtractOp::create(rewriter, loc, adaptor.getCond(), zeros);
    auto ifOp = scf::IfOp::create(rewriter, loc, resultTypes, cond, /*addThenBlock=*/false,
                                  /*addElseBlock=*/false);
    rewriter.inlineRegionBefore(op.getThenBranch(), ifOp.getThenRegion(),
                                ifOp.getThenRegion().end());
    rewriter.inlineRegionBefore(op.getElseBranch(), ifOp.getElseRegion(),
                                ifOp.getElseRegion().end());
    rewriter.replaceOp(op, ifOp.getResults());
    return success();
  }
};

/// A branch's onnx.Yield -> scf.yield, cast to the If's result types (a
/// branch may yield a more precise shape than the If declares).
struct LowerYield : OpConversionPattern<onnx::YieldOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult matchAndRewrite(onnx::YieldOp op, OpAdaptor adaptor,
                                ConversionPatternRewriter &rewriter) const override {
    auto ifOp = dyn_cast<scf::IfOp>(op->getParentOp());
    if (!ifOp) return rewriter.notifyMatchFailure(op, "the enclosing If is not lowered yet");
    SmallVector<Value> values;
    for (auto [value, type] : llvm::zip(adaptor.getOperands(), ifOp.getResultTypes()))
      values.push_back(value.getType() == type
                           ? value
                           : tensor::CastOp::create(rewriter, op.getLoc(), type, value));
    rewriter.replaceOpWithNewOp<scf::YieldOp>(op, values);
    return success();
  }
};

} // namespace
} // namespace llmc::onnx_to_linalg

namespace llmc {
namespace {
using namespace onnx_to_linalg;

struct OnnxLowerToLinalgPass : impl::OnnxLowerToLinalgPassBase<OnnxLowerToLinalgPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();

    // The lowering compiles fixed shapes: say which value is not, by name.
    WalkResult shapes = module.walk([](Operation *op) {
      if (!isa<onnx::OnnxDialect>(op->getDialect())) return WalkResult::advance();
      for (Type type : op->getResultTypes()) {
        auto tensor = dyn_cast<TensorType>(type);
        if (tensor && !(tensor.hasRank() && tensor.hasStaticShape())) {
          op->emitError("cannot lower '") << op->getName() << "': its result type " << type
                                          << " is not a static shape";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (shapes.wasInterrupted()) return signalPassFailure();

    OnnxTypeConverter converter;
    ConversionTarget target(*context);
    target.addIllegalDialect<onnx::OnnxDialect>();
    target.addLegalOp<ModuleOp, onnx::NoneOp>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect, math::MathDialect,
                           scf::SCFDialect, tensor::TensorDialect>();
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp func) {
      return converter.isSignatureLegal(func.getFunctionType());
    });
    target.addDynamicallyLegalOp<func::ReturnOp>(
        [&](func::ReturnOp op) { return converter.isLegal(op.getOperandTypes()); });

    RewritePatternSet patterns(context);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    patterns.add<LowerConstant, LowerIdentity, LowerIf, LowerYield>(converter, context);
    populateElementwisePatterns(converter, patterns);
    populateReductionPatterns(converter, patterns);
    populateShapePatterns(converter, patterns);
    populateLinearAlgebraPatterns(converter, patterns);
    populateAttentionPatterns(converter, patterns);
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    // Omitted optional inputs have no readers left.
    module.walk([](onnx::NoneOp none) {
      if (none->use_empty()) none->erase();
    });
  }
};

} // namespace
} // namespace llmc
