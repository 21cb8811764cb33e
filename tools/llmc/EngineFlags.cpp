//===- EngineFlags.cpp - the engine options and argument helpers of run, bench, serve ===//
#include "EngineFlags.h"

#include "runtime/core/Error.h"
#include "runtime/engine/EngineJson.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

namespace llmc {
using runtime::Error;

const char *const kEngineFlagsUsage =
    "  --threads N                  CPU threads (default: one per hardware thread)\n"
    "  --kv-cache-memory BYTES      KV cache size, e.g. 2GiB (default 1GiB)\n"
    "  --memory-fraction F          KV cache = F x (available memory - weights), F in (0, 1]\n"
    "  --kv-blocks N                KV cache size in blocks\n"
    "  --max-num-seqs N             sequences per step (default: the artifact's limit)\n"
    "  --max-num-batched-tokens N   tokens per step (default: the artifact's limit)\n"
    "  --max-model-len N            longest sequence, prompt and output (default: what the\n"
    "                               model and the KV cache allow)\n"
    "  --enable-prefix-caching on|off   reuse the KV blocks of shared prompt prefixes (on)\n"
    "  --swap-space GIB             host memory for preempted sequences' KV blocks, in GiB\n"
    "                               as vLLM (4) or with a unit (512MiB); a preemption swaps\n"
    "                               when that costs less than recomputing (default 0: recompute)\n"
    "  --speculative-config JSON    speculative decoding by prompt lookup, as vLLM's:\n"
    "                               '{\"method\": \"ngram\", \"num_speculative_tokens\": 4,\n"
    "                               \"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2}' (off)\n"
    "  --scheduling-policy fcfs|priority   first come, first served, or by each request's\n"
    "                               priority (lower first), as vLLM's (fcfs)\n";

Argument readArgument(const std::vector<std::string> &args, size_t &i,
                      std::initializer_list<std::string_view> flags) {
  const std::string &arg = args[i];
  Argument argument;
  for (std::string_view flag : flags)
    if (arg == flag) {
      argument.name = arg;
      return argument;
    }
  if (arg.rfind("--", 0) != 0) {
    argument.name = arg;
    argument.positional = true;
    return argument;
  }
  size_t equals = arg.find('=');
  if (equals != std::string::npos) {
    argument.name = arg.substr(0, equals);
    argument.value = arg.substr(equals + 1);
    return argument;
  }
  if (i + 1 == args.size()) throw Error(arg + " needs a value");
  argument.name = arg;
  argument.value = args[++i];
  return argument;
}

int64_t parseInteger(const std::string &text, const std::string &what, int64_t minimum,
                     int64_t maximum) {
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (text.empty() || used != text.size() || value < minimum || value > maximum)
    throw Error(what + " must be an integer from " + std::to_string(minimum) + " to " +
                std::to_string(maximum) + ", not '" + text + "'");
  return value;
}

double parseNumber(const std::string &text, const std::string &what, double minimum,
                   double maximum) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(value) || value < minimum ||
      value > maximum)
    throw Error(what + " must be a number from " + std::to_string(minimum) + " to " +
                std::to_string(maximum) + ", not '" + text + "'");
  return value;
}

std::string readTextFile(const std::string &path, const std::string &what) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) throw Error(path + ": cannot open the " + what);
  std::ostringstream contents;
  contents << stream.rdbuf();
  return contents.str();
}

int64_t parseBytes(const std::string &text, const std::string &what) {
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  std::string unit;
  for (char c : text.substr(used)) unit += static_cast<char>(std::toupper(c));
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB") scale = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB") scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB") scale = 1024.0 * 1024 * 1024;
  double bytes = value * scale;
  if (used == 0 || scale == 0 || !std::isfinite(bytes) || bytes < 1 || bytes > 9.0e18)
    throw Error(what + " must be a size in bytes such as 1073741824, 512MiB or 4GiB, not '" +
                text + "'");
  return static_cast<int64_t>(bytes);
}

bool EngineFlags::consume(const std::string &name, const std::string &value) {
  if (name == "--threads")
    model.numThreads = static_cast<unsigned>(parseInteger(value, name, 1, 1024));
  else if (name == "--kv-cache-memory")
    model.kvCacheBytes = parseBytes(value, name);
  else if (name == "--memory-fraction")
    model.memoryFraction = parseNumber(value, name, 1e-6, 1.0);
  else if (name == "--kv-blocks")
    model.numKvBlocks = parseInteger(value, name, 1, INT32_MAX);
  else if (name == "--max-num-seqs")
    engine.maxNumSeqs = parseInteger(value, name, 1, INT32_MAX);
  else if (name == "--max-num-batched-tokens")
    engine.maxNumBatchedTokens = parseInteger(value, name, 1, INT32_MAX);
  else if (name == "--max-model-len")
    // The model too: a GPU sizes its block tables by it.
    engine.maxModelLen = model.maxModelLen = parseInteger(value, name, 2, INT32_MAX);
  else if (name == "--enable-prefix-caching") {
    if (value != "on" && value != "off")
      throw Error(name + " must be on or off, not '" + value + "'");
    engine.enablePrefixCaching = value == "on";
  } else if (name == "--swap-space") {
    // A bare number is GiB, as vLLM's --swap-space; 0 turns swapping off.
    bool bare = !value.empty() && value.find_first_not_of("0123456789.") == std::string::npos;
    engine.swapSpaceBytes =
        bare ? static_cast<int64_t>(parseNumber(value, name, 0, 1e6) * 1024 * 1024 * 1024)
             : parseBytes(value, name);
  } else if (name == "--speculative-config") {
    nlohmann::json parsed;
    try {
      parsed = nlohmann::json::parse(value);
    } catch (const nlohmann::json::exception &) {
      throw Error(name + " must be a JSON object such as '{\"method\": \"ngram\", "
                         "\"num_speculative_tokens\": 4}', not '" + value + "'");
    }
    engine.speculative = runtime::speculativeConfigFromJson(parsed);
  } else if (name == "--scheduling-policy") {
    engine.schedulingPolicy = runtime::schedulingPolicyNamed(value);
  } else
    return false;
  return true;
}

} // namespace llmc
