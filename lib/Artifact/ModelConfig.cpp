//===- ModelConfig.cpp - what the exporter's config says ------------------===//
#include "llmc/Artifact/ModelConfig.h"

#include "llmc/Artifact/StepInfo.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>

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

/// The positions config.json's rope_scaling lets the export be run at (none:
/// max_position_embeddings), or an error when it is of a type the compiled
/// model would not compute. Linear, Llama-3 and YaRN scaling change the
/// frequencies, which the export holds as constants (YaRN also scales cos and
/// sin, which raising takes as llm.rope's scale); dynamic NTK scaling changes
/// them only past max_position_embeddings, which bounds max_positions.
/// LongRoPE switches from its short factors to its long ones past
/// original_max_position_embeddings, a switch the export traced one side of
/// (the short, for its short inputs): the model is run up to that length.
llvm::Expected<std::optional<int64_t>> ropeScalingLimit(const llvm::json::Object &config) {
  const llvm::json::Object *scaling = config.getObject("rope_scaling");
  if (!scaling) return std::nullopt;
  std::optional<llvm::StringRef> type = scaling->getString("rope_type");
  if (!type) type = scaling->getString("type");
  if (!type || llvm::is_contained({"default", "linear", "dynamic", "llama3", "yarn"}, *type))
    return std::nullopt;
  if (llvm::is_contained({"longrope", "su"}, *type)) {
    const llvm::json::Value *original = scaling->get("original_max_position_embeddings");
    if (!original) original = config.get("original_max_position_embeddings");
    if (!original)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "config.json's rope_scaling '%s' has no "
                                     "original_max_position_embeddings",
                                     type->str().c_str());
    return positiveLength(original, "config.json's original_max_position_embeddings");
  }
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "config.json's rope_scaling '%s' is not supported",
                                 type->str().c_str());
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
    auto ropeLimit = ropeScalingLimit(*object);
    if (!ropeLimit) return ropeLimit.takeError();
    for (llvm::StringRef field : {"max_position_embeddings", "n_positions"})
      if (const llvm::json::Value *value = object->get(field)) {
        auto length = positiveLength(value, ("config.json's " + field).str());
        if (!length) return length.takeError();
        found.maxPositionEmbeddings = *length;
        if (*ropeLimit) found.maxPositionEmbeddings = std::min(**length, **ropeLimit);
        return found;
      }
    if (*ropeLimit) {
      found.maxPositionEmbeddings = *ropeLimit;
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

LogicalResult applyExporterConfig(ModuleOp module, const ExporterConfig &config) {
  if (!config.maxPositionEmbeddings) return success();
  FailureOr<StepInfo> info = getStepInfo(module);
  if (failed(info)) return failure();
  int64_t length = *config.maxPositionEmbeddings;
  info->maxPositions = info->maxPositions ? std::min(info->maxPositions, length) : length;
  setStepInfo(module, *info);
  return success();
}

} // namespace llmc
