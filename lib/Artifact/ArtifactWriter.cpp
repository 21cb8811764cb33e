//===- ArtifactWriter.cpp - write model.llmc/ -----------------------------===//
#include "llmc/Artifact/ArtifactWriter.h"

#include "llmc/Artifact/Checksum.h"
#include "llmc/Artifact/ModelConfig.h"
#include "llmc/Artifact/StepInfo.h"
#include "llmc/Runtime/StepABI.h"
#include "llmc/Runtime/StepPlanSchema.h"
#include "llmc/Support/ElementsData.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <vector>

using namespace mlir;

namespace llmc {

namespace {

constexpr int64_t kFormatVersion = 1;
constexpr int64_t kWeightAlignment = 64;
/// The tokenizer files an artifact carries when the model's directory has them
/// (newer transformers write the chat template to chat_template.jinja, and the
/// ids generation ends at to generation_config.json).
constexpr llvm::StringLiteral kTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json",
                                                   "chat_template.jinja",
                                                   "generation_config.json"};
/// The module attribute copyTokenizerFiles leaves for the manifest.
constexpr llvm::StringLiteral kTokenizerAttr = "llmc.tokenizer_files";

/// An integer attribute a target lowering must have set on `module`.
FailureOr<int64_t> requiredInteger(ModuleOp module, StringRef name) {
  auto attr = module->getAttrOfType<IntegerAttr>(name);
  if (!attr) return module.emitError("has no ") << name << ": not a module the lowering made", failure();
  return attr.getInt();
}

/// A file's size and manifest checksum.
using SizeAndChecksum = std::pair<uint64_t, std::string>;

SizeAndChecksum sizeAndChecksum(StringRef data) {
  return {static_cast<uint64_t>(data.size()), checksumHex(checksum64(data.data(), data.size()))};
}

/// Reads back a file another program produced (the linked kernels.so).
FailureOr<SizeAndChecksum> readSizeAndChecksum(ModuleOp module, StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) return module.emitError("cannot read back ") << path, failure();
  return sizeAndChecksum((*buffer)->getBuffer());
}

/// `value` rounded to bf16 (to nearest, ties to even; NaN stays NaN).
uint16_t toBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1)) >> 16);
}

/// `value` rounded to IEEE half (to nearest, ties to even; overflow to inf).
uint16_t toF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t sign = (bits >> 16) & 0x8000u, magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u); // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // inf, or rounds to it
  if (magnitude < 0x38800000u) { // a subnormal half (or zero)
    float scaled;
    std::memcpy(&scaled, &magnitude, 4);
    // 2^24 scales the smallest subnormal to 1; nearbyint rounds ties to even.
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled * 16777216.0f)));
  }
  uint32_t rebased = magnitude - 0x38000000u; // exponent bias 127 -> 15
  uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1);
  return static_cast<uint16_t>(sign | (rounded >> 13));
}

/// The bytes of `value` stored as `dtype` (f32, u8 (the CPU's packed
/// quantised codes) and i32 (indices) as they are; bf16 or f16 rounded from
/// f32).
FailureOr<ArrayRef<char>> storedBytes(ElementsAttr value, StringRef dtype,
                                      std::vector<char> &storage) {
  auto bytes = elementsBytes(value, storage);
  if (failed(bytes) || dtype == "f32" || dtype == "u8" || dtype == "i32") return bytes;
  const auto *floats = reinterpret_cast<const float *>(bytes->data());
  size_t count = bytes->size() / 4;
  std::vector<char> narrowed(count * 2);
  auto *halves = reinterpret_cast<uint16_t *>(narrowed.data());
  bool bf16 = dtype == "bf16";
  for (size_t i = 0; i < count; ++i) halves[i] = bf16 ? toBf16(floats[i]) : toF16(floats[i]);
  storage = std::move(narrowed);
  return ArrayRef<char>(storage);
}

