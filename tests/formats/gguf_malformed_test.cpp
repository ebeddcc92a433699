// GGUF reader on synthetic images: valid ones of every value type, and one
// test per way a file can be broken. Bad input must give a clear error.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "formats/gguf.h"
#include "gguf_builder.h"

namespace llmhost::gguf_malformed_test {
namespace {

using ::testing::HasSubstr;
using testing::GgufWriter;

Result<std::unique_ptr<GgufFile>> ParseImage(const GgufWriter& w) {
  return GgufFile::Parse(w.data(), w.size(), "img.gguf");
}

// One F32 tensor [4, 2] and one Q8_0 tensor [64] after `n_kv` entries.
GgufWriter ValidImage(uint32_t version = 3) {
  GgufWriter w;
  w.Header(version, 2, 2).KvStr("general.architecture", "llama").KvU32("llama.block_count", 2);
  w.TensorInfo("a", {4, 2}, 0, 0).TensorInfo("b", {64}, 8, 32);
  w.Align(32).Zeros(32 + 68);
  return w;
}

void ExpectError(const GgufWriter& w, StatusCode code, const std::string& needle) {
  auto r = ParseImage(w);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), code) << r.status().ToString();
  EXPECT_THAT(r.status().message(), HasSubstr("img.gguf"));
  EXPECT_THAT(r.status().message(), HasSubstr(needle));
}

TEST(GgufParse, ValidV3AndV2) {
  for (uint32_t v : {2u, 3u}) {
    GgufWriter w = ValidImage(v);
    auto r = ParseImage(w);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const GgufFile& g = **r;
    EXPECT_EQ(g.version(), v);
    EXPECT_EQ(g.data_offset() % 32, 0u);
    ASSERT_EQ(g.tensors().size(), 2u);
    EXPECT_EQ(g.tensors()[0].n_bytes, 32u);
    EXPECT_EQ(g.tensors()[1].type, GgmlType::kQ8_0);
    EXPECT_EQ(g.tensors()[1].n_bytes, 68u);  // 2 blocks of 34
    EXPECT_EQ(g.TensorData(g.tensors()[1]), w.data() + g.data_offset() + 32);
  }
}

