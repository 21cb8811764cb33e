//===- CpuInt8Matmul.cpp - quantised weights times int8 activations -------===//
//
// With `int8-activations`, a matmul over a block-quantised weight quantises
// its input rows to int8, a scale per block of the weight's block size, and
// multiplies in integers with AVX-512 VNNI: vpdpbusd takes 64 unsigned codes
// and 64 signed activations and adds their products, four at a time, to 16
// int32 lanes. The lanes are 16 output columns, so one instruction advances
// 16 dot products by 4 values of k; a block's integer sums are then scaled to
// f32 once. Without VNNI, AVX2's vpmaddubsw and vpmaddwd compute the same
// sums on each half (Int8Products). llama.cpp multiplies its Q4_0/Q8_0
// weights the same way. Not exact (the activations are rounded to 8 bits),
// but every row is quantised and summed alone, in a fixed order: a row's
// logits do not depend on the batch.
//
// The weight's layout (packForInt8Matmul), per tile of 16 output columns
// (the last one padded with codes whose scale is 0) and per block of B values
// along k:
//
//   codes        i8 [tiles, blocks, B * 16 * bits / 8]: 64-byte groups; group
//                g holds, for column l of the tile, codes k = 4g .. 4g + 3 at
//                bytes 4l .. 4l + 3. 4-bit codes: group g in the low nibbles
//                and group g + B/8 in the high nibbles of the same 64 bytes.
//   scales       f32 [tiles, blocks, 16]
//   zero points  i8 [tiles, blocks, 16], unsigned; absent for symmetric codes
//
// The activations' (quantizeRows, into scratch past the planned workspace):
// codes i8 [rows, blocks * B] (zero past k), scales f32 [rows, blocks] (the
// block's largest magnitude / 127) and sums i32 [rows, blocks] of the codes.
// Output (r, c) = sum over blocks b of
//   sw[c, b] * sx[r, b] * (sum_k q[c, k] * xq[r, k] - z[c, b] * sum_k xq[r, k]).
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace llmc::cpu {

namespace {

/// Bytes of one vpdpbusd operand: 16 lanes of 4.
constexpr int64_t kGroupBytes = 64;
/// Rows of a register tile: each shares the tile's unpacked weight groups.
constexpr int64_t kInt8TileRows = 4;

VectorType vectorOf(int64_t lanes, Type element) { return VectorType::get({lanes}, element); }

Value splat(OpBuilder &b, Location loc, VectorType type, Attribute value) {
  return arith::ConstantOp::create(b, loc, type, DenseElementsAttr::get(type, value));
}

/// The result of the LLVM intrinsic `name` on `operands`.
Value callIntrinsic(OpBuilder &b, Location loc, Type type, StringRef name, ValueRange operands) {
  return LLVM::CallIntrinsicOp::create(b, loc, type, b.getStringAttr(name), operands)
      .getResult(0);
}

/// The `lanes` lanes of `vector` from `offset`.
Value lanesOf(OpBuilder &b, Location loc, Value vector, int64_t offset, int64_t lanes) {
  return vector::ExtractStridedSliceOp::create(b, loc, vector, ArrayRef<int64_t>{offset},
                                               ArrayRef<int64_t>{lanes}, ArrayRef<int64_t>{1});
}

/// acc + the sums of 4 products of unsigned `codes` (of `codeBits` bits:
/// 4 when each byte holds one nibble) and signed `activations` (|a| <= 127)
/// per lane: vpdpbusd, or on AVX2 per 32-byte half vpmaddubsw, whose int16
/// pair sums hold a code below 16 times two activations exactly (at most
/// 3,810), then vpmaddwd. An 8-bit code goes as its low and high nibbles,
/// the high one's sums times 16.
Value dotBytes(OpBuilder &b, Location loc, Value acc, Value codes, Value activations,
               int64_t codeBits, Int8Products products) {
  if (products == Int8Products::Avx512Vnni)
    return callIntrinsic(b, loc, acc.getType(), "llvm.x86.avx512.vpdpbusd.512",
                         {acc, codes, activations});
  auto halfBytes = vectorOf(32, b.getI8Type());
  auto words = vectorOf(16, b.getI16Type());
  auto ints = vectorOf(8, b.getI32Type());
  auto quads = [&](Value halfCodes, Value halfActivations, int64_t weight) -> Value {
    Value pairs = callIntrinsic(b, loc, words, "llvm.x86.avx2.pmadd.ub.sw",
                                {halfCodes, halfActivations});
    return callIntrinsic(b, loc, ints, "llvm.x86.avx2.pmadd.wd",
                         {pairs, splat(b, loc, words, b.getI16IntegerAttr(weight))});
  };
  Value result = acc;
  for (int64_t half = 0; half < 2; ++half) {
    Value halfCodes = lanesOf(b, loc, codes, 32 * half, 32);
    Value halfActivations = lanesOf(b, loc, activations, 32 * half, 32);
    Value sums;
    if (codeBits == 4) {
      sums = quads(halfCodes, halfActivations, 1);
    } else {
      Value low = arith::AndIOp::create(b, loc, halfCodes,
                                        splat(b, loc, halfBytes, b.getI8IntegerAttr(0xF)));
      Value high = arith::ShRUIOp::create(b, loc, halfCodes,
                                          splat(b, loc, halfBytes, b.getI8IntegerAttr(4)));
      Value lowSums = quads(low, halfActivations, 1);
      Value highSums = quads(high, halfActivations, 16);
      sums = arith::AddIOp::create(b, loc, lowSums, highSums);
    }
    Value updated = arith::AddIOp::create(b, loc, lanesOf(b, loc, acc, 8 * half, 8), sums);
    result = vector::InsertStridedSliceOp::create(b, loc, updated, result,
                                                  ArrayRef<int64_t>{8 * half},
                                                  ArrayRef<int64_t>{1});
  }
  return result;
}

/// The 4 activation codes of row `row` at k, in every lane of a vpdpbusd
/// operand.
Value broadcastFour(KernelBuilder &kb, Value codes, Value row, Value k) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value four = vector::LoadOp::create(b, loc, vectorOf(4, b.getI8Type()), codes, ValueRange{row, k});
  Value word = vector::BitCastOp::create(b, loc, vectorOf(1, b.getI32Type()), four);
  Value scalar = vector::ExtractOp::create(b, loc, word, ArrayRef<int64_t>{0});
  Value lanes = vector::BroadcastOp::create(b, loc, vectorOf(16, b.getI32Type()), scalar);
  return vector::BitCastOp::create(b, loc, vectorOf(kGroupBytes, b.getI8Type()), lanes);
}

/// An scf.for over [lower, upper) by `step` whose body `kb` builds inside.
void forEach(KernelBuilder &kb, Value lower, Value upper, int64_t step,
             function_ref<void(Value)> body) {
  OpBuilder &b = kb.builder();
  scf::ForOp::create(b, kb.location(), lower, upper, kb.index(step), ValueRange{},
                     [&](OpBuilder &nested, Location loc, Value iv, ValueRange) {
                       OpBuilder::InsertionGuard guard(b);
                       b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
                       body(iv);
                       scf::YieldOp::create(b, loc);
                     });
}

/// Quantises each row of x [rows, K] to int8 per block of `blockSize`: the
/// block's scale is its largest magnitude / 127, its codes round(x * 127 /
/// that) (ties to even), codes past K are 0, and each block's code sum is
/// kept. K and blockSize are multiples of 16.
void emitQuantizeRows(KernelBuilder &kb, Value x, QuantizedRows out, int64_t k, int64_t blockSize) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto f32x16 = vectorOf(16, b.getF32Type());
  auto i32x16 = vectorOf(16, b.getI32Type());
  int64_t blocks = llvm::divideCeil(k, blockSize);
  kb.forEach(kb.index(0), kb.dim(x, 0), [&](Value row) {
    kb.forEach(kb.index(0), kb.index(blocks), [&](Value block) {
      Value start = kb.mulIndex(block, kb.index(blockSize));
      Value end = kb.minIndex(kb.addIndex(start, kb.index(blockSize)), kb.index(k));
      auto chunks = [&](Value init, function_ref<Value(Value, Value)> body) {
        auto loop = scf::ForOp::create(
            b, loc, start, end, kb.index(16), ValueRange{init},
            [&](OpBuilder &nested, Location, Value i, ValueRange carried) {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
              scf::YieldOp::create(b, loc, body(i, carried[0]));
            });
        return loop.getResult(0);
      };
      Value magnitudes = chunks(splat(b, loc, f32x16, b.getF32FloatAttr(0)), [&](Value i, Value acc) {
        Value values = vector::LoadOp::create(b, loc, f32x16, x, ValueRange{row, i});
        return arith::MaximumFOp::create(b, loc, acc, math::AbsFOp::create(b, loc, values));
      });
      Value largest = vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXIMUMF,
                                                  magnitudes);
      Value positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, largest, kb.f32(0));
      Value inverse = arith::SelectOp::create(
          b, loc, positive, arith::DivFOp::create(b, loc, kb.f32(127), largest), kb.f32(0));
      Value inverses = vector::BroadcastOp::create(b, loc, f32x16, inverse);
      Value sums = chunks(splat(b, loc, i32x16, b.getI32IntegerAttr(0)), [&](Value i, Value acc) {
        Value values = vector::LoadOp::create(b, loc, f32x16, x, ValueRange{row, i});
        Value scaled = math::RoundEvenOp::create(
            b, loc, arith::MulFOp::create(b, loc, values, inverses));
        Value codes = arith::FPToSIOp::create(b, loc, i32x16, scaled);
        vector::StoreOp::create(b, loc,
                                arith::TruncIOp::create(b, loc, vectorOf(16, b.getI8Type()), codes),
                                out.codes, ValueRange{row, i});
        return arith::AddIOp::create(b, loc, acc, codes);
      });
      // The codes of a last block past K are zeros.
      forEach(kb, end, kb.addIndex(start, kb.index(blockSize)), 16, [&](Value i) {
        vector::StoreOp::create(b, loc, splat(b, loc, vectorOf(16, b.getI8Type()),
                                              b.getI8IntegerAttr(0)),
                                out.codes, ValueRange{row, i});
      });
      kb.store(arith::DivFOp::create(b, loc, largest, kb.f32(127)), out.scales, {row, block});
      kb.store(vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, sums), out.sums,
               {row, block});
    });
  });
}

} // namespace

