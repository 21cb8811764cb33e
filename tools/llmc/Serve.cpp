//===- Serve.cpp - `llmc serve`: the OpenAI-compatible server -------------===//
//
//   llmc serve model.llmc [--host 127.0.0.1] [--port 8000] [--api-key KEY]
//              [--served-model-name NAME] [engine options] ...
//
// Loads the artifact, its tokenizer and chat template (a template it cannot
// run is an error here, at start, not when a chat request comes), and runs
// the server of runtime/server until SIGTERM or SIGINT. Built with
// exceptions, as `llmc run` is.
//
//===----------------------------------------------------------------------===//
#include "Serve.h"

#include "EngineFlags.h"

#include "runtime/core/Artifact.h"
#include "runtime/core/Error.h"
#include "runtime/lora/LoraAdapter.h"
#include "runtime/server/Reasoning.h"
#include "runtime/server/Server.h"
#include "runtime/tokenizer/Tokenizer.h"
#include "runtime/tokenizer/TokenizerConfig.h"

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

namespace llmc {
namespace {
using runtime::Error;

constexpr const char *kUsage =
    "usage: llmc serve model.llmc [--host HOST] [--port PORT] [--api-key KEY] [options]\n"
    "\n"
    "Serves the model with an OpenAI-compatible API until SIGTERM or SIGINT:\n"
    "POST /v1/completions and /v1/chat/completions (\"stream\": true for Server-Sent\n"
    "Events), GET /v1/models, POST /tokenize and /detokenize, GET /health and /metrics\n"
    "(Prometheus). Chat requests go through the chat template of the artifact's\n"
    "tokenizer_config.json.\n"
    "  --host HOST                address to listen on (default 127.0.0.1)\n"
    "  --port PORT                port (default 8000; 0 picks a free one)\n"
    "  --api-key KEY              require 'Authorization: Bearer KEY' on /v1/ (default: the\n"
    "                             LLMC_API_KEY environment variable, else none)\n"
    "  --served-model-name NAME   the model id of /v1/models (default: the artifact's\n"
    "                             directory name without .llmc)\n"
    "  --chat-template FILE       a Jinja chat template to use instead of the artifact's\n"
    "  --tool-call-parser NAME    how the model writes tool calls: hermes, llama3_json or\n"
    "                             mistral (default: read off the chat template)\n"
    "  --reasoning-parser NAME    deepseek_r1 or qwen3: <think> text is reasoning_content;\n"
    "                             none: it is content (default: on when the chat template\n"
    "                             writes <think> blocks)\n"
    "  --max-pending-requests N   requests accepted and unfinished at most; more get 429\n"
    "                             (default 4096)\n"
    "  --max-body-bytes SIZE      larger request bodies get 413 (default 16MiB)\n"
    "  --http-threads N           threads answering connections (default 2)\n"
    "  --shutdown-timeout SECS    after SIGTERM, how long requests in flight may finish\n"
    "                             before they are aborted (default 30)\n"
    "  --return-tokens-as-token-ids  logprobs name tokens \"token_id:N\" (a request's\n"
    "                             return_tokens_as_token_ids overrides it)\n"
    "  --lora-modules NAME=PATH ...  serve PEFT LoRA adapters as models of their own: a\n"
    "                             request whose \"model\" is NAME runs with the adapter in\n"
    "                             directory PATH (the artifact must be compiled with\n"
    "                             --enable-lora); also {\"name\": ..., \"path\": ...}\n"
    "  --max-lora-rank N          the largest rank an adapter's layer may have (default 16)\n"
    "  --allow-runtime-lora-updating  POST /v1/load_lora_adapter {lora_name, lora_path} and\n"
    "                             /v1/unload_lora_adapter {lora_name} change the adapters\n"
    "                             (also VLLM_ALLOW_RUNTIME_LORA_UPDATING=True, as vLLM)\n"
    "engine:\n"
    "%ENGINE%";

struct ServeCommand {
  std::string artifactDir;
  std::string chatTemplateFile;
  EngineFlags engine;
  runtime::AsyncEngineConfig asyncEngine;
  runtime::server::ServerOptions server;
  std::string modelName;
  std::optional<runtime::server::ToolCallFormat> toolCallFormat;
  std::optional<bool> reasoning;
  /// --lora-modules: each adapter's model id and directory.
  std::vector<std::pair<std::string, std::string>> loraModules;
};

/// One --lora-modules entry: NAME=PATH, or vLLM's JSON {"name": ..., "path": ...}.
std::pair<std::string, std::string> parseLoraModule(const std::string &text) {
  if (!text.empty() && text.front() == '{') {
    nlohmann::json entry = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("path") || !entry["path"].is_string())
      throw Error("--lora-modules: '" + text + "' is not {\"name\": ..., \"path\": ...}");
    return {entry["name"].get<std::string>(), entry["path"].get<std::string>()};
  }
  size_t equals = text.find('=');
  if (equals == 0 || equals == std::string::npos || equals + 1 == text.size())
    throw Error("--lora-modules takes NAME=PATH, not '" + text + "'");
  return {text.substr(0, equals), text.substr(equals + 1)};
}

/// The artifact's directory name without ".llmc" (and without a trailing slash).
std::string defaultModelName(std::string directory) {
  while (directory.size() > 1 && directory.back() == '/') directory.pop_back();
  std::string name = directory.substr(directory.find_last_of('/') + 1);
  constexpr std::string_view suffix = ".llmc";
  if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
    name.resize(name.size() - suffix.size());
  return name;
}

std::optional<ServeCommand> parseArguments(const std::vector<std::string> &args) {
  ServeCommand command;
  if (const char *key = std::getenv("LLMC_API_KEY")) command.server.apiKey = key;
  if (const char *allow = std::getenv("VLLM_ALLOW_RUNTIME_LORA_UPDATING"))
    command.server.allowRuntimeLoraUpdating = std::string(allow) == "True" ||
                                              std::string(allow) == "true" ||
                                              std::string(allow) == "1";
  for (size_t i = 0; i < args.size(); ++i) {
    Argument argument = readArgument(
        args, i, {"--help", "-h", "--return-tokens-as-token-ids", "--allow-runtime-lora-updating"});
    const std::string &name = argument.name, &value = argument.value;
    if (argument.positional) {
      if (!command.artifactDir.empty())
        throw Error("more than one model given: " + command.artifactDir + " and " + name);
      command.artifactDir = name;
    } else if (name == "--help" || name == "-h") {
      std::string usage = kUsage;
      usage.replace(usage.find("%ENGINE%"), 8, kEngineFlagsUsage);
      std::cout << usage;
      return std::nullopt;
    } else if (name == "--host") {
      command.server.host = value;
    } else if (name == "--port") {
      command.server.port = static_cast<uint16_t>(parseInteger(value, name, 0, 65535));
    } else if (name == "--api-key") {
      command.server.apiKey = value;
    } else if (name == "--served-model-name") {
      command.modelName = value;
    } else if (name == "--chat-template") {
      command.chatTemplateFile = value;
    } else if (name == "--reasoning-parser") {
      if (value != "deepseek_r1" && value != "qwen3" && value != "none")
        throw Error("--reasoning-parser must be deepseek_r1, qwen3 or none, not '" + value + "'");
      command.reasoning = value != "none";
    } else if (name == "--tool-call-parser") {
      command.toolCallFormat = runtime::server::toolCallFormatNamed(value);
      if (!command.toolCallFormat)
        throw Error("--tool-call-parser must be hermes, llama3_json or mistral, not '" + value +
                    "'");
    } else if (name == "--max-pending-requests") {
      command.asyncEngine.maxPendingRequests = static_cast<size_t>(parseInteger(value, name, 1));
    } else if (name == "--max-body-bytes") {
      command.server.maxBodyBytes = static_cast<size_t>(parseBytes(value, name));
    } else if (name == "--http-threads") {
      command.server.httpThreads = static_cast<int>(parseInteger(value, name, 1, 256));
    } else if (name == "--return-tokens-as-token-ids") {
      command.server.returnTokensAsTokenIds = true;
    } else if (name == "--lora-modules") {
      command.loraModules.push_back(parseLoraModule(value));
      // vLLM's form: several modules after one flag.
      while (i + 1 < args.size() && !args[i + 1].empty() && args[i + 1][0] != '-' &&
             (args[i + 1].find('=') != std::string::npos || args[i + 1][0] == '{'))
        command.loraModules.push_back(parseLoraModule(args[++i]));
    } else if (name == "--max-lora-rank") {
      command.server.maxLoraRank = parseInteger(value, name, 1, 4096);
    } else if (name == "--allow-runtime-lora-updating") {
      command.server.allowRuntimeLoraUpdating = true;
    } else if (name == "--shutdown-timeout") {
      command.server.shutdownTimeoutSeconds = parseNumber(value, name, 0, 86400);
    } else if (!command.engine.consume(name, value)) {
      throw Error("unknown option " + name + " (llmc serve --help lists them)");
    }
  }
  if (command.artifactDir.empty()) throw Error("no model: give the model.llmc directory");
  if (command.modelName.empty()) command.modelName = defaultModelName(command.artifactDir);
  command.asyncEngine.engine = command.engine.engine;
  return command;
}

/// The tokenizer, special tokens and chat template the artifact carries.
struct TextSupport {
  std::unique_ptr<runtime::tokenizer::Tokenizer> tokenizer;
  runtime::tokenizer::TokenizerConfig config;
};

TextSupport loadText(const runtime::Artifact &artifact, const std::string &chatTemplateFile) {
  TextSupport text;
  if (!artifact.tokenizerFile().empty())
    text.tokenizer = runtime::tokenizer::Tokenizer::fromFile(artifact.tokenizerFile());
  if (!artifact.tokenizerConfigFile().empty())
    text.config = runtime::tokenizer::TokenizerConfig::load(artifact.tokenizerConfigFile());
  if (!chatTemplateFile.empty()) text.config.chatTemplate = readTextFile(chatTemplateFile, "chat template");
  return text;
}
} // namespace

