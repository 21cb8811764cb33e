//===- Serve.h - `llmc serve` -----------------------------------*- C++ -*-===//
#ifndef LLMC_TOOLS_LLMC_SERVE_H
#define LLMC_TOOLS_LLMC_SERVE_H

#include <string>
#include <vector>

namespace llmc {

/// Runs `llmc serve` with its arguments (those after "serve") until SIGTERM
/// or SIGINT; returns the exit code. Errors are one line on stderr,
/// `llmc serve: error: ...`.
int runServe(const std::vector<std::string> &args);

} // namespace llmc

#endif // LLMC_TOOLS_LLMC_SERVE_H