/// weights.bin: every weight at its offset, zeros between, in its `dtype`
/// (f32 where the entry names none). Returns its size and checksum, taken
/// from the buffer it writes.
FailureOr<SizeAndChecksum> writeWeights(ModuleOp module, StringRef path,
                                        llvm::json::Array &index) {
  auto weights = module->getAttrOfType<ArrayAttr>("llmc.weights");
  auto total = module->getAttrOfType<IntegerAttr>("llmc.weights_bytes");
  if (!weights || !total)
    return module.emitError("has no weight layout (llmc.weights)"), failure();
  std::vector<char> file(llvm::alignTo(total.getInt(), kWeightAlignment), 0);
  for (Attribute entry : weights) {
    auto dict = cast<DictionaryAttr>(entry);
    auto value = cast<ElementsAttr>(dict.get("value"));
    int64_t offset = cast<IntegerAttr>(dict.get("offset")).getInt();
    auto dtypeAttr = dict.getAs<StringAttr>("dtype");
    StringRef dtype = dtypeAttr ? dtypeAttr.getValue() : "f32";
    std::vector<char> storage;
    auto bytes = storedBytes(value, dtype, storage);
    if (failed(bytes) || offset + static_cast<int64_t>(bytes->size()) > static_cast<int64_t>(file.size()))
      return module.emitError("weight ") << dict.get("name") << " has no data to write", failure();
    std::copy(bytes->begin(), bytes->end(), file.begin() + offset);
    llvm::json::Array shape;
    for (int64_t dim : cast<ShapedType>(value.getType()).getShape()) shape.push_back(dim);
    index.push_back(llvm::json::Object{{"name", cast<StringAttr>(dict.get("name")).getValue()},
                                       {"dtype", dtype},
                                       {"shape", std::move(shape)},
                                       {"offset", offset},
                                       {"nbytes", static_cast<int64_t>(bytes->size())}});
  }
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) return module.emitError("cannot write ") << path << ": " << ec.message(), failure();
  out.write(file.data(), file.size());
  out.close();
  if (out.has_error()) return module.emitError("writing ") << path << " failed", failure();
  return sizeAndChecksum(StringRef(file.data(), file.size()));
}

std::string joinPath(StringRef directory, StringRef file) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, file);
  return std::string(path);
}

} // namespace

LogicalResult copyTokenizerFiles(ModuleOp module, StringRef modelPath, StringRef directory) {
  StringRef modelDirectory = llvm::sys::path::parent_path(modelPath);
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return module.emitError("cannot create ") << directory << ": " << ec.message();
  // A manifest left by an earlier compile would describe files being replaced.
  llvm::sys::fs::remove(joinPath(directory, "manifest.json"));
  Builder builder(module.getContext());
  SmallVector<Attribute> copied;
  for (StringRef file : kTokenizerFiles) {
    std::string source = joinPath(modelDirectory.empty() ? "." : modelDirectory, file);
    std::string target = joinPath(directory, file);
    if (!llvm::sys::fs::exists(source)) {
      llvm::sys::fs::remove(target);
      continue;
    }
    auto buffer = llvm::MemoryBuffer::getFile(source, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) return module.emitError("cannot read ") << source;
    std::error_code ec;
    llvm::raw_fd_ostream out(target, ec, llvm::sys::fs::OF_None);
    if (ec) return module.emitError("cannot write ") << target << ": " << ec.message();
    out << (*buffer)->getBuffer();
    out.close();
    if (out.has_error()) return module.emitError("writing ") << target << " failed";
    SizeAndChecksum written = sizeAndChecksum((*buffer)->getBuffer());
    copied.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr("file", builder.getStringAttr(file)),
         builder.getNamedAttr("size",
                              builder.getI64IntegerAttr(static_cast<int64_t>(written.first))),
         builder.getNamedAttr("checksum", builder.getStringAttr(written.second))}));
  }
  module->setAttr(kTokenizerAttr, builder.getArrayAttr(copied));
  return success();
}

