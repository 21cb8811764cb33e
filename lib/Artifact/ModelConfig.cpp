//===- ModelConfig.cpp - what the exporter's config says ------------------===//
#include "llmc/Artifact/ModelConfig.h"

#include "llmc/Artifact/StepInfo.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <utility>

using namespace mlir;

namespace llmc {

namespace {

/// The parsed JSON file `name` beside `modelPath`, or null when there is none.
llvm::Expected<std::optional<llvm::json::Value>> readBeside(llvm::StringRef modelPath,
                                                            llvm::StringRef name) {
  llvm::SmallString<256> path = llvm::sys::path::parent_path(modelPath);
  llvm::sys::path::append(path, name);
  if (!llvm::sys::fs::exists(path)) return std::nullopt;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "cannot read %s", path.c_str());
  auto parsed = llvm::json::parse((*buffer)->getBuffer());
  if (!parsed)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s is not JSON: %s",
                                   path.c_str(), llvm::toString(parsed.takeError()).c_str());
  return std::optional<llvm::json::Value>(std::move(*parsed));
}

/// `value` as a positive length (nullopt when absent), or an error naming where it came from.
llvm::Expected<std::optional<int64_t>> positiveLength(const llvm::json::Value *value,
                                                      llvm::StringRef where) {
  if (!value) return std::nullopt;
  std::optional<int64_t> length = value->getAsInteger();
  if (!length || *length <= 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s is not a positive integer", where.str().c_str());
  return length;
}

/// The type of one rope scaling entry (transformers 4.36's `type`, later
/// `rope_type`).
std::optional<llvm::StringRef> ropeType(const llvm::json::Object &scaling) {
  std::optional<llvm::StringRef> type = scaling.getString("rope_type");
  return type ? type : scaling.getString("type");
}

bool isLongRope(const llvm::json::Object &scaling) {
  std::optional<llvm::StringRef> type = ropeType(scaling);
  return type && llvm::is_contained({"longrope", "su"}, *type);
}

/// The length past which one rope scaling entry switches LongRoPE to its
/// long factors (none for the other types), or an error when it is of a type
/// the compiled model would not compute. Linear, Llama-3 and YaRN scaling
/// change the frequencies, which the export holds as constants (YaRN also
/// scales cos and sin, which raising takes as llm.rope's scale); dynamic NTK
/// scaling changes them only past max_position_embeddings, which bounds
/// max_positions. LongRoPE switches at original_max_position_embeddings.
llvm::Expected<std::optional<int64_t>> longRopeSwitch(llvm::StringRef key,
                                                        const llvm::json::Object &scaling,
                                                        const llvm::json::Object &config) {
  std::optional<llvm::StringRef> type = ropeType(scaling);
  if (!type || llvm::is_contained({"default", "linear", "dynamic", "llama3", "yarn"}, *type))
    return std::nullopt;
  if (isLongRope(scaling)) {
    const llvm::json::Value *original = scaling.get("original_max_position_embeddings");
    if (!original) original = config.get("original_max_position_embeddings");
    if (!original)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "config.json's %s '%s' has no "
                                     "original_max_position_embeddings",
                                     key.str().c_str(), type->str().c_str());
    return positiveLength(original, "config.json's original_max_position_embeddings");
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "config.json's %s '%s' is not supported", key.str().c_str(),
                                 type->str().c_str());
}

/// The rope scaling entries of `config` and the key they are under:
/// transformers 4's `rope_scaling`, or transformers 5's `rope_parameters`,
/// one entry or one per layer type (Gemma-3's full_attention and
/// sliding_attention).
std::pair<llvm::StringRef, llvm::SmallVector<const llvm::json::Object *>>
ropeScalings(const llvm::json::Object &config) {
  if (const llvm::json::Object *scaling = config.getObject("rope_scaling"))
    return {"rope_scaling", {scaling}};
  const llvm::json::Object *parameters = config.getObject("rope_parameters");
  if (!parameters) return {};
  if (parameters->get("rope_type") || parameters->get("type"))
    return {"rope_parameters", {parameters}};
  llvm::SmallVector<const llvm::json::Object *> perLayerType;
  for (const auto &[layerType, entry] : *parameters)
    if (const llvm::json::Object *scaling = entry.getAsObject()) perLayerType.push_back(scaling);
  return {"rope_parameters", perLayerType};
}

