//===- ToolCalls.cpp - tool calls out of generated text -------------------===//
#include "runtime/server/ToolCalls.h"

#include "runtime/engine/StopStrings.h"
#include "runtime/server/Blanks.h"
#include "runtime/server/RandomId.h"

#include <random>

namespace llmc::runtime::server {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistralMarker = "[TOOL_CALLS]";

/// A tool call's id: OpenAI's "call_..." or, for Mistral, 9 random letters
/// and digits.
std::string toolCallId(bool mistral) {
  if (!mistral) return randomId("call_");
  static thread_local std::mt19937_64 random{std::random_device{}()};
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id;
  for (int i = 0; i < 9; ++i) id += kAlphabet[random() % (sizeof kAlphabet - 1)];
  return id;
}

/// A call object {"name": string, <argumentsKey>: object}; nullopt otherwise.
/// Its id is left for the parser.
std::optional<ToolCall> callOf(const json &object, const char *argumentsKey) {
  if (!object.is_object()) return std::nullopt;
  auto name = object.find("name");
  auto arguments = object.find(argumentsKey);
  if (name == object.end() || !name->is_string()) return std::nullopt;
  if (arguments != object.end() && !arguments->is_object()) return std::nullopt;
  return ToolCall{{}, name->get<std::string>(),
                  arguments == object.end() ? "{}" : arguments->dump()};
}

/// `text` cut at the ';' that are outside JSON strings and brackets.
std::vector<std::string_view> topLevelParts(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  bool inString = false, escaped = false;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ';' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

} // namespace

std::optional<ToolCallFormat> toolCallFormatNamed(std::string_view name) {
  if (name == "hermes") return ToolCallFormat::Hermes;
  if (name == "llama3_json") return ToolCallFormat::Llama3Json;
  if (name == "mistral") return ToolCallFormat::Mistral;
  return std::nullopt;
}

std::optional<ToolCallFormat> detectToolCallFormat(std::string_view chatTemplate) {
  if (chatTemplate.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::Hermes;
  if (chatTemplate.find(kMistralMarker) != std::string_view::npos) return ToolCallFormat::Mistral;
  // Llama 3.1/3.2 ask for {"name": ..., "parameters": ...} between their headers.
  if (chatTemplate.find("<|start_header_id|>") != std::string_view::npos &&
      chatTemplate.find("\"parameters\"") != std::string_view::npos)
    return ToolCallFormat::Llama3Json;
  return std::nullopt;
}

std::string_view toolCallMarker(ToolCallFormat format) {
  switch (format) {
  case ToolCallFormat::Hermes:
    return kHermesOpen;
  case ToolCallFormat::Mistral:
    return kMistralMarker;
  default:
    return {};
  }
}

ToolCallParser::ToolCallParser(ToolCallFormat format, std::string function, bool mistralIds)
    : format(format), function(std::move(function)), mistralIds(mistralIds) {}

void ToolCallParser::emitCall(ToolCall call, Delta &delta) {
  size_t index = toolCalls.size();
  call.id = toolCallId(mistralIds);
  delta.toolCalls.push_back({{"index", index},
                             {"id", call.id},
                             {"type", "function"},
                             {"function", {{"name", call.name}, {"arguments", ""}}}});
  delta.toolCalls.push_back({{"index", index}, {"function", {{"arguments", call.arguments}}}});
  toolCalls.push_back(std::move(call));
}

ToolCallParser::Delta ToolCallParser::releaseContent(bool atEnd) {
  Delta delta;
  size_t held = atEnd ? 0 : partialMatchAtEnd(pending, toolCallMarker(format));
  // Blanks before a call are not content: hold them until text follows.
  size_t end = pending.size() - held;
  if (!atEnd)
    while (end > 0 && isBlank(pending[end - 1])) --end;
  else if (!toolCalls.empty() && trimBlanks(pending).empty())
    end = 0, pending.clear();
  delta.content = pending.substr(0, end);
  pending.erase(0, end);
  return delta;
}

bool ToolCallParser::parseWhole(const std::string &text, Delta &delta) {
  std::vector<ToolCall> calls;
  if (format == ToolCallFormat::Llama3Json) {
    for (std::string_view part : topLevelParts(text)) {
      json object = json::parse(trimBlanks(part), nullptr, /*allow_exceptions=*/false);
      std::optional<ToolCall> call = callOf(object, "parameters");
      if (!call) call = callOf(object, "arguments");
      if (!call) return false;
      calls.push_back(std::move(*call));
    }
  } else {
    std::string_view body = trimBlanks(text);
    if (format == ToolCallFormat::Mistral) body = trimBlanks(body.substr(kMistralMarker.size()));
    json list = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (!list.is_array() || list.empty()) return false;
    const char *key = format == ToolCallFormat::Required ? "parameters" : "arguments";
    for (const json &object : list) {
      std::optional<ToolCall> call = callOf(object, key);
      if (!call) return false;
      calls.push_back(std::move(*call));
    }
  }
  for (ToolCall &call : calls) emitCall(std::move(call), delta);
  return true;
}

void ToolCallParser::parseHermes(Delta &delta, bool atEnd) {
  while (true) {
    size_t open = pending.find(kHermesOpen);
    if (open == std::string::npos) return;
    // Content before the call; blanks right before it are dropped.
    std::string before = pending.substr(0, open);
    before.resize(trimTrailingBlanks(before).size());
    delta.content += before;
    pending.erase(0, open);
    size_t close = pending.find(kHermesClose);
    if (close == std::string::npos && !atEnd) return; // the call is still coming
    size_t bodyEnd = close == std::string::npos ? pending.size() : close;
    size_t callEnd = close == std::string::npos ? pending.size() : close + kHermesClose.size();
    json object = json::parse(trimBlanks(std::string_view(pending).substr(
                                  kHermesOpen.size(), bodyEnd - kHermesOpen.size())),
                              nullptr, /*allow_exceptions=*/false);
    if (std::optional<ToolCall> call = callOf(object, "arguments")) {
      emitCall(std::move(*call), delta);
    } else {
      delta.content += pending.substr(0, callEnd); // not a call: the model's text
    }
    pending.erase(0, callEnd);
  }
}

ToolCallParser::Delta ToolCallParser::add(std::string_view text) {
  pending += text;
  Delta delta;
  switch (format) {
  case ToolCallFormat::Named:
    if (!started) {
      emitCall({{}, function, ""}, delta);
      delta.toolCalls.pop_back(); // its arguments come as fragments
      started = true;
    }
    if (!pending.empty()) {
      delta.toolCalls.push_back({{"index", 0}, {"function", {{"arguments", pending}}}});
      toolCalls[0].arguments += pending;
      pending.clear();
    }
    return delta;
  case ToolCallFormat::Required:
    return delta; // one JSON list, read at the end
  case ToolCallFormat::Llama3Json:
  case ToolCallFormat::Mistral: {
    if (!started) {
      std::string_view head = trimBlanks(pending);
      if (head.empty()) return delta;
      std::string_view start = head.substr(0, kMistralMarker.size());
      bool maybeCall = format == ToolCallFormat::Llama3Json
                           ? head.front() == '{'
                           : kMistralMarker.substr(0, start.size()) == start;
      if (format == ToolCallFormat::Mistral && maybeCall && head.size() < kMistralMarker.size())
        return delta; // could still become the marker
      started = true;
      holdingCall = maybeCall;
    }
    if (holdingCall) return delta;
    return releaseContent(/*atEnd=*/false);
  }
  case ToolCallFormat::Hermes: {
    parseHermes(delta, /*atEnd=*/false);
    if (pending.compare(0, kHermesOpen.size(), kHermesOpen) == 0) return delta; // in a call
    Delta content = releaseContent(/*atEnd=*/false);
    delta.content += content.content;
    return delta;
  }
  }
  return delta;
}

ToolCallParser::Delta ToolCallParser::finish() {
  Delta delta;
  switch (format) {
  case ToolCallFormat::Named:
    return delta;
  case ToolCallFormat::Required:
  case ToolCallFormat::Llama3Json:
  case ToolCallFormat::Mistral:
    if ((format == ToolCallFormat::Required || holdingCall) && parseWhole(pending, delta)) {
      pending.clear();
      return delta;
    }
    return releaseContent(/*atEnd=*/true); // not a call after all: text
  case ToolCallFormat::Hermes: {
    parseHermes(delta, /*atEnd=*/true);
    Delta content = releaseContent(/*atEnd=*/true);
    delta.content += content.content;
    return delta;
  }
  }
  return delta;
}

} // namespace llmc::runtime::server
