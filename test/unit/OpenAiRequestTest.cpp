//===- OpenAiRequestTest.cpp - the OpenAI request bodies the server reads -===//
#include "runtime/server/ApiError.h"
#include "runtime/server/Metrics.h"
#include "runtime/server/OpenAiRequest.h"

#include <gtest/gtest.h>

using namespace llmc::runtime;
using namespace llmc::runtime::server;
using nlohmann::ordered_json;

namespace {

constexpr int64_t kMaxModelLen = 2048;

GenerationRequest completion(const std::string &body) {
  return parseGenerationRequest(Endpoint::Completions, ordered_json::parse(body), kMaxModelLen);
}

/// The param of the ApiError a body gets (empty when it is accepted).
std::string faultOf(Endpoint endpoint, const std::string &body) {
  try {
    parseGenerationRequest(endpoint, ordered_json::parse(body), kMaxModelLen);
  } catch (const ApiError &error) {
    EXPECT_EQ(error.status, 400);
    return error.param.empty() ? "<none>" : error.param;
  }
  return "";
}

TEST(OpenAiRequest, CompletionDefaultsAreOpenAis) {
  GenerationRequest request = completion(R"({"prompt": "hi"})");
  ASSERT_EQ(request.prompts.size(), 1u);
  EXPECT_EQ(request.prompts[0].text, "hi");
  EXPECT_EQ(request.options.maxTokens, 16);
  EXPECT_EQ(request.options.n, 1);
  EXPECT_FLOAT_EQ(request.options.sampling.temperature, 1.0f);
  EXPECT_FALSE(request.stream);
  EXPECT_FALSE(request.logprobs);
}

TEST(OpenAiRequest, EveryPromptForm) {
  EXPECT_EQ(completion(R"({"prompt": [1, 2, 3]})").prompts[0].ids,
            (std::vector<int32_t>{1, 2, 3}));
  GenerationRequest batch = completion(R"({"prompt": ["a", [4, 5]]})");
  ASSERT_EQ(batch.prompts.size(), 2u);
  EXPECT_EQ(batch.prompts[0].text, "a");
  EXPECT_EQ(batch.prompts[1].ids, (std::vector<int32_t>{4, 5}));
}

TEST(OpenAiRequest, SamplingFieldsAndVllmExtensions) {
  GenerationRequest request = completion(
      R"({"prompt": "x", "max_tokens": 7, "temperature": 0, "top_p": 0.5, "top_k": 3,
          "min_p": 0.1, "presence_penalty": 1.5, "frequency_penalty": -1, "seed": -4,
          "stop": "\n", "stop_token_ids": [9], "ignore_eos": true, "n": 2, "logprobs": 2,
          "stream": true, "stream_options": {"include_usage": true},
          "logit_bias": {"12": -100, "3": 2.5}, "min_tokens": 4, "allowed_token_ids": [5, 1],
          "include_stop_str_in_output": true})");
  const SamplingParams &sampling = request.options.sampling;
  EXPECT_EQ(request.options.maxTokens, 7);
  EXPECT_EQ(sampling.temperature, 0.0f);
  EXPECT_FLOAT_EQ(sampling.topP, 0.5f);
  EXPECT_EQ(sampling.topK, 3);
  EXPECT_FLOAT_EQ(sampling.minP, 0.1f);
  EXPECT_FLOAT_EQ(sampling.presencePenalty, 1.5f);
  EXPECT_FLOAT_EQ(sampling.frequencyPenalty, -1.0f);
  EXPECT_EQ(sampling.seed, static_cast<uint64_t>(int64_t{-4}));
  EXPECT_EQ(request.stop, (std::vector<std::string>{"\n"}));
  EXPECT_EQ(request.options.stopTokenIds, (std::vector<int32_t>{9}));
  EXPECT_TRUE(request.ignoreEos);
  EXPECT_EQ(request.options.n, 2);
  EXPECT_EQ(request.logprobs, 2);
  EXPECT_EQ(sampling.logprobs, 2);
  EXPECT_TRUE(request.stream && request.includeUsage);
  EXPECT_EQ(sampling.logitBias,
            (std::vector<std::pair<int32_t, float>>{{3, 2.5f}, {12, -100.0f}}));
  EXPECT_EQ(sampling.minTokens, 4);
  EXPECT_EQ(sampling.allowedTokenIds, (std::vector<int32_t>{5, 1}));
  EXPECT_TRUE(request.includeStopStrInOutput);
}

