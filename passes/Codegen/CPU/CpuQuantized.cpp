//===- CpuQuantized.cpp - quantised weights kept packed on the CPU --------===//
//
// A block-quantised weight (llm.dequantize of constants: MatMulNBits,
// GatherBlockQuantized) is repacked at compile time into the layout the
// generated kernels read, and stays that size in weights.bin:
//
//   codes        i8 [rows, blocks * block_size * bits / 8]. 8-bit: one code a
//                byte. 4-bit: each run of 16 codes in 8 bytes, byte j holding
//                code j in its low nibble and code j + 8 in its high nibble,
//                so a vector of 16 is one 8-byte load, its low nibbles, then
//                its high nibbles.
//   scales       f32 [rows, blocks]
//   zero points  i8 [rows, blocks], one unsigned code a byte; absent for
//                symmetric codes (zero point 2^(bits-1)), whose 8-bit codes
//                are then stored less it, as signed bytes.
//
// Kernels dequantise in registers with the arithmetic of the compile-time
// widening, (code - zero_point) * scale rounded once, then compute as they
// would on the f32 weight: a quantised artifact's logits are bit-identical
// to those of the same weights widened to f32.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/bit.h"

#include <algorithm>

using namespace mlir;

namespace llmc::cpu {

SmallVector<Value> MatmulWeight::buffers() const {
  SmallVector<Value> memrefs{values};
  if (scales) memrefs.push_back(scales);
  if (zeroPoints) memrefs.push_back(zeroPoints);
  return memrefs;
}

MatmulWeight MatmulWeight::withBuffers(ValueRange params) const {
  MatmulWeight copy = *this;
  copy.values = params[0];
  if (scales) copy.scales = params[1];
  if (zeroPoints) copy.zeroPoints = params[2];
  return copy;
}

std::string MatmulWeight::key() const {
  if (!isQuantized())
    return std::string(bf16Products ? "bf16dot" : "dense") + (panels ? "panels" : "") +
           (amxTiles ? "amx" : "");
  return "q" + std::to_string(bits) + "b" + std::to_string(blockSize) + (zeroPoints ? "z" : "") +
         (codeTable ? "t" : "") + (offsetCodes ? "s" : "");
}

int64_t WeightReader::span() const {
  if (weight.bf16Products) return 2 * kLanes;
  return weight.isQuantized() ? weight.blockSize : kLanes;
}

Value loadBf16Pairs(OpBuilder &b, Location loc, Value bits, Value row, Value col) {
  Value loaded = vector::LoadOp::create(b, loc, VectorType::get({2 * kLanes}, b.getI16Type()),
                                        bits, ValueRange{row, col});
  return arith::BitcastOp::create(b, loc, VectorType::get({2 * kLanes}, b.getBF16Type()), loaded);
}

Value WeightReader::pairs(Value row, Value col) {
  return loadBf16Pairs(kb.builder(), kb.location(), weight.values, row, col);
}

/// The zero point of (row, block) as f32: the stored byte, or the
/// symmetric 2^(bits-1); null for offset codes, stored less it.
static Value zeroPointAt(KernelBuilder &kb, const MatmulWeight &weight, Value row, Value block) {
  if (weight.offsetCodes) return nullptr;
  if (!weight.zeroPoints) return kb.f32(1 << (weight.bits - 1));
  OpBuilder &b = kb.builder();
  Value byte = kb.load(weight.zeroPoints, {row, block});
  return arith::UIToFPOp::create(b, kb.location(), b.getF32Type(), byte);
}

/// (code - zero_point) * scale without fast-math flags: the rounding of
/// the compile-time widening. An offset code (`zeroPoint` null) is the
/// difference already: code - zero_point is exact in f32 either way.
static Value dequantize(OpBuilder &b, Location loc, Value code, Value zeroPoint, Value scale) {
  Type floatType = isa<VectorType>(code.getType())
                       ? Type(VectorType::get(cast<VectorType>(code.getType()).getShape(),
                                              b.getF32Type()))
                       : Type(b.getF32Type());
  if (!zeroPoint)
    return arith::MulFOp::create(b, loc, arith::SIToFPOp::create(b, loc, floatType, code), scale);
  Value widened = arith::UIToFPOp::create(b, loc, floatType, code);
  return arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, widened, zeroPoint), scale);
}

