//===- CompileFlags.cpp - the command line of `llmc compile` --------------===//
//
// The flags of `llmc compile`, read into CompileOptions for the driver
// (lib/Driver). MLIR's own --mlir-* pass-manager and timing flags are applied
// to the driver's pass manager.
//
//===----------------------------------------------------------------------===//
#include "CompileFlags.h"

#include "llmc/Driver/Compile.h"

#include "mlir/Pass/PassManager.h"

namespace cl = llvm::cl;

namespace llmc {

cl::OptionCategory compileCategory("llmc compile options");

namespace {

cl::opt<std::string> inputPath(cl::Positional, cl::desc("<model.onnx>"), cl::Required,
                               cl::cat(compileCategory));
cl::opt<EmitKind> emit(
    "emit", cl::desc("What to produce"), cl::init(EmitKind::Artifact),
    cl::values(clEnumValN(EmitKind::OnnxIR, "onnx-ir", "the imported onnx dialect IR"),
               clEnumValN(EmitKind::LlmIR, "llm-ir", "the raised llm dialect IR"),
               clEnumValN(EmitKind::StepIR, "step-ir",
                          "the paged, ragged, planned llm step (before target lowering)"),
               clEnumValN(EmitKind::Artifact, "artifact",
                          "the compiled model directory (default; needs -o DIR)"),
               clEnumValN(EmitKind::GraphIR, "graph-ir",
                          "the whole graph lowered to loops on memrefs (fixed shapes)"),
               clEnumValN(EmitKind::Graph, "graph",
                          "the whole graph as one native function: graph.so + graph.json "
                          "(fixed shapes; needs -o DIR)")),
    cl::cat(compileCategory));
cl::opt<std::string> outputPath("o", cl::desc("Output: the artifact directory, or the IR file ('-' for stdout)"),
                                cl::value_desc("path"), cl::init("-"), cl::cat(compileCategory));
cl::opt<std::string> target("target",
                            cl::desc("Where the artifact runs: cpu (the host), or cuda[:sm_XX] (an "
                                     "NVIDIA GPU; without sm_XX the GPU present, else sm_80)"),
                            cl::init("cpu"), cl::cat(compileCategory));
cl::opt<std::string> dtype("dtype",
                           cl::desc("CUDA: the storage type of weights, activations and the KV "
                                    "cache, bf16 (default) or f16. CPU: how the matmul weights "
                                    "and embedding tables are stored, f32, bf16 or f16, widened "
                                    "to f32 in registers "
                                    "(default: each in the first of f16, bf16 and f32 that holds "
                                    "all its values exactly, so a half-precision export keeps "
                                    "its own)"),
                           cl::init("bf16"), cl::cat(compileCategory));
cl::opt<int64_t> blockSize("block-size", cl::desc("Tokens per KV-cache block"), cl::init(16),
                           cl::cat(compileCategory));
cl::opt<std::string> kvCacheDtype(
    "kv-cache-dtype",
    cl::desc("CPU: the KV cache's element type: auto (the model's, default), bf16 (rounded to "
             "nearest even: 2x the tokens per byte of f32; not exact) or int8 (codes with an f32 "
             "scale per token and KV head: 3.8x the tokens per byte of f32 at head_dim 64; not "
             "exact)"),
    cl::init("auto"), cl::cat(compileCategory));
cl::opt<bool> noLatentKvCache(
    "no-latent-kv-cache",
    cl::desc("Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2): cache every head's keys "
             "and values, as the export computes them, instead of the latent and the rotary "
             "key, one row a token (the default: 85x fewer bytes a token at DeepSeek-V3's sizes, "
             "while attention over them does more arithmetic a key)"),
    cl::cat(compileCategory));
cl::opt<bool> noKvCacheGroups(
    "no-kv-cache-groups",
    cl::desc("CPU, a model whose layers have different attention windows (Gemma-2 and -3): "
             "one block table for every layer, whose blocks the local layers' windows do not "
             "give back, instead of a table per group of layers of one window (the default)"),
    cl::cat(compileCategory));
cl::opt<int64_t> maxNumBatchedTokens("max-num-batched-tokens",
                                     cl::desc("Most tokens one step carries (sizes the workspace)"),
                                     cl::init(2048), cl::cat(compileCategory));
cl::opt<int64_t> maxNumSeqs("max-num-seqs", cl::desc("Most sequences one step carries"),
                            cl::init(256), cl::cat(compileCategory));
cl::opt<int64_t> maxModelLen(
    "max-model-len",
    cl::desc("Longest sequence, prompt and output, the artifact serves (default: what the "
             "model holds). A LongRoPE export rotates with its long factors at every "
             "length when this is more than original_max_position_embeddings (optimum's "
             "from its config.json), with the short ones (exact) otherwise"),
    cl::cat(compileCategory));
cl::list<std::string> classifierFromToken(
    "classifier-from-token",
    cl::desc("Serve a causal LM as a cross-encoder (a classifier of one label, for /score, "
             "/rerank and LLM.score) whose score is its LM head's logit of this token at the "
             "prompt's last position, or with two tokens (no,yes) the second's minus the "
             "first's, as vLLM's classifier_from_token (Qwen3-Reranker: no,yes); tokens as "
             "the tokenizer spells them"),
    cl::CommaSeparated, cl::value_desc("token[,token]"), cl::cat(compileCategory));
cl::opt<std::string> matryoshkaDimensions(
    "matryoshka-dimensions",
    cl::desc("An embedding model trained with Matryoshka representation learning "
             "(Qwen3-Embedding): requests may ask for its embeddings' leading features only "
             "(`dimensions`): 'any' width, or these (64,128,256); in place of config.json's "
             "is_matryoshka and matryoshka_dimensions"),
    cl::value_desc("any|widths"), cl::cat(compileCategory));
cl::opt<bool> enableLora(
    "enable-lora",
    cl::desc("CPU: serve LoRA adapters (PEFT's) chosen per request, as vLLM's --enable-lora: "
             "each linear layer of the decoder layers adds the product of its request's "
             "adapter (an optimum or TorchScript export, whose nodes carry module paths)"),
    cl::cat(compileCategory));
cl::opt<std::string> matmul("matmul", cl::desc("CPU matrix products: blas or generated"),
                            cl::init("generated"), cl::cat(compileCategory));
cl::opt<bool> int8Activations(
    "int8-activations",
    cl::desc("CPU: multiply quantised weights by activations quantised to int8 per block "
             "(integer products, as llama.cpp; not exact) instead of the exact f32 product. "
             "Default: as the file asks (MatMulNBits' accuracy_level 4, the genai builder's "
             "int4 models), where the host has the instructions; =false keeps the exact one"),
    cl::cat(compileCategory));
cl::opt<std::string> int8Products(
    "int8-products",
    cl::desc("With --int8-activations, the instructions: auto (AVX512-VNNI where the host has "
             "it, else AVX2), avx512-vnni or avx2; all give the same sums"),
    cl::init("auto"), cl::cat(compileCategory));
cl::opt<bool> bf16Activations(
    "bf16-activations",
    cl::desc("CPU, with --dtype bf16: multiply the bf16 weights by activations rounded to bf16 "
             "(AVX512_BF16 pair products, f32 sums; not exact) instead of widening the weights"),
    cl::cat(compileCategory));
cl::opt<std::string> bf16Products(
    "bf16-products",
    cl::desc("With --bf16-activations, the instructions: auto (AMX tiles where the host has "
             "AMX-BF16 and Linux grants the tile state, else AVX512_BF16), amx or avx512-bf16; "
             "with amx, paged attention multiplies on the tiles too"),
    cl::init("auto"), cl::cat(compileCategory));
cl::opt<bool> summary("summary", cl::desc("Print a per-layer op summary (to stderr when the IR goes to stdout)"),
                      cl::cat(compileCategory));
cl::opt<bool> keepWeights("keep-weights",
                          cl::desc("Print the weight blobs with the IR (left out by default)"),
                          cl::cat(compileCategory));
cl::opt<bool> allowLeftovers("allow-leftovers",
                             cl::desc("Keep onnx ops that raising did not handle instead of failing"),
                             cl::cat(compileCategory));
cl::opt<bool> quiet("quiet", cl::desc("No progress output"), cl::cat(compileCategory));
cl::opt<bool> noKernelCache(
    "no-kernel-cache",
    cl::desc("CPU: compile every kernel, neither reading nor filling the kernel cache "
             "($LLMC_CACHE_DIR/kernels, else $XDG_CACHE_HOME/llmc/kernels, else "
             "~/.cache/llmc/kernels)"),
    cl::cat(compileCategory));
// -O0 .. -O3, as LLVM's tools spell it (cl::Prefix: the level is glued to -O).
cl::opt<unsigned> optLevel("O",
                           cl::desc("Fusion level: -O0 none, -O1 horizontal linears, rope + KV "
                                    "write and logits rows, -O2 (default) + residual norms, GEMM "
                                    "epilogues and elementwise chains, -O3 + elementwise "
                                    "producers recomputed in each consumer"),
                           cl::Prefix, cl::init(2), cl::value_desc("level"),
                           cl::cat(compileCategory));
cl::list<std::string> passPlugins(
    "load-pass-plugin",
    cl::desc("Load the passes of a plugin library (repeatable); they can then be named in "
             "--insert-passes and --pass-pipeline"),
    cl::value_desc("path"), cl::cat(compileCategory));
cl::list<std::string> insertPasses(
    "insert-passes",
    cl::desc("Run a pass pipeline at an extension point of the default pipeline (repeatable): "
             "POINT is after-raising, before-fusion or before-lowering; PIPELINE is textual, as "
             "--pass-pipeline takes it but without builtin.module(...), e.g. "
             "before-lowering=func.func(my-pass),canonicalize"),
    cl::value_desc("point=pipeline"), cl::cat(compileCategory));
cl::opt<std::string> passPipeline(
    "pass-pipeline",
    cl::desc("Run this pipeline instead of the default one, as mlir-opt does: "
             "builtin.module(...) text over the imported module, with llmc's passes and "
             "pipelines (llmc-raise, llmc-step{opt-level=N}, llmc-fuse{opt-level=N}, "
             "llm-lower-to-cpu) and the plugins'. For --emit=artifact it must end with "
             "llm-lower-to-cpu"),
    cl::value_desc("pipeline"), cl::cat(compileCategory));
cl::opt<bool> json("json", cl::desc("Print the summary and the fusion report as JSON"),
                   cl::cat(compileCategory));
cl::opt<bool> dumpFusionReport(
    "dump-fusion-report",
    cl::desc("Print, per layer kind, the kernels and the activation bytes per decode token of "
             "the step at -O0 and at the chosen -O level (to stderr when the IR goes to stdout)"),
    cl::cat(compileCategory));


/// An option's value when it was given on the command line.
template <typename T, typename Option> std::optional<T> given(const Option &option) {
  if (!option.getNumOccurrences()) return std::nullopt;
  return T(option.getValue());
}

} // namespace

int runCompileCommand() {
  CompileOptions options;
  options.inputPath = inputPath;
  options.emit = emit;
  options.outputPath = outputPath;
  options.target = target;
  options.dtype = given<std::string>(dtype);
  options.blockSize = blockSize;
  options.kvCacheDtype = kvCacheDtype;
  options.latentKvCache = !noLatentKvCache;
  options.kvCacheGroups = !noKvCacheGroups;
  options.maxNumBatchedTokens = maxNumBatchedTokens;
  options.maxNumSeqs = maxNumSeqs;
  options.maxModelLen = given<int64_t>(maxModelLen);
  options.classifierFromTokens = classifierFromToken;
  options.matryoshkaDimensions = given<std::string>(matryoshkaDimensions);
  options.enableLora = enableLora;
  options.matmul = matmul;
  options.int8Activations = given<bool>(int8Activations);
  options.int8Products = int8Products;
  options.bf16Activations = bf16Activations;
  options.bf16Products = bf16Products;
  options.optLevel = given<unsigned>(optLevel);
  options.passPlugins = passPlugins;
  options.insertPasses = insertPasses;
  options.passPipeline = given<std::string>(passPipeline);
  options.allowLeftovers = allowLeftovers;
  options.summary = summary;
  options.json = json;
  options.dumpFusionReport = dumpFusionReport;
  options.keepWeights = keepWeights;
  options.quiet = quiet;
  options.kernelCache = !noKernelCache;
  options.configurePassManager = mlir::applyPassManagerCLOptions;
  return runCompile(options);
}

} // namespace llmc
