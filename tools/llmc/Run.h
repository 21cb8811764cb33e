//===- Run.h - `llmc run` ---------------------------------------*- C++ -*-===//
#ifndef LLMC_TOOLS_LLMC_RUN_H
#define LLMC_TOOLS_LLMC_RUN_H

#include <string>
#include <vector>

namespace llmc {

/// Runs `llmc run` with its arguments (those after "run"); returns the exit
/// code. Errors are one line on stderr, `llmc run: error: ...`.
int runRun(const std::vector<std::string> &args);

} // namespace llmc

#endif // LLMC_TOOLS_LLMC_RUN_H
