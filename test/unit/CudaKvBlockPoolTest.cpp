//===- CudaKvBlockPoolTest.cpp - a KV pool in device memory ---------------===//
#include "runtime/core/Error.h"
#include "runtime/core/KvBlockPool.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

using namespace llmc::runtime;

namespace {
/// Storage that records the copies asked of it, as a GPU's would make them.
class RecordingStorage : public KvBlockStorage {
public:
  void copyBytes(int64_t from, int64_t to, int64_t bytes) override {
    copies.emplace_back(from, to, bytes);
  }
  void copyToHost(int64_t from, void *host, int64_t bytes) override {
    toHost.emplace_back(from, host, bytes);
  }
  void copyFromHost(const void *host, int64_t to, int64_t bytes) override {
    fromHost.emplace_back(host, to, bytes);
  }
  std::vector<std::tuple<int64_t, int64_t, int64_t>> copies;
  std::vector<std::tuple<int64_t, void *, int64_t>> toHost;
  std::vector<std::tuple<const void *, int64_t, int64_t>> fromHost;
};

KvCacheShape bf16Shape() {
  KvCacheShape shape;
  shape.numLayers = 3;
  shape.numBlocks = 10;
  shape.numKvHeads = 2;
  shape.blockSize = 16;
  shape.headDim = 64;
  shape.elementBytes = 2;
  return shape;
}

TEST(CudaKvBlockPool, TwoByteElementsSizeTheBlocks) {
  KvCacheShape shape = bf16Shape();
  int64_t layerBlockBytes = 2 * 2 * 16 * 64 * 2;
  EXPECT_EQ(shape.bytesPerBlock(), 3 * layerBlockBytes);
  EXPECT_EQ(shape.numBytes(), 10 * 3 * layerBlockBytes);
  EXPECT_EQ(KvCacheShape{}.elementBytes, 4);
}

TEST(CudaKvBlockPool, CopyBlockCopiesOneRunPerLayerInTheStorage) {
  RecordingStorage storage;
  KvBlockPool pool(bf16Shape(), storage);
  EXPECT_EQ(pool.numBlocks(), 10);
  pool.copyBlock(7, 2);
  // [layers, blocks, 2, heads, blockSize, headDim]: block b of layer l starts
  // at (l * blocks + b) * its bytes.
  int64_t blockBytes = 2 * 2 * 16 * 64 * 2;
  std::vector<std::tuple<int64_t, int64_t, int64_t>> expected;
  for (int64_t layer = 0; layer < 3; ++layer)
    expected.emplace_back((layer * 10 + 7) * blockBytes, (layer * 10 + 2) * blockBytes,
                          blockBytes);
  EXPECT_EQ(storage.copies, expected);
  EXPECT_THROW(pool.copyBlock(10, 0), Error);
  EXPECT_EQ(storage.copies.size(), 3u);
}

TEST(CudaKvBlockPool, SwappingMovesEachLayersRunToItsPlaceInTheHostBlock) {
  RecordingStorage storage;
  KvBlockPool pool(bf16Shape(), storage);
  int64_t blockBytes = 2 * 2 * 16 * 64 * 2;
  std::vector<unsigned char> host(pool.shape().bytesPerBlock());
  pool.saveBlock(4, host.data());
  pool.restoreBlock(host.data(), 9);
  std::vector<std::tuple<int64_t, void *, int64_t>> out;
  std::vector<std::tuple<const void *, int64_t, int64_t>> in;
  for (int64_t layer = 0; layer < 3; ++layer) {
    out.emplace_back((layer * 10 + 4) * blockBytes, host.data() + layer * blockBytes, blockBytes);
    in.emplace_back(host.data() + layer * blockBytes, (layer * 10 + 9) * blockBytes, blockBytes);
  }
  EXPECT_EQ(storage.toHost, out);
  EXPECT_EQ(storage.fromHost, in);
  EXPECT_THROW(pool.saveBlock(-1, host.data()), Error);
  EXPECT_THROW(pool.restoreBlock(host.data(), 10), Error);
}
} // namespace
