//===- ModelBindings.cpp - model steps and the synchronous engine ---------===//
#include "runtime/core/Model.h"
#include "runtime/engine/Engine.h"
#include "runtime/engine/EngineJson.h"
#include "runtime/lora/LoraAdapter.h"
#include "runtime/python/Bindings.h"
#include "runtime/python/ModelOptions.h"
#include "runtime/python/PyJson.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace llmc::runtime;

namespace llmc::python {
namespace {
using IdArray = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using TableArray = nb::ndarray<const int32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using LogitsArray = nb::ndarray<float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using NextTokenArray = nb::ndarray<int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

/// Checks that `array` has `expected` entries; the step reads that many.
void checkLength(const char *name, size_t length, int64_t expected) {
  if (static_cast<int64_t>(length) != expected)
    throw Error(std::string(name) + " has " + str(static_cast<int64_t>(length)) +
                " entries, expected " + str(expected));
}

/// The step batch over the arrays of one ragged, paged step (StepABI.h) of
/// a model with `numKvGroups` KV cache groups, their lengths checked against
/// each other.
StepBatch stepBatch(int64_t numKvGroups, const IdArray &tokens, const IdArray &positions,
                    const IdArray &cuSeqlensQ,
                    const IdArray &contextLens, const TableArray &blockTables,
                    const IdArray &slotMapping, const IdArray &logitsIndices) {
  const int64_t numTokens = static_cast<int64_t>(tokens.shape(0));
  const int64_t numSeqs = static_cast<int64_t>(contextLens.shape(0));
  checkLength("positions", positions.shape(0), numTokens);
  checkLength("slot_mapping", slotMapping.shape(0), numKvGroups * numTokens);
  checkLength("cu_seqlens_q", cuSeqlensQ.shape(0), numSeqs + 1);
  checkLength("logits_indices", logitsIndices.shape(0), numSeqs);
  checkLength("block_tables", blockTables.shape(0), numKvGroups * numSeqs);
  StepBatch batch;
  batch.numTokens = numTokens;
  batch.numSeqs = numSeqs;
  batch.maxBlocksPerSeq = static_cast<int64_t>(blockTables.shape(1));
  batch.tokens = tokens.data();
  batch.positions = positions.data();
  batch.cuSeqlensQ = cuSeqlensQ.data();
  batch.contextLens = contextLens.data();
  batch.blockTables = blockTables.data();
  batch.slotMapping = slotMapping.data();
  batch.logitsIndices = logitsIndices.data();
  return batch;
}

/// One step into `logits` ([N, vocab] float32, or [N, hidden] for a model
/// that returns hidden states); with `loraIndices` [T], token t runs with
/// loraAdapters[loraIndices[t]] (-1: none).
void step(Model &model, IdArray tokens, IdArray positions, IdArray cuSeqlensQ,
          IdArray contextLens, TableArray blockTables, IdArray slotMapping,
          IdArray logitsIndices, LogitsArray logits, std::optional<IdArray> loraIndices,
          const std::vector<std::shared_ptr<LoraAdapter>> &loraAdapters) {
  StepBatch batch = stepBatch(model.stepConfig().numKvGroups(), tokens, positions, cuSeqlensQ,
                              contextLens, blockTables, slotMapping, logitsIndices);
  std::vector<const LoraAdapter *> adapters;
  for (const auto &adapter : loraAdapters) adapters.push_back(adapter.get());
  if (loraIndices) {
    checkLength("lora_indices", loraIndices->shape(0), batch.numTokens);
    batch.loraIndices = loraIndices->data();
    batch.loraAdapters = adapters.data();
    batch.numLoraAdapters = int64_t(adapters.size());
  }
  checkLength("logits", logits.shape(0), batch.numSeqs);
  checkLength("the logits' rows", logits.shape(1), model.outputSize());
  nb::gil_scoped_release release;
  model.step(batch, logits.data());
}

/// One step's greedy tokens into `next` ([N] int32), picked on the GPU where
/// the model runs on one (Model::stepGreedy).
void stepGreedy(Model &model, IdArray tokens, IdArray positions, IdArray cuSeqlensQ,
                IdArray contextLens, TableArray blockTables, IdArray slotMapping,
                IdArray logitsIndices, NextTokenArray next) {
  StepBatch batch = stepBatch(model.stepConfig().numKvGroups(), tokens, positions, cuSeqlensQ,
                              contextLens, blockTables, slotMapping, logitsIndices);
  checkLength("next", next.shape(0), batch.numSeqs);
  nb::gil_scoped_release release;
  model.stepGreedy(batch, next.data());
}

/// Greedy generation through a fresh engine: each prompt's generated ids.
std::vector<std::vector<int32_t>> generate(Model &model,
                                           const std::vector<std::vector<int32_t>> &prompts,
                                           int64_t maxTokens,
                                           const std::vector<int32_t> &stopTokenIds) {
  RequestOptions options;
  options.maxTokens = maxTokens;
  options.sampling.temperature = 0;
  options.stopTokenIds = stopTokenIds;
  Engine engine(model, EngineConfig());
  std::vector<std::vector<int32_t>> generated;
  for (Completion &completion : runToCompletion(engine, prompts, options))
    generated.push_back(std::move(completion[0]));
  return generated;
}

/// The outputs of a step or an abort as a list of dicts (EngineJson's names).
nb::list outputsToPython(const std::vector<StepOutput> &outputs) {
  nb::list list;
  for (const StepOutput &output : outputs) list.append(fromJson(toJson(output)));
  return list;
}

/// The synchronous engine over a model it keeps alive.
struct SyncEngine {
  SyncEngine(std::shared_ptr<Model> model, const nlohmann::json &config)
      : model(std::move(model)), engine(*this->model, engineConfigFromJson(config)) {}
  std::shared_ptr<Model> model;
  Engine engine;
};
} // namespace

void bindModel(nb::module_ &module) {
  nb::class_<LoraAdapter>(module, "LoraAdapter",
                          "A PEFT LoRA adapter loaded for one artifact's LoRA sites "
                          "(runtime/lora/LoraAdapter.h)")
      .def_prop_ro("directory", &LoraAdapter::directory)
      .def_prop_ro("rank", &LoraAdapter::rank, "the largest rank of its layers");

  nb::class_<Model>(module, "Model", "A compiled model (model.llmc/) with its device and KV cache")
      .def_static(
          "open",
          [](const std::string &path, int64_t numThreads, int64_t numKvBlocks,
             int64_t kvCacheBytes, double memoryFraction, int64_t maxModelLen) {
            ModelOptions options =
                modelOptions(numThreads, numKvBlocks, kvCacheBytes, memoryFraction, maxModelLen);
            nb::gil_scoped_release release;
            return std::shared_ptr<Model>(Model::open(path, options));
          },
          nb::arg("path"), nb::arg("num_threads") = 0, nb::arg("num_kv_blocks") = 0,
          nb::arg("kv_cache_bytes") = 0, nb::arg("memory_fraction") = 0.0,
          nb::arg("max_model_len") = 0)
      .def_prop_ro("vocab_size", [](const Model &m) { return m.config().vocabSize; })
      .def_prop_ro("hidden_size", [](const Model &m) { return m.config().hiddenSize; })
      .def_prop_ro("outputs_hidden_states", &Model::outputsHiddenStates)
      .def_prop_ro("outputs_class_logits", &Model::outputsClassLogits)
      .def_prop_ro("labels", [](const Model &m) { return m.config().labels; })
      .def_prop_ro("output_size", &Model::outputSize)
      .def_prop_ro("num_layers", [](const Model &m) { return m.config().numLayers; })
      .def_prop_ro("block_size", [](const Model &m) { return m.stepConfig().blockSize; })
      .def_prop_ro("max_num_batched_tokens",
                   [](const Model &m) { return m.stepConfig().maxNumBatchedTokens; })
      .def_prop_ro("max_num_seqs", [](const Model &m) { return m.stepConfig().maxNumSeqs; })
      .def_prop_ro("num_kv_blocks", [](const Model &m) { return m.kvPool().numBlocks(); })
      .def_prop_ro("num_kv_groups", [](const Model &m) { return m.stepConfig().numKvGroups(); })
      .def_prop_ro("num_threads", [](const Model &m) { return m.numThreads(); })
      .def_prop_ro("kv_cache_summary", &Model::kvCacheSummary)
      .def(
          "load_lora",
          [](const Model &model, const std::string &directory, int64_t maxRank) {
            // nanobind holds shared_ptrs to non-const classes; nothing changes it.
            return std::const_pointer_cast<LoraAdapter>(
                LoraAdapter::load(directory, model.stepConfig().loraSites, maxRank));
          },
          nb::arg("directory"), nb::arg("max_rank"), nb::call_guard<nb::gil_scoped_release>(),
          "The PEFT adapter in `directory` (adapter_config.json, adapter_model.safetensors), "
          "matched to the artifact's LoRA sites; refused when a layer's rank is above "
          "`max_rank` or the artifact cannot serve it exactly")
      .def_prop_ro("num_lora_sites",
                   [](const Model &m) { return int64_t(m.stepConfig().loraSites.size()); },
                   "how many linear layers a LoRA adapter may change (0: compiled without "
                   "--enable-lora)")
      .def("step", &step, nb::arg("tokens"), nb::arg("positions"), nb::arg("cu_seqlens_q"),
           nb::arg("context_lens"), nb::arg("block_tables"), nb::arg("slot_mapping"),
           nb::arg("logits_indices"), nb::arg("logits"),
           nb::arg("lora_indices").none() = nb::none(),
           nb::arg("lora_adapters") = std::vector<std::shared_ptr<LoraAdapter>>())
      .def("step_greedy", &stepGreedy, nb::arg("tokens"), nb::arg("positions"),
           nb::arg("cu_seqlens_q"), nb::arg("context_lens"), nb::arg("block_tables"),
           nb::arg("slot_mapping"), nb::arg("logits_indices"), nb::arg("next"))
      .def_prop_ro("greedy_on_device", &Model::greedyOnDevice)
      .def("generate", &generate, nb::arg("prompts"), nb::arg("max_tokens"),
           nb::arg("stop_token_ids"), nb::call_guard<nb::gil_scoped_release>());

  nb::class_<SyncEngine>(module, "Engine", "Requests of token ids over one model, stepped by hand")
      .def(
          "__init__",
          [](SyncEngine *self, std::shared_ptr<Model> model, nb::dict config) {
            new (self) SyncEngine(std::move(model), toJson<nlohmann::json>(config));
          },
          nb::arg("model"), nb::arg("config"))
      .def(
          "add_request",
          [](SyncEngine &self, uint64_t id, std::vector<int32_t> prompt, nb::dict options) {
            self.engine.addRequest(id, std::move(prompt),
                                   requestOptionsFromJson(toJson<nlohmann::json>(options)));
          },
          nb::arg("id"), nb::arg("prompt"), nb::arg("options"))
      .def("step",
           [](SyncEngine &self) {
             std::vector<StepOutput> outputs;
             {
               nb::gil_scoped_release release;
               outputs = self.engine.step();
             }
             return outputsToPython(outputs);
           })
      .def("abort",
           [](SyncEngine &self, uint64_t id) { return outputsToPython(self.engine.abort(id)); },
           nb::arg("id"))
      .def("has_unfinished", [](const SyncEngine &self) { return self.engine.hasUnfinished(); })
      .def_prop_ro("max_model_len",
                   [](const SyncEngine &self) { return self.engine.maxModelLen(); })
      .def("stats", [](const SyncEngine &self) { return fromJson(toJson(self.engine.stats())); });
}

} // namespace llmc::python
