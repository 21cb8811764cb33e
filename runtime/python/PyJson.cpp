//===- PyJson.cpp - JSON values to and from Python objects ----------------===//
#include "runtime/python/PyJson.h"

#include <nanobind/stl/string.h>

#include <string>

namespace nb = nanobind;

namespace llmc::python {

template <typename Json> Json toJson(nb::handle value) {
  if (value.is_none()) return nullptr;
  // bool before int: Python's bool is an int.
  if (nb::isinstance<nb::bool_>(value)) return nb::cast<bool>(value);
  if (nb::isinstance<nb::int_>(value)) {
    try {
      return nb::cast<int64_t>(value);
    } catch (const nb::cast_error &) {
      throw nb::type_error("an integer is out of the 64-bit range");
    }
  }
  if (nb::isinstance<nb::float_>(value)) return nb::cast<double>(value);
  if (nb::isinstance<nb::str>(value)) return nb::cast<std::string>(value);
  if (nb::isinstance<nb::list>(value) || nb::isinstance<nb::tuple>(value)) {
    Json array = Json::array();
    for (nb::handle item : value) array.push_back(toJson<Json>(item));
    return array;
  }
  if (nb::isinstance<nb::dict>(value)) {
    Json object = Json::object();
    for (auto [key, item] : nb::borrow<nb::dict>(value)) {
      if (!nb::isinstance<nb::str>(key))
        throw nb::type_error("dictionary keys must be strings");
      object[nb::cast<std::string>(key)] = toJson<Json>(item);
    }
    return object;
  }
  throw nb::type_error(("cannot pass a " + std::string(nb::inst_name(value).c_str()) +
                        " to the runtime: use None, bool, int, float, str, list or dict")
                           .c_str());
}

template nlohmann::json toJson<nlohmann::json>(nb::handle);
template nlohmann::ordered_json toJson<nlohmann::ordered_json>(nb::handle);

nb::object fromJson(const nlohmann::json &value) {
  switch (value.type()) {
  case nlohmann::json::value_t::null:
  case nlohmann::json::value_t::discarded:
    return nb::none();
  case nlohmann::json::value_t::boolean:
    return nb::bool_(value.get<bool>());
  case nlohmann::json::value_t::number_integer:
    return nb::int_(value.get<int64_t>());
  case nlohmann::json::value_t::number_unsigned:
    return nb::int_(value.get<uint64_t>());
  case nlohmann::json::value_t::number_float:
    return nb::float_(value.get<double>());
  case nlohmann::json::value_t::string:
    return nb::str(value.get_ref<const std::string &>().c_str(),
                   value.get_ref<const std::string &>().size());
  case nlohmann::json::value_t::array: {
    nb::list list;
    for (const nlohmann::json &item : value) list.append(fromJson(item));
    return list;
  }
  case nlohmann::json::value_t::object: {
    nb::dict dict;
    for (auto it = value.begin(); it != value.end(); ++it)
      dict[nb::str(it.key().c_str(), it.key().size())] = fromJson(it.value());
    return dict;
  }
  case nlohmann::json::value_t::binary:
    break;
  }
  throw nb::type_error("binary JSON values have no Python form");
}

} // namespace llmc::python
