//===- Reasoning.cpp - a reasoning model's <think> text, apart ------------===//
#include "runtime/server/Reasoning.h"

#include "runtime/engine/StopStrings.h"
#include "runtime/server/Blanks.h"

namespace llmc::runtime::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

} // namespace

bool templateThinks(std::string_view chatTemplate) {
  return chatTemplate.find(kOpen) != std::string_view::npos &&
         chatTemplate.find(kClose) != std::string_view::npos;
}

bool promptOpensThinking(std::string_view prompt) {
  prompt = trimTrailingBlanks(prompt);
  return prompt.size() >= kOpen.size() && prompt.substr(prompt.size() - kOpen.size()) == kOpen;
}

ReasoningSplitter::Split ReasoningSplitter::add(std::string_view text) {
  pending += text;
  Split split;
  if (atStart) {
    std::string_view head = trimLeadingBlanks(pending);
    if (head.size() < kOpen.size() && kOpen.substr(0, head.size()) == head) return split;
    atStart = false;
    if (head.substr(0, kOpen.size()) == kOpen) {
      thinking = true;
      pending.erase(0, pending.size() - head.size() + kOpen.size());
    }
  }
  if (thinking) {
    size_t close = pending.find(kClose);
    if (close == std::string::npos) {
      size_t keep = pending.size() - partialMatchAtEnd(pending, kClose);
      split.reasoning = pending.substr(0, keep);
      pending.erase(0, keep);
      return split;
    }
    split.reasoning = pending.substr(0, close);
    pending.erase(0, close + kClose.size());
    thinking = false;
    afterThinking = true;
  }
  if (afterThinking) {
    // The answer starts after the blank lines that follow </think>.
    pending.erase(0, pending.size() - trimLeadingBlanks(pending).size());
    if (pending.empty()) return split;
    afterThinking = false;
  }
  split.content = std::move(pending);
  pending.clear();
  return split;
}

ReasoningSplitter::Split ReasoningSplitter::finish() {
  Split split;
  (thinking ? split.reasoning : split.content) = std::move(pending);
  pending.clear();
  return split;
}

} // namespace llmc::runtime::server
