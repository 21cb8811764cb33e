//===- Plugin.cpp - the entry point llmc and llmc-opt look up -------------===//
//
// `--load-pass-plugin=LlmcExampleFusion.so` dlopens this library, calls
// mlirGetPassPluginInfo() and then its registration callback, after which
// pipeline text may name the plugin's passes.
//
//===----------------------------------------------------------------------===//
#include "Passes.h"

#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "LlmcExampleFusion", LLVM_VERSION_STRING,
          [] { llmc_example::registerLlmcExampleFusionPasses(); }};
}
