//===- SchedulerTest.cpp - the step policy, without a model ---------------===//
//
// The scheduler decides; these tests play the engine's part by hand: after
// each schedule() they append a token to every sequence whose chunk reached
// its end, as sampling would.
//
//===----------------------------------------------------------------------===//
#include "runtime/core/Error.h"
#include "runtime/engine/Scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>

using namespace llmc::runtime;

namespace {

class SchedulerTest : public ::testing::Test {
protected:
  /// A waiting sequence with a prompt of `length` tokens.
  Sequence *add(Scheduler &scheduler, int64_t length, int32_t forks = 0, int64_t priority = 0) {
    std::vector<int32_t> prompt(length);
    for (int64_t i = 0; i < length; ++i) prompt[i] = int32_t(sequences.size() * 100 + i);
    auto sequence = std::make_unique<Sequence>(
        sequences.size(), 0, sequences.size(), prompt,
        SequenceSampler(SamplingParams(), 0, prompt));
    sequence->pendingForks = forks;
    sequence->priority = priority;
    scheduler.addWaiting(sequence.get());
    sequences.push_back(std::move(sequence));
    return sequences.back().get();
  }

  /// A waiting sequence whose prompt of `length` tokens a sequence before it
  /// computed and ended: the prompt's full blocks are in the prefix cache.
  Sequence *addCachedPrompt(Scheduler &scheduler, int64_t length) {
    Sequence *first = add(scheduler, length);
    scheduler.schedule();
    scheduler.remove(first);
    Sequence *second = add(scheduler, length);
    second->tokens = first->tokens;
    second->sampler = SequenceSampler(SamplingParams(), 0, first->tokens);
    return second;
  }

  /// What the engine would do after the step: report the prompt rows of
  /// row-per-token chunks, and a new token for each sequence whose chunk
  /// ends at its last token.
  static void sampleAll(const SchedulerOutput &output) {
    for (const ScheduledChunk &chunk : output.chunks) {
      Sequence &sequence = *chunk.sequence;
      if (chunk.rowPerToken)
        sequence.promptRowsReported = std::max(
            sequence.promptRowsReported,
            std::min(chunk.start + chunk.numTokens, sequence.promptLen - 1));
      if (chunk.samples()) sequence.tokens.push_back(1);
    }
  }

  /// The sequences of a step, as indices into `sequences`, with their token counts.
  std::vector<std::pair<size_t, int64_t>> chunks(const SchedulerOutput &output) const {
    std::vector<std::pair<size_t, int64_t>> result;
    for (const ScheduledChunk &chunk : output.chunks)
      result.push_back({chunk.sequence->request, chunk.numTokens});
    return result;
  }

