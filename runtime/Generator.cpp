//===- Generator.cpp - greedy generation for a batch of prompts -----------===//
#include "runtime/Generator.h"

#include "runtime/Error.h"

#include <algorithm>
#include <chrono>
#include <string>

namespace llmc::runtime {
namespace {
using BlockId = KvBlockPool::BlockId;

/// One prompt's sequence as it grows.
struct Sequence {
  size_t prompt = 0;
  /// The prompt, then the generated tokens.
  std::vector<int32_t> tokens;
  int64_t promptLen = 0;
  /// Positions whose K/V are in the cache; tokens past them go in the next step.
  int64_t numComputed = 0;
  std::vector<BlockId> blockTable;
  std::vector<int32_t> output;
  bool finished = false;

  int64_t pending() const { return static_cast<int64_t>(tokens.size()) - numComputed; }
  bool inPrefill() const { return numComputed < promptLen; }
};

/// Holds the sequences and gives their KV blocks back when a sequence
/// finishes, and when generation ends for any reason (an error included).
class SequenceSet {
public:
  explicit SequenceSet(KvBlockPool &pool) : pool(pool) {}
  ~SequenceSet() {
    for (Sequence &sequence : sequences) release(sequence);
  }
  SequenceSet(const SequenceSet &) = delete;
  SequenceSet &operator=(const SequenceSet &) = delete;

  /// Grows the sequence's block table to cover `numPositions` positions.
  void reserve(Sequence &sequence, int64_t numPositions) {
    while (static_cast<int64_t>(sequence.blockTable.size()) <
           blocksFor(numPositions, pool.blockSize())) {
      std::optional<BlockId> block = pool.allocate();
      if (!block)
        throw Error("the KV cache ran out of blocks: its " + std::to_string(pool.numBlocks()) +
                    " blocks of " + std::to_string(pool.blockSize()) +
                    " positions cannot hold this batch (prompt " +
                    std::to_string(sequence.prompt) + " reached position " +
                    std::to_string(numPositions - 1) +
                    "); give the cache more blocks or run fewer prompts at once");
      sequence.blockTable.push_back(*block);
    }
  }

  void release(Sequence &sequence) {
    for (BlockId block : sequence.blockTable) pool.free(block);
    sequence.blockTable.clear();
  }

  std::vector<Sequence> sequences;

private:
  KvBlockPool &pool;
};

/// The arrays of one step, filled a sequence at a time.
class StepArrays {
public:
  StepArrays() { arrays.cuSeqlensQ.push_back(0); }

  /// Adds `count` of the sequence's tokens from position `begin` on; the
  /// logits row is the last of them.
  void add(size_t sequenceIndex, const Sequence &sequence, int64_t begin, int64_t count,
           int64_t blockSize) {
    for (int64_t position = begin; position < begin + count; ++position) {
      arrays.tokens.push_back(sequence.tokens[position]);
      arrays.positions.push_back(static_cast<int32_t>(position));
      arrays.slotMapping.push_back(slotOf(sequence.blockTable, position, blockSize));
    }
    arrays.cuSeqlensQ.push_back(static_cast<int32_t>(arrays.tokens.size()));
    arrays.contextLens.push_back(static_cast<int32_t>(begin + count));
    arrays.logitsIndices.push_back(static_cast<int32_t>(arrays.tokens.size() - 1));
    tables.push_back(&sequence.blockTable);
    members.push_back(sequenceIndex);
  }

  /// The batch over these arrays; block tables are padded with block 0, which
  /// the step never reads (it reads a sequence's first context_len positions).
  StepBatch batch() {
    size_t width = 1;
    for (const auto *table : tables) width = std::max(width, table->size());
    arrays.blockTables.assign(tables.size() * width, 0);
    for (size_t row = 0; row < tables.size(); ++row)
      std::copy(tables[row]->begin(), tables[row]->end(), arrays.blockTables.begin() + row * width);
    arrays.maxBlocksPerSeq = static_cast<int64_t>(width);
    return arrays.view();
  }

