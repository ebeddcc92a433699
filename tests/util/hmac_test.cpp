#include "util/hmac.h"

#include <gtest/gtest.h>

#include <string>

namespace llmhost::hmac_test {
namespace {

// RFC 4231's test vectors for HMAC-SHA-256.
TEST(HmacSha256Test, Rfc4231ShortKey) {
  EXPECT_EQ(ToHex(HmacSha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(HmacSha256Test, Rfc4231TextKey) {
  EXPECT_EQ(ToHex(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(HmacSha256Test, Rfc4231KeyLongerThanABlockIsHashedFirst) {
  EXPECT_EQ(ToHex(HmacSha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(ConstantTimeEqualTest, ComparesContentsAndLengths) {
  EXPECT_TRUE(ConstantTimeEqual("abc", "abc"));
  EXPECT_TRUE(ConstantTimeEqual("", ""));
  EXPECT_FALSE(ConstantTimeEqual("abc", "abd"));
  EXPECT_FALSE(ConstantTimeEqual("abc", "xbc"));
  EXPECT_FALSE(ConstantTimeEqual("abc", "abcd"));
}

}  // namespace
}  // namespace llmhost::hmac_test
