//===- Debug.cpp - -debug-only for llmc's passes --------------------------===//
#include "llmc/Support/Debug.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"

namespace llmc {

namespace {
llvm::StringSet<> &enabledTypes() {
  static llvm::StringSet<> types;
  return types;
}
} // namespace

bool isDebugEnabled(llvm::StringRef type) {
  return !enabledTypes().empty() && enabledTypes().contains(type);
}

void registerDebugOnlyOption() {
  static llvm::cl::list<std::string> debugOnly(
      "debug-only",
      llvm::cl::desc("Print debug output of the given passes (comma-separated pass arguments)"),
      llvm::cl::CommaSeparated, llvm::cl::value_desc("pass"),
      llvm::cl::callback([](const std::string &type) { enabledTypes().insert(type); }));
}

} // namespace llmc
