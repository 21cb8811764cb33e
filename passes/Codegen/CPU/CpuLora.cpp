//===- CpuLora.cpp - LoRA products through the runtime --------------------===//
//
// An adapter's weights are the runtime's (loaded while serving, chosen per
// request), so an llm.lora is a call of the host API's `lora` with the rows'
// addresses and strides; the runtime knows which adapter each row runs with.
//
//===----------------------------------------------------------------------===//
#include "passes/Codegen/CPU/CpuLowering.h"

using namespace mlir;

namespace llmc::cpu {
namespace {

/// The address of row 0 of the [rows, features] f32 memref `rows` (a view
/// with a static layout, its offset included) and the elements from one row
/// to the next.
std::pair<Value, Value> rowsAddress(OpBuilder &b, Location loc, Value rows) {
  auto type = cast<MemRefType>(rows.getType());
  auto [strides, offset] = type.getStridesAndOffset();
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, b.getIndexType(), rows);
  Value integer = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  integer = arith::AddIOp::create(b, loc, integer, constantI64(b, loc, offset * 4));
  Value pointer = LLVM::IntToPtrOp::create(b, loc, llvmPointerType(b), ValueRange{integer});
  return {pointer, constantI64(b, loc, strides[0])};
}

} // namespace

LogicalResult lowerLora(StepLowering &step, llm::LoraOp op, Value input, Value base,
                        Value output, bool perSequenceRows) {
  OpBuilder &b = step.b;
  Location loc = op.getLoc();
  for (Value rows : {input, base, output}) {
    auto type = cast<MemRefType>(rows.getType());
    if (type.getRank() != 2 || !type.getElementType().isF32() || !isAddressable(rows))
      return op.emitOpError("needs [rows, features] f32 rows of a static layout; got ") << type;
  }
  auto ptr = llvmPointerType(b);
  auto i32 = b.getI32Type(), i64 = b.getI64Type();
  auto [x, ldx] = rowsAddress(b, loc, input);
  auto [y, ldy] = rowsAddress(b, loc, base);
  auto [out, ldout] = rowsAddress(b, loc, output);
  Value rows = arith::IndexCastOp::create(b, loc, i64, memref::DimOp::create(b, loc, base, 0));
  auto loraType = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(b.getContext()),
                                              {ptr, i64, i32, i64, ptr, i64, ptr, i64, ptr, i64});
  LLVM::CallOp::create(
      b, loc, loraType,
      ValueRange{hostApiField(step, loc, kApiLora), hostApiField(step, loc, kApiContext),
                 constantI64(b, loc, op.getSiteAttr().getInt()),
                 LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(perSequenceRows)),
                 rows, x, ldx, y, ldy, out, ldout});
  return success();
}

} // namespace llmc::cpu