namespace {

/// The tokenizer files copyTokenizerFiles recorded, for the manifest.
llvm::json::Array takeTokenizerFiles(ModuleOp module) {
  llvm::json::Array files;
  if (auto copied = module->getAttrOfType<ArrayAttr>(kTokenizerAttr)) {
    for (Attribute entry : copied) {
      auto dict = cast<DictionaryAttr>(entry);
      files.push_back(llvm::json::Object{{"file", cast<StringAttr>(dict.get("file")).getValue()},
                                         {"size", cast<IntegerAttr>(dict.get("size")).getInt()},
                                         {"checksum", cast<StringAttr>(dict.get("checksum")).getValue()}});
    }
    module->removeAttr(kTokenizerAttr);
  }
  return files;
}

/// The manifest's "model" entry: the model's shape and how weights are stored.
llvm::json::Object modelEntry(ModuleOp module, const StepInfo &info, StringRef dtype) {
  llvm::json::Object model{{"dtype", dtype}};
  for (const auto &[name, field] : kStepInfoModelFields) model[name] = info.*field;
  if (auto names = module->getAttrOfType<ArrayAttr>(kLabelsAttr)) {
    llvm::json::Array labels;
    for (auto name : names.getAsRange<StringAttr>()) labels.push_back(name.str());
    model["labels"] = std::move(labels);
  }
  if (auto widths = module->getAttrOfType<ArrayAttr>(kMatryoshkaAttr)) {
    model["is_matryoshka"] = true;
    llvm::json::Array dimensions;
    for (auto width : widths.getAsRange<IntegerAttr>()) dimensions.push_back(width.getInt());
    if (!dimensions.empty()) model["matryoshka_dimensions"] = std::move(dimensions);
  }
  return model;
}

/// The manifest's step.kv_groups: each KV cache group's window and layers,
/// from llm-kv-cache-groups; none when every layer shares one block table.
std::optional<llvm::json::Array> kvGroupsEntry(ModuleOp module) {
  auto groups = module->getAttrOfType<ArrayAttr>(kKvGroupsAttr);
  if (!groups) return std::nullopt;
  llvm::json::Array entry;
  for (auto group : groups.getAsRange<DictionaryAttr>()) {
    llvm::json::Array layers;
    for (int64_t layer : group.getAs<DenseI64ArrayAttr>("layers").asArrayRef())
      layers.push_back(layer);
    entry.push_back(llvm::json::Object{
        {"window", group.getAs<IntegerAttr>("window").getInt()}, {"layers", std::move(layers)}});
  }
  return entry;
}

/// The manifest's step.lora_sites: each LoRA site's module and features,
/// from llm-lora-sites; none when the artifact serves no adapter.
std::optional<llvm::json::Array> loraSitesEntry(ModuleOp module) {
  auto sites = module->getAttrOfType<ArrayAttr>(kLoraSitesAttr);
  if (!sites) return std::nullopt;
  llvm::json::Array entry;
  for (auto site : sites.getAsRange<DictionaryAttr>())
    entry.push_back(llvm::json::Object{{"module", site.getAs<StringAttr>("module").getValue()},
                                       {"in", site.getAs<IntegerAttr>("in").getInt()},
                                       {"out", site.getAs<IntegerAttr>("out").getInt()}});
  return entry;
}

/// The manifest's "step" entry: its limits, workspace and KV blocks, how its
/// matrix products run, what it returns rows of, and the exported symbol of a
/// CPU step.
llvm::json::Object stepEntry(const StepInfo &info, StringRef kvDtype, StringRef matmul,
                             StringRef output, StringRef symbol = "") {
  llvm::json::Object step{{"kv_dtype", kvDtype}, {"matmul", matmul}, {"output", output}};
  for (const auto &[name, field] : kStepInfoStepFields) step[name] = info.*field;
  if (!symbol.empty()) step["symbol"] = symbol;
  return step;
}

/// The manifest's "weights" entry.
llvm::json::Object weightsEntry(const SizeAndChecksum &weights, llvm::json::Array index) {
  return llvm::json::Object{{"file", "weights.bin"},
                            {"size", weights.first},
                            {"alignment", kWeightAlignment},
                            {"checksum", weights.second},
                            {"tensors", std::move(index)}};
}

/// Writes manifest.json, last: a directory with a manifest is complete.
LogicalResult writeManifest(ModuleOp module, StringRef directory, llvm::json::Object manifest,
                            llvm::json::Array tokenizerFiles) {
  if (!tokenizerFiles.empty())
    manifest["tokenizer"] = llvm::json::Object{{"files", std::move(tokenizerFiles)}};
  std::error_code ec;
  llvm::raw_fd_ostream out(joinPath(directory, "manifest.json"), ec, llvm::sys::fs::OF_Text);
  if (ec) return module.emitError("cannot write manifest.json: ") << ec.message();
  out << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  return success();
}

/// Writes `data` to `file` in `directory`; its manifest kernels entry.
FailureOr<llvm::json::Object> writeFile(ModuleOp module, StringRef directory, StringRef file,
                                        StringRef data) {
  std::string path = joinPath(directory, file);
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec) return module.emitError("cannot write ") << path << ": " << ec.message(), failure();
  out << data;
  out.close();
  if (out.has_error()) return module.emitError("writing ") << path << " failed", failure();
  SizeAndChecksum written = sizeAndChecksum(data);
  return llvm::json::Object{{"file", file}, {"size", written.first}, {"checksum", written.second}};
}

