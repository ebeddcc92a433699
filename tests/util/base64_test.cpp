// Base64Encode against RFC 4648's test vectors.
#include "util/base64.h"

#include <gtest/gtest.h>

namespace llmhost::base64_test {
namespace {

TEST(Base64Test, Rfc4648Vectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(Base64Encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
}

TEST(Base64Test, HighBytes) {
  EXPECT_EQ(Base64Encode(std::string("\xff\xfe\x00\x80", 4)), "//4AgA==");
}

}  // namespace
}  // namespace llmhost::base64_test