TEST(OpenAiRequest, EchoAndPromptLogprobs) {
  GenerationRequest echo = completion(R"({"prompt": "x", "echo": true, "logprobs": 2})");
  EXPECT_TRUE(echo.echo);
  EXPECT_FALSE(echo.echoOnly);
  EXPECT_FALSE(echo.promptLogprobs); // not asked for: only the echo's logprobs need them
  EXPECT_EQ(echo.options.promptLogprobs, 2);
  EXPECT_FALSE(completion(R"({"prompt": "x", "echo": true})").options.promptLogprobs);
  // max_tokens 0 echoes the prompt alone; the engine still samples one token.
  GenerationRequest alone = completion(R"({"prompt": "x", "echo": true, "max_tokens": 0})");
  EXPECT_TRUE(alone.echoOnly);
  EXPECT_EQ(alone.options.maxTokens, 1);
  GenerationRequest vllm = completion(R"({"prompt": "x", "prompt_logprobs": 3, "logprobs": 1})");
  EXPECT_EQ(vllm.promptLogprobs, 3);
  EXPECT_EQ(vllm.options.promptLogprobs, 3);
  EXPECT_FALSE(vllm.echo);

  Endpoint completions = Endpoint::Completions, chat = Endpoint::ChatCompletions;
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "prompt_logprobs": 21})"), "prompt_logprobs");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "prompt_logprobs": 1, "stream": true})"),
            "prompt_logprobs");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "echo": 1})"), "echo");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "echo": true, "max_tokens": -1})"),
            "max_tokens");
  EXPECT_EQ(faultOf(chat, R"({"messages": [{"role": "user", "content": "x"}], "echo": true})"),
            "echo");
  EXPECT_EQ(faultOf(chat, R"({"messages": [{"role": "user", "content": "x"}],
                              "prompt_logprobs": 0})"),
            "");
}

TEST(OpenAiRequest, TokenIdsAndContinuousUsage) {
  EXPECT_FALSE(completion(R"({"prompt": "x"})").returnTokensAsTokenIds);
  EXPECT_EQ(completion(R"({"prompt": "x", "return_tokens_as_token_ids": true})")
                .returnTokensAsTokenIds,
            true);
  EXPECT_EQ(completion(R"({"prompt": "x", "return_tokens_as_token_ids": false})")
                .returnTokensAsTokenIds,
            false);
  EXPECT_EQ(faultOf(Endpoint::Completions, R"({"prompt": "x", "return_tokens_as_token_ids": 1})"),
            "return_tokens_as_token_ids");
  // continuous_usage_stats goes with include_usage, as in vLLM.
  EXPECT_TRUE(completion(R"({"prompt": "x", "stream": true, "stream_options":
                             {"include_usage": true, "continuous_usage_stats": true}})")
                  .continuousUsage);
  EXPECT_FALSE(completion(R"({"prompt": "x", "stream": true, "stream_options":
                              {"continuous_usage_stats": true}})")
                   .continuousUsage);
}

TEST(OpenAiRequest, FaultsNameTheirField) {
  Endpoint completions = Endpoint::Completions;
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x"})"), "");
  EXPECT_EQ(faultOf(completions, R"([1])"), "<none>");
  EXPECT_EQ(faultOf(completions, R"({})"), "prompt");
  EXPECT_EQ(faultOf(completions, R"({"prompt": []})"), "prompt");
  EXPECT_EQ(faultOf(completions, R"({"prompt": [1.5]})"), "prompt");
  EXPECT_EQ(faultOf(completions, R"({"prompt": [3000000000]})"), "prompt");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "max_tokens": 0})"), "max_tokens");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "max_tokens": 2049})"), "max_tokens");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "max_tokens": 1e3})"), "max_tokens");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "max_tokens": 18446744073709551615})"),
            "max_tokens");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "temperature": "hot"})"), "temperature");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "top_p": 0})"), "top_p");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "n": 129})"), "n");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "logprobs": 21})"), "logprobs");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "stop": ["a", 1]})"), "stop");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "stream": "yes"})"), "stream");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "model": 3})"), "model");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "best_of": 3})"), "best_of");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "best_of": 1})"), "");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "unknown_field": 1})"), "");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "logit_bias": {"a": 1}})"), "logit_bias");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "logit_bias": {"-1": 1}})"), "logit_bias");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "logit_bias": {"1": "up"}})"), "logit_bias");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "logit_bias": {"1": -101}})"), "logit_bias");
  EXPECT_EQ(faultOf(completions, R"({"prompt": "x", "min_tokens": 2049})"), "min_tokens");
}

