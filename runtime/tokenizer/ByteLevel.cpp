//===- ByteLevel.cpp - GPT-2's byte-to-character alphabet -----------------===//
#include "runtime/tokenizer/ByteLevel.h"

#include "runtime/tokenizer/Utf8.h"

#include <array>
#include <cstdint>

namespace llmc::runtime::tokenizer {
namespace {

/// The alphabet both ways: each byte's character (as UTF-8), and each
/// character's byte (-1 for characters outside the alphabet).
struct Alphabet {
  static constexpr char32_t kLastCharacter = 0x100 + 67; // 68 bytes are not printable

  Alphabet() {
    characterByte.fill(-1);
    char32_t next = 0x100;
    for (int byte = 0; byte < 256; ++byte) {
      bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                       (byte >= 0xAE && byte <= 0xFF);
      char32_t character = printable ? static_cast<char32_t>(byte) : next++;
      appendUtf8(byteCharacter[byte], character);
      characterByte[character] = static_cast<int16_t>(byte);
    }
  }

  std::array<std::string, 256> byteCharacter;
  std::array<int16_t, kLastCharacter + 1> characterByte;
};

const Alphabet &alphabet() {
  static const Alphabet instance;
  return instance;
}
} // namespace

void appendByteLevelCharacters(std::string &out, std::string_view bytes) {
  const Alphabet &table = alphabet();
  for (char byte : bytes) out += table.byteCharacter[static_cast<unsigned char>(byte)];
}

void appendByteLevelBytes(std::string &out, std::string_view token) {
  const Alphabet &table = alphabet();
  size_t start = out.size();
  for (size_t offset = 0; offset < token.size();) {
    char32_t character = decodeUtf8(token, offset);
    if (character > Alphabet::kLastCharacter || table.characterByte[character] < 0) {
      out.resize(start);
      out.append(token);
      return;
    }
    out += static_cast<char>(table.characterByte[character]);
  }
}

} // namespace llmc::runtime::tokenizer
