//===- OpenAiResponse.h - the response bodies of the OpenAI API -*- C++ -*-===//
//
// Builds what /v1/completions and /v1/chat/completions send back from the
// engine's events: one chunk per event when streaming (OpenAI's
// `text_completion` / `chat.completion.chunk` objects, the chat role first,
// the usage last when asked), or the whole response at the end. A chat
// request with tools has its choices' tool calls read out of their text
// (ToolCalls.h) and sent as OpenAI's tool_calls, streamed as deltas; a
// reasoning model's <think> text goes to reasoning_content (Reasoning.h).
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_OPENAIRESPONSE_H
#define LLMC_RUNTIME_SERVER_OPENAIRESPONSE_H

#include "runtime/engine/AsyncEngine.h"
#include "runtime/server/OpenAiRequest.h"
#include "runtime/server/Reasoning.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace llmc::runtime::tokenizer {
class Tokenizer;
}

namespace llmc::runtime::server {

/// The finish_reason of a finished sample: "stop", "length" or "abort".
const char *finishReasonText(FinishReason reason);

class ResponseBuilder {
public:
  /// `tokenizer` names the tokens of logprobs (which need one).
  ResponseBuilder(const GenerationRequest &request, std::string modelName, size_t numChoices,
                  const tokenizer::Tokenizer *tokenizer);

  /// Takes the event of choice `index`; returns its streamed chunks (none
  /// when it carries nothing to send).
  std::vector<nlohmann::ordered_json> add(size_t index, const StreamEvent &event);
  void addPromptTokens(int64_t count) { promptTokens += count; }
  int64_t numPromptTokens() const { return promptTokens; }

  /// The final chunk of a stream that asked for usage (no choices).
  nlohmann::ordered_json usageChunk() const;
  /// The whole response, when not streaming.
  nlohmann::ordered_json response() const;

private:
  struct Choice {
    std::string text;
    int64_t tokens = 0;
    const char *finishReason = nullptr;
    nlohmann::ordered_json stopReason;
    nlohmann::ordered_json logprobs; // accumulated when not streaming
    bool roleSent = false;
    /// Reads the tool calls of a chat request with tools.
    std::optional<ToolCallParser> toolCalls;
    /// A reasoning model's: splits off the <think> text, and reads the
    /// (Hermes) calls written inside it, which are calls all the same.
    std::optional<ReasoningSplitter> reasoning;
    std::optional<ToolCallParser> reasoningToolCalls;
    std::string reasoningText;
    /// The answer's text: apart from the reasoning, and outside the tool calls.
    std::string content;
    /// The streamed index of each call of reasoningToolCalls and toolCalls.
    std::vector<size_t> reasoningCallIndex, contentCallIndex;
    size_t numCallsSent = 0;
  };

  /// The finish_reason a choice reports: "tool_calls" when it stopped after
  /// calling tools.
  static nlohmann::ordered_json finishReasonOf(const Choice &choice);
  /// Every call a choice made, those inside its reasoning first.
  static std::vector<ToolCall> callsOf(const Choice &choice);
  /// A chat choice's message: its content, and its tool calls when it made some.
  static nlohmann::ordered_json message(const Choice &choice);
  /// A chat event's text through the choice's reasoning splitter and
  /// tool-call parsers: its chunks' deltas (reasoning, content, tool calls).
  std::vector<nlohmann::ordered_json> chatDeltas(Choice &choice, const StreamEvent &event);

  nlohmann::ordered_json envelope() const;
  nlohmann::ordered_json usage() const;
  /// The logprobs of the event's token, in the endpoint's format; text
  /// offset `offset` (completions).
  nlohmann::ordered_json tokenLogprobs(const SampledToken &token, size_t offset) const;
  /// Appends one token's logprobs to those of the tokens before it.
  static void appendLogprobs(nlohmann::ordered_json &into, const nlohmann::ordered_json &more);
  std::string tokenText(int32_t id) const;

  bool chat;
  bool stream;
  bool withLogprobs;
  /// vLLM's include_stop_str_in_output: a matched stop string ends the text.
  bool includeStopString;
  std::string id;
  std::string model;
  int64_t created;
  const tokenizer::Tokenizer *tokenizer;
  /// The special token that starts the format's calls (Mistral's
  /// [TOOL_CALLS]), which decoding leaves out of the text; -1 when none.
  int32_t toolMarkerToken = -1;
  std::string toolMarker;
  std::vector<Choice> choices;
  int64_t promptTokens = 0;
};

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_OPENAIRESPONSE_H
