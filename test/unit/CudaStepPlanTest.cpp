//===- CudaStepPlanTest.cpp - step_plan.json: parsing, dims, parameters ---===//
#include "runtime/core/Error.h"
#include "runtime/cuda/StepPlan.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>

using namespace llmc::runtime;
using namespace llmc::runtime::cuda;
using nlohmann::json;

namespace {
/// The plan of docs/cuda.md: an RMS norm launch and a GEMM with a bias.
json docsPlan() {
  return json::parse(R"({
    "format_version": 1, "workspace_bytes": 123456, "scratch_bytes": 4096,
    "steps": [
      {"op": "launch", "module": "kernels", "kernel": "rms_norm_0",
       "grid": [["tokens", 1, 1], 1, 1], "block": [256, 1, 1], "shared_bytes": 0,
       "args": [{"index": "tokens"},
                {"memref": {"buffer": "workspace", "offset": 0},
                 "sizes": ["tokens", 576], "strides": [576, 1]},
                {"ptr": {"buffer": "weights", "offset": 64}},
                {"i32": 16}]},
      {"op": "gemm", "m": "tokens", "n": 1536, "k": 576,
       "a": {"buffer": "workspace", "offset": 0}, "lda": 576,
       "b": {"buffer": "weights", "offset": 4096}, "ldb": 576, "b_layout": "nk",
       "d": {"buffer": "workspace", "offset": 8192}, "ldd": 1536, "d_dtype": "bf16",
       "bias": {"buffer": "weights", "offset": 128},
       "c": null, "beta": 0}
    ]})");
}

