//===- Bindings.h - the parts of the llmc._native module --------*- C++ -*-===//
//
// Each file binds one concept; Module.cpp calls them in order. Errors: the
// runtime's Error becomes llmc.errors.LlmcRuntimeError, its RequestError
// (the caller's fault) llmc.errors.LlmcRequestError, a ValueError too.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_PYTHON_BINDINGS_H
#define LLMC_RUNTIME_PYTHON_BINDINGS_H

#include <nanobind/nanobind.h>

namespace llmc::python {

/// Tokenizer, DecodeStream, ChatTemplate.
void bindText(nanobind::module_ &module);
/// Model (one step of a ragged, paged batch) and Engine (synchronous).
void bindModel(nanobind::module_ &module);
/// LLMEngine: the serving engine on its own threads, for llmc.LLM and AsyncLLM.
void bindServing(nanobind::module_ &module);

} // namespace llmc::python

#endif // LLMC_RUNTIME_PYTHON_BINDINGS_H
