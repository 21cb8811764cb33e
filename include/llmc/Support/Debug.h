//===- Debug.h - -debug-only for llmc's passes ------------------*- C++ -*-===//
//
// The Debian LLVM build has assertions off, so LLVM's own -debug-only flag is
// not registered and LLVM_DEBUG compiles away. llmc's tools register their own
// `-debug-only=<type>[,<type>...]`; passes print under it with LLMC_DEBUG,
// with DEBUG_TYPE equal to the pass argument.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_SUPPORT_DEBUG_H
#define LLMC_SUPPORT_DEBUG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

namespace llmc {

/// Whether -debug-only named `type`.
bool isDebugEnabled(llvm::StringRef type);

/// Registers the -debug-only command-line option (call before parsing).
void registerDebugOnlyOption();

} // namespace llmc

#define LLMC_DEBUG(...)                                                        \
  do {                                                                         \
    if (::llmc::isDebugEnabled(DEBUG_TYPE)) {                                  \
      __VA_ARGS__;                                                             \
    }                                                                          \
  } while (false)

#endif // LLMC_SUPPORT_DEBUG_H
