//===- CudaExecutor.cpp - load a cuda artifact, run its steps on the GPU --===//
#include "runtime/cuda/CudaExecutor.h"

#include "llmc/Runtime/StepPlanSchema.h"
#include "runtime/core/Error.h"
#include "runtime/cuda/CublasLt.h"
#include "runtime/cuda/CudaGemm.h"
#include "runtime/cuda/StepInputs.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <vector>

namespace llmc::runtime::cuda {
namespace {
/// Dynamic shared memory a kernel gets without opting in.
constexpr int64_t kDefaultSharedBytes = 48 << 10;

/// The compute capability an "sm_XY[a]" architecture names, as 10 X + Y.
int computeCapability(const std::string &arch) {
  std::string digits = arch.substr(3);
  while (!digits.empty() && !std::isdigit(static_cast<unsigned char>(digits.back())))
    digits.pop_back();
  return std::stoi(digits);
}

/// "sm_90a": code for exactly that GPU, which neither runs nor JIT-compiles
/// elsewhere.
bool isArchSpecific(const std::string &arch) { return arch.back() == 'a'; }

/// step_plan.json, parsed and checked against the artifact's files: every
/// module the plan launches from has its PTX or its cubin.
StepPlan parsePlan(const Artifact &artifact) {
  const std::map<std::string, std::string> &files = artifact.deviceFiles();
  StepPlan plan = parseStepPlan(files.at("step_plan.json"), *parseDType(artifact.target().dtype));
  for (Module module : {Module::Kernels, Module::Attention}) {
    std::string stem = moduleName(module);
    if (plan.launchesFrom(module) && !files.count(stem + ".ptx") && !files.count(stem + ".cubin"))
      throw Error("step_plan.json launches kernels of " + stem + ", but the artifact has neither " +
                  stem + ".ptx nor " + stem + ".cubin");
  }
  return plan;
}

/// The first GPU the driver sees (CUDA_VISIBLE_DEVICES decides which that
/// is), refused when it is older than the artifact's architecture.
CudaExecutor::Gpu firstGpu(const CudaDriver &driver, const std::string &arch) {
  CUresult started = driver.cuInit(0);
  if (started == CUDA_ERROR_NO_DEVICE)
    throw Error("no CUDA device (cuInit: " + driver.describe(started) + ")");
  driver.check(started, "the NVIDIA driver does not start (cuInit)");
  int count = 0;
  driver.check(driver.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count < 1) throw Error("no CUDA device (the driver sees none; see CUDA_VISIBLE_DEVICES)");
  CudaExecutor::Gpu gpu;
  driver.check(driver.cuDeviceGet(&gpu.device, 0), "cuDeviceGet");
  char name[256] = {};
  driver.check(driver.cuDeviceGetName(name, sizeof(name) - 1, gpu.device), "cuDeviceGetName");
  gpu.name = name;
  int major = 0, minor = 0;
  for (auto [attribute, value] :
       {std::make_pair(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major),
        std::make_pair(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor)})
    driver.check(driver.cuDeviceGetAttribute(value, attribute, gpu.device), "cuDeviceGetAttribute");
  gpu.computeCapability = 10 * major + minor;

  int target = computeCapability(arch);
  if (gpu.computeCapability < target || (isArchSpecific(arch) && gpu.computeCapability != target))
    throw Error("compiled for " + arch + ", which " + gpu.name + " (" + gpu.arch() +
                ") cannot run: recompile with --target cuda:" + gpu.arch());
  return gpu;
}

Owned<CUdeviceptr> allocateDevice(const CudaDriver &driver, int64_t bytes,
                                  const std::string &what) {
  if (bytes == 0) return {};
  CUdeviceptr address = 0;
  CUresult result = driver.cuMemAlloc(&address, static_cast<size_t>(bytes));
  if (result != CUDA_SUCCESS)
    throw Error("cannot allocate " + mebibytes(bytes) + " of GPU memory for " + what + ": " +
                driver.describe(result));
  return Owned<CUdeviceptr>(address, driver.cuMemFree);
}

/// Page-locked host memory, which the GPU copies to and from asynchronously.
Owned<void *> allocatePinned(const CudaDriver &driver, int64_t bytes, const std::string &what) {
  void *memory = nullptr;
  CUresult result = driver.cuMemHostAlloc(&memory, static_cast<size_t>(bytes), 0);
  if (result != CUDA_SUCCESS)
    throw Error("cannot allocate " + mebibytes(bytes) + " of pinned host memory for " + what +
                ": " + driver.describe(result));
  return Owned<void *>(memory, driver.cuMemFreeHost);
}

/// Loads a PTX or cubin image; the driver JIT-compiles PTX for the GPU.
Owned<CUmodule> loadModule(const CudaDriver &driver, const std::string &image,
                           const std::string &file) {
  std::vector<char> log(8192, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(log.size() - 1))};
  CUmodule module = nullptr;
  // c_str(): PTX must end in a NUL, which a cubin does not mind.
  CUresult result = driver.cuModuleLoadDataEx(&module, image.c_str(), 2, options, values);
  if (result == CUDA_SUCCESS) return Owned<CUmodule>(module, driver.cuModuleUnload);
  std::string message = file + ": the driver cannot load it: " + driver.describe(result);
  std::string firstLine(log.data(), std::strcspn(log.data(), "\n"));
  if (!firstLine.empty()) message += " (" + firstLine + ")";
  if (result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    message += "; the NVIDIA driver is older than the CUDA toolkit that compiled the artifact: "
               "update the driver";
  throw Error(message);
}

/// A grid or block extent of a launch, checked to be one cuLaunchKernel takes
/// (or, for a grid, 0: no blocks, so the launch is skipped).
unsigned launchExtent(const Dim &dim, const SymbolValues &symbols, const std::string &where,
                      bool mayBeEmpty = false) {
  int64_t value = dim.resolve(symbols);
  if (value < (mayBeEmpty ? 0 : 1) || value > std::numeric_limits<int32_t>::max())
    throw Error(where + ": a grid or block extent of " + str(value) + " cannot be launched");
  return static_cast<unsigned>(value);
}
} // namespace

/// Everything the model holds on the device, in the order it is made; the
/// members are released in reverse: graphs before the modules whose kernels
/// they launch, buffers before the stream.
struct CudaExecutor::DeviceState {
  DeviceState(const CudaExecutor &executor, int64_t maxModelLen, const KvCacheSizer &sizeKvCache);

