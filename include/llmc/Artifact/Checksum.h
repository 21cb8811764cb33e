//===- Checksum.h - the artifact's content checksum --------------*- C++ -*-===//
//
// The checksum manifest.json records for weights and kernels, shared by the
// writer (llmc compile) and the loader (runtime) so that they cannot drift:
// FNV-1a over little-endian 64-bit words (the tail bytes one by one), which
// is fast enough to verify a multi-gigabyte weights.bin at load time.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_ARTIFACT_CHECKSUM_H
#define LLMC_ARTIFACT_CHECKSUM_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace llmc {

inline uint64_t checksum64(const void *data, size_t size) {
  constexpr uint64_t kPrime = 0x100000001b3ULL;
  uint64_t hash = 0xcbf29ce484222325ULL;
  const auto *bytes = static_cast<const unsigned char *>(data);
  size_t words = size / 8;
  for (size_t i = 0; i < words; ++i) {
    uint64_t word;
    std::memcpy(&word, bytes + 8 * i, 8);
    hash = (hash ^ word) * kPrime;
  }
  for (size_t i = 8 * words; i < size; ++i)
    hash = (hash ^ bytes[i]) * kPrime;
  return hash;
}

/// The form manifest.json stores: 16 lowercase hex digits.
inline std::string checksumHex(uint64_t checksum) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(checksum));
  return text;
}

} // namespace llmc

#endif // LLMC_ARTIFACT_CHECKSUM_H
