//===- LoraTest.cpp - PEFT adapters: their files, their loading, their products -===//
#include "runtime/core/Error.h"
#include "runtime/lora/LoraAdapter.h"
#include "runtime/lora/LoraProducts.h"
#include "runtime/lora/Safetensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace llmc::runtime;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct RawTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

RawTensor f32Tensor(std::vector<int64_t> shape, const std::vector<float> &values) {
  RawTensor tensor{"F32", std::move(shape), std::vector<uint8_t>(values.size() * 4)};
  std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  return tensor;
}

RawTensor halfTensor(const std::string &dtype, std::vector<int64_t> shape,
                     const std::vector<uint16_t> &bits) {
  RawTensor tensor{dtype, std::move(shape), {}};
  for (uint16_t value : bits) {
    tensor.bytes.push_back(uint8_t(value & 0xff));
    tensor.bytes.push_back(uint8_t(value >> 8));
  }
  return tensor;
}

/// Writes a safetensors file of `tensors`, as the safetensors package lays it out.
void writeSafetensors(const fs::path &path, const std::map<std::string, RawTensor> &tensors) {
  json header = json::object();
  std::vector<uint8_t> data;
  for (const auto &[name, tensor] : tensors) {
    header[name] = {{"dtype", tensor.dtype},
                    {"shape", tensor.shape},
                    {"data_offsets", {data.size(), data.size() + tensor.bytes.size()}}};
    data.insert(data.end(), tensor.bytes.begin(), tensor.bytes.end());
  }
  header["__metadata__"] = {{"format", "pt"}};
  std::string text = header.dump();
  std::ofstream file(path, std::ios::binary);
  uint64_t length = text.size();
  for (int i = 0; i < 8; ++i) file.put(char((length >> (8 * i)) & 0xff));
  file << text;
  file.write(reinterpret_cast<const char *>(data.data()), std::streamsize(data.size()));
}

