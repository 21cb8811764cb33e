//===- ToolCalls.h - tool calls out of generated text -----------*- C++ -*-===//
//
// Chat models write tool calls in their own format, the one their chat
// template teaches them; OpenAI's API returns them as structured tool_calls.
// This file reads them out of the generated text, whole or as it streams:
//
//   Hermes      <tool_call>{"name": ..., "arguments": {...}}</tool_call>, any
//               number, text around them is content (Hermes, Qwen2.5, Qwen3)
//   Llama3Json  the whole output is {"name": ..., "parameters": {...}}, or
//               several joined by ';' (Llama 3.1, 3.2; <|python_tag|> before
//               it is a special token, not in the text)
//   Mistral     [TOOL_CALLS] then a JSON list of {"name", "arguments"}
//               (Mistral v0.3 and later)
// and the two outputs a grammar forces when tool_choice asks for a call:
//   Required    a JSON list of {"name": ..., "parameters": {...}}
//   Named       the named function's arguments object
//
// Text that is not a well-formed call of the format stays content: a model's
// malformed call is returned as text, never dropped.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_TOOLCALLS_H
#define LLMC_RUNTIME_SERVER_TOOLCALLS_H

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace llmc::runtime::server {

enum class ToolCallFormat { Hermes, Llama3Json, Mistral, Required, Named };

/// The format named as vLLM's --tool-call-parser names it ("hermes",
/// "llama3_json", "mistral"); nullopt for another name.
std::optional<ToolCallFormat> toolCallFormatNamed(std::string_view name);

/// The format a chat template writes tool calls in, read off its text;
/// nullopt when it writes none llmc knows.
std::optional<ToolCallFormat> detectToolCallFormat(std::string_view chatTemplate);

/// The text a format's calls start with ("<tool_call>", "[TOOL_CALLS]"), or
/// empty. A tokenizer may hold it as a special token, which decoding drops:
/// the caller puts it back (ToolCallParser::add's `marker`).
std::string_view toolCallMarker(ToolCallFormat format);

struct ToolCall {
  std::string id;
  std::string name;
  /// The arguments as JSON text, as OpenAI returns them.
  std::string arguments;
};

/// Reads one choice's tool calls as its text comes, for streaming and for the
/// whole response alike.
class ToolCallParser {
public:
  /// `function` is the function of tool_choice Named. `mistralIds`: ids of 9
  /// letters and digits, the only ones Mistral's chat templates take back.
  ToolCallParser(ToolCallFormat format, std::string function = {}, bool mistralIds = false);

  /// What a piece of text lets the client see now.
  struct Delta {
    std::string content;
    /// OpenAI's streamed tool-call deltas: {"index", "id", "type",
    /// "function": {"name", "arguments": ""}} when a call starts, then
    /// {"index", "function": {"arguments": fragment}}.
    std::vector<nlohmann::ordered_json> toolCalls;
  };

  /// The next piece of generated text.
  Delta add(std::string_view text);
  /// The end of the text: whatever was held back.
  Delta finish();

  /// The calls read so far (the content outside them is what add() and
  /// finish() returned as content).
  const std::vector<ToolCall> &calls() const { return toolCalls; }

private:
  /// Content that cannot be the start of a call: all of `pending` unless
  /// its end may begin the marker.
  Delta releaseContent(bool atEnd);
  /// Reads the calls of a buffered output that must be one (Llama3Json,
  /// Mistral, Required); false when it is not well-formed.
  bool parseWhole(const std::string &text, Delta &delta);
  /// Hermes: the calls between markers in `pending`, as far as complete.
  void parseHermes(Delta &delta, bool atEnd);
  void emitCall(ToolCall call, Delta &delta);
  std::string newId();

  ToolCallFormat format;
  std::string function;
  bool mistralIds;
  /// Text received and not yet released as content or read as calls.
  std::string pending;
  /// Llama3Json/Mistral/Required: the output is a call so far, held whole.
  bool holdingCall = false;
  bool started = false;
  std::vector<ToolCall> toolCalls;
};

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_TOOLCALLS_H
