//===- AlignedBufferTest.cpp - host memory for the KV pool and workspace --===//
#include "runtime/core/AlignedBuffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

using namespace llmc::runtime;

namespace {
/// The kernel's transparent huge page mode ("always", "madvise" or "never").
std::string hugePageMode() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(file, line);
  size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

/// The value of field `format` (e.g. "Rss: %ld") of the mapping that starts
/// at `address` in /proc/self/smaps; -1 when there is none.
long smapsField(const void *address, const char *format) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inMapping = false;
  while (std::getline(smaps, line)) {
    unsigned long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &start, &end) == 2) {
      inMapping = start == reinterpret_cast<uintptr_t>(address);
      continue;
    }
    long value = 0;
    if (inMapping && std::sscanf(line.c_str(), format, &value) == 1) return value;
  }
  return -1;
}
} // namespace

TEST(AlignedBuffer, IsZeroedAndAligned) {
  AlignedBuffer buffer(1 << 20);
  ASSERT_NE(buffer.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % AlignedBuffer::kAlignment, 0u);
  const auto *bytes = static_cast<const unsigned char *>(buffer.data());
  for (size_t i = 0; i < buffer.bytes(); i += 4096) EXPECT_EQ(bytes[i], 0);
}

// The KV pool is read a few KB per block from blocks anywhere in it: with
// 4 KB pages nearly every block costs a TLB miss, so the buffer asks for
// huge pages (the kernel's default mode, "madvise", gives them only then).
TEST(AlignedBuffer, AsksForHugePages) {
  std::string mode = hugePageMode();
  if (mode.empty() || mode == "never") GTEST_SKIP() << "transparent huge pages are off";
  AlignedBuffer buffer(16 << 20);
  // THPeligible: 1 when the kernel may back the mapping with huge pages.
  long eligible = smapsField(buffer.data(), "THPeligible: %ld");
  if (eligible < 0) GTEST_SKIP() << "/proc/self/smaps has no THPeligible line";
  EXPECT_EQ(eligible, 1);
}

TEST(AlignedBuffer, MakeResidentBacksEveryPage) {
  constexpr size_t bytes = 8 << 20;
  AlignedBuffer buffer(bytes);
  long before = smapsField(buffer.data(), "Rss: %ld kB");
  if (before < 0) GTEST_SKIP() << "/proc/self/smaps has no Rss line for the buffer's mapping";
  EXPECT_EQ(before, 0);
  buffer.makeResident();
  EXPECT_EQ(smapsField(buffer.data(), "Rss: %ld kB"), long(bytes / 1024));
  const auto *data = static_cast<const unsigned char *>(buffer.data());
  for (size_t i = 0; i < bytes; i += 4096) ASSERT_EQ(data[i], 0);
}

TEST(AlignedBuffer, EmptyHoldsNothing) {
  AlignedBuffer buffer(0);
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(buffer.bytes(), 0u);
}
