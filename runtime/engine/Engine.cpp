//===- Engine.cpp - requests in, sampled tokens out, one step at a time ---===//
#include "runtime/engine/Engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <string>

namespace llmc::runtime {
namespace {

/// splitmix64: spreads (engine seed, request id) over the seed space, so
/// unseeded requests draw independently.
uint64_t mixSeed(uint64_t seed, uint64_t id) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (id + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// A configured limit: `requested`, or the artifact's when 0; never above it.
int64_t limit(int64_t requested, int64_t compiled, const char *name) {
  if (requested < 0) throw Error(std::string(name) + " must not be negative");
  if (requested > compiled)
    throw Error(std::string(name) + " " + str(requested) + " is more than the " + str(compiled) +
                " the artifact was compiled for");
  return requested ? requested : compiled;
}

SchedulerLimits schedulerLimits(const Model &model, const EngineConfig &config) {
  SchedulerLimits limits;
  limits.maxNumBatchedTokens = limit(config.maxNumBatchedTokens,
                                     model.stepConfig().maxNumBatchedTokens,
                                     "max_num_batched_tokens");
  // Every running sequence decodes in every step, so they must fit in one.
  int64_t seqs = limit(config.maxNumSeqs, model.stepConfig().maxNumSeqs, "max_num_seqs");
  if (config.maxNumSeqs > limits.maxNumBatchedTokens)
    throw Error("max_num_seqs " + str(seqs) + " is more than max_num_batched_tokens " +
                str(limits.maxNumBatchedTokens));
  limits.maxNumSeqs = std::min(seqs, limits.maxNumBatchedTokens);
  // Draft tokens run as rows of their own, up to what the step was compiled for.
  limits.maxStepRows = std::max(limits.maxNumSeqs, std::min(model.stepConfig().maxNumSeqs,
                                                            limits.maxNumBatchedTokens));
  limits.attentionWindow = model.config().attentionWindow;
  for (const KvGroupConfig &group : model.stepConfig().kvGroups)
    limits.kvGroupWindows.push_back(group.window);
  return limits;
}

/// The longest sequence: the model's positions, the whole KV cache and what
/// the model was loaded for (a GPU's block tables) cap it. A KV cache group
/// with a sliding window holds at most its window's blocks and a step's (and
/// one the window starts in): a cache that holds those and the other groups'
/// blocks serves the length.
int64_t resolveModelLen(const Model &model, const SchedulerLimits &step, int64_t requested) {
  if (requested < 0) throw Error("max_model_len must not be negative");
  int64_t numBlocks = model.kvPool().numBlocks(), blockSize = model.kvPool().blockSize();
  int64_t positions = model.config().maxPositions;
  std::vector<int64_t> windows = step.groupWindows();
  auto blocksHeldAt = [&](int64_t length) {
    int64_t held = 0;
    for (int64_t window : windows)
      held += window > 0 ? std::min(blocksFor(length, blockSize),
                                    blocksFor(window - 1 + step.maxNumBatchedTokens, blockSize) + 1)
                         : blocksFor(length, blockSize);
    return held;
  };
  // The longest length whose blocks fit, up to the model's positions.
  int64_t low = 0, high = std::max(numBlocks * blockSize, positions);
  while (low < high) {
    int64_t middle = low + (high - low + 1) / 2;
    if (blocksHeldAt(middle) <= numBlocks) low = middle;
    else high = middle - 1;
  }
  int64_t capacity = low;
  int64_t loaded = model.maxSequenceLength();
  std::pair<int64_t, std::string> limits[] = {
      {capacity, " positions the KV cache holds (" + str(model.kvPool().numBlocks()) + " blocks of " +
                     str(model.kvPool().blockSize()) + ")"},
      {positions ? positions : capacity, " positions the model has"},
      {loaded ? loaded : capacity, " positions the model was loaded for (its max_model_len)"}};
  const auto &tightest = *std::min_element(
      std::begin(limits), std::end(limits), [](const auto &a, const auto &b) { return a.first < b.first; });
  if (requested > tightest.first)
    throw Error("max_model_len " + str(requested) + " is more than the " + str(tightest.first) +
                tightest.second);
  return requested ? requested : tightest.first;
}

/// The swap space of `bytes` for `model`'s blocks; null for none.
std::unique_ptr<KvSwapSpace> makeSwapSpace(Model &model, int64_t bytes) {
  if (bytes < 0) throw Error("swap_space must not be negative");
  int64_t slots = bytes / model.kvPool().shape().bytesPerBlock();
  if (bytes > 0 && slots == 0)
    throw Error("a swap space of " + str(bytes) + " bytes holds no KV block: one takes " +
                str(model.kvPool().shape().bytesPerBlock()));
  return slots ? std::make_unique<KvSwapSpace>(model.kvPool(), slots) : nullptr;
}

/// What swapping costs on this machine: one block's round trip, measured.
SwapPolicy swapPolicy(Model &model, KvSwapSpace *space) {
  SwapPolicy policy;
  if (!space) return policy;
  policy.numSlots = space->numSlots();
  policy.blockRoundTripSeconds = space->measureRoundTrip(model.kvPool(), 0);
  return policy;
}

} // namespace

const char *finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::Stop: return "stop";
  case FinishReason::Length: return "length";
  case FinishReason::Abort: return "abort";
  case FinishReason::None: break;
  }
  return "";
}

