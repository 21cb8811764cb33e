//===- NgramProposerTest.cpp - draft tokens by prompt lookup --------------===//
#include "runtime/core/Error.h"
#include "runtime/engine/NgramProposer.h"

#include <gtest/gtest.h>

using namespace llmc::runtime;

namespace {

SpeculativeConfig lookup(int64_t minN, int64_t maxN) {
  SpeculativeConfig config;
  config.numSpeculativeTokens = 8;
  config.promptLookupMin = minN;
  config.promptLookupMax = maxN;
  return config;
}

using Tokens = std::vector<int32_t>;

TEST(NgramProposer, ProposesWhatFollowedTheMostRecentOccurrence) {
  //             0  1  2  3  4  5  6  7  8  9 10
  Tokens tokens{7, 1, 2, 3, 9, 1, 2, 4, 5, 6, 1, 2};
  // [1, 2] occurred at 1 and 5: the later one is followed by 4 5 6 1 2.
  EXPECT_EQ(proposeNgramDraft(tokens, lookup(2, 2), 3), (Tokens{4, 5, 6}));
  // Past the sequence's end, the span from the occurrence to the end repeats.
  EXPECT_EQ(proposeNgramDraft(tokens, lookup(2, 2), 8), (Tokens{4, 5, 6, 1, 2, 4, 5, 6}));
  EXPECT_EQ(proposeNgramDraft(tokens, lookup(2, 2), 0), Tokens{});
}

TEST(NgramProposer, TriesTheLongestSuffixFirst) {
  //             0  1  2  3  4  5  6  7  8
  Tokens tokens{5, 1, 2, 8, 3, 1, 2, 0, 5, 1, 2};
  // [5, 1, 2] occurred at 0 (followed by 8); [1, 2] last at 5 (followed by 0).
  EXPECT_EQ(proposeNgramDraft(tokens, lookup(2, 3), 1), (Tokens{8}));
  EXPECT_EQ(proposeNgramDraft(tokens, lookup(2, 2), 1), (Tokens{0}));
}

TEST(NgramProposer, ProposesNothingWithoutAnEarlierOccurrence) {
  EXPECT_EQ(proposeNgramDraft({1, 2, 3, 4}, lookup(1, 4), 4), Tokens{});
  EXPECT_EQ(proposeNgramDraft({3}, lookup(1, 4), 4), Tokens{});
  EXPECT_EQ(proposeNgramDraft({}, lookup(1, 4), 4), Tokens{});
  // [2, 3] twice, but the lookup starts at 3 tokens.
  EXPECT_EQ(proposeNgramDraft({2, 3, 7, 2, 3}, lookup(3, 4), 4), Tokens{});
}

TEST(NgramProposer, ARunRepeatsItself) {
  // The suffix [0, 0] also occurs one token earlier, overlapping itself.
  EXPECT_EQ(proposeNgramDraft({4, 0, 0, 0}, lookup(2, 2), 5), (Tokens{0, 0, 0, 0, 0}));
  EXPECT_EQ(proposeNgramDraft({1, 2, 1, 2}, lookup(1, 1), 5), (Tokens{1, 2, 1, 2, 1}));
}

TEST(NgramProposer, RefusesConfigsOutOfRange) {
  EXPECT_NO_THROW(lookup(1, 1).validate());
  EXPECT_THROW(lookup(0, 4).validate(), Error);
  EXPECT_THROW(lookup(3, 2).validate(), Error);
  SpeculativeConfig negative;
  negative.numSpeculativeTokens = -1;
  EXPECT_THROW(negative.validate(), Error);
}

} // namespace
