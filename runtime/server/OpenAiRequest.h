//===- OpenAiRequest.h - the request bodies of the OpenAI API ---*- C++ -*-===//
//
// Reads the JSON body of POST /v1/completions, /v1/chat/completions and
// /v1/embeddings into
// what the engine runs, checking each field's type and range as OpenAI's API
// does; any fault is an ApiError (400) naming the field. Also vLLM's
// POST /tokenize and /detokenize. Fields of OpenAI's
// that llmc does not serve (best_of, suffix, chat's echo, ...) are refused
// rather than silently ignored; unknown fields are ignored, as vLLM does.
// Chat requests may carry tools (tools, tool_choice, parallel_tool_calls) and
// chat_template_kwargs; completions echo. vLLM's extensions top_k, min_p,
// repetition_penalty, ignore_eos, stop_token_ids, min_tokens, allowed_token_ids,
// include_stop_str_in_output, skip_special_tokens, truncate_prompt_tokens,
// prompt_logprobs, return_tokens_as_token_ids, priority and stream_options'
// continuous_usage_stats are accepted too, and its structured-output fields
// guided_json, guided_regex, guided_choice and guided_grammar beside
// OpenAI's response_format.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_OPENAIREQUEST_H
#define LLMC_RUNTIME_SERVER_OPENAIREQUEST_H

#include "runtime/engine/Engine.h"
#include "runtime/server/ToolCalls.h"
#include "runtime/structured/Grammar.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace llmc::runtime::server {

enum class Endpoint { Completions, ChatCompletions };

/// One prompt: text (tokenized by the engine) or token ids.
struct PromptInput {
  std::optional<std::string> text;
  std::vector<int32_t> ids;
};

struct GenerationRequest {
  Endpoint endpoint = Endpoint::Completions;
  /// Empty when the request names none.
  std::string model;
  /// Completions: one or more prompts, each with `options.n` choices.
  std::vector<PromptInput> prompts;
  /// Chat: the conversation as sent (in its key order, which templates that
  /// print messages with tojson keep), for the chat template.
  nlohmann::ordered_json messages;
  /// max_tokens when given; else the engine runs to max_model_len (chat) or
  /// OpenAI's default of 16 (completions).
  RequestOptions options;
  std::vector<std::string> stop;
  bool ignoreEos = false;
  bool stream = false;
  bool includeUsage = false;
  /// vLLM's stream_options.continuous_usage_stats (with include_usage): every
  /// chunk carries its choice's usage so far.
  bool continuousUsage = false;
  /// Return logprobs, with this many top alternatives per token.
  std::optional<int32_t> logprobs;
  /// vLLM's prompt_logprobs: return the prompt tokens' logprobs, with this
  /// many top alternatives (not when streaming).
  std::optional<int32_t> promptLogprobs;
  /// Completions' echo: each choice's text (and logprobs) starts with the
  /// prompt's; with max_tokens 0 (echoOnly) it is the prompt alone.
  bool echo = false;
  bool echoOnly = false;
  /// vLLM's return_tokens_as_token_ids: logprobs name tokens "token_id:N"
  /// (text that is not valid UTF-8 on its own stays exact); nullopt: the
  /// server's default.
  std::optional<bool> returnTokensAsTokenIds;
  /// What the output is constrained to (response_format, guided_*, or the
  /// call that tool_choice requires), compiled into options.grammar by the
  /// server.
  std::optional<structured::GrammarSpec> grammar;

  /// Chat: the tools as given (for the chat template); null when none.
  nlohmann::ordered_json tools;
  enum class ToolChoice { None, Auto, Required, Named };
  ToolChoice toolChoice = ToolChoice::None;
  /// tool_choice Named: the function.
  std::string toolFunction;
  /// How the output's tool calls are read: set here for Required and Named,
  /// by the server (from the model's format) for Auto; nullopt: no calls.
  std::optional<ToolCallFormat> toolCallFormat;
  /// The model's own format (set by the server): Mistral's templates take
  /// back only ids of 9 characters.
  std::optional<ToolCallFormat> modelToolCallFormat;
  /// A reasoning model's chat, unless tool_choice forces a call (set by the
  /// server): its <think> text is reasoning_content; `startsThinking` when
  /// the prompt opened the <think> block.
  bool reasoning = false;
  bool startsThinking = false;
  /// chat_template_kwargs: more variables for the chat template.
  nlohmann::ordered_json templateKwargs = nlohmann::ordered_json::object();
  /// vLLM's include_stop_str_in_output: keep a matched stop string.
  bool includeStopStrInOutput = false;
  /// vLLM's skip_special_tokens: leave special tokens' text out.
  bool skipSpecialTokens = true;
  /// vLLM's truncate_prompt_tokens: keep each prompt's last this many
  /// tokens; 0 keeps them all.
  int64_t truncatePromptTokens = 0;
};