TEST(OpenAiRequest, TokenizeTakesAPromptOrMessages) {
  TokenizeRequest prompt = parseTokenizeRequest(ordered_json::parse(R"({"prompt": "hi"})"));
  EXPECT_EQ(prompt.prompt, "hi");
  EXPECT_TRUE(prompt.addSpecialTokens);
  EXPECT_FALSE(prompt.returnTokenStrs);
  TokenizeRequest chat = parseTokenizeRequest(ordered_json::parse(
      R"({"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": false,
          "return_token_strs": true, "model": "m"})"));
  EXPECT_FALSE(chat.prompt);
  EXPECT_EQ(chat.messages.size(), 1u);
  EXPECT_FALSE(chat.addGenerationPrompt);
  EXPECT_FALSE(chat.addSpecialTokens); // the chat template writes them
  EXPECT_TRUE(chat.returnTokenStrs);
  EXPECT_EQ(chat.model, "m");
  EXPECT_EQ(parseDetokenizeRequest(ordered_json::parse(R"({"tokens": [1, 2]})")).tokens,
            (std::vector<int32_t>{1, 2}));
  auto faultOfBody = [](auto parse, const char *body) -> std::string {
    try {
      parse(ordered_json::parse(body));
    } catch (const ApiError &error) {
      return error.param;
    }
    return "";
  };
  auto tokenize = [](const ordered_json &body) { parseTokenizeRequest(body); };
  auto detokenize = [](const ordered_json &body) { parseDetokenizeRequest(body); };
  EXPECT_EQ(faultOfBody(tokenize, R"({})"), "messages");
  EXPECT_EQ(faultOfBody(tokenize, R"({"prompt": ["a"]})"), "prompt");
  EXPECT_EQ(faultOfBody(tokenize, R"({"messages": []})"), "messages");
  EXPECT_EQ(faultOfBody(detokenize, R"({"tokens": [1.5]})"), "tokens");
  EXPECT_EQ(faultOfBody(detokenize, R"({})"), "tokens");
}

TEST(OpenAiRequest, ChatMessagesAndItsOwnFields) {
  GenerationRequest request = parseGenerationRequest(
      Endpoint::ChatCompletions,
      ordered_json::parse(R"({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                                 {"type": "text", "text": "b"}]},
                                   {"role": "assistant", "content": null}],
                      "logprobs": true, "top_logprobs": 3, "max_completion_tokens": 5})"),
      kMaxModelLen);
  EXPECT_EQ(request.messages[0]["content"], "ab");
  EXPECT_EQ(request.messages[1]["content"], "");
  EXPECT_EQ(request.logprobs, 3);
  EXPECT_EQ(request.options.maxTokens, 5);
  // Without max_tokens, chat runs to the end of the context.
  EXPECT_EQ(parseGenerationRequest(Endpoint::ChatCompletions,
                                   ordered_json::parse(R"({"messages": [{"role": "user"}]})"),
                                   kMaxModelLen)
                .options.maxTokens,
            kMaxModelLen);

  Endpoint chat = Endpoint::ChatCompletions;
  EXPECT_EQ(faultOf(chat, R"({"messages": [{"role": "user", "content": "x"}],
                              "top_logprobs": 2})"),
            "top_logprobs");
  EXPECT_EQ(faultOf(chat, R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"),
            "messages");
  EXPECT_EQ(faultOf(chat, R"({"messages": [{"role": "user", "content": "x"}], "functions": []})"),
            "functions");
}