  int64_t numTokens() const { return static_cast<int64_t>(arrays.tokens.size()); }
  int64_t numSeqs() const { return static_cast<int64_t>(members.size()); }
  /// The index (into SequenceSet::sequences) of the step's n-th sequence.
  size_t member(size_t n) const { return members[n]; }
  /// The context length of the step's n-th sequence after the step.
  int64_t contextLen(size_t n) const { return arrays.contextLens[n]; }

private:
  StepBatchArrays arrays;
  std::vector<const std::vector<BlockId> *> tables;
  std::vector<size_t> members;
};

void checkPrompts(const std::vector<std::vector<int32_t>> &prompts, int64_t vocabSize) {
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) throw Error("prompt " + std::to_string(i) + " is empty");
    for (int32_t token : prompts[i])
      if (token < 0 || token >= vocabSize)
        throw Error("prompt " + std::to_string(i) + ": token " + std::to_string(token) +
                    " is outside the vocabulary (0 to " + std::to_string(vocabSize - 1) + ")");
  }
}
} // namespace

std::vector<std::vector<int32_t>>
Generator::generate(const std::vector<std::vector<int32_t>> &prompts,
                    const GenerateOptions &options) {
  if (options.maxTokens < 0) throw Error("max_tokens must not be negative");
  int64_t vocabSize = model.config().vocabSize;
  checkPrompts(prompts, vocabSize);
  const StepConfig &limits = model.stepConfig();
  int64_t blockSize = model.kvPool().blockSize();
  lastStats = GenerateStats();

  SequenceSet set(model.kvPool());
  for (size_t i = 0; i < prompts.size(); ++i) {
    Sequence sequence;
    sequence.prompt = i;
    sequence.tokens = prompts[i];
    sequence.promptLen = static_cast<int64_t>(prompts[i].size());
    sequence.finished = options.maxTokens == 0;
    set.sequences.push_back(std::move(sequence));
  }
  std::vector<Sequence> &sequences = set.sequences;
  std::vector<float> logits;

  for (;;) {
    // Every prompt is prefilled before any decoding starts: a step carries
    // either prompt tokens or one generated token per sequence.
    bool prefill = std::any_of(sequences.begin(), sequences.end(), [](const Sequence &s) {
      return !s.finished && s.inPrefill();
    });
    auto start = std::chrono::steady_clock::now();
    StepArrays arrays;
    for (size_t i = 0; i < sequences.size(); ++i) {
      Sequence &sequence = sequences[i];
      if (sequence.finished || sequence.inPrefill() != prefill) continue;
      int64_t budget = limits.maxNumBatchedTokens - arrays.numTokens();
      if (budget == 0 || arrays.numSeqs() == limits.maxNumSeqs) break;
      int64_t count = std::min(sequence.pending(), budget);
      set.reserve(sequence, sequence.numComputed + count);
      arrays.add(i, sequence, sequence.numComputed, count, blockSize);
    }
    if (arrays.numSeqs() == 0) break;

    logits.resize(static_cast<size_t>(arrays.numSeqs() * vocabSize));
    model.step(arrays.batch(), logits.data());

    for (size_t n = 0; n < static_cast<size_t>(arrays.numSeqs()); ++n) {
      Sequence &sequence = sequences[arrays.member(n)];
      sequence.numComputed = arrays.contextLen(n);
      // A prompt chunk that is not the prompt's last predicts nothing yet.
      if (sequence.pending() > 0) continue;
      const float *row = logits.data() + n * vocabSize;
      if (options.onLogits)
        options.onLogits({lastStats.numSteps, sequence.prompt, sequence.numComputed - 1, row});
      int32_t token = argmax(row, vocabSize);
      sequence.tokens.push_back(token);
      sequence.output.push_back(token);
      if (options.onToken) options.onToken(sequence.prompt, token);
      bool stopped = std::find(options.stopTokenIds.begin(), options.stopTokenIds.end(), token) !=
                     options.stopTokenIds.end();
      if (stopped || static_cast<int64_t>(sequence.output.size()) == options.maxTokens) {
        sequence.finished = true;
        set.release(sequence);
      }
    }

    std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
    (prefill ? lastStats.prefillTokens : lastStats.decodeTokens) += arrays.numTokens();
    (prefill ? lastStats.prefillSeconds : lastStats.decodeSeconds) += seconds.count();
    ++lastStats.numSteps;
  }

  std::vector<std::vector<int32_t>> outputs;
  outputs.reserve(sequences.size());
  for (Sequence &sequence : sequences) outputs.push_back(std::move(sequence.output));
  return outputs;
}

} // namespace llmc::runtime
