//===- BenchServe.h - `llmc bench serve` ------------------------*- C++ -*-===//
#ifndef LLMC_TOOLS_LLMC_BENCHSERVE_H
#define LLMC_TOOLS_LLMC_BENCHSERVE_H

#include <string>
#include <vector>

namespace llmc {

/// Runs `llmc bench serve` with its arguments (those after "serve"); returns
/// the exit code. Errors are one line on stderr, `llmc bench serve: error: ...`.
int runBenchServe(const std::vector<std::string> &args);

} // namespace llmc

#endif // LLMC_TOOLS_LLMC_BENCHSERVE_H
