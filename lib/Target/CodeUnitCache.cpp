//===- CodeUnitCache.cpp - compiled kernels kept between compiles --------===//
#include "llmc/Target/CodeUnitCache.h"

#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

namespace llmc {

std::string CodeUnitCache::defaultDirectory() {
  llvm::SmallString<256> path;
  if (auto root = llvm::sys::Process::GetEnv("LLMC_CACHE_DIR"); root && !root->empty()) {
    path = *root;
  } else if (auto xdg = llvm::sys::Process::GetEnv("XDG_CACHE_HOME"); xdg && !xdg->empty()) {
    path = *xdg;
    llvm::sys::path::append(path, "llmc");
  } else if (auto home = llvm::sys::Process::GetEnv("HOME"); home && !home->empty()) {
    path = *home;
    llvm::sys::path::append(path, ".cache", "llmc");
  } else {
    return "";
  }
  llvm::sys::path::append(path, "kernels");
  return std::string(path);
}

std::string CodeUnitCache::entryPath(llvm::StringRef key) const {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, key + ".o");
  return std::string(path);
}

std::optional<std::string> CodeUnitCache::find(llvm::StringRef key) const {
  if (!enabled()) return std::nullopt;
  std::string path = entryPath(key);
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) return std::nullopt;
  // A truncated ELF file loses its section headers, which sit at its end.
  auto object = llvm::object::ObjectFile::createObjectFile((*buffer)->getMemBufferRef());
  if (!object) {
    llvm::consumeError(object.takeError());
    return std::nullopt;
  }
  if (!(*object)->isRelocatableObject()) return std::nullopt;
  return path;
}

llvm::Expected<std::string> CodeUnitCache::keep(llvm::StringRef key, llvm::StringRef object) const {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return llvm::createStringError(ec, "cannot create %s: %s", directory.c_str(),
                                   ec.message().c_str());
  // Written to a unique scratch file beside the entry and renamed over it.
  std::string path = entryPath(key);
  if (llvm::Error error = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
        os << object;
        return llvm::Error::success();
      }))
    return std::move(error);
  return path;
}

} // namespace llmc
