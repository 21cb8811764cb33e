//===- OpenAiResponse.h - the response bodies of the OpenAI API -*- C++ -*-===//
//
// Builds what /v1/completions and /v1/chat/completions send back from the
// engine's events: one chunk per event when streaming (OpenAI's
// `text_completion` / `chat.completion.chunk` objects, the chat role first,
// the usage last when asked), or the whole response at the end. A chat
// request with tools has its choices' tool calls read out of their text
// (ToolCalls.h) and sent as OpenAI's tool_calls, streamed as deltas; a
// reasoning model's <think> text goes to reasoning_content (Reasoning.h).
// A completion's echo starts each choice with its prompt (and the prompt
// tokens' logprobs, the first null, when logprobs are asked for); vLLM's
// prompt_logprobs go in each choice (completions) or beside the choices (chat).
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
  /// `request.options.n` choices for each of `numPrompts` prompts, the
  /// request's text prompts still in it (echoed as given). `tokenizer` names
  /// the tokens of logprobs (which need one).
  ResponseBuilder(const GenerationRequest &request, std::string modelName, size_t numPrompts,
                  const tokenizer::Tokenizer *tokenizer);

  /// Takes an event of prompt `prompt` (of its choice event.index); returns
  /// its streamed chunks (none when it carries nothing to send).
  std::vector<nlohmann::ordered_json> add(size_t prompt, const StreamEvent &event);
  /// The length of prompt `prompt` in tokens (once per prompt).
  void addPromptTokens(size_t prompt, int64_t count) {
    prompts.at(prompt).numTokens = count;
    promptTokens += count;
  }
  int64_t numPromptTokens() const { return promptTokens; }

  /// The final chunk of a stream that asked for usage (no choices).
  nlohmann::ordered_json usageChunk() const;
  /// The whole response, when not streaming.
  nlohmann::ordered_json response() const;

private:
  /// What an echo and prompt logprobs need of one prompt.
  struct Prompt {
    /// The text to echo as given: a text prompt's, unless truncated.
    std::optional<std::string> text;
    std::vector<int32_t> ids;
    int64_t numTokens = 0;
    /// The logprobs of tokens 1, 2, ... so far.
    std::vector<SampledToken> logprobs;
  };
  struct Choice {
    bool echoed = false;
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
  /// OpenAI's usage object.
  static nlohmann::ordered_json usageOf(int64_t promptTokens, int64_t completionTokens);
  /// The logprobs of the event's token, in the endpoint's format; text
  /// offset `offset` (completions).
  nlohmann::ordered_json tokenLogprobs(const SampledToken &token, size_t offset) const;
  /// Appends one token's logprobs to those of the tokens before it.
  static void appendLogprobs(nlohmann::ordered_json &into, const nlohmann::ordered_json &more);
  /// The echo of a prompt: its text, and its tokens' logprobs in the
  /// completions format (offsets from 0; null for the first token).
  std::string echoText(const Prompt &prompt) const;
  nlohmann::ordered_json echoLogprobs(const Prompt &prompt) const;
  /// vLLM's prompt_logprobs: null, then per token {"id": {logprob, rank,
  /// decoded_token}} for it and its alternatives.
  nlohmann::ordered_json promptLogprobs(const Prompt &prompt) const;
  std::string tokenText(int32_t id) const;
  /// How logprobs name a token: its text, or "token_id:N".
  std::string logprobToken(int32_t id) const;

  bool chat;
  bool stream;
  bool withLogprobs;
  bool withPromptLogprobs;
  bool echo;
  bool echoOnly;
  bool tokensAsIds;
  bool continuousUsage;
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
  std::vector<Prompt> prompts;
  size_t choicesPerPrompt;
  std::vector<Choice> choices;
  int64_t promptTokens = 0;
};

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_OPENAIRESPONSE_H
