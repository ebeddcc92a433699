// Streaming safetensors writer: the same bytes as the whole-file writer (whose
// output matches the reference writer, see safetensors_writer_test.cpp)
// however the data is split into appends; incomplete or overlong data is an
// error and leaves no file behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"
#include "test_util.h"
#include "util/file.h"

namespace llmhost::safetensors_stream_writer_test {
namespace {

using ::testing::HasSubstr;

struct Fixture {
  std::vector<std::string> data;
  std::vector<SafetensorsWriteTensor> whole;
  std::vector<SafetensorsTensorSpec> specs;
};

Fixture MakeFixture() {
  Fixture f;
  f.data = {std::string(3, 'a'), std::string(16, 'b'), std::string(6, 'c'), std::string(8, 'd'),
            "", std::string(20000000, 'e')};  // the last one spans several internal buffers
  for (size_t i = 0; i < f.data.size(); ++i) f.data[i][0] = static_cast<char>('0' + i);
  const std::vector<SafetensorsTensorSpec> specs = {{"u8", DType::kU8, {3}},
                                                    {"f64", DType::kF64, {2}},
                                                    {"bf16", DType::kBF16, {1, 3}},
                                                    {"i32", DType::kI32, {2, 1}},
                                                    {"empty", DType::kF32, {0, 4}},
                                                    {"big", DType::kU32, {5000000}}};
  f.specs = specs;
  for (size_t i = 0; i < specs.size(); ++i) {
    f.whole.push_back({specs[i].name, specs[i].dtype, specs[i].shape, f.data[i]});
  }
  return f;
}

std::string DataOf(const Fixture& f, const std::string& name) {
  for (size_t i = 0; i < f.specs.size(); ++i) {
    if (f.specs[i].name == name) return f.data[i];
  }
  return "";
}

TEST(SafetensorsStreamWriter, SameBytesAsTheWholeFileWriterForAnySplit) {
  const Fixture f = MakeFixture();
  const std::map<std::string, std::string> meta = {{"format", "pt"}};
  auto expected = SerializeSafetensors(f.whole, meta);
  ASSERT_TRUE(expected.ok());
  const std::string dir = testing::MakeTempDir();
  for (size_t piece : {size_t{1} << 30, size_t{5}, size_t{7 << 20}}) {
    SCOPED_TRACE(piece);
    const std::string path = dir + "/m.safetensors";
    auto w = SafetensorsStreamWriter::Create(path, f.specs, meta);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    // The concatenated data in layout order, appended in pieces that cross
    // tensor boundaries.
    std::string all;
    for (const SafetensorsTensorSpec& s : (*w)->layout()) all += DataOf(f, s.name);
    EXPECT_EQ((*w)->layout().front().name, "f64");  // 8-byte types first
    for (size_t off = 0; off < all.size(); off += piece) {
      if (piece == 5 && off > 1000) piece = size_t{7} << 20;  // keep the test quick
      ASSERT_TRUE((*w)->Append(std::string_view(all).substr(off, piece)).ok());
    }
    EXPECT_EQ((*w)->current(), (*w)->layout().size());
    ASSERT_TRUE((*w)->Finish().ok());
    auto got = ReadFileToString(path);
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(*got == *expected);
    auto st = SafetensorsFile::Open(path);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    auto big = (*st)->Tensor("big");
    ASSERT_TRUE(big.ok());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(big->data), big->n_bytes), f.data[5]);
  }
  std::filesystem::remove_all(dir);
}

TEST(SafetensorsStreamWriter, IncompleteOrOverlongDataIsAnErrorAndLeavesNoFile) {
  const Fixture f = MakeFixture();
  const std::string dir = testing::MakeTempDir();
  const std::string path = dir + "/m.safetensors";
  {
    auto w = SafetensorsStreamWriter::Create(path, {{"a", DType::kF32, {2}}, {"b", DType::kU8, {3}}}, {});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Append("12345678").ok());
    EXPECT_EQ((*w)->current(), 1u);
    Status s = (*w)->Finish();
    EXPECT_FALSE(s.ok());
    EXPECT_THAT(s.ToString(), HasSubstr("tensor 'b' is incomplete"));
    auto w2 = SafetensorsStreamWriter::Create(path, {{"a", DType::kF32, {1}}}, {});
    ASSERT_TRUE(w2.ok());
    Status over = (*w2)->Append("12345");
    EXPECT_FALSE(over.ok());
    EXPECT_THAT(over.ToString(), HasSubstr("past the end"));
  }  // destroyed unfinished: temporary files removed
  EXPECT_FALSE(FileExists(path));
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  auto dup = SafetensorsStreamWriter::Create(path, {{"a", DType::kF32, {1}}, {"a", DType::kU8, {1}}}, {});
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(dup.status().ToString(), HasSubstr("duplicate tensor name 'a'"));
  auto neg = SafetensorsStreamWriter::Create(path, {{"a", DType::kF32, {-1}}}, {});
  EXPECT_FALSE(neg.ok());
  auto nodir = SafetensorsStreamWriter::Create(dir + "/missing/m.safetensors", {}, {});
  ASSERT_FALSE(nodir.ok());
  EXPECT_EQ(nodir.status().code(), StatusCode::kIOError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace llmhost::safetensors_stream_writer_test
