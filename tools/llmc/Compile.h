//===- Compile.h - `llmc compile` -------------------------------*- C++ -*-===//
#ifndef LLMC_TOOLS_LLMC_COMPILE_H
#define LLMC_TOOLS_LLMC_COMPILE_H

#include "llvm/Support/CommandLine.h"

namespace llmc {

/// The `compile` subcommand; its options are registered with it.
extern llvm::cl::SubCommand compileCommand;

/// Runs `llmc compile` with the parsed options; returns the exit code.
int runCompile();

} // namespace llmc

#endif // LLMC_TOOLS_LLMC_COMPILE_H
