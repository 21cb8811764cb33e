//===- CpuExecutor.cpp - steps on the host CPU ----------------------------===//
#include "runtime/cpu/CpuExecutor.h"

#include <vector>

namespace llmc::runtime {
namespace {

/// A rank-1 descriptor over `size` elements; the ABI's arrays are never
/// written through a const input, the cast only fits the C signature.
template <typename T> LlmcMemRef1 memref1(const T *data, int64_t size) {
  void *pointer = const_cast<T *>(data);
  return {pointer, pointer, 0, {size}, {1}};
}

template <typename T> LlmcMemRef2 memref2(const T *data, int64_t rows, int64_t columns) {
  void *pointer = const_cast<T *>(data);
  return {pointer, pointer, 0, {rows, columns}, {columns, 1}};
}

LlmcMemRef6 kvPoolMemref(const KvCacheShape &shape, void *data) {
  LlmcMemRef6 memref;
  memref.allocated = memref.aligned = data;
  memref.offset = 0;
  std::vector<int64_t> extents = shape.extents();
  int64_t stride = 1;
  for (int axis = 5; axis >= 0; --axis) {
    memref.sizes[axis] = extents[axis];
    memref.strides[axis] = stride;
    stride *= extents[axis];
  }
  return memref;
}

} // namespace

CpuExecutor::CpuExecutor(const Artifact &artifact, unsigned numThreads,
                         const KvCacheShape &kvShape)
    : artifact(artifact), cpu(numThreads),
      workspace(static_cast<size_t>(artifact.step().workspaceBytes)), kvStorage(kvShape),
      pool(kvShape, kvStorage) {}

void CpuExecutor::step(const StepBatch &batch, float *logits) {
  int64_t numTokens = batch.numTokens, numSeqs = batch.numSeqs;
  LlmcMemRef1 tokens = memref1(batch.tokens, numTokens);
  LlmcMemRef1 positions = memref1(batch.positions, numTokens);
  LlmcMemRef1 cuSeqlensQ = memref1(batch.cuSeqlensQ, numSeqs + 1);
  LlmcMemRef1 contextLens = memref1(batch.contextLens, numSeqs);
  // A KV cache group's table rows and slots follow the previous group's.
  int64_t numGroups = artifact.step().numKvGroups();
  LlmcMemRef2 blockTables =
      memref2(batch.blockTables, numGroups * numSeqs, batch.maxBlocksPerSeq);
  LlmcMemRef1 slotMapping = memref1(batch.slotMapping, numGroups * numTokens);
  LlmcMemRef1 logitsIndices = memref1(batch.logitsIndices, numSeqs);
  LlmcMemRef6 kvPool = kvPoolMemref(pool.shape(), kvStorage.data());
  LlmcMemRef1 weights = memref1(static_cast<const int8_t *>(artifact.weights()),
                                static_cast<int64_t>(artifact.weightsBytes()));
  LlmcMemRef1 scratch = memref1(static_cast<int8_t *>(workspace.data()),
                                static_cast<int64_t>(workspace.bytes()));
  LlmcMemRef2 logitsOut =
      memref2(logits, numSeqs, stepOutputSize(artifact.model(), artifact.step()));
  cpu.setRunningStep(&batch, &artifact.step().loraSites);
  artifact.stepFunction()(cpu.hostApi(), &tokens, &positions, &cuSeqlensQ, &contextLens,
                          &blockTables, &slotMapping, &logitsIndices, &kvPool, &weights, &scratch,
                          &logitsOut);
  cpu.setRunningStep(nullptr, nullptr);
}

} // namespace llmc::runtime
