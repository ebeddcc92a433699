// The one JSON parser every entry point uses: the depth limit (checked on
// the text, strings and escapes skipped), the size caps, and messages that
// name the document and the position.
#include "util/json.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/file.h"

namespace llmhost::json_test {
namespace {

TEST(Json, NestingDepthSkipsStringsAndEscapes) {
  EXPECT_EQ(JsonNestingDepth("1"), 0);
  EXPECT_EQ(JsonNestingDepth("[]"), 1);
  EXPECT_EQ(JsonNestingDepth(R"({"a": [{"b": []}]})"), 4);
  EXPECT_EQ(JsonNestingDepth(R"({"a": "[[[[", "b": "\"[[[["})"), 1);
  EXPECT_EQ(JsonNestingDepth(R"(["\\", [[]]])"), 3) << "an escaped backslash ends before the quote";
  // Stops early once past the limit.
  EXPECT_EQ(JsonNestingDepth(std::string(1000000, '['), 10), 11);
}

TEST(Json, DepthLimitAndSizeCap) {
  const std::string at_limit = std::string(kJsonMaxDepth, '[') + std::string(kJsonMaxDepth, ']');
  EXPECT_TRUE(ParseJson(at_limit, "doc", 1 << 20).ok());
  const std::string deeper = "[" + at_limit + "]";
  auto r = ParseJson(deeper, "doc", 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "doc: nests deeper than 128 levels");
  // 100,000 deep: refused without building anything (and no stack overflow).
  EXPECT_FALSE(ParseOrderedJson(std::string(100000, '{'), "body", 1 << 20).ok());
  auto big = ParseJson("[" + std::string(100, ' ') + "]", "doc", 50);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("more than the 50 allowed"), std::string::npos) << big.status().message();
}

TEST(Json, MalformedNamesThePosition) {
  auto r = ParseJson("{\"a\": tru}", "settings.json", 1 << 20);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("settings.json: not valid JSON: parse error at line 1, column", 0), 0u)
      << r.status().message();
  auto o = ParseOrderedJson(R"({"z": 1, "a": 2})", "x", 100);
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->dump(), R"({"z":1,"a":2})") << "ordered: key order kept";
}

TEST(Json, FilesAreCappedBeforeTheyAreRead) {
  const std::string dir = testing::MakeTempDir();
  ASSERT_TRUE(WriteFileAtomic(dir + "/ok.json", R"({"a": [1, 2]})").ok());
  auto ok = ReadJsonFile(dir + "/ok.json", 1024);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)["a"][1], 2);
  ASSERT_TRUE(WriteFileAtomic(dir + "/big.json", "[" + std::string(4096, ' ') + "]").ok());
  auto big = ReadJsonFile(dir + "/big.json", 1024);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kCorruption);
  EXPECT_NE(big.status().message().find("big.json"), std::string::npos);
  ASSERT_TRUE(WriteFileAtomic(dir + "/deep.json", std::string(200, '[') + std::string(200, ']')).ok());
  auto deep = ReadOrderedJsonFile(dir + "/deep.json", 1024);
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(ReadJsonFile(dir + "/missing.json", 1024).status().code(), StatusCode::kNotFound);
  // ReadFileToString's cap alone.
  auto capped = ReadFileToString(dir + "/big.json", 100);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(ReadFileToString(dir + "/big.json", 4098).ok());
}

}  // namespace
}  // namespace llmhost::json_test
