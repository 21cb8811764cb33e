//===- Scheduler.h - which tokens of which sequences run next ---*- C++ -*-===//
//
// Iteration-level (continuous) batching, first come first served, as vLLM's
// scheduler does it. Each schedule() builds one step under two limits, a
// token budget (max_num_batched_tokens) and max_num_seqs:
//
// 1. Running sequences, in admission order. A decoding sequence runs its
//    one new token, and the tokens of its draft (speculative decoding) that
//    fit in what the step has to spare: budget, sequences and blocks beyond
//    one token and one block for each running sequence after it, and step
//    rows beyond max_num_seqs (a draft never preempts, and each of its
//    tokens is a row of the step, which computes it as a sequence); a
//    prefilling one (a long prompt, or a recompute after
//    preemption) runs as much as the budget leaves (chunked prefill), and
//    one whose prompt logprobs are asked for runs a row per prompt token,
//    as many as the step's rows beyond max_num_seqs allow. As a
//    sequence is admitted only with the budget the running ones leave, the
//    sequences that were decoding when a long prompt arrived are ahead of
//    it and keep their token per step: the prompt never stalls them.
// 2. When a running sequence needs a block and none is available, the newest
//    running sequence is preempted: its blocks are freed and it goes back to
//    the waiting queue (its sampler state stays, so its output does not
//    change). If it is the sequence itself, it waits. With swap space, a
//    preempted sequence's blocks are swapped out to host memory when that
//    costs less than recomputing its tokens (and the space has room), and
//    swapped back in when it is admitted again; otherwise it is recomputed
//    from its tokens.
// Under the priority policy (vLLM's --scheduling-policy priority) "oldest"
// reads "of the lowest priority value, then oldest": the running sequences
// are kept in that order, so the one preempted is the lowest priority's
// newest, and the waiting queue is admitted in that order.
//
// 3. Then waiting sequences, oldest first, while the budget, max_num_seqs
//    and the blocks allow (none is admitted in a step that preempted). A
//    new sequence first takes the cached blocks of its prefix (unless it
//    reports prompt logprobs, which need the prefix's rows); a swapped one
//    takes fresh blocks for its swapped ones.
//
// The scheduler owns no sequence; the engine does, and tells it when one is
// added, forked or ends.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_SCHEDULER_H
#define LLMC_RUNTIME_ENGINE_SCHEDULER_H

#include "runtime/engine/KvCacheCoordinator.h"
#include "runtime/engine/Sequence.h"

#include <cstdint>
#include <deque>
#include <vector>

namespace llmc::runtime {

struct SchedulerLimits {
  int64_t maxNumSeqs = 1;
  int64_t maxNumBatchedTokens = 1;
  /// The sequences a step computes, draft tokens' included (the artifact's
  /// max_num_seqs); 0: maxNumSeqs.
  int64_t maxStepRows = 0;
  /// The keys a query sees at most when every layer has a sliding window
  /// (0: no window): a sequence's blocks before its window are given back.
  int64_t attentionWindow = 0;
  /// Each KV cache group's window (0: none), when the model has several
  /// (step.kv_groups); empty: one group of every layer, with attentionWindow.
  std::vector<int64_t> kvGroupWindows;

  /// Each KV cache group's window: kvGroupWindows, or attentionWindow's one group.
  std::vector<int64_t> groupWindows() const {
    return kvGroupWindows.empty() ? std::vector<int64_t>{attentionWindow} : kvGroupWindows;
  }
};

/// Who runs first: first come, first served, or by priority, then arrival.
enum class SchedulingPolicy { Fcfs, Priority };

/// Preemption by swapping: the host slots there are (0: always recompute)
/// and what moving one block out and back in costs, to weigh against
/// recomputing a sequence's tokens.
struct SwapPolicy {
  int64_t numSlots = 0;
  double blockRoundTripSeconds = 0;
};

/// A block copy between the pool and a swap slot, for the caller to do
/// before the step (all swap-outs first: a swapped-out block may be handed
/// to another sequence in the same step).
struct BlockSwap {
  BlockId block;
  int64_t slot;
};

/// A sequence's part of a step: tokens[start, start + numTokens), the last
/// numDraft of them the first tokens of its draft (each needs a logits row).
/// With rowPerToken (prompt logprobs) every token has a logits row.
struct ScheduledChunk {
  Sequence *sequence;
  int64_t start;
  int64_t numTokens;
  int64_t numDraft = 0;
  bool rowPerToken = false;
  /// Whether this chunk reaches the end of the sequence's tokens, so that
  /// its (last) logits row is sampled.
  bool samples() const {
    return start + numTokens - numDraft == static_cast<int64_t>(sequence->tokens.size());
  }
  /// The step's rows (sequences, each with a logits row) the chunk takes.
  int64_t numRows() const { return rowPerToken ? numTokens : 1 + numDraft; }
};

struct SchedulerOutput {
  std::vector<ScheduledChunk> chunks;
  /// Copies to do before the step, in this order: swap-outs, swap-ins, then
  /// the copy-on-write block copies.
  std::vector<BlockSwap> swapOuts;
  std::vector<BlockSwap> swapIns;
  std::vector<BlockCopy> copies;
  /// Sequences preempted while building this step.
  std::vector<Sequence *> preempted;
  int64_t numTokens = 0;
  bool empty() const { return chunks.empty(); }
};

class Scheduler {
public:
  Scheduler(BlockManager &blocks, const SchedulerLimits &limits, const SwapPolicy &swap = {},
            SchedulingPolicy policy = SchedulingPolicy::Fcfs);

