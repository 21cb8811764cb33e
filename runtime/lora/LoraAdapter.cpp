//===- LoraAdapter.cpp - a PEFT LoRA adapter, matched to an artifact ------===//
#include "runtime/lora/LoraAdapter.h"

#include "runtime/core/Error.h"
#include "runtime/lora/Safetensors.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <map>
#include <unordered_map>

namespace llmc::runtime {
namespace {

using nlohmann::json;

/// PEFT prefixes each key with the wrapper's path to the base model.
constexpr const char *kPeftPrefix = "base_model.model.";

/// Whether PEFT's pattern `key` (a rank_pattern or alpha_pattern key) names
/// `module`: the module itself or its last components. PEFT reads a key as a
/// regular expression; one that is not a plain name is refused by the caller.
bool alphaPatternNames(const std::string &key, const std::string &module) {
  if (module == key) return true;
  return module.size() > key.size() &&
         module.compare(module.size() - key.size(), key.size(), key) == 0 &&
         module[module.size() - key.size() - 1] == '.';
}

bool isPlainAlphaPattern(const std::string &key) {
  return key.find_first_of("*+?[](){}|^$\\") == std::string::npos;
}

/// A value of adapter_config.json that the loader refuses unless it is
/// absent, null, false or empty.
bool isSetInAdapterConfig(const json &config, const char *name) {
  if (!config.contains(name)) return false;
  const json &value = config[name];
  return !(value.is_null() || (value.is_boolean() && !value.get<bool>()) ||
           (value.is_array() && value.empty()) || (value.is_object() && value.empty()) ||
           (value.is_string() && value.get<std::string>() == "none"));
}

} // namespace

std::shared_ptr<const LoraAdapter> LoraAdapter::load(const std::string &directory,
                                                     const std::vector<LoraSite> &sites,
                                                     int64_t maxRank) {
  auto fail = [&](const std::string &why) {
    return Error("LoRA adapter " + directory + ": " + why);
  };
  if (sites.empty())
    throw fail("the model was compiled without LoRA sites (llmc compile --enable-lora)");

  std::ifstream configStream(directory + "/adapter_config.json");
  if (!configStream) throw fail("no adapter_config.json");
  json config = json::parse(configStream, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) throw fail("adapter_config.json is not a JSON object");
  if (config.contains("peft_type") && config["peft_type"] != "LORA")
    throw fail("its peft_type is " + config["peft_type"].dump() + "; only LORA is served");
  for (const char *name : {"use_dora", "use_qalora", "modules_to_save", "trainable_token_indices",
                           "layer_replication", "target_parameters"})
    if (isSetInAdapterConfig(config, name))
      throw fail(std::string("adapter_config.json sets ") + name + " (" + config[name].dump() +
                 "), which is not served");
  if (isSetInAdapterConfig(config, "bias") || isSetInAdapterConfig(config, "lora_bias"))
    throw fail("it trains biases (adapter_config.json's bias or lora_bias), which are not served");
  if (!config.contains("lora_alpha") || !config["lora_alpha"].is_number() ||
      !config.contains("r") || !config["r"].is_number_integer())
    throw fail("adapter_config.json lacks the numbers r and lora_alpha");
  double alpha = config["lora_alpha"].get<double>();
  bool rsLora = config.value("use_rslora", false);
  std::map<std::string, double> alphaPattern;
  if (config.contains("alpha_pattern") && config["alpha_pattern"].is_object())
    for (const auto &[key, value] : config["alpha_pattern"].items()) {
      if (!isPlainAlphaPattern(key) || !value.is_number())
        throw fail("alpha_pattern's key '" + key + "' is not a module name with a number");
      alphaPattern[key] = value.get<double>();
    }

  std::ifstream probe(directory + "/adapter_model.safetensors");
  if (!probe) {
    std::ifstream pickled(directory + "/adapter_model.bin");
    throw fail(pickled ? "its weights are a pickled adapter_model.bin, which is not read: save "
                         "them with safe_serialization (adapter_model.safetensors)"
                       : "no adapter_model.safetensors");
  }
  SafetensorsFile weights = SafetensorsFile::read(directory + "/adapter_model.safetensors");

  std::unordered_map<std::string, int64_t> siteOf;
  for (size_t i = 0; i < sites.size(); ++i) siteOf.emplace(sites[i].module, int64_t(i));

  auto adapter = std::make_shared<LoraAdapter>();
  adapter->dir = directory;
  adapter->sites.resize(sites.size());
  adapter->contentHash = weights.checksum() ^ (std::hash<std::string>()(config.dump()) * 31);
  for (const auto &[key, tensor] : weights.tensors()) {
    const std::string prefix = kPeftPrefix;
    std::string name = key.rfind(prefix, 0) == 0 ? key.substr(prefix.size()) : key;
    const std::string downSuffix = ".lora_A.weight";
    if (name.size() <= downSuffix.size() ||
        name.compare(name.size() - downSuffix.size(), downSuffix.size(), downSuffix) != 0) {
      if (name.find(".lora_B.weight") != std::string::npos) continue; // with its lora_A
      throw fail("its weight '" + key + "' is not a linear layer's lora_A or lora_B (embedding "
                 "and LM head adapters, biases and other weights are not served)");
    }
    std::string module = name.substr(0, name.size() - downSuffix.size());
    auto site = siteOf.find(module);
    if (site == siteOf.end())
      throw fail("it changes '" + module + "', which the model has no LoRA site for (its sites "
                 "are the linear layers of its decoder layers, as '" + sites.front().module +
                 "')");
    std::string upKey = key.substr(0, key.size() - downSuffix.size()) + ".lora_B.weight";
    auto up = weights.tensors().find(upKey);
    if (up == weights.tensors().end()) throw fail("it has '" + key + "' but no '" + upKey + "'");
    const LoraSite &target = sites[size_t(site->second)];
    const std::vector<int64_t> &downShape = tensor.shape, &upShape = up->second.shape;
    if (downShape.size() != 2 || upShape.size() != 2 || downShape[1] != target.in ||
        upShape[0] != target.out || upShape[1] != downShape[0])
      throw fail("'" + module + "' has lora_A and lora_B shapes that do not make a [" +
                 std::to_string(target.in) + " -> " + std::to_string(target.out) +
                 "] layer's product");
    int64_t rank = downShape[0];
    if (rank < 1 || rank > maxRank)
      throw fail("'" + module + "' has rank " + std::to_string(rank) +
                 ", above max_lora_rank " + std::to_string(maxRank));
    double moduleAlpha = alpha;
    for (const auto &[pattern, value] : alphaPattern)
      if (alphaPatternNames(pattern, module)) moduleAlpha = value;
    auto scaling = static_cast<float>(rsLora ? moduleAlpha / std::sqrt(double(rank))
                                             : moduleAlpha / double(rank));

    SiteWeights &weightsOfSite = adapter->sites[size_t(site->second)];
    weightsOfSite.rank = rank;
    std::vector<float> downValues = weights.floats(key); // [rank, in]
    int64_t padded = weightsOfSite.paddedRank();
    weightsOfSite.down.assign(size_t(target.in * padded), 0.0f);
    for (int64_t k = 0; k < rank; ++k)
      for (int64_t i = 0; i < target.in; ++i)
        weightsOfSite.down[size_t(i * padded + k)] = downValues[size_t(k * target.in + i)];
    std::vector<float> upValues = weights.floats(upKey); // [out, rank]
    weightsOfSite.up.assign(size_t(rank * target.out), 0.0f);
    for (int64_t o = 0; o < target.out; ++o)
      for (int64_t k = 0; k < rank; ++k)
        weightsOfSite.up[size_t(k * target.out + o)] = scaling * upValues[size_t(o * rank + k)];
    adapter->maxRankOfSites = std::max(adapter->maxRankOfSites, rank);
  }
  if (adapter->maxRankOfSites == 0) throw fail("it changes no linear layer");
  return adapter;
}

} // namespace llmc::runtime
