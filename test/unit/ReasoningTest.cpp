//===- ReasoningTest.cpp - a reasoning model's <think> text, apart --------===//
#include "runtime/server/Reasoning.h"

#include <gtest/gtest.h>

using namespace llmc::runtime::server;

namespace {

/// `text` through a splitter `step` characters at a time: (reasoning, content).
std::pair<std::string, std::string> split(bool startsThinking, const std::string &text,
                                          size_t step) {
  ReasoningSplitter splitter(startsThinking);
  std::string reasoning, content;
  for (size_t i = 0; i < text.size(); i += step) {
    ReasoningSplitter::Split piece = splitter.add(text.substr(i, step));
    reasoning += piece.reasoning;
    content += piece.content;
  }
  ReasoningSplitter::Split rest = splitter.finish();
  return {reasoning + rest.reasoning, content + rest.content};
}

} // namespace

TEST(Reasoning, ThinkBlockIsReasoningAndTheRestContent) {
  for (size_t step : {1, 2, 5, 100}) {
    // The model opens the block (Qwen3) ...
    EXPECT_EQ(split(false, "<think>\nLet me see.\n</think>\n\nIt is 4.", step),
              std::make_pair(std::string("\nLet me see.\n"), std::string("It is 4.")));
    // ... or the prompt did (DeepSeek-R1).
    EXPECT_EQ(split(true, "Hmm, 2 + 2.</think>4", step),
              std::make_pair(std::string("Hmm, 2 + 2."), std::string("4")));
    // No block: all content, its leading blanks kept.
    EXPECT_EQ(split(false, " <thin air> is content", step),
              std::make_pair(std::string(), std::string(" <thin air> is content")));
    // Cut off while thinking: all reasoning.
    EXPECT_EQ(split(false, "<think>still going </thi", step),
              std::make_pair(std::string("still going </thi"), std::string()));
  }
}

TEST(Reasoning, TemplatesAndPrompts) {
  EXPECT_TRUE(templateThinks("{{ '<think>\\n\\n</think>\\n\\n' }}"));
  EXPECT_FALSE(templateThinks("{{ message.content }}"));
  EXPECT_TRUE(promptOpensThinking("<|Assistant|><think>\n"));
  EXPECT_FALSE(promptOpensThinking("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
}