TEST(OpenAiRequest, ToolsAndToolChoice) {
  using ToolChoice = GenerationRequest::ToolChoice;
  auto chatWith = [](const std::string &fields) {
    return parseGenerationRequest(
        Endpoint::ChatCompletions,
        ordered_json::parse(R"({"messages": [{"role": "user", "content": "x"}], )" + fields + "}"),
        kMaxModelLen);
  };
  std::string tools = R"("tools": [{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
      {"type": "function", "function": {"name": "now"}}])";
  GenerationRequest automatic = chatWith(tools);
  EXPECT_EQ(automatic.toolChoice, ToolChoice::Auto);
  EXPECT_FALSE(automatic.grammar);
  EXPECT_FALSE(automatic.toolCallFormat); // the server sets the model's
  EXPECT_EQ(automatic.tools.size(), 2u);

  GenerationRequest named =
      chatWith(tools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
  EXPECT_EQ(named.toolChoice, ToolChoice::Named);
  EXPECT_EQ(named.toolFunction, "get_weather");
  EXPECT_EQ(named.toolCallFormat, ToolCallFormat::Named);
  ASSERT_TRUE(named.grammar);
  EXPECT_EQ(ordered_json::parse(named.grammar->source)["properties"]["city"]["type"], "string");

  GenerationRequest required =
      chatWith(tools + R"(, "tool_choice": "required", "parallel_tool_calls": false)");
  ASSERT_TRUE(required.grammar);
  ordered_json schema = ordered_json::parse(required.grammar->source);
  EXPECT_EQ(schema["type"], "array");
  EXPECT_EQ(schema["minItems"], 1);
  EXPECT_EQ(schema["maxItems"], 1);
  EXPECT_EQ(schema["items"]["anyOf"][1]["properties"]["name"]["enum"][0], "now");
  EXPECT_EQ(schema["items"]["anyOf"][1]["properties"]["parameters"]["type"], "object");

  EXPECT_EQ(chatWith(tools + R"(, "tool_choice": "none")").toolChoice, ToolChoice::None);
  // A call's arguments come as JSON text and go to the template as an object.
  GenerationRequest history = chatWith(R"("messages": [{"role": "assistant", "content": null,
      "tool_calls": [{"id": "a", "type": "function",
                      "function": {"name": "f", "arguments": "{\"x\": 1}"}}]},
      {"role": "tool", "tool_call_id": "a", "content": "2"}])");
  EXPECT_EQ(history.messages[0]["tool_calls"][0]["function"]["arguments"]["x"], 1);
  EXPECT_EQ(chatWith(R"("chat_template_kwargs": {"enable_thinking": false})")
                .templateKwargs["enable_thinking"],
            false);

  Endpoint chat = Endpoint::ChatCompletions;
  std::string message = R"({"messages": [{"role": "user", "content": "x"}], )";
  EXPECT_EQ(faultOf(chat, message + R"("tools": [{"type": "function"}]})"), "tools");
  EXPECT_EQ(faultOf(chat, message + R"("tools": [{"type": "retrieval", "function": {}}]})"),
            "tools");
  EXPECT_EQ(faultOf(chat, message + R"("tool_choice": "required"})"), "tool_choice");
  EXPECT_EQ(faultOf(chat, message + tools + R"(, "tool_choice": "sometimes"})"), "tool_choice");
  EXPECT_EQ(faultOf(chat, message + tools +
                              R"(, "tool_choice": {"type": "function", "function": {"name": "x"}}})"),
            "tool_choice");
  EXPECT_EQ(faultOf(chat, message + tools +
                              R"(, "tool_choice": "required", "guided_regex": "a"})"),
            "tool_choice");
  EXPECT_EQ(faultOf(chat, message + R"("chat_template_kwargs": 3})"), "chat_template_kwargs");
  EXPECT_EQ(faultOf(chat, R"({"messages": [{"role": "assistant", "tool_calls": [{"function":
                              {"name": "f", "arguments": "{oops"}}]}]})"),
            "messages");
  EXPECT_EQ(faultOf(Endpoint::Completions, R"({"prompt": "x", )" + tools + "}"), "tools");
}

