//===- ChatTemplateTest.cpp - the chat-template engine on small cases -----===//
//
// Parse errors (what the engine refuses, with line and column), whitespace
// control, loops, scoping, namespace(), raise_exception, Undefined, Python's
// formatting of values, tojson, thread safety, tokenizer_config.json's
// chat_template and the C API. The expected texts are what jinja2 renders in
// transformers' environment; test/python/test_chat_template.py compares whole
// model templates with jinja2 itself.
//
//===----------------------------------------------------------------------===//
#include "runtime/chat/ChatTemplate.h"
#include "llmc/Runtime/llmc_runtime.h"
#include "runtime/tokenizer/TokenizerConfig.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace llmc::runtime;
using namespace llmc::runtime::chat;
using nlohmann::json;

namespace {

/// Renders `source` with `context` (messages default to none).
std::string render(const std::string &source, json context = json::object()) {
  if (!context.contains("messages")) context["messages"] = json::array();
  return ChatTemplate::parse(source).render(context);
}

/// The message of the ChatTemplateError that parsing `source` throws.
std::string parseError(const std::string &source) {
  try {
    ChatTemplate::parse(source);
  } catch (const ChatTemplateError &error) {
    return error.what();
  }
  ADD_FAILURE() << "parsed: " << source;
  return "";
}

/// The message of the ChatTemplateError that rendering throws.
std::string renderError(const std::string &source, json context = json::object()) {
  try {
    render(source, std::move(context));
  } catch (const ChatTemplateError &error) {
    return error.what();
  }
  ADD_FAILURE() << "rendered: " << source;
  return "";
}

const char *const kSmolLm2Template =
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}";