Engine::Engine(Model &model, const EngineConfig &config)
    : model(model),
      blocks(model.kvPool().numBlocks(), model.kvPool().blockSize(), config.enablePrefixCaching),
      swapSpace(makeSwapSpace(model, config.swapSpaceBytes)),
      scheduler(blocks, schedulerLimits(model, config), swapPolicy(model, swapSpace.get()),
                config.schedulingPolicy),
      modelLen(resolveModelLen(model, scheduler.limits(), config.maxModelLen)),
      defaultSeed(config.seed),
      speculative(config.speculative) {
  speculative.validate();
  if (speculative.enabled() && model.pools())
    throw Error("speculative decoding needs a generative model; this one serves pooling "
                "requests only");
  // As vLLM and llama.cpp allocate theirs: the cache is all backed before the
  // first request, so no step waits on a page fault of a block it writes.
  model.kvPool().makeResident();
}

Engine::~Engine() { dropAll(); }

void Engine::validate(const std::vector<int32_t> &prompt, const RequestOptions &options) const {
  int64_t vocabSize = model.config().vocabSize;
  if (prompt.empty()) throw RequestError("the prompt is empty");
  for (size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= vocabSize)
      throw RequestError("prompt token " + str(i) + " is " + str(prompt[i]) +
                         ", outside the vocabulary (0 to " + str(vocabSize - 1) + ")");
  if (options.priority != 0 && scheduler.policy() != SchedulingPolicy::Priority)
    throw RequestError("priority " + str(options.priority) +
                       " needs the priority scheduling policy (vLLM's scheduling_policy "
                       "\"priority\"); this engine serves first come, first served");
  if (options.lora && options.lora->numSites() != int64_t(model.stepConfig().loraSites.size()))
    throw RequestError(model.stepConfig().loraSites.empty()
                           ? "the request names a LoRA adapter, but the model was compiled "
                             "without LoRA sites (llmc compile --enable-lora)"
                           : "the request's LoRA adapter was loaded for another model");
  if (model.pools() != options.pooling.has_value())
    throw RequestError(options.pooling ? "the model generates text: it has nothing to pool"
                       : model.outputsHiddenStates()
                           ? "the model is an embedding model (exported without its LM head): "
                             "it embeds prompts and generates nothing"
                           : "the model is a sequence classifier: it classifies prompts and "
                             "generates nothing");
  if (options.pooling) {
    // The whole prompt is computed; nothing is generated after it.
    if (static_cast<int64_t>(prompt.size()) > modelLen)
      throw RequestError("the prompt has " + str(int64_t(prompt.size())) +
                         " tokens; max_model_len is " + str(modelLen));
    if (options.n != 1 || options.promptLogprobs || options.grammar)
      throw RequestError("a pooling request takes no n, prompt_logprobs or grammar");
    if (options.pooling->dimensions) checkDimensions(*options.pooling->dimensions);
    return;
  }
  if (static_cast<int64_t>(prompt.size()) >= modelLen)
    throw RequestError("the prompt has " + str(int64_t(prompt.size())) +
                       " tokens; max_model_len is " + str(modelLen) +
                       ", which must leave room for at least one generated token");
  if (options.maxTokens < 1)
    throw RequestError("max_tokens must be at least 1, got " + str(options.maxTokens));
  if (options.n < 1 || options.n > maxNumSeqs())
    throw RequestError("n must be from 1 to max_num_seqs (" + str(maxNumSeqs()) + "), got " +
                       str(options.n));
  for (int32_t token : options.stopTokenIds)
    if (token < 0 || token >= vocabSize)
      throw RequestError("stop token id " + str(token) + " is outside the vocabulary");
  if (options.promptLogprobs &&
      (*options.promptLogprobs < 0 || *options.promptLogprobs > kMaxLogprobs))
    throw RequestError("prompt_logprobs must be in [0, " + str(kMaxLogprobs) + "], got " +
                       str(*options.promptLogprobs));
  if (options.sampling.minTokens > options.maxTokens)
    throw RequestError("min_tokens (" + str(options.sampling.minTokens) +
                       ") must not be more than max_tokens (" + str(options.maxTokens) + ")");
  try {
    options.sampling.validate(vocabSize);
  } catch (const Error &error) {
    throw RequestError(error.what());
  }
}

