//===- Regex.cpp - tokenizer.json patterns, matched with PCRE2 ------------===//
#define PCRE2_CODE_UNIT_WIDTH 8
#include "runtime/tokenizer/Regex.h"

#include "runtime/core/Error.h"
#include "runtime/tokenizer/Utf8.h"

#include <pcre2.h>

#include <cctype>
#include <utility>

namespace llmc::runtime::tokenizer {
namespace {

/// Unicode White_Space, what Oniguruma's \s matches (PCRE2's \s also takes U+180E).
constexpr const char *kWhiteSpaceSet =
    "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}"
    "\\x{3000}";
/// Oniguruma's \w (Unicode's word characters); PCRE2's takes only letters, numbers and '_'.
constexpr const char *kWordSet = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}";
/// Oniguruma's \h in Ruby syntax: a hexadecimal digit (PCRE2's is horizontal space).
constexpr const char *kHexDigitSet = "0-9a-fA-F";

/// Per-thread match state: match data for the whole match only, and a JIT
/// stack larger than the default 32 KiB so that long inputs do not exhaust it.
class MatchState {
public:
  MatchState()
      : data(pcre2_match_data_create(1, nullptr)), context(pcre2_match_context_create(nullptr)),
        jitStack(pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr)) {
    if (!data || !context) throw std::bad_alloc();
    if (jitStack) pcre2_jit_stack_assign(context, nullptr, jitStack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(jitStack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  MatchState(const MatchState &) = delete;
  MatchState &operator=(const MatchState &) = delete;

  pcre2_match_data *data;
  pcre2_match_context *context;
  pcre2_jit_stack *jitStack;
};

/// Whether PCRE2 knows `name` as a script (for \p{sc:name}).
bool isScriptName(const std::string &name) {
  std::string probe = "\\p{sc:" + name + "}";
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  pcre2_code *code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(probe.data()), probe.size(),
                                   PCRE2_UTF | PCRE2_UCP, &errorCode, &errorOffset, nullptr);
  pcre2_code_free(code);
  return code != nullptr;
}

std::string pcre2Message(int errorCode) {
  PCRE2_UCHAR buffer[256];
  int length = pcre2_get_error_message(errorCode, buffer, sizeof(buffer));
  if (length < 0) return "PCRE2 error " + std::to_string(errorCode);
  return std::string(reinterpret_cast<const char *>(buffer), static_cast<size_t>(length));
}

pcre2_code *compileOrThrow(const std::string &pcrePattern, const std::string &shownPattern) {
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  pcre2_code *code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pcrePattern.data()), pcrePattern.size(),
                    PCRE2_UTF | PCRE2_UCP, &errorCode, &errorOffset, nullptr);
  if (!code)
    throw Error("regex '" + shownPattern + "' does not compile: " + pcre2Message(errorCode) +
                " (at offset " + std::to_string(errorOffset) + " of '" + pcrePattern + "')");
  // Without JIT support PCRE2 interprets the pattern: slower, same matches.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return code;
}
} // namespace

std::string translateOnigurumaPattern(const std::string &pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  bool inClass = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      char escaped = pattern[++i];
      auto set = [&](const char *members, bool negated) {
        if (!inClass) {
          out += negated ? "[^" : "[";
          out += members;
          out += ']';
        } else if (!negated) {
          out += members;
        } else {
          throw Error(std::string("regex '") + pattern + "': \\" + escaped +
                      " inside a character class is not supported");
        }
      };
      switch (escaped) {
      case 'p':
      case 'P': {
        // \p{Han} is the Script property to Oniguruma; to PCRE2 it is
        // Script_Extensions, which also takes common characters such as U+3002.
        size_t close = pattern.find('}', i);
        if (i + 1 < pattern.size() && pattern[i + 1] == '{' && close != std::string::npos) {
          std::string name = pattern.substr(i + 2, close - i - 2);
          bool negated = !name.empty() && name[0] == '^';
          if (negated) name.erase(0, 1);
          out += std::string("\\") + escaped + "{" + (negated ? "^" : "") +
                 (isScriptName(name) ? "sc:" : "") + name + "}";
          i = close;
        } else {
          out += c;
          out += escaped;
        }
        break;
      }
      case 's':
        set(kWhiteSpaceSet, false);
        break;
      case 'S':
        set(kWhiteSpaceSet, true);
        break;
      case 'w':
        set(kWordSet, false);
        break;
      case 'W':
        set(kWordSet, true);
        break;
      case 'h':
        set(kHexDigitSet, false);
        break;
      case 'H':
        set(kHexDigitSet, true);
        break;
      default:
        out += c;
        out += escaped;
      }
      continue;
    }
    if (c == '[') {
      if (inClass) {
        // A POSIX class ([:alpha:]) means the same to both engines; a nested
        // class (Oniguruma's union and && intersection) means nothing to PCRE2.
        if (i + 1 < pattern.size() && pattern[i + 1] == ':') {
          size_t close = pattern.find(":]", i + 2);
          if (close != std::string::npos) {
            out.append(pattern, i, close + 2 - i);
            i = close + 1;
            continue;
          }
        }
        throw Error("regex '" + pattern + "': nested character classes are not supported");
      }
      inClass = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member, not the end.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (inClass && c == '&' && i + 1 < pattern.size() && pattern[i + 1] == '&')
      throw Error("regex '" + pattern + "': class intersection (&&) is not supported");
    if (c == ']') inClass = false;
    out += c;
  }
  return out;
}

Regex Regex::pattern(const std::string &pattern) {
  return Regex(compileOrThrow(translateOnigurumaPattern(pattern), pattern));
}

Regex Regex::literal(const std::string &text) {
  std::string escaped;
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x80 && !std::isalnum(static_cast<unsigned char>(c)) &&
        c != '\0')
      escaped += '\\';
    escaped += c;
  }
  return Regex(compileOrThrow(escaped, text));
}

Regex::Regex(Regex &&other) noexcept : code(std::exchange(other.code, nullptr)) {}

Regex &Regex::operator=(Regex &&other) noexcept {
  if (this != &other) {
    pcre2_code_free(code);
    code = std::exchange(other.code, nullptr);
  }
  return *this;
}

Regex::~Regex() { pcre2_code_free(code); }

void Regex::findAll(std::string_view text, std::vector<Match> &matches) const {
  thread_local MatchState state;
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t searchFrom = 0;
  size_t previousEnd = std::string_view::npos;
  while (searchFrom <= text.size()) {
    int rc = pcre2_match(code, subject, text.size(), searchFrom, PCRE2_NO_UTF_CHECK, state.data,
                         state.context);
    if (rc == PCRE2_ERROR_NOMATCH) return;
    if (rc < 0) throw Error("regex matching failed: " + pcre2Message(rc));
    PCRE2_SIZE *range = pcre2_get_ovector_pointer(state.data);
    size_t begin = range[0], end = range[1];
    if (begin == end && end == previousEnd) {
      // Oniguruma's find_iter: no empty match right after the previous match;
      // search again one character further on.
      searchFrom = end < text.size() ? end + utf8Length(static_cast<unsigned char>(text[end]))
                                     : text.size() + 1;
      continue;
    }
    matches.push_back({begin, end});
    searchFrom = end;
    previousEnd = end;
  }
}

} // namespace llmc::runtime::tokenizer