/// LongRoPE's switch length in `config` (the smallest, over the layer
/// types), none without LongRoPE; an error for a type not computed.
llvm::Expected<std::optional<int64_t>> longRopeSwitch(const llvm::json::Object &config) {
  std::optional<int64_t> length;
  auto [key, scalings] = ropeScalings(config);
  for (const llvm::json::Object *scaling : scalings) {
    auto entryLength = longRopeSwitch(key, *scaling, config);
    if (!entryLength) return entryLength.takeError();
    if (*entryLength) length = length ? std::min(*length, **entryLength) : **entryLength;
  }
  return length;
}

/// `value` as a list of positive numbers; none when it is not one.
std::optional<std::vector<double>> positiveNumbers(const llvm::json::Value *value) {
  const llvm::json::Array *array = value ? value->getAsArray() : nullptr;
  if (!array || array->empty()) return std::nullopt;
  std::vector<double> numbers;
  for (const llvm::json::Value &element : *array) {
    std::optional<double> number = element.getAsNumber();
    if (!number || !(*number > 0)) return std::nullopt;
    numbers.push_back(*number);
  }
  return numbers;
}

/// LongRoPE's short and long factors in `config`, when every LongRoPE entry
/// holds the same two lists, of one length, and scales the attention alike on
/// both sides (transformers' LongRoPE takes one attention factor for both;
/// Phi-3-small's short_mscale and long_mscale would differ); none otherwise.
std::optional<std::pair<std::vector<double>, std::vector<double>>>
longRopeFactors(const llvm::json::Object &config) {
  std::optional<std::pair<std::vector<double>, std::vector<double>>> found;
  for (const llvm::json::Object *scaling : ropeScalings(config).second) {
    if (!isLongRope(*scaling)) continue;
    std::optional<std::vector<double>> shortFactors =
        positiveNumbers(scaling->get("short_factor"));
    std::optional<std::vector<double>> longFactors = positiveNumbers(scaling->get("long_factor"));
    if (!shortFactors || !longFactors || shortFactors->size() != longFactors->size())
      return std::nullopt;
    std::optional<double> shortScale = scaling->getNumber("short_mscale");
    std::optional<double> longScale = scaling->getNumber("long_mscale");
    if (shortScale.value_or(1.0) != longScale.value_or(1.0)) return std::nullopt;
    if (found && (found->first != *shortFactors || found->second != *longFactors))
      return std::nullopt;
    found.emplace(std::move(*shortFactors), std::move(*longFactors));
  }
  return found;
}

/// config.json's id2label ({"0": "name", ...}) as names by index; empty
/// when it is absent or not one name for each index from 0.
std::vector<std::string> labelNames(const llvm::json::Object &config) {
  const llvm::json::Object *byId = config.getObject("id2label");
  if (!byId) return {};
  std::vector<std::string> names(byId->size());
  for (const auto &[id, name] : *byId) {
    unsigned index;
    auto text = name.getAsString();
    if (llvm::StringRef(id).getAsInteger(10, index) || index >= names.size() || !text)
      return {};
    names[index] = text->str();
  }
  return names;
}

} // namespace

