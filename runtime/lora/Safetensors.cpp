//===- Safetensors.cpp - tensors of a .safetensors file -------------------===//
#include "runtime/lora/Safetensors.h"

#include "llmc/Artifact/Checksum.h"
#include "runtime/core/Error.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <iterator>

namespace llmc::runtime {
namespace {

using nlohmann::json;

/// The f32 of a binary16 (f16) or bfloat16 value's bits.
float widenF16Bits(uint16_t bits) {
  uint32_t sign = uint32_t(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  uint32_t word;
  if (exponent == 0x1f) {
    word = sign | 0x7f800000 | (mantissa << 13);
  } else if (exponent != 0) {
    word = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    word = sign;
  } else { // subnormal: normalise
    int shift = 0;
    while (!(mantissa & 0x400)) mantissa <<= 1, ++shift;
    word = sign | uint32_t(113 - shift) << 23 | ((mantissa & 0x3ff) << 13);
  }
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

float widenBf16Bits(uint16_t bits) {
  uint32_t word = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &word, 4);
  return value;
}

size_t safetensorsElementBytes(const std::string &dtype) {
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" ||
      dtype == "F8_E5M2")
    return 1;
  return 0;
}

} // namespace

SafetensorsFile SafetensorsFile::read(const std::string &path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw Error(path + ": cannot open the file");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(stream)),
                             std::istreambuf_iterator<char>());
  auto fail = [&](const std::string &why) {
    return Error(path + ": not a safetensors file: " + why);
  };
  if (bytes.size() < 8) throw fail("shorter than its 8-byte header length");
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i) headerBytes = headerBytes << 8 | bytes[size_t(i)];
  if (headerBytes > bytes.size() - 8) throw fail("its header runs past the end of the file");
  json header = json::parse(bytes.begin() + 8, bytes.begin() + 8 + int64_t(headerBytes), nullptr,
                            /*allow_exceptions=*/false);
  if (!header.is_object()) throw fail("its header is not a JSON object");

  SafetensorsFile file;
  file.path = path;
  file.fileChecksum = checksum64(bytes.data(), bytes.size());
  file.data.assign(bytes.begin() + 8 + int64_t(headerBytes), bytes.end());
  for (const auto &[name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    if (!entry.is_object() || !entry.contains("dtype") || !entry["dtype"].is_string() ||
        !entry.contains("shape") || !entry["shape"].is_array() ||
        !entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2)
      throw fail("tensor '" + name + "' lacks a dtype, shape or data_offsets");
    Tensor tensor;
    tensor.dtype = entry["dtype"].get<std::string>();
    size_t elements = 1;
    for (const json &dim : entry["shape"]) {
      if (!dim.is_number_unsigned()) throw fail("tensor '" + name + "' has a bad shape");
      tensor.shape.push_back(dim.get<int64_t>());
      elements *= dim.get<size_t>();
    }
    const json &offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned())
      throw fail("tensor '" + name + "' has bad data_offsets");
    tensor.begin = offsets[0].get<size_t>();
    tensor.end = offsets[1].get<size_t>();
    size_t element = safetensorsElementBytes(tensor.dtype);
    if (!element) throw fail("tensor '" + name + "' has the unknown dtype " + tensor.dtype);
    if (tensor.begin > tensor.end || tensor.end > file.data.size() ||
        tensor.end - tensor.begin != elements * element)
      throw fail("tensor '" + name + "' does not fit its shape in its bytes");
    file.index.emplace(name, std::move(tensor));
  }
  return file;
}

std::vector<float> SafetensorsFile::floats(const std::string &name) const {
  auto it = index.find(name);
  if (it == index.end()) throw Error(path + ": has no tensor '" + name + "'");
  const Tensor &tensor = it->second;
  const uint8_t *bytes = data.data() + tensor.begin;
  size_t size = tensor.end - tensor.begin;
  std::vector<float> values;
  if (tensor.dtype == "F32") {
    values.resize(size / 4);
    std::memcpy(values.data(), bytes, size);
  } else if (tensor.dtype == "F16" || tensor.dtype == "BF16") {
    values.resize(size / 2);
    for (size_t i = 0; i < values.size(); ++i) {
      uint16_t bits = uint16_t(bytes[2 * i] | bytes[2 * i + 1] << 8);
      values[i] = tensor.dtype == "F16" ? widenF16Bits(bits) : widenBf16Bits(bits);
    }
  } else {
    throw Error(path + ": tensor '" + name + "' is " + tensor.dtype +
                "; adapter weights are read as F32, F16 or BF16");
  }
  return values;
}

} // namespace llmc::runtime