class TempDir {
public:
  TempDir() {
    path = fs::temp_directory_path() /
           ("llmc-lora-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "-" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  fs::path path;
};

/// The sites of a model of one layer: q_proj [4 -> 3] and down_proj [3 -> 4].
std::vector<LoraSite> twoSites() {
  return {{"model.layers.0.self_attn.q_proj", 4, 3}, {"model.layers.0.mlp.down_proj", 3, 4}};
}

/// A PEFT adapter of q_proj at rank 2: A [2, 4] = 0.1 * (i + 1), B [3, 2] = j - k.
void writeAdapter(const fs::path &dir, json config) {
  fs::create_directories(dir);
  std::ofstream(dir / "adapter_config.json") << config.dump();
  std::vector<float> down(8), up(6);
  for (size_t i = 0; i < down.size(); ++i) down[i] = 0.1f * float(i + 1);
  for (int64_t j = 0; j < 3; ++j)
    for (int64_t k = 0; k < 2; ++k) up[size_t(j * 2 + k)] = float(j - k);
  writeSafetensors(
      dir / "adapter_model.safetensors",
      {{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", f32Tensor({2, 4}, down)},
       {"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight", f32Tensor({3, 2}, up)}});
}

json baseConfig() {
  return {{"peft_type", "LORA"}, {"r", 2}, {"lora_alpha", 4}, {"bias", "none"},
          {"use_dora", false}, {"modules_to_save", nullptr},
          {"target_modules", {"q_proj"}}};
}

std::string loadError(const fs::path &dir, int64_t maxRank = 16) {
  try {
    LoraAdapter::load(dir.string(), twoSites(), maxRank);
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

} // namespace

TEST(Safetensors, ReadsF32F16AndBf16AsFloats) {
  TempDir temp;
  fs::path file = temp.path / "t.safetensors";
  writeSafetensors(file, {{"a", f32Tensor({2}, {1.5f, -2.0f})},
                          {"h", halfTensor("F16", {4}, {0x3c00, 0xc000, 0x0001, 0x7c00})},
                          {"b", halfTensor("BF16", {2}, {0x3f80, 0xc040})}});
  SafetensorsFile read = SafetensorsFile::read(file.string());
  EXPECT_EQ(read.tensors().size(), 3u);
  EXPECT_EQ(read.tensors().at("h").shape, std::vector<int64_t>{4});
  EXPECT_EQ(read.floats("a"), (std::vector<float>{1.5f, -2.0f}));
  std::vector<float> half = read.floats("h");
  EXPECT_EQ(half[0], 1.0f);
  EXPECT_EQ(half[1], -2.0f);
  EXPECT_EQ(half[2], std::ldexp(1.0f, -24)); // the smallest subnormal
  EXPECT_TRUE(std::isinf(half[3]));
  EXPECT_EQ(read.floats("b"), (std::vector<float>{1.0f, -3.0f}));
}

TEST(Safetensors, RefusesMalformedFiles) {
  TempDir temp;
  fs::path file = temp.path / "bad.safetensors";
  std::ofstream(file) << "abc";
  EXPECT_THROW(SafetensorsFile::read(file.string()), Error);
  {
    std::ofstream out(file, std::ios::binary);
    uint64_t length = 1000;
    out.write(reinterpret_cast<const char *>(&length), 8);
    out << "{}";
  }
  EXPECT_THROW(SafetensorsFile::read(file.string()), Error);
  RawTensor shortTensor = f32Tensor({3}, {1, 2});
  writeSafetensors(file, {{"x", shortTensor}});
  EXPECT_THROW(SafetensorsFile::read(file.string()), Error);
  writeSafetensors(file, {{"x", RawTensor{"Q4", {1}, {0}}}});
  EXPECT_THROW(SafetensorsFile::read(file.string()), Error);
  writeSafetensors(file, {{"x", RawTensor{"I8", {1}, {0}}}});
  EXPECT_THROW(SafetensorsFile::read(file.string()).floats("x"), Error);
}

TEST(LoraAdapter, KeepsADownAndAScaledTransposedUpPerSite) {
  TempDir temp;
  writeAdapter(temp.path, baseConfig());
  auto adapter = LoraAdapter::load(temp.path.string(), twoSites(), 16);
  ASSERT_EQ(adapter->numSites(), 2);
  EXPECT_EQ(adapter->rank(), 2);
  const LoraAdapter::SiteWeights &q = adapter->site(0);
  EXPECT_EQ(q.rank, 2);
  // down[i][k] = A[k][i], rows padded to 16 with zeros: A[1][1] = 0.6 at down[1 * 16 + 1].
  ASSERT_EQ(q.paddedRank(), 16);
  ASSERT_EQ(q.down.size(), 4u * 16u);
  EXPECT_FLOAT_EQ(q.down[17], 0.6f);
  EXPECT_FLOAT_EQ(q.down[1], 0.5f);
  EXPECT_EQ(q.down[2], 0.0f);
  // up[k][o] = scaling * B[o][k], scaling = lora_alpha / r = 2.
  for (int64_t k = 0; k < 2; ++k)
    for (int64_t o = 0; o < 3; ++o)
      EXPECT_EQ(q.up[size_t(k * 3 + o)], 2.0f * float(o - k)) << k << "," << o;
  EXPECT_EQ(adapter->site(1).rank, 0);
}

TEST(LoraAdapter, ScalesAsRsLoraAndAlphaPatternSay) {
  TempDir temp;
  json config = baseConfig();
  config["use_rslora"] = true;
  writeAdapter(temp.path / "rs", config);
  // up[1][2] = scaling * B[2][1] = scaling * 1.
  EXPECT_FLOAT_EQ(LoraAdapter::load((temp.path / "rs").string(), twoSites(), 16)->site(0).up[5],
                  float(4.0 / std::sqrt(2.0)));
  config = baseConfig();
  config["alpha_pattern"] = {{"q_proj", 8}};
  writeAdapter(temp.path / "pattern", config);
  EXPECT_FLOAT_EQ(
      LoraAdapter::load((temp.path / "pattern").string(), twoSites(), 16)->site(0).up[5], 4.0f);
}

TEST(LoraAdapter, EqualFilesShareAFingerprint) {
  TempDir temp;
  writeAdapter(temp.path / "a", baseConfig());
  writeAdapter(temp.path / "b", baseConfig());
  json other = baseConfig();
  other["lora_alpha"] = 8;
  writeAdapter(temp.path / "c", other);
  auto fingerprint = [&](const char *name) {
    return LoraAdapter::load((temp.path / name).string(), twoSites(), 16)->fingerprint();
  };
  EXPECT_EQ(fingerprint("a"), fingerprint("b"));
  EXPECT_NE(fingerprint("a"), fingerprint("c"));
}

TEST(LoraAdapter, RefusesWhatItCannotServeExactly) {
  TempDir temp;
  writeAdapter(temp.path / "ok", baseConfig());
  EXPECT_NE(loadError(temp.path / "ok", 1).find("rank 2, above max_lora_rank 1"),
            std::string::npos);
  EXPECT_THROW(LoraAdapter::load((temp.path / "ok").string(), {}, 16), Error);

  json dora = baseConfig();
  dora["use_dora"] = true;
  writeAdapter(temp.path / "dora", dora);
  EXPECT_NE(loadError(temp.path / "dora").find("use_dora"), std::string::npos);
  json bias = baseConfig();
  bias["bias"] = "lora_only";
  writeAdapter(temp.path / "bias", bias);
  EXPECT_NE(loadError(temp.path / "bias").find("biases"), std::string::npos);
  json saved = baseConfig();
  saved["modules_to_save"] = {"lm_head"};
  writeAdapter(temp.path / "saved", saved);
  EXPECT_NE(loadError(temp.path / "saved").find("modules_to_save"), std::string::npos);
  json prefix = baseConfig();
  prefix["peft_type"] = "PREFIX_TUNING";
  writeAdapter(temp.path / "prefix", prefix);
  EXPECT_NE(loadError(temp.path / "prefix").find("only LORA"), std::string::npos);

  fs::path unknown = temp.path / "unknown";
  writeAdapter(unknown, baseConfig());
  writeSafetensors(unknown / "adapter_model.safetensors",
                   {{"base_model.model.model.layers.0.mlp.gate_proj.lora_A.weight",
                     f32Tensor({1, 4}, {1, 1, 1, 1})},
                    {"base_model.model.model.layers.0.mlp.gate_proj.lora_B.weight",
                     f32Tensor({3, 1}, {1, 1, 1})}});
  EXPECT_NE(loadError(unknown).find("changes 'model.layers.0.mlp.gate_proj', which the model "
                                    "has no LoRA site for"),
            std::string::npos);
  fs::path shapes = temp.path / "shapes";
  writeAdapter(shapes, baseConfig());
  writeSafetensors(shapes / "adapter_model.safetensors",
                   {{"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight",
                     f32Tensor({1, 3}, {1, 1, 1})},
                    {"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight",
                     f32Tensor({3, 1}, {1, 1, 1})}});
  EXPECT_NE(loadError(shapes).find("shapes that do not make a [4 -> 3] layer's product"),
            std::string::npos);
  fs::path embedding = temp.path / "embedding";
  writeAdapter(embedding, baseConfig());
  writeSafetensors(embedding / "adapter_model.safetensors",
                   {{"base_model.model.model.embed_tokens.lora_embedding_A",
                     f32Tensor({1, 4}, {1, 1, 1, 1})}});
  EXPECT_NE(loadError(embedding).find("embedding and LM head adapters"), std::string::npos);
  fs::path pickled = temp.path / "pickled";
  fs::create_directories(pickled);
  std::ofstream(pickled / "adapter_config.json") << baseConfig().dump();
  std::ofstream(pickled / "adapter_model.bin") << "pickle";
  EXPECT_NE(loadError(pickled).find("pickled adapter_model.bin"), std::string::npos);
}

TEST(LoraProducts, AddsEachRowsAdapterProductAndCopiesTheRest) {
  TempDir temp;
  writeAdapter(temp.path / "a", baseConfig());
  json doubled = baseConfig();
  doubled["lora_alpha"] = 8;
  writeAdapter(temp.path / "b", doubled);
  std::vector<LoraSite> sites = twoSites();
  auto a = LoraAdapter::load((temp.path / "a").string(), sites, 16);
  auto b = LoraAdapter::load((temp.path / "b").string(), sites, 16);

  // Four tokens: none, a, b, a. x rows are 5 floats apart (a strided view).
  const int64_t rows = 4, ldx = 5, ldout = 3;
  std::vector<float> x(size_t(rows * ldx)), base(size_t(rows * ldout)), out(base.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.25f * float(i % 7) - 0.5f;
  for (size_t i = 0; i < base.size(); ++i) base[i] = float(i);
  std::vector<int32_t> indices = {-1, 0, 1, 0};
  std::vector<const LoraAdapter *> adapters = {a.get(), b.get()};
  std::vector<int32_t> logitsIndices = {3, 0};
  StepBatch batch;
  batch.numTokens = rows;
  batch.loraIndices = indices.data();
  batch.loraAdapters = adapters.data();
  batch.numLoraAdapters = 2;
  batch.logitsIndices = logitsIndices.data();

  auto expected = [&](int64_t row, int32_t adapter) {
    std::vector<float> result(base.begin() + row * ldout, base.begin() + (row + 1) * ldout);
    if (adapter < 0) return result;
    const LoraAdapter::SiteWeights &w = adapters[size_t(adapter)]->site(0);
    for (int64_t k = 0; k < w.rank; ++k) {
      float u = 0;
      for (int64_t i = 0; i < 4; ++i)
        u += w.down[size_t(i * w.paddedRank() + k)] * x[size_t(row * ldx + i)];
      for (int64_t o = 0; o < 3; ++o) result[size_t(o)] += u * w.up[size_t(k * 3 + o)];
    }
    return result;
  };
  ThreadPool pool(2);
  addLoraProducts(pool, batch, 0, sites[0], false, rows, x.data(), ldx, base.data(), ldout,
                  out.data(), ldout);
  for (int64_t row = 0; row < rows; ++row) {
    std::vector<float> want = expected(row, indices[size_t(row)]);
    for (int64_t o = 0; o < 3; ++o)
      EXPECT_FLOAT_EQ(out[size_t(row * ldout + o)], want[size_t(o)]) << row << "," << o;
  }
  // Per sequence: row n is token logitsIndices[n]'s (token 3: a; token 0: none), x and base
  // holding the gathered rows.
  std::vector<float> gatheredX, gatheredBase, gatheredOut(2 * 3);
  for (int32_t token : logitsIndices) {
    gatheredX.insert(gatheredX.end(), x.begin() + token * ldx, x.begin() + (token + 1) * ldx);
    gatheredBase.insert(gatheredBase.end(), base.begin() + token * ldout,
                        base.begin() + (token + 1) * ldout);
  }
  addLoraProducts(pool, batch, 0, sites[0], true, 2, gatheredX.data(), ldx, gatheredBase.data(),
                  ldout, gatheredOut.data(), 3);
  for (int64_t seq = 0; seq < 2; ++seq) {
    int32_t token = logitsIndices[size_t(seq)];
    std::vector<float> want = expected(token, indices[size_t(token)]);
    for (int64_t o = 0; o < 3; ++o)
      EXPECT_FLOAT_EQ(gatheredOut[size_t(seq * 3 + o)], want[size_t(o)]) << seq << "," << o;
  }

  // A site the adapters leave be, or a step without adapters: a copy.
  StepBatch plain;
  plain.numTokens = rows;
  std::vector<float> copied(base.size());
  addLoraProducts(pool, plain, 0, sites[0], false, rows, x.data(), ldx, base.data(), ldout,
                  copied.data(), ldout);
  EXPECT_EQ(copied, base);
}

// Rows past one task and columns past one chunk: each element is the sum over
// the rank of (A x)[k] * scaling * B[o][k], whatever thread computed it.
TEST(LoraProducts, SpreadsWideSitesOverRowsAndColumns) {
  TempDir temp;
  const int64_t in = 40, out = 600, rank = 5, rows = 20;
  std::vector<LoraSite> sites = {{"model.layers.0.mlp.up_proj", in, out}};
  std::vector<float> a(size_t(rank * in)), b(size_t(out * rank));
  for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(float(i)) * 0.3f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = std::cos(float(i)) * 0.2f;
  fs::create_directories(temp.path);
  json config = baseConfig();
  config["r"] = rank;
  config["lora_alpha"] = 10; // scaling 2
  std::ofstream(temp.path / "adapter_config.json") << config.dump();
  writeSafetensors(temp.path / "adapter_model.safetensors",
                   {{"base_model.model.model.layers.0.mlp.up_proj.lora_A.weight",
                     f32Tensor({rank, in}, a)},
                    {"base_model.model.model.layers.0.mlp.up_proj.lora_B.weight",
                     f32Tensor({out, rank}, b)}});
  auto adapter = LoraAdapter::load(temp.path.string(), sites, 16);

  std::vector<float> x(size_t(rows * in)), base(size_t(rows * out)), result(base.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.7f * float(i));
  for (size_t i = 0; i < base.size(); ++i) base[i] = 0.01f * float(i % 97);
  std::vector<int32_t> indices(static_cast<size_t>(rows));
  // A run of 13 rows of the adapter across the tasks of 8 rows, between rows without one.
  for (int64_t r = 0; r < rows; ++r) indices[size_t(r)] = r >= 2 && r < 15 ? 0 : -1;
  const LoraAdapter *adapters[] = {adapter.get()};
  StepBatch batch;
  batch.numTokens = rows;
  batch.loraIndices = indices.data();
  batch.loraAdapters = adapters;
  batch.numLoraAdapters = 1;
  ThreadPool pool(2);
  addLoraProducts(pool, batch, 0, sites[0], false, rows, x.data(), in, base.data(), out,
                  result.data(), out);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double want = base[size_t(r * out + o)];
      if (indices[size_t(r)] >= 0)
        for (int64_t k = 0; k < rank; ++k) {
          double u = 0;
          for (int64_t i = 0; i < in; ++i)
            u += double(a[size_t(k * in + i)]) * x[size_t(r * in + i)];
          want += 2.0 * u * b[size_t(o * rank + k)];
        }
      ASSERT_NEAR(result[size_t(r * out + o)], want, 1e-4) << r << "," << o;
    }
}
