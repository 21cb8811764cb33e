//===- OpenAiRequest.cpp - the request bodies of the OpenAI API -----------===//
#include "runtime/server/OpenAiRequest.h"

#include "runtime/engine/EngineJson.h"
#include "runtime/server/ApiError.h"

#include <cmath>
#include <limits>
#include <utility>

namespace llmc::runtime::server {
namespace {

using json = nlohmann::ordered_json;

/// Reads the fields of a request body, each with OpenAI's type and range; a
/// fault throws ApiError(400) naming the field. An absent or null field
/// leaves the default.
class Fields {
public:
  explicit Fields(const json &body) : body(body) {}

  const json *find(const char *name) const {
    auto found = body.find(name);
    return found == body.end() || found->is_null() ? nullptr : &*found;
  }

  bool flag(const char *name, bool fallback) const {
    const json *value = find(name);
    if (!value) return fallback;
    if (!value->is_boolean()) fail(name, "must be a boolean");
    return value->get<bool>();
  }

  double number(const char *name, double fallback, double minimum, double maximum) const {
    const json *value = find(name);
    if (!value) return fallback;
    if (!value->is_number()) fail(name, "must be a number");
    double number = value->get<double>();
    if (!(number >= minimum && number <= maximum))
      fail(name, "must be in [" + shortNumber(minimum) + ", " + shortNumber(maximum) +
                     "], not " + shortNumber(number));
    return number;
  }