TEST(OpenAiRequest, OutputConstraints) {
  using Kind = structured::GrammarSpec::Kind;
  EXPECT_FALSE(completion(R"({"prompt": "x", "response_format": {"type": "text"}})").grammar);
  auto object = completion(R"({"prompt": "x", "response_format": {"type": "json_object"}})");
  ASSERT_TRUE(object.grammar);
  EXPECT_EQ(object.grammar->kind, Kind::JsonObject);
  EXPECT_EQ(object.grammar->field, "response_format");
  auto schema = completion(R"({"prompt": "x", "response_format": {"type": "json_schema",
      "json_schema": {"name": "a", "schema": {"type": "integer"}, "strict": true}}})");
  ASSERT_TRUE(schema.grammar);
  EXPECT_EQ(schema.grammar->kind, Kind::JsonSchema);
  EXPECT_EQ(ordered_json::parse(schema.grammar->source), ordered_json::parse(R"({"type": "integer"})"));
  // vLLM's guided_json takes the schema's text too.
  auto text = completion(R"({"prompt": "x", "guided_json": "{\"type\": \"string\"}"})");
  EXPECT_EQ(ordered_json::parse(text.grammar->source), ordered_json::parse(R"({"type": "string"})"));
  EXPECT_EQ(text.grammar->field, "guided_json");
  auto choice = completion(R"({"prompt": "x", "guided_choice": ["a", "b c"]})");
  EXPECT_EQ(choice.grammar->kind, Kind::Choice);
  EXPECT_EQ(choice.grammar->choices, (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(completion(R"({"prompt": "x", "guided_regex": "a+"})").grammar->kind, Kind::Regex);
  EXPECT_EQ(completion(R"({"prompt": "x", "guided_grammar": "root ::= \"a\""})").grammar->kind,
            Kind::Ebnf);

  Endpoint plain = Endpoint::Completions;
  EXPECT_EQ(faultOf(plain, R"({"prompt": "x", "response_format": {"type": "yaml"}})"),
            "response_format");
  EXPECT_EQ(faultOf(plain, R"({"prompt": "x", "response_format": "json"})"), "response_format");
  EXPECT_EQ(faultOf(plain, R"({"prompt": "x", "response_format": {"type": "json_schema"}})"),
            "response_format");
  EXPECT_EQ(faultOf(plain, R"({"prompt": "x", "guided_json": "{no"})"), "guided_json");
  EXPECT_EQ(faultOf(plain, R"({"prompt": "x", "guided_json": 3})"), "guided_json");
  EXPECT_EQ(faultOf(plain, R"({"prompt": "x", "guided_choice": []})"), "guided_choice");
  EXPECT_EQ(faultOf(plain, R"({"prompt": "x", "guided_choice": ["a", 1]})"), "guided_choice");
  EXPECT_EQ(faultOf(plain, R"({"prompt": "x", "guided_regex": 5})"), "guided_regex");
  // One constraint a request: the second one named is the fault.
  EXPECT_EQ(faultOf(plain, R"({"prompt": "x", "response_format": {"type": "json_object"},
                               "guided_regex": "a"})"),
            "guided_regex");
}

TEST(OpenAiError, BodyAndTypeFollowOpenAi) {
  auto body = ApiError(429, "busy", {}, "rate_limit_exceeded").body();
  EXPECT_EQ(body["error"]["message"], "busy");
  EXPECT_EQ(body["error"]["type"], "rate_limit_error");
  EXPECT_EQ(body["error"]["code"], "rate_limit_exceeded");
  EXPECT_TRUE(body["error"]["param"].is_null());
  EXPECT_EQ(ApiError(400, "x", "n").body()["error"]["type"], "invalid_request_error");
  EXPECT_EQ(ApiError(401, "x").body()["error"]["type"], "authentication_error");
}

