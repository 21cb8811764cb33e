//===- KvBlockId.h - the id of a KV cache block -----------------*- C++ -*-===//
//
// The engine's block manager hands block ids out; KvBlockPool finds a block's
// keys and values by the same id, in host memory or a GPU's.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_CORE_KVBLOCKID_H
#define LLMC_RUNTIME_CORE_KVBLOCKID_H

#include <cstdint>

namespace llmc::runtime {

using BlockId = int32_t;

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_CORE_KVBLOCKID_H
