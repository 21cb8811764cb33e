//===- Module.cpp - the llmc._native Python module ------------------------===//
//
// The C++ runtime for the llmc Python package: tokenizer, chat templates,
// model steps, the synchronous engine and the serving engine behind
// llmc.LLM. Each call that runs the model or waits for it releases the GIL.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Error.h"
#include "runtime/engine/Engine.h"
#include "runtime/python/Bindings.h"
#include "runtime/structured/Grammar.h"

namespace nb = nanobind;

namespace {
/// Raises llmc.errors.<name>(message); llmc.errors defines the classes in
/// Python, where a class can be both an LlmcRuntimeError and a ValueError.
void raise(const char *name, const char *message) {
  nb::object type = nb::module_::import_("llmc.errors").attr(name);
  PyErr_SetString(type.ptr(), message);
}
} // namespace

NB_MODULE(_native, module) {
  module.doc() = "llmc's C++ runtime (tokenizer, chat templates, model, engines)";
  nb::register_exception_translator([](const std::exception_ptr &error, void *) {
    try {
      std::rethrow_exception(error);
    } catch (const llmc::runtime::RequestError &requestError) {
      raise("LlmcRequestError", requestError.what());
    } catch (const llmc::runtime::structured::GrammarError &grammarError) {
      raise("LlmcRequestError", grammarError.what());
    } catch (const llmc::runtime::Error &runtimeError) {
      raise("LlmcRuntimeError", runtimeError.what());
    }
  });
  llmc::python::bindText(module);
  llmc::python::bindModel(module);
  llmc::python::bindServing(module);
}