QuantizedRows quantizeRowsIntoScratch(StepLowering &step, Location loc, Value input,
                                      int64_t maxRows, int64_t blockSize, int64_t &offset) {
  OpBuilder &b = step.b;
  int64_t k = cast<MemRefType>(input.getType()).getDimSize(1);
  int64_t blocks = llvm::divideCeil(k, blockSize);
  Value rows = memref::DimOp::create(b, loc, input, 0);
  auto take = [&](Type element, int64_t cols, int64_t bytes) {
    Value view = step.scratchView(loc, element, cols, rows, offset);
    offset += llvm::alignTo(bytes, 64);
    return view;
  };
  QuantizedRows quantized;
  quantized.codes = take(b.getI8Type(), blocks * blockSize, maxRows * blocks * blockSize);
  quantized.scales = take(b.getF32Type(), blocks, maxRows * blocks * 4);
  quantized.sums = take(b.getI32Type(), blocks, maxRows * blocks * 4);
  step.useScratch(offset);
  SmallVector<Value> args{input, quantized.codes, quantized.scales, quantized.sums};
  step.callKernel(loc, "quantize_rows",
                  kernelKey("quantize_rows", args) + "/b" + std::to_string(blockSize), args,
                  [&](KernelBuilder &kb, ValueRange params) {
                    emitQuantizeRows(kb, params[0], {params[1], params[2], params[3]}, k,
                                     blockSize);
                  });
  return quantized;
}

