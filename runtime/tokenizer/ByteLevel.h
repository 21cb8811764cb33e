//===- ByteLevel.h - GPT-2's byte-to-character alphabet ---------*- C++ -*-===//
//
// Byte-level BPE (GPT-2, Llama-3, Qwen2, SmolLM2) runs on text whose every
// byte was replaced by a printable character: bytes that are printable
// Latin-1 characters stand for themselves, the others for U+0100 onwards in
// byte order. The vocabulary is written in these characters.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENIZER_BYTELEVEL_H
#define LLMC_RUNTIME_TOKENIZER_BYTELEVEL_H

#include <string>
#include <string_view>

namespace llmc::runtime::tokenizer {

/// Appends the characters that stand for `bytes`.
void appendByteLevelCharacters(std::string &out, std::string_view bytes);

/// Appends the bytes that the characters of `token` (well-formed UTF-8) stand
/// for; when one of its characters is outside the alphabet, the token's own
/// bytes instead (as the reference's ByteLevel decoder does).
void appendByteLevelBytes(std::string &out, std::string_view token);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_BYTELEVEL_H
