//===- Reasoning.h - a reasoning model's <think> text, apart ----*- C++ -*-===//
//
// Reasoning models (DeepSeek-R1, Qwen3, QwQ) think between <think> and
// </think> before they answer; the API returns that text as
// reasoning_content, apart from the content. The output starts inside the
// thinking when the prompt ended with <think> (the template opened it), or
// enters it when the output starts with <think>. Text after </think> is the
// answer; an output that ends while thinking is all reasoning.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_REASONING_H
#define LLMC_RUNTIME_SERVER_REASONING_H

#include <string>
#include <string_view>

namespace llmc::runtime::server {

/// Whether a chat template writes <think> blocks (a reasoning model's).
bool templateThinks(std::string_view chatTemplate);
/// Whether a rendered chat prompt leaves the output inside a <think> block.
bool promptOpensThinking(std::string_view prompt);

class ReasoningSplitter {
public:
  explicit ReasoningSplitter(bool startsThinking)
      : thinking(startsThinking), atStart(!startsThinking) {}

  struct Split {
    std::string reasoning, content;
  };
  /// The next piece of generated text, split; text that may be the start of
  /// a tag is held until the next piece shows what it is.
  Split add(std::string_view text);
  /// The end of the text: whatever was held back.
  Split finish();

private:
  bool thinking;
  /// Until the output's first text shows whether it opens with <think>.
  bool atStart;
  /// Between </think> and the answer's first text.
  bool afterThinking = false;
  std::string pending;
};

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_REASONING_H