  std::optional<int64_t> integer(const char *name, int64_t minimum, int64_t maximum) const {
    const json *value = find(name);
    if (!value) return std::nullopt;
    if (!value->is_number_integer()) fail(name, "must be an integer");
    // Unsigned values past INT64_MAX are out of range too.
    if (value->is_number_unsigned() &&
        value->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      fail(name, "must be at most " + std::to_string(maximum));
    int64_t number = value->get<int64_t>();
    if (number < minimum || number > maximum)
      fail(name, "must be in [" + std::to_string(minimum) + ", " + std::to_string(maximum) +
                     "], not " + std::to_string(number));
    return number;
  }

  std::string string(const char *name) const {
    const json *value = find(name);
    if (!value) return {};
    if (!value->is_string()) fail(name, "must be a string");
    return value->get<std::string>();
  }

  /// Refuses a field llmc does not serve, unless it has its neutral value.
  void unsupported(const char *name, const json &neutral) const {
    const json *value = find(name);
    if (value && *value != neutral)
      throw ApiError(400, std::string("'") + name + "' is not supported by this server", name);
  }

  [[noreturn]] static void fail(const std::string &name, const std::string &problem) {
    throw ApiError(400, "'" + name + "' " + problem, name);
  }

private:
  static std::string shortNumber(double value) {
    json number = value;
    return number.dump();
  }

  const json &body;
};

/// A list of token ids, each in [0, INT32_MAX].
std::vector<int32_t> tokenIds(const json &value, const char *name) {
  std::vector<int32_t> ids;
  for (const json &id : value) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
        id.get<int64_t>() > std::numeric_limits<int32_t>::max())
      Fields::fail(name, "must hold token ids (non-negative integers)");
    ids.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  return ids;
}

/// OpenAI's logit_bias: {"token id": bias in [-100, 100]}. The engine checks
/// the ids against the vocabulary.
std::vector<std::pair<int32_t, float>> readLogitBias(const Fields &fields) {
  const json *object = fields.find("logit_bias");
  if (!object) return {};
  std::vector<std::pair<int32_t, float>> bias;
  try {
    bias = logitBiasFromJson(*object);
  } catch (const RequestError &error) {
    throw ApiError(400, error.what(), "logit_bias");
  }
  for (const auto &[token, value] : bias)
    if (!(value >= -100 && value <= 100))
      Fields::fail("logit_bias", "gives token " + std::to_string(token) + " a bias of " +
                                     json(value).dump() + ": biases are in [-100, 100]");
  return bias;
}

/// vLLM's chat_template_kwargs: more variables for the chat template.
json readTemplateKwargs(const Fields &fields) {
  const json *kwargs = fields.find("chat_template_kwargs");
  if (!kwargs) return json::object();
  if (!kwargs->is_object()) Fields::fail("chat_template_kwargs", "must be an object");
  return *kwargs;
}

/// OpenAI's prompt (or embeddings' input, `name`): a string, a list of
/// strings, a list of token ids or a list of such lists.
std::vector<PromptInput> readPrompts(const Fields &fields, const char *name = "prompt") {
  const json *prompt = fields.find(name);
  if (!prompt) Fields::fail(name, "is required");
  if (prompt->is_string()) return {PromptInput{prompt->get<std::string>(), {}}};
  if (!prompt->is_array() || prompt->empty())
    Fields::fail(name, "must be a string, a list of strings, or a list of token id lists");
  if ((*prompt)[0].is_number()) return {PromptInput{std::nullopt, tokenIds(*prompt, name)}};
  std::vector<PromptInput> prompts;
  for (const json &item : *prompt) {
    if (item.is_string())
      prompts.push_back({item.get<std::string>(), {}});
    else if (item.is_array())
      prompts.push_back({std::nullopt, tokenIds(item, name)});
    else
      Fields::fail(name, "must be a string, a list of strings, or a list of token id lists");
  }
  return prompts;
}

/// vLLM's truncate_prompt_tokens: -1 keeps max_model_len tokens; 0 (the
/// default) keeps them all.
int64_t readTruncatePromptTokens(const Fields &fields, int64_t maxModelLen) {
  std::optional<int64_t> keep = fields.integer("truncate_prompt_tokens", -1, maxModelLen);
  if (!keep) return 0;
  if (*keep == 0) Fields::fail("truncate_prompt_tokens", "must be -1 or at least 1");
  return *keep == -1 ? maxModelLen : *keep;
}

/// OpenAI's messages: role and content, the content a string or a list of
/// text parts (joined).
json readMessages(const Fields &fields) {
  const json *messages = fields.find("messages");
  if (!messages) Fields::fail("messages", "is required");
  if (!messages->is_array() || messages->empty())
    Fields::fail("messages", "must be a non-empty list of messages");
  json conversation = json::array();
  for (const json &message : *messages) {
    if (!message.is_object() || !message.contains("role") || !message["role"].is_string())
      Fields::fail("messages", "must hold objects with a string 'role'");
    json copy = message;
    auto content = message.find("content");
    if (content == message.end() || content->is_null()) {
      copy["content"] = "";
    } else if (content->is_array()) {
      std::string text;
      for (const json &part : *content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
            !part["text"].is_string())
          throw ApiError(400, "only text content parts are supported", "messages");
        text += part["text"].get<std::string>();
      }
      copy["content"] = text;
    } else if (!content->is_string()) {
      Fields::fail("messages", "content must be a string or a list of text parts");
    }
    // OpenAI sends a call's arguments as JSON text; chat templates print them
    // as objects (transformers and vLLM parse them first).
    if (copy.contains("tool_calls") && copy["tool_calls"].is_array())
      for (json &call : copy["tool_calls"]) {
        json *arguments = call.contains("function") && call["function"].is_object() &&
                                  call["function"].contains("arguments")
                              ? &call["function"]["arguments"]
                              : nullptr;
        if (arguments && arguments->is_string()) {
          json parsed = json::parse(arguments->get<std::string>(), nullptr, false);
          if (parsed.is_discarded())
            Fields::fail("messages", "a tool call's arguments must be JSON");
          *arguments = std::move(parsed);
        }
      }
    conversation.push_back(std::move(copy));
  }
  return conversation;
}

std::vector<std::string> readStop(const Fields &fields) {
  const json *stop = fields.find("stop");
  if (!stop) return {};
  if (stop->is_string()) return {stop->get<std::string>()};
  if (!stop->is_array()) Fields::fail("stop", "must be a string or a list of strings");
  std::vector<std::string> strings;
  for (const json &item : *stop) {
    if (!item.is_string()) Fields::fail("stop", "must be a string or a list of strings");
    strings.push_back(item.get<std::string>());
  }
  return strings;
}

/// OpenAI's response_format: {"type": "text" | "json_object" | "json_schema"},
/// the last with {"json_schema": {"name": ..., "schema": {...}, "strict": ...}}.
std::optional<structured::GrammarSpec> readResponseFormat(const json &format) {
  using Kind = structured::GrammarSpec::Kind;
  const char *field = "response_format";
  if (!format.is_object() || !format.contains("type") || !format["type"].is_string())
    Fields::fail(field, "must be an object with a string 'type'");
  std::string type = format["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  if (type == "json_object") return structured::GrammarSpec{Kind::JsonObject, {}, {}, field};
  if (type != "json_schema")
    Fields::fail(field, "type must be 'text', 'json_object' or 'json_schema', not '" + type + "'");
  auto spec = format.find("json_schema");
  if (spec == format.end() || !spec->is_object())
    Fields::fail(field, "of type 'json_schema' needs a 'json_schema' object");
  auto schema = spec->find("schema");
  if (schema == spec->end() || !(schema->is_object() || schema->is_boolean()))
    Fields::fail(field, "'json_schema' needs a 'schema' (a JSON schema object)");
  return structured::GrammarSpec{Kind::JsonSchema, schema->dump(), {}, field};
}

/// The output constraint: response_format or one of vLLM's guided_* fields.
std::optional<structured::GrammarSpec> readGrammar(const Fields &fields) {
  using Kind = structured::GrammarSpec::Kind;
  std::optional<structured::GrammarSpec> spec;
  auto take = [&](structured::GrammarSpec next) {
    if (spec)
      Fields::fail(next.field, "cannot be combined with '" + spec->field +
                                   "': give one output constraint");
    spec = std::move(next);
  };
  if (const json *format = fields.find("response_format"))
    if (auto parsed = readResponseFormat(*format)) take(std::move(*parsed));
  if (const json *schema = fields.find("guided_json")) {
    // vLLM takes the schema as an object or as its JSON text.
    if (schema->is_string()) {
      json parsed = json::parse(schema->get<std::string>(), nullptr, /*allow_exceptions=*/false);
      if (parsed.is_discarded()) Fields::fail("guided_json", "is not valid JSON");
      take({Kind::JsonSchema, parsed.dump(), {}, "guided_json"});
    } else if (schema->is_object() || schema->is_boolean()) {
      take({Kind::JsonSchema, schema->dump(), {}, "guided_json"});
    } else {
      Fields::fail("guided_json", "must be a JSON schema (an object or its text)");
    }
  }
  if (fields.find("guided_regex"))
    take({Kind::Regex, fields.string("guided_regex"), {}, "guided_regex"});
  if (const json *choices = fields.find("guided_choice")) {
    if (!choices->is_array() || choices->empty())
      Fields::fail("guided_choice", "must be a non-empty list of strings");
    std::vector<std::string> strings;
    for (const json &choice : *choices) {
      if (!choice.is_string()) Fields::fail("guided_choice", "must be a non-empty list of strings");
      strings.push_back(choice.get<std::string>());
    }
    take({Kind::Choice, {}, std::move(strings), "guided_choice"});
  }
  if (fields.find("guided_grammar"))
    take({Kind::Ebnf, fields.string("guided_grammar"), {}, "guided_grammar"});
  return spec;
}

/// tools: a list of {"type": "function", "function": {"name", "description",
/// "parameters"}}.
json readTools(const Fields &fields) {
  const json *tools = fields.find("tools");
  if (!tools) return nullptr;
  if (!tools->is_array()) Fields::fail("tools", "must be a list of tools");
  for (const json &tool : *tools) {
    if (!tool.is_object() || tool.value("type", "") != "function" || !tool.contains("function") ||
        !tool["function"].is_object())
      Fields::fail("tools", "must hold {\"type\": \"function\", \"function\": {...}} objects");
    const json &function = tool["function"];
    if (!function.contains("name") || !function["name"].is_string() ||
        function["name"].get<std::string>().empty())
      Fields::fail("tools", "each function needs a 'name'");
    if (function.contains("parameters") && !function["parameters"].is_object())
      Fields::fail("tools", "a function's 'parameters' must be a JSON schema object");
  }
  return tools->empty() ? json() : *tools;
}

/// A function's parameters schema ({"type": "object"} when it gives none).
json parametersOf(const json &tool) {
  const json &function = tool["function"];
  return function.contains("parameters") ? function["parameters"]
                                         : json{{"type", "object"}};
}

/// tool_choice, and the grammar of the call it requires: vLLM's outputs for
/// these modes, a list of {"name", "parameters"} (required) or the named
/// function's arguments.
void readToolChoice(const Fields &fields, GenerationRequest &request) {
  using ToolChoice = GenerationRequest::ToolChoice;
  const json *choice = fields.find("tool_choice");
  if (request.tools.is_null()) {
    if (choice && *choice != "none") Fields::fail("tool_choice", "needs 'tools'");
    return;
  }
  request.toolChoice = ToolChoice::Auto;
  if (choice && choice->is_string()) {
    std::string mode = choice->get<std::string>();
    if (mode == "none") request.toolChoice = ToolChoice::None;
    else if (mode == "required") request.toolChoice = ToolChoice::Required;
    else if (mode != "auto")
      Fields::fail("tool_choice", "must be 'none', 'auto', 'required' or a named function");
  } else if (choice) {
    if (!choice->is_object() || choice->value("type", "") != "function" ||
        !choice->contains("function") || !(*choice)["function"].is_object() ||
        !(*choice)["function"].contains("name") || !(*choice)["function"]["name"].is_string())
      Fields::fail("tool_choice", "must be 'none', 'auto', 'required' or "
                                  "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    request.toolChoice = ToolChoice::Named;
    request.toolFunction = (*choice)["function"]["name"].get<std::string>();
  }
  bool parallel = fields.flag("parallel_tool_calls", true);
  using Kind = structured::GrammarSpec::Kind;
  if (request.toolChoice == ToolChoice::Named) {
    for (const json &tool : request.tools)
      if (tool["function"]["name"] == request.toolFunction) {
        request.grammar = {Kind::JsonSchema, parametersOf(tool).dump(), {}, "tool_choice"};
        request.toolCallFormat = ToolCallFormat::Named;
        return;
      }
    Fields::fail("tool_choice", "names '" + request.toolFunction + "', which is not in 'tools'");
  }
  if (request.toolChoice == ToolChoice::Required) {
    json alternatives = json::array();
    for (const json &tool : request.tools)
      alternatives.push_back({{"type", "object"},
                              {"properties",
                               {{"name", {{"type", "string"}, {"enum", {tool["function"]["name"]}}}},
                                {"parameters", parametersOf(tool)}}},
                              {"required", {"name", "parameters"}},
                              {"additionalProperties", false}});
    json schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", alternatives}}}};
    if (!parallel) schema["maxItems"] = 1;
    request.grammar = {Kind::JsonSchema, schema.dump(), {}, "tool_choice"};
    request.toolCallFormat = ToolCallFormat::Required;
  }
}

} // namespace

GenerationRequest parseGenerationRequest(Endpoint endpoint, const json &body,
                                         int64_t maxModelLen) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  Fields fields(body);
  GenerationRequest request;
  request.endpoint = endpoint;
  bool chat = endpoint == Endpoint::ChatCompletions;
  request.model = fields.string("model");
  if (chat)
    request.messages = readMessages(fields);
  else
    request.prompts = readPrompts(fields);

  for (const char *name : {"functions", "audio", "modalities"})
    fields.unsupported(name, json());
  if (!chat) fields.unsupported("tools", json());
  // Chat's echo (vLLM's: the last message) is another thing than completions'.
  if (chat)
    fields.unsupported("echo", false);
  else
    request.echo = fields.flag("echo", false);
  fields.unsupported("suffix", "");
  fields.unsupported("best_of", fields.find("n") ? *fields.find("n") : json(1));

  RequestOptions &options = request.options;
  SamplingParams &sampling = options.sampling;
  options.n = static_cast<int32_t>(fields.integer("n", 1, 128).value_or(1));
  // Chat: max_completion_tokens is the newer name of max_tokens. An echo may
  // ask for no token at all: the engine samples one, which is left out.
  std::optional<int64_t> maxTokens = fields.integer("max_tokens", request.echo ? 0 : 1,
                                                    maxModelLen);
  if (chat && !maxTokens) maxTokens = fields.integer("max_completion_tokens", 1, maxModelLen);
  request.echoOnly = maxTokens == 0;
  options.maxTokens = request.echoOnly ? 1 : maxTokens.value_or(chat ? maxModelLen : 16);

  sampling.temperature = static_cast<float>(fields.number("temperature", 1.0, 0.0, 2.0));
  sampling.topP = static_cast<float>(fields.number("top_p", 1.0, 1e-9, 1.0));
  sampling.topK = static_cast<int32_t>(
      fields.integer("top_k", -1, std::numeric_limits<int32_t>::max()).value_or(0));
  sampling.minP = static_cast<float>(fields.number("min_p", 0.0, 0.0, 1.0));
  sampling.presencePenalty = static_cast<float>(fields.number("presence_penalty", 0.0, -2.0, 2.0));
  sampling.frequencyPenalty =
      static_cast<float>(fields.number("frequency_penalty", 0.0, -2.0, 2.0));
  sampling.repetitionPenalty =
      static_cast<float>(fields.number("repetition_penalty", 1.0, 1e-6, 100.0));
  if (std::optional<int64_t> seed = fields.integer("seed", std::numeric_limits<int64_t>::min(),
                                                   std::numeric_limits<int64_t>::max()))
    sampling.seed = static_cast<uint64_t>(*seed);
  sampling.logitBias = readLogitBias(fields);
  if (const json *allowed = fields.find("allowed_token_ids")) {
    if (!allowed->is_array() || allowed->empty())
      Fields::fail("allowed_token_ids", "must be a non-empty list of token ids");
    sampling.allowedTokenIds = tokenIds(*allowed, "allowed_token_ids");
  }
  // vLLM's: the stop tokens (EOS included) wait for this many output tokens.
  sampling.minTokens = fields.integer("min_tokens", 0, maxModelLen).value_or(0);

  // Completions: logprobs is the number of alternatives. Chat: a flag, with
  // top_logprobs the number.
  if (chat) {
    std::optional<int64_t> top = fields.integer("top_logprobs", 0, 20);
    if (fields.flag("logprobs", false))
      request.logprobs = static_cast<int32_t>(top.value_or(0));
    else if (top)
      Fields::fail("top_logprobs", "needs 'logprobs': true");
  } else if (std::optional<int64_t> top = fields.integer("logprobs", 0, 20)) {
    request.logprobs = static_cast<int32_t>(*top);
  }
  sampling.logprobs = request.logprobs;
  // vLLM's prompt_logprobs; an echo with logprobs needs them too, as many.
  if (std::optional<int64_t> count = fields.integer("prompt_logprobs", 0, 20))
    request.promptLogprobs = static_cast<int32_t>(*count);
  options.promptLogprobs = request.promptLogprobs;
  if (request.echo && request.logprobs && !options.promptLogprobs)
    options.promptLogprobs = request.logprobs;
  // vLLM's: lower runs first, under the server's priority scheduling policy.
  options.priority = fields.integer("priority", std::numeric_limits<int32_t>::min(),
                                    std::numeric_limits<int32_t>::max())
                         .value_or(0);
  if (fields.find("return_tokens_as_token_ids"))
    request.returnTokensAsTokenIds = fields.flag("return_tokens_as_token_ids", false);

  request.stop = readStop(fields);
  request.includeStopStrInOutput = fields.flag("include_stop_str_in_output", false);
  request.skipSpecialTokens = fields.flag("skip_special_tokens", true);
  request.truncatePromptTokens = readTruncatePromptTokens(fields, maxModelLen);
  if (const json *ids = fields.find("stop_token_ids")) {
    if (!ids->is_array()) Fields::fail("stop_token_ids", "must be a list of token ids");
    options.stopTokenIds = tokenIds(*ids, "stop_token_ids");
  }
  request.ignoreEos = fields.flag("ignore_eos", false);
  request.grammar = readGrammar(fields);
  if (chat) {
    request.tools = readTools(fields);
    std::optional<structured::GrammarSpec> constraint = std::exchange(request.grammar, std::nullopt);
    readToolChoice(fields, request);
    if (constraint && request.grammar)
      Fields::fail("tool_choice", "'required' or a named function cannot be combined with '" +
                                      constraint->field + "'");
    if (constraint) request.grammar = std::move(constraint);
    request.templateKwargs = readTemplateKwargs(fields);
  }

  request.stream = fields.flag("stream", false);
  if (const json *streamOptions = fields.find("stream_options")) {
    if (!request.stream) Fields::fail("stream_options", "is only allowed with 'stream': true");
    if (!streamOptions->is_object()) Fields::fail("stream_options", "must be an object");
    Fields options(*streamOptions);
    request.includeUsage = options.flag("include_usage", false);
    request.continuousUsage = request.includeUsage && options.flag("continuous_usage_stats", false);
  }
  if (request.stream && request.promptLogprobs)
    Fields::fail("prompt_logprobs", "is not supported with 'stream': true");
  return request;
}

PoolingRequest parsePoolingRequest(PoolingEndpoint endpoint, const json &body,
                                   int64_t maxModelLen) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  Fields fields(body);
  PoolingRequest request;
  request.model = fields.string("model");
  request.inputs = readPrompts(fields, "input");
  bool activation = fields.flag("use_activation", true);
  if (endpoint == PoolingEndpoint::Embeddings) {
    std::string format =
        fields.find("encoding_format") ? fields.string("encoding_format") : "float";
    if (format != "float" && format != "base64")
      Fields::fail("encoding_format", "must be 'float' or 'base64', not '" + format + "'");
    request.base64 = format == "base64";
    // A Matryoshka model's leading features (the engine refuses other models).
    request.pooling.dimensions =
        fields.integer("dimensions", 1, std::numeric_limits<int32_t>::max());
    request.pooling.normalize = fields.flag("normalize", activation);
  }
  request.pooling.activation = activation;
  request.addSpecialTokens = fields.flag("add_special_tokens", true);
  request.truncatePromptTokens = readTruncatePromptTokens(fields, maxModelLen);
  return request;
}

