//===- Pattern.h - the patterns of Split and Replace ------------*- C++ -*-===//
#ifndef LLMC_RUNTIME_TOKENIZER_PATTERN_H
#define LLMC_RUNTIME_TOKENIZER_PATTERN_H

#include "runtime/tokenizer/JsonNode.h"
#include "runtime/tokenizer/Regex.h"

#include <string>
#include <string_view>

namespace llmc::runtime::tokenizer {

/// A pattern as tokenizer.json writes it: {"String": "..."} (matched
/// literally) or {"Regex": "..."}.
Regex parsePattern(const JsonNode &pattern);

/// `text` with every match of `pattern` replaced by `content`.
std::string replaceAll(std::string_view text, const Regex &pattern, const std::string &content);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_PATTERN_H
