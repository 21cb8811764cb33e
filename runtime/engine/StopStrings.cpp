//===- StopStrings.cpp - ending a sample at a stop string -----------------===//
#include "runtime/engine/StopStrings.h"

#include <algorithm>
#include <utility>

namespace llmc::runtime {

size_t partialMatchAtEnd(std::string_view text, std::string_view marker) {
  if (marker.empty()) return 0;
  for (size_t length = std::min(marker.size() - 1, text.size()); length > 0; --length)
    if (text.substr(text.size() - length) == marker.substr(0, length)) return length;
  return 0;
}

StopStringMatcher::StopStringMatcher(std::vector<std::string> stopStrings) {
  for (std::string &stop : stopStrings)
    if (!stop.empty()) stops.push_back(std::move(stop));
}

StopStringMatcher::Result StopStringMatcher::add(std::string_view piece) {
  std::string text = std::move(heldBack);
  heldBack.clear();
  text.append(piece);

  // The earliest stop string wins; text before it is output. A stop string
  // that began in held-back text is found here too, since that text is part
  // of `text`.
  size_t earliest = std::string::npos;
  const std::string *found = nullptr;
  for (const std::string &stop : stops) {
    size_t at = text.find(stop);
    if (at < earliest) {
      earliest = at;
      found = &stop;
    }
  }
  if (found) return {text.substr(0, earliest), *found};

  // Hold back the longest tail that is the beginning of a stop string. It
  // starts where a stop string's first byte does, so never inside a UTF-8
  // character.
  size_t keep = 0;
  for (const std::string &stop : stops) keep = std::max(keep, partialMatchAtEnd(text, stop));
  heldBack = text.substr(text.size() - keep);
  text.resize(text.size() - keep);
  return {std::move(text), std::nullopt};
}

std::string StopStringMatcher::finish() { return std::exchange(heldBack, std::string()); }

} // namespace llmc::runtime
