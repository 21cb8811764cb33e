//===- StopStringsTest.cpp - stop strings over streamed text --------------===//
#include "runtime/engine/StopStrings.h"

#include <gtest/gtest.h>

using llmc::runtime::StopStringMatcher;

namespace {

/// Feeds the pieces in order; the text released and the stop string met.
std::pair<std::string, std::optional<std::string>> feed(StopStringMatcher &matcher,
                                                         const std::vector<std::string> &pieces) {
  std::string text;
  for (const std::string &piece : pieces) {
    StopStringMatcher::Result result = matcher.add(piece);
    text += result.text;
    if (result.stop) return {text, result.stop};
  }
  return {text + matcher.finish(), std::nullopt};
}

TEST(StopStrings, TextBeforeTheStopIsOutputAndTheStopIsNot) {
  StopStringMatcher matcher({"END"});
  auto [text, stop] = feed(matcher, {"the ", "story END and more"});
  EXPECT_EQ(text, "the story ");
  EXPECT_EQ(stop, "END");
}

TEST(StopStrings, AStopSplitAcrossPiecesIsFoundAndItsStartHeldBack) {
  StopStringMatcher matcher({"<|stop|>"});
  StopStringMatcher::Result first = matcher.add("hello <|st");
  EXPECT_EQ(first.text, "hello "); // "<|st" may begin the stop string
  EXPECT_FALSE(first.stop);
  StopStringMatcher::Result second = matcher.add("op|> tail");
  EXPECT_EQ(second.text, "");
  EXPECT_EQ(second.stop, "<|stop|>");
}

TEST(StopStrings, HeldBackTextIsReleasedOnceItCannotBeAStop) {
  StopStringMatcher matcher({"abc"});
  EXPECT_EQ(matcher.add("xab").text, "x");
  EXPECT_EQ(matcher.add("d").text, "abd");
  EXPECT_EQ(matcher.add("a").text, "");
  EXPECT_EQ(matcher.finish(), "a");
}

TEST(StopStrings, TheEarliestOfSeveralStopsWins) {
  StopStringMatcher matcher({"world", "lo"});
  auto [text, stop] = feed(matcher, {"hello world"});
  EXPECT_EQ(text, "hel");
  EXPECT_EQ(stop, "lo");
}

TEST(StopStrings, MultibyteStopsAndEmptyStrings) {
  StopStringMatcher matcher({"", "\xC3\xA9t\xC3\xA9"}); // "été"
  auto [text, stop] = feed(matcher, {"un \xC3\xA9", "t\xC3", "\xA9 chaud"});
  EXPECT_EQ(text, "un ");
  EXPECT_EQ(stop, "\xC3\xA9t\xC3\xA9");
}

TEST(StopStrings, NoStopsPassTextThrough) {
  StopStringMatcher matcher({});
  EXPECT_EQ(matcher.add("anything").text, "anything");
  EXPECT_EQ(matcher.finish(), "");
}

} // namespace