/// Parses a request body; `maxModelLen` bounds max_tokens.
GenerationRequest parseGenerationRequest(Endpoint endpoint, const nlohmann::ordered_json &body,
                                         int64_t maxModelLen);

/// The pooling endpoints: OpenAI's POST /v1/embeddings, for an embedding
/// model, and vLLM's POST /classify, for a sequence classifier.
enum class PoolingEndpoint { Embeddings, Classify };

/// A pooling endpoint's request.
struct PoolingRequest {
  /// Empty when the request names none.
  std::string model;
  /// input: one or more texts or token id lists, each pooled alone.
  std::vector<PromptInput> inputs;
  /// Embeddings' encoding_format "base64": each embedding the base64 of its
  /// little-endian float32 bytes (what OpenAI's Python client asks for).
  bool base64 = false;
  /// vLLM's normalize (embeddings) and use_activation (both; true by
  /// default), and OpenAI's dimensions (a Matryoshka model's embeddings).
  PoolingParams pooling;
  /// vLLM's add_special_tokens: the tokenizer's BOS template on text inputs.
  bool addSpecialTokens = true;
  /// vLLM's truncate_prompt_tokens, as in GenerationRequest.
  int64_t truncatePromptTokens = 0;
};
PoolingRequest parsePoolingRequest(PoolingEndpoint endpoint, const nlohmann::ordered_json &body,
                                   int64_t maxModelLen);

/// vLLM's scoring endpoints: POST /score (text_1 against text_2) and POST
/// /rerank (Jina's and Cohere's API: a query against documents, best first).
enum class ScoringEndpoint { Score, Rerank };

struct ScoringRequest {
  /// Empty when the request names none.
  std::string model;
  /// text_1, or the query: one text, or (score) one per text of texts2.
  std::vector<std::string> texts1;
  /// text_2, or the documents (strings, or Cohere's {"text": ...}).
  std::vector<std::string> texts2;
  /// Rerank's top_n: answer with the best this many documents; 0: all.
  int64_t topN = 0;
  /// Rerank's return_documents: give each result its document's text.
  bool returnDocuments = true;
  /// use_activation: a cross-encoder's probability, not its logit.
  bool activation = true;
  /// truncate_prompt_tokens: cut each prompt on the right to this many
  /// tokens, as the tokenizer's truncation does; 0 keeps them all.
  int64_t truncatePromptTokens = 0;
};
ScoringRequest parseScoringRequest(ScoringEndpoint endpoint, const nlohmann::ordered_json &body,
                                   int64_t maxModelLen);

/// vLLM's POST /tokenize: a prompt, or chat messages that the chat template
/// renders first.
struct TokenizeRequest {
  std::string model;
  /// The text to encode; nullopt for messages.
  std::optional<std::string> prompt;
  nlohmann::ordered_json messages, tools;
  nlohmann::ordered_json templateKwargs = nlohmann::ordered_json::object();
  bool addGenerationPrompt = true;
  /// The tokenizer's BOS template: by default for a prompt, not for
  /// messages (the chat template writes its own).
  bool addSpecialTokens = true;
  /// Also return each token's string (the tokenizer's vocabulary entry).
  bool returnTokenStrs = false;
};
TokenizeRequest parseTokenizeRequest(const nlohmann::ordered_json &body);

/// vLLM's POST /detokenize: token ids back to text.
struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;
};
DetokenizeRequest parseDetokenizeRequest(const nlohmann::ordered_json &body);

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_OPENAIREQUEST_H
