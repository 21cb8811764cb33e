//===- CodeUnits.h - an LLVM module split into content-named units -*- C++ -*-===//
//
// The step calls each kernel through a task pointer, so the kernels are
// independent functions. Split into code units (one exported or
// address-taken function with the functions only it calls), they compile in
// parallel and are cached by content: each local root is renamed after a hash
// of its unit, callees before callers, so a unit's bitcode names nothing that
// depends on where the kernel sat in its model. The same kernel in another
// model, or in the same model compiled again, is the same unit.
//
//===--------------------------------------------------------------------------===//
#ifndef LLMC_LIB_TARGET_CODEUNITS_H
#define LLMC_LIB_TARGET_CODEUNITS_H

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace llvm {
class Module;
} // namespace llvm

namespace llmc {

/// One separately compiled piece of a module.
struct CodeUnit {
  std::string name;    ///< its root function, as the linked library names it
  std::string key;     ///< hex BLAKE3 of the key prefix and the unit's content
  std::string bitcode; ///< the unit's module; other units' roots are declarations
};

/// Splits `module` into code units, callees' units first. Local roots are
/// renamed in `module` to `<stem>_<key>` (stem: the name without its
/// numeric suffix) and become hidden symbols of their unit; identical units
/// are kept once. `keyPrefix` (what compiles a unit: target, pipeline, LLVM
/// version) starts every key. A module with global variables, aliases or
/// reference cycles between units is one unit, named "module".
std::vector<CodeUnit> splitIntoCodeUnits(llvm::Module &module, llvm::StringRef keyPrefix);

} // namespace llmc

#endif // LLMC_LIB_TARGET_CODEUNITS_H