/// A plan attribute as JSON: dictionaries are objects, arrays arrays, unit
/// null (an absent optional).
llvm::json::Value toJson(Attribute attr) {
  if (auto dict = dyn_cast<DictionaryAttr>(attr)) {
    llvm::json::Object object;
    for (NamedAttribute entry : dict) object[entry.getName().getValue()] = toJson(entry.getValue());
    return object;
  }
  if (auto array = dyn_cast<ArrayAttr>(attr)) {
    llvm::json::Array values;
    for (Attribute element : array) values.push_back(toJson(element));
    return values;
  }
  if (auto integer = dyn_cast<IntegerAttr>(attr)) return integer.getInt();
  if (auto number = dyn_cast<FloatAttr>(attr)) return number.getValueAsDouble();
  if (auto text = dyn_cast<StringAttr>(attr)) return text.getValue();
  return nullptr;
}

} // namespace

FailureOr<CodeUnitCounts> writeCpuArtifact(ModuleOp module, StringRef directory,
                                           const CpuTargetInfo &target,
                                           const CodeUnitCache &kernelCache,
                                           function_ref<void(StringRef)> stage) {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return module.emitError("cannot create ") << directory << ": " << ec.message();
  auto config = getStepInfo(module);
  auto matmul = module->getAttrOfType<StringAttr>("llmc.matmul");
  auto kvDtype = module->getAttrOfType<StringAttr>("llmc.kv_dtype");
  auto activations = module->getAttrOfType<StringAttr>("llmc.activations");
  auto output = module->getAttrOfType<StringAttr>(kStepOutputAttr);
  if (failed(config)) return failure();
  if (!module.lookupSymbol<func::FuncOp>("llmc_step") || !matmul || !kvDtype || !activations ||
      !output)
    return module.emitError("not a module that llm-lower-to-cpu produced");
  std::string outputKind = output.getValue().str();
  auto pathOf = [&](StringRef file) { return joinPath(directory, file); };
  // A manifest left by an earlier compile would describe files being replaced.
  llvm::sys::fs::remove(pathOf("manifest.json"));

  stage("writing weights.bin");
  llvm::json::Array weightIndex;
  auto weights = writeWeights(module, pathOf("weights.bin"), weightIndex);
  if (failed(weights)) return failure();
  llvm::json::Array tokenizerFiles = takeTokenizerFiles(module);
  std::string matmulKind = matmul.getValue().str(), kvKind = kvDtype.getValue().str();
  std::string activationsKind = activations.getValue().str();
  std::string bf16Products;
  if (auto products = module->getAttrOfType<StringAttr>("llmc.bf16_products"))
    bf16Products = products.getValue().str();
  std::optional<llvm::json::Array> kvGroups = kvGroupsEntry(module);
  std::optional<llvm::json::Array> loraSites = loraSitesEntry(module);
  llvm::json::Object model = modelEntry(module, *config, "f32");
  for (StringRef name : {StringRef("llmc.weights"), StringRef("llmc.weights_bytes"),
                         StringRef("llmc.matmul"), StringRef("llmc.kv_dtype"),
                         StringRef("llmc.activations"), StringRef("llmc.bf16_products"),
                         StringRef(kStepInfoAttr), StringRef(kKvGroupsAttr),
                         StringRef(kLoraSitesAttr), StringRef(kStepOutputAttr),
                         StringRef(kLabelsAttr), StringRef(kMatryoshkaAttr)})
    module->removeAttr(name);

  stage("generating kernels.so for " + target.cpu);
  FailureOr<CodeUnitCounts> units =
      emitCpuSharedObject(module, target, pathOf("kernels.so"), kernelCache);
  if (failed(units)) return failure();

  auto kernels = readSizeAndChecksum(module, pathOf("kernels.so"));
  if (failed(kernels)) return failure();

  llvm::json::Object manifest{
      {"format", "llmc-artifact"},
      {"format_version", kFormatVersion},
      {"abi_version", LLMC_STEP_ABI_VERSION},
      {"target", llvm::json::Object{{"kind", "cpu"},
                                    {"triple", target.triple},
                                    {"cpu", target.cpu},
                                    {"features", target.features}}},
      {"model", std::move(model)},
      {"step", stepEntry(*config, kvKind, matmulKind, outputKind, LLMC_STEP_SYMBOL)},
      {"kernels", llvm::json::Array{llvm::json::Object{{"file", "kernels.so"},
                                                       {"size", kernels->first},
                                                       {"checksum", kernels->second}}}},
      {"weights", weightsEntry(*weights, std::move(weightIndex))},
  };
  manifest.getObject("step")->try_emplace("activations", activationsKind);
  if (!bf16Products.empty())
    manifest.getObject("step")->try_emplace("bf16_products", bf16Products);
  if (kvGroups) manifest.getObject("step")->try_emplace("kv_groups", std::move(*kvGroups));
  if (loraSites) manifest.getObject("step")->try_emplace("lora_sites", std::move(*loraSites));
  if (failed(writeManifest(module, directory, std::move(manifest), std::move(tokenizerFiles))))
    return failure();
  return *units;
}

