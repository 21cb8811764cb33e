//===- Server.h - `llmc serve`: the OpenAI-compatible server ----*- C++ -*-===//
//
// The entry point of the server, free of the HTTP library's headers so that
// the CLI (built as C++17 with LLVM's flags) can call it. serve() runs an
// AsyncEngine over the model and answers the OpenAI API on it until SIGTERM
// or SIGINT, then shuts down gracefully: it stops accepting, lets the
// requests in flight finish (aborting those still running after the grace
// period) and returns.
//
//===----------------------------------------------------------------------===//
#ifndef LLMC_RUNTIME_SERVER_SERVER_H
#define LLMC_RUNTIME_SERVER_SERVER_H

#include "runtime/chat/ChatTemplate.h"
#include "runtime/engine/AsyncEngine.h"
#include "runtime/lora/LoraAdapter.h"
#include "runtime/server/ToolCalls.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace llmc::runtime::server {

/// The model as the API presents it.
struct ServedModel {
  Model &model;
  /// Null when the artifact has none: then prompts must be token ids, and
  /// chat is unavailable.
  const tokenizer::Tokenizer *tokenizer = nullptr;
  /// From tokenizer_config.json; parsed when the server starts.
  std::optional<chat::ChatTemplate> chatTemplate;
  std::string bosToken, eosToken;
  /// Generation stops at these tokens unless a request says ignore_eos.
  std::vector<int32_t> eosTokenIds;
  /// Compiles requests' output constraints; null without a tokenizer (then
  /// constrained requests are refused).
  structured::GrammarCompiler *grammars = nullptr;
  /// How the model writes tool calls (from its chat template, or
  /// --tool-call-parser); nullopt: tool_choice "auto" is refused.
  std::optional<ToolCallFormat> toolCallFormat;
  /// A reasoning model (its template writes <think> blocks, or
  /// --reasoning-parser): chat answers carry reasoning_content.
  bool reasoning = false;
  /// The id /v1/models lists and requests name.
  std::string name;
  /// A LoRA adapter served under its own model id (vLLM's --lora-modules):
  /// a request naming it runs with it.
  struct LoraModule {
    std::string name, path;
    std::shared_ptr<const LoraAdapter> adapter;
  };
  std::vector<LoraModule> loraModules;

  /// Whether `id` names the base model or one of `modules` (the adapters
  /// served beside it).
  bool hasModelId(const std::vector<LoraModule> &modules, const std::string &id) const {
    return id == name || findLoraModule(modules, id) != modules.end();
  }
  /// The module of `modules` served as `id`, or end().
  static std::vector<LoraModule>::const_iterator
  findLoraModule(const std::vector<LoraModule> &modules, const std::string &id) {
    return std::find_if(modules.begin(), modules.end(),
                        [&](const LoraModule &module) { return module.name == id; });
  }
};

struct ServerOptions {
  std::string host = "127.0.0.1";
  /// 0 picks a free port.
  uint16_t port = 8000;
  /// Threads answering connections (the engine has its own).
  int httpThreads = 2;
  size_t maxBodyBytes = 16 << 20;
  /// When set, /v1/ requests must carry `Authorization: Bearer <apiKey>`.
  std::string apiKey;
  /// After SIGTERM, how long requests in flight may run before they are aborted.
  double shutdownTimeoutSeconds = 30;
  /// vLLM's --return-tokens-as-token-ids: logprobs name their tokens
  /// "token_id:N" unless a request says otherwise.
  bool returnTokensAsTokenIds = false;
  /// The largest rank of an adapter's layer (vLLM's max_lora_rank).
  int64_t maxLoraRank = kDefaultMaxLoraRank;
  /// POST /v1/load_lora_adapter and /v1/unload_lora_adapter change the
  /// adapters served (vLLM's VLLM_ALLOW_RUNTIME_LORA_UPDATING).
  bool allowRuntimeLoraUpdating = false;
};

/// Serves until SIGTERM or SIGINT. `onListening` is called with the port
/// once connections are accepted. Throws Error when the address cannot be
/// bound or the engine cannot start.
void serve(ServedModel &served, const AsyncEngineConfig &engineConfig,
           const ServerOptions &options, const std::function<void(uint16_t)> &onListening);

} // namespace llmc::runtime::server

#endif // LLMC_RUNTIME_SERVER_SERVER_H
