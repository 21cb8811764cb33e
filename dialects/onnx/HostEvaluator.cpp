//===- HostEvaluator.cpp - evaluate small onnx subgraphs on the host ------===//
#include "dialects/onnx/HostEvaluator.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/ShapeHelpers.h"
#include "llmc/Support/ElementsData.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>
#include <limits>
#include <numeric>

using namespace mlir;

namespace llmc::onnx {
namespace {

int64_t numElements(ArrayRef<int64_t> shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
}

/// Calls fn(index, flat) for every multi-index of `shape` in row-major order.
void forEachIndex(ArrayRef<int64_t> shape, llvm::function_ref<void(ArrayRef<int64_t>, int64_t)> fn) {
  int64_t total = numElements(shape);
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    fn(index, flat);
    for (int64_t d = int64_t(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
}

/// `tensor` broadcast (numpy rules, aligned right) to `shape`.
std::vector<double> broadcastTo(const HostTensor &tensor, ArrayRef<int64_t> shape) {
  std::vector<double> out(numElements(shape));
  size_t offset = shape.size() - tensor.shape.size();
  SmallVector<int64_t> source(tensor.shape.size());
  forEachIndex(shape, [&](ArrayRef<int64_t> index, int64_t flat) {
    for (size_t d = 0; d < source.size(); ++d)
      source[d] = tensor.shape[d] == 1 ? 0 : index[d + offset];
    out[flat] = tensor.at(source);
  });
  return out;
}

/// `value` as an element of type `type`: integers truncate toward zero,
/// booleans are `value != 0`, float32 rounds to nearest. nullopt for a
/// non-finite integer.
std::optional<double> roundTo(Type type, double value) {
  if (type.isInteger(1)) return value != 0 ? 1.0 : 0.0;
  if (isa<IntegerType, IndexType>(type)) {
    if (!std::isfinite(value)) return std::nullopt;
    return std::trunc(value);
  }
  if (type.isF64()) return value;
  return double(float(value));
}

/// Whether every dim of `shape` is >= 0 and their product at most `limit`
/// (checked before multiplying, so that a bogus shape cannot overflow).
bool fitsIn(ArrayRef<int64_t> shape, int64_t limit) {
  int64_t product = 1;
  for (int64_t dim : shape) {
    if (dim < 0 || (dim > 0 && product > limit / dim)) return false;
    product *= dim;
  }
  return true;
}

/// An element of type `element` (bool, integer or float) held in `bits`, as a
/// double.
double elementValue(Type element, const APInt &bits) {
  if (element.isInteger(1)) return !bits.isZero();
  if (auto integer = dyn_cast<IntegerType>(element))
    return integer.isUnsigned() ? double(bits.getZExtValue()) : double(bits.getSExtValue());
  APFloat value(cast<FloatType>(element).getFloatSemantics(), bits);
  bool lost;
  value.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
  return value.convertToDouble();
}

/// The elements of a dense_resource blob in ONNX's raw layout (little-endian,
/// a byte per bool), at most `limit` of them.
std::optional<HostTensor> readResource(DenseResourceElementsAttr resource, int64_t limit) {
  ShapedType type = resource.getType();
  Type element = type.getElementType();
  auto bytes = resourceBytes(resource);
  if (failed(bytes) || !element.isIntOrFloat() || !fitsIn(type.getShape(), limit))
    return std::nullopt;
  int64_t width = element.isInteger(1) ? 1 : element.getIntOrFloatBitWidth() / 8;
  if (width == 0 || width > 8 || (!element.isInteger(1) && element.getIntOrFloatBitWidth() % 8) ||
      int64_t(bytes->size()) != type.getNumElements() * width)
    return std::nullopt;
  HostTensor tensor;
  tensor.shape.assign(type.getShape().begin(), type.getShape().end());
  tensor.data.reserve(type.getNumElements());
  for (int64_t i = 0; i < type.getNumElements(); ++i) {
    uint64_t raw = 0;
    for (int64_t b = width - 1; b >= 0; --b)
      raw = raw << 8 | uint8_t((*bytes)[i * width + b]);
    tensor.data.push_back(elementValue(element, APInt(width * 8, raw)));
  }
  return tensor;
}

std::optional<HostTensor> readConstant(ElementsAttr value, int64_t limit) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
    return readResource(resource, limit);
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense) return std::nullopt;
  HostTensor tensor;
  tensor.shape.assign(dense.getType().getShape().begin(), dense.getType().getShape().end());
  Type element = dense.getElementType();
  if (isa<IntegerType>(element)) {
    for (const APInt &v : dense.getValues<APInt>()) tensor.data.push_back(elementValue(element, v));
  } else if (isa<FloatType>(element)) {
    for (const APFloat &v : dense.getValues<APFloat>())
      tensor.data.push_back(elementValue(element, v.bitcastToAPInt()));
  } else {
    return std::nullopt;
  }
  return tensor;
}

/// `value` as an int64, saturated: Slice's "to the end" INT64_MAX is 2^63
/// as a double, which does not convert.
int64_t toInt(double value) {
  constexpr double kLimit = 9.2e18;
  if (value >= kLimit) return std::numeric_limits<int64_t>::max();
  if (value <= -kLimit) return std::numeric_limits<int64_t>::min();
  return int64_t(value);
}

/// The integer entries of a 0-D or 1-D tensor.
SmallVector<int64_t> asInts(const HostTensor &tensor) {
  SmallVector<int64_t> ints;
  for (double v : tensor.data) ints.push_back(toInt(v));
  return ints;
}

HostTensor transpose(const HostTensor &input, ArrayRef<int64_t> perm) {
  HostTensor out;
  for (int64_t p : perm) out.shape.push_back(input.shape[p]);
  out.data.resize(input.data.size());
  SmallVector<int64_t> source(perm.size());
  forEachIndex(out.shape, [&](ArrayRef<int64_t> index, int64_t flat) {
    for (size_t d = 0; d < perm.size(); ++d) source[perm[d]] = index[d];
    out.data[flat] = input.at(source);
  });
  return out;
}

} // namespace

double HostTensor::at(ArrayRef<int64_t> index) const {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + index[d];
  return data[flat];
}

HostEvaluator::HostEvaluator(const llvm::DenseMap<Value, HostTensor> &inputs, int64_t maxElements,
                             bool readResources)
    : maxElements(maxElements), readResources(readResources) {
  for (const auto &[value, tensor] : inputs) values[value] = std::make_unique<HostTensor>(tensor);
}

LogicalResult HostEvaluator::fail(Operation *op, const Twine &why) {
  llvm::raw_string_ostream os(failureReason);
  os << op->getName();
  // The ONNX node's name says which op failed without the file's path, which differs between
  // machines and would make the message differ with it.
  if (auto node = dyn_cast<NameLoc>(op->getLoc()))
    os << " (node " << node.getName() << ")";
  else
    os << " at " << op->getLoc();
  os << ": " << why;
  return failure();
}

const HostTensor *HostEvaluator::evaluate(Value value) {
  auto found = values.find(value);
  if (found != values.end()) return found->second.get();
  Operation *op = value.getDefiningOp();
  if (!op) {
    llvm::raw_string_ostream(failureReason)
        << "it reads input #" << cast<BlockArgument>(value).getArgNumber()
        << ", which is not given";
    return nullptr;
  }
  if (failed(evaluateOp(op))) return nullptr;
  return values.find(value)->second.get();
}

LogicalResult HostEvaluator::evaluateOp(Operation *op) {
  if (op->getNumResults() != 1) return fail(op, "has several results");
  Value result = op->getResult(0);
  auto resultType = dyn_cast<ShapedType>(result.getType());
  if (!resultType) return fail(op, "does not produce a tensor");
  Type element = resultType.getElementType();

  // The operands' values, evaluated first (null for an absent optional one).
  SmallVector<const HostTensor *> in;
  auto operand = [&](Value v) -> LogicalResult {
    if (!v || isa<NoneType>(v.getType())) return in.push_back(nullptr), success();
    const HostTensor *t = evaluate(v);
    if (!t) return failure();
    in.push_back(t);
    return success();
  };
  // Shape and Size read a static type without evaluating the operand.
  auto staticShape = [&](Value v) -> std::optional<SmallVector<int64_t>> {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    if (type && type.hasStaticShape()) return SmallVector<int64_t>(type.getShape());
    const HostTensor *t = evaluate(v);
    if (!t) return std::nullopt;
    return t->shape;
  };
  if (!isa<ShapeOp, SizeOp>(op))
    for (Value v : op->getOperands())
      if (failed(operand(v))) return failure();

  HostTensor out;
  auto elementwise = [&](auto fn) -> LogicalResult {
    SmallVector<ArrayRef<int64_t>> shapes;
    for (const HostTensor *t : in) shapes.push_back(t->shape);
    FailureOr<SmallVector<int64_t>> shape = broadcastShapes(shapes);
    if (failed(shape)) return fail(op, "operands do not broadcast");
    out.shape = *shape;
    std::vector<std::vector<double>> args;
    for (const HostTensor *t : in) args.push_back(broadcastTo(*t, out.shape));
    out.data.resize(numElements(out.shape));
    SmallVector<double> row(args.size());
    for (size_t i = 0; i < out.data.size(); ++i) {
      for (size_t a = 0; a < args.size(); ++a) row[a] = args[a][i];
      out.data[i] = fn(ArrayRef<double>(row));
    }
    return success();
  };
  auto binary = [&](auto fn) {
    return elementwise([&](ArrayRef<double> x) { return double(fn(x[0], x[1])); });
  };
  auto unary = [&](auto fn) {
    return elementwise([&](ArrayRef<double> x) { return double(fn(x[0])); });
  };
  auto axisOf = [&](int64_t axis, int64_t rank) -> FailureOr<int64_t> {
    std::optional<int64_t> normalized = normalizeAxis(axis, rank);
    if (!normalized) return FailureOr<int64_t>(fail(op, "axis out of range"));
    return *normalized;
  };

  LogicalResult status =
      llvm::TypeSwitch<Operation *, LogicalResult>(op)
          .Case([&](ConstantOp c) -> LogicalResult {
            if (isa<DenseResourceElementsAttr>(c.getValue()) && !readResources)
              return fail(op, "holds a resource, which this evaluation does not read");
            std::optional<HostTensor> value = readConstant(c.getValue(), maxElements);
            if (!value)
              return fail(op, "holds a type the evaluator does not read, or is too large");
            out = std::move(*value);
            return success();
          })
          .Case([&](ShapeOp s) -> LogicalResult {
            auto shape = staticShape(s.getData());
            if (!shape) return failure();
            int64_t rank = shape->size();
            auto clamp = [&](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank); };
            int64_t start = clamp(s.getStart()), end = clamp(s.getEnd().value_or(rank));
            for (int64_t i = start; i < end; ++i) out.data.push_back((*shape)[i]);
            out.shape = {int64_t(out.data.size())};
            return success();
          })
          .Case([&](SizeOp s) -> LogicalResult {
            auto shape = staticShape(s.getData());
            if (!shape) return failure();
            out.data = {double(numElements(*shape))};
            return success();
          })
          .Case([&](AddOp) { return binary([](double a, double b) { return a + b; }); })
          .Case([&](SubOp) { return binary([](double a, double b) { return a - b; }); })
          .Case([&](MulOp) { return binary([](double a, double b) { return a * b; }); })
          .Case([&](DivOp) { return binary([](double a, double b) { return a / b; }); })
          .Case([&](ModOp m) {
            bool fmod = m.getFmod() != 0;
            return binary([fmod](double a, double b) {
              return fmod ? std::fmod(a, b) : a - b * std::floor(a / b);
            });
          })
          .Case([&](PowOp) { return binary([](double a, double b) { return std::pow(a, b); }); })
          .Case([&](EqualOp) { return binary([](double a, double b) { return a == b; }); })
          .Case([&](LessOp) { return binary([](double a, double b) { return a < b; }); })
          .Case([&](LessOrEqualOp) { return binary([](double a, double b) { return a <= b; }); })
          .Case([&](GreaterOp) { return binary([](double a, double b) { return a > b; }); })
          .Case([&](GreaterOrEqualOp) { return binary([](double a, double b) { return a >= b; }); })
          .Case([&](AndOp) { return binary([](double a, double b) { return a != 0 && b != 0; }); })
          .Case([&](OrOp) { return binary([](double a, double b) { return a != 0 || b != 0; }); })
          .Case([&](XorOp) { return binary([](double a, double b) { return (a != 0) != (b != 0); }); })
          .Case([&](MaxOp) {
            return elementwise([](ArrayRef<double> x) { return *llvm::max_element(x); });
          })
          .Case([&](MinOp) {
            return elementwise([](ArrayRef<double> x) { return *llvm::min_element(x); });
          })
          .Case([&](SumOp) {
            return elementwise([](ArrayRef<double> x) { return std::accumulate(x.begin(), x.end(), 0.0); });
          })
          .Case([&](WhereOp) {
            return elementwise([](ArrayRef<double> x) { return x[0] != 0 ? x[1] : x[2]; });
          })
          .Case([&](NegOp) { return unary([](double a) { return -a; }); })
          .Case([&](AbsOp) { return unary([](double a) { return std::fabs(a); }); })
          .Case([&](NotOp) { return unary([](double a) { return a == 0; }); })
          .Case([&](IsNaNOp) { return unary([](double a) { return std::isnan(a); }); })
          .Case([&](IsInfOp i) {
            bool negative = i.getDetectNegative() != 0, positive = i.getDetectPositive() != 0;
            return unary([=](double a) { return std::isinf(a) && (a < 0 ? negative : positive); });
          })
          .Case([&](FloorOp) { return unary([](double a) { return std::floor(a); }); })
          .Case([&](CeilOp) { return unary([](double a) { return std::ceil(a); }); })
          // Casts convert when the result is rounded to its element type, below.
          .Case<IdentityOp, CastOp, CastLikeOp>([&](Operation *) { out = *in[0]; return success(); })
          .Case([&](ReshapeOp r) -> LogicalResult {
            SmallVector<int64_t> target = asInts(*in[1]);
            if (!fitsIn(llvm::to_vector(llvm::map_range(
                            target, [](int64_t d) { return d == -1 ? int64_t(1) : d; })),
                        maxElements))
              return fail(op, "the target shape is not a valid shape");
            int64_t known = 1, inferred = -1;
            for (auto [d, dim] : llvm::enumerate(target)) {
              if (dim == 0 && !r.getAllowzero()) {
                if (d >= in[0]->shape.size()) return fail(op, "0 copies a dim the data lacks");
                dim = in[0]->shape[d];
              }
              if (dim == -1) inferred = d;
              else known *= dim;
            }
            int64_t size = in[0]->data.size();
            if (inferred >= 0) {
              if (known == 0 || size % known) return fail(op, "-1 cannot be inferred");
              target[inferred] = size / known;
            }
            if (numElements(target) != size) return fail(op, "the element count changes");
            out = {target, in[0]->data};
            return success();
          })
          .Case([&](FlattenOp f) -> LogicalResult {
            int64_t rank = in[0]->shape.size();
            int64_t axis = f.getAxis() < 0 ? f.getAxis() + rank : f.getAxis();
            if (axis < 0 || axis > rank) return fail(op, "axis out of range");
            ArrayRef<int64_t> shape = in[0]->shape;
            out = {{numElements(shape.take_front(axis)), numElements(shape.drop_front(axis))},
                   in[0]->data};
            return success();
          })
          .Case([&](UnsqueezeOp) -> LogicalResult {
            int64_t rank = in[0]->shape.size() + in[1]->data.size();
            SmallVector<bool> inserted(rank, false);
            for (int64_t axis : asInts(*in[1])) {
              FailureOr<int64_t> a = axisOf(axis, rank);
              if (failed(a)) return failure();
              if (inserted[*a]) return fail(op, "an axis is named twice");
              inserted[*a] = true;
            }
            auto dims = in[0]->shape.begin();
            for (int64_t d = 0; d < rank; ++d) out.shape.push_back(inserted[d] ? 1 : *dims++);
            out.data = in[0]->data;
            return success();
          })
          .Case([&](SqueezeOp) -> LogicalResult {
            int64_t rank = in[0]->shape.size();
            SmallVector<bool> removed(rank, false);
            if (in[1]) {
              for (int64_t axis : asInts(*in[1])) {
                FailureOr<int64_t> a = axisOf(axis, rank);
                if (failed(a)) return failure();
                if (in[0]->shape[*a] != 1) return fail(op, "squeezes a dim that is not 1");
                removed[*a] = true;
              }
            } else {
              for (int64_t d = 0; d < rank; ++d) removed[d] = in[0]->shape[d] == 1;
            }
            for (int64_t d = 0; d < rank; ++d)
              if (!removed[d]) out.shape.push_back(in[0]->shape[d]);
            out.data = in[0]->data;
            return success();
          })
          .Case([&](ExpandOp) -> LogicalResult {
            SmallVector<int64_t> target = asInts(*in[1]);
            if (!fitsIn(target, maxElements)) return fail(op, "the shape is not a valid shape");
            FailureOr<SmallVector<int64_t>> shape =
                broadcastShapes({ArrayRef<int64_t>(in[0]->shape), ArrayRef<int64_t>(target)});
            if (failed(shape)) return fail(op, "the shape does not broadcast");
            if (!fitsIn(*shape, maxElements)) return fail(op, "the result is too large");
            out = {*shape, broadcastTo(*in[0], *shape)};
            return success();
          })
          .Case([&](TileOp) -> LogicalResult {
            SmallVector<int64_t> repeats = asInts(*in[1]);
            const HostTensor &input = *in[0];
            if (repeats.size() != input.shape.size())
              return fail(op, "repeats does not give one count per dim");
            SmallVector<int64_t> shape;
            for (auto [dim, count] : llvm::zip(input.shape, repeats)) {
              if (count < 0 || count > maxElements)
                return fail(op, "a repeat count is out of range");
              shape.push_back(dim * count);
            }
            if (!fitsIn(shape, maxElements)) return fail(op, "the result is too large");
            out.shape.assign(shape.begin(), shape.end());
            out.data.resize(numElements(shape));
            SmallVector<int64_t> source(shape.size());
            forEachIndex(shape, [&](ArrayRef<int64_t> index, int64_t flat) {
              for (size_t d = 0; d < shape.size(); ++d) source[d] = index[d] % input.shape[d];
              out.data[flat] = input.at(source);
            });
            return success();
          })
          .Case([&](ConcatOp c) -> LogicalResult {
            const HostTensor &first = *in[0];
            FailureOr<int64_t> axis = axisOf(c.getAxis(), first.shape.size());
            if (failed(axis)) return failure();
            out.shape = first.shape;
            out.shape[*axis] = 0;
            for (const HostTensor *t : in) {
              if (t->shape.size() != first.shape.size()) return fail(op, "ranks differ");
              for (size_t d = 0; d < first.shape.size(); ++d)
                if (int64_t(d) != *axis && t->shape[d] != first.shape[d])
                  return fail(op, "dims off the axis differ");
              out.shape[*axis] += t->shape[*axis];
            }
            int64_t outer = numElements(ArrayRef<int64_t>(first.shape).take_front(*axis));
            for (int64_t o = 0; o < outer; ++o)
              for (const HostTensor *t : in) {
                int64_t chunk = numElements(ArrayRef<int64_t>(t->shape).drop_front(*axis));
                out.data.insert(out.data.end(), t->data.begin() + o * chunk,
                                t->data.begin() + (o + 1) * chunk);
              }
            return success();
          })
          .Case([&](SliceOp) -> LogicalResult {
            const HostTensor &data = *in[0];
            int64_t rank = data.shape.size();
            SmallVector<int64_t> starts = asInts(*in[1]), ends = asInts(*in[2]);
            SmallVector<int64_t> axes, steps(starts.size(), 1);
            if (in[3]) axes = asInts(*in[3]);
            else for (int64_t d = 0; d < int64_t(starts.size()); ++d) axes.push_back(d);
            if (in[4]) steps = asInts(*in[4]);
            SmallVector<int64_t> begin(rank, 0), step(rank, 1);
            out.shape = data.shape;
            for (size_t i = 0; i < starts.size(); ++i) {
              FailureOr<int64_t> axis = axisOf(axes[i], rank);
              if (failed(axis)) return failure();
              int64_t dim = data.shape[*axis], s = steps[i];
              if (s == 0) return fail(op, "a step is 0");
              auto clamp = [&](int64_t v) {
                if (v < 0) v += dim;
                return s > 0 ? std::clamp<int64_t>(v, 0, dim) : std::clamp<int64_t>(v, -1, dim - 1);
              };
              int64_t b = clamp(starts[i]), e = clamp(ends[i]);
              begin[*axis] = b, step[*axis] = s;
              out.shape[*axis] = std::max<int64_t>(0, s > 0 ? (e - b + s - 1) / s : (b - e - s - 1) / -s);
            }
            out.data.resize(numElements(out.shape));
            SmallVector<int64_t> source(rank);
            forEachIndex(out.shape, [&](ArrayRef<int64_t> index, int64_t flat) {
              for (int64_t d = 0; d < rank; ++d) source[d] = begin[d] + index[d] * step[d];
              out.data[flat] = data.at(source);
            });
            return success();
          })
          .Case([&](GatherOp g) -> LogicalResult {
            const HostTensor &data = *in[0], &indices = *in[1];
            int64_t rank = data.shape.size();
            FailureOr<int64_t> axis = axisOf(g.getAxis(), rank);
            if (failed(axis)) return failure();
            ArrayRef<int64_t> dims = data.shape;
            out.shape.assign(dims.begin(), dims.begin() + *axis);
            out.shape.append(indices.shape.begin(), indices.shape.end());
            out.shape.append(dims.begin() + *axis + 1, dims.end());
            int64_t outer = numElements(dims.take_front(*axis));
            int64_t inner = numElements(dims.drop_front(*axis + 1)), n = dims[*axis];
            for (int64_t o = 0; o < outer; ++o)
              for (double index : indices.data) {
                int64_t i = toInt(index) < 0 ? toInt(index) + n : toInt(index);
                if (i < 0 || i >= n) return fail(op, "an index is out of range");
                auto from = data.data.begin() + (o * n + i) * inner;
                out.data.insert(out.data.end(), from, from + inner);
              }
            return success();
          })
          .Case([&](GatherNDOp g) -> LogicalResult {
            const HostTensor &data = *in[0], &indices = *in[1];
            int64_t batch = g.getBatchDims(), rank = data.shape.size();
            if (indices.shape.empty()) return fail(op, "indices are a scalar");
            int64_t depth = indices.shape.back();
            if (batch < 0 || batch >= int64_t(indices.shape.size()) || depth < 1 ||
                batch + depth > rank)
              return fail(op, "batch_dims and the index tuples' length exceed the data's rank");
            ArrayRef<int64_t> dims = data.shape;
            for (int64_t d = 0; d < batch; ++d)
              if (indices.shape[d] != dims[d]) return fail(op, "batch dims differ");
            out.shape.assign(indices.shape.begin(), indices.shape.end() - 1);
            out.shape.append(dims.begin() + batch + depth, dims.end());
            int64_t slice = numElements(dims.drop_front(batch + depth));
            int64_t perBatch = numElements(dims.drop_front(batch));
            int64_t tuplesPerBatch =
                numElements(ArrayRef<int64_t>(indices.shape).drop_front(batch).drop_back());
            int64_t tuples = numElements(ArrayRef<int64_t>(indices.shape).drop_back());
            for (int64_t t = 0; t < tuples; ++t) {
              int64_t offset = tuplesPerBatch ? (t / tuplesPerBatch) * perBatch : 0, within = 0;
              for (int64_t d = 0; d < depth; ++d) {
                int64_t n = dims[batch + d], i = toInt(indices.data[t * depth + d]);
                if (i < 0) i += n;
                if (i < 0 || i >= n) return fail(op, "an index is out of range");
                within = within * n + i;
              }
              auto from = data.data.begin() + offset + within * slice;
              out.data.insert(out.data.end(), from, from + slice);
            }
            return success();
          })
          .Case([&](ScatterNDOp sc) -> LogicalResult {
            // Writes each update slice at its index tuple: how torch writes a slice
            // assignment (`mask[..., :n] = mask[..., :n].masked_fill(...)`).
            const HostTensor &data = *in[0], &indices = *in[1], &updates = *in[2];
            int64_t rank = data.shape.size();
            if (indices.shape.empty()) return fail(op, "indices are a scalar");
            int64_t depth = indices.shape.back();
            if (depth < 1 || depth > rank) return fail(op, "an index tuple is longer than the data's rank");
            SmallVector<int64_t> expected(indices.shape.begin(), indices.shape.end() - 1);
            expected.append(data.shape.begin() + depth, data.shape.end());
            if (updates.shape != expected) return fail(op, "updates are not shaped as the indexed slices");
            int64_t slice = numElements(ArrayRef<int64_t>(data.shape).drop_front(depth));
            StringRef reduction = sc.getReduction();
            out = data;
            int64_t tuples = numElements(ArrayRef<int64_t>(indices.shape).drop_back());
            for (int64_t t = 0; t < tuples; ++t) {
              int64_t offset = 0;
              for (int64_t d = 0; d < depth; ++d) {
                int64_t i = toInt(indices.data[t * depth + d]);
                if (i < 0) i += data.shape[d];
                if (i < 0 || i >= data.shape[d]) return fail(op, "an index is out of range");
                offset = offset * data.shape[d] + i;
              }
              for (int64_t e = 0; e < slice; ++e) {
                double &target = out.data[offset * slice + e];
                double update = updates.data[t * slice + e];
                if (reduction == "none") target = update;
                else if (reduction == "add") target += update;
                else if (reduction == "mul") target *= update;
                else if (reduction == "max") target = std::max(target, update);
                else if (reduction == "min") target = std::min(target, update);
                else return fail(op, "has an unknown reduction");
              }
            }
            return success();
          })
          .Case([&](TransposeOp t) -> LogicalResult {
            int64_t rank = in[0]->shape.size();
            SmallVector<int64_t> perm;
            if (t.getPerm()) perm.assign(t.getPerm()->begin(), t.getPerm()->end());
            else for (int64_t d = rank - 1; d >= 0; --d) perm.push_back(d);
            SmallVector<int64_t> sorted(perm);
            llvm::sort(sorted);
            for (int64_t d = 0; d < int64_t(sorted.size()); ++d)
              if (sorted[d] != d || int64_t(sorted.size()) != rank)
                return fail(op, "perm is not a permutation of the dims");
            out = transpose(*in[0], perm);
            return success();
          })
          .Case([&](NonZeroOp) -> LogicalResult {
            // [rank, count]: the multi-index of each nonzero element, in row-major order.
            const HostTensor &x = *in[0];
            int64_t rank = x.shape.size();
            if (rank == 0) return fail(op, "the input is a scalar");
            SmallVector<int64_t> found;
            for (size_t i = 0; i < x.data.size(); ++i) {
              if (x.data[i] == 0) continue;
              for (int64_t d = 0, rest = i; d < rank; ++d) {
                int64_t stride = numElements(ArrayRef<int64_t>(x.shape).drop_front(d + 1));
                found.push_back(rest / stride);
                rest %= stride;
              }
            }
            int64_t count = int64_t(found.size()) / rank;
            out.shape = {rank, count};
            out.data.resize(rank * count);
            for (int64_t n = 0; n < count; ++n)
              for (int64_t d = 0; d < rank; ++d) out.data[d * count + n] = found[n * rank + d];
            return success();
          })
          .Case([&](RangeOp) -> LogicalResult {
            double start = in[0]->data.at(0), limit = in[1]->data.at(0), delta = in[2]->data.at(0);
            if (delta == 0) return fail(op, "delta is 0");
            double steps = std::ceil((limit - start) / delta);
            if (!std::isfinite(steps) || steps > double(maxElements))
              return fail(op, "the result is too large");
            int64_t count = std::max<int64_t>(0, int64_t(steps));
            if (count > maxElements) return fail(op, "the result is too large");
            for (int64_t i = 0; i < count; ++i) out.data.push_back(start + i * delta);
            out.shape = {count};
            return success();
          })
          .Case([&](ConstantOfShapeOp c) -> LogicalResult {
            out.shape = asInts(*in[0]);
            if (!fitsIn(out.shape, maxElements)) return fail(op, "the shape is not a valid shape");
            double fill = 0;
            if (auto value = c.getValue()) {
              std::optional<HostTensor> v = readConstant(*value, 1);
              if (!v || v->data.size() != 1) return fail(op, "value is not one element");
              fill = v->data[0];
            }
            out.data.assign(numElements(out.shape), fill);
            return success();
          })
          .Case([&](TriluOp t) -> LogicalResult {
            const HostTensor &input = *in[0];
            int64_t rank = input.shape.size(), k = in[1] ? toInt(in[1]->data.at(0)) : 0;
            if (rank < 2) return fail(op, "input is not a matrix");
            bool upper = t.getUpper() != 0;
            out = input;
            forEachIndex(input.shape, [&](ArrayRef<int64_t> index, int64_t flat) {
              int64_t offset = index[rank - 1] - index[rank - 2];
              if (upper ? offset < k : offset > k) out.data[flat] = 0;
            });
            return success();
          })
          .Case([&](CumSumOp c) -> LogicalResult {
            const HostTensor &x = *in[0];
            FailureOr<int64_t> axis = axisOf(toInt(in[1]->data.at(0)), x.shape.size());
            if (failed(axis)) return failure();
            ArrayRef<int64_t> dims = x.shape;
            int64_t outer = numElements(dims.take_front(*axis)), n = dims[*axis];
            int64_t inner = numElements(dims.drop_front(*axis + 1));
            out = x;
            for (int64_t o = 0; o < outer; ++o)
              for (int64_t i = 0; i < inner; ++i) {
                double sum = 0;
                for (int64_t j = 0; j < n; ++j) {
                  int64_t at = c.getReverse() ? n - 1 - j : j;
                  int64_t flat = (o * n + at) * inner + i;
                  double value = x.data[flat];
                  if (c.getExclusive()) out.data[flat] = sum, sum += value;
                  else sum += value, out.data[flat] = sum;
                }
              }
            return success();
          })
          .Case<ReduceSumOp, ReduceMaxOp, ReduceMinOp>([&](Operation *) -> LogicalResult {
            const HostTensor &data = *in[0];
            int64_t rank = data.shape.size();
            SmallVector<bool> reduced(rank, !in[1] || in[1]->data.empty());
            if (in[1])
              for (int64_t axis : asInts(*in[1])) {
                FailureOr<int64_t> a = axisOf(axis, rank);
                if (failed(a)) return failure();
                reduced[*a] = true;
              }
            bool keepdims = op->getAttrOfType<IntegerAttr>("keepdims").getInt() != 0;
            if (in[1] && in[1]->data.empty() &&
                op->getAttrOfType<IntegerAttr>("noop_with_empty_axes").getInt() != 0) {
              out = data;
              return success();
            }
            SmallVector<int64_t> kept;
            for (int64_t d = 0; d < rank; ++d) kept.push_back(reduced[d] ? 1 : data.shape[d]);
            bool sum = isa<ReduceSumOp>(op), max = isa<ReduceMaxOp>(op);
            std::vector<double> acc(numElements(kept),
                                    sum ? 0.0 : max ? -INFINITY : INFINITY);
            SmallVector<int64_t> target(rank);
            forEachIndex(data.shape, [&](ArrayRef<int64_t> index, int64_t flat) {
              int64_t to = 0;
              for (int64_t d = 0; d < rank; ++d) to = to * kept[d] + (reduced[d] ? 0 : index[d]);
              double v = data.data[flat];
              acc[to] = sum ? acc[to] + v : max ? std::max(acc[to], v) : std::min(acc[to], v);
            });
            out.data = std::move(acc);
            for (int64_t d = 0; d < rank; ++d)
              if (!reduced[d] || keepdims) out.shape.push_back(kept[d]);
            return success();
          })
          .Case([&](ArgMaxOp argMax) -> LogicalResult {
            // A classifier's pooling finds each row's last real token so.
            const HostTensor &data = *in[0];
            int64_t rank = data.shape.size();
            FailureOr<int64_t> axis = axisOf(argMax.getAxis(), rank);
            if (failed(axis)) return failure();
            bool last = argMax.getSelectLastIndex() != 0;
            SmallVector<int64_t> kept(data.shape);
            kept[*axis] = 1;
            std::vector<double> best(numElements(kept), -INFINITY);
            out.data.assign(best.size(), 0.0);
            forEachIndex(data.shape, [&](ArrayRef<int64_t> index, int64_t flat) {
              int64_t to = 0;
              for (int64_t d = 0; d < rank; ++d) to = to * kept[d] + (d == *axis ? 0 : index[d]);
              double v = data.data[flat];
              if (v > best[to] || (last && v == best[to])) {
                best[to] = v;
                out.data[to] = double(index[*axis]);
              }
            });
            for (int64_t d = 0; d < rank; ++d)
              if (d != *axis || argMax.getKeepdims()) out.shape.push_back(kept[d]);
            return success();
          })
          .Default([&](Operation *) { return fail(op, "is not an op the evaluator knows"); });
  if (failed(status)) return failure();

  if (int64_t(out.data.size()) > maxElements) return fail(op, "the result is too large");
  for (double &v : out.data) {
    std::optional<double> rounded = roundTo(element, v);
    if (!rounded) return fail(op, "an integer result is not finite");
    v = *rounded;
  }
  values[result] = std::make_unique<HostTensor>(std::move(out));
  return success();
}

} // namespace llmc::onnx
