//===- Regex.h - tokenizer.json patterns, matched with PCRE2 ----*- C++ -*-===//
//
// tokenizer.json patterns are written for Oniguruma (the reference's regex
// engine, Ruby syntax). They are compiled here with PCRE2 in UTF and UCP
// mode, after rewriting the escapes whose meaning differs between the two
// (\s, \w, \h and their negations, scripts in \p{...}), and matched with
// Oniguruma's rule for empty matches, so that the matches agree with the
// reference's.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_TOKENIZER_REGEX_H
#define LLMC_RUNTIME_TOKENIZER_REGEX_H

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

struct pcre2_real_code_8;

namespace llmc::runtime::tokenizer {

/// A match: the byte range [begin, end).
struct Match {
  size_t begin;
  size_t end;
};

/// A compiled pattern; safe to match from several threads at once.
class Regex {
public:
  /// Compiles an Oniguruma-syntax pattern; throws Error naming what is wrong.
  static Regex pattern(const std::string &pattern);
  /// A pattern that matches `text` literally.
  static Regex literal(const std::string &text);

  Regex(Regex &&other) noexcept;
  Regex &operator=(Regex &&other) noexcept;
  Regex(const Regex &) = delete;
  Regex &operator=(const Regex &) = delete;
  ~Regex();

  /// Appends the matches in `text` (well-formed UTF-8) to `matches`, left to
  /// right and not overlapping; an empty match where the previous match ended
  /// is skipped, as Oniguruma's find_iter does.
  void findAll(std::string_view text, std::vector<Match> &matches) const;

private:
  explicit Regex(pcre2_real_code_8 *code) : code(code) {}
  pcre2_real_code_8 *code;
};

/// The PCRE2 pattern that matches what the Oniguruma pattern does; exposed
/// for the unit tests.
std::string translateOnigurumaPattern(const std::string &pattern);

} // namespace llmc::runtime::tokenizer

#endif // LLMC_RUNTIME_TOKENIZER_REGEX_H
