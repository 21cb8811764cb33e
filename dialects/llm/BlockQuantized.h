//===- BlockQuantized.h - packed weights read at compile time ---*- C++ -*-===//
//
// An llm.dequantize of constants holds a weight as onnxruntime stores it:
// unsigned `bits`-bit codes packed low bits first, one scale per block of
// `block_size` codes along a row, and optional zero points (packed like the
// codes, one per block, or floats). MatMulNBits keeps codes in a uint8
// container, [rows][blocks][block_size * bits / 8], and zero points rows
// padded to whole bytes; GatherBlockQuantized in a uint4 tensor [rows, cols]
// (zero points [rows, blocks]) packed without padding, or in an int4 tensor
// of signed codes. A value is (code - zero_point) * scale, the zero point
// 2^(bits-1) when absent (0 for signed codes).
// Targets read the constants through this view: to widen them to f32, or to
// repack them for a kernel that keeps them packed.
//===----------------------------------------------------------------------===//
#ifndef LLMC_DIALECTS_LLM_BLOCKQUANTIZED_H
#define LLMC_DIALECTS_LLM_BLOCKQUANTIZED_H

#include "dialects/llm/LlmDialect.h"

#include "mlir/IR/BuiltinAttributeInterfaces.h"

#include <memory>
#include <optional>
#include <vector>

namespace llmc::llm {

class BlockQuantized {
public:
  /// Reads the constants of `op` (a result [..., rows, cols] as one matrix
  /// of all its rows); an error on the op when an operand is not a
  /// constant, the result not static of rank 2 or more, the scales not f32, the
  /// bits not 4 or 8, or an operand too small for the result.
  static mlir::FailureOr<BlockQuantized> read(llm::DequantizeOp op);

  int64_t rows = 0, cols = 0, bits = 0, blockSize = 0;
  /// Blocks per row, the last one padded to `blockSize` codes.
  int64_t blocks() const { return (cols + blockSize - 1) / blockSize; }
  bool hasZeroPoints() const { return zeroPointsPresent; }
  /// Zero points stored as floats rather than packed codes.
  bool hasFloatZeroPoints() const { return floatZeroPoints; }
  /// Codes (and zero points) in two's complement: an int4 tensor.
  bool hasSignedCodes() const { return signedCodes; }

  /// The code at (row, col), col < blocks() * blockSize.
  int32_t code(int64_t row, int64_t col) const;
  float scale(int64_t row, int64_t block) const;
  float zeroPoint(int64_t row, int64_t block) const;
  /// (code - zero_point) * scale, rounded once as f32: the value every
  /// target computes, at compile time or in a kernel.
  float value(int64_t row, int64_t col) const;

private:
  /// Codes `bits` wide packed low bits first, row r's from code r * rowStride.
  struct PackedCodes {
    llvm::ArrayRef<char> bytes;
    int64_t rowStride = 0;
    int32_t at(int64_t row, int64_t index, int64_t bits, bool isSigned) const;
  };

  /// Storage of the operands' bytes that had to be copied or repacked (the
  /// views stay valid when the object moves: the vectors' buffers move).
  std::shared_ptr<std::vector<std::vector<char>>> storage;
  PackedCodes codes, zeroPoints;
  llvm::ArrayRef<char> scales;
  bool zeroPointsPresent = false, floatZeroPoints = false, signedCodes = false;
};

/// Unpacks an llm.dequantize of constants into f32 of its result's shape at
/// compile time; an error on the op for what BlockQuantized::read refuses.
mlir::FailureOr<mlir::ElementsAttr> dequantizeConstant(llm::DequantizeOp op);

/// The values of a weight known at compile time: an llm.constant's, or an
/// llm.dequantize of constants widened to f32 (a failure, with
/// dequantizeConstant's error, when it cannot be read); null for any other
/// value.
mlir::FailureOr<mlir::ElementsAttr> weightValues(mlir::Value value);

/// The f32 values of a weight known at compile time (weightValues), its bytes
/// in `storage` where they had to be copied; nullopt, quietly, for any other
/// value or element type.
std::optional<llvm::ArrayRef<float>> weightFloats(mlir::Value value, std::vector<char> &storage);

/// An llm.constant of f32 `data` in `shape`: dense when small, else a
/// dense_resource blob named after `blobName`.
mlir::Value createWeightConstant(mlir::OpBuilder &builder, mlir::Location loc,
                                 llvm::ArrayRef<int64_t> shape, llvm::ArrayRef<float> data,
                                 llvm::StringRef blobName);

} // namespace llmc::llm

#endif // LLMC_DIALECTS_LLM_BLOCKQUANTIZED_H