  /// Queues a new sequence (status Waiting, no blocks).
  void addWaiting(Sequence *sequence);
  /// Adds a sequence forked from `parent` right after it in the running
  /// order (same age).
  void addForked(Sequence *child, const Sequence *parent);
  /// Forgets a sequence that finished or was aborted and frees its blocks
  /// (and swap slots).
  void remove(Sequence *sequence);
  /// What recomputing one token costs now (the engine measures its prompt
  /// steps); swapping is weighed against it.
  void setRecomputeSecondsPerToken(double seconds) { recomputeSecondsPerToken = seconds; }

  /// The next step. Advances each scheduled sequence's numComputed past its
  /// chunk (the step will write those tokens' K/V).
  SchedulerOutput schedule();

  size_t numWaiting() const { return waiting.size(); }
  size_t numRunning() const { return running.size(); }
  int64_t numPreemptions() const { return preemptions; }
  /// Of those, the ones that swapped; and the swap slots in use and in all.
  int64_t numSwapPreemptions() const { return swapPreemptions; }
  int64_t numSwapSlotsUsed() const { return swap.numSlots - int64_t(freeSwapSlots.size()); }
  int64_t numSwapSlots() const { return swap.numSlots; }
  const SchedulerLimits &limits() const { return stepLimits; }
  /// The sequences' blocks in every KV cache group (the engine forks and
  /// rolls back through it).
  KvCacheCoordinator &kvCache() { return blocks; }
  SchedulingPolicy policy() const { return schedulingPolicy; }

private:
  /// Frees the sequence's blocks (swapping them out when that pays) and
  /// puts it back in the waiting queue.
  void preempt(Sequence *sequence, SchedulerOutput &output);
  /// Whether swapping `sequence` out and back in costs less than
  /// recomputing it, and the slots are there.
  bool swapPays(const Sequence &sequence) const;
  /// Gives a swapped sequence fresh blocks for its swapped ones, and back
  /// the tokens they hold; false, changing nothing, when blocks are short.
  bool takeSwappedBlocks(Sequence &sequence);
  /// Returns a swapped sequence's slots to the free list and forgets them.
  void releaseSwapSlots(Sequence &sequence);
  /// Whether `a` goes before `b` in the waiting queue and in the running
  /// order under the policy (a sample's forks go after it).
  bool runsBefore(const Sequence *a, const Sequence *b) const;
  /// Inserts into `waiting` in that order (preempted sequences keep their place).
  void insertWaiting(Sequence *sequence);
  /// Tries to admit the oldest waiting sequence; false when it does not fit
  /// (in the step's rows too, `extraRows` of them taken by drafts and
  /// prompt rows).
  bool admitNext(int64_t &budget, int64_t &seqCount, int64_t &extraRows,
                 SchedulerOutput &output);
  /// The sequence's chunk of up to `count` tokens from its numComputed():
  /// for prompt logprobs, cut where the rows still to report begin, and
  /// from there a row per token, `spareRows` beyond its own at most.
  static ScheduledChunk chunkOf(Sequence *sequence, int64_t count, int64_t spareRows);
  /// How many of running[index]'s draft tokens the step can spare room for,
  /// with `rows` of it taken.
  int64_t draftTokensToRun(size_t index, int64_t budget, int64_t rows) const;

  KvCacheCoordinator blocks;
  SchedulerLimits stepLimits;
  SchedulingPolicy schedulingPolicy;
  /// Admission order, oldest first (by priority first under that policy).
  std::vector<Sequence *> running;
  std::deque<Sequence *> waiting;
  int64_t preemptions = 0;
  SwapPolicy swap;
  std::vector<int64_t> freeSwapSlots;
  int64_t swapPreemptions = 0;
  double recomputeSecondsPerToken = 0;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_SCHEDULER_H
