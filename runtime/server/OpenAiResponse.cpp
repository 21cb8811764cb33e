//===- OpenAiResponse.cpp - the response bodies of the OpenAI API ---------===//
#include "runtime/server/OpenAiResponse.h"

#include "runtime/server/Blanks.h"
#include "runtime/server/RandomId.h"
#include "runtime/tokenizer/Tokenizer.h"

#include <chrono>

namespace llmc::runtime::server {
namespace {

using json = nlohmann::ordered_json;

json bytesOf(const std::string &text) {
  json bytes = json::array();
  for (unsigned char byte : text) bytes.push_back(byte);
  return bytes;
}
} // namespace

const char *finishReasonText(FinishReason reason) {
  switch (reason) {
  case FinishReason::Stop:
    return "stop";
  case FinishReason::Length:
    return "length";
  case FinishReason::Abort:
    return "abort";
  case FinishReason::None:
    break;
  }
  return nullptr;
}

ResponseBuilder::ResponseBuilder(const GenerationRequest &request, std::string modelName,
                                 size_t numPrompts, const tokenizer::Tokenizer *tokenizer)
    : chat(request.endpoint == Endpoint::ChatCompletions), stream(request.stream),
      withLogprobs(request.logprobs.has_value()),
      withPromptLogprobs(request.promptLogprobs.has_value()), echo(request.echo),
      echoOnly(request.echoOnly),
      tokensAsIds(request.returnTokensAsTokenIds.value_or(false)),
      continuousUsage(request.continuousUsage), includeStopString(request.includeStopStrInOutput),
      id(randomId(chat ? "chatcmpl-" : "cmpl-")), model(std::move(modelName)),
      created(std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count()),
      tokenizer(tokenizer), prompts(numPrompts),
      choicesPerPrompt(static_cast<size_t>(request.options.n)),
      choices(numPrompts * choicesPerPrompt) {
  for (size_t i = 0; i < numPrompts && i < request.prompts.size(); ++i)
    if (request.truncatePromptTokens == 0) prompts[i].text = request.prompts[i].text;
  bool mistralIds = request.modelToolCallFormat == ToolCallFormat::Mistral;
  for (Choice &choice : choices) {
    if (request.toolCallFormat)
      choice.toolCalls.emplace(*request.toolCallFormat, request.toolFunction, mistralIds);
    if (!request.reasoning) continue;
    choice.reasoning.emplace(request.startsThinking);
    if (request.toolCallFormat == ToolCallFormat::Hermes)
      choice.reasoningToolCalls.emplace(ToolCallFormat::Hermes, "", mistralIds);
  }
  if (!request.toolCallFormat) return;
  std::string_view marker = toolCallMarker(*request.toolCallFormat);
  if (!tokenizer || marker.empty()) return;
  std::optional<int32_t> id = tokenizer->tokenToId(marker);
  if (id && !tokenizer->decodingToken(*id, /*skipSpecialTokens=*/true)) {
    toolMarkerToken = *id;
    toolMarker = marker;
  }
}

std::string ResponseBuilder::tokenText(int32_t token) const {
  return tokenizer->decode({token}, /*skipSpecialTokens=*/false);
}

std::string ResponseBuilder::logprobToken(int32_t token) const {
  return tokensAsIds ? "token_id:" + std::to_string(token) : tokenText(token);
}

json ResponseBuilder::tokenLogprobs(const SampledToken &token, size_t offset) const {
  std::string text = logprobToken(token.token);
  if (chat) {
    json top = json::array();
    for (const TokenLogprob &alternative : token.topLogprobs) {
      std::string alternativeText = logprobToken(alternative.token);
      top.push_back({{"token", alternativeText},
                     {"logprob", alternative.logprob},
                     {"bytes", bytesOf(alternativeText)}});
    }
    return {{"content", json::array({{{"token", text},
                                       {"logprob", token.logprob},
                                       {"bytes", bytesOf(text)},
                                       {"top_logprobs", std::move(top)}}})}};
  }
  json top = json::object();
  for (const TokenLogprob &alternative : token.topLogprobs)
    top[logprobToken(alternative.token)] = alternative.logprob;
  return {{"tokens", {text}},
          {"token_logprobs", {token.logprob}},
          {"top_logprobs", json::array({std::move(top)})},
          {"text_offset", {offset}}};
}

std::string ResponseBuilder::echoText(const Prompt &prompt) const {
  if (prompt.text) return *prompt.text;
  return tokenizer ? tokenizer->decode(prompt.ids, /*skipSpecialTokens=*/false) : std::string();
}

json ResponseBuilder::echoLogprobs(const Prompt &prompt) const {
  json tokens = json::array(), logprobs = json::array(), top = json::array(),
       offsets = json::array();
  size_t offset = 0;
  for (size_t i = 0; i < prompt.ids.size(); ++i) {
    std::string text = logprobToken(prompt.ids[i]);
    tokens.push_back(text);
    offsets.push_back(offset);
    offset += text.size();
    // Token i's logprob is entry i - 1; the first token has none.
    if (i == 0 || i > prompt.logprobs.size()) {
      logprobs.push_back(nullptr);
      top.push_back(nullptr);
      continue;
    }
    const SampledToken &entry = prompt.logprobs[i - 1];
    logprobs.push_back(entry.logprob);
    json alternatives = json::object();
    for (const TokenLogprob &alternative : entry.topLogprobs)
      alternatives[logprobToken(alternative.token)] = alternative.logprob;
    top.push_back(std::move(alternatives));
  }
  json result = json::object();
  result["tokens"] = std::move(tokens);
  result["token_logprobs"] = std::move(logprobs);
  result["top_logprobs"] = std::move(top);
  result["text_offset"] = std::move(offsets);
  return result;
}

json ResponseBuilder::promptLogprobs(const Prompt &prompt) const {
  json list = json::array();
  list.push_back(nullptr);
  auto entryOf = [&](int32_t token, float logprob, int64_t rank) {
    json entry = json::object();
    entry["logprob"] = logprob;
    entry["rank"] = rank;
    entry["decoded_token"] = tokenText(token);
    return entry;
  };
  for (const SampledToken &token : prompt.logprobs) {
    // The prompt's token first, then its alternatives, as vLLM orders them.
    json position = json::object();
    position[std::to_string(token.token)] = entryOf(token.token, token.logprob, token.rank);
    for (size_t k = 0; k < token.topLogprobs.size(); ++k) {
      const TokenLogprob &alternative = token.topLogprobs[k];
      std::string key = std::to_string(alternative.token);
      if (!position.contains(key))
        position[key] = entryOf(alternative.token, alternative.logprob, int64_t(k + 1));
    }
    list.push_back(std::move(position));
  }
  return list;
}

void ResponseBuilder::appendLogprobs(json &into, const json &more) {
  if (into.is_null()) {
    into = more;
    return;
  }
  for (const char *key : {"content", "tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    if (!more.contains(key)) continue;
    for (const json &item : more[key]) into[key].push_back(item);
  }
}

json ResponseBuilder::envelope() const {
  return {{"id", id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created},
          {"model", model}};
}

json ResponseBuilder::usageOf(int64_t promptTokens, int64_t completionTokens) {
  return {{"prompt_tokens", promptTokens},
          {"completion_tokens", completionTokens},
          {"total_tokens", promptTokens + completionTokens}};
}

json ResponseBuilder::usage() const {
  int64_t completionTokens = 0;
  for (const Choice &choice : choices) completionTokens += choice.tokens;
  return usageOf(promptTokens, completionTokens);
}

std::vector<ToolCall> ResponseBuilder::callsOf(const Choice &choice) {
  std::vector<ToolCall> calls;
  for (const std::optional<ToolCallParser> *parser : {&choice.reasoningToolCalls, &choice.toolCalls})
    if (*parser) calls.insert(calls.end(), (*parser)->calls().begin(), (*parser)->calls().end());
  return calls;
}

json ResponseBuilder::finishReasonOf(const Choice &choice) {
  if (!choice.finishReason) return nullptr;
  if (std::string_view(choice.finishReason) == "stop" && !callsOf(choice).empty())
    return "tool_calls";
  return choice.finishReason;
}

namespace {
/// Moves a parser's tool-call deltas into `deltas`, their indices renumbered
/// into the choice's (`index` maps the parser's calls to the choice's).
void takeCalls(std::vector<json> &calls, std::vector<size_t> &index, size_t &numCalls,
               std::vector<json> &deltas) {
  for (json &call : calls) {
    size_t local = call["index"];
    if (call.contains("id")) index.push_back(numCalls++);
    call["index"] = index.at(local);
    deltas.push_back({{"tool_calls", json::array({std::move(call)})}});
  }
}

/// `text` through `parser` (all of it content without one), and at the end of
/// the output what the parser held back.
ToolCallParser::Delta feed(std::optional<ToolCallParser> &parser, const std::string &text,
                           bool last) {
  if (!parser) return {text, {}};
  ToolCallParser::Delta delta = parser->add(text);
  if (last) {
    ToolCallParser::Delta rest = parser->finish();
    delta.content += rest.content;
    for (json &call : rest.toolCalls) delta.toolCalls.push_back(std::move(call));
  }
  return delta;
}
} // namespace

std::vector<json> ResponseBuilder::chatDeltas(Choice &choice, const StreamEvent &event) {
  std::string text = event.text;
  if (event.token && event.token->token == toolMarkerToken) text = toolMarker + text;
  ReasoningSplitter::Split split{{}, std::move(text)};
  if (choice.reasoning) {
    split = choice.reasoning->add(split.content);
    if (event.last()) {
      ReasoningSplitter::Split rest = choice.reasoning->finish();
      split.reasoning += rest.reasoning;
      split.content += rest.content;
    }
  }
  std::vector<json> deltas;
  ToolCallParser::Delta thinking = feed(choice.reasoningToolCalls, split.reasoning, event.last());
  if (!thinking.content.empty()) deltas.push_back({{"reasoning_content", thinking.content}});
  takeCalls(thinking.toolCalls, choice.reasoningCallIndex, choice.numCallsSent, deltas);
  choice.reasoningText += thinking.content;
  ToolCallParser::Delta answer = feed(choice.toolCalls, split.content, event.last());
  if (!answer.content.empty()) deltas.push_back({{"content", answer.content}});
  takeCalls(answer.toolCalls, choice.contentCallIndex, choice.numCallsSent, deltas);
  choice.content += answer.content;
  return deltas;
}

std::vector<json> ResponseBuilder::add(size_t promptIndex, const StreamEvent &matched) {
  Prompt &prompt = prompts.at(promptIndex);
  if (!matched.promptTokenIds.empty()) prompt.ids = matched.promptTokenIds;
  if (!matched.promptLogprobs.empty()) {
    prompt.logprobs.insert(prompt.logprobs.end(), matched.promptLogprobs.begin(),
                           matched.promptLogprobs.end());
    return {};
  }
  std::optional<StreamEvent> withStop;
  if (includeStopString && matched.stopString) {
    withStop = matched;
    withStop->text += *matched.stopString;
  }
  const StreamEvent &event = withStop ? *withStop : matched;
  size_t index = promptIndex * choicesPerPrompt + static_cast<size_t>(event.index);
  Choice &choice = choices.at(index);
  // The choice's new text: the echo first, with its first token or its end.
  std::string text;
  json logprobs;
  if (echo && !choice.echoed && (event.token || event.last())) {
    choice.echoed = true;
    text = echoText(prompt);
    if (withLogprobs) logprobs = echoLogprobs(prompt);
  }
  // An echo alone leaves out the one token the engine sampled.
  if (event.token && !echoOnly) {
    ++choice.tokens;
    if (withLogprobs)
      appendLogprobs(logprobs, tokenLogprobs(*event.token, choice.text.size() + text.size()));
  }
  if (const char *reason = finishReasonText(event.finishReason)) {
    choice.finishReason = reason;
    if (echoOnly) {
      // Nothing was generated: max_tokens 0 is what ended it.
      if (event.finishReason != FinishReason::Abort) choice.finishReason = "length";
    } else if (event.stopString) {
      choice.stopReason = *event.stopString;
    } else if (event.finishReason == FinishReason::Stop && event.token) {
      choice.stopReason = event.token->token;
    }
  }
  if (!echoOnly) text += event.text;
  choice.text += text; // streamed too: the text offsets of logprobs count it
  std::vector<json> deltas;
  if (chat)
    deltas = chatDeltas(choice, event);
  else if (!text.empty())
    deltas.push_back({{"text", text}});
  if (!stream) {
    if (!logprobs.is_null()) appendLogprobs(choice.logprobs, logprobs);
    return {};
  }
  if (deltas.empty()) {
    if (logprobs.is_null() && !choice.finishReason && (choice.roleSent || !chat)) return {};
    deltas.push_back(!chat ? json{{"text", ""}}
                     : choice.roleSent ? json::object()
                                       : json{{"content", ""}});
  }

  std::vector<json> chunks;
  for (size_t i = 0; i < deltas.size(); ++i) {
    json entry = {{"index", index}};
    if (chat) {
      json delta = json::object();
      if (!choice.roleSent) delta["role"] = "assistant";
      choice.roleSent = true;
      delta.update(deltas[i]);
      entry["delta"] = std::move(delta);
    } else {
      entry["text"] = deltas[i]["text"];
    }
    entry["logprobs"] = i == 0 ? std::move(logprobs) : json();
    bool last = i + 1 == deltas.size();
    entry["finish_reason"] = last ? finishReasonOf(choice) : json();
    if (last && choice.finishReason) entry["stop_reason"] = choice.stopReason;
    json chunk = envelope();
    chunk["choices"] = json::array({std::move(entry)});
    if (continuousUsage) chunk["usage"] = usageOf(prompt.numTokens, choice.tokens);
    chunks.push_back(std::move(chunk));
  }
  return chunks;
}

json ResponseBuilder::message(const Choice &choice) {
  std::vector<ToolCall> calls = callsOf(choice);
  json message = {{"role", "assistant"}, {"content", choice.content}};
  if (choice.reasoning)
    message["reasoning_content"] =
        choice.reasoningText.empty() ? json() : json(choice.reasoningText);
  if (calls.empty()) return message;
  // The text around the calls, if any, is the content.
  std::string_view around = trimBlanks(choice.content);
  message["content"] = around.empty() ? json() : json(std::string(around));
  json list = json::array();
  for (const ToolCall &call : calls)
    list.push_back({{"id", call.id},
                    {"type", "function"},
                    {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
  message["tool_calls"] = std::move(list);
  return message;
}

json ResponseBuilder::usageChunk() const {
  json chunk = envelope();
  chunk["choices"] = json::array();
  chunk["usage"] = usage();
  return chunk;
}

json ResponseBuilder::response() const {
  json body = envelope();
  body["object"] = chat ? "chat.completion" : "text_completion";
  json list = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    const Choice &choice = choices[i];
    json entry = {{"index", i}};
    if (chat)
      entry["message"] = message(choice);
    else
      entry["text"] = choice.text;
    entry["logprobs"] = choice.logprobs;
    entry["finish_reason"] = finishReasonOf(choice);
    entry["stop_reason"] = choice.stopReason;
    if (withPromptLogprobs && !chat)
      entry["prompt_logprobs"] = promptLogprobs(prompts[i / choicesPerPrompt]);
    list.push_back(std::move(entry));
  }
  body["choices"] = std::move(list);
  if (withPromptLogprobs && chat) body["prompt_logprobs"] = promptLogprobs(prompts.at(0));
  body["usage"] = usage();
  return body;
}

} // namespace llmc::runtime::server