SmallVector<Value> WeightReader::blockState(Value row, Value col) {
  if (!weight.isQuantized()) return {};
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto vectorType = VectorType::get({kLanes}, b.getF32Type());
  Value block = kb.divIndex(col, kb.index(weight.blockSize));
  Value scale = kb.load(weight.scales, {row, block});
  Value zeroPoint = zeroPointAt(kb, weight, row, block);
  SmallVector<Value> state{
      zeroPoint ? vector::BroadcastOp::create(b, loc, vectorType, zeroPoint) : Value(),
      vector::BroadcastOp::create(b, loc, vectorType, scale)};
  if (!weight.codeTable) return state;
  // Every code's value, lane c holding code c's.
  auto codesType = VectorType::get({kLanes}, b.getI32Type());
  SmallVector<int32_t> allCodes(kLanes);
  for (int32_t code = 0; code < kLanes; ++code) allCodes[code] = code;
  Value codes = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(codesType,
                                                                         ArrayRef(allCodes)));
  return {dequantize(b, loc, codes, state[0], state[1])};
}

Value widenBf16(OpBuilder &b, Location loc, Value bits) {
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  if (auto vectorType = dyn_cast<VectorType>(bits.getType())) {
    i32 = VectorType::get(vectorType.getShape(), i32);
    f32 = VectorType::get(vectorType.getShape(), f32);
  }
  Value wide = arith::ExtUIOp::create(b, loc, i32, bits);
  TypedAttr shift = b.getI32IntegerAttr(16);
  if (auto vectorType = dyn_cast<VectorType>(i32)) shift = DenseElementsAttr::get(vectorType, shift);
  Value sixteen = arith::ConstantOp::create(b, loc, shift);
  return arith::BitcastOp::create(b, loc, f32, arith::ShLIOp::create(b, loc, wide, sixteen));
}

bool isF16Value(float value) {
  uint32_t magnitude = llvm::bit_cast<uint32_t>(value) & 0x7fffffffu;
  if (magnitude == 0) return true;
  int exponent = static_cast<int>(magnitude >> 23) - 127;
  // Past f16's largest finite value, or below its smallest subnormal, 2^-24.
  if (exponent > 15 || exponent < -24) return false;
  // f16 keeps 10 of f32's 23 fraction bits for normals (exponent >= -14),
  // one fewer per step below.
  int droppedBits = 13 + std::max(0, -14 - exponent);
  return (magnitude & ((uint32_t(1) << droppedBits) - 1)) == 0;
}

bool isBf16Value(float value) {
  uint32_t bits = llvm::bit_cast<uint32_t>(value);
  return (bits & 0xffffu) == 0 && (bits & 0x7f800000u) != 0x7f800000u;
}

Value widenWeight(OpBuilder &b, Location loc, Value loaded) {
  Type element = getElementTypeOrSelf(loaded.getType());
  if (element.isF32()) return loaded;
  if (element.isInteger(16)) return widenBf16(b, loc, loaded);
  Type f32 = b.getF32Type();
  if (auto vectorType = dyn_cast<VectorType>(loaded.getType()))
    f32 = VectorType::get(vectorType.getShape(), f32);
  return arith::ExtFOp::create(b, loc, f32, loaded);
}

Value roundPairToBf16(OpBuilder &b, Location loc, Value low, Value high) {
  return LLVM::CallIntrinsicOp::create(b, loc, VectorType::get({2 * kLanes}, b.getBF16Type()),
                                       b.getStringAttr("llvm.x86.avx512bf16.cvtne2ps2bf16.512"),
                                       ValueRange{high, low})
      .getResult(0);
}

Value roundToBf16(OpBuilder &b, Location loc, Value value) {
  // The same arithmetic lane by lane for a vector.
  auto like = [&](Type element) -> Type {
    if (auto vectorType = dyn_cast<VectorType>(value.getType()))
      return VectorType::get(vectorType.getShape(), element);
    return element;
  };
  Type i32 = like(b.getI32Type());
  auto constant = [&](int32_t c) -> Value {
    TypedAttr attr = b.getI32IntegerAttr(c);
    if (auto shaped = dyn_cast<ShapedType>(i32)) attr = DenseElementsAttr::get(shaped, c);
    return arith::ConstantOp::create(b, loc, i32, attr);
  };
  Value bits = arith::BitcastOp::create(b, loc, i32, value);
  Value high = arith::ShRUIOp::create(b, loc, bits, constant(16));
  // Adding 0x7fff and the kept half's lowest bit rounds ties to even.
  Value odd = arith::AndIOp::create(b, loc, high, constant(1));
  Value increment = arith::AddIOp::create(b, loc, odd, constant(0x7fff));
  Value rounded = arith::ShRUIOp::create(b, loc, arith::AddIOp::create(b, loc, bits, increment),
                                         constant(16));
  Value isNan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, value, value);
  Value quietNan = arith::OrIOp::create(b, loc, high, constant(0x40));
  Value chosen = arith::SelectOp::create(b, loc, isNan, quietNan, rounded);
  Value half = arith::TruncIOp::create(b, loc, like(b.getI16Type()), chosen);
  return arith::BitcastOp::create(b, loc, like(b.getBF16Type()), half);
}

