// Split GGUF models: part names, opening every part as one model, and the
// broken splits (a missing part, parts that disagree) failing clearly.
#include "formats/gguf_split.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "formats/gguf_split_writer.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::gguf_split_test {
namespace {

std::string TinyModel() {
  auto bytes = ReadFileToString(testing::TestDataDir() + "/models/llama-tiny-gguf/llama-tiny-q4_0.gguf");
  return bytes.ok() ? *bytes : "";
}

// Writes the parts as DIR/tiny-0000K-of-0000N.gguf; returns part 1's path.
std::string WriteParts(const std::string& dir, const std::vector<std::string>& parts) {
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string p = GgufSplitPartPath(dir + "/tiny", static_cast<int>(i + 1), static_cast<int>(parts.size()));
    EXPECT_TRUE(WriteFileAtomic(p, parts[i]).ok());
  }
  return GgufSplitPartPath(dir + "/tiny", 1, static_cast<int>(parts.size()));
}

TEST(GgufSplit, PartNames) {
  auto n = ParseGgufSplitName("/m/Qwen3-8B-Q4_K_M-00002-of-00003.gguf");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->prefix, "/m/Qwen3-8B-Q4_K_M");
  EXPECT_EQ(n->no, 2);
  EXPECT_EQ(n->count, 3);
  EXPECT_EQ(GgufSplitPartPath("/m/x", 1, 12), "/m/x-00001-of-00012.gguf");
  EXPECT_FALSE(ParseGgufSplitName("model.gguf").has_value());
  EXPECT_FALSE(ParseGgufSplitName("m-0001-of-00002.gguf").has_value());    // four digits
  EXPECT_FALSE(ParseGgufSplitName("m-00003-of-00002.gguf").has_value());   // part past the count
  EXPECT_FALSE(ParseGgufSplitName("m-00000-of-00002.gguf").has_value());   // parts count from 1
  EXPECT_FALSE(ParseGgufSplitName("m-00001-of-00002.safetensors").has_value());
  EXPECT_FALSE(ParseGgufSplitName("-00001-of-00002.gguf").has_value());    // no prefix
}

TEST(GgufSplit, PartsOpenAsTheWholeFile) {
  const std::string image = TinyModel();
  if (image.empty()) GTEST_SKIP();
  auto whole = GgufFile::Parse(reinterpret_cast<const uint8_t*>(image.data()), image.size(), "whole");
  ASSERT_TRUE(whole.ok());
  const size_t n = (*whole)->tensors().size();
  ASSERT_GT(n, 4u);
  const std::string dir = testing::MakeTempDir();
  const std::string first = WriteParts(dir, testing::SplitGguf(image, {3, n - 3}));
  auto files = GgufModelFiles::Open(first);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  EXPECT_EQ((*files)->part_count(), 2u);
  EXPECT_EQ((*files)->first().GetString("general.architecture").value(), "llama");
  ASSERT_EQ((*files)->tensors().size(), n);
  for (const GgufTensorInfo& t : (*whole)->tensors()) {
    const GgufTensorInfo* s = (*files)->FindTensor(t.name);
    ASSERT_NE(s, nullptr) << t.name;
    EXPECT_EQ(s->shape, t.shape);
    ASSERT_EQ(s->n_bytes, t.n_bytes);
    EXPECT_EQ(std::memcmp((*files)->TensorData(*s), (*whole)->TensorData(t), t.n_bytes), 0) << t.name;
  }
  EXPECT_EQ((*files)->total_file_bytes(),
            std::filesystem::file_size(first) + std::filesystem::file_size(GgufSplitPartPath(dir + "/tiny", 2, 2)));
  // An unsplit file is one part.
  const std::string plain = testing::TestDataDir() + "/models/llama-tiny-gguf/llama-tiny-q4_0.gguf";
  auto one = GgufModelFiles::Open(plain);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)->part_count(), 1u);
  EXPECT_EQ((*one)->tensors().size(), n);
}

// Each broken split fails with a message naming the file and the problem.
void ExpectOpenError(const std::string& path, StatusCode code, const std::string& says) {
  auto files = GgufModelFiles::Open(path);
  ASSERT_FALSE(files.ok()) << says;
  EXPECT_EQ(files.status().code(), code) << files.status().ToString();
  EXPECT_NE(files.status().message().find(says), std::string::npos) << files.status().ToString();
}

TEST(GgufSplit, BrokenSplitsFailClearly) {
  const std::string image = TinyModel();
  if (image.empty()) GTEST_SKIP();
  auto whole = GgufFile::Parse(reinterpret_cast<const uint8_t*>(image.data()), image.size(), "whole");
  ASSERT_TRUE(whole.ok());
  const size_t n = (*whole)->tensors().size();

  // A missing part.
  std::string dir = testing::MakeTempDir();
  std::string first = WriteParts(dir, testing::SplitGguf(image, {2, 2, n - 4}));
  ASSERT_TRUE(std::filesystem::remove(GgufSplitPartPath(dir + "/tiny", 3, 3)));
  ExpectOpenError(first, StatusCode::kNotFound, "part 3 of 3 of the split model");

  // The second part says another split.count.
  dir = testing::MakeTempDir();
  first = WriteParts(dir, testing::SplitGguf(image, {2, n - 2}, [](size_t p, testing::SplitKeys& k) {
                       if (p == 1) k.count = 3;
                     }));
  ExpectOpenError(first, StatusCode::kInvalidArgument, "split.count is 3, the first part says 2");

  // The first part's split.count disagrees with the file names.
  dir = testing::MakeTempDir();
  first = WriteParts(dir, testing::SplitGguf(image, {2, n - 2}, [](size_t, testing::SplitKeys& k) { k.count = 4; }));
  ExpectOpenError(first, StatusCode::kInvalidArgument, "split.count is 4 but the file name says 2 parts");

  // Parts swapped: split.no says where a part belongs.
  dir = testing::MakeTempDir();
  first = WriteParts(dir, testing::SplitGguf(image, {2, n - 2}, [](size_t p, testing::SplitKeys& k) {
                       if (p == 1) k.no = 0;
                     }));
  ExpectOpenError(first, StatusCode::kInvalidArgument, "split.no is 0, expected 1");

  // Tensors missing from the parts.
  dir = testing::MakeTempDir();
  first = WriteParts(dir, testing::SplitGguf(image, {2, n - 2}, [n](size_t, testing::SplitKeys& k) {
                       k.tensors = static_cast<int32_t>(n + 1);
                     }));
  ExpectOpenError(first, StatusCode::kInvalidArgument, "split.tensors.count is " + std::to_string(n + 1));

  // A later part opened directly.
  ExpectOpenError(GgufSplitPartPath(dir + "/tiny", 2, 2), StatusCode::kInvalidArgument,
                  "open the split's first part, named PREFIX-00001-of-00002.gguf");

  // The first part renamed out of the split naming.
  std::filesystem::rename(first, dir + "/renamed.gguf");
  ExpectOpenError(dir + "/renamed.gguf", StatusCode::kInvalidArgument, "open the split's first part");
}

}  // namespace
}  // namespace llmhost::gguf_split_test