TEST(ChatTemplate, RendersChatMlAsTransformers) {
  json context = {{"messages", {{{"role", "user"}, {"content", "Hi! \xC3\xA9"}}}},
                  {"add_generation_prompt", true}};
  EXPECT_EQ(ChatTemplate::parse(kSmolLm2Template).render(context),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
            "Face<|im_end|>\n<|im_start|>user\nHi! \xC3\xA9<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateParse, RefusesUnsupportedFiltersTestsMethodsAndFunctions) {
  EXPECT_EQ(parseError("{{ x }}\n  {{ x|wordwrap(3) }}"),
            "chat template:2:8: the filter 'wordwrap' is not supported");
  EXPECT_EQ(parseError("{% if x is escaped %}{% endif %}"),
            "chat template:1:12: the test 'escaped' is not supported");
  EXPECT_EQ(parseError("{{ messages.append(1) }}"),
            "chat template:1:12: the method 'append' is not supported");
  EXPECT_EQ(parseError("{{ lipsum() }}"),
            "chat template:1:4: unknown function 'lipsum' (supported: range, namespace, "
            "raise_exception, strftime_now)");
  EXPECT_EQ(parseError("{{ x|map('wordcount') }}"),
            "chat template:1:10: the filter 'wordcount' is not supported");
  EXPECT_EQ(parseError("{{ '%s' % x }}"),
            "chat template:1:9: printf-style formatting with % is not supported");
}

TEST(ChatTemplateParse, RefusesUnsupportedAndUnknownTags) {
  EXPECT_EQ(parseError("{% macro greet(name) %}hi{% endmacro %}"),
            "chat template:1:4: the '{% macro %}' tag is not supported");
  EXPECT_EQ(parseError("a\n{%- frobnicate %}"), "chat template:2:5: unknown tag 'frobnicate'");
  EXPECT_EQ(parseError("{% set x %}block{% endset %}"),
            "chat template:1:4: block assignments ('{% set x %}...{% endset %}') are not "
            "supported");
  EXPECT_EQ(parseError("{% for x in y recursive %}{% endfor %}"),
            "chat template:1:15: recursive loops are not supported");
  EXPECT_EQ(parseError("{% continue %}"), "chat template:1:4: 'continue' outside a for loop");
}

TEST(ChatTemplateParse, ReportsUnclosedAndMismatchedBlocks) {
  EXPECT_EQ(parseError("{% for m in messages %}\n{% if m %}x{% endif %}"),
            "chat template:1:4: unclosed '{% for %}': expected '{% endfor %}' or '{% else %}' "
            "before the end of the template");
  EXPECT_EQ(parseError("{% if x %}{% endfor %}"),
            "chat template:1:14: unexpected '{% endfor %}': the innermost open block is 'if'");
  EXPECT_EQ(parseError("{{ x"), "chat template:1:1: unclosed tag: missing '}}'");
  EXPECT_EQ(parseError("{# never closed"), "chat template:1:1: unclosed comment: missing '#}'");
  EXPECT_EQ(parseError("{{ (x ]}}"), "chat template:1:7: unexpected ']', expected ')'");
  EXPECT_EQ(parseError("{{ 'open }}"), "chat template:1:4: unterminated string literal");
  EXPECT_EQ(parseError("{{ a b }}"),
            "chat template:1:6: expected end of print statement '}}', got 'b'");
  EXPECT_EQ(parseError("{{ x @ y }}"), "chat template:1:6: unexpected character '@'");
}

TEST(ChatTemplateLexer, AppliesWhitespaceControlTrimAndLstripBlocks) {
  // trim_blocks drops the newline after a block tag, lstrip_blocks the
  // indentation before one.
  EXPECT_EQ(render("A\n  {% if true %}\n  B\n  {% endif %}\nC"), "A\n  B\nC");
  EXPECT_EQ(render("x  {%- if true -%}  y  {%- endif %}\n z {{- ' w ' -}} \n v"), "xy z w v");
  EXPECT_EQ(render("a {%+ if true %}b{% endif %}\n{# note #}\nc {#- note -#} d"), "a bcd");
  // Every line break reads as "\n"; one trailing newline goes.
  EXPECT_EQ(render("a\r\nb\rc\n"), "a\nb\nc");
}

TEST(ChatTemplateRender, LoopsWithLoopVariablesFiltersElseAndControls) {
  json messages = {{{"role", "user"}}, {{"role", "assistant"}}, {{"role", "user"}}};
  EXPECT_EQ(render("{% for m in messages %}{{ loop.index }}:{{ m.role }}"
                   "{% if not loop.last %},{% endif %}{% endfor %}",
                   {{"messages", messages}}),
            "1:user,2:assistant,3:user");
  EXPECT_EQ(render("{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{{ loop.length }}"
                   "{% else %}none{% endfor %}"),
            "2242");
  EXPECT_EQ(render("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for x in range(10) %}{% if x == 1 %}{% continue %}{% endif %}"
                   "{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "023");
  EXPECT_EQ(render("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
                   {{"d", {{"a", json::array({true, nullptr})}}}}),
            "a=[True, None];");
}

TEST(ChatTemplateRender, ScopesLoopIterationsAndSharesNamespaces) {
  EXPECT_EQ(render("{% set x = 'top' %}{% for i in [1, 2] %}{{ x }}{% set x = i %}{{ x }}"
                   "{% endfor %}{{ x }}"),
            "top1top2top");
  EXPECT_EQ(render("{% set ns = namespace(count=0, last='') %}{% for m in messages %}"
                   "{% set ns.count = ns.count + 1 %}{% set ns.last = m %}{% endfor %}"
                   "{{ ns.count }} {{ ns.last }}",
                   {{"messages", {"a", "b"}}}),
            "2 b");
  EXPECT_EQ(render("{% generation %}{% set inner = 1 %}[{{ inner }}]{% endgeneration %}"
                   "[{{ inner }}]"),
            "[1][]");
  EXPECT_EQ(renderError("{% set x = 1 %}{% set x.y = 2 %}"),
            "chat template:1:19: cannot assign attribute on non-namespace object");
}

TEST(ChatTemplateRender, RaiseExceptionThrowsTheTemplatesMessage) {
  const char *source =
      "{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}"
      "{{ raise_exception('Conversation roles must alternate') }}{% endif %}"
      "{% endfor %}ok";
  EXPECT_EQ(render(source, {{"messages", {{{"role", "user"}}, {{"role", "assistant"}}}}}), "ok");
  EXPECT_EQ(renderError(source, {{"messages", {{{"role", "user"}}, {{"role", "user"}}}}}),
            "Conversation roles must alternate");
}

TEST(ChatTemplateRender, UndefinedIsEmptyFalsyAndFailsOnUse) {
  EXPECT_EQ(render("{{ u }}|{{ u is defined }}|{{ d.missing is defined }}|{{ d['missing'] }}|"
                   "{{ u|default('dflt') }}|{{ u|length }}",
                   {{"d", json::object()}}),
            "|False|False||dflt|0");
  EXPECT_EQ(renderError("line\n  {{ u.attribute }}"), "chat template:2:7: 'u' is undefined");
  EXPECT_EQ(renderError("{{ d.missing.x }}", {{"d", json::object()}}),
            "chat template:1:13: 'dict object' has no attribute 'missing'");
  EXPECT_EQ(renderError("{{ messages[0].content + 1 }}", {{"messages", {{{"content", "x"}}}}}),
            "chat template:1:24: can only concatenate str (not \"int\") to str");
}

TEST(ChatTemplateRender, FormatsValuesAsPython) {
  EXPECT_EQ(render("{{ 'h\xC3\xA9llo'|length }} {{ 'h\xC3\xA9llo'[1] }} {{ 'h\xC3\xA9llo'[::-1] }} "
                   "{{ '\xC3\x9Ftra\xC3\x9F"
                   "e'.upper() }} {{ '  x '.strip() }}|"),
            "5 \xC3\xA9 oll\xC3\xA9h SSTRASSE x|");
  EXPECT_EQ(render("{{ 1.0 }} {{ 1e20 }} {{ 0.1 + 0.2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 / 2 }} "
                   "{{ -7 % 3 }} {{ 2 ** 10 }}"),
            "1.0 1e+20 0.30000000000000004 3 -4 3.5 2 1024");
  EXPECT_EQ(render("{{ [1, 'a', none, true, {'k': 'v'}] }} {{ ('t',) }} {{ \"it's\" }}"),
            "[1, 'a', None, True, {'k': 'v'}] ('t',) it's");
  EXPECT_EQ(render("{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')"
                   "|join(' / ') }}",
                   {{"messages",
                     {{{"role", "user"}, {"content", "a"}},
                      {{"role", "assistant"}, {"content", "b"}},
                      {{"role", "user"}, {"content", "c"}}}}}),
            "a / c");
}

TEST(ChatTemplateRender, TojsonIsJsonDumpsWithoutAsciiEscapes) {
  nlohmann::ordered_json context = {
      {"messages", nlohmann::ordered_json::array()},
      {"x", {{"name", "caf\xC3\xA9"}, {"list", {1, 2.5, nullptr, true}}}}};
  ChatTemplate tojson = ChatTemplate::parse("{{ x|tojson }}|{{ x|tojson(indent=2) }}");
  EXPECT_EQ(tojson.render(context),
            "{\"name\": \"caf\xC3\xA9\", \"list\": [1, 2.5, null, true]}|{\n  \"name\": "
            "\"caf\xC3\xA9\",\n  \"list\": [\n    1,\n    2.5,\n    null,\n    true\n  ]\n}");
  // nlohmann::json sorts its keys: the ordered overload keeps the request's order.
  EXPECT_EQ(ChatTemplate::parse("{{ x|tojson }}").render(json(context)),
            "{\"list\": [1, 2.5, null, true], \"name\": \"caf\xC3\xA9\"}");
}

TEST(ChatTemplateRender, CopiesShareTheTemplateAcrossThreads) {
  ChatTemplate original = ChatTemplate::parse(kSmolLm2Template);
  json context = {{"messages", {{{"role", "user"}, {"content", "question"}}}},
                  {"add_generation_prompt", true}};
  std::string expected = original.render(context);
  std::vector<std::string> results(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i, copy = original] {
      for (int round = 0; round < 50; ++round) results[i] = copy.render(context);
    });
  }
  for (std::thread &thread : threads) thread.join();
  for (const std::string &result : results) EXPECT_EQ(result, expected);
}

TEST(ChatTemplateRender, RefusesAContextThatIsNotAnObject) {
  EXPECT_THROW(ChatTemplate::parse("x").render(json::array()), ChatTemplateError);
}

TEST(TokenizerConfigChatTemplate, ReadsTheStringTheDefaultNamedOneOrTheJinjaFile) {
  std::string directory = ::testing::TempDir();
  std::string path = directory + "tokenizer_config.json";
  std::string jinja = directory + "chat_template.jinja";
  std::remove(jinja.c_str());
  auto write = [&](const json &config) {
    std::ofstream(path) << config.dump();
    return tokenizer::TokenizerConfig::load(path).chatTemplate;
  };
  EXPECT_EQ(write({{"eos_token", "</s>"}}), std::nullopt);
  EXPECT_EQ(write({{"chat_template", "{{ x }}"}}), "{{ x }}");
  json named = {{{"name", "tool_use"}, {"template", "tools"}},
                {{"name", "default"}, {"template", "plain"}}};
  EXPECT_EQ(write({{"chat_template", named}}), "plain");
  EXPECT_EQ(write({{"chat_template", {{{"name", "rag"}, {"template", "first"}}}}}), "first");
  EXPECT_THROW(write({{"chat_template", 3}}), Error);
  // chat_template.jinja beside the config wins.
  std::ofstream(jinja) << "from the file\n";
  EXPECT_EQ(write({{"chat_template", "{{ x }}"}}), "from the file\n");
  std::remove(jinja.c_str());
  std::remove(path.c_str());
}

TEST(ChatTemplateCApi, ChecksAndRendersThroughTheCInterface) {
  char err[256] = "";
  EXPECT_EQ(llmc_chat_template_check(kSmolLm2Template, err, sizeof(err)), 0);
  EXPECT_NE(llmc_chat_template_check("{{ x|wordwrap }}", err, sizeof(err)), 0);
  EXPECT_STREQ(err, "chat template:1:6: the filter 'wordwrap' is not supported");

  char *text = nullptr;
  size_t length = 0;
  ASSERT_EQ(llmc_chat_template_render(
                "{{ tools|tojson }}{% for m in messages %}{{ m.content }}{% endfor %}",
                R"({"messages": [{"role": "user", "content": "a\u0000b"}],)"
                R"( "tools": [{"z": 1, "a": 2}]})",
                &text, &length, err, sizeof(err)),
            0)
      << err;
  EXPECT_EQ(std::string(text, length), std::string("[{\"z\": 1, \"a\": 2}]a\0b", 21));
  llmc_string_free(text);

  EXPECT_NE(llmc_chat_template_render("{{ raise_exception('no') }}", "{}", &text, nullptr, err,
                                      sizeof(err)),
            0);
  EXPECT_STREQ(err, "no");
  EXPECT_NE(llmc_chat_template_render("x", "{not json", &text, nullptr, err, sizeof(err)), 0);
  EXPECT_STREQ(err, "the chat template context is not valid JSON");
}
} // namespace