Value WeightReader::vector(Value row, Value col, ArrayRef<Value> state) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  if (!weight.isQuantized()) {
    Type stored = cast<MemRefType>(weight.values.getType()).getElementType();
    return widenWeight(b, loc,
                       vector::LoadOp::create(b, loc, VectorType::get({kLanes}, stored),
                                              weight.values, ValueRange{row, col}));
  }
  auto bytes = [&](int64_t count) { return VectorType::get({count}, b.getI8Type()); };
  if (weight.codeTable) return lookUpCodes(row, col, state[0]);
  Value codes;
  if (weight.bits == 8) {
    codes = vector::LoadOp::create(b, loc, bytes(kLanes), weight.values, ValueRange{row, col});
  } else {
    Value packed = vector::LoadOp::create(b, loc, bytes(kLanes / 2), weight.values,
                                          ValueRange{row, kb.divIndex(col, kb.index(2))});
    auto splat = [&](int64_t value) {
      return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(bytes(kLanes / 2),
                                                                      static_cast<int8_t>(value)));
    };
    Value low = arith::AndIOp::create(b, loc, packed, splat(0xF));
    Value high = arith::ShRUIOp::create(b, loc, packed, splat(4));
    SmallVector<int64_t> concat(kLanes);
    for (int64_t lane = 0; lane < kLanes; ++lane) concat[lane] = lane;
    codes = vector::ShuffleOp::create(b, loc, low, high, concat);
  }
  return dequantize(b, loc, codes, state[0], state[1]);
}

Value WeightReader::lookUpCodes(Value row, Value col, Value table) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto indexType = VectorType::get({kLanes}, b.getI32Type());
  // The run's 8 bytes twice, widened: lanes 0-7 take their low nibbles and
  // lanes 8-15, shifted right by 4, their high ones; vpermps reads only an
  // index's low 4 bits, so the low nibbles need no mask.
  Value packed = vector::LoadOp::create(b, loc, VectorType::get({kLanes / 2}, b.getI8Type()),
                                        weight.values,
                                        ValueRange{row, kb.divIndex(col, kb.index(2))});
  SmallVector<int64_t> twice(kLanes);
  SmallVector<int32_t> shifts(kLanes);
  for (int64_t lane = 0; lane < kLanes; ++lane) {
    twice[lane] = lane % (kLanes / 2);
    shifts[lane] = lane < kLanes / 2 ? 0 : 4;
  }
  Value wide = arith::ExtUIOp::create(b, loc, indexType,
                                      vector::ShuffleOp::create(b, loc, packed, packed, twice));
  Value codes = arith::ShRUIOp::create(
      b, loc, wide,
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(indexType, ArrayRef(shifts))));
  return LLVM::CallIntrinsicOp::create(b, loc, table.getType(),
                                       b.getStringAttr("llvm.x86.avx512.permvar.sf.512"),
                                       ValueRange{table, codes})
      .getResult(0);
}

Value WeightReader::scalar(Value row, Value col) {
  if (!weight.isQuantized())
    return widenWeight(kb.builder(), kb.location(), kb.load(weight.values, {row, col}));
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value code;
  if (weight.bits == 8) {
    code = kb.load(weight.values, {row, col});
  } else {
    // Code `col` sits in byte (col / 16) * 8 + col % 8, high nibble when col % 16 >= 8.
    Value run = kb.divIndex(col, kb.index(kLanes));
    Value lane = kb.remIndex(col, kb.index(kLanes));
    Value byteIndex = kb.addIndex(kb.mulIndex(run, kb.index(kLanes / 2)),
                                  kb.remIndex(lane, kb.index(kLanes / 2)));
    Value byte = kb.load(weight.values, {row, byteIndex});
    Value shift = kb.mulIndex(kb.divIndex(lane, kb.index(kLanes / 2)), kb.index(4));
    Value shiftByte = arith::IndexCastOp::create(b, loc, b.getI8Type(), shift);
    Value shifted = arith::ShRUIOp::create(b, loc, byte, shiftByte);
    code = arith::AndIOp::create(b, loc, shifted,
                                 arith::ConstantOp::create(b, loc, b.getI8IntegerAttr(0xF)));
  }
  Value block = kb.divIndex(col, kb.index(weight.blockSize));
  return dequantize(b, loc, code, zeroPointAt(kb, weight, row, block),
                    kb.load(weight.scales, {row, block}));
}

