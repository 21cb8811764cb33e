//===- Model.cpp - a loaded artifact: validated steps on its executor -----===//
#include "runtime/core/Model.h"

#include "runtime/core/Error.h"
#include "runtime/cpu/CpuExecutor.h"
#include "runtime/lora/LoraAdapter.h"
#ifdef LLMC_HAVE_CUDA
#include "runtime/cuda/CudaExecutor.h"
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
  // Grouped by window, a block holds the rows of one group's layers.
  if (!artifact.step().kvGroups.empty()) {
    shape.numLayers = 0;
    for (const KvGroupConfig &group : artifact.step().kvGroups)
      shape.numLayers = std::max<int64_t>(shape.numLayers, group.layers.size());
  }
  shape.numKvHeads = artifact.model().numKvHeads;
  shape.blockSize = artifact.step().blockSize;
  shape.kvRows = artifact.step().kvRows;
  shape.headDim = artifact.model().headDim;
  const std::string &kvDtype = artifact.step().kvDtype;
  shape.elementBytes = kvDtype == "f32" ? 4 : kvDtype == "int8" ? 1 : 2; // else bf16, f16
  if (kvDtype == "int8") shape.rowScaleBytes = 4;
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
  // With KV cache groups a block holds one group's layers: its tokens are
  // not the whole model's.
  size_t numGroups = artifact.step().kvGroups.size();
  std::string holds =
      numGroups ? std::to_string(shape.numLayers) + (shape.numLayers == 1 ? " layer" : " layers") +
                      " a block, " + std::to_string(numGroups) +
                      " groups of layers by attention window"
                : std::to_string(shape.numBlocks * shape.blockSize) + " tokens";
  summary = "KV cache: " + std::to_string(shape.numBlocks) + " blocks of " +
            std::to_string(shape.blockSize) + " tokens (" + holds + ", " +
            mebibytes(shape.numBlocks * bytesPerBlock) + ", " + source + ")";
  return shape;
}

/// The executor of the artifact's target, its KV cache sized by the options
/// against the memory that target has left (host memory after the weights; a
/// GPU's free memory once everything else is allocated). Every failure names
/// the artifact and its target.
std::unique_ptr<StepExecutor> openExecutor(const Artifact &artifact, const ModelOptions &options,
                                           std::string &summary) {
  const TargetConfig &target = artifact.target();
  if (!target.isCuda())
    return std::make_unique<CpuExecutor>(
        artifact, options.numThreads,
        kvCacheShape(artifact, options, hostMemory(artifact), summary));
  std::string what =
      artifact.directory() + " targets CUDA (" + target.arch + ", " + target.dtype + "): ";
#ifdef LLMC_HAVE_CUDA
  try {
    return std::make_unique<cuda::CudaExecutor>(
        artifact, options.maxModelLen, [&](int64_t freeBytes, const std::string &deviceName) {
          KvMemory memory;
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

} // namespace

std::unique_ptr<Model> Model::open(const std::string &artifactDir, const ModelOptions &options) {
  return std::make_unique<Model>(Artifact::load(artifactDir), options);
}

Model::Model(std::unique_ptr<Artifact> artifact, const ModelOptions &options)
    : loaded(std::move(artifact)), executor(openExecutor(*loaded, options, kvSummary)) {}

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
  int64_t numBlocks = kvPool().numBlocks();
  int64_t numSlots = numBlocks * blockSize;
  // Each KV cache group has its own block table rows and slots.
  int64_t numGroups = limits.numKvGroups();
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
    for (int64_t row = seq; row < numGroups * numSeqs; row += numSeqs) {
      const int32_t *table = batch.blockTables + row * batch.maxBlocksPerSeq;
      for (int64_t i = 0; i < blocksNeeded; ++i)
        if (table[i] < 0 || table[i] >= numBlocks)
          throw Error("step: block_tables[" + str(row) + "][" + str(i) + "] = " + str(table[i]) +
                      " is not a block of the KV cache (it has " + str(numBlocks) + ")");
    }
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
  }
  for (int64_t t = 0; t < numGroups * numTokens; ++t)
    if (batch.slotMapping[t] >= numSlots)
      throw Error("step: slot_mapping[" + str(t) + "] = " + str(batch.slotMapping[t]) +
                  " is past the KV cache's " + str(numSlots) + " slots");
  if (batch.loraIndices) validateLora(batch);
}

void Model::validateLora(const StepBatch &batch) const {
  auto numSites = static_cast<int64_t>(stepConfig().loraSites.size());
  if (!numSites)
    throw Error("step: tokens run with LoRA adapters, but the model was compiled without LoRA "
                "sites (llmc compile --enable-lora)");
  for (int64_t i = 0; i < batch.numLoraAdapters; ++i)
    if (!batch.loraAdapters[i] || batch.loraAdapters[i]->numSites() != numSites)
      throw Error("step: LoRA adapter " + str(i) + " was not loaded for this model's " +
                  str(numSites) + " sites");
  for (int64_t t = 0; t < batch.numTokens; ++t)
    if (batch.loraIndices[t] < -1 || batch.loraIndices[t] >= batch.numLoraAdapters)
      throw Error("step: lora_indices[" + str(t) + "] = " + str(batch.loraIndices[t]) +
                  " is not one of the step's " + str(batch.numLoraAdapters) + " adapters");
}

void Model::step(const StepBatch &batch, float *logits) {
  validate(batch);
  executor->step(batch, logits);
}

void Model::stepGreedy(const StepBatch &batch, int32_t *tokens) {
  if (pools())
    throw Error(outputsHiddenStates()
                    ? "the model returns hidden states (an embedding model), not logits to pick "
                      "tokens from"
                    : "the model returns a sequence classifier's logits, not logits to pick "
                      "tokens from");
  validate(batch);
  executor->stepGreedy(batch, config().vocabSize, tokens);
}

} // namespace llmc::runtime