llvm::Expected<ExporterConfig> readExporterConfig(llvm::StringRef modelPath) {
  ExporterConfig found;
  auto config = readBeside(modelPath, "config.json");
  if (!config) return config.takeError();
  if (*config) {
    const llvm::json::Object *object = (*config)->getAsObject();
    if (!object)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "config.json is not a JSON object");
    auto switchLength = longRopeSwitch(*object);
    if (!switchLength) return switchLength.takeError();
    found.longRopeSwitch = *switchLength;
    if (auto factors = longRopeFactors(*object)) {
      found.longRopeShortFactors = std::move(factors->first);
      found.longRopeLongFactors = std::move(factors->second);
    }
    found.labels = labelNames(*object);
    if (const llvm::json::Value *widths = object->get("matryoshka_dimensions");
        widths && widths->kind() != llvm::json::Value::Null) {
      const llvm::json::Array *list = widths->getAsArray();
      if (!list || list->empty())
        return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                       "config.json's matryoshka_dimensions is not a list of "
                                       "positive widths");
      std::vector<int64_t> dimensions;
      for (const llvm::json::Value &width : *list) {
        auto value = positiveLength(&width, "a width of config.json's matryoshka_dimensions");
        if (!value) return value.takeError();
        dimensions.push_back(**value);
      }
      found.matryoshkaDimensions = std::move(dimensions);
    } else if (object->getBoolean("is_matryoshka").value_or(false)) {
      found.matryoshkaDimensions = std::vector<int64_t>();
    }
    for (llvm::StringRef field : {"max_position_embeddings", "n_positions"})
      if (const llvm::json::Value *value = object->get(field)) {
        auto length = positiveLength(value, ("config.json's " + field).str());
        if (!length) return length.takeError();
        found.maxPositionEmbeddings = *length;
        return found;
      }
  }
  auto genai = readBeside(modelPath, "genai_config.json");
  if (!genai) return genai.takeError();
  if (!*genai) return found;
  const llvm::json::Object *object = (*genai)->getAsObject();
  const llvm::json::Object *model = object ? object->getObject("model") : nullptr;
  auto length = positiveLength(model ? model->get("context_length") : nullptr,
                               "genai_config.json's model.context_length");
  if (!length) return length.takeError();
  found.maxPositionEmbeddings = *length;
  return found;
}

llvm::Expected<std::vector<int64_t>> parseMatryoshkaDimensions(llvm::StringRef text) {
  std::vector<int64_t> widths;
  if (text == "any") return widths;
  llvm::SmallVector<llvm::StringRef> parts;
  text.split(parts, ',');
  for (llvm::StringRef part : parts) {
    int64_t width;
    if (part.trim().getAsInteger(10, width) || width <= 0)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "'%s' is neither 'any' nor positive widths such as "
                                     "64,128,256",
                                     text.str().c_str());
    widths.push_back(width);
  }
  return widths;
}

llvm::Expected<std::vector<int64_t>> readTokenIds(llvm::StringRef modelPath,
                                                  llvm::ArrayRef<std::string> tokens) {
  auto document = readBeside(modelPath, "tokenizer.json");
  if (!document) return document.takeError();
  const llvm::json::Object *root = *document ? (*document)->getAsObject() : nullptr;
  if (!root)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "no tokenizer.json beside the model to find tokens in");
  const llvm::json::Object *model = root->getObject("model");
  const llvm::json::Object *vocab = model ? model->getObject("vocab") : nullptr;
  const llvm::json::Array *added = root->getArray("added_tokens");
  std::vector<int64_t> ids;
  for (const std::string &token : tokens) {
    std::optional<int64_t> id;
    if (added)
      for (const llvm::json::Value &entry : *added) {
        const llvm::json::Object *object = entry.getAsObject();
        if (object && object->getString("content") == token) id = object->getInteger("id");
      }
    if (!id && vocab)
      if (const llvm::json::Value *value = vocab->get(token)) id = value->getAsInteger();
    if (!id)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "the tokenizer has no token '%s'", token.c_str());
    ids.push_back(*id);
  }
  return ids;
}

LogicalResult applyExporterConfig(ModuleOp module, const ExporterConfig &config) {
  FailureOr<StepInfo> info = getStepInfo(module);
  if (failed(info)) return failure();
  if (info->numLabels && int64_t(config.labels.size()) == info->numLabels) {
    Builder b(module.getContext());
    SmallVector<Attribute> names;
    for (const std::string &name : config.labels) names.push_back(b.getStringAttr(name));
    module->setAttr(kLabelsAttr, b.getArrayAttr(names));
  }
  auto output = module->getAttrOfType<StringAttr>(kStepOutputAttr);
  if (config.matryoshkaDimensions && output && output.getValue() == kHiddenStatesOutput) {
    for (int64_t width : *config.matryoshkaDimensions)
      if (width > info->hiddenSize)
        return module.emitError("a Matryoshka width of ")
               << width << " is more than the embedding's " << info->hiddenSize << " features";
    module->setAttr(kMatryoshkaAttr,
                    Builder(module.getContext()).getI64ArrayAttr(*config.matryoshkaDimensions));
  }
  if (!config.maxPositionEmbeddings) return success();
  int64_t length = *config.maxPositionEmbeddings;
  info->maxPositions = info->maxPositions ? std::min(info->maxPositions, length) : length;
  setStepInfo(module, *info);
  return success();
}

} // namespace llmc
