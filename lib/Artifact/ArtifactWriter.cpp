//===- ArtifactWriter.cpp - write model.llmc/ -----------------------------===//
#include "llmc/Artifact/ArtifactWriter.h"

#include "llmc/Artifact/Checksum.h"
#include "llmc/Runtime/StepABI.h"
#include "llmc/Support/ElementsData.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <vector>

using namespace mlir;

namespace llmc {

namespace {

constexpr int64_t kFormatVersion = 1;
constexpr int64_t kWeightAlignment = 64;
/// The tokenizer files an artifact carries when the model's directory has them
/// (newer transformers write the chat template to chat_template.jinja).
constexpr llvm::StringLiteral kTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json",
                                                   "chat_template.jinja"};
/// The module attribute copyTokenizerFiles leaves for the manifest.
constexpr llvm::StringLiteral kTokenizerAttr = "llmc.tokenizer_files";

/// What manifest.json says about the step, read from the lowered module.
struct StepConfig {
  int64_t workspaceBytes, maxNumBatchedTokens, maxNumSeqs;
  int64_t vocabSize, numLayers, numKvHeads, blockSize, headDim, hiddenSize, numHeads,
      maxPositions;
  std::string matmul;
};

FailureOr<StepConfig> readStepConfig(ModuleOp module) {
  auto step = module.lookupSymbol<func::FuncOp>("llmc_step");
  auto integer = [&](StringRef name) {
    auto attr = module->getAttrOfType<IntegerAttr>(name);
    return attr ? attr.getInt() : -1;
  };
  auto matmul = module->getAttrOfType<StringAttr>("llmc.matmul");
  if (!step || step.getNumArguments() != 12 || !matmul)
    return module.emitError("not a module that llm-lower-to-cpu produced"), failure();
  auto pool = cast<MemRefType>(step.getArgumentTypes()[8]);
  auto logits = cast<MemRefType>(step.getArgumentTypes()[11]);
  return StepConfig{integer("llmc.workspace_bytes"), integer("llmc.max_num_batched_tokens"),
                    integer("llmc.max_num_seqs"), logits.getDimSize(1), pool.getDimSize(0),
                    pool.getDimSize(3), pool.getDimSize(4), pool.getDimSize(5),
                    integer("llmc.hidden_size"), integer("llmc.num_heads"),
                    integer("llmc.max_positions"),
                    matmul.getValue().str()};
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

/// weights.bin: every weight at its offset, zeros between. Returns its size
/// and checksum, taken from the buffer it writes.
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
    std::vector<char> storage;
    auto bytes = elementsBytes(value, storage);
    if (failed(bytes) || offset + static_cast<int64_t>(bytes->size()) > static_cast<int64_t>(file.size()))
      return module.emitError("weight ") << dict.get("name") << " has no data to write", failure();
    std::copy(bytes->begin(), bytes->end(), file.begin() + offset);
    llvm::json::Array shape;
    for (int64_t dim : cast<ShapedType>(value.getType()).getShape()) shape.push_back(dim);
    index.push_back(llvm::json::Object{{"name", cast<StringAttr>(dict.get("name")).getValue()},
                                       {"dtype", "f32"},
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

LogicalResult writeCpuArtifact(ModuleOp module, StringRef directory, const CpuTargetInfo &target,
                               function_ref<void(StringRef)> stage) {
  if (std::error_code ec = llvm::sys::fs::create_directories(directory))
    return module.emitError("cannot create ") << directory << ": " << ec.message();
  auto config = readStepConfig(module);
  if (failed(config)) return failure();
  auto pathOf = [&](StringRef file) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, file);
    return std::string(path);
  };
  // A manifest left by an earlier compile would describe files being replaced.
  llvm::sys::fs::remove(pathOf("manifest.json"));

  stage("writing weights.bin");
  llvm::json::Array weightIndex;
  auto weights = writeWeights(module, pathOf("weights.bin"), weightIndex);
  if (failed(weights)) return failure();
  // The tokenizer's files, when copyTokenizerFiles copied any.
  llvm::json::Array tokenizerFiles;
  if (auto copied = module->getAttrOfType<ArrayAttr>(kTokenizerAttr)) {
    for (Attribute entry : copied) {
      auto dict = cast<DictionaryAttr>(entry);
      tokenizerFiles.push_back(
          llvm::json::Object{{"file", cast<StringAttr>(dict.get("file")).getValue()},
                             {"size", cast<IntegerAttr>(dict.get("size")).getInt()},
                             {"checksum", cast<StringAttr>(dict.get("checksum")).getValue()}});
    }
    module->removeAttr(kTokenizerAttr);
  }
  for (StringRef name : {"llmc.weights", "llmc.weights_bytes", "llmc.workspace_bytes",
                         "llmc.max_num_batched_tokens", "llmc.max_num_seqs", "llmc.matmul",
                         "llmc.hidden_size", "llmc.num_heads", "llmc.max_positions"})
    module->removeAttr(name);

  stage("generating kernels.so for " + target.cpu);
  if (failed(emitCpuSharedObject(module, target, pathOf("kernels.o"), pathOf("kernels.so"))))
    return failure();
  llvm::sys::fs::remove(pathOf("kernels.o"));

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
      {"model", llvm::json::Object{{"vocab_size", config->vocabSize},
                                   {"hidden_size", config->hiddenSize},
                                   {"num_heads", config->numHeads},
                                   {"num_layers", config->numLayers},
                                   {"num_kv_heads", config->numKvHeads},
                                   {"head_dim", config->headDim},
                                   {"max_positions", config->maxPositions},
                                   {"dtype", "f32"}}},
      {"step", llvm::json::Object{{"symbol", LLMC_STEP_SYMBOL},
                                  {"max_num_batched_tokens", config->maxNumBatchedTokens},
                                  {"max_num_seqs", config->maxNumSeqs},
                                  {"workspace_bytes", config->workspaceBytes},
                                  {"block_size", config->blockSize},
                                  {"kv_dtype", "f32"},
                                  {"matmul", config->matmul}}},
      {"kernels", llvm::json::Array{llvm::json::Object{{"file", "kernels.so"},
                                                       {"size", kernels->first},
                                                       {"checksum", kernels->second}}}},
      {"weights", llvm::json::Object{{"file", "weights.bin"},
                                     {"size", weights->first},
                                     {"alignment", kWeightAlignment},
                                     {"checksum", weights->second},
                                     {"tensors", std::move(weightIndex)}}},
  };
  if (!tokenizerFiles.empty())
    manifest["tokenizer"] = llvm::json::Object{{"files", std::move(tokenizerFiles)}};
  std::error_code ec;
  llvm::raw_fd_ostream out(pathOf("manifest.json"), ec, llvm::sys::fs::OF_Text);
  if (ec) return module.emitError("cannot write manifest.json: ") << ec.message();
  out << llvm::formatv("{0:2}", llvm::json::Value(std::move(manifest))) << "\n";
  return success();
}

} // namespace llmc