int runServe(const std::vector<std::string> &args) {
  try {
    std::optional<ServeCommand> command = parseArguments(args);
    if (!command) return 0;
    std::unique_ptr<runtime::Artifact> artifact = runtime::Artifact::load(command->artifactDir);
    TextSupport text = loadText(*artifact, command->chatTemplateFile);
    std::optional<runtime::chat::ChatTemplate> chatTemplate;
    if (text.config.chatTemplate) {
      try {
        chatTemplate = runtime::chat::ChatTemplate::parse(*text.config.chatTemplate);
      } catch (const runtime::chat::ChatTemplateError &error) {
        throw Error("the chat template cannot be run: " + std::string(error.what()));
      }
    }
    std::string tokenizerJson = artifact->tokenizerFile().empty()
                                    ? std::string()
                                    : readTextFile(artifact->tokenizerFile(), "tokenizer");
    runtime::Model model(std::move(artifact), command->engine.model);
    std::cerr << "llmc serve: " << model.kvCacheSummary() << "\n";

    runtime::server::ServedModel served{model};
    served.tokenizer = text.tokenizer.get();
    served.chatTemplate = std::move(chatTemplate);
    served.bosToken = text.config.bosToken.value_or("");
    served.eosToken = text.config.eosToken.value_or("");
    served.eosTokenIds = runtime::tokenizer::endOfSequenceIds(text.config, text.tokenizer.get(),
                                                              model.config().vocabSize);
    served.name = command->modelName;
    for (const auto &[name, path] : command->loraModules) {
      if (served.hasModelId(served.loraModules, name))
        throw Error("--lora-modules: the model id '" + name + "' is taken");
      served.loraModules.push_back(
          {name, path,
           runtime::LoraAdapter::load(path, model.stepConfig().loraSites,
                                      command->server.maxLoraRank)});
      std::cerr << "llmc serve: LoRA adapter " << name << " from " << path << "\n";
    }
    served.toolCallFormat = command->toolCallFormat;
    if (!served.toolCallFormat && text.config.chatTemplate)
      served.toolCallFormat = runtime::server::detectToolCallFormat(*text.config.chatTemplate);
    served.reasoning = command->reasoning.value_or(
        text.config.chatTemplate && runtime::server::templateThinks(*text.config.chatTemplate));
    std::unique_ptr<runtime::structured::GrammarCompiler> grammars;
    if (text.tokenizer) {
      grammars = std::make_unique<runtime::structured::GrammarCompiler>(
          *text.tokenizer, tokenizerJson, model.config().vocabSize, served.eosTokenIds);
      served.grammars = grammars.get();
    }
    if (!served.chatTemplate)
      std::cerr << "llmc serve: the model has no chat template: /v1/chat/completions is off\n";

    runtime::server::serve(served, command->asyncEngine, command->server, [&](uint16_t port) {
      std::cerr << "llmc serve: serving " << served.name << " on http://"
                << command->server.host << ":" << port << "\n"
                << std::flush;
    });
    std::cerr << "llmc serve: stopped\n";
    return 0;
  } catch (const std::exception &error) {
    std::cerr << "llmc serve: error: " << error.what() << "\n";
    return 1;
  }
}

} // namespace llmc
