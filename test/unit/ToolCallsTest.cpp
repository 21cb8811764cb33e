//===- ToolCallsTest.cpp - tool calls read out of generated text ----------===//
#include "runtime/server/ToolCalls.h"

#include <gtest/gtest.h>

using namespace llmc::runtime::server;
using nlohmann::ordered_json;

namespace {

/// Feeds `text` a few characters at a time, as tokens come; returns the
/// streamed content and the deltas of the calls, joined per call.
struct Streamed {
  std::string content;
  std::vector<std::string> names, arguments;
};

Streamed stream(ToolCallParser &parser, const std::string &text, size_t step = 3) {
  Streamed out;
  auto take = [&](ToolCallParser::Delta delta) {
    out.content += delta.content;
    for (const ordered_json &call : delta.toolCalls) {
      size_t index = call["index"];
      if (call.contains("id")) {
        EXPECT_EQ(index, out.names.size());
        EXPECT_EQ(call["type"], "function");
        EXPECT_EQ(call["id"].get<std::string>().rfind("call_", 0), 0u);
        out.names.push_back(call["function"]["name"]);
        out.arguments.push_back(call["function"]["arguments"]);
      } else {
        ASSERT_LT(index, out.arguments.size());
        out.arguments[index] += call["function"]["arguments"].get<std::string>();
      }
    }
  };
  for (size_t i = 0; i < text.size(); i += step) take(parser.add(text.substr(i, step)));
  take(parser.finish());
  return out;
}

} // namespace

TEST(ToolCalls, FormatsAreReadOffTheChatTemplate) {
  EXPECT_EQ(detectToolCallFormat("... <tool_call>\\n{\"name\": ... </tool_call> ..."),
            ToolCallFormat::Hermes);
  EXPECT_EQ(detectToolCallFormat("{{- '[TOOL_CALLS] [' }}"), ToolCallFormat::Mistral);
  EXPECT_EQ(detectToolCallFormat("<|start_header_id|>... {\"name\": function name, "
                                 "\"parameters\": dictionary ...}"),
            ToolCallFormat::Llama3Json);
  EXPECT_FALSE(detectToolCallFormat("{% for message in messages %}{{ message.content }}"));
  EXPECT_EQ(toolCallFormatNamed("hermes"), ToolCallFormat::Hermes);
  EXPECT_FALSE(toolCallFormatNamed("pythonic"));
}

TEST(ToolCalls, HermesCallsBetweenContent) {
  for (size_t step : {1, 3, 100}) {
    ToolCallParser parser(ToolCallFormat::Hermes);
    Streamed out = stream(parser,
                          "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                          "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", "
                          "\"arguments\": {}}\n</tool_call>",
                          step);
    EXPECT_EQ(out.content, "Let me check."); // the blanks before a call are not content
    EXPECT_EQ(out.names, (std::vector<std::string>{"get_weather", "now"}));
    EXPECT_EQ(out.arguments, (std::vector<std::string>{R"({"city":"Paris"})", "{}"}));
    ASSERT_EQ(parser.calls().size(), 2u);
    EXPECT_EQ(parser.calls()[0].arguments, R"({"city":"Paris"})");
    EXPECT_NE(parser.calls()[0].id, parser.calls()[1].id);
  }
}

TEST(ToolCalls, HermesTextThatIsNotACallStaysContent) {
  ToolCallParser plain(ToolCallFormat::Hermes);
  EXPECT_EQ(stream(plain, "a < b and <tool").content, "a < b and <tool");
  ToolCallParser malformed(ToolCallFormat::Hermes);
  Streamed out = stream(malformed, "<tool_call>{\"nam\": 1}</tool_call> done");
  EXPECT_EQ(out.content, "<tool_call>{\"nam\": 1}</tool_call> done");
  EXPECT_TRUE(out.names.empty());
  // A call the output ended inside, without its closing tag, still counts.
  ToolCallParser unclosed(ToolCallFormat::Hermes);
  EXPECT_EQ(stream(unclosed, "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}").names,
            (std::vector<std::string>{"f"}));
}

TEST(ToolCalls, Llama3JsonIsTheWholeOutput) {
  ToolCallParser one(ToolCallFormat::Llama3Json);
  Streamed call = stream(one, " {\"name\": \"f\", \"parameters\": {\"q\": \"a;b\"}}");
  EXPECT_EQ(call.names, (std::vector<std::string>{"f"}));
  EXPECT_EQ(call.arguments[0], R"({"q":"a;b"})");
  EXPECT_EQ(call.content, "");
  ToolCallParser two(ToolCallFormat::Llama3Json);
  EXPECT_EQ(stream(two, "{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", "
                        "\"parameters\": {}}")
                .names,
            (std::vector<std::string>{"f", "g"}));
  ToolCallParser prose(ToolCallFormat::Llama3Json);
  EXPECT_EQ(stream(prose, "Paris is sunny.").content, "Paris is sunny.");
  ToolCallParser notACall(ToolCallFormat::Llama3Json);
  Streamed json = stream(notACall, "{\"answer\": 4}");
  EXPECT_EQ(json.content, "{\"answer\": 4}");
  EXPECT_TRUE(json.names.empty());
}

TEST(ToolCalls, MistralListAfterTheMarker) {
  ToolCallParser parser(ToolCallFormat::Mistral);
  Streamed out = stream(parser, "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"x\": 2}}, "
                                "{\"name\": \"g\", \"arguments\": {}}]");
  EXPECT_EQ(out.names, (std::vector<std::string>{"f", "g"}));
  EXPECT_EQ(out.arguments[0], R"({"x":2})");
  ToolCallParser prose(ToolCallFormat::Mistral);
  EXPECT_EQ(stream(prose, "[TOOL is a word").content, "[TOOL is a word");
}

TEST(ToolCalls, RequiredAndNamedOutputs) {
  ToolCallParser required(ToolCallFormat::Required);
  Streamed list = stream(required, R"([{"name": "f", "parameters": {"a": [1, 2]}}])");
  EXPECT_EQ(list.names, (std::vector<std::string>{"f"}));
  EXPECT_EQ(list.arguments[0], R"({"a":[1,2]})");
  ToolCallParser named(ToolCallFormat::Named, "get_weather");
  Streamed arguments = stream(named, R"({"city": "Paris"})", 2);
  EXPECT_EQ(arguments.names, (std::vector<std::string>{"get_weather"}));
  EXPECT_EQ(arguments.arguments[0], R"({"city": "Paris"})");
  EXPECT_EQ(named.calls()[0].arguments, R"({"city": "Paris"})");
}
