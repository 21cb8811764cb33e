//===- PyJson.h - JSON values to and from Python objects --------*- C++ -*-===//
//
// Settings and results cross between Python and the runtime as the runtime's
// JSON types (EngineJson.h names and checks them), converted here directly,
// without text in between.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_PYTHON_PYJSON_H
#define LLMC_RUNTIME_PYTHON_PYJSON_H

#include <nanobind/nanobind.h>
#include <nlohmann/json.hpp>

namespace llmc::python {

/// None, bool, int, float, str, list/tuple and dict (str keys) as JSON;
/// raises TypeError on anything else. Json is nlohmann::json, or
/// nlohmann::ordered_json to keep the dicts' key order (chat templates show it).
template <typename Json> Json toJson(nanobind::handle value);

/// The Python object of a JSON value.
nanobind::object fromJson(const nlohmann::json &value);

} // namespace llmc::python

#endif // LLMC_RUNTIME_PYTHON_PYJSON_H