TEST(GgufParse, EveryValueTypeAndNestedArrays) {
  GgufWriter w;
  w.Header(3, 0, 15);
  w.Str("u8").U32(0).U8(200);
  w.Str("i8").U32(1).Put<int8_t>(-5);
  w.Str("u16").U32(2).Put<uint16_t>(60000);
  w.Str("i16").U32(3).Put<int16_t>(-30000);
  w.Str("u32").U32(4).U32(4000000000u);
  w.Str("i32").U32(5).Put<int32_t>(-2000000000);
  w.Str("f32").U32(6).Put<float>(0.5f);
  w.KvBool("bool", true);
  w.KvStr("str", "h\xC3\xA9llo");
  w.Str("u64").U32(10).U64(std::numeric_limits<uint64_t>::max());
  w.Str("i64").U32(11).Put<int64_t>(-7000000000LL);
  w.Str("f64").U32(12).Put<double>(-2.25);
  w.Str("farr").U32(9).U32(6).U64(3).Put<float>(1.5f).Put<float>(-1.0f).Put<float>(3.0f);
  // [[1, 2], [3]] as an array of arrays of int16.
  w.Str("nested").U32(9).U32(9).U64(2);
  w.U32(3).U64(2).Put<int16_t>(1).Put<int16_t>(2);
  w.U32(3).U64(1).Put<int16_t>(3);
  w.Str("empty").U32(9).U32(8).U64(0);
  auto r = ParseImage(w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const GgufFile& g = **r;
  EXPECT_EQ(g.Keys().size(), 15u);
  EXPECT_EQ(*g.GetInt("u8"), 200);
  EXPECT_EQ(*g.GetInt("i8"), -5);
  EXPECT_EQ(*g.GetInt("u16"), 60000);
  EXPECT_EQ(*g.GetInt("i16"), -30000);
  EXPECT_EQ(*g.GetInt("u32"), 4000000000LL);
  EXPECT_EQ(*g.GetInt("i32"), -2000000000);
  EXPECT_EQ(*g.GetInt("i64"), -7000000000LL);
  EXPECT_EQ(*g.GetFloat("f32"), 0.5);
  EXPECT_EQ(*g.GetFloat("f64"), -2.25);
  EXPECT_EQ(*g.GetFloat("u16"), 60000.0);  // integers widen to double
  EXPECT_EQ(*g.GetBool("bool"), true);
  EXPECT_EQ(*g.GetString("str"), "h\xC3\xA9llo");
  EXPECT_EQ(*g.GetFloatArray("farr"), (std::vector<double>{1.5, -1.0, 3.0}));
  EXPECT_TRUE(g.GetStringArray("empty")->empty());
  EXPECT_EQ(g.TypeOf("nested"), GgufValueType::kArray);
  EXPECT_EQ(g.ArrayElementType("nested"), GgufValueType::kArray);
  EXPECT_EQ(g.DescribeValue("nested"), "[2 arrays]");
  EXPECT_EQ(g.DescribeValue("u64"), "18446744073709551615");
  EXPECT_EQ(g.DescribeValue("f64"), "-2.25");
  EXPECT_EQ(g.DescribeValue("farr"), "[1.5, -1, 3]");

  // Wrong types and missing keys.
  EXPECT_EQ(g.GetInt("u64").status().code(), StatusCode::kInvalidArgument);  // > INT64_MAX
  EXPECT_EQ(g.GetInt("str").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.GetInt("bool").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.GetString("u8").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.GetBool("u8").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.GetFloat("str").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.GetStringArray("farr").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.GetIntArray("farr").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(g.GetIntArray("nested").status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(g.GetString("u8").status().message(), HasSubstr("'u8' has type uint8"));
  EXPECT_EQ(g.GetInt("missing").status().code(), StatusCode::kNotFound);
  EXPECT_THAT(g.GetInt("missing").status().message(), HasSubstr("missing"));
  EXPECT_FALSE(g.TypeOf("missing").has_value());
}

TEST(GgufParse, CustomAlignment) {
  GgufWriter w;
  w.Header(3, 1, 1).KvU32("general.alignment", 64);
  w.TensorInfo("t", {16}, 0, 0);
  w.Align(64).Zeros(64);
  auto r = ParseImage(w);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)->alignment(), 64u);
  EXPECT_EQ((*r)->data_offset() % 64, 0u);
}

TEST(GgufMalformed, EveryTruncationFailsCleanly) {
  GgufWriter w = ValidImage();
  for (size_t n = 0; n < w.size(); ++n) {
    auto r = GgufFile::Parse(w.data(), n, "img.gguf");
    EXPECT_FALSE(r.ok()) << "prefix of " << n << " bytes parsed";
  }
}

TEST(GgufMalformed, MagicAndVersion) {
  GgufWriter empty;
  ExpectError(empty, StatusCode::kCorruption, "not a GGUF file");
  GgufWriter bad;
  bad.bytes = "GGML";
  bad.U32(3).U64(0).U64(0);
  ExpectError(bad, StatusCode::kCorruption, "bad magic");
  GgufWriter v1;
  v1.Header(1, 0, 0);
  ExpectError(v1, StatusCode::kNotSupported, "version 1 is not supported");
  GgufWriter v4;
  v4.Header(4, 0, 0);
  ExpectError(v4, StatusCode::kNotSupported, "unsupported GGUF version 4");
  GgufWriter be;
  be.Header(0x03000000, 0, 0);
  ExpectError(be, StatusCode::kNotSupported, "big-endian");
}

TEST(GgufMalformed, CountsBoundedByFileSize) {
  GgufWriter kv;
  kv.Header(3, 0, uint64_t{1} << 60);
  ExpectError(kv, StatusCode::kCorruption, "metadata count");
  GgufWriter t;
  t.Header(3, std::numeric_limits<uint64_t>::max(), 0);
  ExpectError(t, StatusCode::kCorruption, "tensor count");
  GgufWriter str;
  str.Header(3, 0, 1).Str("k").U32(8).U64(uint64_t{1} << 62);
  ExpectError(str, StatusCode::kCorruption, "truncated");
  GgufWriter key;
  key.Header(3, 0, 1).U64(1000).Zeros(20);
  ExpectError(key, StatusCode::kCorruption, "past the end of the file");
  GgufWriter arr;
  arr.Header(3, 0, 1).Str("k").U32(9).U32(4).U64(uint64_t{1} << 62).Zeros(16);
  ExpectError(arr, StatusCode::kCorruption, "elements");
  GgufWriter sarr;
  sarr.Header(3, 0, 1).Str("k").U32(9).U32(8).U64(1000000).Zeros(16);
  ExpectError(sarr, StatusCode::kCorruption, "elements");
}

TEST(GgufMalformed, UnknownValueTypes) {
  GgufWriter w;
  w.Header(3, 0, 1).Str("k").U32(13).U32(0);
  ExpectError(w, StatusCode::kCorruption, "unknown value type 13");
  GgufWriter a;
  a.Header(3, 0, 1).Str("k").U32(9).U32(77).U64(1).U32(0);
  ExpectError(a, StatusCode::kCorruption, "unknown array element type 77");
}

TEST(GgufMalformed, ArraysNestedTooDeep) {
  GgufWriter w;
  w.Header(3, 0, 1).Str("k").U32(9);
  for (int i = 0; i < 20; ++i) w.U32(9).U64(1);
  w.U32(4).U64(0);
  ExpectError(w, StatusCode::kCorruption, "nested deeper");
}

TEST(GgufMalformed, DuplicateKeysAndTensors) {
  GgufWriter k;
  k.Header(3, 0, 2).KvU32("a", 1).KvU32("a", 2);
  ExpectError(k, StatusCode::kCorruption, "duplicate metadata key 'a'");
  GgufWriter t;
  t.Header(3, 2, 0).TensorInfo("w", {8}, 0, 0).TensorInfo("w", {8}, 0, 32);
  t.Align(32).Zeros(64);
  ExpectError(t, StatusCode::kCorruption, "duplicate tensor name 'w'");
}

TEST(GgufMalformed, TensorShapes) {
  GgufWriter dims;
  dims.Header(3, 1, 0).TensorInfo("t", {1, 1, 1, 1, 1}, 0, 0).Align(32).Zeros(4);
  ExpectError(dims, StatusCode::kCorruption, "5 dimensions");
  GgufWriter neg;
  neg.Header(3, 1, 0).TensorInfo("t", {uint64_t{1} << 63}, 0, 0).Align(32);
  ExpectError(neg, StatusCode::kCorruption, "larger than INT64_MAX");
  GgufWriter prod;
  prod.Header(3, 1, 0).TensorInfo("t", {uint64_t{1} << 40, uint64_t{1} << 40}, 0, 0).Align(32);
  ExpectError(prod, StatusCode::kCorruption, "overflows");
  GgufWriter bytes;  // element count fits, bytes do not
  bytes.Header(3, 1, 0).TensorInfo("t", {uint64_t{1} << 62}, 28, 0).Align(32);
  ExpectError(bytes, StatusCode::kCorruption, "tensor 't'");
  GgufWriter block;
  block.Header(3, 1, 0).TensorInfo("q", {128, 2}, 12, 0).Align(32).Zeros(288);
  ExpectError(block, StatusCode::kCorruption, "not a multiple of the Q4_K block size 256");
}

TEST(GgufMalformed, UnknownTensorTypeNamesTensorAndType) {
  GgufWriter w;
  w.Header(3, 1, 0).TensorInfo("blk.0.weird", {32}, 99, 0).Align(32).Zeros(128);
  ExpectError(w, StatusCode::kNotSupported, "tensor 'blk.0.weird' has unsupported ggml type 99");
  GgufWriter removed;  // Q4_2 (4) was removed from ggml
  removed.Header(3, 1, 0).TensorInfo("t", {32}, 4, 0).Align(32).Zeros(128);
  ExpectError(removed, StatusCode::kNotSupported, "ggml type 4");
}

TEST(GgufMalformed, TensorDataRanges) {
  GgufWriter unaligned;
  unaligned.Header(3, 1, 0).TensorInfo("t", {4}, 0, 8).Align(32).Zeros(64);
  ExpectError(unaligned, StatusCode::kCorruption, "not a multiple of the alignment 32");
  GgufWriter past;
  past.Header(3, 1, 0).TensorInfo("t", {16}, 0, 0).Align(32).Zeros(63);
  ExpectError(past, StatusCode::kCorruption, "outside the data section");
  GgufWriter far;
  far.Header(3, 1, 0).TensorInfo("t", {1}, 0, uint64_t{1} << 63).Align(32).Zeros(4);
  ExpectError(far, StatusCode::kCorruption, "outside the data section");
  GgufWriter overlap;
  overlap.Header(3, 2, 0).TensorInfo("a", {16}, 0, 0).TensorInfo("b", {16}, 0, 32);
  overlap.Align(32).Zeros(96);
  ExpectError(overlap, StatusCode::kCorruption, "'b' overlaps tensor 'a'");
  GgufWriter no_data;  // tensor infos end at the end of the file
  no_data.Header(3, 1, 0).TensorInfo("t", {1}, 0, 0);
  no_data.bytes.push_back('\0');
  ExpectError(no_data, StatusCode::kCorruption, "past the end of the file");
}

TEST(GgufMalformed, BadAlignment) {
  for (uint32_t a : {0u, 3u, 48u}) {
    GgufWriter w;
    w.Header(3, 0, 1).KvU32("general.alignment", a);
    ExpectError(w, StatusCode::kCorruption, "general.alignment " + std::to_string(a));
  }
  GgufWriter s;
  s.Header(3, 0, 1).KvStr("general.alignment", "32");
  ExpectError(s, StatusCode::kCorruption, "general.alignment");
}

}  // namespace
}  // namespace llmhost::gguf_malformed_test