void Engine::addRequest(RequestId id, std::vector<int32_t> prompt, const RequestOptions &options) {
  if (requests.count(id)) throw RequestError("request " + str(int64_t(id)) + " already exists");
  validate(prompt, options);
  Request request;
  request.options = options;
  request.seed = options.sampling.seed.value_or(mixSeed(defaultSeed, id));
  SamplingParams sampling = options.sampling;
  sampling.seed = request.seed;
  auto first = std::make_unique<Sequence>(
      id, 0, nextArrival++, prompt, SequenceSampler(sampling, 0, prompt, options.stopTokenIds));
  first->pendingForks = options.n - 1;
  first->reportsPromptLogprobs = options.promptLogprobs.has_value();
  first->priority = options.priority;
  if (options.grammar)
    first->grammar = std::make_unique<structured::GrammarMatcher>(options.grammar);
  if (options.lora) {
    // An adapter changes every K/V after the first layer: its prefixes are
    // cached under their own hashes.
    first->blocks = scheduler.kvCache().emptySequence();
    for (SequenceBlocks &group : first->blocks.groups)
      group.hashSeed = mixSeed(group.hashSeed, options.lora->fingerprint());
  }
  scheduler.addWaiting(first.get());
  request.samples.push_back(std::move(first));
  requests.emplace(id, std::move(request));
}

std::vector<StepOutput> Engine::abort(RequestId id) {
  waitForMasks();
  std::vector<StepOutput> outputs;
  auto found = requests.find(id);
  if (found == requests.end()) return outputs;
  for (auto &sample : found->second.samples)
    if (sample->status != SequenceStatus::Finished) {
      scheduler.remove(sample.get());
      sample->status = SequenceStatus::Finished;
      outputs.push_back({id, sample->sampleIndex, std::nullopt, FinishReason::Abort});
    }
  requests.erase(found);
  return outputs;
}

void Engine::proposeDrafts() {
  // Without speculation no draft is ever set: nothing to clear either.
  if (!speculative.enabled()) return;
  for (auto &[id, request] : requests)
    for (auto &sample : request.samples) {
      Sequence &sequence = *sample;
      sequence.draft.clear();
      if (sequence.status != SequenceStatus::Running ||
          sequence.numPending() != 1 || sequence.grammar || sequence.pendingForks > 0)
        continue;
      // Room for the draft and the token after it, in max_tokens and in the
      // positions (the last draft token's K/V is written at tokens.size() - 1 + draft).
      int64_t room = std::min({speculative.numSpeculativeTokens,
                               request.options.maxTokens - sequence.numOutput() - 1,
                               modelLen - static_cast<int64_t>(sequence.tokens.size())});
      sequence.draft = proposeNgramDraft(sequence.tokens, speculative, room);
    }
}