  Owned<CUstream> stream;
  std::vector<Owned<CUmodule>> modules;
  /// Per plan step, the kernel it launches (null for a gemm).
  std::vector<CUfunction> functions;
  Owned<CUdeviceptr> weights, workspace, logits, gemmWorkspace;
  Owned<void *> hostLogits;
  /// The argmax kernel and the greedy tokens it writes, device and host;
  /// null where the attention module has no such kernel.
  CUfunction argmax = nullptr;
  Owned<CUdeviceptr> tokens;
  Owned<void *> hostTokens;
  KvCacheShape kvShape;
  Owned<CUdeviceptr> kvPool;
  std::optional<StepInputLayout> inputLayout;
  Owned<CUdeviceptr> inputs;
  Owned<void *> staging;
  PerBuffer<uint64_t> addresses{};
  std::unique_ptr<CudaGemms> gemms;
  /// The batch sizes decode steps are padded to; empty with LLMC_CUDA_GRAPHS=0.
  std::vector<int64_t> graphSizes;
  std::map<int64_t, Owned<CUgraphExec>> graphs;
};

CudaExecutor::DeviceState::DeviceState(const CudaExecutor &executor, int64_t maxModelLen,
                                        const KvCacheSizer &sizeKvCache) {
  const CudaDriver &driver = executor.driver;
  const Artifact &artifact = executor.artifact;
  const StepPlan &plan = executor.plan;
  const ModelConfig &config = artifact.model();
  const StepConfig &limits = artifact.step();

  int driverVersion = 0;
  driver.check(driver.cuDriverGetVersion(&driverVersion), "cuDriverGetVersion");
  // Loaded before anything is allocated: without cuBLASLt nothing runs.
  const CublasLt &cublasLt = CublasLt::get(driverVersion / 1000);

  CUstream createdStream = nullptr;
  driver.check(driver.cuStreamCreate(&createdStream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  stream = Owned<CUstream>(createdStream, driver.cuStreamDestroy);

  // The cubin where it was built for this GPU, the PTX otherwise.
  const Gpu &gpu = executor.gpu;
  bool exactArch = gpu.computeCapability == computeCapability(artifact.target().arch);
  const std::map<std::string, std::string> &files = artifact.deviceFiles();
  std::map<Module, CUmodule> loaded;
  for (Module module : {Module::Kernels, Module::Attention}) {
    if (!plan.launchesFrom(module)) continue;
    std::string stem = moduleName(module);
    std::string file = stem + (exactArch && files.count(stem + ".cubin") ? ".cubin" : ".ptx");
    if (!files.count(file))
      throw Error("the artifact has " + stem + ".cubin for " + artifact.target().arch + " but no " +
                  stem + ".ptx to compile for " + gpu.name + " (" + gpu.arch() +
                  "): recompile with --target cuda:" + gpu.arch());
    modules.push_back(loadModule(driver, files.at(file), file));
    loaded[module] = modules.back().get();
  }

  // Every kernel resolved now, and opted in to the shared memory it asks for.
  std::map<std::pair<Module, std::string>, CUfunction> kernels;
  std::map<CUfunction, int64_t> sharedBytes;
  functions.assign(plan.steps.size(), nullptr);
  for (size_t index = 0; index < plan.steps.size(); ++index) {
    const auto *launch = std::get_if<LaunchStep>(&plan.steps[index].op);
    if (!launch) continue;
    auto key = std::make_pair(launch->module, launch->kernel);
    auto found = kernels.find(key);
    if (found == kernels.end()) {
      CUfunction function = nullptr;
      CUresult result =
          driver.cuModuleGetFunction(&function, loaded.at(launch->module), launch->kernel.c_str());
      if (result != CUDA_SUCCESS)
        throw Error("step_plan.json: " + plan.steps[index].where + ": kernel " + launch->kernel +
                    " is not in the " + moduleName(launch->module) +
                    " module: " + driver.describe(result));
      found = kernels.emplace(key, function).first;
    }
    functions[index] = found->second;
    int64_t &shared = sharedBytes[found->second];
    shared = std::max(shared, launch->sharedBytes);
  }
  // Kernels the runtime launches outside the plan; an artifact compiled before
  // one existed runs without it.
  auto attentionKernel = [&](const char *name) -> CUfunction {
    if (!loaded.count(Module::Attention)) return nullptr;
    CUfunction function = nullptr;
    CUresult result = driver.cuModuleGetFunction(&function, loaded.at(Module::Attention), name);
    if (result == CUDA_ERROR_NOT_FOUND) return nullptr;
    driver.check(result, std::string("the attention module's ") + name);
    return function;
  };
  argmax = attentionKernel(stepplan::kArgmaxKernel);
  DType storageDtype = *parseDType(artifact.target().dtype);
  // LLMC_CUDA_GEMV=1 runs decode steps' gemms on the GEMV kernel: opt-in until
  // it has been measured faster than cuBLASLt on a GPU (docs/cuda.md).
  const char *useGemv = std::getenv("LLMC_CUDA_GEMV");
  CUfunction gemv =
      useGemv && std::string(useGemv) == "1" ? attentionKernel(stepplan::kGemvKernel) : nullptr;
  for (const auto &[key, function] : kernels) {
    int64_t shared = sharedBytes[function];
    if (shared <= kDefaultSharedBytes) continue;
    CUresult result = driver.cuFuncSetAttribute(
        function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(shared));
    if (result != CUDA_SUCCESS)
      throw Error(
          "kernel " + key.second + " asks for " + str(shared) +
          " bytes of shared memory, which this GPU does not give: " + driver.describe(result));
  }

  // The weights, copied once; the workspace, zeroed so that no step reads NaN
  // garbage through a padded row.
  int64_t weightsBytes = static_cast<int64_t>(artifact.weightsBytes());
  weights = allocateDevice(driver, weightsBytes, "the weights");
  if (weightsBytes > 0)
    driver.check(driver.cuMemcpyHtoD(weights.get(), artifact.weights(), artifact.weightsBytes()),
                 "copying the weights to the GPU (cuMemcpyHtoD)");
  int64_t workspaceBytes = plan.workspaceAllocationBytes();
  workspace = allocateDevice(driver, workspaceBytes, "the step's workspace");
  if (workspaceBytes > 0)
    driver.check(driver.cuMemsetD8(workspace.get(), 0, size_t(workspaceBytes)), "cuMemsetD8");
  int64_t logitsBytes = limits.maxNumSeqs * config.vocabSize * int64_t(sizeof(float));
  logits = allocateDevice(driver, logitsBytes, "the logits");
  hostLogits = allocatePinned(driver, logitsBytes, "the logits");
  if (argmax) {
    int64_t tokensBytes = limits.maxNumSeqs * int64_t(sizeof(int32_t));
    tokens = allocateDevice(driver, tokensBytes, "the greedy tokens");
    hostTokens = allocatePinned(driver, tokensBytes, "the greedy tokens");
  }
  gemmWorkspace = allocateDevice(driver, CudaGemms::kWorkspaceBytes, "cuBLASLt's workspace");

  // The KV pool takes its share of what is left.
  size_t freeBytes = 0, totalBytes = 0;
  driver.check(driver.cuMemGetInfo(&freeBytes, &totalBytes), "cuMemGetInfo");
  kvShape = sizeKvCache(static_cast<int64_t>(freeBytes), gpu.name);
  kvPool = allocateDevice(driver, kvShape.numBytes(),
                          "the KV cache (" + str(kvShape.numBlocks) +
                              " blocks; ask for fewer with --kv-blocks, --kv-cache-memory or "
                              "--memory-fraction)");
  // Zeroed like the CPU's: attention never weighs garbage that might be NaN.
  driver.check(driver.cuMemsetD8(kvPool.get(), 0, size_t(kvShape.numBytes())), "cuMemsetD8");

  // The step inputs, their block tables as wide as the longest sequence
  // needs: they are copied every step, and a graph bakes their width in.
  int64_t longest = maxModelLen ? maxModelLen : config.maxPositions;
  int64_t tableWidth = kvShape.numBlocks;
  if (longest > 0) tableWidth = std::min(tableWidth, blocksFor(longest, kvShape.blockSize));
  inputLayout.emplace(limits.maxNumBatchedTokens, limits.maxNumSeqs, tableWidth, kvShape.blockSize);
  inputs = allocateDevice(driver, inputLayout->totalBytes(), "the step's inputs");
  staging = allocatePinned(driver, inputLayout->totalBytes(), "the step's inputs");

  PerBuffer<int64_t> sizes{};
  auto place = [&](Buffer buffer, uint64_t address, int64_t bytes) {
    at(addresses, buffer) = address;
    at(sizes, buffer) = bytes;
  };
  place(Buffer::Weights, weights.get(), weightsBytes);
  place(Buffer::Workspace, workspace.get(), workspaceBytes);
  place(Buffer::KvPool, kvPool.get(), kvShape.numBytes());
  place(Buffer::Logits, logits.get(), logitsBytes);
  for (Buffer buffer : {Buffer::Tokens, Buffer::Positions, Buffer::CuSeqlensQ, Buffer::ContextLens,
                        Buffer::BlockTables, Buffer::SlotMapping, Buffer::LogitsIndices})
    place(buffer, inputs.get() + uint64_t(inputLayout->offset(buffer)),
          inputLayout->capacity(buffer));
  checkLocations(plan, sizes);

  SymbolValues largest;
  largest.tokens = limits.maxNumBatchedTokens;
  largest.seqs = limits.maxNumSeqs;
  largest.maxQueryLen = limits.maxNumBatchedTokens;
  largest.blockTableWidth = tableWidth;
  largest.numBlocks = kvShape.numBlocks;
  gemms = std::make_unique<CudaGemms>(driver, cublasLt, plan, storageDtype, addresses,
                                      gemmWorkspace.get(), largest, gemv);

  const char *useGraphs = std::getenv("LLMC_CUDA_GRAPHS");
  if (!(useGraphs && std::string(useGraphs) == "0"))
    graphSizes = graphBatchSizes(limits.maxNumSeqs, limits.maxNumBatchedTokens);
}

CudaExecutor::CudaExecutor(const Artifact &artifact, int64_t maxModelLen, const KvCacheSizer &sizeKvCache)
    : artifact(artifact), plan(parsePlan(artifact)), driver(CudaDriver::get()),
      gpu(firstGpu(driver, artifact.target().arch)), context(driver, gpu.device) {
  ScopedContext current(driver, context.get());
  // Nothing after this: a failure in it releases what it made while the
  // context is still current.
  state = std::make_unique<DeviceState>(*this, maxModelLen, sizeKvCache);
  pool = std::make_unique<KvBlockPool>(state->kvShape, kvStorage);
}

CudaExecutor::~CudaExecutor() {
  // Not ScopedContext, which throws: a destructor must not.
  if (driver.cuCtxPushCurrent(context.get()) != CUDA_SUCCESS) return;
  driver.cuStreamSynchronize(state->stream.get());
  state.reset();
  CUcontext popped = nullptr;
  driver.cuCtxPopCurrent(&popped);
}

int64_t CudaExecutor::maxSequenceLength() const {
  return state->inputLayout->blockTableWidth() * state->kvShape.blockSize;
}

void CudaExecutor::copyKvBytes(int64_t from, int64_t to, int64_t bytes) {
  ScopedContext current(driver, context.get());
  CUdeviceptr pool = state->kvPool.get();
  driver.check(driver.cuMemcpyDtoDAsync(pool + uint64_t(to), pool + uint64_t(from),
                                        static_cast<size_t>(bytes), state->stream.get()),
               "copying a KV block on the GPU (cuMemcpyDtoDAsync)");
}

void CudaExecutor::copyKvToHost(int64_t from, void *host, int64_t bytes) {
  ScopedContext current(driver, context.get());
  CUstream stream = state->stream.get();
  driver.check(driver.cuMemcpyDtoHAsync(host, state->kvPool.get() + uint64_t(from),
                                        static_cast<size_t>(bytes), stream),
               "swapping a KV block out of the GPU (cuMemcpyDtoHAsync)");
  driver.check(driver.cuStreamSynchronize(stream), "swapping a KV block out of the GPU");
}

void CudaExecutor::copyKvFromHost(const void *host, int64_t to, int64_t bytes) {
  ScopedContext current(driver, context.get());
  driver.check(driver.cuMemcpyHtoDAsync(state->kvPool.get() + uint64_t(to), host,
                                        static_cast<size_t>(bytes), state->stream.get()),
               "swapping a KV block into the GPU (cuMemcpyHtoDAsync)");
}

void CudaExecutor::runPlan(const SymbolValues &symbols) {
  DeviceState &device = *state;
  CUstream stream = device.stream.get();
  for (size_t index = 0; index < plan.steps.size(); ++index) {
    const PlanStep &step = plan.steps[index];
    const auto *launch = std::get_if<LaunchStep>(&step.op);
    if (!launch) {
      device.gemms->run(index, symbols, stream);
      continue;
    }
    const std::string &where = step.where;
    std::array<unsigned, 3> grid;
    for (size_t i = 0; i < grid.size(); ++i)
      grid[i] = launchExtent(launch->grid[i], symbols, where, /*mayBeEmpty=*/true);
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0) continue; // no blocks this step
    KernelParams params(launch->args, symbols, device.addresses);
    CUresult result = driver.cuLaunchKernel(
        device.functions[index], grid[0], grid[1], grid[2],
        launchExtent(launch->block[0], symbols, where),
        launchExtent(launch->block[1], symbols, where),
        launchExtent(launch->block[2], symbols, where), static_cast<unsigned>(launch->sharedBytes),
        stream, params.pointers(), nullptr);
    if (result != CUDA_SUCCESS)
      driver.check(result, step.where + " (" + launch->kernel + "): cuLaunchKernel");
  }
}

void CudaExecutor::captureGraph(int64_t batchSize, const SymbolValues &symbols) {
  std::string what = "capturing the CUDA graph of a decode step of " + str(batchSize) +
                     " sequences (LLMC_CUDA_GRAPHS=0 runs without graphs)";
  CUstream stream = state->stream.get();
  driver.check(driver.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
               what + ": cuStreamBeginCapture");
  // A failure leaves the stream capturing; end the capture before reporting it.
  auto abandonCapture = [&] {
    CUgraph partial = nullptr;
    driver.cuStreamEndCapture(stream, &partial);
    if (partial) driver.cuGraphDestroy(partial);
  };
  try {
    runPlan(symbols);
  } catch (const Error &error) {
    abandonCapture();
    throw Error(what + ": " + error.what());
  } catch (...) {
    abandonCapture();
    throw;
  }
  CUgraph graph = nullptr;
  driver.check(driver.cuStreamEndCapture(stream, &graph), what + ": cuStreamEndCapture");
  CUgraphExec executable = nullptr;
  CUresult instantiated = driver.cuGraphInstantiate(&executable, graph, 0);
  driver.cuGraphDestroy(graph);
  driver.check(instantiated, what + ": cuGraphInstantiate");
  state->graphs.emplace(batchSize, Owned<CUgraphExec>(executable, driver.cuGraphExecDestroy));
}

void CudaExecutor::enqueueStep(const StepBatch &batch) {
  DeviceState &device = *state;
  CUstream stream = device.stream.get();

  int64_t graphSize = device.graphSizes.empty() ? 0 : graphBatchSizeFor(batch, device.graphSizes);
  PackedStepInputs packed =
      packStepInputs(batch, graphSize, *device.inputLayout, device.staging.get());
  // Into the buffers a graph's kernels read, before the graph runs.
  driver.check(driver.cuMemcpyHtoDAsync(device.inputs.get(), device.staging.get(),
                                        static_cast<size_t>(packed.bytes), stream),
               "copying the step's inputs to the GPU (cuMemcpyHtoDAsync)");

  SymbolValues symbols;
  symbols.tokens = packed.numTokens;
  symbols.seqs = packed.numSeqs;
  symbols.maxQueryLen = packed.maxQueryLen;
  symbols.blockTableWidth = device.inputLayout->blockTableWidth();
  symbols.numBlocks = device.kvShape.numBlocks;
  auto graph = device.graphs.find(graphSize);
  if (graph != device.graphs.end()) {
    driver.check(driver.cuGraphLaunch(graph->second.get(), stream), "cuGraphLaunch");
  } else {
    runPlan(symbols);
    // The first step of a graph size runs as it is, which also loads every
    // kernel it launches (cuBLASLt's and lazily loaded modules' must not
    // load during a capture); the capture, which runs nothing, serves the
    // steps after it.
    if (graphSize > 0) captureGraph(graphSize, symbols);
  }
}

void CudaExecutor::step(const StepBatch &batch, float *logits) {
  ScopedContext current(driver, context.get());
  enqueueStep(batch);
  DeviceState &device = *state;
  CUstream stream = device.stream.get();
  // The real sequences' rows only: a padded graph's dummies come after them.
  size_t logitsBytes =
      static_cast<size_t>(batch.numSeqs * artifact.model().vocabSize) * sizeof(float);
  driver.check(
      driver.cuMemcpyDtoHAsync(device.hostLogits.get(), device.logits.get(), logitsBytes, stream),
      "copying the logits from the GPU (cuMemcpyDtoHAsync)");
  driver.check(driver.cuStreamSynchronize(stream), "running the step on the GPU");
  std::memcpy(logits, device.hostLogits.get(), logitsBytes);
}

bool CudaExecutor::greedyOnDevice() const { return state->argmax != nullptr; }

void CudaExecutor::stepGreedy(const StepBatch &batch, int64_t vocabSize, int32_t *tokens) {
  if (!greedyOnDevice()) {
    StepExecutor::stepGreedy(batch, vocabSize, tokens);
    return;
  }
  ScopedContext current(driver, context.get());
  enqueueStep(batch);
  DeviceState &device = *state;
  CUstream stream = device.stream.get();
  // The logits rows of the real sequences, one block each.
  CUdeviceptr logits = device.logits.get(), out = device.tokens.get();
  int vocab = static_cast<int>(vocabSize);
  void *params[] = {&logits, &vocab, &out};
  driver.check(driver.cuLaunchKernel(device.argmax, static_cast<unsigned>(batch.numSeqs), 1, 1,
                                     stepplan::kArgmaxThreads, 1, 1, 0, stream, params, nullptr),
               std::string(stepplan::kArgmaxKernel) + ": cuLaunchKernel");
  size_t tokensBytes = static_cast<size_t>(batch.numSeqs) * sizeof(int32_t);
  driver.check(driver.cuMemcpyDtoHAsync(device.hostTokens.get(), out, tokensBytes, stream),
               "copying the greedy tokens from the GPU (cuMemcpyDtoHAsync)");
  driver.check(driver.cuStreamSynchronize(stream), "running the step on the GPU");
  std::memcpy(tokens, device.hostTokens.get(), tokensBytes);
}

} // namespace llmc::runtime::cuda