  std::vector<std::unique_ptr<Sequence>> sequences;
};

using Chunks = std::vector<std::pair<size_t, int64_t>>;

TEST_F(SchedulerTest, FillsTheTokenBudgetFirstComeFirstServed) {
  BlockManager blocks(64, 4, false);
  Scheduler scheduler(blocks, {4, 10});
  add(scheduler, 6);
  add(scheduler, 7);
  add(scheduler, 2);
  SchedulerOutput first = scheduler.schedule();
  // 6 tokens, then 4 of the 7 (a chunk); the third waits.
  EXPECT_EQ(chunks(first), (Chunks{{0, 6}, {1, 4}}));
  EXPECT_EQ(first.numTokens, 10);
  EXPECT_EQ(scheduler.numWaiting(), 1u);
  sampleAll(first);
  // Sequence 0 decodes, sequence 1 finishes its prompt, sequence 2 joins.
  EXPECT_EQ(chunks(scheduler.schedule()), (Chunks{{0, 1}, {1, 3}, {2, 2}}));
}

TEST_F(SchedulerTest, ALongPromptIsChunkedAroundTheRunningDecodes) {
  BlockManager blocks(64, 4, false);
  Scheduler scheduler(blocks, {4, 8});
  add(scheduler, 1);
  add(scheduler, 1);
  Sequence *longPrompt = add(scheduler, 30);
  SchedulerOutput first = scheduler.schedule();
  EXPECT_EQ(chunks(first), (Chunks{{0, 1}, {1, 1}, {2, 6}}));
  sampleAll(first);
  add(scheduler, 1); // waits until the prompt leaves room
  for (int step = 0; step < 3; ++step) {
    SchedulerOutput next = scheduler.schedule();
    EXPECT_EQ(chunks(next), (Chunks{{0, 1}, {1, 1}, {2, 6}})) << "step " << step;
    sampleAll(next);
  }
  EXPECT_EQ(longPrompt->numComputed(), 24);
  EXPECT_EQ(chunks(scheduler.schedule()), (Chunks{{0, 1}, {1, 1}, {2, 6}}));
  EXPECT_EQ(scheduler.numWaiting(), 1u);
}

TEST_F(SchedulerTest, PreemptsTheNewestAndAdmitsNobodyInThatStep) {
  BlockManager blocks(4, 4, false);
  Scheduler scheduler(blocks, {4, 16});
  add(scheduler, 4);
  add(scheduler, 4);
  add(scheduler, 4);
  add(scheduler, 4);
  SchedulerOutput first = scheduler.schedule();
  EXPECT_EQ(first.chunks.size(), 4u); // every block in use
  sampleAll(first);
  add(scheduler, 1);
  // Each needs a fifth position: the oldest takes the newest's block, and so on.
  SchedulerOutput second = scheduler.schedule();
  EXPECT_EQ(chunks(second), (Chunks{{0, 1}, {1, 1}}));
  ASSERT_EQ(second.preempted.size(), 2u);
  EXPECT_EQ(second.preempted[0]->request, 3u);
  EXPECT_EQ(second.preempted[1]->request, 2u);
  EXPECT_EQ(sequences[3]->numPreemptions, 1);
  EXPECT_EQ(scheduler.numPreemptions(), 2);
  // Back in arrival order, ahead of the newer sequence 4.
  EXPECT_EQ(scheduler.numWaiting(), 3u);
  EXPECT_EQ(sequences[2]->numComputed(), 0);
}

TEST_F(SchedulerTest, TheOnlySequenceThatDoesNotFitWaitsWithoutLosingAnything) {
  BlockManager blocks(2, 4, false);
  Scheduler scheduler(blocks, {2, 16});
  Sequence *first = add(scheduler, 8);
  SchedulerOutput step = scheduler.schedule();
  EXPECT_EQ(chunks(step), (Chunks{{0, 8}}));
  sampleAll(step);
  // A ninth position needs a third block: it preempts itself.
  SchedulerOutput next = scheduler.schedule();
  EXPECT_TRUE(next.empty());
  ASSERT_EQ(next.preempted.size(), 1u);
  EXPECT_EQ(first->tokens.size(), 9u);
  EXPECT_EQ(blocks.numHeld(), 0);
}

TEST_F(SchedulerTest, PendingForksCountAgainstMaxNumSeqs) {
  BlockManager blocks(64, 4, false);
  Scheduler scheduler(blocks, {4, 64});
  add(scheduler, 3, /*forks=*/2); // n = 3
  add(scheduler, 3, /*forks=*/1); // n = 2: would make 5
  add(scheduler, 3);
  EXPECT_EQ(chunks(scheduler.schedule()), (Chunks{{0, 3}}));
  EXPECT_EQ(scheduler.numWaiting(), 2u);
}

TEST_F(SchedulerTest, NewSequencesStartFromTheirCachedPrefix) {
  BlockManager blocks(16, 4, true);
  Scheduler scheduler(blocks, {4, 64});
  addCachedPrompt(scheduler, 9);
  SchedulerOutput output = scheduler.schedule();
  ASSERT_EQ(output.chunks.size(), 1u);
  EXPECT_EQ(output.chunks[0].start, 8);
  EXPECT_EQ(output.chunks[0].numTokens, 1);
  EXPECT_EQ(blocks.prefixCacheStats().hitBlocks, 2);
}

TEST_F(SchedulerTest, SwapsOutWhenThatCostsLessThanRecomputingAndBackInOnAdmission) {
  BlockManager blocks(4, 4, false);
  Scheduler scheduler(blocks, {4, 16}, SwapPolicy{8, /*blockRoundTripSeconds=*/1e-6});
  scheduler.setRecomputeSecondsPerToken(1e-3);
  for (int i = 0; i < 4; ++i) add(scheduler, 4);
  SchedulerOutput first = scheduler.schedule();
  sampleAll(first);
  BlockId thirdBlock = sequences[2]->blocks.groups[0].table[0], fourthBlock = sequences[3]->blocks.groups[0].table[0];
  SchedulerOutput second = scheduler.schedule();
  EXPECT_EQ(chunks(second), (Chunks{{0, 1}, {1, 1}}));
  ASSERT_EQ(second.swapOuts.size(), 2u);
  EXPECT_EQ(second.swapOuts[0].block, fourthBlock);
  EXPECT_EQ(second.swapOuts[1].block, thirdBlock);
  EXPECT_EQ(scheduler.numSwapPreemptions(), 2);
  EXPECT_EQ(scheduler.numSwapSlotsUsed(), 2);
  ASSERT_TRUE(sequences[2]->swapped.has_value());
  EXPECT_EQ(sequences[2]->swapped->numTokens, 4);
  EXPECT_EQ(sequences[2]->numComputed(), 0);
  sampleAll(second);

  // The two running ones end; the swapped ones come back with their 4 tokens
  // in fresh blocks and run only their fifth.
  scheduler.remove(sequences[0].get());
  scheduler.remove(sequences[1].get());
  SchedulerOutput third = scheduler.schedule();
  EXPECT_EQ(chunks(third), (Chunks{{2, 1}, {3, 1}}));
  EXPECT_EQ(third.chunks[0].start, 4);
  ASSERT_EQ(third.swapIns.size(), 2u);
  EXPECT_EQ(third.swapIns[0].slot, second.swapOuts[1].slot);
  EXPECT_EQ(third.swapIns[0].block, sequences[2]->blocks.groups[0].table[0]);
  EXPECT_EQ(third.swapIns[1].slot, second.swapOuts[0].slot);
  EXPECT_EQ(sequences[2]->numComputed(), 5);
  EXPECT_FALSE(sequences[2]->swapped.has_value());
  EXPECT_EQ(scheduler.numSwapSlotsUsed(), 0);
  EXPECT_TRUE(third.swapOuts.empty());
}

TEST_F(SchedulerTest, RecomputesWhenSwappingCostsMoreOrTheSlotsAreShort) {
  for (SwapPolicy policy : {SwapPolicy{8, /*blockRoundTripSeconds=*/1.0}, SwapPolicy{0, 1e-6}}) {
    sequences.clear();
    BlockManager blocks(4, 4, false);
    Scheduler scheduler(blocks, {4, 16}, policy);
    scheduler.setRecomputeSecondsPerToken(1e-3);
    for (int i = 0; i < 4; ++i) add(scheduler, 4);
    sampleAll(scheduler.schedule());
    SchedulerOutput second = scheduler.schedule();
    EXPECT_EQ(second.preempted.size(), 2u);
    EXPECT_TRUE(second.swapOuts.empty());
    EXPECT_EQ(scheduler.numSwapPreemptions(), 0);
    EXPECT_FALSE(sequences[3]->swapped.has_value());
  }
}

TEST_F(SchedulerTest, RemovingASwappedSequenceFreesItsSlots) {
  BlockManager blocks(4, 4, false);
  Scheduler scheduler(blocks, {4, 16}, SwapPolicy{8, 1e-6});
  scheduler.setRecomputeSecondsPerToken(1e-3);
  for (int i = 0; i < 4; ++i) add(scheduler, 4);
  sampleAll(scheduler.schedule());
  scheduler.schedule();
  EXPECT_EQ(scheduler.numSwapSlotsUsed(), 2);
  scheduler.remove(sequences[3].get());
  EXPECT_EQ(scheduler.numSwapSlotsUsed(), 1);
  EXPECT_FALSE(sequences[3]->swapped.has_value());
  EXPECT_EQ(scheduler.numWaiting(), 1u);
}

TEST_F(SchedulerTest, AWindowedSequenceOutgrowsThePoolWithoutPreemption) {
  // 4 blocks of 4 hold 16 tokens. With a window of 5 a decode step keeps the
  // blocks of positions p - 4 .. p: at most 2; without one the sequence
  // preempts itself once it has filled the pool.
  for (int64_t window : {5, 0}) {
    sequences.clear();
    BlockManager blocks(4, 4, false);
    SchedulerLimits limits{1, 8};
    limits.attentionWindow = window;
    Scheduler scheduler(blocks, limits);
    Sequence *sequence = add(scheduler, 6);
    int64_t mostHeld = 0;
    for (int step = 0; step < 40 && scheduler.numPreemptions() == 0; ++step) {
      sampleAll(scheduler.schedule());
      mostHeld = std::max(mostHeld, blocks.numHeld());
    }
    if (window) {
      EXPECT_EQ(scheduler.numPreemptions(), 0);
      EXPECT_EQ(sequence->numComputed(), 6 + 39);
      EXPECT_EQ(mostHeld, 2);
      EXPECT_EQ(sequence->blocks.groups[0].numReleased, (6 + 39 - 5 + 1) / 4);
    } else {
      EXPECT_EQ(scheduler.numPreemptions(), 1);
      EXPECT_EQ(mostHeld, 4);
    }
  }
}

TEST_F(SchedulerTest, ASwappedSequenceComesBackWithoutItsGivenBackBlocks) {
  BlockManager blocks(3, 4, false);
  SchedulerLimits limits{2, 16};
  limits.attentionWindow = 2;
  Scheduler scheduler(blocks, limits, SwapPolicy{8, /*blockRoundTripSeconds=*/1e-6});
  scheduler.setRecomputeSecondsPerToken(1e-3);
  Sequence *older = add(scheduler, 3);
  Sequence *newer = add(scheduler, 7);
  sampleAll(scheduler.schedule()); // 1 + 2 blocks
  sampleAll(scheduler.schedule()); // the newer one's first block falls out of its window
  EXPECT_EQ(newer->blocks.groups[0].numReleased, 1);
  // Each wants a block for its next position: one is left, the newer one swaps out.
  SchedulerOutput third = scheduler.schedule();
  EXPECT_EQ(chunks(third), (Chunks{{0, 1}}));
  ASSERT_TRUE(newer->swapped.has_value());
  EXPECT_EQ(newer->swapped->groups[0].numReleased, 1);
  ASSERT_EQ(third.swapOuts.size(), 1u);
  sampleAll(third);

  scheduler.remove(older);
  SchedulerOutput fourth = scheduler.schedule();
  EXPECT_EQ(chunks(fourth), (Chunks{{1, 1}}));
  EXPECT_EQ(fourth.chunks[0].start, 8);
  ASSERT_EQ(fourth.swapIns.size(), 1u);
  EXPECT_EQ(newer->blocks.groups[0].numReleased, 1);
  EXPECT_EQ(newer->blocks.groups[0].table[0], kReleasedBlock);
  EXPECT_EQ(fourth.swapIns[0].block, newer->blocks.groups[0].table[1]);
  EXPECT_EQ(fourth.swapIns[0].slot, third.swapOuts[0].slot);
  EXPECT_EQ(newer->blocks.numHeld(), 2);
}

TEST_F(SchedulerTest, RefusesLimitsThatCannotWork) {
  BlockManager blocks(4, 4, false);
  EXPECT_THROW(Scheduler(blocks, {0, 16}), Error);
  EXPECT_THROW(Scheduler(blocks, {8, 4}), Error);
  EXPECT_THROW(Scheduler(blocks, {4, 16}, SwapPolicy{-1, 0}), Error);
}
TEST_F(SchedulerTest, ADraftTakesOnlyWhatTheStepHasToSpare) {
  BlockManager blocks(64, 4, false);
  Scheduler scheduler(blocks, {4, 10});
  Sequence *first = add(scheduler, 3);
  add(scheduler, 3);
  sampleAll(scheduler.schedule());
  first->draft = std::vector<int32_t>(8, 1);
  // Budget 10 leaves 8 beyond the two decoding tokens, but max_num_seqs 4
  // leaves room for two draft tokens only, each run as a sequence of its own.
  SchedulerOutput step = scheduler.schedule();
  EXPECT_EQ(chunks(step), (Chunks{{0, 3}, {1, 1}}));
  EXPECT_EQ(step.chunks[0].numDraft, 2);
  EXPECT_TRUE(step.chunks[0].samples());
  EXPECT_EQ(first->numComputed(), 6);
}

TEST_F(SchedulerTest, DraftRowsAreTheStepsNotMaxNumSeqs) {
  // max_num_seqs 1 of a step compiled for 6 sequences: one request runs, and
  // its draft takes up to 5 more rows.
  BlockManager blocks(64, 4, false);
  Scheduler scheduler(blocks, {1, 16, 6});
  Sequence *first = add(scheduler, 3);
  add(scheduler, 2);
  sampleAll(scheduler.schedule());
  first->draft = std::vector<int32_t>(8, 1);
  SchedulerOutput step = scheduler.schedule();
  EXPECT_EQ(chunks(step), (Chunks{{0, 6}}));
  EXPECT_EQ(step.chunks[0].numDraft, 5);
  EXPECT_EQ(scheduler.numWaiting(), 1u);
}

TEST_F(SchedulerTest, ADraftNeverPreempts) {
  // Two blocks of 4: the sequence holds one; a draft of 6 would need a third.
  BlockManager blocks(2, 4, false);
  Scheduler scheduler(blocks, {8, 16});
  Sequence *sequence = add(scheduler, 3);
  sampleAll(scheduler.schedule());
  sequence->draft = std::vector<int32_t>(6, 1);
  SchedulerOutput step = scheduler.schedule();
  EXPECT_TRUE(step.preempted.empty());
  ASSERT_EQ(step.chunks.size(), 1u);
  EXPECT_EQ(step.chunks[0].numDraft, 4); // positions 3 to 7: the blocks there are
  EXPECT_EQ(blocks.numAvailable(), 0);
}

TEST_F(SchedulerTest, PromptLogprobsRunARowPerTokenInTheRowsTheStepSpares) {
  // Rows for 4 sequences; a decoding sequence takes one, so the prompt of 7
  // whose logprobs are asked for runs 3 rows per step, then its last 1.
  BlockManager blocks(64, 4, false);
  Scheduler scheduler(blocks, {4, 64});
  add(scheduler, 2);
  sampleAll(scheduler.schedule());
  Sequence *reporting = add(scheduler, 7);
  reporting->reportsPromptLogprobs = true;
  SchedulerOutput first = scheduler.schedule();
  EXPECT_EQ(chunks(first), (Chunks{{0, 1}, {1, 3}}));
  EXPECT_FALSE(first.chunks[0].rowPerToken);
  EXPECT_TRUE(first.chunks[1].rowPerToken);
  EXPECT_EQ(first.chunks[1].numRows(), 3);
  sampleAll(first);
  SchedulerOutput second = scheduler.schedule();
  EXPECT_EQ(chunks(second), (Chunks{{0, 1}, {1, 3}}));
  sampleAll(second);
  // Position 6 is the prompt's last: its row is the one sampled.
  SchedulerOutput third = scheduler.schedule();
  EXPECT_EQ(chunks(third), (Chunks{{0, 1}, {1, 1}}));
  EXPECT_TRUE(third.chunks[1].samples());
  sampleAll(third);
  EXPECT_EQ(reporting->promptRowsReported, 6);
  EXPECT_FALSE(reporting->needsPromptRows());
  // Then it decodes as any other, a row per sequence.
  SchedulerOutput fourth = scheduler.schedule();
  EXPECT_EQ(chunks(fourth), (Chunks{{0, 1}, {1, 1}}));
  EXPECT_FALSE(fourth.chunks[1].rowPerToken);
}

TEST_F(SchedulerTest, PromptLogprobsSkipTheCacheAndARecomputeReportsNothingTwice) {
  BlockManager blocks(16, 4, true);
  Scheduler scheduler(blocks, {8, 64});
  // A prompt whose blocks are cached is computed from position 0.
  Sequence *second = addCachedPrompt(scheduler, 12);
  second->reportsPromptLogprobs = true;
  SchedulerOutput step = scheduler.schedule();
  ASSERT_EQ(step.chunks.size(), 1u);
  EXPECT_EQ(step.chunks[0].start, 0);
  EXPECT_EQ(step.chunks[0].numTokens, 8); // the step's 8 rows
  EXPECT_TRUE(step.chunks[0].rowPerToken);
  EXPECT_EQ(blocks.prefixCacheStats().hitBlocks, 0);
  sampleAll(step);
  EXPECT_EQ(second->promptRowsReported, 8);
  // Preempted (its blocks freed, back to waiting), it recomputes the
  // reported positions 0 to 7 as one chunk, then a row per token.
  scheduler.remove(second);
  scheduler.addWaiting(second);
  SchedulerOutput again = scheduler.schedule();
  ASSERT_EQ(again.chunks.size(), 1u);
  EXPECT_EQ(again.chunks[0].numTokens, 8);
  EXPECT_FALSE(again.chunks[0].rowPerToken);
  sampleAll(again);
  SchedulerOutput last = scheduler.schedule();
  ASSERT_EQ(last.chunks.size(), 1u);
  EXPECT_EQ(last.chunks[0].start, 8);
  EXPECT_EQ(last.chunks[0].numTokens, 4);
  EXPECT_TRUE(last.chunks[0].rowPerToken);
  EXPECT_TRUE(last.chunks[0].samples());
}

TEST_F(SchedulerTest, ThePriorityPolicyAdmitsTheLowestValueFirstAndPreemptsTheHighest) {
  BlockManager blocks(4, 4, false);
  Scheduler scheduler(blocks, {2, 16}, {}, SchedulingPolicy::Priority);
  add(scheduler, 4, 0, /*priority=*/5);
  add(scheduler, 4, 0, /*priority=*/-1);
  Sequence *normal = add(scheduler, 4);
  // Two sequences a step: the lowest values, whatever their arrival.
  SchedulerOutput first = scheduler.schedule();
  EXPECT_EQ(chunks(first), (Chunks{{1, 4}, {2, 4}}));
  sampleAll(first);
  // Each needs a second block; two are free, so both grow.
  SchedulerOutput second = scheduler.schedule();
  EXPECT_EQ(chunks(second), (Chunks{{1, 1}, {2, 1}}));
  EXPECT_TRUE(second.preempted.empty());
  for (int i = 0; i < 3; ++i) {
    sampleAll(second);
    second = scheduler.schedule();
  }
  // At 9 tokens each needs a third block: the higher value (priority 0, the
  // newer too) gives way, and the urgent one keeps running.
  sampleAll(second);
  SchedulerOutput third = scheduler.schedule();
  ASSERT_EQ(third.preempted.size(), 1u);
  EXPECT_EQ(third.preempted[0], normal);
  EXPECT_EQ(chunks(third), (Chunks{{1, 1}}));
  EXPECT_EQ(scheduler.numWaiting(), 2u);
}

TEST_F(SchedulerTest, UnderThePriorityPolicyALowerValueRunsAheadOfOlderOnes) {
  // Running order is the policy's: an urgent sequence admitted later is
  // scheduled first, and a preemption never picks it over an older one.
  BlockManager blocks(3, 4, false);
  Scheduler scheduler(blocks, {4, 16}, {}, SchedulingPolicy::Priority);
  Sequence *old = add(scheduler, 4);
  sampleAll(scheduler.schedule());
  add(scheduler, 4, 0, /*priority=*/-3);
  SchedulerOutput admitted = scheduler.schedule();
  EXPECT_EQ(chunks(admitted), (Chunks{{0, 1}, {1, 4}}));
  sampleAll(admitted);
  // Three blocks: both need one more, only one is free. The urgent one goes
  // first and takes it; the older one is preempted (first come, first served
  // would have preempted the newer, urgent one).
  SchedulerOutput next = scheduler.schedule();
  EXPECT_EQ(chunks(next), (Chunks{{1, 1}}));
  ASSERT_EQ(next.preempted.size(), 1u);
  EXPECT_EQ(next.preempted[0], old);
}

} // namespace
