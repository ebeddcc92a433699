#include "util/utf8.h"

#include <gtest/gtest.h>

namespace llmhost::utf8::utf8_test {
namespace {

TEST(Utf8Test, RoundTripsAllPlanes) {
  std::u32string cps = {U'a', 0xE9, 0x4E2D, 0x1F600, 0x10FFFF};
  std::string s = Encode(cps);
  EXPECT_EQ(s.size(), 1u + 2 + 3 + 4 + 4);
  EXPECT_EQ(Decode(s), cps);
  EXPECT_TRUE(IsValid(s));
}

TEST(Utf8Test, InvalidBytesBecomeReplacement) {
  std::string bad = "a\xC3" "b\xED\xA0\x80";  // truncated 2-byte seq; a surrogate
  std::u32string d = Decode(bad);
  EXPECT_EQ(d[0], U'a');
  EXPECT_EQ(d[1], kReplacement);
  EXPECT_EQ(d[2], U'b');
  EXPECT_FALSE(IsValid(bad));
  EXPECT_FALSE(IsValid("\xC0\x80"));  // overlong NUL
}

TEST(Utf8Test, IncompleteTail) {
  std::string s = "x" + Encode(0x1F600);
  EXPECT_EQ(IncompleteTailLength(s), 0u);
  EXPECT_EQ(IncompleteTailLength(s.substr(0, 4)), 3u);
  EXPECT_EQ(IncompleteTailLength(s.substr(0, 2)), 1u);
  EXPECT_EQ(IncompleteTailLength("abc"), 0u);
}

}  // namespace
}  // namespace llmhost::utf8::utf8_test