TEST(ServerMetrics, HistogramsAreCumulativeAndGaugesComeFromTheEngine) {
  ServerMetrics metrics;
  metrics.observeFirstToken(0.004);
  metrics.observeFirstToken(0.2);
  metrics.observeFirstToken(1000);
  metrics.observeRequestEnd("stop", 12, 0.5);
  metrics.countError(429);
  AsyncEngineStats stats;
  stats.engine.numKvBlocks = 10;
  stats.engine.numKvBlocksHeld = 4;
  std::string text = metrics.render(stats);
  EXPECT_NE(text.find("llmc_time_to_first_token_seconds_bucket{le=\"0.005\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("llmc_time_to_first_token_seconds_bucket{le=\"0.2\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("llmc_time_to_first_token_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("llmc_time_to_first_token_seconds_count 3\n"), std::string::npos);
  EXPECT_NE(text.find("llmc_kv_cache_blocks_used 4\n"), std::string::npos);
  EXPECT_NE(text.find("llmc_kv_cache_usage_ratio 0.4"), std::string::npos);
  EXPECT_NE(text.find("llmc_requests_finished_total{finish_reason=\"stop\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("llmc_prompt_tokens_total 12\n"), std::string::npos);
  EXPECT_NE(text.find("llmc_request_errors_total{status=\"429\"} 1\n"), std::string::npos);
}

} // namespace

namespace {
PoolingRequest embedding(const std::string &body) {
  return parsePoolingRequest(PoolingEndpoint::Embeddings, ordered_json::parse(body), kMaxModelLen);
}

PoolingRequest classification(const std::string &body) {
  return parsePoolingRequest(PoolingEndpoint::Classify, ordered_json::parse(body), kMaxModelLen);
}

/// The param of the ApiError an embeddings body gets (empty when accepted).
std::string embeddingFault(const std::string &body) {
  try {
    embedding(body);
  } catch (const ApiError &error) {
    EXPECT_EQ(error.status, 400);
    return error.param.empty() ? "<none>" : error.param;
  }
  return "";
}
} // namespace

TEST(OpenAiRequest, EmbeddingsTakeEveryInputForm) {
  PoolingRequest request = embedding(R"({"input": "hi", "model": "m"})");
  ASSERT_EQ(request.inputs.size(), 1u);
  EXPECT_EQ(request.inputs[0].text, "hi");
  EXPECT_EQ(request.model, "m");
  EXPECT_FALSE(request.base64);
  EXPECT_TRUE(request.pooling.normalize);
  EXPECT_TRUE(request.addSpecialTokens);
  request = embedding(R"({"input": [[1, 2], "b"], "encoding_format": "base64",
                          "normalize": false, "add_special_tokens": false,
                          "truncate_prompt_tokens": -1})");
  ASSERT_EQ(request.inputs.size(), 2u);
  EXPECT_EQ(request.inputs[0].ids, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(request.inputs[1].text, "b");
  EXPECT_TRUE(request.base64);
  EXPECT_FALSE(request.pooling.normalize);
  EXPECT_FALSE(request.addSpecialTokens);
  EXPECT_EQ(request.truncatePromptTokens, kMaxModelLen);
  EXPECT_EQ(embedding(R"({"input": [3, 4]})").inputs[0].ids, (std::vector<int32_t>{3, 4}));
}

TEST(OpenAiRequest, EmbeddingsRefuseWhatTheyCannotServe) {
  EXPECT_EQ(embeddingFault(R"({})"), "input");
  EXPECT_EQ(embeddingFault(R"({"input": []})"), "input");
  EXPECT_EQ(embeddingFault(R"({"input": [1, -2]})"), "input");
  EXPECT_EQ(embeddingFault(R"({"input": "a", "encoding_format": "int8"})"), "encoding_format");
  EXPECT_EQ(embeddingFault(R"({"input": "a", "dimensions": 0})"), "dimensions");
  EXPECT_EQ(embeddingFault(R"({"input": "a", "dimensions": "8"})"), "dimensions");
  EXPECT_EQ(embeddingFault(R"({"input": "a", "normalize": 1})"), "normalize");
  EXPECT_EQ(embeddingFault(R"({"input": "a", "truncate_prompt_tokens": 0})"),
            "truncate_prompt_tokens");
  EXPECT_EQ(embeddingFault(R"({"input": "a", "dimensions": null})"), "");
  // A width the model may not serve is the engine's to refuse.
  EXPECT_EQ(embedding(R"({"input": "a", "dimensions": 8})").pooling.dimensions, 8);
  EXPECT_FALSE(embedding(R"({"input": "a"})").pooling.dimensions);
}

TEST(OpenAiRequest, ClassificationTakesUseActivation) {
  PoolingRequest request = classification(R"({"input": ["a", [1, 2]], "model": "m"})");
  ASSERT_EQ(request.inputs.size(), 2u);
  EXPECT_TRUE(request.pooling.activation);
  EXPECT_FALSE(classification(R"({"input": "a", "use_activation": false})").pooling.activation);
  // An embedding's use_activation is its normalize.
  EXPECT_FALSE(embedding(R"({"input": "a", "use_activation": false})").pooling.normalize);
  EXPECT_THROW(classification(R"({"input": "a", "use_activation": 1})"), ApiError);
}

namespace {
ScoringRequest scoring(ScoringEndpoint endpoint, const std::string &body) {
  return parseScoringRequest(endpoint, ordered_json::parse(body), kMaxModelLen);
}

/// The param of the ApiError a scoring body gets (empty when accepted).
std::string scoringFault(ScoringEndpoint endpoint, const std::string &body) {
  try {
    scoring(endpoint, body);
  } catch (const ApiError &error) {
    EXPECT_EQ(error.status, 400);
    return error.param.empty() ? "<none>" : error.param;
  }
  return "";
}
} // namespace

TEST(OpenAiRequest, ScoreTakesTextsOrListsOfThem) {
  ScoringRequest request = scoring(ScoringEndpoint::Score,
                                   R"({"model": "m", "text_1": "q", "text_2": ["a", "b"]})");
  EXPECT_EQ(request.model, "m");
  EXPECT_EQ(request.texts1, (std::vector<std::string>{"q"}));
  EXPECT_EQ(request.texts2, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(request.activation);
  EXPECT_EQ(request.truncatePromptTokens, 0);
  request = scoring(ScoringEndpoint::Score, R"({"text_1": ["x", "y"], "text_2": "z",
                    "use_activation": false, "truncate_prompt_tokens": -1})");
  EXPECT_EQ(request.texts1.size(), 2u);
  EXPECT_FALSE(request.activation);
  EXPECT_EQ(request.truncatePromptTokens, kMaxModelLen);

  EXPECT_EQ(scoringFault(ScoringEndpoint::Score, R"({"text_2": "z"})"), "text_1");
  EXPECT_EQ(scoringFault(ScoringEndpoint::Score, R"({"text_1": [], "text_2": "z"})"), "text_1");
  EXPECT_EQ(scoringFault(ScoringEndpoint::Score, R"({"text_1": "a", "text_2": [1]})"), "text_2");
  EXPECT_EQ(scoringFault(ScoringEndpoint::Score,
                         R"({"text_1": "a", "text_2": "b", "truncate_prompt_tokens": 0})"),
            "truncate_prompt_tokens");
}

TEST(OpenAiRequest, RerankTakesAQueryAndDocuments) {
  ScoringRequest request = scoring(
      ScoringEndpoint::Rerank,
      R"({"query": "q", "documents": ["a", {"text": "b"}], "top_n": 1, "return_documents": false})");
  EXPECT_EQ(request.texts1, (std::vector<std::string>{"q"}));
  EXPECT_EQ(request.texts2, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(request.topN, 1);
  EXPECT_FALSE(request.returnDocuments);
  request = scoring(ScoringEndpoint::Rerank, R"({"query": "q", "documents": ["a"]})");
  EXPECT_EQ(request.topN, 0);
  EXPECT_TRUE(request.returnDocuments);

  EXPECT_EQ(scoringFault(ScoringEndpoint::Rerank, R"({"query": ["q"], "documents": ["a"]})"),
            "query");
  EXPECT_EQ(scoringFault(ScoringEndpoint::Rerank, R"({"query": "q", "documents": "a"})"),
            "documents");
  EXPECT_EQ(scoringFault(ScoringEndpoint::Rerank, R"({"query": "q", "documents": []})"),
            "documents");
  EXPECT_EQ(scoringFault(ScoringEndpoint::Rerank,
                         R"({"query": "q", "documents": ["a"], "top_n": -1})"),
            "top_n");
}
