//===- Model.cpp - run the step function over a validated batch -----------===//
#include "runtime/Model.h"

#include "runtime/Error.h"
#ifdef LLMC_HAVE_CUDA
#include "runtime/cuda/CudaModel.h"
#endif

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>

namespace llmc::runtime {
namespace {
/// MemAvailable of /proc/meminfo in bytes: what the kernel can hand out
/// without swapping.
int64_t availableHostMemory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kilobytes = 0;
  std::string unit;
  while (meminfo >> key >> kilobytes >> unit)
    if (key == "MemAvailable:") return kilobytes * 1024;
  throw Error("--memory-fraction needs MemAvailable from /proc/meminfo, which is not there; "
              "give the KV cache size in bytes (--kv-cache-memory)");
}

/// The memory a KV cache is sized against.
struct KvMemory {
  int64_t elementBytes = 4;
  /// Bytes available to the KV cache, measured only when an option asks.
  std::function<int64_t()> availableBytes;
  /// How the summary names that memory ("available after the weights").
  std::string availableWhat;
  /// The fraction of it taken when no option is set; 0: kDefaultKvCacheBytes.
  double defaultFraction = 0;
};

/// The host's memory for a cpu artifact's f32 KV cache.
KvMemory hostMemory(const Artifact &artifact) {
  KvMemory memory;
  memory.availableBytes = [&artifact] {
    return availableHostMemory() - static_cast<int64_t>(artifact.weightsBytes());
  };
  memory.availableWhat = "available after the weights";
  return memory;
}

/// The KV cache's extents under the options' budget, and a line saying so.
KvCacheShape kvCacheShape(const Artifact &artifact, const ModelOptions &options,
                          const KvMemory &memory, std::string &summary) {
  KvCacheShape shape;
  shape.numLayers = artifact.model().numLayers;
  shape.numKvHeads = artifact.model().numKvHeads;
  shape.blockSize = artifact.step().blockSize;
  shape.headDim = artifact.model().headDim;
  shape.elementBytes = memory.elementBytes;
  int64_t bytesPerBlock = shape.bytesPerBlock();

  std::string source;
  if (options.numKvBlocks < 0 || options.kvCacheBytes < 0)
    throw Error("the KV cache size must not be negative");
  if (options.numKvBlocks > 0) {
    shape.numBlocks = options.numKvBlocks;
    source = "as asked";
  } else {
    int64_t budget = Model::kDefaultKvCacheBytes;
    source = "the default budget";
    // A fraction of the available memory: the option's or the default one.
    auto fractionOfAvailable = [&](double fraction, const std::string &what) {
      int64_t available = std::max<int64_t>(memory.availableBytes(), 0);
      budget = static_cast<int64_t>(fraction * double(available));
      source = what + " of " + mebibytes(available) + " " + memory.availableWhat;
    };
    if (options.kvCacheBytes > 0) {
      budget = options.kvCacheBytes;
      source = "--kv-cache-memory";
    } else if (options.memoryFraction != 0) {
      if (!(options.memoryFraction > 0 && options.memoryFraction <= 1))
        throw Error("the memory fraction must be in (0, 1], got " +
                    std::to_string(options.memoryFraction));
      std::string fraction = std::to_string(options.memoryFraction).substr(0, 4);
      fractionOfAvailable(options.memoryFraction, "--memory-fraction " + fraction);
    } else if (memory.defaultFraction != 0) {
      fractionOfAvailable(memory.defaultFraction,
                          "the default " + std::to_string(memory.defaultFraction).substr(0, 4));
    }
    shape.numBlocks = budget / bytesPerBlock;
    if (shape.numBlocks < 1)
      throw Error("a KV cache of " + mebibytes(budget) + " (" + source +
                  ") holds no block: one block takes " + mebibytes(bytesPerBlock));
  }
  summary = "KV cache: " + std::to_string(shape.numBlocks) + " blocks of " +
            std::to_string(shape.blockSize) + " tokens (" +
            std::to_string(shape.numBlocks * shape.blockSize) + " tokens, " +
            mebibytes(shape.numBlocks * bytesPerBlock) + ", " + source + ")";
  return shape;
}

/// The GPU model of a cuda artifact, its KV cache sized by the options
/// against the device memory left free; null for a cpu artifact. Every
/// failure names the artifact and its target.
std::unique_ptr<AcceleratorModel> openAccelerator(const Artifact &artifact,
                                                  const ModelOptions &options,
                                                  std::string &summary) {
  const TargetConfig &target = artifact.target();
  if (!target.isCuda()) return nullptr;
  std::string what =
      artifact.directory() + " targets CUDA (" + target.arch + ", " + target.dtype + "): ";
#ifdef LLMC_HAVE_CUDA
  try {
    return std::make_unique<cuda::CudaModel>(
        artifact, options.maxModelLen, [&](int64_t freeBytes, const std::string &deviceName) {
          KvMemory memory;
          memory.elementBytes = 2; // bf16 and f16
          memory.availableBytes = [freeBytes] { return freeBytes; };
          memory.availableWhat = "free on the " + deviceName + " after the weights and workspace";
          memory.defaultFraction = Model::kDefaultDeviceMemoryFraction;
          return kvCacheShape(artifact, options, memory, summary);
        });
  } catch (const Error &error) {
    throw Error(what + error.what());
  }
#else
  throw Error(what + "this runtime was built without CUDA support");
#endif
}

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

LlmcMemRef6 kvPoolMemref(const KvBlockPool &pool) {
  LlmcMemRef6 memref;
  memref.allocated = memref.aligned = pool.data();
  memref.offset = 0;
  std::vector<int64_t> extents = pool.shape().extents();
  int64_t stride = 1;
  for (int axis = 5; axis >= 0; --axis) {
    memref.sizes[axis] = extents[axis];
    memref.strides[axis] = stride;
    stride *= extents[axis];
  }
  return memref;
}

} // namespace

