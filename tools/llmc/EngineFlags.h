//===- EngineFlags.h - the engine options and argument helpers of run, bench, serve -*- C++ -*-===//
#ifndef LLMC_TOOLS_LLMC_ENGINEFLAGS_H
#define LLMC_TOOLS_LLMC_ENGINEFLAGS_H

#include "runtime/core/Model.h"
#include "runtime/engine/Engine.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace llmc {

/// Lines for a command's --help, one per option consume() takes.
extern const char *const kEngineFlagsUsage;

/// The model's and the engine's settings from the command line.
struct EngineFlags {
  runtime::ModelOptions model;
  runtime::EngineConfig engine;

  /// Takes `--name value` if it is an engine option; false when it is not
  /// one. Throws runtime::Error for a bad value.
  bool consume(const std::string &name, const std::string &value);
};

/// One command-line argument of `llmc run` or `llmc bench`: an option and
/// its value (--name=value or --name value), a flag (no value), or a
/// positional argument (then `name` is the argument itself).
struct Argument {
  std::string name;
  std::string value;
  bool positional = false;
};

/// Reads args[i], and args[i + 1] for an option given as "--name value" (i is
/// left on the last argument read). The names in `flags` take no value.
/// Throws runtime::Error for an option whose value is missing.
Argument readArgument(const std::vector<std::string> &args, size_t &i,
                      std::initializer_list<std::string_view> flags);

/// A whole integer in [minimum, maximum]; throws runtime::Error naming `what`.
int64_t parseInteger(const std::string &text, const std::string &what, int64_t minimum,
                     int64_t maximum = INT64_MAX);
/// A number in [minimum, maximum].
double parseNumber(const std::string &text, const std::string &what, double minimum,
                   double maximum);
/// A size in bytes: 1073741824, 512MiB, 4GiB, 1.5GB (K/M/G with or without
/// "i", B optional: binary multiples for both, as memory is counted).
int64_t parseBytes(const std::string &text, const std::string &what);

/// The whole of a file named on the command line; throws runtime::Error
/// "PATH: cannot open the <what>".
std::string readTextFile(const std::string &path, const std::string &what);

} // namespace llmc

#endif // LLMC_TOOLS_LLMC_ENGINEFLAGS_H
