//===- CompileFlags.h - the command line of `llmc compile` ------*- C++ -*-===//
#ifndef LLMC_TOOLS_LLMC_COMPILEFLAGS_H
#define LLMC_TOOLS_LLMC_COMPILEFLAGS_H

#include "llvm/Support/CommandLine.h"

namespace llmc {

/// The options of `llmc compile` (--help lists these; --help-hidden all).
extern llvm::cl::OptionCategory compileCategory;

/// Runs `llmc compile` with the parsed options (those of the "llmc compile
/// options" category, and MLIR's pass manager and printing options); returns
/// the exit code.
int runCompileCommand();

} // namespace llmc

#endif // LLMC_TOOLS_LLMC_COMPILEFLAGS_H