StepBatchArrays Engine::buildBatch(const SchedulerOutput &plan) const {
  int64_t blockSize = blocks.blockSize();
  StepBatchArrays arrays;
  arrays.cuSeqlensQ.push_back(0);
  // The sequence of each token and of each row the step computes, in order:
  // every KV cache group has a run of slots and of table rows after them.
  std::vector<const Sequence *> tokenSequences, rowSequences;
  auto addToken = [&](const Sequence &sequence, int32_t token, int64_t position) {
    arrays.tokens.push_back(token);
    arrays.positions.push_back(static_cast<int32_t>(position));
    tokenSequences.push_back(&sequence);
  };
  auto endSequence = [&](const Sequence &sequence, int64_t contextLen) {
    arrays.cuSeqlensQ.push_back(static_cast<int32_t>(arrays.tokens.size()));
    arrays.contextLens.push_back(static_cast<int32_t>(contextLen));
    arrays.logitsIndices.push_back(static_cast<int32_t>(arrays.tokens.size() - 1));
    rowSequences.push_back(&sequence);
  };
  // Each token's LoRA adapter, an index into the step's distinct ones.
  std::vector<int32_t> chunkAdapters;
  for (const ScheduledChunk &chunk : plan.chunks) {
    const LoraAdapter *adapter = requests.at(chunk.sequence->request).options.lora.get();
    auto known = std::find(arrays.loraAdapters.begin(), arrays.loraAdapters.end(), adapter);
    if (adapter && known == arrays.loraAdapters.end())
      known = arrays.loraAdapters.insert(known, adapter);
    chunkAdapters.push_back(adapter ? int32_t(known - arrays.loraAdapters.begin()) : -1);
  }
  for (const ScheduledChunk &chunk : plan.chunks) {
    const Sequence &sequence = *chunk.sequence;
    int64_t end = chunk.start + chunk.numTokens - chunk.numDraft;
    for (int64_t position = chunk.start; position < end; ++position) {
      addToken(sequence, sequence.tokens[position], position);
      if (chunk.rowPerToken) endSequence(sequence, position + 1);
    }
    if (!chunk.rowPerToken) endSequence(sequence, end);
    // Each draft token sees the tokens before it, whose K/V the step writes
    // before any attention reads the cache.
    for (int64_t i = 0; i < chunk.numDraft; ++i) {
      addToken(sequence, sequence.draft[i], end + i);
      endSequence(sequence, end + i + 1);
    }
  }
  if (!arrays.loraAdapters.empty())
    for (size_t chunk = 0; chunk < plan.chunks.size(); ++chunk)
      arrays.loraIndices.insert(arrays.loraIndices.end(), plan.chunks[chunk].numTokens,
                                chunkAdapters[chunk]);
  size_t numGroups = plan.chunks.empty() ? 1 : plan.chunks.front().sequence->blocks.groups.size();
  size_t width = 1;
  for (const Sequence *sequence : rowSequences)
    for (const SequenceBlocks &group : sequence->blocks.groups)
      width = std::max(width, group.table.size());
  for (size_t group = 0; group < numGroups; ++group)
    for (size_t t = 0; t < tokenSequences.size(); ++t)
      arrays.slotMapping.push_back(
          slotOf(tokenSequences[t]->blocks.groups[group].table, arrays.positions[t], blockSize));
  // Rows are padded with block 0, and so are the entries of blocks given
  // back: the step reads a row's positions below context_len, and from its
  // window's first key on.
  arrays.maxBlocksPerSeq = static_cast<int64_t>(width);
  arrays.blockTables.assign(numGroups * rowSequences.size() * width, 0);
  for (size_t group = 0, row = 0; group < numGroups; ++group)
    for (const Sequence *sequence : rowSequences) {
      const std::vector<BlockId> &table = sequence->blocks.groups[group].table;
      std::replace_copy(table.begin(), table.end(), arrays.blockTables.begin() + row++ * width,
                        kReleasedBlock, BlockId(0));
    }
  return arrays;
}

