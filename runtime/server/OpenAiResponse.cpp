//===- OpenAiResponse.cpp - the response bodies of the OpenAI API ---------===//
#include "runtime/server/OpenAiResponse.h"

#include "runtime/tokenizer/Tokenizer.h"

#include <chrono>
#include <cstdio>
#include <random>

namespace llmc::runtime::server {
namespace {

using json = nlohmann::ordered_json;

/// "cmpl-" or "chatcmpl-" and 24 random hex digits, as OpenAI's ids look.
std::string responseId(bool chat) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  char digits[32];
  std::snprintf(digits, sizeof digits, "%016llx%08llx", (unsigned long long)random(),
                (unsigned long long)(random() & 0xffffffffu));
  return std::string(chat ? "chatcmpl-" : "cmpl-") + digits;
}

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
                                 size_t numChoices, const tokenizer::Tokenizer *tokenizer)
    : chat(request.endpoint == Endpoint::ChatCompletions), stream(request.stream),
      withLogprobs(request.logprobs.has_value()), id(responseId(chat)),
      model(std::move(modelName)),
      created(std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count()),
      tokenizer(tokenizer), choices(numChoices) {}

std::string ResponseBuilder::tokenText(int32_t token) const {
  return tokenizer->decode({token}, /*skipSpecialTokens=*/false);
}

json ResponseBuilder::tokenLogprobs(const SampledToken &token, size_t offset) const {
  std::string text = tokenText(token.token);
  if (chat) {
    json top = json::array();
    for (const TokenLogprob &alternative : token.topLogprobs) {
      std::string alternativeText = tokenText(alternative.token);
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
    top[tokenText(alternative.token)] = alternative.logprob;
  return {{"tokens", {text}},
          {"token_logprobs", {token.logprob}},
          {"top_logprobs", json::array({std::move(top)})},
          {"text_offset", {offset}}};
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

json ResponseBuilder::usage() const {
  int64_t completionTokens = 0;
  for (const Choice &choice : choices) completionTokens += choice.tokens;
  return {{"prompt_tokens", promptTokens},
          {"completion_tokens", completionTokens},
          {"total_tokens", promptTokens + completionTokens}};
}

json ResponseBuilder::add(size_t index, const StreamEvent &event) {
  Choice &choice = choices.at(index);
  json logprobs;
  if (event.token) {
    ++choice.tokens;
    if (withLogprobs) logprobs = tokenLogprobs(*event.token, choice.text.size());
  }
  if (const char *reason = finishReasonText(event.finishReason)) {
    choice.finishReason = reason;
    if (event.stopString)
      choice.stopReason = *event.stopString;
    else if (event.finishReason == FinishReason::Stop && event.token)
      choice.stopReason = event.token->token;
  }
  choice.text += event.text; // streamed too: the text offsets of logprobs count it
  if (!stream) {
    if (!logprobs.is_null()) appendLogprobs(choice.logprobs, logprobs);
    return nullptr;
  }
  if (event.text.empty() && logprobs.is_null() && !choice.finishReason && choice.roleSent)
    return nullptr;

  json entry = {{"index", index}};
  if (chat) {
    json delta = json::object();
    if (!choice.roleSent) delta["role"] = "assistant";
    if (!event.text.empty() || !choice.roleSent) delta["content"] = event.text;
    choice.roleSent = true;
    entry["delta"] = std::move(delta);
  } else {
    entry["text"] = event.text;
  }
  entry["logprobs"] = std::move(logprobs);
  entry["finish_reason"] = choice.finishReason ? json(choice.finishReason) : json();
  if (choice.finishReason) entry["stop_reason"] = choice.stopReason;
  json chunk = envelope();
  chunk["choices"] = json::array({std::move(entry)});
  return chunk;
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
      entry["message"] = {{"role", "assistant"}, {"content", choice.text}};
    else
      entry["text"] = choice.text;
    entry["logprobs"] = choice.logprobs;
    entry["finish_reason"] = choice.finishReason ? json(choice.finishReason) : json();
    entry["stop_reason"] = choice.stopReason;
    list.push_back(std::move(entry));
  }
  body["choices"] = std::move(list);
  body["usage"] = usage();
  return body;
}

} // namespace llmc::runtime::server