std::unique_ptr<Model> Model::open(const std::string &artifactDir, const ModelOptions &options) {
  return std::make_unique<Model>(Artifact::load(artifactDir), options);
}

Model::Model(std::unique_ptr<Artifact> artifact, const ModelOptions &options)
    : loaded(std::move(artifact)), cpu(loaded->target().isCuda() ? 1 : options.numThreads),
      workspace(loaded->target().isCuda() ? 0
                                          : static_cast<size_t>(loaded->step().workspaceBytes)),
      accelerator(openAccelerator(*loaded, options, kvSummary)),
      kvCache(accelerator ? KvBlockPool(accelerator->kvShape(), *accelerator)
                          : KvBlockPool(kvCacheShape(*loaded, options, hostMemory(*loaded),
                                                     kvSummary))) {}

void Model::validate(const StepBatch &batch) const {
  const StepConfig &limits = stepConfig();
  int64_t numTokens = batch.numTokens, numSeqs = batch.numSeqs;
  if (numTokens < 1 || numTokens > limits.maxNumBatchedTokens)
    throw Error("step: " + str(numTokens) + " tokens; the model takes 1 to " +
                str(limits.maxNumBatchedTokens) + " (max_num_batched_tokens) per step");
  if (numSeqs < 1 || numSeqs > limits.maxNumSeqs)
    throw Error("step: " + str(numSeqs) + " sequences; the model takes 1 to " +
                str(limits.maxNumSeqs) + " (max_num_seqs) per step");
  if (batch.maxBlocksPerSeq < 1)
    throw Error("step: the block tables must be at least one block wide");
  if (batch.cuSeqlensQ[0] != 0 || batch.cuSeqlensQ[numSeqs] != numTokens)
    throw Error("step: cu_seqlens_q must run from 0 to the token count " + str(numTokens));

  int64_t blockSize = limits.blockSize;
  int64_t numSlots = kvCache.numBlocks() * blockSize;
  for (int64_t seq = 0; seq < numSeqs; ++seq) {
    int64_t queryLen = int64_t(batch.cuSeqlensQ[seq + 1]) - batch.cuSeqlensQ[seq];
    if (queryLen < 1)
      throw Error("step: cu_seqlens_q must increase: sequence " + str(seq) + " has " +
                  str(queryLen) + " query tokens");
    int64_t contextLen = batch.contextLens[seq];
    if (contextLen < queryLen)
      throw Error("step: context_lens[" + str(seq) + "] = " + str(contextLen) +
                  " is less than its " + str(queryLen) + " query tokens");
    int64_t blocksNeeded = blocksFor(contextLen, blockSize);
    if (blocksNeeded > batch.maxBlocksPerSeq)
      throw Error("step: sequence " + str(seq) + " has " + str(contextLen) + " positions, " +
                  str(blocksNeeded) + " blocks, but the block tables are " +
                  str(batch.maxBlocksPerSeq) + " wide");
    const int32_t *table = batch.blockTables + seq * batch.maxBlocksPerSeq;
    for (int64_t i = 0; i < blocksNeeded; ++i)
      if (table[i] < 0 || table[i] >= kvCache.numBlocks())
        throw Error("step: block_tables[" + str(seq) + "][" + str(i) + "] = " + str(table[i]) +
                    " is not a block of the KV cache (it has " + str(kvCache.numBlocks()) + ")");
    int32_t row = batch.logitsIndices[seq];
    if (row < 0 || row >= numTokens)
      throw Error("step: logits_indices[" + str(seq) + "] = " + str(row) +
                  " is not a token row (there are " + str(numTokens) + ")");
  }
  for (int64_t t = 0; t < numTokens; ++t) {
    if (batch.tokens[t] < 0 || batch.tokens[t] >= config().vocabSize)
      throw Error("step: token " + str(batch.tokens[t]) + " at row " + str(t) +
                  " is outside the vocabulary (0 to " + str(config().vocabSize - 1) + ")");
    int64_t maxPositions = config().maxPositions;
    if (batch.positions[t] < 0 || (maxPositions && batch.positions[t] >= maxPositions))
      throw Error("step: positions[" + str(t) + "] = " + str(batch.positions[t]) +
                  (maxPositions ? " is outside the model's 0 to " + str(maxPositions - 1)
                                : std::string(" is negative")));
    if (batch.slotMapping[t] >= numSlots)
      throw Error("step: slot_mapping[" + str(t) + "] = " + str(batch.slotMapping[t]) +
                  " is past the KV cache's " + str(numSlots) + " slots");
  }
}