void Engine::forkSamples(Request &request, Sequence &parent) {
  Sequence *previous = &parent;
  for (int32_t index = 1; index <= parent.pendingForks; ++index) {
    SamplingParams sampling = request.options.sampling;
    sampling.seed = request.seed + static_cast<uint64_t>(index);
    std::vector<int32_t> prompt(parent.tokens.begin(), parent.tokens.begin() + parent.promptLen);
    auto child = std::make_unique<Sequence>(
        parent.request, index, parent.arrival, parent.tokens,
        SequenceSampler(sampling, 0, std::move(prompt), request.options.stopTokenIds));
    child->blocks = scheduler.kvCache().fork(parent.blocks);
    child->priority = parent.priority;
    // Forks happen before the parent's first token: a fresh matcher is where
    // the parent's stands.
    if (request.options.grammar)
      child->grammar = std::make_unique<structured::GrammarMatcher>(request.options.grammar);
    scheduler.addForked(child.get(), previous);
    previous = child.get();
    request.samples.push_back(std::move(child));
  }
  parent.pendingForks = 0;
}

bool Engine::picksArgmaxOnly(const SchedulerOutput &plan) const {
  if (model.pools()) return false;
  for (const ScheduledChunk &chunk : plan.chunks) {
    const Sequence &sequence = *chunk.sequence;
    if (chunk.numDraft > 0 || chunk.rowPerToken) return false;
    // The request's other samples (forks) share its sampling parameters.
    if (chunk.samples() && (sequence.grammar || !sequence.sampler.picksArgmax())) return false;
  }
  return true;
}

void Engine::drawTokens(std::vector<Draw> &draws) {
  int64_t vocabSize = model.config().vocabSize;
  std::vector<std::exception_ptr> failures(draws.size());
  model.parallelFor(static_cast<int64_t>(draws.size()), [&](int64_t i) {
    Draw &draw = draws[i];
    if (draw.sequence->grammar || draw.token) return;
    try {
      draw.token = draw.sequence->sampler.sample(draw.logits, vocabSize);
    } catch (...) {
      failures[i] = std::current_exception();
    }
  });
  for (const std::exception_ptr &failure : failures)
    if (failure) std::rethrow_exception(failure);
}

