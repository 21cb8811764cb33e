//===- Artifact.cpp - load and verify a model.llmc directory --------------===//
#include "runtime/core/Artifact.h"

#include "llmc/Artifact/Checksum.h"
#include "llmc/Support/AmxTileData.h"
#include "runtime/core/Error.h"

#include <nlohmann/json.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <map>
#include <utility>

namespace llmc::runtime {
namespace {
using nlohmann::json;

constexpr const char *kFormat = "llmc-artifact";
constexpr int64_t kFormatVersion = 1;
constexpr size_t kPageSize = 4096;

std::string joinPath(const std::string &directory, const std::string &name) {
  if (directory.empty() || directory.back() == '/') return directory + name;
  return directory + "/" + name;
}

/// A file mapped read-only; unmapped on destruction unless released.
class FileMapping {
public:
  explicit FileMapping(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(path + ": cannot open (missing from the artifact?)");
    struct stat info;
    if (::fstat(fd, &info) != 0) {
      ::close(fd);
      throw Error(path + ": cannot read its size");
    }
    size = static_cast<size_t>(info.st_size);
    // mmap refuses a zero length; an empty file maps to null.
    if (size > 0) {
      data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (data == MAP_FAILED) data = nullptr;
    }
    ::close(fd);
    if (size > 0 && !data) throw Error(path + ": cannot map it into memory");
  }
  ~FileMapping() {
    if (data) ::munmap(data, size);
  }
  FileMapping(const FileMapping &) = delete;
  FileMapping &operator=(const FileMapping &) = delete;

  /// Hands the mapping to the caller, who munmaps it.
  void *release() { return std::exchange(data, nullptr); }

