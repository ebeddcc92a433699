// safetensors writer: exact bytes of the reference writer (cases from the
// huggingface/safetensors test suite, and the fixtures it wrote), round trips.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "formats/safetensors.h"
#include "formats/safetensors_writer.h"
#include "test_util.h"

namespace llmhost::safetensors_writer_test {
namespace {

using ::testing::HasSubstr;

std::string FloatBytes(std::initializer_list<float> v) {
  std::string out;
  for (float f : v) out.append(reinterpret_cast<const char*>(&f), 4);
  return out;
}

std::string LenPrefix(uint64_t n) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out;
}

TEST(SafetensorsWriter, MatchesReferenceWriterBytes) {
  std::string data = FloatBytes({0, 1, 2, 3, 4, 5});
  // 64-byte header, no padding needed.
  auto a = SerializeSafetensors({{"attn.0", DType::kF32, {1, 2, 3}, data}}, {});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, LenPrefix(64) +
                    R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})" + data);
  // 65 bytes of JSON padded with 7 spaces to 72.
  auto b = SerializeSafetensors({{"attn0", DType::kF32, {1, 1, 2, 3}, data}}, {});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, LenPrefix(72) +
                    R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})" +
                    std::string(7, ' ') + data);
  auto empty = SerializeSafetensors({}, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, LenPrefix(8) + "{}      ");
  auto meta = SerializeSafetensors({}, {{"framework", "pt"}});
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(*meta, LenPrefix(40) + R"({"__metadata__":{"framework":"pt"}})" + "     ");
}

TEST(SafetensorsWriter, RoundTripMixedDTypesStaysAligned) {
  std::string u8 = "abc";
  std::string f64(16, '\x11');
  std::string bf16 = "\x01\x02\x03\x04\x05\x06";
  std::string i32(8, '\x22');
  std::vector<SafetensorsWriteTensor> in = {{"u8", DType::kU8, {3}, u8},
                                            {"f64", DType::kF64, {2}, f64},
                                            {"bf16", DType::kBF16, {1, 3}, bf16},
                                            {"i32", DType::kI32, {2, 1}, i32},
                                            {"empty", DType::kF32, {0, 4}, ""}};
  auto bytes = SerializeSafetensors(in, {{"block_hash", "ab12"}, {"token_count", "16"}});
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto f = SafetensorsFile::Parse(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(),
                                  "mem");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->header_size() % 8, 0u);
  EXPECT_EQ((*f)->metadata().at("block_hash"), "ab12");
  EXPECT_EQ((*f)->metadata().at("token_count"), "16");
  ASSERT_EQ((*f)->tensors().size(), 5u);
  for (const SafetensorsWriteTensor& t : in) {
    auto v = (*f)->Tensor(t.name);
    ASSERT_TRUE(v.ok()) << t.name;
    EXPECT_EQ(v->dtype, t.dtype);
    EXPECT_EQ(v->shape, t.shape);
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(v->data), v->n_bytes), t.data);
    const SafetensorsTensorInfo* info = (*f)->Find(t.name);
    EXPECT_EQ(info->begin % DTypeSize(t.dtype), 0u) << t.name << " is misaligned";
  }
  EXPECT_EQ((*f)->tensors()[0].name, "f64");  // widest first
}

TEST(SafetensorsWriter, RewritingAFixtureGivesTheSameBytes) {
  SKIP_IF_NO_SHARED();
  for (const char* fixture : {"llama3-tiny", "qwen3moe-tiny", "gemma3-tiny", "bert-tiny-embed"}) {
    std::string path = testing::SharedDir() + "/reference/models/" + fixture + "/model.safetensors";
    auto original = ReadFileToString(path);
    ASSERT_TRUE(original.ok()) << path;
    auto f = SafetensorsFile::Open(path);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    std::vector<SafetensorsWriteTensor> tensors;
    for (const SafetensorsTensorInfo& t : (*f)->tensors()) {
      TensorView v = (*f)->View(t);
      tensors.push_back({t.name, t.dtype, t.shape,
                         std::string_view(reinterpret_cast<const char*>(v.data), v.n_bytes)});
    }
    auto bytes = SerializeSafetensors(tensors, (*f)->metadata());
    ASSERT_TRUE(bytes.ok());
    EXPECT_TRUE(*bytes == *original) << fixture << ": rewritten file differs";
  }
}

TEST(SafetensorsWriter, WritesAtomicallyToAPath) {
  std::string dir = testing::MakeTempDir();
  ASSERT_FALSE(dir.empty());
  std::string path = dir + "/block.safetensors";
  std::string data = FloatBytes({1.5f, -2.0f});
  ASSERT_TRUE(WriteSafetensorsFile(path, {{"layer_0_keys", DType::kF32, {2}, data}},
                                   {{"format_version", "1"}})
                  .ok());
  auto f = SafetensorsFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto v = (*f)->Tensor("layer_0_keys");
  ASSERT_TRUE(v.ok());
  float x[2];
  std::memcpy(x, v->data, 8);
  EXPECT_EQ(x[0], 1.5f);
  EXPECT_EQ(x[1], -2.0f);
  std::remove(path.c_str());
  std::remove(dir.c_str());
}

TEST(SafetensorsWriter, RejectsBadInput) {
  std::string four(4, '\0');
  auto size = SerializeSafetensors({{"t", DType::kF32, {2}, four}}, {});
  EXPECT_EQ(size.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(size.status().message(), HasSubstr("'t' has 4 bytes, its shape needs 8"));
  auto dup = SerializeSafetensors({{"t", DType::kU8, {4}, four}, {"t", DType::kU8, {4}, four}}, {});
  EXPECT_THAT(dup.status().message(), HasSubstr("duplicate tensor name 't'"));
  auto reserved = SerializeSafetensors({{"__metadata__", DType::kU8, {4}, four}}, {});
  EXPECT_EQ(reserved.status().code(), StatusCode::kInvalidArgument);
  auto neg = SerializeSafetensors({{"t", DType::kU8, {-4}, four}}, {});
  EXPECT_THAT(neg.status().message(), HasSubstr("negative"));
  auto utf8 = SerializeSafetensors({{"\xff", DType::kU8, {4}, four}}, {});
  EXPECT_EQ(utf8.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace llmhost::safetensors_writer_test