void Model::step(const StepBatch &batch, float *logits) {
  validate(batch);
  if (accelerator) {
    accelerator->step(batch, logits);
    return;
  }
  int64_t numTokens = batch.numTokens, numSeqs = batch.numSeqs;
  LlmcMemRef1 tokens = memref1(batch.tokens, numTokens);
  LlmcMemRef1 positions = memref1(batch.positions, numTokens);
  LlmcMemRef1 cuSeqlensQ = memref1(batch.cuSeqlensQ, numSeqs + 1);
  LlmcMemRef1 contextLens = memref1(batch.contextLens, numSeqs);
  LlmcMemRef2 blockTables = memref2(batch.blockTables, numSeqs, batch.maxBlocksPerSeq);
  LlmcMemRef1 slotMapping = memref1(batch.slotMapping, numTokens);
  LlmcMemRef1 logitsIndices = memref1(batch.logitsIndices, numSeqs);
  LlmcMemRef6 kvPool = kvPoolMemref(kvCache);
  LlmcMemRef1 weights = memref1(static_cast<const int8_t *>(loaded->weights()),
                                static_cast<int64_t>(loaded->weightsBytes()));
  LlmcMemRef1 scratch = memref1(static_cast<int8_t *>(workspace.data()),
                                static_cast<int64_t>(workspace.bytes()));
  LlmcMemRef2 logitsOut = memref2(logits, numSeqs, config().vocabSize);
  loaded->stepFunction()(cpu.hostApi(), &tokens, &positions, &cuSeqlensQ, &contextLens,
                         &blockTables, &slotMapping, &logitsIndices, &kvPool, &weights, &scratch,
                         &logitsOut);
}

} // namespace llmc::runtime
