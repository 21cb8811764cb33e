//===- Reasoning.cpp - a reasoning model's <think> text, apart ------------===//
#include "runtime/server/Reasoning.h"

#include <algorithm>

namespace llmc::runtime::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool isSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trimLeft(std::string_view text) {
  while (!text.empty() && isSpace(text.front())) text.remove_prefix(1);
  return text;
}

/// The length of the longest end of `text` that `tag` starts with.
size_t partialTagAtEnd(std::string_view text, std::string_view tag) {
  for (size_t length = std::min(text.size(), tag.size() - 1); length > 0; --length)
    if (tag.substr(0, length) == text.substr(text.size() - length)) return length;
  return 0;
}

} // namespace

bool templateThinks(std::string_view chatTemplate) {
  return chatTemplate.find(kOpen) != std::string_view::npos &&
         chatTemplate.find(kClose) != std::string_view::npos;
}

bool promptOpensThinking(std::string_view prompt) {
  while (!prompt.empty() && isSpace(prompt.back())) prompt.remove_suffix(1);
  return prompt.size() >= kOpen.size() && prompt.substr(prompt.size() - kOpen.size()) == kOpen;
}

ReasoningSplitter::Split ReasoningSplitter::add(std::string_view text) {
  pending += text;
  Split split;
  if (atStart) {
    std::string_view head = trimLeft(pending);
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
      size_t keep = pending.size() - partialTagAtEnd(pending, kClose);
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
    pending.erase(0, pending.size() - trimLeft(pending).size());
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