namespace {
/// A scoring text field: one string, or a non-empty list of strings (or,
/// with `objects`, of Cohere's {"text": ...} documents).
std::vector<std::string> readTexts(const Fields &fields, const char *name, bool list,
                                   bool objects = false) {
  const json *value = fields.find(name);
  if (!value) Fields::fail(name, "is required");
  if (value->is_string() && !list) return {value->get<std::string>()};
  std::string expected = list ? "a non-empty list of strings" : "a string or a list of strings";
  if (!value->is_array() || value->empty()) Fields::fail(name, "must be " + expected);
  std::vector<std::string> texts;
  for (const json &item : *value) {
    const json *text = &item;
    if (objects && item.is_object() && item.contains("text")) text = &item["text"];
    if (!text->is_string()) Fields::fail(name, "must be " + expected);
    texts.push_back(text->get<std::string>());
  }
  return texts;
}
} // namespace

ScoringRequest parseScoringRequest(ScoringEndpoint endpoint, const json &body,
                                   int64_t maxModelLen) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  Fields fields(body);
  ScoringRequest request;
  request.model = fields.string("model");
  if (endpoint == ScoringEndpoint::Score) {
    request.texts1 = readTexts(fields, "text_1", /*list=*/false);
    request.texts2 = readTexts(fields, "text_2", /*list=*/false);
  } else {
    const json *query = fields.find("query");
    if (!query || !query->is_string()) Fields::fail("query", "must be a string");
    request.texts1 = {query->get<std::string>()};
    request.texts2 = readTexts(fields, "documents", /*list=*/true, /*objects=*/true);
    request.topN = fields.integer("top_n", 0, std::numeric_limits<int64_t>::max()).value_or(0);
    request.returnDocuments = fields.flag("return_documents", true);
  }
  request.activation = fields.flag("use_activation", true);
  request.truncatePromptTokens = readTruncatePromptTokens(fields, maxModelLen);
  return request;
}