void emitInt8TileOfRows(KernelBuilder &kb, const Int8Weight &w, QuantizedRows x, Value tile,
                        ArrayRef<Value> xRows, int64_t parts, int64_t partTiles,
                        FinishInt8Tile finish) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto i32x16 = vectorOf(16, b.getI32Type());
  auto f32x16 = vectorOf(16, b.getF32Type());
  auto bytes = vectorOf(kGroupBytes, b.getI8Type());
  int64_t blockSize = w.blockSize, groups = blockSize / 4;
  int64_t rows = static_cast<int64_t>(xRows.size());
  auto rowAt = [&](int64_t r) { return xRows[r]; };
  auto tileOf = [&](int64_t part) { return kb.addIndex(tile, kb.index(part * partTiles)); };
  auto slot = [&](int64_t r, int64_t part) { return r * parts + part; };

  Value zerosF = splat(b, loc, f32x16, b.getF32FloatAttr(0));
  SmallVector<Value> inits(rows * parts, zerosF);
  auto loop = scf::ForOp::create(
      b, loc, kb.index(0), kb.index(w.blocks()), kb.index(1), inits,
      [&](OpBuilder &nested, Location, Value block, ValueRange acc) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
        Value blockStart = kb.mulIndex(block, kb.index(blockSize));
        SmallVector<Value> sums(rows * parts, splat(b, loc, i32x16, b.getI32IntegerAttr(0)));
        // One 64-byte load holds group g (and, for 4 bits, group g + groups / 2).
        int64_t loads = w.bits == 4 ? groups / 2 : groups;
        for (int64_t g = 0; g < loads; ++g) {
          SmallVector<std::pair<Value, int64_t>> operands[2]; // per part: (codes, group)
          for (int64_t part = 0; part < parts; ++part) {
            Value packed = vector::LoadOp::create(
                b, loc, bytes, w.codes, ValueRange{tileOf(part), block, kb.index(g * kGroupBytes)});
            if (w.bits == 8) {
              operands[part].push_back({packed, g});
              continue;
            }
            operands[part].push_back(
                {arith::AndIOp::create(b, loc, packed, splat(b, loc, bytes, b.getI8IntegerAttr(0xF))),
                 g});
            operands[part].push_back(
                {arith::ShRUIOp::create(b, loc, packed, splat(b, loc, bytes, b.getI8IntegerAttr(4))),
                 g + groups / 2});
          }
          for (int64_t r = 0; r < rows; ++r)
            for (auto index : llvm::seq<size_t>(0, operands[0].size())) {
              int64_t group = operands[0][index].second;
              Value activations =
                  broadcastFour(kb, x.codes, rowAt(r), kb.addIndex(blockStart, kb.index(4 * group)));
              for (int64_t part = 0; part < parts; ++part)
                sums[slot(r, part)] =
                    dotBytes(b, loc, sums[slot(r, part)], operands[part][index].first,
                             activations, w.bits, w.products);
            }
        }
        SmallVector<Value> next(acc.begin(), acc.end());
        for (int64_t part = 0; part < parts; ++part) {
          Value scales = vector::LoadOp::create(b, loc, f32x16, w.scales,
                                                ValueRange{tileOf(part), block, kb.index(0)});
          Value zeroPoints;
          if (w.zeroPoints)
            zeroPoints = arith::ExtUIOp::create(
                b, loc, i32x16,
                vector::LoadOp::create(b, loc, vectorOf(16, b.getI8Type()), w.zeroPoints,
                                       ValueRange{tileOf(part), block, kb.index(0)}));
          for (int64_t r = 0; r < rows; ++r) {
            Value rowSum = kb.load(x.sums, {rowAt(r), block});
            Value correction;
            if (zeroPoints)
              correction = arith::MulIOp::create(
                  b, loc, zeroPoints, vector::BroadcastOp::create(b, loc, i32x16, rowSum));
            else
              correction = vector::BroadcastOp::create(
                  b, loc, i32x16,
                  arith::MulIOp::create(b, loc, rowSum,
                                        arith::ConstantOp::create(
                                            b, loc, b.getI32IntegerAttr(1 << (w.bits - 1)))));
            Value exact = arith::SubIOp::create(b, loc, sums[slot(r, part)], correction);
            Value rowScale = vector::BroadcastOp::create(b, loc, f32x16,
                                                         kb.load(x.scales, {rowAt(r), block}));
            Value scale = arith::MulFOp::create(b, loc, scales, rowScale);
            next[slot(r, part)] =
                vector::FMAOp::create(b, loc, arith::SIToFPOp::create(b, loc, f32x16, exact), scale,
                                      next[slot(r, part)]);
          }
        }
        scf::YieldOp::create(b, loc, next);
      });
  for (int64_t r = 0; r < rows; ++r) {
    SmallVector<Value> parted;
    for (int64_t part = 0; part < parts; ++part) parted.push_back(loop.getResult(slot(r, part)));
    finish(r, parted);
  }
}