  void *data = nullptr;
  size_t size = 0;
};

/// "parent.name", the way the errors below name a manifest field.
std::string fieldPath(const std::string &parent, const char *name) {
  return parent.empty() ? name : parent + "." + name;
}

/// Field accessors that name the field in their error ("manifest.json:
/// step.block_size must be an integer >= 1").
const json &field(const json &object, const std::string &parent, const char *name) {
  if (!object.is_object() || !object.contains(name))
    throw Error("manifest.json: " + fieldPath(parent, name) + " is missing");
  return object.at(name);
}

std::string stringField(const json &object, const std::string &parent, const char *name) {
  const json &value = field(object, parent, name);
  if (!value.is_string())
    throw Error("manifest.json: " + fieldPath(parent, name) + " must be a string");
  return value.get<std::string>();
}

int64_t integerField(const json &object, const std::string &parent, const char *name,
                     int64_t minimum) {
  const json &value = field(object, parent, name);
  if (!value.is_number_integer() || value.get<int64_t>() < minimum)
    throw Error("manifest.json: " + fieldPath(parent, name) + " must be an integer >= " +
                std::to_string(minimum));
  return value.get<int64_t>();
}

json readManifest(const std::string &directory) {
  struct stat info;
  if (::stat(directory.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    throw Error(directory + ": no such artifact directory");
  std::string path = joinPath(directory, "manifest.json");
  std::ifstream stream(path);
  if (!stream)
    throw Error(directory + ": no manifest.json (is this a directory written by llmc compile?)");
  try {
    return json::parse(stream);
  } catch (const json::parse_error &error) {
    throw Error(path + ": not valid JSON (at byte " + std::to_string(error.byte) + ")");
  }
}

/// Whether `arch` names a CUDA architecture as ptxas does: "sm_" and the
/// compute capability's digits, with an optional feature suffix ("sm_90a").
bool isCudaArch(const std::string &arch) {
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0) return false;
  size_t end = arch.size();
  if (std::islower(static_cast<unsigned char>(arch.back()))) --end;
  if (end - 3 < 2) return false;
  return std::all_of(arch.begin() + 3, arch.begin() + static_cast<long>(end),
                     [](unsigned char c) { return std::isdigit(c); });
}

/// A cuda target's architecture and storage dtype.
TargetConfig parseCudaTarget(const json &target) {
  TargetConfig config;
  config.kind = "cuda";
  config.arch = stringField(target, "target", "arch");
  if (!isCudaArch(config.arch))
    throw Error("manifest.json: target.arch '" + config.arch +
                "' is not a CUDA architecture (sm_80, sm_90, ...)");
  config.dtype = stringField(target, "target", "dtype");
  if (config.dtype != "bf16" && config.dtype != "f16")
    throw Error("manifest.json: target.dtype '" + config.dtype +
                "' is not a storage dtype this runtime runs on CUDA (bf16 or f16)");
  return config;
}

/// Refuses a manifest this runtime cannot run: another format, another layout
/// version, another step ABI or a target other than the host CPU or CUDA.
TargetConfig checkVersionsAndTarget(const json &manifest, const std::string &directory) {
  if (!manifest.is_object() || !manifest.contains("format") || manifest["format"] != kFormat)
    throw Error(directory + ": manifest.json is not an llmc artifact manifest (format is not \"" +
                kFormat + "\")");
  int64_t formatVersion = integerField(manifest, "", "format_version", 0);
  if (formatVersion != kFormatVersion)
    throw Error(directory + ": manifest format_version " + std::to_string(formatVersion) +
                " is not one this runtime reads (it reads " + std::to_string(kFormatVersion) +
                "): recompile with this llmc");
  int64_t abiVersion = integerField(manifest, "", "abi_version", 0);
  if (abiVersion != LLMC_STEP_ABI_VERSION)
    throw Error(directory + " was built for step ABI " + std::to_string(abiVersion) +
                ", this runtime speaks " + std::to_string(LLMC_STEP_ABI_VERSION) +
                ": recompile with this llmc");
  const json &target = field(manifest, "", "target");
  std::string kind = stringField(target, "target", "kind");
  if (kind == "cuda") return parseCudaTarget(target);
  if (kind != "cpu")
    throw Error(directory + " targets '" + kind +
                "'; this runtime runs cpu and cuda artifacts only");
  TargetConfig config;
  config.kind = kind;
  return config;
}

ModelConfig parseModelConfig(const json &manifest, const TargetConfig &target) {
  const json &model = field(manifest, "", "model");
  if (target.isCuda()) {
    std::string dtype = stringField(model, "model", "dtype");
    if (dtype != target.dtype)
      throw Error("manifest.json: model.dtype '" + dtype + "' is not the target's dtype '" +
                  target.dtype + "'");
  }
  ModelConfig config;
  config.vocabSize = integerField(model, "model", "vocab_size", 1);
  config.hiddenSize = integerField(model, "model", "hidden_size", 1);
  config.numLayers = integerField(model, "model", "num_layers", 1);
  config.numHeads = integerField(model, "model", "num_heads", 1);
  config.numKvHeads = integerField(model, "model", "num_kv_heads", 1);
  config.headDim = integerField(model, "model", "head_dim", 1);
  if (model.contains("max_positions"))
    config.maxPositions = integerField(model, "model", "max_positions", 0);
  if (model.contains("attention_window"))
    config.attentionWindow = integerField(model, "model", "attention_window", 0);
  if (model.contains("num_labels"))
    config.numLabels = integerField(model, "model", "num_labels", 0);
  if (model.contains("labels")) {
    const json &labels = model.at("labels");
    if (!labels.is_array() || int64_t(labels.size()) != config.numLabels ||
        !std::all_of(labels.begin(), labels.end(), [](const json &l) { return l.is_string(); }))
      throw Error("manifest.json: model.labels must be num_labels (" +
                  std::to_string(config.numLabels) + ") strings");
    for (const json &label : labels) config.labels.push_back(label.get<std::string>());
  }
  for (int64_t i = int64_t(config.labels.size()); i < config.numLabels; ++i)
    config.labels.push_back("LABEL_" + std::to_string(i));
  if (model.contains("is_matryoshka")) {
    if (!model.at("is_matryoshka").is_boolean())
      throw Error("manifest.json: model.is_matryoshka must be a boolean");
    config.isMatryoshka = model.at("is_matryoshka").get<bool>();
  }
  if (model.contains("matryoshka_dimensions")) {
    const json &widths = model.at("matryoshka_dimensions");
    if (!config.isMatryoshka || !widths.is_array())
      throw Error("manifest.json: model.matryoshka_dimensions must be a list of widths, with "
                  "is_matryoshka");
    for (const json &width : widths) {
      if (!width.is_number_integer() || width.get<int64_t>() < 1 ||
          width.get<int64_t>() > config.hiddenSize)
        throw Error("manifest.json: model.matryoshka_dimensions must be widths from 1 to "
                    "hidden_size");
      config.matryoshkaDimensions.push_back(width.get<int64_t>());
    }
  }
  return config;
}

StepConfig parseStepConfig(const json &manifest, const TargetConfig &target) {
  const json &step = field(manifest, "", "step");
  StepConfig config;
  // A cuda step is step_plan.json, not a symbol of kernels.so.
  if (!target.isCuda() || step.contains("symbol"))
    config.symbol = stringField(step, "step", "symbol");
  config.maxNumBatchedTokens = integerField(step, "step", "max_num_batched_tokens", 1);
  config.maxNumSeqs = integerField(step, "step", "max_num_seqs", 1);
  config.workspaceBytes = integerField(step, "step", "workspace_bytes", 0);
  config.blockSize = integerField(step, "step", "block_size", 1);
  // Artifacts written before the field cached a key row and a value row.
  if (step.contains("kv_rows")) {
    config.kvRows = integerField(step, "step", "kv_rows", 1);
    if (config.kvRows > 2)
      throw Error("manifest.json: step.kv_rows must be 1 (keys holding the values) or 2 (keys "
                  "and values), not " + std::to_string(config.kvRows));
    if (target.isCuda() && config.kvRows != 2)
      throw Error("manifest.json: step.kv_rows is " + std::to_string(config.kvRows) +
                  "; the CUDA runtime caches a key row and a value row (2)");
  }
  // Artifacts written before the field, or without bf16 activations, use
  // no AMX tiles.
  if (step.contains("bf16_products")) {
    std::string products = stringField(step, "step", "bf16_products");
    if (products != "avx512-bf16" && products != "amx")
      throw Error("manifest.json: step.bf16_products '" + products +
                  "' is not one this runtime runs (avx512-bf16 or amx)");
    config.amxTiles = products == "amx";
  }
  // Artifacts written before the field return logits.
  if (step.contains("output")) {
    std::string output = stringField(step, "step", "output");
    if (output != "logits" && output != "hidden_states" && output != "class_logits")
      throw Error("manifest.json: step.output '" + output +
                  "' is not one this runtime serves (logits, hidden_states or class_logits)");
    if (target.isCuda() && output != "logits")
      throw Error("manifest.json: step.output is '" + output +
                  "'; the CUDA runtime serves logits only");
    config.output = output == "hidden_states"  ? StepOutputKind::HiddenStates
                    : output == "class_logits" ? StepOutputKind::ClassLogits
                                               : StepOutputKind::Logits;
  }
  // The runtime allocates the KV pool, so it must know its element type.
  std::string kvDtype = stringField(step, "step", "kv_dtype");
  if (target.isCuda()) {
    if (kvDtype != target.dtype)
      throw Error("manifest.json: step.kv_dtype '" + kvDtype + "' is not the target's dtype '" +
                  target.dtype + "'");
  } else if (kvDtype != "f32" && kvDtype != "bf16" && kvDtype != "int8")
    throw Error("manifest.json: step.kv_dtype '" + kvDtype +
                "' is not supported by this runtime (f32, bf16 or int8)");
  config.kvDtype = kvDtype;
  return config;
}

/// step.kv_groups: each group's window and layers, every model layer in
/// exactly one group; none when the field is absent (one group).
std::vector<KvGroupConfig> parseKvGroups(const json &manifest, const ModelConfig &model,
                                         const TargetConfig &target) {
  const json &step = field(manifest, "", "step");
  std::vector<KvGroupConfig> groups;
  if (!step.contains("kv_groups")) return groups;
  const json &entries = step.at("kv_groups");
  if (!entries.is_array() || entries.empty())
    throw Error("manifest.json: step.kv_groups must be a non-empty array");
  if (target.isCuda())
    throw Error("manifest.json: step.kv_groups is for the CPU runtime; the CUDA runtime keeps "
                "one block table for every layer");
  std::vector<int> seen(static_cast<size_t>(model.numLayers), 0);
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string where = "step.kv_groups[" + std::to_string(i) + "]";
    KvGroupConfig group;
    group.window = integerField(entries[i], where, "window", 0);
    const json &layers = field(entries[i], where, "layers");
    if (!layers.is_array() || layers.empty())
      throw Error("manifest.json: " + where + ".layers must be a non-empty array");
    for (const json &layer : layers) {
      if (!layer.is_number_integer() || layer.get<int64_t>() < 0 ||
          layer.get<int64_t>() >= model.numLayers || seen[layer.get<size_t>()]++)
        throw Error("manifest.json: " + where + ".layers must name each layer from 0 to " +
                    std::to_string(model.numLayers - 1) + " once over all groups");
      group.layers.push_back(layer.get<int64_t>());
    }
    groups.push_back(std::move(group));
  }
  if (std::count(seen.begin(), seen.end(), 0))
    throw Error("manifest.json: step.kv_groups leaves out a layer of the model's " +
                std::to_string(model.numLayers));
  return groups;
}

/// step.lora_sites: each site's module path and features; none when the
/// field is absent (no adapter served).
std::vector<LoraSite> parseLoraSites(const json &manifest, const TargetConfig &target) {
  const json &step = field(manifest, "", "step");
  std::vector<LoraSite> sites;
  if (!step.contains("lora_sites")) return sites;
  const json &entries = step.at("lora_sites");
  if (!entries.is_array() || entries.empty())
    throw Error("manifest.json: step.lora_sites must be a non-empty array");
  if (target.isCuda())
    throw Error("manifest.json: step.lora_sites is for the CPU runtime; the CUDA runtime "
                "serves no LoRA adapter");
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string where = "step.lora_sites[" + std::to_string(i) + "]";
    const json &module = field(entries[i], where, "module");
    if (!module.is_string() || module.get<std::string>().empty())
      throw Error("manifest.json: " + where + ".module must be a module path");
    LoraSite site{module.get<std::string>(), integerField(entries[i], where, "in", 1),
                  integerField(entries[i], where, "out", 1)};
    sites.push_back(std::move(site));
  }
  return sites;
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

/// Maps the file an index entry ({"file", "size", "checksum"}) names and
/// checks its size and checksum against the entry.
std::unique_ptr<FileMapping> mapVerified(const std::string &directory, const json &entry,
                                         const std::string &entryName) {
  std::string path = joinPath(directory, stringField(entry, entryName, "file"));
  int64_t expectedSize = integerField(entry, entryName, "size", 0);
  std::string expectedChecksum = lowercase(stringField(entry, entryName, "checksum"));
  auto mapping = std::make_unique<FileMapping>(path);
  if (mapping->size != static_cast<size_t>(expectedSize))
    throw Error(path + " is " + std::to_string(mapping->size) + " bytes, manifest.json says " +
                std::to_string(expectedSize) + ": the file is truncated or altered");
  std::string actualChecksum = checksumHex(checksum64(mapping->data, mapping->size));
  if (actualChecksum != expectedChecksum)
    throw Error(path + " has checksum " + actualChecksum + ", manifest.json says " +
                expectedChecksum + ": the file is altered or corrupt");
  return mapping;
}

/// Checks the tensor index: every tensor lies inside weights.bin at an offset
/// that is a multiple of the stated alignment.
void checkWeightIndex(const json &weights, size_t weightsSize) {
  int64_t alignment = integerField(weights, "weights", "alignment", 1);
  if ((alignment & (alignment - 1)) != 0 || static_cast<size_t>(alignment) > kPageSize)
    throw Error("manifest.json: weights.alignment must be a power of two no larger than " +
                std::to_string(kPageSize));
  const json &tensors = field(weights, "weights", "tensors");
  if (!tensors.is_array()) throw Error("manifest.json: weights.tensors must be a list");
  for (const json &tensor : tensors) {
    std::string name = stringField(tensor, "weights.tensors[]", "name");
    std::string where = "weights.tensors[" + name + "]";
    int64_t offset = integerField(tensor, where, "offset", 0);
    int64_t nbytes = integerField(tensor, where, "nbytes", 0);
    if (offset % alignment != 0)
      throw Error("manifest.json: tensor " + name + " sits at offset " + std::to_string(offset) +
                  ", not a multiple of the alignment " + std::to_string(alignment));
    if (static_cast<uint64_t>(offset) + static_cast<uint64_t>(nbytes) > weightsSize)
      throw Error("manifest.json: tensor " + name + " ends past the end of weights.bin");
  }
}

/// Reads the kernels files of a cuda artifact, each verified, by name;
/// refuses a file that is not one and a list without step_plan.json.
std::map<std::string, std::string> readCudaKernels(const std::string &directory,
                                                   const json &kernels) {
  static const char *const kCudaFiles[] = {"kernels.ptx",     "kernels.cubin",  "attention.cu",
                                           "attention.ptx",   "attention.cubin", "step_plan.json"};
  std::map<std::string, std::string> files;
  for (const json &entry : kernels) {
    std::string file = stringField(entry, "kernels[]", "file");
    if (std::find(std::begin(kCudaFiles), std::end(kCudaFiles), file) == std::end(kCudaFiles))
      throw Error("manifest.json: kernels lists " + file +
                  ", which is not a file of a cuda artifact (kernels.ptx, kernels.cubin, "
                  "attention.cu, attention.ptx, attention.cubin, step_plan.json)");
    if (files.count(file)) throw Error("manifest.json: kernels lists " + file + " twice");
    auto mapping = mapVerified(directory, entry, "kernels[]");
    // An empty file maps to null, which std::string must not be given.
    files[file] = mapping->size ? std::string(static_cast<const char *>(mapping->data),
                                              mapping->size)
                                : std::string();
  }
  if (!files.count("step_plan.json"))
    throw Error("manifest.json: kernels lists no step_plan.json for target cuda");
  return files;
}

/// The tokenizer files the manifest lists, verified ("" for each one absent).
struct TokenizerFiles {
  std::string tokenizerJson, tokenizerConfigJson, chatTemplateJinja;
};

TokenizerFiles readTokenizerFiles(const json &manifest, const std::string &directory) {
  // Optional: the tokenizer copied from the model's directory.
  TokenizerFiles found;
  if (!manifest.contains("tokenizer")) return found;
  const json &files = field(field(manifest, "", "tokenizer"), "tokenizer", "files");
  if (!files.is_array()) throw Error("manifest.json: tokenizer.files must be a list");
  for (const json &entry : files) {
    mapVerified(directory, entry, "tokenizer.files[]");
    std::string file = stringField(entry, "tokenizer.files[]", "file");
    if (file == "tokenizer.json") found.tokenizerJson = joinPath(directory, file);
    if (file == "tokenizer_config.json") found.tokenizerConfigJson = joinPath(directory, file);
    if (file == "chat_template.jinja") found.chatTemplateJinja = joinPath(directory, file);
  }
  return found;
}

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}
} // namespace

