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
  std::vector<std::tuple<int64_t, int64_t, int64_t>> copies;
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
} // namespace
