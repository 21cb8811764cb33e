//===- Scheduler.cpp - which tokens of which sequences run next -----------===//
#include "runtime/engine/Scheduler.h"

#include "runtime/core/Error.h"

#include <algorithm>

namespace llmc::runtime {

Scheduler::Scheduler(BlockManager &blocks, const SchedulerLimits &limits)
    : blocks(blocks), stepLimits(limits) {
  if (limits.maxNumSeqs < 1 || limits.maxNumBatchedTokens < limits.maxNumSeqs)
    throw Error("the scheduler needs 1 <= max_num_seqs <= max_num_batched_tokens, got " +
                std::to_string(limits.maxNumSeqs) + " and " +
                std::to_string(limits.maxNumBatchedTokens));
}

void Scheduler::addWaiting(Sequence *sequence) {
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
}

void Scheduler::insertWaiting(Sequence *sequence) {
  auto later = std::upper_bound(waiting.begin(), waiting.end(), sequence,
                                [](const Sequence *a, const Sequence *b) {
                                  return a->arrival != b->arrival ? a->arrival < b->arrival
                                                                  : a->sampleIndex < b->sampleIndex;
                                });
  waiting.insert(later, sequence);
}

void Scheduler::preempt(Sequence *sequence, SchedulerOutput &output) {
  running.erase(std::remove(running.begin(), running.end(), sequence), running.end());
  blocks.release(sequence->blocks);
  ++sequence->numPreemptions;
  ++preemptions;
  addWaiting(sequence);
  output.preempted.push_back(sequence);
}

bool Scheduler::admitNext(int64_t &budget, int64_t &seqCount, SchedulerOutput &output) {
  Sequence *sequence = waiting.front();
  if (seqCount + sequence->seqCount() > stepLimits.maxNumSeqs) return false;
  int64_t cached = blocks.matchPrefix(sequence->blocks, sequence->tokens);
  int64_t count = std::min(sequence->numPending(), budget);
  if (!blocks.appendSlots(sequence->blocks, sequence->tokens, count, output.copies)) {
    blocks.release(sequence->blocks);
    return false;
  }
  blocks.recordPrefixLookup(static_cast<int64_t>(sequence->tokens.size()), cached);
  waiting.pop_front();
  sequence->status = SequenceStatus::Running;
  running.push_back(sequence);
  seqCount += sequence->seqCount();
  output.chunks.push_back({sequence, cached, count});
  output.numTokens += count;
  budget -= count;
  return true;
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput output;
  int64_t budget = stepLimits.maxNumBatchedTokens;
  int64_t seqCount = 0;
  for (const Sequence *sequence : running) seqCount += sequence->seqCount();

  // A sequence is admitted with the budget the running ones leave, so a
  // prefilling sequence runs behind every sequence that was decoding when it
  // arrived: those keep their token per step while its chunks take the rest.
  for (size_t i = 0; i < running.size() && budget > 0;) {
    Sequence *sequence = running[i];
    int64_t count = std::min(sequence->numPending(), budget);
    int64_t start = sequence->numComputed();
    bool preemptedItself = false;
    while (!blocks.appendSlots(sequence->blocks, sequence->tokens, count, output.copies)) {
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
    output.chunks.push_back({sequence, start, count});
    output.numTokens += count;
    budget -= count;
    ++i;
  }

  // A step that had to preempt admits nobody: the blocks are short.
  if (output.preempted.empty())
    while (!waiting.empty() && budget > 0 && admitNext(budget, seqCount, output)) {
    }
  return output;
}

} // namespace llmc::runtime
