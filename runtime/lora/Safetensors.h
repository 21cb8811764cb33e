//===- Safetensors.h - tensors of a .safetensors file -----------*- C++ -*-===//
//
// The format Hugging Face saves weights in (PEFT's adapter_model.safetensors):
// an 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the data. Only what adapters hold is
// read: F32, F16 and BF16 tensors, widened to f32.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_LORA_SAFETENSORS_H
#define LLMC_RUNTIME_LORA_SAFETENSORS_H

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace llmc::runtime {

class SafetensorsFile {
public:
  /// Reads `path` whole; throws Error naming the file and the fault when it
  /// is not a well-formed safetensors file.
  static SafetensorsFile read(const std::string &path);

  struct Tensor {
    std::string dtype;
    std::vector<int64_t> shape;
    size_t begin = 0, end = 0; // bytes of the data section
  };
  const std::map<std::string, Tensor> &tensors() const { return index; }
  /// The tensor `name` as f32 values (row-major); throws Error for a dtype
  /// other than F32, F16 or BF16.
  std::vector<float> floats(const std::string &name) const;
  /// A checksum of the whole file: equal files, equal checksums.
  uint64_t checksum() const { return fileChecksum; }

private:
  std::string path;
  std::vector<uint8_t> data; // the data section
  std::map<std::string, Tensor> index;
  uint64_t fileChecksum = 0;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_LORA_SAFETENSORS_H
