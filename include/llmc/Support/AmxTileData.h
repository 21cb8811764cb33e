//===- AmxTileData.h - asking Linux for the AMX tile state ------*- C++ -*-===//
//
// Linux gives a process AMX's 8 KiB of tile registers (XTILEDATA) only once
// it asks: until then the first tile instruction faults (SIGILL). Kernels
// built with AMX tiles need the runtime to ask before a step runs; the
// compiler asks too, to know whether the host may use them at all. Header
// only: the runtime does not link the compiler's libraries.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_SUPPORT_AMXTILEDATA_H
#define LLMC_SUPPORT_AMXTILEDATA_H

#include <cerrno>
#include <cstring>
#include <string>

#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace llmc {

/// Asks the kernel for this process's (every thread's) AMX tile state.
/// Returns an empty string when granted (or granted before), else why not.
inline std::string requestAmxTileData() {
#if defined(__linux__) && defined(__x86_64__)
  // From the kernel's uapi (asm/prctl.h, asm/fpu/xstate.h), which glibc does
  // not define.
  constexpr long kArchRequestXcompPermission = 0x1023;
  constexpr long kXfeatureTileData = 18;
  if (::syscall(SYS_arch_prctl, kArchRequestXcompPermission, kXfeatureTileData) == 0) return {};
  return std::string("the kernel refuses this process AMX's tile state (arch_prctl "
                     "ARCH_REQ_XCOMP_PERM: ") +
         std::strerror(errno) + "; Linux grants it from 5.16 on CPUs with AMX)";
#else
  return "AMX tiles need Linux on x86-64";
#endif
}

} // namespace llmc

#endif // LLMC_SUPPORT_AMXTILEDATA_H