std::string Int8Weight::key() const {
  return "a8q" + std::to_string(bits) + "b" + std::to_string(blockSize) + (zeroPoints ? "z" : "") +
         (products == Int8Products::Avx2 ? "avx2" : "");
}

SmallVector<Value> Int8Weight::buffers() const {
  SmallVector<Value> memrefs{codes, scales};
  if (zeroPoints) memrefs.push_back(zeroPoints);
  return memrefs;
}

std::optional<PackedWeight> packForInt8Matmul(const llm::BlockQuantized &weight,
                                              MLIRContext *context) {
  if (weight.blockSize % 16 != 0 || weight.hasFloatZeroPoints() || weight.cols % 16 != 0)
    return std::nullopt;
  int64_t tiles = llvm::divideCeil(weight.rows, 16), blocks = weight.blocks();
  int64_t blockSize = weight.blockSize, tileBlockBytes = blockSize * 16 * weight.bits / 8;
  int32_t bias = weight.hasSignedCodes() ? 1 << (weight.bits - 1) : 0;
  std::vector<int8_t> codes(tiles * blocks * tileBlockBytes, 0);
  std::vector<float> scales(tiles * blocks * 16, 0.0f);
  std::vector<int8_t> zeroPoints(weight.hasZeroPoints() ? tiles * blocks * 16 : 0, 0);
  for (int64_t row = 0; row < weight.rows; ++row) {
    int64_t tile = row / 16, lane = row % 16;
    for (int64_t block = 0; block < blocks; ++block) {
      int64_t at = (tile * blocks + block) * 16 + lane;
      scales[at] = weight.scale(row, block);
      if (weight.hasZeroPoints())
        zeroPoints[at] = static_cast<int8_t>(weight.zeroPoint(row, block) + bias);
      int8_t *out = codes.data() + (tile * blocks + block) * tileBlockBytes;
      for (int64_t i = 0; i < blockSize; ++i) {
        int64_t col = block * blockSize + i;
        auto code = static_cast<uint8_t>(col < weight.cols ? weight.code(row, col) + bias : 0);
        int64_t group = i / 4;
        int64_t byte = lane * 4 + i % 4;
        if (weight.bits == 8) {
          out[group * kGroupBytes + byte] = static_cast<int8_t>(code);
          continue;
        }
        bool high = group >= blockSize / 8;
        int64_t load = high ? group - blockSize / 8 : group;
        auto &packed = reinterpret_cast<uint8_t &>(out[load * kGroupBytes + byte]);
        packed |= high ? code << 4 : code;
      }
    }
  }
  PackedWeight packed;
  packed.codes = packedBlob(codes, {tiles, blocks, tileBlockBytes}, "int8_matmul_codes", context);
  packed.scales = packedBlob(scales, {tiles, blocks, 16}, "int8_matmul_scales", context);
  if (weight.hasZeroPoints())
    packed.zeroPoints =
        packedBlob(zeroPoints, {tiles, blocks, 16}, "int8_matmul_zero_points", context);
  packed.bits = weight.bits;
  packed.blockSize = blockSize;
  return packed;
}

