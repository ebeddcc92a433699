#include "util/status.h"

#include <gtest/gtest.h>

namespace llmhost::status_test {
namespace {

Result<int> ParsePositive(int v) {
  if (v <= 0) return Status::InvalidArgument("value must be positive, got " + std::to_string(v));
  return v;
}

Status Doubled(int v, int* out) {
  ASSIGN_OR_RETURN(int x, ParsePositive(v));
  *out = 2 * x;
  return Status::OK();
}

TEST(StatusTest, OkAndErrorCarryCodeAndMessage) {
  EXPECT_TRUE(Status::OK().ok());
  Status s = Status::Corruption("bad header");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kCorruption);
  EXPECT_EQ(s.ToString(), "Corruption: bad header");
  EXPECT_EQ(s.WithContext("a.safetensors").message(), "a.safetensors: bad header");
}

TEST(StatusTest, AssignOrReturnPropagates) {
  int out = 0;
  EXPECT_TRUE(Doubled(4, &out).ok());
  EXPECT_EQ(out, 8);
  Status s = Doubled(-1, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("-1"), std::string::npos);
}

}  // namespace
}  // namespace llmhost::status_test
