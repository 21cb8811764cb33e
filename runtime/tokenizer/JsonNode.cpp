//===- JsonNode.cpp - tokenizer.json fields with their paths --------------===//
#include "runtime/tokenizer/JsonNode.h"

#include "runtime/core/Error.h"

namespace llmc::runtime::tokenizer {

JsonNode JsonNode::child(const nlohmann::json &value, const std::string &suffix) const {
  std::string childPath =
      where.empty() || suffix.front() == '[' ? where + suffix : where + "." + suffix;
  return JsonNode(value, source, std::move(childPath));
}

void JsonNode::fail(const std::string &message) const {
  throw Error(source + ": " + (where.empty() ? "" : where + ": ") + message);
}

bool JsonNode::has(const char *key) const {
  return node->is_object() && node->contains(key) && !(*node)[key].is_null();
}

JsonNode JsonNode::operator[](const char *key) const {
  if (!node->is_object()) fail("expected an object");
  auto found = node->find(key);
  if (found == node->end() || found->is_null()) fail(std::string("'") + key + "' is missing");
  return child(*found, key);
}

JsonNode JsonNode::element(size_t index) const {
  return child((*node)[index], "[" + std::to_string(index) + "]");
}

size_t JsonNode::arraySize() const {
  if (!node->is_array()) fail("expected a list");
  return node->size();
}

std::string JsonNode::string() const {
  if (!node->is_string()) fail("expected a string");
  return node->get<std::string>();
}

bool JsonNode::boolean() const {
  if (!node->is_boolean()) fail("expected true or false");
  return node->get<bool>();
}

int64_t JsonNode::integer(int64_t minimum, int64_t maximum) const {
  if (!node->is_number_integer()) fail("expected an integer");
  bool tooLarge = node->is_number_unsigned() && node->get<uint64_t>() > uint64_t(INT64_MAX);
  int64_t value = tooLarge ? 0 : node->get<int64_t>();
  if (tooLarge || value < minimum || value > maximum)
    fail("expected an integer from " + std::to_string(minimum) + " to " + std::to_string(maximum));
  return value;
}

bool JsonNode::booleanOr(const char *key, bool fallback) const {
  return has(key) ? (*this)[key].boolean() : fallback;
}

std::string JsonNode::type(const char *what, std::initializer_list<const char *> supported) const {
  std::string name = (*this)["type"].string();
  std::string list;
  for (const char *candidate : supported) {
    if (name == candidate) return name;
    list += (list.empty() ? "" : ", ") + std::string(candidate);
  }
  fail(std::string(what) + " type '" + name + "' is not supported (supported: " + list + ")");
}

} // namespace llmc::runtime::tokenizer