void Engine::sampleNext(Draw &draw, std::vector<StepOutput> &outputs) {
  int64_t vocabSize = model.config().vocabSize;
  Request &request = *draw.request;
  Sequence &sequence = *draw.sequence;
  const float *row = draw.logits;
  structured::GrammarMatcher *grammar = sequence.grammar.get();
  if (grammar) {
    // A sequence's first mask is computed here; later ones beside the step.
    if (!grammar->maskReady()) {
      auto start = std::chrono::steady_clock::now();
      grammar->computeMask();
      ++counters.grammarMasks;
      counters.grammarMaskSeconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    maskedRow.assign(row, row + vocabSize);
    grammar->applyMask(maskedRow.data(), vocabSize);
    row = maskedRow.data();
  }
  SampledToken sampled =
      draw.token ? std::move(*draw.token) : sequence.sampler.sample(row, vocabSize);
  sequence.tokens.push_back(sampled.token);
  ++counters.generatedTokens;
  const RequestOptions &options = request.options;
  FinishReason reason = FinishReason::None;
  // The grammar is done once it accepts a stop token (whether or not the
  // request stops at them), or if it allows nothing more.
  if (grammar && (!grammar->accept(sampled.token) || grammar->terminated()))
    reason = FinishReason::Stop;
  else if (std::find(options.stopTokenIds.begin(), options.stopTokenIds.end(), sampled.token) !=
           options.stopTokenIds.end())
    reason = FinishReason::Stop;
  else if (sequence.numOutput() == options.maxTokens ||
           static_cast<int64_t>(sequence.tokens.size()) >= modelLen)
    reason = FinishReason::Length;
  outputs.push_back({sequence.request, sequence.sampleIndex, std::move(sampled), reason});
  if (reason != FinishReason::None)
    finish(sequence);
  else if (grammar)
    nextMasks.push_back(grammar);
}

void Engine::reportPromptLogprobs(const ScheduledChunk &chunk, const float *rows,
                                  std::vector<StepOutput> &outputs) {
  Sequence &sequence = *chunk.sequence;
  int32_t topCount = *requests.at(sequence.request).options.promptLogprobs;
  // The row at position p gives the logprob of prompt token p + 1.
  int64_t from = std::max(chunk.start, sequence.promptRowsReported);
  int64_t to = std::min(chunk.start + chunk.numTokens, sequence.promptLen - 1);
  if (from >= to) return;
  int64_t vocabSize = model.config().vocabSize;
  StepOutput output{sequence.request, 0, std::nullopt, FinishReason::None, {}};
  output.promptLogprobs.resize(static_cast<size_t>(to - from));
  model.parallelFor(to - from, [&](int64_t i) {
    int64_t position = from + i;
    // The top-k scratch is a vocabulary long: one per thread, not one per row.
    thread_local std::vector<int32_t> order;
    output.promptLogprobs[i] =
        logprobsOf(sequence.tokens[position + 1], rows + (position - chunk.start) * vocabSize,
                   vocabSize, topCount, order);
  });
  sequence.promptRowsReported = to;
  outputs.push_back(std::move(output));
}

void Engine::verifyDraft(const ScheduledChunk &chunk, const float *rows,
                         std::vector<StepOutput> &outputs) {
  int64_t vocabSize = model.config().vocabSize;
  Sequence &sequence = *chunk.sequence;
  Request &request = requests.at(sequence.request);
  // The K/V the step wrote for the sequence's own tokens are kept; a draft
  // token's, once the token before it has drawn it.
  int64_t keep = chunk.start + chunk.numTokens - chunk.numDraft;
  counters.draftTokens += chunk.numDraft;
  for (int64_t row = 0; row <= chunk.numDraft; ++row) {
    std::optional<int32_t> draft;
    if (row < chunk.numDraft) draft = sequence.draft[row];
    const float *logitsRow = rows + row * vocabSize;
    Draw draw{&request, &sequence, logitsRow,
              sequence.sampler.sample(logitsRow, vocabSize, draft)};
    bool accepted = draft && draw.token->token == *draft;
    sampleNext(draw, outputs);
    if (!accepted) break;
    ++counters.acceptedDraftTokens;
    if (sequence.status == SequenceStatus::Finished) break;
    ++keep;
  }
  sequence.draft.clear();
  if (sequence.status != SequenceStatus::Finished)
    scheduler.kvCache().rollBack(sequence.blocks, sequence.tokens, keep);
}

void Engine::checkDimensions(int64_t dimensions) const {
  const ModelConfig &config = model.config();
  // vLLM's checks, and its reasons.
  if (!model.outputsHiddenStates())
    throw RequestError("dimensions applies to an embedding model's embeddings");
  if (!config.isMatryoshka)
    throw RequestError("the model does not support Matryoshka representation: changing its "
                       "output dimensions would give poor embeddings (a model trained for "
                       "them is compiled with --matryoshka-dimensions, or says is_matryoshka "
                       "in its config.json)");
  const std::vector<int64_t> &widths = config.matryoshkaDimensions;
  if (!widths.empty() && std::find(widths.begin(), widths.end(), dimensions) == widths.end()) {
    std::string list;
    for (int64_t width : widths) list += (list.empty() ? "" : ", ") + str(width);
    throw RequestError("the model supports Matryoshka dimensions " + list + " only, not " +
                       str(dimensions));
  }
  if (dimensions < 1 || dimensions > model.outputSize())
    throw RequestError("dimensions must be from 1 to the embedding's " +
                       str(model.outputSize()) + " features, not " + str(dimensions));
}

StepOutput Engine::pool(const Request &request, Sequence &sequence, const float *row) {
  const PoolingParams &params = *request.options.pooling;
  std::vector<float> pooled(row, row + params.dimensions.value_or(model.outputSize()));
  if (model.outputsHiddenStates() && params.normalize) {
    double squares = 0;
    for (float value : pooled) squares += double(value) * value;
    // As torch.nn.functional.normalize: a zero vector stays zero.
    double norm = std::max(std::sqrt(squares), 1e-12);
    for (float &value : pooled) value = static_cast<float>(value / norm);
  } else if (model.outputsClassLogits() && params.activation) {
    // vLLM's classify: a softmax over the labels, a sigmoid for one label.
    if (pooled.size() == 1) {
      pooled[0] = static_cast<float>(1.0 / (1.0 + std::exp(-double(pooled[0]))));
    } else {
      float largest = *std::max_element(pooled.begin(), pooled.end());
      double sum = 0;
      for (float value : pooled) sum += std::exp(double(value) - largest);
      for (float &value : pooled)
        value = static_cast<float>(std::exp(double(value) - largest) / sum);
    }
  }
  finish(sequence);
  StepOutput output{sequence.request, sequence.sampleIndex, std::nullopt, FinishReason::Stop};
  output.pooled = std::move(pooled);
  return output;
}

void Engine::finish(Sequence &sequence) {
  scheduler.remove(&sequence);
  sequence.status = SequenceStatus::Finished;
  ++requests.at(sequence.request).numFinished;
}

std::vector<StepOutput> Engine::step() {
  std::vector<StepOutput> outputs;
  auto start = std::chrono::steady_clock::now();
  proposeDrafts();
  SchedulerOutput plan = scheduler.schedule();
  if (plan.empty()) return outputs;
  // A row of logits, or of an embedding model's hidden states.
  int64_t rowSize = model.outputSize();
  // A step of greedy sequences asks for their tokens, not the logits: a GPU
  // picks them there and brings back [seqs] ids.
  bool greedyStep = picksArgmaxOnly(plan);
  try {
    moveBlocks(plan);
    StepBatchArrays arrays = buildBatch(plan);
    if (greedyStep) {
      greedyTokens.resize(arrays.contextLens.size());
      model.stepGreedy(arrays.view(), greedyTokens.data());
    } else {
      logits.resize(arrays.contextLens.size() * static_cast<size_t>(rowSize));
      model.step(arrays.view(), logits.data());
    }
    waitForMasks();
  } catch (...) {
    dropAll();
    throw;
  }

  bool carriesPrompt = false;
  std::vector<Draw> draws;
  // Chunks with a draft, and the first of their logits rows.
  std::vector<std::pair<const ScheduledChunk *, size_t>> speculated;
  size_t nextRow = 0;
  for (const ScheduledChunk &chunk : plan.chunks) {
    size_t row = nextRow;
    nextRow += chunk.numRows();
    Sequence &sequence = *chunk.sequence;
    if (chunk.numDraft > 0) {
      speculated.push_back({&chunk, row});
      continue;
    }
    if (chunk.rowPerToken) {
      reportPromptLogprobs(chunk, logits.data() + row * rowSize, outputs);
      row += chunk.numTokens - 1; // the last row is the one sampled
    }
    int64_t promptPart =
        std::max<int64_t>(0, std::min(sequence.promptLen, chunk.start + chunk.numTokens) -
                                 chunk.start);
    counters.promptTokensComputed += promptPart;
    carriesPrompt |= promptPart > 0;
    if (!chunk.samples()) continue;
    Request &request = requests.at(sequence.request);
    if (request.options.pooling) {
      outputs.push_back(pool(request, sequence, logits.data() + row * rowSize));
      continue;
    }
    auto drawOf = [&](Sequence *sample) -> Draw {
      if (greedyStep)
        return {&request, sample, nullptr, sample->sampler.sampleArgmax(greedyTokens[row])};
      return {&request, sample, logits.data() + row * rowSize, std::nullopt};
    };
    // Forks first: the other samples draw their first token from the same row.
    size_t firstSample = request.samples.size();
    if (sequence.pendingForks > 0) forkSamples(request, sequence);
    draws.push_back(drawOf(&sequence));
    for (size_t i = firstSample; i < request.samples.size(); ++i)
      draws.push_back(drawOf(request.samples[i].get()));
  }
  drawTokens(draws);
  for (Draw &draw : draws) sampleNext(draw, outputs);
  for (const auto &[chunk, row] : speculated)
    verifyDraft(*chunk, logits.data() + row * rowSize, outputs);
  if (!nextMasks.empty()) startMasks(std::move(nextMasks));
  nextMasks.clear();
  // A request leaves when its last sample has finished.
  for (const StepOutput &output : outputs) {
    auto found = requests.find(output.request);
    if (found != requests.end() &&
        found->second.numFinished == static_cast<int32_t>(found->second.samples.size()))
      requests.erase(found);
  }

  ++counters.numSteps;
  counters.computedTokens += plan.numTokens;
  std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  if (carriesPrompt) {
    counters.prefillStepSeconds += seconds.count();
  } else {
    counters.decodeStepSeconds += seconds.count();
    counters.decodeStepTokens += plan.numTokens;
  }
  // Recomputing a preempted sequence is prefill: its cost per token is what
  // the steps that carried prompt tokens took per token.
  int64_t prefillTokens = counters.computedTokens - counters.decodeStepTokens;
  if (prefillTokens > 0)
    scheduler.setRecomputeSecondsPerToken(counters.prefillStepSeconds / double(prefillTokens));
  return outputs;
}

void Engine::moveBlocks(const SchedulerOutput &plan) {
  KvBlockPool &pool = model.kvPool();
  for (const BlockSwap &swap : plan.swapOuts) swapSpace->swapOut(pool, swap.block, swap.slot);
  for (const BlockSwap &swap : plan.swapIns) swapSpace->swapIn(pool, swap.slot, swap.block);
  counters.numBlocksSwappedOut += static_cast<int64_t>(plan.swapOuts.size());
  counters.numBlocksSwappedIn += static_cast<int64_t>(plan.swapIns.size());
  for (const BlockCopy &copy : plan.copies) pool.copyBlock(copy.from, copy.to);
}

void Engine::startMasks(std::vector<structured::GrammarMatcher *> matchers) {
  counters.grammarMasks += static_cast<int64_t>(matchers.size());
  pendingMasks = std::async(std::launch::async, [matchers = std::move(matchers)] {
    auto start = std::chrono::steady_clock::now();
    for (structured::GrammarMatcher *matcher : matchers) matcher->computeMask();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
}

void Engine::waitForMasks() {
  if (!pendingMasks.valid()) return;
  auto start = std::chrono::steady_clock::now();
  double seconds = pendingMasks.get();
  counters.grammarMaskSeconds += seconds;
  counters.grammarWaitSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Engine::dropAll() {
  // The masks' matchers go with their sequences; a failure there no longer matters.
  if (pendingMasks.valid()) {
    pendingMasks.wait();
    pendingMasks = {};
  }
  for (auto &[id, request] : requests)
    for (auto &sample : request.samples)
      if (sample->status != SequenceStatus::Finished) scheduler.remove(sample.get());
  requests.clear();
}

EngineStats Engine::stats() const {
  EngineStats stats = counters;
  stats.numPreemptions = scheduler.numPreemptions();
  stats.numSwapPreemptions = scheduler.numSwapPreemptions();
  stats.numSwapSlotsUsed = scheduler.numSwapSlotsUsed();
  stats.numSwapSlots = scheduler.numSwapSlots();
  stats.prefixCache = blocks.prefixCacheStats();
  stats.cachedPromptTokens = stats.prefixCache.hitBlocks * blocks.blockSize();
  stats.numRunning = static_cast<int64_t>(scheduler.numRunning());
  stats.numWaiting = static_cast<int64_t>(scheduler.numWaiting());
  stats.numKvBlocks = blocks.numBlocks();
  stats.numKvBlocksHeld = blocks.numHeld();
  return stats;
}

std::vector<Completion> runToCompletion(Engine &engine,
                                        const std::vector<std::vector<int32_t>> &prompts,
                                        const RequestOptions &options,
                                        const std::function<void(const StepOutput &)> &onOutput) {
  std::vector<Completion> completions(prompts.size(), Completion(options.n));
  for (size_t i = 0; i < prompts.size(); ++i) {
    try {
      engine.addRequest(i, prompts[i], options);
    } catch (...) {
      for (size_t added = 0; added < i; ++added) engine.abort(added);
      throw;
    }
  }
  while (engine.hasUnfinished()) {
    int64_t stepsBefore = engine.stats().numSteps;
    std::vector<StepOutput> outputs = engine.step();
    if (engine.stats().numSteps == stepsBefore)
      throw Error("the engine has requests but scheduled nothing (a scheduler bug)");
    for (const StepOutput &output : outputs) {
      if (output.token) completions[output.request][output.index].push_back(output.token->token);
      if (onOutput) onOutput(output);
    }
  }
  return completions;
}

} // namespace llmc::runtime
