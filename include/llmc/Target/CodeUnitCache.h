//===- CodeUnitCache.h - compiled kernels kept between compiles -*- C++ -*-===//
//
// The objects of compiled code units (lib/Target/CodeUnits.h), one file per
// key in a directory, so that a kernel compiled once (in this model or
// another with the same shapes) is not compiled again: like ccache, or
// Triton's kernel cache. The key covers everything the object depends on (the
// llmc build among them), so an entry never goes stale; deleting the
// directory is always safe.
//
//===--------------------------------------------------------------------------===//
#ifndef LLMC_TARGET_CODEUNITCACHE_H
#define LLMC_TARGET_CODEUNITCACHE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>

namespace llmc {

/// Entries are written to a scratch file and renamed into place, so compiles
/// running at once share a directory and none reads half an object. An entry
/// that is not a whole relocatable object is not found (and is replaced when
/// the unit is kept again).
class CodeUnitCache {
public:
  /// `directory` empty: a cache that finds nothing and keeps nothing.
  explicit CodeUnitCache(std::string directory) : directory(std::move(directory)) {}

  /// $LLMC_CACHE_DIR/kernels, else $XDG_CACHE_HOME/llmc/kernels, else
  /// $HOME/.cache/llmc/kernels (the compiled models' cache root, beside
  /// them); empty when none of these variables is set.
  static std::string defaultDirectory();

  bool enabled() const { return !directory.empty(); }

  /// The object file kept under `key`, when there is a whole one.
  std::optional<std::string> find(llvm::StringRef key) const;

  /// Keeps `object` under `key` (creating the directory); returns the
  /// file's path.
  llvm::Expected<std::string> keep(llvm::StringRef key, llvm::StringRef object) const;

private:
  std::string entryPath(llvm::StringRef key) const;

  std::string directory;
};

} // namespace llmc

#endif // LLMC_TARGET_CODEUNITCACHE_H
