//===- CudaStepInputsTest.cpp - step inputs staged for the GPU, padding ---===//
#include "runtime/core/Error.h"
#include "runtime/cuda/StepInputs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace llmc::runtime;
using namespace llmc::runtime::cuda;

namespace {
/// A staging buffer for `layout`, filled with a pattern so that what pack
/// leaves alone shows.
std::vector<int32_t> stagingFor(const StepInputLayout &layout) {
  return std::vector<int32_t>(static_cast<size_t>(layout.totalBytes() / 4), 0x7777);
}

std::vector<int32_t> arrayOf(const std::vector<int32_t> &staging, const StepInputLayout &layout,
                             Buffer buffer, int64_t count) {
  const int32_t *begin = staging.data() + layout.offset(buffer) / 4;
  return std::vector<int32_t>(begin, begin + count);
}

/// Three sequences decoding one token each (block size 4).
StepBatchArrays threeDecodes() {
  StepBatchArrays batch;
  batch.tokens = {11, 12, 13};
  batch.positions = {5, 0, 8};
  batch.cuSeqlensQ = {0, 1, 2, 3};
  batch.contextLens = {6, 1, 9};
  batch.maxBlocksPerSeq = 4;
  // Entries past the blocks a context needs are garbage the caller left.
  batch.blockTables = {7, 2, -5, 99, 4, 99, 99, 99, 1, 3, 6, 99};
  batch.slotMapping = {9, 16, 24};
  batch.logitsIndices = {0, 1, 2};
  return batch;
}

TEST(CudaStepInputs, GraphBatchSizesArePowersOfTwoWithinTheLimits) {
  std::vector<int64_t> all = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  EXPECT_EQ(graphBatchSizes(256, 2048), all);
  EXPECT_EQ(graphBatchSizes(1024, 8192), all);
  std::vector<int64_t> upTo32 = {1, 2, 4, 8, 16, 32};
  EXPECT_EQ(graphBatchSizes(48, 2048), upTo32);
  EXPECT_EQ(graphBatchSizes(256, 40), upTo32);
  EXPECT_EQ(graphBatchSizes(1, 16), std::vector<int64_t>{1});
}

TEST(CudaStepInputs, OnlyDecodeBatchesRunAsGraphs) {
  std::vector<int64_t> sizes = graphBatchSizes(64, 2048);
  StepBatchArrays batch = threeDecodes();
  EXPECT_EQ(graphBatchSizeFor(batch.view(), sizes), 4);
  batch.tokens.push_back(14); // a prefill of two tokens for the last sequence
  batch.positions.push_back(9);
  batch.slotMapping.push_back(25);
  batch.cuSeqlensQ.back() = 4;
  EXPECT_EQ(graphBatchSizeFor(batch.view(), sizes), 0);

  StepBatchArrays wide;
  wide.tokens.assign(65, 1);
  wide.contextLens.assign(65, 1);
  EXPECT_EQ(graphBatchSizeFor(wide.view(), sizes), 0);
  wide.tokens.resize(64);
  wide.contextLens.resize(64);
  EXPECT_EQ(graphBatchSizeFor(wide.view(), sizes), 64);
  wide.tokens.resize(33);
  wide.contextLens.resize(33);
  EXPECT_EQ(graphBatchSizeFor(wide.view(), sizes), 64);
}

TEST(CudaStepInputs, LayoutPutsEachArrayAtAnAlignedOffsetBlockTablesLast) {
  StepInputLayout layout(100, 8, 5, 4);
  for (Buffer buffer : {Buffer::Tokens, Buffer::Positions, Buffer::CuSeqlensQ, Buffer::ContextLens,
                        Buffer::BlockTables, Buffer::SlotMapping, Buffer::LogitsIndices}) {
    EXPECT_EQ(layout.offset(buffer) % 256, 0) << bufferName(buffer);
    EXPECT_LE(layout.offset(buffer), layout.offset(Buffer::BlockTables)) << bufferName(buffer);
  }
  EXPECT_EQ(layout.capacity(Buffer::Tokens), 400);
  EXPECT_EQ(layout.capacity(Buffer::CuSeqlensQ), 36);
  EXPECT_EQ(layout.capacity(Buffer::BlockTables), 8 * 5 * 4);
  EXPECT_EQ(layout.totalBytes(), layout.offset(Buffer::BlockTables) + 256);
}

TEST(CudaStepInputs, PacksABatchWithBlockTablesAtTheDeviceWidth) {
  StepInputLayout layout(16, 8, 3, 4);
  std::vector<int32_t> staging = stagingFor(layout);
  StepBatchArrays batch = threeDecodes();
  PackedStepInputs packed = packStepInputs(batch.view(), 0, layout, staging.data());
  EXPECT_EQ(packed.numTokens, 3);
  EXPECT_EQ(packed.numSeqs, 3);
  EXPECT_EQ(packed.maxQueryLen, 1);
  EXPECT_EQ(packed.bytes, layout.offset(Buffer::BlockTables) + 3 * 3 * 4);
  EXPECT_EQ(arrayOf(staging, layout, Buffer::Tokens, 3), batch.tokens);
  EXPECT_EQ(arrayOf(staging, layout, Buffer::Positions, 3), batch.positions);
  EXPECT_EQ(arrayOf(staging, layout, Buffer::SlotMapping, 3), batch.slotMapping);
  EXPECT_EQ(arrayOf(staging, layout, Buffer::CuSeqlensQ, 4), batch.cuSeqlensQ);
  EXPECT_EQ(arrayOf(staging, layout, Buffer::ContextLens, 3), batch.contextLens);
  EXPECT_EQ(arrayOf(staging, layout, Buffer::LogitsIndices, 3), batch.logitsIndices);
  // 6 positions: 2 blocks; 1: 1 block; 9: 3 blocks; zeros after them.
  std::vector<int32_t> tables = {7, 2, 0, 4, 0, 0, 1, 3, 6};
  EXPECT_EQ(arrayOf(staging, layout, Buffer::BlockTables, 9), tables);
}

TEST(CudaStepInputs, PadsADecodeBatchWithDummySequences) {
  StepInputLayout layout(16, 8, 3, 4);
  std::vector<int32_t> staging = stagingFor(layout);
  StepBatchArrays batch = threeDecodes();
  PackedStepInputs packed = packStepInputs(batch.view(), 8, layout, staging.data());
  EXPECT_EQ(packed.numTokens, 8);
  EXPECT_EQ(packed.numSeqs, 8);
  EXPECT_EQ(packed.maxQueryLen, 1);
  EXPECT_EQ(packed.bytes, layout.offset(Buffer::BlockTables) + 8 * 3 * 4);

  std::vector<int32_t> tokens = {11, 12, 13, 0, 0, 0, 0, 0};
  std::vector<int32_t> positions = {5, 0, 8, 0, 0, 0, 0, 0};
  std::vector<int32_t> slots = {9, 16, 24, -1, -1, -1, -1, -1};
  std::vector<int32_t> cuSeqlensQ = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int32_t> contextLens = {6, 1, 9, 1, 1, 1, 1, 1};
  std::vector<int32_t> rows = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(arrayOf(staging, layout, Buffer::Tokens, 8), tokens);
  EXPECT_EQ(arrayOf(staging, layout, Buffer::Positions, 8), positions);
  EXPECT_EQ(arrayOf(staging, layout, Buffer::SlotMapping, 8), slots);
  EXPECT_EQ(arrayOf(staging, layout, Buffer::CuSeqlensQ, 9), cuSeqlensQ);
  EXPECT_EQ(arrayOf(staging, layout, Buffer::ContextLens, 8), contextLens);
  EXPECT_EQ(arrayOf(staging, layout, Buffer::LogitsIndices, 8), rows);
  std::vector<int32_t> tables(8 * 3, 0);
  for (int32_t i : {0, 1})
    tables[i] = batch.blockTables[i];
  tables[3] = 4;
  for (int32_t i : {0, 1, 2})
    tables[6 + i] = batch.blockTables[8 + i];
  EXPECT_EQ(arrayOf(staging, layout, Buffer::BlockTables, 8 * 3), tables);
}

TEST(CudaStepInputs, RefusesWhatTheDeviceBuffersCannotHold) {
  StepInputLayout narrow(16, 8, 2, 4);
  std::vector<int32_t> staging = stagingFor(narrow);
  StepBatchArrays batch = threeDecodes();
  try {
    packStepInputs(batch.view(), 0, narrow, staging.data());
    ADD_FAILURE() << "packed 3 blocks into a table 2 wide";
  } catch (const Error &error) {
    EXPECT_STREQ(error.what(), "step: sequence 2 has 9 positions, 3 blocks, but the device's "
                               "block tables are 2 wide");
  }

  StepInputLayout small(16, 4, 3, 4);
  staging = stagingFor(small);
  EXPECT_THROW(packStepInputs(batch.view(), 8, small, staging.data()), Error);

  StepBatchArrays prefill = threeDecodes();
  prefill.tokens.push_back(14);
  prefill.positions.push_back(9);
  prefill.slotMapping.push_back(25);
  prefill.cuSeqlensQ.back() = 4;
  prefill.contextLens.back() = 10;
  staging = stagingFor(small);
  EXPECT_THROW(packStepInputs(prefill.view(), 4, small, staging.data()), Error);
  PackedStepInputs packed = packStepInputs(prefill.view(), 0, small, staging.data());
  EXPECT_EQ(packed.maxQueryLen, 2);
  EXPECT_EQ(packed.numTokens, 4);
}
} // namespace