std::unique_ptr<Artifact> Artifact::load(const std::string &directory) {
  json manifest = readManifest(directory);
  TargetConfig target = checkVersionsAndTarget(manifest, directory);

  std::unique_ptr<Artifact> artifact(new Artifact());
  artifact->dir = directory;
  artifact->targetConfig = target;
  artifact->modelConfig = parseModelConfig(manifest, target);
  artifact->stepConfig = parseStepConfig(manifest, target);
  if (artifact->stepConfig.output == StepOutputKind::ClassLogits &&
      artifact->modelConfig.numLabels < 1)
    throw Error("manifest.json: step.output is 'class_logits' but model.num_labels is not a "
                "positive count of labels");
  artifact->stepConfig.kvGroups = parseKvGroups(manifest, artifact->modelConfig, target);
  artifact->stepConfig.loraSites = parseLoraSites(manifest, target);

  const json &weights = field(manifest, "", "weights");
  auto weightsMapping = mapVerified(directory, weights, "weights");
  checkWeightIndex(weights, weightsMapping->size);
  artifact->weightsSize = weightsMapping->size;
  artifact->weightsData = weightsMapping->release();

  auto adoptTokenizerFiles = [&] {
    TokenizerFiles tokenizer = readTokenizerFiles(manifest, directory);
    artifact->tokenizerJson = tokenizer.tokenizerJson;
    artifact->tokenizerConfigJson = tokenizer.tokenizerConfigJson;
    artifact->chatTemplateJinja = tokenizer.chatTemplateJinja;
  };
  const json &kernels = field(manifest, "", "kernels");
  if (!kernels.is_array()) throw Error("manifest.json: kernels must be a list");
  if (target.isCuda()) {
    artifact->cudaFiles = readCudaKernels(directory, kernels);
    adoptTokenizerFiles();
    return artifact;
  }
  std::string libraryPath;
  for (const json &entry : kernels) {
    mapVerified(directory, entry, "kernels[]");
    std::string file = stringField(entry, "kernels[]", "file");
    if (!endsWith(file, ".so")) continue;
    if (!libraryPath.empty())
      throw Error("manifest.json: kernels lists more than one shared object for target cpu");
    libraryPath = joinPath(directory, file);
  }
  if (libraryPath.empty())
    throw Error("manifest.json: kernels lists no shared object (kernels.so) for target cpu");

  adoptTokenizerFiles();

  if (artifact->stepConfig.amxTiles) {
    std::string refused = requestAmxTileData();
    if (!refused.empty())
      throw Error(directory + ": its kernels multiply with AMX tiles, but " + refused +
                  ": recompile with --bf16-products=avx512-bf16");
  }
  // A path with a '/' makes dlopen take it as a file, not search for it.
  if (libraryPath.find('/') == std::string::npos) libraryPath = "./" + libraryPath;
  artifact->kernelsLibrary = ::dlopen(libraryPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!artifact->kernelsLibrary)
    throw Error(libraryPath + ": cannot load it: " + std::string(::dlerror()));
  artifact->stepFn = reinterpret_cast<LlmcStepFn>(
      ::dlsym(artifact->kernelsLibrary, artifact->stepConfig.symbol.c_str()));
  if (!artifact->stepFn)
    throw Error(libraryPath + " does not export the step function " + artifact->stepConfig.symbol);
  return artifact;
}

Artifact::~Artifact() {
  if (kernelsLibrary) ::dlclose(kernelsLibrary);
  if (weightsData) ::munmap(weightsData, weightsSize);
}

} // namespace llmc::runtime
