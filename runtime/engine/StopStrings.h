//===- StopStrings.h - ending a sample at a stop string ---------*- C++ -*-===//
//
// OpenAI's `stop`: a sample ends where its text first contains one of the
// stop strings, and the string itself is not part of the output. Text is
// streamed, so the matcher holds back the tail that may yet grow into a stop
// string and releases it once it cannot.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_ENGINE_STOPSTRINGS_H
#define LLMC_RUNTIME_ENGINE_STOPSTRINGS_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmc::runtime {

/// The length of the longest end of `text` that is the beginning of
/// `marker` but not all of it: what a stream holds back until it knows
/// whether the marker follows.
size_t partialMatchAtEnd(std::string_view text, std::string_view marker);

class StopStringMatcher {
public:
  /// Empty strings are ignored.
  explicit StopStringMatcher(std::vector<std::string> stopStrings);

  struct Result {
    /// The text that is now certain to be output.
    std::string text;
    /// The stop string found, if any; nothing after it is output.
    std::optional<std::string> stop;
  };

  /// Adds the next piece of the sample's text.
  Result add(std::string_view piece);
  /// The held-back text, at the end of a sample that met no stop string.
  std::string finish();

private:
  std::vector<std::string> stops;
  std::string heldBack;
};

} // namespace llmc::runtime

#endif // LLMC_RUNTIME_ENGINE_STOPSTRINGS_H
