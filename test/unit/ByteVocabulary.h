//===- ByteVocabulary.h - a byte-level tokenizer for grammar tests -*- C++ -*-===//
//
// A tokenizer.json whose ids 0..255 are the bytes (GPT-2's byte-level alphabet)
// and whose id 256 is the special token <eos>: grammar masks over it are easy
// to read (token 'a' is byte 'a').
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_TEST_UNIT_BYTEVOCABULARY_H
#define LLMC_TEST_UNIT_BYTEVOCABULARY_H

#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/Utf8.h"

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

namespace llmc::test {

constexpr int32_t kByteEos = 256;

inline std::string byteLevelTokenizerJson() {
  using nlohmann::json;
  json vocab = json::object();
  int next = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) || byte >= 0xAE;
    std::string character;
    runtime::tokenizer::appendUtf8(character, printable ? byte : next++);
    vocab[character] = byte;
  }
  vocab["<eos>"] = kByteEos;
  json byteLevel = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                    {"use_regex", true}};
  json document = {
      {"version", "1.0"},
      {"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}}},
      {"pre_tokenizer", byteLevel},
      {"decoder", byteLevel},
      {"added_tokens",
       {{{"id", kByteEos}, {"content", "<eos>"}, {"single_word", false}, {"lstrip", false},
         {"rstrip", false}, {"normalized", false}, {"special", true}}}}};
  return document.dump();
}

/// The tokenizer and its tokenizer.json text, built once.
struct ByteVocabulary {
  std::string json = byteLevelTokenizerJson();
  std::unique_ptr<runtime::tokenizer::Tokenizer> tokenizer =
      runtime::tokenizer::Tokenizer::fromJson(json, "tokenizer.json");

  static const ByteVocabulary &get() {
    static ByteVocabulary instance;
    return instance;
  }
};

} // namespace llmc::test

#endif // LLMC_TEST_UNIT_BYTEVOCABULARY_H
