//===- Error.h - the runtime's error type -----------------------*- C++ -*-===//
#ifndef LLMC_RUNTIME_ERROR_H
#define LLMC_RUNTIME_ERROR_H

#include <stdexcept>

namespace llmc::runtime {

/// Every failure the runtime reports: a bad artifact, a batch that breaks the
/// step's limits, a KV cache that ran out of blocks. what() is one line meant
/// for the user, naming the file or argument at fault.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ERROR_H
