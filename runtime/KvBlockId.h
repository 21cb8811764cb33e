//===- KvBlockId.h - the id of a KV cache block -----------------*- C++ -*-===//
//
// The engine's block manager hands block ids out; the KV cache storage (the
// host KvBlockPool, the CUDA device pool) keeps the block's keys and values
// under the same id.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_KVBLOCKID_H
#define LLMC_RUNTIME_KVBLOCKID_H

#include <cstdint>

namespace llmc::runtime {

using BlockId = int32_t;

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_KVBLOCKID_H