LogicalResult lowerInt8Matmul(StepLowering &step, Location loc, Value input,
                              const Int8Weight &weight, Value output, const Epilogue &epilogue) {
  int64_t columns = cast<MemRefType>(output.getType()).getDimSize(1);
  int64_t parts = epilogue.gated ? 2 : 1;
  if (epilogue.gated && columns % 16 != 0)
    return emitError(loc, "a gated int8-activation matmul needs a multiple of 16 columns");
  int64_t blocks = weight.blocks();
  QuantizedRows rows = step.quantizedRows(input, weight.blockSize, blocks);
  if (!rows.codes) {
    // The input's rows quantised into the scratch, once for the matmuls that
    // read it one after another.
    int64_t offset = 0;
    rows = quantizeRowsIntoScratch(step, loc, input, step.maxRows, weight.blockSize, offset);
    step.rememberQuantizedRows(input, weight.blockSize, blocks,
                               {rows.codes, rows.scales, rows.sums});
  }

  SmallVector<Value> buffers{rows.codes, output, rows.scales, rows.sums};
  SmallVector<Value> weightBuffers = weight.buffers();
  llvm::append_range(buffers, weightBuffers);
  llvm::append_range(buffers, epilogueOperands(epilogue));
  std::string key = kernelKey("matmul_int8", buffers) + "/" + weight.key();
  if (epilogue.body) key = kernelKey(epilogue.body->getParentOp(), buffers) + "/" + key;
  int64_t partTiles = columns / 16;
  runOverColumns(step, loc, buffers, columns, kColumnsPerTask, key,
                 [&](KernelBuilder &kb, ValueRange params, const OutputBlock &block) {
    QuantizedRows x{params[0], params[2], params[3]};
    Value out = params[1];
    Int8Weight w = weight;
    w.codes = params[4];
    w.scales = params[5];
    if (weight.zeroPoints) w.zeroPoints = params[6];
    auto epilogueParams = EpilogueParams::in(epilogue, params.drop_front(4 + weightBuffers.size()));
    Value begin = block.begin, end = block.end, rowCount = block.rowEnd;
    Value tiledRowsEnd = kb.addIndex(
        block.rowBegin,
        kb.mulIndex(kb.divIndex(kb.subIndex(rowCount, block.rowBegin), kb.index(kInt8TileRows)),
                    kb.index(kInt8TileRows)));
    Value firstTile = kb.divIndex(begin, kb.index(16));
    Value lastTile = kb.divIndex(kb.addIndex(end, kb.index(15)), kb.index(16));
    forEach(kb, firstTile, lastTile, 1, [&](Value tile) {
      Value tileStart = kb.mulIndex(tile, kb.index(16));
      auto finish = [&](Value row, ArrayRef<Value> sums) {
        for (int64_t lane = 0; lane < 16; ++lane) {
          Value col = kb.addIndex(tileStart, kb.index(lane));
          kb.ifThen(kb.lessThan(col, end), [&] {
            SmallVector<Value> scalars;
            for (Value sum : sums)
              scalars.push_back(vector::ExtractOp::create(kb.builder(), kb.location(), sum,
                                                          ArrayRef<int64_t>{lane}));
            storeOutput(kb, epilogue, epilogueParams, out, row, col, scalars, columns);
          });
        }
      };
      auto rowTile = [&](Value row, int64_t rows) {
        SmallVector<Value> xRows;
        for (int64_t r = 0; r < rows; ++r) xRows.push_back(kb.addIndex(row, kb.index(r)));
        emitInt8TileOfRows(kb, w, x, tile, xRows, parts, partTiles,
                           [&](int64_t r, ArrayRef<Value> sums) { finish(xRows[r], sums); });
      };
      forEach(kb, block.rowBegin, tiledRowsEnd, kInt8TileRows,
              [&](Value row) { rowTile(row, kInt8TileRows); });
      forEach(kb, tiledRowsEnd, rowCount, 1, [&](Value row) { rowTile(row, 1); });
    });
  });
  if (!epilogue.body && epilogue.bias) addBias(step, loc, epilogue.bias, output);
  return success();
}

} // namespace llmc::cpu