LogicalResult writeCudaArtifact(ModuleOp module, StringRef directory, const CudaTargetInfo &target,
                                function_ref<void(StringRef)> stage) {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return module.emitError("cannot create ") << directory << ": " << ec.message();
  auto plan = module->getAttrOfType<ArrayAttr>("llmc.cuda_plan");
  if (!plan) return module.emitError("not a module that llm-lower-to-cuda produced");
  auto config = getStepInfo(module);
  auto planWorkspace = requiredInteger(module, "llmc.cuda_workspace_bytes");
  auto planScratch = requiredInteger(module, "llmc.cuda_scratch_bytes");
  if (failed(config) || failed(planWorkspace) || failed(planScratch)) return failure();
  // A manifest left by an earlier compile would describe files being replaced.
  llvm::sys::fs::remove(joinPath(directory, "manifest.json"));

  stage("compiling kernels for " + target.arch + " (NVPTX, NVRTC, ptxas)");
  auto images = compileCudaKernels(module, target);
  if (failed(images)) return failure();
  llvm::json::Array kernelFiles;
  // The attention source too: what NVRTC compiled, for reading and for the
  // tests that run it on the CPU.
  std::string attentionSource;
  if (auto source = module->getAttrOfType<StringAttr>("llmc.cuda_attention_source"))
    attentionSource = source.getValue().str();
  std::pair<StringRef, const std::string *> files[] = {
      {"kernels.ptx", &images->kernelsPtx},     {"kernels.cubin", &images->kernelsCubin},
      {"attention.cu", &attentionSource},       {"attention.ptx", &images->attentionPtx},
      {"attention.cubin", &images->attentionCubin}};
  for (auto [file, data] : files) {
    llvm::sys::fs::remove(joinPath(directory, file));
    if (data->empty()) continue;
    auto entry = writeFile(module, directory, file, *data);
    if (failed(entry)) return failure();
    kernelFiles.push_back(std::move(*entry));
  }
  llvm::json::Object planJson{{stepplan::kFormatVersionKey, stepplan::kVersion},
                              {stepplan::kWorkspaceBytesKey, *planWorkspace},
                              {stepplan::kScratchBytesKey, *planScratch},
                              {stepplan::kStepsKey, toJson(plan)}};
  std::string planText = llvm::formatv("{0:1}", llvm::json::Value(std::move(planJson)));
  auto planEntry = writeFile(module, directory, "step_plan.json", planText);
  if (failed(planEntry)) return failure();
  kernelFiles.push_back(std::move(*planEntry));

  stage("writing weights.bin (" + target.dtype + ")");
  llvm::json::Array weightIndex;
  auto weights = writeWeights(module, joinPath(directory, "weights.bin"), weightIndex);
  if (failed(weights)) return failure();

  llvm::json::Object manifest{
      {"format", "llmc-artifact"},
      {"format_version", kFormatVersion},
      {"abi_version", LLMC_STEP_ABI_VERSION},
      {"target", llvm::json::Object{{"kind", "cuda"}, {"arch", target.arch}, {"dtype", target.dtype}}},
      {"model", modelEntry(module, *config, target.dtype)},
      {"step", stepEntry(*config, target.dtype, "cublaslt", kLogitsOutput)},
      {"kernels", std::move(kernelFiles)},
      {"weights", weightsEntry(*weights, std::move(weightIndex))},
  };
  return writeManifest(module, directory, std::move(manifest), takeTokenizerFiles(module));
}

} // namespace llmc