std::string parseError(const json &plan) {
  try {
    parseStepPlan(plan.dump(), DType::BF16);
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

#define EXPECT_PLAN_ERROR(plan, fragment)                                                          \
  do {                                                                                             \
    std::string message = parseError(plan);                                                        \
    EXPECT_NE(message.find(fragment), std::string::npos) << "message: " << message;                \
  } while (false)

template <typename T> T valueAt(const KernelParams &params, size_t index) {
  T value;
  std::memcpy(&value, params.bytes() + params.offsets()[index], sizeof(T));
  EXPECT_EQ(
      params.bytes() + params.offsets()[index],
      static_cast<const unsigned char *>(const_cast<KernelParams &>(params).pointers()[index]));
  return value;
}

TEST(CudaStepPlan, ParsesTheDocumentedExample) {
  StepPlan plan = parseStepPlan(docsPlan().dump(), DType::BF16);
  EXPECT_EQ(plan.workspaceBytes, 123456);
  EXPECT_EQ(plan.scratchBytes, 4096);
  EXPECT_EQ(plan.workspaceAllocationBytes(), 123648 + 4096);
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_TRUE(plan.launchesFrom(Module::Kernels));
  EXPECT_FALSE(plan.launchesFrom(Module::Attention));

  const auto &launch = std::get<LaunchStep>(plan.steps[0].op);
  EXPECT_EQ(launch.kernel, "rms_norm_0");
  EXPECT_EQ(launch.module, Module::Kernels);
  EXPECT_EQ(launch.grid[0].symbol, Symbol::Tokens);
  EXPECT_EQ(launch.block[0].constant, 256);
  ASSERT_EQ(launch.args.size(), 4u);
  EXPECT_EQ(launch.args[1].kind, KernelArg::Kind::Memref);
  EXPECT_EQ(launch.args[1].location.buffer, Buffer::Workspace);
  EXPECT_EQ(launch.args[1].sizes.size(), 2u);
  EXPECT_EQ(launch.args[2].location.offset, 64);

  const auto &gemm = std::get<GemmStep>(plan.steps[1].op);
  EXPECT_EQ(gemm.m.symbol, Symbol::Tokens);
  EXPECT_EQ(gemm.n, 1536);
  EXPECT_EQ(gemm.k, 576);
  EXPECT_TRUE(gemm.bIsNByK);
  EXPECT_EQ(gemm.dDtype, DType::BF16);
  ASSERT_TRUE(gemm.bias.has_value());
  EXPECT_EQ(gemm.bias->offset, 128);
  EXPECT_FALSE(gemm.c.has_value());
  EXPECT_EQ(gemm.beta, 0.0f);
}

TEST(CudaStepPlan, ResolvesDimensions) {
  SymbolValues values;
  values.tokens = 10;
  values.seqs = 3;
  values.maxQueryLen = 7;
  values.blockTableWidth = 5;
  values.numBlocks = 100;
  auto dim = [](const char *text) { return json::parse(text); };
  json plan = docsPlan();
  const char *cases[][2] = {{"42", "42"},
                            {"\"tokens\"", "10"},
                            {"\"seqs\"", "3"},
                            {"\"max_q_len\"", "7"},
                            {"\"block_table_width\"", "5"},
                            {"\"num_blocks\"", "100"},
                            {"[\"tokens\", 1, 4]", "3"},  // ceil(10 / 4)
                            {"[\"tokens\", 3, 2]", "15"}, // 10 * 3 / 2
                            {"[\"max_q_len\", 1, 64]", "1"},
                            {"[\"tokens\", 4, 16, 8]", "11"}, // ceil(40 / 16) + 8
                            {"\"prefill_tokens\"", "10"}}; // max_q_len > 1
  for (const auto &[text, expected] : cases) {
    plan["steps"][0]["args"][0] = {{"index", dim(text)}};
    StepPlan parsed = parseStepPlan(plan.dump(), DType::BF16);
    const auto &launch = std::get<LaunchStep>(parsed.steps[0].op);
    EXPECT_EQ(launch.args[0].value.resolve(values), std::stoll(expected)) << text;
  }
  // A decode step (every query one token long) has no prefill tokens.
  values.maxQueryLen = 1;
  values.tokens = values.seqs = 3;
  plan["steps"][0]["args"][0] = {{"index", "prefill_tokens"}};
  StepPlan decode = parseStepPlan(plan.dump(), DType::BF16);
  EXPECT_EQ(std::get<LaunchStep>(decode.steps[0].op).args[0].value.resolve(values), 0);
}

TEST(CudaStepPlan, RefusesMalformedPlans) {
  json plan = docsPlan();
  plan["steps"][0]["op"] = "matmul";
  EXPECT_PLAN_ERROR(plan, "step_plan.json: steps[0].op: 'matmul' is not launch or gemm");

  plan = docsPlan();
  plan["steps"][0]["args"][2]["ptr"]["buffer"] = "scratch";
  EXPECT_PLAN_ERROR(plan, "step_plan.json: steps[0].args[2].ptr.buffer: 'scratch' is not a buffer");

  plan = docsPlan();
  plan["steps"][0]["grid"][0][0] = "token";
  EXPECT_PLAN_ERROR(plan, "step_plan.json: steps[0].grid[0][0]: 'token' is not a symbol");
  plan = docsPlan();
  plan["steps"][1]["m"] = "batch";
  EXPECT_PLAN_ERROR(plan, "steps[1].m: 'batch' is not a symbol (tokens, seqs, max_q_len");

  plan = docsPlan();
  plan["steps"][0]["grid"][0] = json::parse("[\"tokens\", 1, 1, -1]");
  EXPECT_PLAN_ERROR(plan, "steps[0].grid[0][3]: must be an integer >= 0");
  plan["steps"][0]["grid"][0] = json::parse("[\"tokens\", 1, 1, 2, 3]");
  EXPECT_PLAN_ERROR(plan, "steps[0].grid[0]: must be an integer, a symbol, [symbol, mul, div]");

  plan = docsPlan();
  plan["steps"][1].erase("lda");
  EXPECT_PLAN_ERROR(plan, "step_plan.json: steps[1].lda: is missing");
  plan = docsPlan();
  plan["steps"][0].erase("kernel");
  EXPECT_PLAN_ERROR(plan, "step_plan.json: steps[0].kernel: is missing");
  plan = docsPlan();
  plan.erase("steps");
  EXPECT_PLAN_ERROR(plan, "step_plan.json: steps: is missing");

  plan = docsPlan();
  plan["format_version"] = 2;
  EXPECT_PLAN_ERROR(plan, "format_version 2 is not one this runtime reads (it reads 1)");
  EXPECT_NE(std::string(parseError(json())).find("step_plan.json"), std::string::npos);
  try {
    parseStepPlan("{\"format_version\": ", DType::BF16);
    ADD_FAILURE() << "parsed broken JSON";
  } catch (const Error &error) {
    EXPECT_NE(std::string(error.what()).find("step_plan.json: not valid JSON"), std::string::npos);
  }
}

TEST(CudaStepPlan, RefusesBadArgumentsAndGemms) {
  json plan = docsPlan();
  plan["steps"][0]["module"] = "cublas";
  EXPECT_PLAN_ERROR(plan, "steps[0].module: 'cublas' is not a module (kernels, attention)");
  plan = docsPlan();
  plan["steps"][0]["args"][3] = {{"i32", 1}, {"f32", 2.0}};
  EXPECT_PLAN_ERROR(plan, "steps[0].args[3]: must have exactly one of memref");
  plan = docsPlan();
  plan["steps"][0]["args"][1]["strides"] = {576};
  EXPECT_PLAN_ERROR(plan, "steps[0].args[1]: has 2 sizes and 1 strides");
  plan = docsPlan();
  plan["steps"][0]["block"] = {256, 1};
  EXPECT_PLAN_ERROR(plan, "steps[0].block: must have three dimensions");
  plan = docsPlan();
  plan["steps"][0]["block"][1] = 0;
  EXPECT_PLAN_ERROR(plan, "steps[0].block[1]: must be at least 1");
  plan = docsPlan();
  plan["steps"][0]["grid"][0] = {"tokens", 0, 1};
  EXPECT_PLAN_ERROR(plan, "steps[0].grid[0][1]: must be an integer >= 1");

  plan = docsPlan();
  plan["steps"][1]["b_layout"] = "kk";
  EXPECT_PLAN_ERROR(plan, "steps[1].b_layout: 'kk' is not nk or kn");
  plan = docsPlan();
  plan["steps"][1]["ldb"] = 500;
  EXPECT_PLAN_ERROR(plan, "steps[1].ldb: 500 is less than k = 576");
  plan = docsPlan();
  plan["steps"][1]["b_layout"] = "kn";
  EXPECT_PLAN_ERROR(plan, "steps[1].ldb: 576 is less than n = 1536");
  plan = docsPlan();
  plan["steps"][1]["d_dtype"] = "fp8";
  EXPECT_PLAN_ERROR(plan, "steps[1].d_dtype: 'fp8' is not bf16, f16 or f32");
  plan = docsPlan();
  plan["steps"][1]["beta"] = 1;
  EXPECT_PLAN_ERROR(plan, "steps[1].beta: must be 0 when c is null");
  plan = docsPlan();
  plan["steps"][1]["c"] = {{"buffer", "workspace"}, {"offset", 8192}};
  EXPECT_PLAN_ERROR(plan, "steps[1].ldc: is missing");
  plan["steps"][1]["ldc"] = 1536;
  plan["steps"][1]["d_dtype"] = "f32";
  EXPECT_PLAN_ERROR(plan, "steps[1]: a gemm with c must have d_dtype bf16");
  plan["steps"][1]["d_dtype"] = "bf16";
  plan["steps"][1]["beta"] = 1;
  StepPlan parsed = parseStepPlan(plan.dump(), DType::BF16);
  const auto &gemm = std::get<GemmStep>(parsed.steps[1].op);
  ASSERT_TRUE(gemm.c.has_value());
  EXPECT_EQ(gemm.ldc, 1536);
  EXPECT_EQ(gemm.beta, 1.0f);
  plan = docsPlan();
  plan["steps"][1]["bias"] = {{"buffer", "weights"}, {"offset", 0}};
  plan["steps"][1]["d_dtype"] = "f32";
  EXPECT_PLAN_ERROR(plan, "steps[1]: a gemm with a bias must have d_dtype bf16");
}

TEST(CudaStepPlan, ChecksLocationsAgainstTheBuffers) {
  StepPlan plan = parseStepPlan(docsPlan().dump(), DType::BF16);
  PerBuffer<int64_t> sizes{};
  sizes.fill(1 << 20);
  EXPECT_NO_THROW(checkLocations(plan, sizes));
  at(sizes, Buffer::Weights) = 4000; // the gemm's B is at 4096
  try {
    checkLocations(plan, sizes);
    ADD_FAILURE() << "accepted a location past its buffer";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(),
                 "step_plan.json: steps[1].b: offset 4096 is past the end of weights (4000 bytes)");
  }
}

TEST(CudaStepPlan, PacksKernelParameters) {
  json plan = docsPlan();
  plan["steps"][0]["args"].push_back({{"f32", 0.5}});
  plan["steps"][0]["args"].push_back({{"i64", "seqs"}});
  plan["steps"][0]["args"].push_back({{"memref", {{"buffer", "kv_pool"}, {"offset", 32}}},
                                      {"sizes", json::array()},
                                      {"strides", json::array()}});
  StepPlan parsed = parseStepPlan(plan.dump(), DType::BF16);
  const auto &launch = std::get<LaunchStep>(parsed.steps[0].op);

  PerBuffer<uint64_t> addresses{};
  at(addresses, Buffer::Workspace) = 0x10000;
  at(addresses, Buffer::Weights) = 0x20000;
  at(addresses, Buffer::KvPool) = 0x30000;
  SymbolValues values;
  values.tokens = 9;
  values.seqs = 2;
  KernelParams params(launch.args, values, addresses);

  // index; memref (allocated, aligned, offset, 2 sizes, 2 strides); ptr; i32;
  // f32; i64; rank-0 memref (allocated, aligned, offset).
  std::vector<size_t> offsets = {0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 76, 80, 88, 96, 104};
  ASSERT_EQ(params.count(), offsets.size());
  EXPECT_EQ(params.offsets(), offsets);
  EXPECT_EQ(valueAt<int64_t>(params, 0), 9);
  EXPECT_EQ(valueAt<uint64_t>(params, 1), 0x10000u);
  EXPECT_EQ(valueAt<uint64_t>(params, 2), 0x10000u);
  EXPECT_EQ(valueAt<int64_t>(params, 3), 0);
  EXPECT_EQ(valueAt<int64_t>(params, 4), 9);
  EXPECT_EQ(valueAt<int64_t>(params, 5), 576);
  EXPECT_EQ(valueAt<int64_t>(params, 6), 576);
  EXPECT_EQ(valueAt<int64_t>(params, 7), 1);
  EXPECT_EQ(valueAt<uint64_t>(params, 8), 0x20040u);
  EXPECT_EQ(valueAt<int32_t>(params, 9), 16);
  EXPECT_EQ(valueAt<float>(params, 10), 0.5f);
  EXPECT_EQ(valueAt<int64_t>(params, 11), 2);
  EXPECT_EQ(valueAt<uint64_t>(params, 12), 0x30020u);
  EXPECT_EQ(valueAt<uint64_t>(params, 13), 0x30020u);
  EXPECT_EQ(valueAt<int64_t>(params, 14), 0);

  // Moved, the parameters still point at their values.
  KernelParams moved = std::move(params);
  EXPECT_EQ(valueAt<int32_t>(moved, 9), 16);
}

TEST(CudaStepPlan, AlignsAnEightByteParameterAfterAFourByteOne) {
  json plan = docsPlan();
  plan["steps"][0]["args"] = {{{"i32", 1}}, {{"index", 2}}, {{"f32", 3.0}}};
  StepPlan parsed = parseStepPlan(plan.dump(), DType::BF16);
  KernelParams params(std::get<LaunchStep>(parsed.steps[0].op).args, {}, {});
  std::vector<size_t> offsets = {0, 8, 16};
  EXPECT_EQ(params.offsets(), offsets);
}

TEST(CudaStepPlan, RefusesAnI32ThatDoesNotFit) {
  json plan = docsPlan();
  plan["steps"][0]["args"] = {{{"i32", {"num_blocks", 4096, 1}}}};
  StepPlan parsed = parseStepPlan(plan.dump(), DType::BF16);
  SymbolValues values;
  values.numBlocks = 1 << 20;
  try {
    KernelParams params(std::get<LaunchStep>(parsed.steps[0].op).args, values, {});
    ADD_FAILURE() << "packed an i32 of 2^32";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(),
                 "step_plan.json: steps[0].args[0]: i32 value 4294967296 does not fit in 32 bits");
  }
}
} // namespace