TokenizeRequest parseTokenizeRequest(const json &body) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  Fields fields(body);
  TokenizeRequest request;
  request.model = fields.string("model");
  bool chat = fields.find("messages") != nullptr;
  if (chat == (fields.find("prompt") != nullptr))
    throw ApiError(400, "give either 'prompt' or 'messages'", chat ? "prompt" : "messages");
  if (chat) {
    request.messages = readMessages(fields);
    request.tools = readTools(fields);
    request.addGenerationPrompt = fields.flag("add_generation_prompt", true);
    request.templateKwargs = readTemplateKwargs(fields);
  } else {
    const json *prompt = fields.find("prompt");
    if (!prompt->is_string()) Fields::fail("prompt", "must be a string");
    request.prompt = prompt->get<std::string>();
  }
  request.addSpecialTokens = fields.flag("add_special_tokens", !chat);
  request.returnTokenStrs = fields.flag("return_token_strs", false);
  return request;
}

DetokenizeRequest parseDetokenizeRequest(const json &body) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object");
  Fields fields(body);
  DetokenizeRequest request;
  request.model = fields.string("model");
  const json *tokens = fields.find("tokens");
  if (!tokens || !tokens->is_array()) Fields::fail("tokens", "must be a list of token ids");
  request.tokens = tokenIds(*tokens, "tokens");
  return request;
}

} // namespace llmc::runtime::server
