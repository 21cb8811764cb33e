//===- JsonNode.h - tokenizer.json fields with their paths ------*- C++ -*-===//
//
// A JSON value together with where it sits ("tokenizer.json: model.merges[3]"),
// so that every load error names the file and the field at fault.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENIZER_JSONNODE_H
#define LLMC_RUNTIME_TOKENIZER_JSONNODE_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace llmc::runtime::tokenizer {

class JsonNode {
public:
  /// The root of a document; `source` names it in errors (its path).
  JsonNode(const nlohmann::json &value, std::string source)
      : node(&value), source(std::move(source)) {}

  const nlohmann::json &json() const { return *node; }

  /// Whether the object has `key` with a value other than null.
  bool has(const char *key) const;
  /// The value of `key`; fails when it is missing or null.
  JsonNode operator[](const char *key) const;
  /// The element `index` of an array.
  JsonNode element(size_t index) const;
  /// The number of elements of an array; fails when this is not one.
  size_t arraySize() const;

  std::string string() const;
  bool boolean() const;
  int64_t integer(int64_t minimum, int64_t maximum) const;

  /// `key`'s boolean, or `fallback` when it is missing or null.
  bool booleanOr(const char *key, bool fallback) const;

  /// The "type" of a component, checked against the types this runtime
  /// supports; `what` names the component ("pre-tokenizer").
  std::string type(const char *what, std::initializer_list<const char *> supported) const;

  /// Throws Error("<source>: <path>: <message>").
  [[noreturn]] void fail(const std::string &message) const;

private:
  JsonNode(const nlohmann::json &value, std::string source, std::string where)
      : node(&value), source(std::move(source)), where(std::move(where)) {}
  JsonNode child(const nlohmann::json &value, const std::string &suffix) const;

  const nlohmann::json *node;
  std::string source;
  std::string where;
};

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_JSONNODE_H
