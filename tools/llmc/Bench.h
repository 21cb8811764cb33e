//===- Bench.h - `llmc bench` -----------------------------------*- C++ -*-===//
#ifndef LLMC_TOOLS_LLMC_BENCH_H
#define LLMC_TOOLS_LLMC_BENCH_H

#include <string>
#include <vector>

namespace llmc {

/// Runs `llmc bench` with its arguments (those after "bench"); returns the
/// exit code. Errors are one line on stderr, `llmc bench: error: ...`.
int runBench(const std::vector<std::string> &args);

} // namespace llmc

#endif // LLMC_TOOLS_LLMC_BENCH_H