/// An i8 or f32 tensor of `shape` holding `values`, for weights.bin.
template <typename T>
static ElementsAttr blobOf(const std::vector<T> &values, ArrayRef<int64_t> shape, StringRef name,
                           Type element) {
  return cast<ElementsAttr>(DenseResourceElementsAttr::get(
      RankedTensorType::get(shape, element), name,
      HeapAsmResourceBlob::allocateAndCopyInferAlign(ArrayRef<T>(values))));
}

ElementsAttr packedBlob(const std::vector<int8_t> &values, ArrayRef<int64_t> shape,
                        StringRef name, MLIRContext *context) {
  return blobOf(values, shape, name, IntegerType::get(context, 8));
}

ElementsAttr packedBlob(const std::vector<float> &values, ArrayRef<int64_t> shape,
                        StringRef name, MLIRContext *context) {
  return blobOf(values, shape, name, Float32Type::get(context));
}

std::optional<PackedWeight> packForCpu(const llm::BlockQuantized &weight, MLIRContext *context) {
  if (weight.blockSize % kLanes != 0 || weight.hasFloatZeroPoints()) return std::nullopt;
  int64_t rows = weight.rows, blocks = weight.blocks(), paddedCols = blocks * weight.blockSize;
  int64_t rowBytes = paddedCols * weight.bits / 8;
  std::vector<int8_t> codes(rows * rowBytes);
  std::vector<float> scales(rows * blocks);
  std::vector<int8_t> zeroPoints(weight.hasZeroPoints() ? rows * blocks : 0);
  // Signed codes are stored biased by 2^(bits-1), as are their zero points
  // (0 when absent, so the symmetric default): the differences are the same.
  // 8-bit codes without zero points are stored less that default, signed.
  int32_t bias = weight.hasSignedCodes() ? 1 << (weight.bits - 1) : 0;
  bool offsetCodes = weight.bits == 8 && !weight.hasZeroPoints();
  if (offsetCodes) bias -= 1 << (weight.bits - 1);
  for (int64_t row = 0; row < rows; ++row) {
    int8_t *rowCodes = codes.data() + row * rowBytes;
    for (int64_t col = 0; col < paddedCols; ++col) {
      auto code = static_cast<uint8_t>(weight.code(row, col) + bias);
      if (weight.bits == 8) {
        rowCodes[col] = static_cast<int8_t>(code);
        continue;
      }
      int64_t lane = col % kLanes;
      int8_t &byte = rowCodes[col / kLanes * (kLanes / 2) + lane % (kLanes / 2)];
      byte = static_cast<int8_t>(static_cast<uint8_t>(byte) | (code << (lane / (kLanes / 2) * 4)));
    }
    for (int64_t block = 0; block < blocks; ++block) {
      scales[row * blocks + block] = weight.scale(row, block);
      if (weight.hasZeroPoints())
        zeroPoints[row * blocks + block] = static_cast<int8_t>(weight.zeroPoint(row, block) + bias);
    }
  }
  PackedWeight packed;
  packed.codes = packedBlob(codes, {rows, rowBytes}, "codes", context);
  packed.scales = packedBlob(scales, {rows, blocks}, "scales", context);
  if (weight.hasZeroPoints())
    packed.zeroPoints = packedBlob(zeroPoints, {rows, blocks}, "zero_points", context);
  packed.bits = weight.bits;
  packed.blockSize = weight.blockSize;
  packed.offsetCodes = offsetCodes;
  return packed;
}

LogicalResult lowerQuantizedEmbedding(StepLowering &step, llm::EmbeddingOp op,
                                      const MatmulWeight &table, Value ids, Value output) {
  SmallVector<Value> args = table.buffers();
  args.append({ids, output});
  int64_t hidden = cast<MemRefType>(output.getType()).getDimSize(1);
  step.callKernel(op.getLoc(), "embedding", kernelKey(op, args) + "/" + table.key(), args,
                  [&](KernelBuilder &kb, ValueRange params) {
    MatmulWeight packed = table.withBuffers(params);
    Value idsParam = params[params.size() - 2], out = params.back();
    WeightReader reader(kb, packed);
    kb.forEach(kb.index(0), kb.dim(out, 0), [&](Value row) {
      Value id = kb.toIndex(kb.load(idsParam, {row}));
      kb.forEach(kb.index(0), kb.index(hidden), [&](Value col) {
        kb.store(reader.scalar(id, col), out, {row, col});
      });
    });
  });
  return success();
}

} // namespace llmc::cpu
