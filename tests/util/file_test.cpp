#include "util/file.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "util/sha256.h"

namespace llmhost::file_test {
namespace {

TEST(FileTest, AtomicWriteThenMapAndRead) {
  std::string dir = testing::MakeTempDir();
  ASSERT_FALSE(dir.empty());
  std::string path = JoinPath(dir, "x.bin");
  ASSERT_TRUE(WriteFileAtomic(path, "hello world").ok());
  auto mapped = MappedFile::Open(path);
  ASSERT_TRUE(mapped.ok()) << mapped.status().ToString();
  EXPECT_EQ((*mapped)->view(), "hello world");
  auto text = ReadFileToString(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello world");
}

TEST(FileTest, MissingFileIsNotFoundNamingThePath) {
  auto r = MappedFile::Open("/nonexistent/dir/file.bin");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/dir/file.bin"), std::string::npos);
}

TEST(FileTest, PathHelpers) {
  EXPECT_EQ(JoinPath("a/b", "c"), "a/b/c");
  EXPECT_EQ(JoinPath("a/b/", "c"), "a/b/c");
  EXPECT_EQ(BaseName("/x/y.gguf"), "y.gguf");
  EXPECT_EQ(DirName("/x/y.gguf"), "/x");
  EXPECT_EQ(DirName("y"), ".");
}

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(ToHex(Sha256Of("")), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(ToHex(Sha256Of("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;
  h.Update("a");
  h.Update("bc");
  EXPECT_EQ(h.Finish(), Sha256Of("abc"));
}

}  // namespace
}  // namespace llmhost::file_test
