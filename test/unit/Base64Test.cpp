//===- Base64Test.cpp - embeddings as base64 bytes ------------------------===//
#include "runtime/server/Base64.h"

#include <gtest/gtest.h>

using llmc::runtime::server::base64Encode;

namespace {

std::string encode(const std::string &text) { return base64Encode(text.data(), text.size()); }

TEST(Base64, EncodesAsRfc4648WithPadding) {
  // RFC 4648's test vectors.
  EXPECT_EQ(encode(""), "");
  EXPECT_EQ(encode("f"), "Zg==");
  EXPECT_EQ(encode("fo"), "Zm8=");
  EXPECT_EQ(encode("foo"), "Zm9v");
  EXPECT_EQ(encode("foob"), "Zm9vYg==");
  EXPECT_EQ(encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(encode("foobar"), "Zm9vYmFy");
}

TEST(Base64, EncodesFloatsAsTheirLittleEndianBytes) {
  // 1.0f is 00 00 80 3f; -2.0f is 00 00 00 c0; bytes 0xfb 0xff reach '+' and '/'.
  float values[] = {1.0f, -2.0f};
  EXPECT_EQ(base64Encode(values, sizeof values), "AACAPwAAAMA=");
  unsigned char high[] = {0xfb, 0xff, 0xbf};
  EXPECT_EQ(base64Encode(high, sizeof high), "+/+/");
}

} // namespace
