//===- Scheduler.cpp - which tokens of which sequences run next -----------===//
#include "runtime/engine/Scheduler.h"

#include "runtime/core/Error.h"

#include <algorithm>

namespace llmc::runtime {

Scheduler::Scheduler(BlockManager &blocks, const SchedulerLimits &limits, const SwapPolicy &swap,
                     SchedulingPolicy policy)
    : blocks(blocks, limits.groupWindows()), stepLimits(limits), schedulingPolicy(policy),
      swap(swap) {
  if (limits.maxNumSeqs < 1 || limits.maxNumBatchedTokens < limits.maxNumSeqs)
    throw Error("the scheduler needs 1 <= max_num_seqs <= max_num_batched_tokens, got " +
                std::to_string(limits.maxNumSeqs) + " and " +
                std::to_string(limits.maxNumBatchedTokens));
  if (stepLimits.maxStepRows == 0) stepLimits.maxStepRows = limits.maxNumSeqs;
  if (stepLimits.maxStepRows < limits.maxNumSeqs)
    throw Error("a step must have rows for max_num_seqs sequences");
  if (swap.numSlots < 0) throw Error("the swap space must not be negative");
  // Hand out low slots first: the back of the list is taken next.
  for (int64_t slot = swap.numSlots - 1; slot >= 0; --slot) freeSwapSlots.push_back(slot);
}

void Scheduler::addWaiting(Sequence *sequence) {
  if (sequence->blocks.groups.empty()) sequence->blocks = blocks.emptySequence();
  sequence->status = SequenceStatus::Waiting;
  insertWaiting(sequence);
}

void Scheduler::addForked(Sequence *child, const Sequence *parent) {
  auto at = std::find(running.begin(), running.end(), parent);
  if (at == running.end()) throw Error("a forked sequence's parent must be running");
  child->status = SequenceStatus::Running;
  running.insert(at + 1, child);
}

void Scheduler::remove(Sequence *sequence) {
  running.erase(std::remove(running.begin(), running.end(), sequence), running.end());
  waiting.erase(std::remove(waiting.begin(), waiting.end(), sequence), waiting.end());
  blocks.release(sequence->blocks);
  releaseSwapSlots(*sequence);
}

void Scheduler::releaseSwapSlots(Sequence &sequence) {
  if (!sequence.swapped) return;
  for (const auto &group : sequence.swapped->groups)
    freeSwapSlots.insert(freeSwapSlots.end(), group.slots.begin(), group.slots.end());
  sequence.swapped.reset();
}

bool Scheduler::runsBefore(const Sequence *a, const Sequence *b) const {
  if (schedulingPolicy == SchedulingPolicy::Priority && a->priority != b->priority)
    return a->priority < b->priority;
  return a->arrival != b->arrival ? a->arrival < b->arrival : a->sampleIndex < b->sampleIndex;
}

void Scheduler::insertWaiting(Sequence *sequence) {
  auto later = std::upper_bound(
      waiting.begin(), waiting.end(), sequence,
      [this](const Sequence *a, const Sequence *b) { return runsBefore(a, b); });
  waiting.insert(later, sequence);
}

bool Scheduler::swapPays(const Sequence &sequence) const {
  int64_t numBlocks = sequence.blocks.numHeld();
  if (numBlocks == 0 || numBlocks > static_cast<int64_t>(freeSwapSlots.size())) return false;
  return double(numBlocks) * swap.blockRoundTripSeconds <
         double(sequence.numComputed()) * recomputeSecondsPerToken;
}

void Scheduler::preempt(Sequence *sequence, SchedulerOutput &output) {
  running.erase(std::remove(running.begin(), running.end(), sequence), running.end());
  // A preempted sequence was not scheduled in this step yet: every token it
  // counts as computed has its K/V in its blocks.
  if (swapPays(*sequence)) {
    Sequence::SwappedBlocks saved;
    saved.numTokens = sequence->blocks.numTokens();
    for (const SequenceBlocks &group : sequence->blocks.groups) {
      Sequence::SwappedBlocks::Group &savedGroup = saved.groups.emplace_back();
      savedGroup.fullBlockHashes = group.fullBlockHashes;
      savedGroup.numReleased = group.numReleased;
      for (auto block = group.table.begin() + group.numReleased; block != group.table.end();
           ++block) {
        savedGroup.slots.push_back(freeSwapSlots.back());
        freeSwapSlots.pop_back();
        output.swapOuts.push_back({*block, savedGroup.slots.back()});
      }
    }
    sequence->swapped = std::move(saved);
    ++swapPreemptions;
  }
  blocks.release(sequence->blocks);
  ++sequence->numPreemptions;
  ++preemptions;
  addWaiting(sequence);
  output.preempted.push_back(sequence);
}

bool Scheduler::takeSwappedBlocks(Sequence &sequence) {
  Sequence::SwappedBlocks &saved = *sequence.swapped;
  std::vector<int64_t> numBlocks, numReleased;
  for (const auto &group : saved.groups) {
    numBlocks.push_back(static_cast<int64_t>(group.slots.size()));
    numReleased.push_back(group.numReleased);
  }
  if (!blocks.allocateBlocks(sequence.blocks, numBlocks, numReleased)) return false;
  for (size_t group = 0; group < saved.groups.size(); ++group) {
    sequence.blocks.groups[group].numTokens = saved.numTokens;
    sequence.blocks.groups[group].fullBlockHashes = saved.groups[group].fullBlockHashes;
  }
  return true;
}

ScheduledChunk Scheduler::chunkOf(Sequence *sequence, int64_t count, int64_t spareRows) {
  ScheduledChunk chunk{sequence, sequence->numComputed(), count};
  if (!sequence->needsPromptRows()) return chunk;
  int64_t reported = sequence->promptRowsReported;
  if (chunk.start < reported) {
    // Recomputing after a preemption: the rows below were reported already.
    chunk.numTokens = std::min(count, reported - chunk.start);
    return chunk;
  }
  chunk.rowPerToken = true;
  chunk.numTokens =
      std::min({count, 1 + std::max<int64_t>(spareRows, 0), sequence->promptLen - chunk.start});
  return chunk;
}

bool Scheduler::admitNext(int64_t &budget, int64_t &seqCount, int64_t &extraRows,
                          SchedulerOutput &output) {
  Sequence *sequence = waiting.front();
  if (seqCount + sequence->seqCount() > stepLimits.maxNumSeqs ||
      seqCount + extraRows + sequence->seqCount() > stepLimits.maxStepRows)
    return false;
  bool swapped = sequence->swapped.has_value();
  int64_t cached = 0;
  if (swapped) {
    if (!takeSwappedBlocks(*sequence)) return false;
    cached = sequence->numComputed();
  } else {
    // Prompt logprobs need the rows of the whole prompt, cached or not.
    if (!sequence->needsPromptRows())
      cached = blocks.matchPrefix(sequence->blocks, sequence->tokens);
    // A long cached prefix keeps only its window.
    blocks.releaseOutOfWindow(sequence->blocks);
  }
  ScheduledChunk chunk =
      chunkOf(sequence, std::min(sequence->numPending(), budget),
              stepLimits.maxStepRows - seqCount - extraRows - sequence->seqCount());
  int64_t count = chunk.numTokens;
  if (!blocks.appendSlots(sequence->blocks, sequence->tokens, count, output.copies)) {
    blocks.release(sequence->blocks);
    return false;
  }
  if (swapped) {
    for (size_t group = 0; group < sequence->swapped->groups.size(); ++group) {
      const std::vector<int64_t> &slots = sequence->swapped->groups[group].slots;
      const SequenceBlocks &taken = sequence->blocks.groups[group];
      for (size_t i = 0; i < slots.size(); ++i)
        output.swapIns.push_back({taken.table[taken.numReleased + i], slots[i]});
    }
    // The engine copies the slots in before anything could take them again:
    // no step both preempts and admits.
    releaseSwapSlots(*sequence);
  } else if (!sequence->needsPromptRows()) {
    blocks.recordPrefixLookup(static_cast<int64_t>(sequence->tokens.size()), cached);
  }
  waiting.pop_front();
  sequence->status = SequenceStatus::Running;
  // First come, first served appends: admission order is the running order.
  auto at = schedulingPolicy == SchedulingPolicy::Priority
                ? std::upper_bound(running.begin(), running.end(), sequence,
                                   [this](const Sequence *a, const Sequence *b) {
                                     return runsBefore(a, b);
                                   })
                : running.end();
  running.insert(at, sequence);
  seqCount += sequence->seqCount();
  extraRows += chunk.numRows() - 1;
  output.chunks.push_back(chunk);
  output.numTokens += count;
  budget -= count;
  return true;
}

int64_t Scheduler::draftTokensToRun(size_t index, int64_t budget, int64_t rows) const {
  const Sequence &sequence = *running[index];
  if (sequence.draft.empty() || sequence.numPending() != 1) return 0;
  int64_t later = static_cast<int64_t>(running.size() - index - 1);
  int64_t numDraft = std::min({static_cast<int64_t>(sequence.draft.size()), budget - 1 - later,
                               stepLimits.maxStepRows - rows});
  while (numDraft > 0 &&
         blocks.blocksNeeded(sequence.blocks, 1 + numDraft) > blocks.numAvailable() - later)
    --numDraft;
  return std::max<int64_t>(numDraft, 0);
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput output;
  int64_t budget = stepLimits.maxNumBatchedTokens;
  int64_t seqCount = 0;
  for (const Sequence *sequence : running) seqCount += sequence->seqCount();
  // The step's rows taken by draft tokens and prompt rows beyond the one
  // every sequence counted takes.
  int64_t extraRows = 0;

  // A sequence is admitted with the budget the running ones leave, so a
  // prefilling sequence runs behind every sequence that was decoding when it
  // arrived: those keep their token per step while its chunks take the rest.
  for (size_t i = 0; i < running.size() && budget > 0;) {
    Sequence *sequence = running[i];
    blocks.releaseOutOfWindow(sequence->blocks);
    ScheduledChunk chunk = chunkOf(sequence, std::min(sequence->numPending(), budget),
                                   stepLimits.maxStepRows - seqCount - extraRows);
    int64_t count = chunk.numTokens;
    // A draft only takes blocks counted as available: it never preempts.
    int64_t numDraft = draftTokensToRun(i, budget, seqCount + extraRows);
    if (numDraft > 0 && !blocks.appendSlots(sequence->blocks, sequence->tokens,
                                            count + numDraft, output.copies, numDraft))
      throw Error("the scheduler lost the blocks it counted for a draft");
    bool preemptedItself = false;
    while (numDraft == 0 &&
           !blocks.appendSlots(sequence->blocks, sequence->tokens, count, output.copies)) {
      Sequence *victim = running.back();
      seqCount -= victim->seqCount();
      preempt(victim, output);
      if (victim == sequence) {
        preemptedItself = true;
        break;
      }
    }
    // Only the newest sequence preempts itself: nothing runs behind it.
    if (preemptedItself) break;
    chunk.numTokens += numDraft;
    chunk.numDraft = numDraft;
    output.chunks.push_back(chunk);
    output.numTokens += chunk.numTokens;
    budget -= chunk.numTokens;
    extraRows += chunk.numRows() - 1;
    ++i;
  }

  // A step that had to preempt admits nobody: the blocks are short.
  if (output.preempted.empty())
    while (!waiting.empty() && budget > 0 && admitNext(budget, seqCount, extraRows, output)) {
    }
  return output;
}

} // namespace llmc::runtime
